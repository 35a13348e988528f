"""The lbdviewer feature file (format version 1): a NumPy ``.npz`` archive read without pickling.

A feature file is a NumPy ``.npz`` archive (written without pickling and
always read with ``allow_pickle=False``) holding:

==================  ===============  =============================================
key                 dtype, shape     meaning
==================  ===============  =============================================
``format``          str, ()          ``"lbdviewer-features"``
``version``         int64, ()        ``1``
``descriptor``      str, ()          ``orb``, ``opencv-brief``, ``opencv-freak``,
                                     ``skimage-brief``, ``beblid``, ``teblid``, ``brisk`` or ``akaze``
``params``          str, ()          JSON object of the descriptor's parameters
``image_shape``     int64, (2,)      ``(height, width)`` of the described image
``keypoints``       float64, (K, 6)  columns ``x, y, size, angle, octave,
                                     response``; ``(x, y)`` = (column, row) in
                                     level-0 pixels, ``angle`` in degrees as
                                     OpenCV's ``KeyPoint.angle`` (-1: none)
``descriptors``     uint8, (K, B)    packed bits, ``B = ceil(n_bits / 8)``
``n_bits``          int64, ()        bits per descriptor
``bitorder``        str, ()          ``"little"`` or ``"big"`` (as ``np.packbits``)
==================  ===============  =============================================

:func:`load_npz` checks what the archive declares (member sizes, ``.npy``
headers, keypoint count, ``image_shape``) against :mod:`lbdviewer.io.limits`
before reading, then every item, and raises :class:`ValueError` naming the
problem.
"""

from __future__ import annotations

import io
import json
import os
import zipfile

import numpy as np

from lbdviewer.features.keypoints import FORMAT, KEYPOINT_COLUMNS, VERSION, FeatureSet, Keypoints, validate
from lbdviewer.io import limits
from lbdviewer.io.files import atomic_write, open_regular
from lbdviewer.io.limits import check_keypoints, check_pixels

__all__ = ["MAX_DESCRIPTOR_BYTES", "check_archive", "load_npz", "save_features_npz", "save_npz"]


def save_features_npz(path, features):
    """Write ``features`` to ``path`` as an lbdviewer ``.npz`` feature file, atomically."""
    validate(features)
    try:
        params = json.dumps(features.params, sort_keys=True, allow_nan=False)
    except (TypeError, ValueError) as error:
        raise ValueError(f"params must be plain JSON values without NaN or infinity: {error}") from None
    arrays = {
        "format": np.array(FORMAT),
        "version": np.array(VERSION, dtype=np.int64),
        "descriptor": np.array(features.descriptor),
        "params": np.array(params),
        "image_shape": np.array(features.image_shape, dtype=np.int64),
        "keypoints": features.keypoints.as_array(),
        "descriptors": np.ascontiguousarray(features.descriptors, dtype=np.uint8),
        "n_bits": np.array(int(features.n_bits), dtype=np.int64),
        "bitorder": np.array(features.bitorder),
    }
    save_npz(path, arrays)


def save_npz(path, arrays):
    """Write ``arrays`` (numeric or string, never objects) to an ``.npz`` file atomically.

    Written with :func:`lbdviewer.io.files.atomic_write`: readers never see a
    half-written file.

    Parameters
    ----------
    path : str or os.PathLike
    arrays : dict of str to array_like

    Raises
    ------
    ValueError
        If the folder of ``path`` does not exist.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     save_npz(os.path.join(folder, "a.npz"), {"x": np.arange(3)})
    ...     with np.load(os.path.join(folder, "a.npz"), allow_pickle=False) as data:
    ...         data["x"].tolist()
    [0, 1, 2]
    """
    buffer = io.BytesIO()
    np.savez(buffer, **{name: np.asarray(value) for name, value in arrays.items()})
    atomic_write(path, buffer.getvalue())


