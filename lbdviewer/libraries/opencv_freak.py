"""Model of OpenCV contrib's FREAK (``cv2.xfeatures2d.FREAK_create``).

FREAK reads 43 receptive fields on 8 rings (6 points on each of 7 rings, odd
rings turned by ``pi/6``, plus the centre). With ``R = 2/3``, ``r = 2/24`` and
``u = (R - r)/21`` the ring radii are ``R, R-6u, R-11u, R-15u, R-18u, R-20u, r,
0`` and each field's half-width is half its ring radius (``r/2`` at the
centre), all times ``pattern_scale * 2^(j / 16)`` pixels, where the scale
index ``j = round(16 log2(size / 7))`` (64 scales over 4 octaves) comes from
the keypoint size. The pattern is turned by the keypoint angle quantised to 256
steps. A field's value is the rounded integer mean of a box read from the
integral image (box bounds rounded half to even, float32 arithmetic), and

.. math:: \\mathrm{bit}_k = [\\, \\bar I_{a_k} \\ge \\bar I_{b_k} \\,]

for 512 ordered pairs ``(a_k, b_k)`` in the library's output order; packed
least significant first. The pairs and their order are recovered by
calibration against the installed library (:mod:`lbdviewer.libraries.calibration.cache`).

Because the library rounds each mean to an integer, ``sign(L_k patch_k)``
(real means) can differ from the library where two means are within 1/2 grey
level; :meth:`Model.model_bits` reproduces the rounding exactly.
"""

from __future__ import annotations

import numpy as np

from lbdviewer.libraries.calibration.cache import cache_key, cached_arrays, identify_pairs
from lbdviewer.features.keypoints import Keypoints
from lbdviewer.libraries.base import KeypointPattern, LibraryModel, gray_uint8, opencv_describe
from lbdviewer.patterns.base import Pattern

N_FIELDS = 43
N_BITS = 512
N_SCALES = 64
N_ORIENTATIONS = 256
SMALLEST_SIZE = 7.0
RING_COUNTS = (6, 6, 6, 6, 6, 6, 6, 1)


def _cv2():
    import cv2

    return cv2


def ring_geometry():
    """Unit radius and half-width of each of the 43 fields, and its angle offset.

    Examples
    --------
    >>> radius, half_width, angle = ring_geometry()
    >>> radius.shape, round(float(radius[0]), 4), float(radius[-1])
    ((43,), 0.6667, 0.0)
    """
    big, small = 2.0 / 3.0, 2.0 / 24.0
    unit = (big - small) / 21.0
    radii = [big, big - 6 * unit, big - 11 * unit, big - 15 * unit, big - 18 * unit, big - 20 * unit, small, 0.0]
    widths = [r / 2.0 for r in radii[:7]] + [small / 2.0]
    radius, half_width, angle = [], [], []
    for ring, count in enumerate(RING_COUNTS):
        for k in range(count):
            radius.append(radii[ring])
            half_width.append(widths[ring])
            angle.append(k * 2.0 * np.pi / count + np.pi / count * (ring % 2))
    return np.array(radius), np.array(half_width), np.array(angle)


