"""Resource limits: how much work a file may declare before anything is allocated.

A small file can declare big work: a 380 KB PNG can claim 20000 x 20000
pixels, a feature file can claim a 30000 x 30000 image or a member that
inflates to gigabytes. Every reader checks what a file *declares* (an image
header, a zip directory, an ``.npy`` header, ``image_shape``, a keypoint
count) against these limits before it decodes or allocates, and refuses with
a :class:`ResourceLimitError` that names the limit and how to raise it.

==================  ==============  ==========================  ===========================
limit               default         environment variable        command-line flag
==================  ==============  ==========================  ===========================
image pixels        12,000,000      ``LBDVIEWER_MAX_PIXELS``    ``--max-pixels N``
                    (4000 x 3000)
keypoints           10,000          ``LBDVIEWER_MAX_KEYPOINTS`` ``--max-keypoints N``
==================  ==============  ==========================  ===========================

The pixel limit plays the part of Pillow's ``Image.MAX_IMAGE_PIXELS``: it
bounds the decoded image, a feature file's ``image_shape`` and so the
reconstruction's arrays (the joint solve of a grid at offset 8 peaks near
120 bytes a pixel: 2.0 GB at 4096 x 4096, so the default keeps a run at the
limit under about 1.5 GB). The keypoint limit bounds a feature file's
inversion (ORB keypoints are solved through the pyramid, FREAK's through
per-keypoint box tables: on a 512 x 512 photo 5093 ORB keypoints peak near
490 MB and 2044 FREAK keypoints near 430 MB). ``scripts/hostile_files.py --at-limits`` measures both.
The app reads the same environment variables (it has no command-line
limits): :meth:`ResourceLimitError.app_message` says so. A file member's
uncompressed size is bounded by what its limit implies.
"""

from __future__ import annotations

import os
import struct

DEFAULT_MAX_PIXELS = 12_000_000
DEFAULT_MAX_KEYPOINTS = 10_000
MAX_PIXELS_ENV = "LBDVIEWER_MAX_PIXELS"
MAX_KEYPOINTS_ENV = "LBDVIEWER_MAX_KEYPOINTS"


class ResourceLimitError(ValueError):
    """A file or parameter declares more work than a resource limit allows.

    Parameters
    ----------
    problem : str
        What declares how much, and the limit.
    variable, flag : str, optional
        The environment variable and the command-line flag that raise the
        limit; ``str(error)`` names both (the command line's wording).

    Examples
    --------
    >>> error = ResourceLimitError("image declares 9 pixels, more than the limit of 4",
    ...                            variable="LBDVIEWER_MAX_PIXELS", flag="--max-pixels")
    >>> str(error)
    'image declares 9 pixels, more than the limit of 4 (raise it with --max-pixels N or LBDVIEWER_MAX_PIXELS=N)'
    >>> error.app_message()
    'image declares 9 pixels, more than the limit of 4 (raise it by starting lbdviewer with LBDVIEWER_MAX_PIXELS=N in its environment)'
    """

    def __init__(self, problem, *, variable=None, flag=None):
        self.problem, self.variable, self.flag = str(problem), variable, flag
        ways = " or ".join(way for way in (flag and f"{flag} N", variable and f"{variable}=N") if way)
        super().__init__(f"{self.problem} (raise it with {ways})" if ways else self.problem)

    def app_message(self):
        """The message for the app, which reads the environment variable only (no command-line flags)."""
        if self.variable is None:
            return self.problem
        return f"{self.problem} (raise it by starting lbdviewer with {self.variable}=N in its environment)"


def _limit(override, env, default, flag):
    if override is not None:
        value, source = override, flag
    elif os.environ.get(env):
        value, source = os.environ[env], f"${env}"
    else:
        return default
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise ValueError(f"{source} must be a positive integer, got {value!r}") from None
    if number < 1 or isinstance(value, bool):
        raise ValueError(f"{source} must be a positive integer, got {value!r}")
    return number


def max_pixels(override=None):
    """The image pixel limit: ``override``, else ``$LBDVIEWER_MAX_PIXELS``, else the default.

    Examples
    --------
    >>> max_pixels(1000)
    1000
    >>> max_pixels() == int(os.environ.get(MAX_PIXELS_ENV) or DEFAULT_MAX_PIXELS)
    True
    """
    return _limit(override, MAX_PIXELS_ENV, DEFAULT_MAX_PIXELS, "--max-pixels")


def max_keypoints(override=None):
    """The keypoint limit: ``override``, else ``$LBDVIEWER_MAX_KEYPOINTS``, else the default.

    Examples
    --------
    >>> max_keypoints(50)
    50
    """
    return _limit(override, MAX_KEYPOINTS_ENV, DEFAULT_MAX_KEYPOINTS, "--max-keypoints")