#: Largest bytes per descriptor (4096 bits; the modelled libraries use at most 64).
MAX_DESCRIPTOR_BYTES = 512
#: Largest member that is neither keypoints nor descriptors (strings, scalars, params).
MAX_SMALL_MEMBER_BYTES = 1 << 20
#: Members an archive may hold (version 1 writes nine).
MAX_MEMBERS = 64


def _member_limits(key, max_keypoints):
    """Largest declared shape allowed for member ``key``: ``(max rows, max bytes)``."""
    if key == "keypoints":
        return max_keypoints, max_keypoints * len(KEYPOINT_COLUMNS) * 8
    if key == "descriptors":
        return max_keypoints, max_keypoints * MAX_DESCRIPTOR_BYTES
    return None, MAX_SMALL_MEMBER_BYTES


def check_archive(handle, name, *, max_keypoints=None):
    """Check what an ``.npz`` archive declares before any member is read.

    For every member: the zip directory's uncompressed size and the ``.npy``
    header's dtype and shape (read from the first bytes only) must agree,
    object (pickled) dtypes are refused, and the keypoint rows and member
    sizes must stay within the limits of :mod:`lbdviewer.io.limits`.

    Parameters
    ----------
    handle : binary file object
        Positioned anywhere; the archive's directory is read from its end.
    name : str
        The file name, for messages.
    max_keypoints : int, optional
        Default :func:`lbdviewer.io.limits.max_keypoints`.

    Raises
    ------
    ValueError
        Naming the member and what is wrong; a
        :class:`lbdviewer.io.limits.ResourceLimitError` for a limit.
    """
    max_keypoints = limits.max_keypoints(max_keypoints)
    try:
        archive = zipfile.ZipFile(handle)
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as error:
        raise ValueError(f"cannot read feature file {name!r} (truncated or not .npz): {error}") from None
    with archive:
        members = archive.infolist()
        if len(members) > MAX_MEMBERS:
            raise ValueError(f"feature file {name!r} holds {len(members)} members, more than {MAX_MEMBERS}")
        for info in members:
            key = info.filename[:-4] if info.filename.endswith(".npy") else info.filename
            rows_limit, bytes_limit = _member_limits(key, max_keypoints)
            try:
                with archive.open(info) as member:
                    version = np.lib.format.read_magic(member)
                    if version not in ((1, 0), (2, 0)):
                        raise ValueError(f"unsupported .npy version {version}")
                    reader = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                              else np.lib.format.read_array_header_2_0)
                    shape, _, dtype = reader(member, max_header_size=10_000)
                    header_bytes = member.tell()
            except (ValueError, EOFError, OSError, zipfile.BadZipFile, RuntimeError) as error:
                raise ValueError(f"feature file {name!r} member {key!r} has no valid .npy header "
                                 f"(truncated or corrupt): {error}") from None
            if dtype.hasobject:
                raise ValueError(f"feature file item {key!r} is a pickled (object) array, which is refused")
            declared = int(np.prod(shape, dtype=object)) * dtype.itemsize
            if rows_limit is not None and len(shape) >= 1:
                check_keypoints(shape[0], f"feature file {name!r} ({key!r} has {shape[0]:,} rows)",
                                limit=rows_limit)
            if key == "descriptors" and len(shape) == 2 and shape[1] > MAX_DESCRIPTOR_BYTES:
                raise limits.ResourceLimitError(
                    f"feature file {name!r} declares descriptors of {shape[1]:,} bytes each, more than "
                    f"{MAX_DESCRIPTOR_BYTES} ({8 * MAX_DESCRIPTOR_BYTES} bits)")
            if declared > bytes_limit:
                raise limits.ResourceLimitError(
                    f"feature file {name!r} member {key!r} declares shape {tuple(shape)} of {dtype} "
                    f"({declared:,} bytes), more than the {bytes_limit:,} bytes its limit allows")
            if info.file_size != header_bytes + declared:
                raise ValueError(
                    f"feature file {name!r} member {key!r} is truncated or corrupt: its header declares "
                    f"{declared:,} bytes of data, the archive holds {info.file_size - header_bytes:,}")


