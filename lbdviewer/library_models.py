"""Run a real library and our model of it on the same keypoints.

Each model in :mod:`lbdviewer.patterns` (``orb``, ``opencv_brief``,
``opencv_freak``, ``skimage_brief``) is a :class:`LibraryModel`:

* :meth:`~LibraryModel.run_library` calls the installed library;
* :meth:`~LibraryModel.model_bits` recomputes its bits with our own code,
  reproducing the library's integer arithmetic;
* :meth:`~LibraryModel.keypoint_patterns` gives, for every keypoint, a
  :class:`~lbdviewer.patterns.base.Pattern` in the coordinates of a patch of
  one of the model's images, so that ``bits == sign(L_k patch_k)`` with our
  :class:`~lbdviewer.operators.DescriptorOperator` semantics.

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

import importlib
from dataclasses import dataclass

import numpy as np

from lbdviewer.features import Keypoints
from lbdviewer.operators import DescriptorOperator, sign_with_ties
from lbdviewer.patterns.base import Pattern

MODEL_MODULES = {
    "orb": "lbdviewer.patterns.orb",
    "opencv-brief": "lbdviewer.patterns.opencv_brief",
    "opencv-freak": "lbdviewer.patterns.opencv_freak",
    "skimage-brief": "lbdviewer.patterns.skimage_brief",
}


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


def to_uint8(image):
    """The 8-bit image OpenCV sees for a float image in ``[0, 1]``.

    Examples
    --------
    >>> to_uint8(np.array([[0.0, 0.5, 1.0]])).tolist()
    [[0, 128, 255]]
    """
    image = np.asarray(image)
    if image.ndim != 2:
        raise ValueError(f"image must be a 2-D gray image, got shape {image.shape}")
    if image.dtype == np.uint8:
        return image
    return np.rint(np.clip(image, 0.0, 1.0) * 255.0).astype(np.uint8)


def extract_patches(images, keypoint_patterns):
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
    >>> extract_patches([np.arange(9.0).reshape(3, 3)], [KeypointPattern(p, 0, (-1, -1), 1.0)])[0, 0].tolist()
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
        patches = extract_patches(images, patterns)
        out = np.empty((len(patterns), self.n_bits), dtype=np.int8)
        for k, (kp, patch) in enumerate(zip(patterns, patches)):
            values = DescriptorOperator(kp.pattern, dtype=np.float64).describe(patch, binary=False)
            out[k] = sign_with_ties(values, tie_positive=self.tie_positive, atol=1e-9)
        return out

    def detect(self, image, *, n_keypoints=500):
        """Keypoints found by OpenCV's ORB detector (FAST + Harris, 8 levels)."""
        import cv2

        detector = cv2.ORB_create(nfeatures=int(n_keypoints))
        return Keypoints.from_cv(detector.detect(to_uint8(image), None))


def get_model(name, **params):
    """The library model called ``name`` with its parameters.

    Parameters
    ----------
    name : {"orb", "opencv-brief", "opencv-freak", "skimage-brief"}
    **params
        Keyword parameters of that model.

    Examples
    --------
    >>> get_model("opencv-brief", n_bytes=16).n_bits
    128
    """
    if name not in MODEL_MODULES:
        raise ValueError(f"descriptor must be one of {tuple(MODEL_MODULES)}, got {name!r}")
    return importlib.import_module(MODEL_MODULES[name]).Model(**params)


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
