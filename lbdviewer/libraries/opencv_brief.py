"""Model of OpenCV contrib's BRIEF (``cv2.xfeatures2d.BriefDescriptorExtractor``).

Each bit compares two 9x9 box sums of the (unsmoothed) 8-bit image, read from
an integral image around the keypoint rounded as ``floor(x + 0.5)``:

.. math:: \\mathrm{bit}_k = [\\, S(c + q_k) > S(c + p_k) \\,],\\qquad
          S(u) = \\sum_{|d_x| \\le 4,\\ |d_y| \\le 4} I(u + d)

(OpenCV's test reads ``S(p) < S(q)``; our pair is ``(q, p)``, strict). Bits
are packed most significant first. Offsets lie within 24 pixels of the
keypoint; keypoints within 28 pixels of the border are dropped. The offset
table is recovered by calibration (:mod:`lbdviewer.libraries.calibration.cache`), not copied.
Only ``use_orientation=False`` (the default) is modelled.
"""

from __future__ import annotations

import numpy as np

from lbdviewer._validation import check_choice
from lbdviewer.libraries.calibration.cache import cache_key, cached_point_pairs
from lbdviewer.features.keypoints import Keypoints
from lbdviewer.libraries.base import (KeypointPattern, LibraryModel, compare_offsets, gray_uint8, opencv_describe,
                                      pair_pattern)

BOX_RADIUS = 4
REACH = 24
BYTES = (16, 32, 64)


def _cv2():
    import cv2

    return cv2


def smoothed_sums(image):
    """What OpenCV's BRIEF compares: the 9x9 box sum around every pixel of a uint8 image (reflect-101 outside), float64."""
    cv2 = _cv2()
    return cv2.boxFilter(np.asarray(image, dtype=np.float64), -1, (9, 9), normalize=False,
                         borderType=cv2.BORDER_REFLECT_101)


def _extractor(n_bytes):
    return _cv2().xfeatures2d.BriefDescriptorExtractor_create(n_bytes, False)


def brief_offset_pairs(*, n_bytes=32):
    """The box-centre offsets of each bit, calibrated against the installed OpenCV.

    Returns
    -------
    ndarray of int, shape (8 * n_bytes, 2, 2)
        ``out[k] = [[xq, yq], [xp, yp]]``: bit ``k`` (in unpacked
        most-significant-first order) is ``S(c + q) > S(c + p)``.
    """
    cv2 = _cv2()
    margin = REACH + BOX_RADIUS + 2

    def describe(image, centers):
        _, bits, index = opencv_describe(_extractor(n_bytes), image, Keypoints(centers[:, 0], centers[:, 1]),
                                         n_bits=8 * n_bytes, bitorder="big")
        if len(index) != len(centers):
            raise RuntimeError(f"BRIEF dropped {len(centers) - len(index)} calibration keypoints")
        return bits > 0

    key = cache_key("opencv-brief", cv2.__version__, ("bytes", n_bytes))
    return cached_point_pairs(key, describe, smoothed_sums, margin=margin, radius=REACH, n_images=2, size=200,
                              step=2, rng=1, candidates=16)


class Model(LibraryModel):
    """OpenCV contrib BRIEF with ``n_bytes`` of 16, 32 or 64.

    Examples
    --------
    >>> Model(n_bytes=64).n_bits
    512
    """

    name = "opencv-brief"
    bitorder = "big"
    tie_positive = False

    def __init__(self, *, n_bytes=32):
        check_choice("n_bytes", n_bytes, BYTES)
        self.n_bytes = int(n_bytes)
        self.n_bits = 8 * self.n_bytes
        self._pairs = None

    def params(self):
        """Parameters as a JSON-ready dict."""
        return {"n_bytes": self.n_bytes}

    @staticmethod
    def library_version():
        return f"opencv-contrib {_cv2().__version__}"

    @property
    def offset_pairs(self):
        """Calibrated table, see :func:`brief_offset_pairs`."""
        if self._pairs is None:
            self._pairs = brief_offset_pairs(n_bytes=self.n_bytes)
        return self._pairs

    def _run_library(self, image, keypoints):
        _, bits, index = opencv_describe(_extractor(self.n_bytes), image, keypoints, n_bits=self.n_bits,
                                         bitorder=self.bitorder)
        return keypoints.take(index), bits, index

    @staticmethod
    def _centers(keypoints):
        cx = np.floor(keypoints.x.astype(np.float32).astype(np.float64) + 0.5).astype(np.int64)
        cy = np.floor(keypoints.y.astype(np.float32).astype(np.float64) + 0.5).astype(np.int64)
        return cx, cy

    def source_images(self, image):
        """The gray image in ``[0, 1]`` (fields are the 9x9 boxes)."""
        return [gray_uint8(image) / 255.0]

    def sampled_images(self, image):
        """9x9 box means of the image (what BRIEF compares, up to the factor 81)."""
        return [smoothed_sums(gray_uint8(image)) / (81 * 255.0)]

    def model_bits(self, image, keypoints):
        """BRIEF's bits recomputed with our code: ``{-1, +1}``, shape (K, n_bits)."""
        return compare_offsets(smoothed_sums(gray_uint8(image)), *self._centers(keypoints), self.offset_pairs)

    def keypoint_patterns(self, keypoints, *, fold_smoothing=True):
        """Each keypoint's pattern: 9x9 box fields (or single pixels of the box-mean image)."""
        radius = BOX_RADIUS if fold_smoothing else 0
        half = REACH + radius
        pattern = pair_pattern("opencv-brief", self.offset_pairs, half, sigma=max(radius, 1.0), radius=radius,
                               kernel="box", params=self.params())
        cx, cy = self._centers(keypoints)
        return [KeypointPattern(pattern, 0, (int(y) - half, int(x) - half), 1.0) for x, y in zip(cx, cy)]
