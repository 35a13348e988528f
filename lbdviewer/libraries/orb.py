"""Model of OpenCV's ORB descriptor (``cv2.ORB_create``), bit for bit.

ORB compares 256 pairs of pixels of a Gaussian-smoothed pyramid level
(7x7 kernel, sigma 2, ``BORDER_REFLECT_101``). For a keypoint of level
``l = kp.octave`` at level-0 position ``(x, y)`` and angle ``theta``:

.. math::

    s_l = 1.2^l,\\quad c = \\mathrm{round}((x, y) / s_l),\\quad
    \\mathrm{bit}_k = [\\, I_l(c + \\mathrm{round}(R_\\theta q_k))
                      > I_l(c + \\mathrm{round}(R_\\theta p_k)) \\,]

where ``(p_k, q_k)`` is the library's point pair ``k`` (its bit reads
``I(p) < I(q)``, so our pair is ``(q, p)`` with a strict comparison),
``R_theta = [[cos, -sin], [sin, cos]]`` and rounding is half to even in float32
arithmetic, as in OpenCV. Bits are packed least significant first.

The point pairs are not copied from OpenCV: :func:`orb_point_pairs` recovers
them by calibration against the installed library (see
:mod:`lbdviewer.libraries.calibration.cache`), cached per OpenCV version.
"""

from __future__ import annotations

import numpy as np

from lbdviewer.libraries.calibration.cache import cache_key, cached_point_pairs
from lbdviewer.features.keypoints import Keypoints
from lbdviewer.libraries.base import (KeypointPattern, LibraryModel, compare_offsets, gray_uint8, opencv_describe,
                                      pair_pattern)

BLUR_SIGMA = 2.0
BLUR_RADIUS = 3


def _cv2():
    import cv2

    return cv2


def blur(image):
    """ORB's smoothing of a uint8 image, as float64 integer values.

    The 7x7 Gaussian of sigma 2 with ``BORDER_REFLECT_101``, computed exactly
    and rounded to the nearest integer: calibration shows this is what ORB
    compares (``cv2.GaussianBlur`` on uint8 uses a coarser fixed-point
    approximation and disagrees on about 1 % of the pixels).
    """
    cv2 = _cv2()
    exact = cv2.GaussianBlur(np.asarray(image, dtype=np.float64), (7, 7), BLUR_SIGMA, sigmaY=BLUR_SIGMA,
                             borderType=cv2.BORDER_REFLECT_101)
    return np.rint(exact)


def orb_point_pairs(*, patch_size=31):
    """ORB's point pairs, calibrated against the installed OpenCV.

    Parameters
    ----------
    patch_size : int
        ORB's ``patchSize`` (31 uses the learned table, others a random one).

    Returns
    -------
    ndarray of int, shape (256, 2, 2)
        ``out[k] = [[xq, yq], [xp, yp]]``: bit ``k`` is set iff the smoothed
        value at offset ``q`` exceeds the one at ``p``.
    """
    cv2 = _cv2()
    half = patch_size // 2
    margin = max(31, patch_size) + 2

    def describe(image, centers):
        orb = cv2.ORB_create(nlevels=1, edgeThreshold=margin - 2, patchSize=patch_size)
        kps = Keypoints(centers[:, 0], centers[:, 1], np.full(len(centers), float(patch_size)), np.zeros(len(centers)))
        _, bits, index = opencv_describe(orb, image, kps, n_bits=256, bitorder="little")
        if len(index) != len(centers):
            raise RuntimeError(f"ORB dropped {len(centers) - len(index)} calibration keypoints")
        return bits > 0

    key = cache_key("orb", cv2.__version__, ("patch_size", patch_size))
    return cached_point_pairs(key, describe, blur, margin=margin, radius=half + 1, n_images=2, rng=0)


def _round(values):
    return np.rint(values).astype(np.int64)


