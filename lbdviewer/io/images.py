"""Images in and out: any image file to a float gray array in ``[0, 1]``, and arrays to PNG, JPEG, TIFF or BMP.

Every image leaves :func:`load_image` as a float64 array in ``[0, 1]`` with
shape ``(H, W)``: colour is converted to gray (ITU-R BT.601 weights, as
OpenCV's ``cvtColor``), 16-bit data keeps its precision, and an alpha channel
is composited over a white background. Writers go through :func:`lbdviewer.io.files.atomic_write`,
so an interrupted run never leaves a half-written file behind.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import cv2
import numpy as np

from lbdviewer.io import limits
from lbdviewer.io.files import atomic_write, read_regular
from lbdviewer.io.limits import check_pixels, image_header_size

_GRAY_WEIGHTS = np.array([0.114, 0.587, 0.299])  # B, G, R as OpenCV stores them


class ImageRescaledWarning(UserWarning):
    """A floating-point image outside ``[0, 1]`` was rescaled into it (the message says how)."""


def _float_levels(values, name):
    """Floating-point pixel values in ``[0, 1]``: as they are, or rescaled with an :class:`ImageRescaledWarning`.

    Values from 0 to at most 255 (or 65535) are the levels of an 8-bit
    (16-bit) image stored as floats and are divided by 255 (65535); any
    other range outside ``[0, 1]`` is stretched linearly from its minimum
    and maximum (a constant one clipped). NaN and infinities are refused.
    """
    if not np.all(np.isfinite(values)):
        raise ValueError(f"{name}: floating-point pixels must be finite (NaN or infinity found)")
    low, high = float(values.min()), float(values.max())
    if low >= 0.0 and high <= 1.0:
        return values
    if low >= 0.0 and high <= 65535.0:
        scale = 255.0 if high <= 255.0 else 65535.0
        how, values = f"divided by {scale:g}", values / scale
    elif high > low:
        how, values = "stretched linearly from its minimum and maximum", (values - low) / (high - low)
    else:
        how, values = "clipped to [0, 1] (every pixel has one value)", np.clip(values, 0.0, 1.0)
    warnings.warn(f"{name}: floating-point pixels range from {low:g} to {high:g}, outside [0, 1]; the image was "
                  f"{how} (save floats in [0, 1], or 8- or 16-bit integers, to keep the levels as they are)",
                  ImageRescaledWarning, stacklevel=3)
    return values


def to_gray(array, *, name="image"):
    """Convert a decoded image array to a gray float image in ``[0, 1]``.

    Parameters
    ----------
    array : ndarray
        ``(H, W)``, ``(H, W, 1)``, ``(H, W, 2)`` (gray + alpha), ``(H, W, 3)``
        (BGR) or ``(H, W, 4)`` (BGRA); unsigned integers are scaled by their
        maximum value, booleans map to 0/1, floats in ``[0, 1]`` are kept;
        floats outside it are rescaled with an :class:`ImageRescaledWarning`
        (0..255 and 0..65535 divided by 255 or 65535, other ranges stretched
        from their minimum and maximum).
    name : str
        What to call the array in error messages (e.g. the file name).

    Returns
    -------
    ndarray of float64, shape (H, W)

    Raises
    ------
    ValueError
        For another shape or pixel type, or floats that are not finite.

    Notes
    -----
    Gray is ``0.299 R + 0.587 G + 0.114 B``. With an alpha channel ``a`` the
    result is ``a * gray + (1 - a)``: transparent pixels become white.

    Examples
    --------
    >>> to_gray(np.array([[0, 65535]], dtype=np.uint16))
    array([[0., 1.]])
    >>> to_gray(np.zeros((1, 1, 4), dtype=np.uint8))  # fully transparent
    array([[1.]])
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     gray = to_gray(np.array([[0.0, 51.0, 255.0]], dtype=np.float32))  # 8-bit levels stored as floats
    >>> gray.round(6).tolist(), caught[0].category.__name__
    ([[0.0, 0.2, 1.0]], 'ImageRescaledWarning')
    """
    array = np.asarray(array)
    if array.dtype == bool:
        values = array.astype(np.float64)
    elif np.issubdtype(array.dtype, np.unsignedinteger):
        values = array.astype(np.float64) / np.iinfo(array.dtype).max
    elif np.issubdtype(array.dtype, np.floating):
        values = array.astype(np.float64)
        if values.ndim == 3 and values.shape[2] in (2, 4):  # the colour channels; alpha is clipped below
            values[:, :, :-1] = _float_levels(values[:, :, :-1], name)
            values[:, :, -1] = np.clip(values[:, :, -1], 0.0, 1.0)
        else:
            values = _float_levels(values, name)
    else:
        raise ValueError(f"{name}: unsupported pixel type {array.dtype}")
    if values.ndim == 3 and values.shape[2] == 1:
        values = values[:, :, 0]
    if values.ndim == 2:
        gray, alpha = values, None
    elif values.ndim == 3 and values.shape[2] == 2:
        gray, alpha = values[:, :, 0], values[:, :, 1]
    elif values.ndim == 3 and values.shape[2] in (3, 4):
        gray = values[:, :, :3] @ _GRAY_WEIGHTS
        alpha = values[:, :, 3] if values.shape[2] == 4 else None
    else:
        raise ValueError(f"{name}: unsupported image shape {array.shape}")
    if alpha is not None:
        gray = alpha * gray + (1.0 - alpha)
    if gray.shape[0] < 1 or gray.shape[1] < 1:
        raise ValueError(f"{name}: empty image of shape {array.shape}")
    return np.ascontiguousarray(np.clip(gray, 0.0, 1.0))


def load_image(path, *, max_pixels=None):
    """Read a PNG, JPEG, TIFF, BMP or PNM file as a gray float image in ``[0, 1]``.

    The size the file's header declares is checked against the pixel limit
    before anything is decoded (:mod:`lbdviewer.io.limits`).

    Parameters
    ----------
    path : str or os.PathLike
        The image file.
    max_pixels : int, optional
        Largest ``height * width`` accepted; default
        :func:`lbdviewer.io.limits.max_pixels` (``$LBDVIEWER_MAX_PIXELS`` or
        12 M pixels).

    Returns
    -------
    ndarray of float64, shape (H, W)

    Raises
    ------
    ValueError
        If the file does not exist, is not a regular file (a FIFO, a device or a folder is refused
        before it is opened), or cannot be decoded; the
        message names the file and the reason.
    lbdviewer.io.limits.ResourceLimitError
        If the header declares more pixels than ``max_pixels``.

    Examples
    --------
    >>> from lbdviewer.io.samples import sample_images
    >>> image = load_image(sample_images()["camera"])
    >>> image.shape, image.dtype, bool(0.0 <= image.min() <= image.max() <= 1.0)
    ((512, 512), dtype('float64'), True)
    """
    max_pixels = limits.max_pixels(max_pixels)
    path = Path(path)
    if not path.exists():
        raise ValueError(f"image file {str(path)!r} does not exist")
    data = np.frombuffer(read_regular(path, "image file"), dtype=np.uint8)
    if data.size == 0:
        raise ValueError(f"image file {str(path)!r} is empty")
    header = image_header_size(data.tobytes())
    if header is None:
        raise ValueError(f"image file {str(path)!r} could not be decoded: not a PNG, JPEG, TIFF, BMP or PNM image "
                         "(or its header is cut short)")
    height, width, _ = header
    check_pixels(height, width, f"image file {str(path)!r}", limit=max_pixels)
    try:
        array = cv2.imdecode(data, cv2.IMREAD_UNCHANGED)
    except cv2.error as error:
        raise ValueError(f"image file {str(path)!r} could not be decoded: {error}") from None
    if array is None:
        raise ValueError(f"image file {str(path)!r} could not be decoded (truncated or corrupt)")
    # The decoder may read a size the header parser did not see (a TIFF's later directory).
    check_pixels(array.shape[0], array.shape[1], f"image file {str(path)!r}", limit=max_pixels)
    return to_gray(array, name=f"image file {str(path)!r}")


def to_uint8(image):
    """Quantise a float image in ``[0, 1]`` to uint8 (values are clipped first).

    Examples
    --------
    >>> to_uint8(np.array([[0.0, 0.5, 2.0]]))
    array([[  0, 128, 255]], dtype=uint8)
    """
    return np.round(np.clip(np.asarray(image, dtype=np.float64), 0.0, 1.0) * 255.0).astype(np.uint8)


def upscale(image, factor):
    """Enlarge ``image`` by an integer factor, nearest neighbour: every pixel becomes a ``factor`` x ``factor`` block.

    What pixel-exact exports use: no interpolation, no resampling.

    Examples
    --------
    >>> upscale(np.array([[0, 1]]), 2).tolist()
    [[0, 0, 1, 1], [0, 0, 1, 1]]
    """
    if isinstance(factor, bool) or int(factor) != factor or factor < 1:
        raise ValueError(f"factor must be a positive integer, got {factor!r}")
    factor = int(factor)
    return np.repeat(np.repeat(np.asarray(image), factor, axis=0), factor, axis=1)


#: Encoders of :func:`encode_image`, by file suffix.
IMAGE_ENCODERS = {".png": ".png", ".jpg": ".jpg", ".jpeg": ".jpg", ".tif": ".tiff", ".tiff": ".tiff",
                  ".bmp": ".bmp"}


def encode_image(image, suffix=".png"):
    """The bytes of a float image in ``[0, 1]`` encoded as 8 bits in the format of ``suffix``.

    Parameters
    ----------
    image : ndarray, shape (H, W) or (H, W, 3)
        Gray, or colour in RGB order: floats in ``[0, 1]``, or uint8 written
        as they are.
    suffix : str
        One of :data:`IMAGE_ENCODERS` (case-insensitive); JPEG at quality 95.

    Returns
    -------
    bytes

    Raises
    ------
    ValueError
        If ``image`` has another shape or ``suffix`` is not an image format.

    Examples
    --------
    >>> encode_image(np.zeros((2, 2)))[:4]
    b'\\x89PNG'
    >>> encode_image(np.zeros((2, 2)), ".JPG")[:2]
    b'\\xff\\xd8'
    """
    image = np.asarray(image)
    if not (image.ndim == 2 or (image.ndim == 3 and image.shape[2] == 3)):
        raise ValueError(f"image must have shape (H, W) or (H, W, 3), got {image.shape}")
    kind = IMAGE_ENCODERS.get(suffix.lower())
    if kind is None:
        raise ValueError(f"cannot write an image as {suffix!r}; use one of {', '.join(IMAGE_ENCODERS)}")
    pixels = image if image.dtype == np.uint8 else to_uint8(image)
    if pixels.ndim == 3:
        pixels = pixels[:, :, ::-1]
    params = [cv2.IMWRITE_JPEG_QUALITY, 95] if kind == ".jpg" else []
    ok, encoded = cv2.imencode(kind, np.ascontiguousarray(pixels), params)
    if not ok:
        raise ValueError(f"could not encode an image as {suffix!r}")
    return encoded.tobytes()


def save_png(path, image):
    """Write a float image in ``[0, 1]`` as an 8-bit PNG, atomically.

    Parameters
    ----------
    path : str or os.PathLike
        Destination; its folder must exist. A name ending in another image
        format (``.jpg``, ``.tif``, ...) is refused: use :func:`save_image`.
    image : ndarray, shape (H, W) or (H, W, 3)
        Gray, or colour in RGB order: floats in ``[0, 1]``, or uint8 written
        as they are.

    Returns
    -------
    pathlib.Path

    Raises
    ------
    ValueError
        If ``image`` has another shape, the name ends in another image format
        or the folder does not exist.
    """
    suffix = Path(path).suffix.lower()
    if suffix in IMAGE_ENCODERS and suffix != ".png":
        raise ValueError(f"save_png would write PNG bytes under the name {str(path)!r}; use save_image")
    return atomic_write(path, encode_image(image, ".png"))


def save_image(path, image):
    """Write a float image in ``[0, 1]`` in the format its name's suffix says, atomically.

    See :func:`encode_image` for ``image`` and the formats.

    Returns
    -------
    pathlib.Path
    """
    return atomic_write(path, encode_image(image, Path(path).suffix or ".png"))
