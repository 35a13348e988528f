"""Run a real library and our model of it on the same keypoints.

Each model in :mod:`lbdviewer.patterns` (``orb``, ``opencv_brief``,
``opencv_freak``, ``skimage_brief``, ``opencv_brisk``) is a :class:`LibraryModel`:

* :meth:`~LibraryModel.run_library` calls the installed library;
* :meth:`~LibraryModel.model_bits` recomputes its bits with our own code,
  reproducing the library's integer arithmetic;
* :meth:`~LibraryModel.keypoint_patterns` gives, for every keypoint, a
  :class:`~lbdviewer.patterns.base.Pattern` in the coordinates of a patch of
  one of the model's images, so that ``bits == sign(L_k patch_k)`` with our
  :class:`~lbdviewer.operators.descriptor.DescriptorOperator` semantics.

Two views of the same bits are offered. With ``fold_smoothing=True`` the
library's smoothing is part of the fields (ORB: 7x7 Gaussian of sigma 2;
skimage: Gaussian; BRIEF: 9x9 box) and patches come from
:meth:`~LibraryModel.source_images` (the pyramid levels themselves): this is
what a reconstruction inverts. With ``fold_smoothing=False`` fields are single
pixels of :meth:`~LibraryModel.sampled_images` (the smoothed levels the library
reads), which is bit-exact even where the library rounds its smoothing to
integers.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lbdviewer.features.keypoints import Keypoints
from lbdviewer.io.images import to_uint8
from lbdviewer.operators.descriptor import DescriptorOperator
from lbdviewer.bits import sign_with_ties
from lbdviewer.patterns.base import Pattern



@dataclass(frozen=True, eq=False)
class KeypointPattern:
    """The pattern one keypoint was described with, placed in an image.

    Attributes
    ----------
    pattern : Pattern
        Fields in the coordinates of a ``P x P`` patch.
    level : int
        Index of the image (pyramid level) the patch comes from.
    origin : tuple of int
        ``(row, col)`` of patch pixel ``(0, 0)`` in that image (may be
        negative or beyond the image: the patch is then read with
        reflect-101 padding, as the libraries do).
    scale : float
        Size of one pixel of that image in level-0 pixels.
    """

    pattern: Pattern
    level: int
    origin: tuple
    scale: float


@dataclass(frozen=True, eq=False)
class LibraryResult:
    """What a library returned: kept keypoints, bits and their input rows."""

    keypoints: Keypoints
    bits: np.ndarray
    index: np.ndarray


def gray_uint8(image):
    """The 8-bit gray image a library sees for a float image in ``[0, 1]`` (uint8 passes through).

    Examples
    --------
    >>> gray_uint8(np.array([[0.0, 0.5, 1.0]])).tolist()
    [[0, 128, 255]]
    """
    image = np.asarray(image)
    if image.ndim != 2:
        raise ValueError(f"image must be a 2-D gray image, got shape {image.shape}")
    return image if image.dtype == np.uint8 else to_uint8(image)


def opencv_describe(extractor, image, keypoints, *, n_bits, bitorder):
    """Describe ``keypoints`` with an OpenCV extractor; results in input order.

    Parameters
    ----------
    extractor : cv2.Feature2D
    image : ndarray, shape (H, W)
        Float in ``[0, 1]`` or uint8.
    keypoints : Keypoints
    n_bits : int
    bitorder : {"little", "big"}
        How the library packs its bits.

    Returns
    -------
    kept : list of cv2.KeyPoint
        The keypoints the library kept (it may drop some and change angles),
        in input order.
    bits : ndarray of int8, shape (len(kept), n_bits)
        In {-1, +1}.
    index : ndarray of int64
        Row in ``keypoints`` of each kept keypoint.
    """
    kps, desc = extractor.compute(gray_uint8(image), keypoints.to_cv())
    if desc is None:
        desc = np.zeros((0, (n_bits + 7) // 8), dtype=np.uint8)
    index = np.array([k.class_id for k in kps], dtype=np.int64)
    order = np.argsort(index, kind="stable")
    bits = np.unpackbits(desc[order], axis=1, count=n_bits, bitorder=bitorder).astype(np.int8) * 2 - 1
    return [kps[i] for i in order], bits, index[order]


def pair_pattern(name, offsets, half, *, sigma, radius, kernel, params):
    """The pattern of a descriptor that compares pairs of (smoothed) pixels.

    Parameters
    ----------
    name : str
    offsets : array_like of int, shape (M, 2, 2)
        ``offsets[i] = [[xa, ya], [xb, yb]]``: measurement ``i`` is the field
        at offset ``a`` from the keypoint minus the field at ``b``.
    half : int
        The patch has side ``2 half + 1`` with the keypoint at its centre.
    sigma, radius : float
        Of every field.
    kernel : {"gaussian", "box"}
    params : dict
        The model's parameters (kept on the pattern).

    Returns
    -------
    Pattern
        One field per distinct offset.

    Examples
    --------
    >>> p = pair_pattern("toy", [[[1, 0], [-1, 0]], [[-1, 0], [0, 2]]], 2, sigma=1.0, radius=0.0,
    ...                  kernel="box", params={})
    >>> p.patch_size, p.centers.tolist(), p.pairs.tolist()
    (5, [[1.0, 2.0], [2.0, 4.0], [3.0, 2.0]], [[2, 0], [0, 1]])
    """
    points = np.asarray(offsets).reshape(-1, 2)
    if np.issubdtype(points.dtype, np.integer) and len(points):
        # One integer key a point, ordered as the rows (x, then y): a 1-D unique, 5x faster than axis=0.
        low, span = points.min(axis=0), np.ptp(points, axis=0) + 1
        keys, inverse = np.unique((points[:, 0] - low[0]) * span[1] + points[:, 1] - low[1], return_inverse=True)
        unique = np.column_stack([keys // span[1] + low[0], keys % span[1] + low[1]])
    else:
        unique, inverse = np.unique(points, axis=0, return_inverse=True)
    return Pattern(name, 2 * half + 1, unique + half, np.full(len(unique), float(sigma)),
                   np.full(len(unique), float(radius)), inverse.reshape(-1, 2), kernel=kernel,
                   tie_positive=False, params=tuple(params.items()))


def compare_offsets(values, cx, cy, offsets):
    """Bits of pixel-pair tests: ``values[c + a_i] > values[c + b_i]``, as {-1, +1}.

    Parameters
    ----------
    values : ndarray, shape (H, W)
        What the library compares (read with reflect-101 padding outside).
    cx, cy : ndarray of int, shape (K,)
        Keypoint centres (column, row).
    offsets : ndarray of int, shape (M, 2, 2) or (K, M, 2, 2)
        One table for all keypoints or one each; see :func:`pair_pattern`.

    Returns
    -------
    ndarray of int8, shape (K, M)

    Examples
    --------
    >>> compare_offsets(np.arange(9.0).reshape(3, 3), np.array([1]), np.array([1]),
    ...                 np.array([[[1, 0], [-1, 0]], [[0, -1], [0, 1]]])).tolist()
    [[1, -1]]
    """
    offsets = np.asarray(offsets)
    if offsets.ndim == 3:
        offsets = offsets[None]
    pad = int(np.abs(offsets).max()) + 1
    padded = np.pad(np.asarray(values, dtype=np.float64), pad, mode="reflect")
    picked = padded[cy[:, None, None] + offsets[..., 1] + pad, cx[:, None, None] + offsets[..., 0] + pad]
    return np.where(picked[..., 0] > picked[..., 1], 1, -1).astype(np.int8)


def keypoint_patches(images, keypoint_patterns):
    """The patch of every keypoint, with reflect-101 padding at image borders.

    Parameters
    ----------
    images : sequence of ndarray
        The model's images (see :meth:`LibraryModel.source_images`).
    keypoint_patterns : sequence of KeypointPattern
        All with the same patch size ``P``.

    Returns
    -------
    ndarray, shape (K, P, P), float64

    Examples
    --------
    >>> p = Pattern("toy", 3, [[1, 1]], [1], [0], [[0, 0]])
    >>> keypoint_patches([np.arange(9.0).reshape(3, 3)], [KeypointPattern(p, 0, (-1, -1), 1.0)])[0, 0].tolist()
    [4.0, 3.0, 4.0]
    """
    if not keypoint_patterns:
        return np.zeros((0, 1, 1))
    size = keypoint_patterns[0].pattern.patch_size
    pad = size
    padded = [np.pad(np.asarray(im, dtype=np.float64), pad, mode="reflect") for im in images]
    out = np.empty((len(keypoint_patterns), size, size))
    for k, kp in enumerate(keypoint_patterns):
        if kp.pattern.patch_size != size:
            raise ValueError(f"keypoint_patterns must share one patch size, got {size} and {kp.pattern.patch_size}")
        r, c = kp.origin[0] + pad, kp.origin[1] + pad
        out[k] = padded[kp.level][r:r + size, c:c + size]
    return out


class LibraryModel:
    """Common behaviour of the library models (see the module docstring).

    Subclasses set ``name``, ``bitorder``, ``tie_positive``, ``n_bits`` and
    implement ``params``, ``library_version``, ``_run_library``,
    ``model_bits``, ``source_images``, ``sampled_images`` and
    ``keypoint_patterns``.
    """

    name = ""
    bitorder = "little"
    tie_positive = False
    n_bits = 0
    #: ``"chained"`` when level ``l`` of :meth:`source_images` is level ``l - 1``
    #: resized bilinearly (ORB): inversions then solve through the pyramid
    #: (:class:`lbdviewer.operators.pyramid.PyramidJointOperator`).
    pyramid = None

    def __repr__(self):
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in self.params().items())})"

    def run_library(self, image, keypoints):
        """Describe ``keypoints`` of a float image with the real library.

        Returns
        -------
        LibraryResult
            Keypoints the library kept (with the angles it set), their bits
            in {-1, +1} and their row in ``keypoints``.
        """
        kept, bits, index = self._run_library(image, keypoints)
        return LibraryResult(kept, np.asarray(bits, dtype=np.int8), np.asarray(index, dtype=np.int64))

    def linear_bits(self, image, keypoints, *, fold_smoothing=True):
        """Bits ``sign(L_k patch_k)`` from :meth:`keypoint_patterns` and the operator."""
        images = self.source_images(image) if fold_smoothing else self.sampled_images(image)
        patterns = self.keypoint_patterns(keypoints, fold_smoothing=fold_smoothing)
        patches = keypoint_patches(images, patterns)
        out = np.empty((len(patterns), self.n_bits), dtype=np.int8)
        for k, (kp, patch) in enumerate(zip(patterns, patches)):
            values = DescriptorOperator(kp.pattern, dtype=np.float64).describe(patch, binary=False)
            values = values - kp.pattern.thresholds
            out[k] = sign_with_ties(values, tie_positive=self.tie_positive, atol=1e-9)
        return out

    def detect(self, image, *, n_keypoints=500):
        """Keypoints found by OpenCV's ORB detector (FAST + Harris, 8 levels)."""
        import cv2

        detector = cv2.ORB_create(nfeatures=int(n_keypoints))
        return Keypoints.from_cv(detector.detect(gray_uint8(image), None))


