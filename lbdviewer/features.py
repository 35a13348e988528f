"""Keypoints and the lbdviewer feature file (format version 1).

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

:func:`load_features` checks what the archive declares (member sizes, ``.npy``
headers, keypoint count, ``image_shape``) against :mod:`lbdviewer.limits`
before reading, then every item, and raises :class:`ValueError` naming the
problem.
:func:`load_features` and :func:`save_features` also read and write OpenCV
``cv::FileStorage`` files (``.yml``, ``.yaml``, ``.xml``, ``.json``:
:mod:`lbdviewer.filestorage`).
"""

from __future__ import annotations

import io
import json
import os
import zipfile
from dataclasses import dataclass

import numpy as np

from lbdviewer import limits
from lbdviewer.io import atomic_write
from lbdviewer.limits import check_keypoints, check_pixels

FORMAT = "lbdviewer-features"
VERSION = 1
DESCRIPTORS = ("orb", "opencv-brief", "opencv-freak", "skimage-brief", "beblid", "teblid", "brisk", "akaze")
KEYPOINT_COLUMNS = ("x", "y", "size", "angle", "octave", "response")
#: Suffixes :func:`load_features` reads: ``.npz`` and OpenCV FileStorage's.
FEATURE_SUFFIXES = (".npz", ".yml", ".yaml", ".xml", ".json")


def _column(values, name, n):
    out = np.array(values, dtype=np.float64, copy=True).reshape(-1)
    if out.shape != (n,):
        raise ValueError(f"keypoint column {name!r} must have {n} values, got shape {np.shape(values)}")
    out.flags.writeable = False
    return out


@dataclass(frozen=True, eq=False)
class Keypoints:
    """Keypoints as OpenCV describes them, as columns of equal length ``K``.

    Parameters
    ----------
    x, y : array_like, shape (K,)
        Position (column, row) in level-0 pixels.
    size, angle, octave, response : array_like, shape (K,), optional
        Diameter in pixels (default 31), orientation in degrees (default -1,
        none), pyramid level (default 0), detector response (default 0).

    Examples
    --------
    >>> kp = Keypoints([10.0, 20.0], [5.0, 6.0])
    >>> len(kp), kp.octave.tolist()
    (2, [0, 0])
    """

    x: np.ndarray
    y: np.ndarray
    size: np.ndarray = None
    angle: np.ndarray = None
    octave: np.ndarray = None
    response: np.ndarray = None

    def __post_init__(self):
        n = np.size(self.x)
        defaults = {"size": 31.0, "angle": -1.0, "octave": 0, "response": 0.0}
        for name in KEYPOINT_COLUMNS:
            value = getattr(self, name)
            if value is None:
                value = np.full(n, defaults[name])
            column = _column(value, name, n)
            if name == "octave":
                if not np.all(np.isfinite(column)) or np.any(column != np.round(column)) or np.any(column < 0):
                    raise ValueError(f"keypoint octave must be non-negative integers, got {column[:5]}")
                column = column.astype(np.int64)
                column.flags.writeable = False
            object.__setattr__(self, name, column)

    def __len__(self):
        return self.x.shape[0]

    def as_array(self):
        """The ``(K, 6)`` float64 table of :data:`KEYPOINT_COLUMNS`."""
        return np.stack([getattr(self, name).astype(np.float64) for name in KEYPOINT_COLUMNS], axis=1)

    @classmethod
    def from_array(cls, table):
        """Keypoints from a ``(K, 6)`` table (see :meth:`as_array`)."""
        table = np.asarray(table)
        if table.ndim != 2 or table.shape[1] != len(KEYPOINT_COLUMNS):
            raise ValueError(f"keypoints must have shape (K, {len(KEYPOINT_COLUMNS)}), got {table.shape}")
        return cls(*table.T)

    @classmethod
    def from_cv(cls, keypoints):
        """Keypoints from a sequence of ``cv2.KeyPoint``."""
        rows = [(k.pt[0], k.pt[1], k.size, k.angle, k.octave, k.response) for k in keypoints]
        return cls.from_array(np.array(rows, dtype=np.float64).reshape(-1, len(KEYPOINT_COLUMNS)))

    def to_cv(self):
        """A list of ``cv2.KeyPoint`` whose ``class_id`` is the row index."""
        import cv2

        return [
            cv2.KeyPoint(float(x), float(y), float(s), float(a), float(r), int(o), i)
            for i, (x, y, s, a, o, r) in enumerate(
                zip(self.x, self.y, self.size, self.angle, self.octave, self.response)
            )
        ]

    def take(self, index):
        """The keypoints selected by an integer or boolean ``index``."""
        return Keypoints(*(getattr(self, name)[index] for name in KEYPOINT_COLUMNS))


@dataclass(frozen=True, eq=False)
class FeatureSet:
    """What a feature file holds: keypoints, packed descriptors and context.

    Examples
    --------
    >>> fs = FeatureSet("orb", {}, (64, 64), Keypoints([32.0], [32.0]), np.zeros((1, 32), np.uint8), 256, "little")
    >>> fs.bits().shape
    (1, 256)
    """

    descriptor: str
    params: dict
    image_shape: tuple
    keypoints: Keypoints
    descriptors: np.ndarray
    n_bits: int
    bitorder: str

    def __post_init__(self):
        validate(self)

    def bits(self):
        """Descriptors unpacked to ``{-1, +1}``, shape ``(K, n_bits)``."""
        unpacked = np.unpackbits(self.descriptors, axis=1, count=self.n_bits, bitorder=self.bitorder)
        return (2 * unpacked.astype(np.int8) - 1).astype(np.int8)


