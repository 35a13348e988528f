"""Keypoints and the features described at them: :class:`Keypoints` and :class:`FeatureSet`.

A :class:`FeatureSet` is what a feature file holds (:mod:`lbdviewer.features.npz`,
:mod:`lbdviewer.features.filestorage`), validated on construction.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from lbdviewer.libraries.registry import DESCRIPTORS

__all__ = ["CONTEXT_PARAMS", "FORMAT", "KEYPOINT_COLUMNS", "VERSION", "FeatureSet", "Keypoints", "model_params",
           "validate"]

#: What a feature file written by lbdviewer says it is, and the version of its layout.
FORMAT = "lbdviewer-features"
VERSION = 1
KEYPOINT_COLUMNS = ("x", "y", "size", "angle", "octave", "response")
#: Keys of a feature file's ``params`` that record where the features came from and what was done to them, not
#: how the descriptor was parameterised: the library's version, the SHA-256 (hex) of the image file they were
#: extracted from, the defences applied (:mod:`lbdviewer.defences`) and the descriptor bits a file releases.
CONTEXT_PARAMS = ("library", "image_sha256", "defences", "bit_positions")


def model_params(params):
    """The descriptor's own parameters in a feature file's ``params``: all but :data:`CONTEXT_PARAMS`.

    What :func:`lbdviewer.libraries.registry.get_model` takes to rebuild the
    model that wrote the file.

    Examples
    --------
    >>> model_params({"n_bits": 256, "library": "opencv 4.10", "image_sha256": "ab" * 32})
    {'n_bits': 256}
    """
    return {key: value for key, value in params.items() if key not in CONTEXT_PARAMS}


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

    ``provenance`` says how what the file did not give was settled (the
    entry read, where the image size came from, how the descriptor was
    chosen and with what margin, notes for the user); empty for a file that
    says everything. It is not part of the file's content.

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
    provenance: dict = field(default_factory=dict)

    def __post_init__(self):
        validate(self)

    @property
    def image_sha256(self):
        """SHA-256 (hex) of the image file the features were extracted from, as recorded; None if not recorded.

        ``lbdviewer extract`` records it (``params["image_sha256"]``); files
        written before it did, or by other programs, have none.
        """
        value = self.params.get("image_sha256")
        return value if isinstance(value, str) else None

    def model_params(self):
        """The descriptor's parameters (:func:`model_params` of :attr:`params`)."""
        return model_params(self.params)

    def bits(self):
        """Descriptors unpacked to ``{-1, +1}``, shape ``(K, n_bits)``."""
        unpacked = np.unpackbits(self.descriptors, axis=1, count=self.n_bits, bitorder=self.bitorder)
        return (2 * unpacked.astype(np.int8) - 1).astype(np.int8)

    def bit_positions(self):
        """Which of the descriptor's bits the file holds, in order (``params["bit_positions"]``), or None: all.

        A file that releases a subset of the bit positions (:func:`lbdviewer.defences.transforms.keep_bits`)
        names them, so its ``n_bits`` bits can be read as tests of the full descriptor.

        Examples
        --------
        >>> fs = FeatureSet("orb", {"bit_positions": [3, 7]}, (64, 64), Keypoints([32.0], [32.0]),
        ...                 np.zeros((1, 1), np.uint8), 2, "little")
        >>> fs.bit_positions().tolist(), fs.model_params()
        ([3, 7], {})
        """
        positions = self.params.get("bit_positions")
        return None if positions is None else np.array(positions, dtype=np.int64)

    def take(self, index):
        """The features of the keypoints selected by an integer or boolean ``index`` (same params).

        Examples
        --------
        >>> fs = FeatureSet("orb", {}, (64, 64), Keypoints([30.0, 32.0], [32.0, 30.0]),
        ...                 np.array([[1] * 32, [2] * 32], np.uint8), 256, "little")
        >>> kept = fs.take([1])
        >>> kept.keypoints.x.tolist(), kept.descriptors[:, 0].tolist()
        ([32.0], [2])
        """
        index = np.asarray(index)
        return replace(self, keypoints=self.keypoints.take(index),
                       descriptors=np.ascontiguousarray(self.descriptors[index]))


def validate(features):
    """Raise ValueError naming the first inconsistency in ``features``."""
    if features.descriptor not in DESCRIPTORS:
        raise ValueError(f"unknown descriptor {features.descriptor!r}; expected one of {DESCRIPTORS}")
    if not isinstance(features.params, dict):
        raise ValueError(f"params must be a dict, got {type(features.params).__name__}")
    digest = features.params.get("image_sha256")
    if digest is not None and not (isinstance(digest, str) and len(digest) == 64
                                   and all(c in "0123456789abcdef" for c in digest)):
        raise ValueError(f"params['image_sha256'] must be 64 lower-case hex digits, got {digest!r}")
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
    positions = features.params.get("bit_positions")
    if positions is not None:
        values = np.asarray(positions)
        if (values.shape != (n_bits,) or not np.issubdtype(values.dtype, np.integer) or np.any(values < 0)
                or len(np.unique(values)) != n_bits):
            raise ValueError(f"params['bit_positions'] must be {n_bits} distinct non-negative integers (one per "
                             f"bit), got {str(positions)[:80]}")
    desc = np.asarray(features.descriptors)
    expected = (len(kp), (n_bits + 7) // 8)
    if desc.dtype != np.uint8 or desc.shape != expected:
        raise ValueError(f"descriptors must be uint8 of shape {expected}, got {desc.dtype} {desc.shape}")