def agreement(model, image, keypoints=None, *, n_keypoints=500):
    """Share of identical bits between the library and our models.

    Parameters
    ----------
    model : LibraryModel
    image : ndarray, shape (H, W)
        Float image in ``[0, 1]``.
    keypoints : Keypoints, optional
        Default: :meth:`LibraryModel.detect`.
    n_keypoints : int
        Keypoints to detect when none are given.

    Returns
    -------
    dict
        ``keypoints`` (described by the library), ``bits`` compared,
        ``exact`` (share of bits :meth:`LibraryModel.model_bits` gets right),
        ``linear`` and ``linear_sampled`` (shares for ``sign(L_k patch_k)``
        with and without the smoothing folded into the fields).
    """
    if keypoints is None:
        keypoints = model.detect(image, n_keypoints=n_keypoints)
    result = model.run_library(image, keypoints)
    kept = result.keypoints
    out = {"descriptor": model.name, "keypoints": len(kept), "bits": int(result.bits.size)}
    if len(kept) == 0:
        return {**out, "exact": float("nan"), "linear": float("nan"), "linear_sampled": float("nan")}
    out["exact"] = float(np.mean(model.model_bits(image, kept) == result.bits))
    out["linear"] = float(np.mean(model.linear_bits(image, kept) == result.bits))
    out["linear_sampled"] = float(np.mean(model.linear_bits(image, kept, fold_smoothing=False) == result.bits))
    return out
