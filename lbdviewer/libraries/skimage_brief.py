"""Model of scikit-image's BRIEF (``skimage.feature.BRIEF``).

scikit-image smooths the float image with a Gaussian (``sigma``, mode
``'reflect'``), truncates each keypoint ``(row, col)`` to integers and sets bit
``k`` when ``J(c + p_k) < J(c + q_k)`` for offsets drawn from ``rng``:

.. math:: \\mathrm{bit}_k = [\\, J(c + q_k) > J(c + p_k) \\,]

The offsets depend on the library's random generator, so they are recovered by
calibration (:mod:`lbdviewer.libraries.calibration.cache`) for each parameter set, cached per
scikit-image version. Our packed bits are least significant first.
"""

from __future__ import annotations

import numpy as np

from lbdviewer._validation import check_choice
from lbdviewer.libraries.calibration.cache import cache_key, cached_point_pairs
from lbdviewer.libraries.base import KeypointPattern, LibraryModel, compare_offsets, pair_pattern

MODES = ("normal", "uniform")


def smooth(image, sigma):
    """The Gaussian smoothing scikit-image's BRIEF applies."""
    from skimage.filters import gaussian

    return gaussian(np.asarray(image, dtype=np.float64), sigma=sigma, mode="reflect")


def _extractor(params):
    from skimage.feature import BRIEF

    return BRIEF(descriptor_size=params["descriptor_size"], patch_size=params["patch_size"],
                 mode=params["mode"], sigma=params["sigma"], rng=params["rng"])


def skimage_offset_pairs(params):
    """Offsets of each bit, calibrated against the installed scikit-image.

    Returns
    -------
    ndarray of int, shape (descriptor_size, 2, 2)
        ``out[k] = [[xq, yq], [xp, yp]]``: bit ``k`` is ``J(c + q) > J(c + p)``.
    """
    import skimage

    reach = params["patch_size"] // 2 + 1

    def describe(image, centers):
        extractor = _extractor(params)
        extractor.extract(image / 255.0, centers[:, ::-1])
        if not np.all(extractor.mask):
            raise RuntimeError("scikit-image BRIEF dropped calibration keypoints")
        return extractor.descriptors

    def smoothed(image):
        return smooth(image / 255.0, params["sigma"])

    key = cache_key("skimage-brief", skimage.__version__, *sorted(params.items()))
    return cached_point_pairs(key, describe, smoothed, margin=reach + 2, radius=reach, n_images=2, size=160,
                              step=2, rng=2)


class Model(LibraryModel):
    """scikit-image BRIEF with its constructor's parameters (``rng`` must be an int).

    Examples
    --------
    >>> Model(descriptor_size=128).n_bits
    128
    """

    name = "skimage-brief"
    bitorder = "little"
    tie_positive = False

    def __init__(self, *, descriptor_size=256, patch_size=49, mode="normal", sigma=1.0, rng=1):
        if int(descriptor_size) != descriptor_size or descriptor_size < 1:
            raise ValueError(f"descriptor_size must be a positive integer, got {descriptor_size!r}")
        if int(patch_size) != patch_size or not 5 <= patch_size <= 101:
            raise ValueError(f"patch_size must be an integer from 5 to 101, got {patch_size!r}")
        check_choice("mode", mode, MODES)
        if not sigma > 0:
            raise ValueError(f"sigma must be positive, got {sigma!r}")
        if isinstance(rng, bool) or not isinstance(rng, (int, np.integer)):
            raise ValueError(f"rng must be an int seed (the pattern is cached by it), got {rng!r}")
        self._params = {"descriptor_size": int(descriptor_size), "patch_size": int(patch_size),
                        "mode": mode, "sigma": float(sigma), "rng": int(rng)}
        self.n_bits = int(descriptor_size)
        self._pairs = None

    def params(self):
        """Parameters as a JSON-ready dict."""
        return dict(self._params)

    @staticmethod
    def library_version():
        import skimage

        return f"scikit-image {skimage.__version__}"

    @property
    def offset_pairs(self):
        """Calibrated table, see :func:`skimage_offset_pairs`."""
        if self._pairs is None:
            self._pairs = skimage_offset_pairs(self._params)
        return self._pairs

    def _run_library(self, image, keypoints):
        extractor = _extractor(self._params)
        extractor.extract(np.asarray(image, dtype=np.float64), np.stack([keypoints.y, keypoints.x], axis=1))
        index = np.flatnonzero(extractor.mask)
        bits = extractor.descriptors.astype(np.int8) * 2 - 1
        return keypoints.take(index), bits, index

    def detect(self, image, *, n_keypoints=500):
        """Keypoints of ORB's detector, kept away from the border by ``patch_size``."""
        keypoints = super().detect(image, n_keypoints=n_keypoints)
        reach = self._params["patch_size"] // 2 + 1
        height, width = np.shape(image)
        inside = ((keypoints.x >= reach) & (keypoints.y >= reach)
                  & (keypoints.x < width - reach) & (keypoints.y < height - reach))
        return keypoints.take(inside)

    @staticmethod
    def _centers(keypoints):
        return keypoints.x.astype(np.int64), keypoints.y.astype(np.int64)

    def source_images(self, image):
        """The float image (fields carry the Gaussian)."""
        return [np.asarray(image, dtype=np.float64)]

    def sampled_images(self, image):
        """The Gaussian-smoothed image BRIEF compares."""
        return [smooth(image, self._params["sigma"])]

    def model_bits(self, image, keypoints):
        """BRIEF's bits recomputed with our code: ``{-1, +1}``, shape (K, n_bits)."""
        values = smooth(image, self._params["sigma"])
        return compare_offsets(values, *self._centers(keypoints), self.offset_pairs)

    def keypoint_patterns(self, keypoints, *, fold_smoothing=True):
        """Each keypoint's pattern: Gaussian fields (radius 4 sigma) or single smoothed pixels."""
        sigma = self._params["sigma"]
        radius = float(np.ceil(4.0 * sigma)) if fold_smoothing else 0.0
        half = int(np.abs(self.offset_pairs).max()) + int(radius)
        pattern = pair_pattern("skimage-brief", self.offset_pairs, half, sigma=sigma, radius=radius,
                               kernel="gaussian", params=self.params())
        cx, cy = self._centers(keypoints)
        return [KeypointPattern(pattern, 0, (int(y) - half, int(x) - half), 1.0) for x, y in zip(cx, cy)]