def check_pixels(height, width, what, *, limit=None):
    """Refuse an image of ``height x width`` pixels above the pixel limit.

    Parameters
    ----------
    height, width : int
        The declared size.
    what : str
        What declares it, for the message (``"image file 'a.png'"``).
    limit : int, optional
        Default :func:`max_pixels`.

    Raises
    ------
    ResourceLimitError
        Naming ``what``, the size, the limit and how to raise it.

    Examples
    --------
    >>> check_pixels(100, 100, "image", limit=10_000)
    >>> check_pixels(101, 100, "image", limit=10_000)
    Traceback (most recent call last):
    ...
    lbdviewer.io.limits.ResourceLimitError: image declares 100 x 101 = 10,100 pixels, more than the limit of 10,000 (raise it with --max-pixels N or LBDVIEWER_MAX_PIXELS=N)
    """
    limit = max_pixels() if limit is None else int(limit)
    if int(height) * int(width) > limit:
        raise ResourceLimitError(
            f"{what} declares {int(width)} x {int(height)} = {int(height) * int(width):,} pixels, more than "
            f"the limit of {limit:,}", variable=MAX_PIXELS_ENV, flag="--max-pixels")


def check_keypoints(count, what, *, limit=None):
    """Refuse more than the keypoint limit.

    Raises
    ------
    ResourceLimitError
        Naming ``what``, the count, the limit and how to raise it.

    Examples
    --------
    >>> check_keypoints(10, "feature file", limit=10)
    >>> check_keypoints(11, "feature file", limit=10)
    Traceback (most recent call last):
    ...
    lbdviewer.io.limits.ResourceLimitError: feature file declares 11 keypoints, more than the limit of 10 (raise it with --max-keypoints N or LBDVIEWER_MAX_KEYPOINTS=N)
    """
    limit = max_keypoints() if limit is None else int(limit)
    if int(count) > limit:
        raise ResourceLimitError(f"{what} declares {int(count):,} keypoints, more than the limit of {limit:,}",
                                 variable=MAX_KEYPOINTS_ENV, flag="--max-keypoints")


# -- image headers ------------------------------------------------------------------------------

def image_header_size(head):
    """``(height, width, format)`` declared by the first bytes of an image file, without decoding.

    Reads the PNG ``IHDR`` chunk, the JPEG ``SOFn`` segment, the first TIFF
    image file directory, a BMP header, or a binary/ASCII PNM header.

    Parameters
    ----------
    head : bytes
        The file's content (for JPEG and TIFF the size may sit far in; pass
        the whole file, which is read anyway).

    Returns
    -------
    tuple of (int, int, str) or None
        None when the format is not recognised or the header is cut short.

    Examples
    --------
    >>> import cv2, numpy as np
    >>> image_header_size(cv2.imencode(".png", np.zeros((3, 5), np.uint8))[1].tobytes())
    (3, 5, 'PNG')
    >>> image_header_size(cv2.imencode(".jpg", np.zeros((7, 2), np.uint8))[1].tobytes())
    (7, 2, 'JPEG')
    >>> image_header_size(b"not an image") is None
    True
    """
    head = bytes(head)
    try:
        if head.startswith(b"\x89PNG\r\n\x1a\n") and head[12:16] == b"IHDR":
            width, height = struct.unpack(">II", head[16:24])
            return height, width, "PNG"
        if head.startswith(b"\xff\xd8"):
            return _jpeg_size(head)
        if head[:4] in (b"II*\x00", b"MM\x00*"):
            return _tiff_size(head)
        if head.startswith(b"BM"):
            width, height = struct.unpack("<ii", head[18:26])
            return abs(height), abs(width), "BMP"
        if head[:1] == b"P" and head[1:2] in b"123456":
            return _pnm_size(head)
    except struct.error:
        return None
    return None


_JPEG_SOF = {0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF}


def _jpeg_size(data):
    at = 2
    while at + 4 <= len(data):
        if data[at] != 0xFF:
            return None
        marker = data[at + 1]
        if marker == 0xFF:  # fill byte
            at += 1
            continue
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:
            at += 2
            continue
        (length,) = struct.unpack(">H", data[at + 2:at + 4])
        if marker in _JPEG_SOF:
            height, width = struct.unpack(">HH", data[at + 5:at + 9])
            return height, width, "JPEG"
        if marker == 0xDA or length < 2:  # image data before any frame header
            return None
        at += 2 + length
    return None


def _tiff_size(data):
    order = "<" if data[:2] == b"II" else ">"
    (offset,) = struct.unpack(order + "I", data[4:8])
    (count,) = struct.unpack(order + "H", data[offset:offset + 2])
    found = {}
    for i in range(count):
        entry = data[offset + 2 + 12 * i:offset + 14 + 12 * i]
        tag, kind = struct.unpack(order + "HH", entry[:4])
        if tag in (256, 257):
            value = struct.unpack(order + ("H" if kind == 3 else "I"), entry[8:10] if kind == 3 else entry[8:12])
            found[tag] = value[0]
    if 256 in found and 257 in found:
        return found[257], found[256], "TIFF"
    return None


def _pnm_size(data):
    fields, at = [], 2
    while len(fields) < 2 and at < len(data):
        char = data[at:at + 1]
        if char == b"#":
            at = data.find(b"\n", at)
            if at < 0:
                return None
        elif char.isdigit():
            end = at
            while end < len(data) and data[end:end + 1].isdigit():
                end += 1
            fields.append(int(data[at:end]))
            at = end
            continue
        at += 1
    if len(fields) < 2:
        return None
    return fields[1], fields[0], "PNM"