def validate(features):
    """Raise ValueError naming the first inconsistency in ``features``."""
    if features.descriptor not in DESCRIPTORS:
        raise ValueError(f"unknown descriptor {features.descriptor!r}; expected one of {DESCRIPTORS}")
    if not isinstance(features.params, dict):
        raise ValueError(f"params must be a dict, got {type(features.params).__name__}")
    shape = tuple(int(v) for v in np.asarray(features.image_shape).reshape(-1))
    if len(shape) != 2 or min(shape) < 1:
        raise ValueError(f"image_shape must be (height, width) of positive ints, got {features.image_shape!r}")
    object.__setattr__(features, "image_shape", shape)
    if features.bitorder not in ("little", "big"):
        raise ValueError(f"bitorder must be 'little' or 'big', got {features.bitorder!r}")
    n_bits = int(features.n_bits)
    if n_bits < 1:
        raise ValueError(f"n_bits must be positive, got {features.n_bits!r}")
    kp = features.keypoints
    if not isinstance(kp, Keypoints):
        raise ValueError(f"keypoints must be Keypoints, got {type(kp).__name__}")
    table = kp.as_array()
    if not np.all(np.isfinite(table)):
        row = int(np.argmax(~np.all(np.isfinite(table), axis=1)))
        raise ValueError(f"keypoint {row} has a NaN or infinite value: {table[row].tolist()}")
    height, width = shape
    outside = (kp.x < 0) | (kp.y < 0) | (kp.x > width - 1) | (kp.y > height - 1)
    if np.any(outside):
        row = int(np.argmax(outside))
        raise ValueError(
            f"keypoint {row} at (x={kp.x[row]}, y={kp.y[row]}) lies outside the image of shape {shape}"
        )
    if np.any(kp.size <= 0):
        raise ValueError(f"keypoint sizes must be positive, got min {kp.size.min()}")
    desc = np.asarray(features.descriptors)
    expected = (len(kp), (n_bits + 7) // 8)
    if desc.dtype != np.uint8 or desc.shape != expected:
        raise ValueError(f"descriptors must be uint8 of shape {expected}, got {desc.dtype} {desc.shape}")


def save_features(path, features, *, fmt=None):
    """Write ``features`` to ``path`` atomically: ``.npz``, or OpenCV FileStorage by suffix or ``fmt``.

    Parameters
    ----------
    path : str or os.PathLike
    features : FeatureSet
    fmt : {"npz", "yaml", "xml", "json"}, optional
        Default: from the suffix (``.yml``/``.yaml``, ``.xml``, ``.json``:
        :mod:`lbdviewer.filestorage`; anything else ``.npz``).
    """
    from lbdviewer import filestorage

    if fmt not in (None, "npz") or (fmt is None and filestorage.format_of(path)):
        filestorage.save(path, features, fmt=fmt)
        return
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

    Written with :func:`lbdviewer.io.atomic_write`: readers never see a
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
    sizes must stay within the limits of :mod:`lbdviewer.limits`.

    Parameters
    ----------
    handle : binary file object
        Positioned anywhere; the archive's directory is read from its end.
    name : str
        The file name, for messages.
    max_keypoints : int, optional
        Default :func:`lbdviewer.limits.max_keypoints`.

    Raises
    ------
    ValueError
        Naming the member and what is wrong; a
        :class:`lbdviewer.limits.ResourceLimitError` for a limit.
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


def load_features(path, *, max_pixels=None, max_keypoints=None, descriptor=None, image_shape=None):
    """Read and validate a feature file: ``.npz``, or OpenCV FileStorage (``.yml``, ``.yaml``, ``.xml``, ``.json``).

    What the file declares is checked before anything is read: see
    :func:`check_archive` (members, keypoint count) and the pixel limit on
    ``image_shape``.

    Parameters
    ----------
    path : str or os.PathLike
    max_pixels, max_keypoints : int, optional
        Limits on ``image_shape`` and on the number of keypoints; defaults
        :func:`lbdviewer.limits.max_pixels` and
        :func:`lbdviewer.limits.max_keypoints`.
    descriptor : str, optional
        FileStorage only: the descriptor, when the file does not name it.
    image_shape : (int, int), optional
        FileStorage only: ``(height, width)``, when the file does not give it.

    Returns
    -------
    FeatureSet

    Raises
    ------
    ValueError
        For a truncated or non-npz file, a pickled payload, a wrong format or
        version, an unknown descriptor, wrong shapes or dtypes, NaN keypoint
        values or keypoints outside the image.
    lbdviewer.limits.ResourceLimitError
        When the file declares more pixels or keypoints than the limits.
    """
    from lbdviewer import filestorage

    if filestorage.format_of(path):
        return filestorage.load(path, descriptor=descriptor, image_shape=image_shape, max_pixels=max_pixels,
                                max_keypoints=max_keypoints)
    name = os.fspath(path)
    try:
        handle = open(name, "rb")
    except OSError as error:
        raise ValueError(f"cannot read feature file {name!r}: {error}") from error
    with handle:
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