def _item(data, key, kind):
    if key not in data.files:
        raise ValueError(f"feature file is missing {key!r}")
    try:
        value = data[key]
    except (ValueError, EOFError, OSError, zipfile.BadZipFile) as error:
        raise ValueError(f"feature file item {key!r} is truncated or corrupt: {error}") from None
    if value.dtype.kind == "O":
        raise ValueError(f"feature file item {key!r} is a pickled (object) array, which is refused")
    if kind == "str":
        if value.dtype.kind != "U" or value.shape != ():
            raise ValueError(f"feature file item {key!r} must be a string, got {value.dtype} {value.shape}")
        return str(value)
    if kind == "int":
        if value.dtype.kind not in "iu" or value.shape != ():
            raise ValueError(f"feature file item {key!r} must be an integer, got {value.dtype} {value.shape}")
        return int(value)
    return value


def load_npz(path, *, max_pixels=None, max_keypoints=None):
    """Read and validate an lbdviewer ``.npz`` feature file (see the module docstring).

    Raises
    ------
    ValueError
        For a file that is not a regular file (a FIFO, a device or a folder is refused before it is
        opened), a truncated or non-npz file, a pickled payload, a wrong format or
        version, an unknown descriptor, wrong shapes or dtypes, NaN keypoint
        values or keypoints outside the image.
    lbdviewer.io.limits.ResourceLimitError
        When the file declares more pixels or keypoints than the limits.
    """
    name = os.fspath(path)
    with open_regular(name, "feature file") as handle:
        check_archive(handle, name, max_keypoints=max_keypoints)
        handle.seek(0)
        try:
            archive = np.load(handle, allow_pickle=False)
        except (OSError, EOFError, zipfile.BadZipFile, ValueError) as error:
            raise ValueError(f"cannot read feature file {name!r} (truncated or not .npz): {error}") from error
        if not isinstance(archive, np.lib.npyio.NpzFile):
            raise ValueError(f"feature file {name!r} is not an .npz archive")
        try:
            with archive as data:
                return _read(data, name, limits.max_pixels(max_pixels))
        except (zipfile.BadZipFile, EOFError, OSError) as error:
            raise ValueError(f"feature file {name!r} is truncated or corrupt: {error}") from error


def _read(data, name, max_pixels):
    if _item(data, "format", "str") != FORMAT:
        raise ValueError(f"feature file format must be {FORMAT!r}, got {str(data['format'])!r}")
    version = _item(data, "version", "int")
    if version != VERSION:
        raise ValueError(f"unsupported feature file version {version}; this lbdviewer reads {VERSION}")
    try:
        params = json.loads(_item(data, "params", "str"))
    except json.JSONDecodeError as error:
        raise ValueError(f"feature file params are not valid JSON: {error}") from error
    except RecursionError:
        raise ValueError("feature file params are nested too deeply to read") from None
    if not isinstance(params, dict):
        raise ValueError(f"feature file params must be a JSON object, got {type(params).__name__}")
    shape = _item(data, "image_shape", "array")
    if shape.dtype.kind not in "iu" or shape.shape != (2,):
        raise ValueError(f"feature file image_shape must be 2 integers, got {shape.dtype} {shape.shape}")
    if shape.min() < 1:
        raise ValueError(f"image_shape must be (height, width) of positive ints, got {tuple(shape.tolist())}")
    check_pixels(shape[0], shape[1], f"feature file {name!r} (image_shape)", limit=max_pixels)
    table = _item(data, "keypoints", "array")
    if table.dtype.kind != "f":
        raise ValueError(f"feature file keypoints must be float, got {table.dtype}")
    return FeatureSet(
        descriptor=_item(data, "descriptor", "str"),
        params=params,
        image_shape=tuple(shape.tolist()),
        keypoints=Keypoints.from_array(table),
        descriptors=_item(data, "descriptors", "array"),
        n_bits=_item(data, "n_bits", "int"),
        bitorder=_item(data, "bitorder", "str"),
    )