class Model(LibraryModel):
    """OpenCV ORB (``cv2.ORB_create``) with the given pyramid parameters.

    Parameters
    ----------
    n_levels : int
        ``nlevels`` (8).
    scale_factor : float
        ``scaleFactor`` (1.2).
    edge_threshold : int
        ``edgeThreshold`` (31).
    patch_size : int
        ``patchSize`` (31).

    Examples
    --------
    >>> Model().layer_scales()[:3].round(4).tolist()
    [1.0, 1.2, 1.44]
    """

    name = "orb"
    bitorder = "little"
    tie_positive = False
    n_bits = 256
    pyramid = "chained"

    def __init__(self, *, n_levels=8, scale_factor=1.2, edge_threshold=31, patch_size=31):
        if int(n_levels) != n_levels or not 1 <= n_levels <= 32:
            raise ValueError(f"n_levels must be an integer from 1 to 32, got {n_levels!r}")
        if not 1.0 < scale_factor <= 4.0:
            raise ValueError(f"scale_factor must be in (1, 4], got {scale_factor!r}")
        if int(patch_size) != patch_size or not 2 <= patch_size <= 127:
            raise ValueError(f"patch_size must be an integer from 2 to 127, got {patch_size!r}")
        self.n_levels = int(n_levels)
        self.scale_factor = float(scale_factor)
        self.edge_threshold = int(edge_threshold)
        self.patch_size = int(patch_size)
        self._pairs = None

    def params(self):
        """Parameters as a JSON-ready dict."""
        return {"n_levels": self.n_levels, "scale_factor": self.scale_factor,
                "edge_threshold": self.edge_threshold, "patch_size": self.patch_size}

    @staticmethod
    def library_version():
        return f"opencv {_cv2().__version__}"

    @property
    def point_pairs(self):
        """Calibrated ``(256, 2, 2)`` table, see :func:`orb_point_pairs`."""
        if self._pairs is None:
            self._pairs = orb_point_pairs(patch_size=self.patch_size)
        return self._pairs

    def layer_scales(self, n_levels=None):
        """``float32(scale_factor ** l)`` for each level, as OpenCV stores them."""
        levels = np.arange(self.n_levels if n_levels is None else n_levels)
        return np.float32(self.scale_factor) ** levels.astype(np.float64)

    def _create(self, n_keypoints=500):
        return _cv2().ORB_create(nfeatures=int(n_keypoints), scaleFactor=self.scale_factor, nlevels=self.n_levels,
                                 edgeThreshold=self.edge_threshold, patchSize=self.patch_size)

    def detect(self, image, *, n_keypoints=500):
        """Keypoints of ORB's own detector (level-0 coordinates, octave, angle)."""
        return Keypoints.from_cv(self._create(n_keypoints).detect(gray_uint8(image), None))

    def _run_library(self, image, keypoints):
        _, bits, index = opencv_describe(self._create(), image, keypoints, n_bits=self.n_bits,
                                         bitorder=self.bitorder)
        return keypoints.take(index), bits, index

    def levels(self, image):
        """The uint8 pyramid: each level resized from the previous one (``INTER_LINEAR_EXACT``)."""
        cv2 = _cv2()
        level = gray_uint8(image)
        out = [level]
        rows, cols = level.shape
        for scale in self.layer_scales()[1:]:
            size = (int(np.rint(np.float32(cols) / np.float32(scale))), int(np.rint(np.float32(rows) / np.float32(scale))))
            level = cv2.resize(level, size, interpolation=cv2.INTER_LINEAR_EXACT)
            out.append(level)
        return out

    def source_images(self, image):
        """Pyramid levels as floats in ``[0, 1]`` (fields carry the blur)."""
        return [level / 255.0 for level in self.levels(image)]

    def sampled_images(self, image):
        """Blurred pyramid levels as floats in ``[0, 1]`` (what ORB compares)."""
        cv2 = _cv2()
        out = []
        for level in self.levels(image):
            padded = cv2.copyMakeBorder(level, 8, 8, 8, 8, cv2.BORDER_REFLECT_101)
            out.append(blur(padded)[8:-8, 8:-8] / 255.0)
        return out

    def _geometry(self, keypoints):
        """Per keypoint: level, rounded centre (x, y) in the level, rotated rounded offsets (K, 512, 2)."""
        octave = keypoints.octave
        if np.any(octave >= self.n_levels):
            raise ValueError(f"keypoint octave must be below n_levels={self.n_levels}, got {octave.max()}")
        inv = np.float32(1.0) / self.layer_scales().astype(np.float32)[octave]
        cx = _round(keypoints.x.astype(np.float32) * inv)
        cy = _round(keypoints.y.astype(np.float32) * inv)
        theta = keypoints.angle.astype(np.float32) * np.float32(np.pi / 180.0)
        a, b = np.cos(theta).astype(np.float32), np.sin(theta).astype(np.float32)
        points = self.point_pairs.reshape(-1, 2).astype(np.float32)
        px, py = points[:, 0][None, :], points[:, 1][None, :]
        rx = _round(px * a[:, None] - py * b[:, None])
        ry = _round(px * b[:, None] + py * a[:, None])
        return octave, cx, cy, np.stack([rx, ry], axis=-1)

    def model_bits(self, image, keypoints):
        """ORB's bits recomputed with our code: ``{-1, +1}``, shape (K, 256)."""
        octave, cx, cy, offsets = self._geometry(keypoints)
        out = np.empty((len(keypoints), self.n_bits), dtype=np.int8)
        for level, values in enumerate(self.sampled_images(image)):
            here = octave == level
            if np.any(here):
                out[here] = compare_offsets(values, cx[here], cy[here], offsets[here].reshape(-1, self.n_bits, 2, 2))
        return out

    def patch_size_for(self, *, fold_smoothing=True):
        """Side of the patches of :meth:`keypoint_patterns` (odd, centred on the keypoint)."""
        reach = int(np.ceil(np.hypot(*self.point_pairs.reshape(-1, 2).T).max())) + 1
        return 2 * (reach + (BLUR_RADIUS if fold_smoothing else 0)) + 1

    def keypoint_patterns(self, keypoints, *, fold_smoothing=True):
        """Each keypoint's pattern in a patch of its pyramid level.

        With ``fold_smoothing`` the fields are ORB's 7x7 Gaussians (sigma 2,
        radius 3) on :meth:`source_images`; otherwise single pixels of
        :meth:`sampled_images`.
        """
        size = self.patch_size_for(fold_smoothing=fold_smoothing)
        half = (size - 1) // 2
        octave, cx, cy, offsets = self._geometry(keypoints)
        scales = self.layer_scales()
        sigma, radius = (BLUR_SIGMA, BLUR_RADIUS) if fold_smoothing else (1.0, 0.0)
        out = []
        for k in range(len(keypoints)):
            pattern = pair_pattern("orb", offsets[k].reshape(-1, 2, 2), half, sigma=sigma, radius=radius,
                                   kernel="gaussian", params=self.params())
            out.append(KeypointPattern(pattern, int(octave[k]), (int(cy[k]) - half, int(cx[k]) - half),
                                       float(scales[octave[k]])))
        return out