class Model(LibraryModel):
    """OpenCV contrib FREAK.

    Parameters
    ----------
    orientation_normalized, scale_normalized : bool
        As ``FREAK_create``; only ``scale_normalized=True`` is modelled.
    pattern_scale : float
        ``patternScale`` (22).
    n_octaves : int
        ``nOctaves`` (4).

    Examples
    --------
    >>> Model().scale_index(Keypoints([50.0], [50.0], [14.0])).tolist()
    [16]
    """

    name = "opencv-freak"
    bitorder = "little"
    tie_positive = True
    n_bits = N_BITS

    def __init__(self, *, orientation_normalized=True, scale_normalized=True, pattern_scale=22.0, n_octaves=4):
        if not scale_normalized:
            raise ValueError("scale_normalized=False is not modelled; use scale_normalized=True")
        if not pattern_scale > 0:
            raise ValueError(f"pattern_scale must be positive, got {pattern_scale!r}")
        if int(n_octaves) != n_octaves or n_octaves < 1:
            raise ValueError(f"n_octaves must be a positive integer, got {n_octaves!r}")
        self.orientation_normalized = bool(orientation_normalized)
        self.pattern_scale = float(pattern_scale)
        self.n_octaves = int(n_octaves)
        self._pairs = None

    def params(self):
        """Parameters as a JSON-ready dict."""
        return {"orientation_normalized": self.orientation_normalized, "scale_normalized": True,
                "pattern_scale": self.pattern_scale, "n_octaves": self.n_octaves}

    @staticmethod
    def library_version():
        return f"opencv-contrib {_cv2().__version__}"

    def _create(self, orientation_normalized=None):
        orient = self.orientation_normalized if orientation_normalized is None else orientation_normalized
        return _cv2().xfeatures2d.FREAK_create(orient, True, self.pattern_scale, self.n_octaves)

    # -- geometry ---------------------------------------------------------
    def scale_index(self, keypoints):
        """FREAK's scale index of each keypoint, ``round(64 / n_octaves * log2(size / 7))``."""
        factor = N_SCALES / (np.log(2.0) * self.n_octaves)
        ratio = keypoints.size.astype(np.float32) / np.float32(SMALLEST_SIZE)
        index = np.trunc(np.log(ratio.astype(np.float64)) * factor + 0.5).astype(np.int64)
        return np.clip(index, 0, N_SCALES - 1)

    def orientation_index(self, keypoints):
        """The keypoint angle quantised to 256 steps (0 when not orientation-normalised)."""
        if not self.orientation_normalized:
            return np.zeros(len(keypoints), dtype=np.int64)
        turns = (np.float32(N_ORIENTATIONS) * keypoints.angle.astype(np.float32)).astype(np.float64) / 360.0
        index = np.trunc(np.where(turns < 0, turns - 0.5, turns + 0.5)).astype(np.int64)
        return np.mod(index, N_ORIENTATIONS)

    def _scaling(self, scale_index):
        return (2.0 ** (self.n_octaves / N_SCALES)) ** np.asarray(scale_index, dtype=np.float64)

    def pattern_reach(self, scale_index):
        """Half-size of the pattern at each scale index, as FREAK uses for its border test."""
        radius, half_width, _ = ring_geometry()
        scaling = self._scaling(scale_index)[..., None] * self.pattern_scale
        return (np.ceil((radius + half_width) * scaling).astype(np.int64) + 1).max(axis=-1)

    def field_boxes(self, keypoints):
        """Inclusive pixel bounds ``(x0, x1, y0, y1)`` of the 43 fields of each keypoint, (K, 43, 4)."""
        radius, half_width, angle = ring_geometry()
        scaling = self._scaling(self.scale_index(keypoints))[:, None] * self.pattern_scale
        theta = self.orientation_index(keypoints)[:, None] * 2.0 * np.pi / N_ORIENTATIONS
        px = (radius * np.cos(angle + theta) * scaling).astype(np.float32)
        py = (radius * np.sin(angle + theta) * scaling).astype(np.float32)
        sigma = (half_width * scaling).astype(np.float32)
        xf = px + keypoints.x.astype(np.float32)[:, None]
        yf = py + keypoints.y.astype(np.float32)[:, None]
        one = np.float32(1.0)
        x0, y0 = np.rint(xf - sigma), np.rint(yf - sigma)
        x1, y1 = np.rint(xf + sigma + one) - 1, np.rint(yf + sigma + one) - 1
        return np.stack([x0, x1, y0, y1], axis=-1).astype(np.int64)

    # -- calibration ------------------------------------------------------
    @property
    def pairs(self):
        """Calibrated ``(512, 2)`` field pairs in output bit order (``mean_a >= mean_b``)."""
        if self._pairs is None:
            key = cache_key("opencv-freak", _cv2().__version__, ("pattern_scale", self.pattern_scale),
                            ("n_octaves", self.n_octaves))
            self._pairs = cached_arrays(key, self._calibrate, probe=self._probe)["pairs"].astype(np.int64)
        return self._pairs

    def _samples(self, gen, step=6):
        """The library's bits and our field means on one random smooth image."""
        cv2 = _cv2()
        coarse = gen.integers(0, 256, (24, 24)).astype(np.float32)
        image = cv2.resize(coarse, (240, 240), interpolation=cv2.INTER_CUBIC)
        image = np.clip(image + gen.normal(0, 12, image.shape), 0, 255).astype(np.uint8)
        grid = np.arange(40, 200, step, dtype=np.float64)
        xs, ys = (g.ravel() for g in np.meshgrid(grid, grid))
        sizes = gen.uniform(7.0, 16.0, xs.shape)
        keypoints = Keypoints(xs + gen.uniform(0, 1, xs.shape), ys + gen.uniform(0, 1, xs.shape), sizes)
        kps, desc = self._create(False).compute(image, keypoints.to_cv())
        index = np.array([k.class_id for k in kps], dtype=np.int64)
        bits = np.unpackbits(desc, axis=1, bitorder="little").astype(bool)
        return bits, self._field_means(image, keypoints.take(index), orientation_normalized=False)

    def _calibrate(self):
        gen = np.random.default_rng(3)
        bits, values = zip(*(self._samples(gen) for _ in range(4)))
        return {"pairs": identify_pairs(np.concatenate(values), np.concatenate(bits), tie_positive=True)}

    def _probe(self, arrays):
        """Library bits on a fixed probe image and those ``arrays["pairs"]`` predict (see the calibration cache)."""
        bits, values = self._samples(np.random.default_rng(20261126), step=32)
        pairs = np.asarray(arrays["pairs"], dtype=np.int64)
        return bits, values[:, pairs[:, 0]] >= values[:, pairs[:, 1]]

    # -- bits ---------------------------------------------------------------
    def _field_means(self, image, keypoints, *, orientation_normalized=None):
        model = self
        if orientation_normalized is not None and orientation_normalized != self.orientation_normalized:
            model = Model(orientation_normalized=orientation_normalized, pattern_scale=self.pattern_scale,
                          n_octaves=self.n_octaves)
        integral = np.zeros((image.shape[0] + 1, image.shape[1] + 1), dtype=np.int64)
        integral[1:, 1:] = np.cumsum(np.cumsum(np.asarray(image, dtype=np.int64), axis=0), axis=1)
        boxes = model.field_boxes(keypoints)
        x0, x1, y0, y1 = (np.clip(boxes[..., i] + (i % 2), 0, s) for i, s in
                          enumerate((image.shape[1],) * 2 + (image.shape[0],) * 2))
        total = integral[y1, x1] - integral[y1, x0] - integral[y0, x1] + integral[y0, x0]
        area = (x1 - x0) * (y1 - y0)
        return (total + area // 2) // np.maximum(area, 1)

    def _run_library(self, image, keypoints):
        kept, bits, index = opencv_describe(self._create(), image, keypoints, n_bits=self.n_bits,
                                            bitorder=self.bitorder)
        return Keypoints.from_cv(kept), bits, index

    def model_bits(self, image, keypoints):
        """FREAK's bits recomputed with our code (rounded integer means): ``{-1, +1}``, (K, 512)."""
        means = self._field_means(gray_uint8(image), keypoints)
        return np.where(means[:, self.pairs[:, 0]] >= means[:, self.pairs[:, 1]], 1, -1).astype(np.int8)

    def source_images(self, image):
        """The gray image in ``[0, 1]``."""
        return [gray_uint8(image) / 255.0]

    sampled_images = source_images

    def keypoint_patterns(self, keypoints, *, fold_smoothing=True):
        """Each keypoint's 43 box fields (exact rectangles), in a patch centred on it.

        FREAK does not smooth, so ``fold_smoothing`` changes nothing. All
        patches share the size needed by the largest keypoint given.
        """
        if len(keypoints) == 0:
            return []
        boxes = self.field_boxes(keypoints).astype(np.float64)
        half = int(self.pattern_reach(self.scale_index(keypoints)).max()) + 1
        cx = np.floor(keypoints.x.astype(np.float64) + 0.5).astype(np.int64)
        cy = np.floor(keypoints.y.astype(np.float64) + 0.5).astype(np.int64)
        out = []
        for k in range(len(keypoints)):
            x0, x1, y0, y1 = boxes[k].T
            centers = np.stack([(x0 + x1) / 2 - cx[k] + half, (y0 + y1) / 2 - cy[k] + half], axis=1)
            radii = np.stack([(x1 - x0) / 2, (y1 - y0) / 2], axis=1)
            pattern = Pattern("opencv-freak", 2 * half + 1, centers, np.maximum(radii.max(axis=1), 0.5), radii,
                              self.pairs, kernel="box", tie_positive=True, params=tuple(self.params().items()))
            out.append(KeypointPattern(pattern, 0, (int(cy[k]) - half, int(cx[k]) - half), 1.0))
        return out
