"""Models of OpenCV contrib's BEBLID and TEBLID (``cv2.xfeatures2d.BEBLID_create``, ``TEBLID_create``).

Both describe a keypoint by boosted *average-box weak learners* learned in a
``32 x 32`` normalised patch: bit ``k`` compares the mean grey levels of two
square boxes of half-width ``r_k`` centred at ``p_k`` and ``q_k`` against a
learned threshold ``theta_k`` (an integer for BEBLID, a real number for
TEBLID):

.. math:: \\mathrm{bit}_k = [\\, \\bar I(B_{p_k}) - \\bar I(B_{q_k}) \\le \\theta_k \\,].

The patch is mapped onto the image by the keypoint: scale
``s = scale_factor * size / 32``, rotation by ``angle`` (none when ``-1``), and
every box centre and half-width is rounded (``(int)(v + 0.5f)``, float32).
Inside the image the library compares integer box sums, ``S_p - S_q <= theta
(2 r + 1)^2``; keypoints within ``28 s`` pixels of the border instead clip the
boxes to the image and compare float means. Bits are packed most significant
first; no keypoint is dropped.

In lbdviewer's convention a bit is ``+1`` when ``L x - t >= 0`` with ``L x =
mean(B_q) - mean(B_p)`` (fields ``(q, p)``) and ``t = -theta / 255`` on images
in ``[0, 1]``: a *thresholded* test, ``Pattern.thresholds``. The boxes and
thresholds are not copied from OpenCV: :func:`weak_learners` recovers them by
calibration against the installed library (:mod:`lbdviewer.libraries.calibration.box_tests`),
cached per OpenCV version.
"""

from __future__ import annotations

import numpy as np

from lbdviewer.libraries.calibration.box_tests import box_sums, integral_image, locate_box_tests
from lbdviewer.libraries.calibration.thresholds import threshold_intervals
from lbdviewer.libraries.calibration.cache import cache_key, cached_arrays
from lbdviewer.features.keypoints import Keypoints
from lbdviewer.libraries.base import KeypointPattern, LibraryModel, gray_uint8, opencv_describe
from lbdviewer.patterns.base import Pattern

PATCH = 32
HALF = PATCH // 2
BORDER_RATIO = 1.75
#: Scales at which thresholds are bisected: the largest fixes ``theta`` to ~1/(8 r + 1)^2.
PROBE_SCALES = (1, 4)
#: Scale at which thresholds of half-width-1 boxes are bisected again: ``theta`` to 1/289 (see ``threshold_intervals``).
FINE_SCALE = 8
SIZES = (256, 512)
#: Part of the cache key: bumped whenever calibration changes the tables it recovers.
CALIBRATION_VERSION = "v2"
FLAVOURS = ("beblid", "teblid")


def _cv2():
    import cv2

    return cv2


def _create(flavour, scale_factor, n_bits):
    xf = _cv2().xfeatures2d
    if flavour == "beblid":
        return xf.BEBLID_create(float(scale_factor), xf.BEBLID_SIZE_512_BITS if n_bits == 512 else
                                xf.BEBLID_SIZE_256_BITS)
    return xf.TEBLID_create(float(scale_factor), xf.TEBLID_SIZE_512_BITS if n_bits == 512 else
                            xf.TEBLID_SIZE_256_BITS)


def simplest_in(low, high):
    """The number with the fewest decimals in ``[low, high)`` (the midpoint if none has up to 6).

    Learned thresholds are stored rounded; of all values consistent with the
    library, the shortest decimal is the one it most likely holds.

    Examples
    --------
    >>> simplest_in(np.array([2.96, -0.51]), np.array([3.02, -0.49])).tolist()
    [3.0, -0.5]
    """
    low, high = np.asarray(low, dtype=np.float64), np.asarray(high, dtype=np.float64)
    out = (low + high) / 2
    done = np.zeros(out.shape, dtype=bool)
    for decimals in range(7):
        unit = 10.0 ** -decimals
        candidate = np.ceil(low / unit - 1e-9) * unit
        fits = ~done & (candidate >= low - 1e-12) & (candidate < high - 1e-12)
        out[fits] = np.round(candidate[fits], decimals)
        done |= fits
    return out


def weak_learners(flavour, n_bits):
    """Boxes and thresholds of BEBLID or TEBLID, calibrated against the installed OpenCV.

    Parameters
    ----------
    flavour : {"beblid", "teblid"}
    n_bits : {256, 512}

    Returns
    -------
    boxes : ndarray of int64, shape (n_bits, 5)
        ``(u1, v1, u2, v2, r)`` in the normalised 32 x 32 patch.
    thresholds : ndarray of float64, shape (n_bits,)
        ``theta_k`` in grey levels: bit ``k`` is set when
        ``mean(B1) - mean(B2) <= theta_k``.
    """
    cv2 = _cv2()

    def describe_at(scale):
        extractor = _create(flavour, 1.0, n_bits)

        def describe(image, centers):
            kps = Keypoints(centers[:, 0], centers[:, 1], np.full(len(centers), float(PATCH * scale)))
            _, bits, index = opencv_describe(extractor, image, kps, n_bits=n_bits, bitorder="big")
            if len(index) != len(centers):
                raise RuntimeError(f"{flavour} dropped {len(centers) - len(index)} calibration keypoints")
            return bits > 0
        return describe

    def compute():
        boxes, bounds, errors = locate_box_tests(describe_at(1), half=HALF)
        theta_low, theta_high = threshold_intervals(describe_at, boxes, bounds, scales=PROBE_SCALES,
                                                    fine_scale=FINE_SCALE, half=HALF)
        return {"boxes": boxes, "thresholds": simplest_in(theta_low, theta_high),
                "theta_low": theta_low, "theta_high": theta_high, "calibration_errors": errors}

    key = cache_key(flavour, cv2.__version__, ("bits", n_bits), CALIBRATION_VERSION)
    table = cached_arrays(key, compute, probe=_probe(flavour, n_bits, describe_at(1)))
    return table["boxes"].astype(np.int64), table["thresholds"].astype(np.float64)


def _probe(flavour, n_bits, describe, *, size=100, step=7, rng=20261126):
    """The probe of a weak-learner table (see the calibration cache): the library's bits and the table's.

    Both describe a fixed noise image at a grid of keypoints of size 32 (clear of the border band where
    the library clips its boxes); the table predicts with :meth:`Model.model_bits`.
    """
    image = np.random.default_rng(rng).integers(0, 256, (size, size), dtype=np.uint8)
    grid = np.arange(HALF + 14, size - HALF - 14, step)
    xs, ys = (g.ravel() for g in np.meshgrid(grid, grid))
    centers = np.stack([xs, ys], axis=1)

    def probe(arrays):
        model = (Model if flavour == "beblid" else TeblidModel)(n_bits=n_bits)
        model._table = (np.asarray(arrays["boxes"], dtype=np.int64), np.asarray(arrays["thresholds"], np.float64))
        keypoints = Keypoints(xs.astype(np.float64), ys.astype(np.float64), np.full(len(xs), float(PATCH)))
        return describe(image, centers), model.model_bits(image, keypoints) > 0

    return probe


class Model(LibraryModel):
    """OpenCV contrib BEBLID.

    Parameters
    ----------
    scale_factor : float
        ``scale_factor`` of ``BEBLID_create``: 1.0 for ORB keypoints (the
        default here), 6.25 for KAZE/SURF, 6.75 for SIFT, 5 for AKAZE/BRISK/FAST.
    n_bits : {256, 512}

    Examples
    --------
    >>> Model(n_bits=256).n_bits
    256
    """

    name = "beblid"
    flavour = "beblid"
    bitorder = "big"
    tie_positive = True

    def __init__(self, *, scale_factor=1.0, n_bits=512):
        if n_bits not in SIZES:
            raise ValueError(f"n_bits must be one of {SIZES}, got {n_bits!r}")
        if not 0 < scale_factor < 1000:
            raise ValueError(f"scale_factor must be positive, got {scale_factor!r}")
        self.scale_factor = float(scale_factor)
        self.n_bits = int(n_bits)
        self._table = None

    def params(self):
        """Parameters as a JSON-ready dict."""
        return {"scale_factor": self.scale_factor, "n_bits": self.n_bits}

    @staticmethod
    def library_version():
        return f"opencv-contrib {_cv2().__version__}"

    @property
    def table(self):
        """``(boxes, thresholds)`` from :func:`weak_learners`."""
        if self._table is None:
            self._table = weak_learners(self.flavour, self.n_bits)
        return self._table

    def _run_library(self, image, keypoints):
        kept, bits, index = opencv_describe(_create(self.flavour, self.scale_factor, self.n_bits), image, keypoints,
                                            n_bits=self.n_bits, bitorder=self.bitorder)
        return keypoints.take(index), bits, index

    # -- geometry -------------------------------------------------------------
    def _scales(self, keypoints):
        f32 = np.float32
        return f32(self.scale_factor) * keypoints.size.astype(f32) / f32(PATCH)

    def image_boxes(self, keypoints):
        """Box centres and half-widths in the image, as the library rounds them.

        Returns
        -------
        ndarray of int64, shape (K, n_bits, 5)
            ``(x1, y1, x2, y2, r)`` per keypoint and bit.
        """
        f32 = np.float32
        boxes = self.table[0]
        s = self._scales(keypoints)[:, None]
        angle = keypoints.angle.astype(f32)
        rad = angle.astype(np.float64) * 0.017453292519943295
        upright = angle == f32(-1)
        cosine = np.where((angle >= 0) & ~upright, np.cos(rad).astype(f32), f32(1))[:, None]
        sine = np.where((angle >= 0) & ~upright, np.sin(rad).astype(f32), f32(0))[:, None]
        x = keypoints.x.astype(f32)[:, None]
        y = keypoints.y.astype(f32)[:, None]
        m00, m01, m10, m11 = s * cosine, -s * sine, s * sine, s * cosine
        width = f32(PATCH)
        m02 = ((-s * cosine + s * sine) * width) * f32(0.5) + x
        m12 = ((-s * sine - s * cosine) * width) * f32(0.5) + y
        upright_m02 = (f32(-0.5) * s) * width + x
        upright_m12 = ((-s) * f32(0.5)) * width + y
        m02 = np.where(upright[:, None], upright_m02, m02)
        m12 = np.where(upright[:, None], upright_m12, m12)
        u1, v1, u2, v2, r = (boxes[:, i].astype(f32)[None, :] for i in range(5))
        half = f32(0.5)
        out = np.empty((len(keypoints), len(boxes), 5), dtype=np.int64)
        out[..., 0] = np.trunc(m00 * u1 + m01 * v1 + m02 + half)
        out[..., 1] = np.trunc(m10 * u1 + m11 * v1 + m12 + half)
        out[..., 2] = np.trunc(m00 * u2 + m01 * v2 + m02 + half)
        out[..., 3] = np.trunc(m10 * u2 + m11 * v2 + m12 + half)
        out[..., 4] = np.trunc(s * r + half)
        return out

    def near_border(self, keypoints, shape):
        """Keypoints the library treats with clipped boxes and float means."""
        f32 = np.float32
        s = f32(self.scale_factor) * keypoints.size.astype(f32) / f32(2 * PATCH)
        border = (f32(PATCH) * s) * f32(BORDER_RATIO)
        x, y = keypoints.x.astype(f32), keypoints.y.astype(f32)
        height, width = shape
        return (x < border) | (x + border >= width) | (y < border) | (y + border >= height)

    # -- bits -------------------------------------------------------------
    def model_bits(self, image, keypoints):
        """The library's bits recomputed with our code: ``{-1, +1}``, (K, n_bits)."""
        image = gray_uint8(image)
        integral = integral_image(image)
        height, width = image.shape
        theta = self.table[1].astype(np.float32)
        boxes = self.image_boxes(keypoints)
        x1, y1, x2, y2, r = (boxes[..., i] for i in range(5))
        border = self.near_border(keypoints, image.shape)
        out = np.empty((len(keypoints), self.n_bits), dtype=np.int8)
        inner = ~border
        if np.any(inner):
            pad = int(np.abs(boxes[inner]).max()) + 2
            padded = np.pad(integral, pad, mode="edge")  # the library would read outside; never used here
            diff = (box_sums(padded, x1[inner] + pad, y1[inner] + pad, r[inner])
                    - box_sums(padded, x2[inner] + pad, y2[inner] + pad, r[inner]))
            side = (2 * r[inner] + 1).astype(np.float32)
            out[inner] = np.where(diff.astype(np.float64) <= (theta * (side * side)).astype(np.float64), 1, -1)
        if np.any(border):
            means = [self._clipped_mean(integral, x[border], y[border], r[border], width, height)
                     for x, y in ((x1, y1), (x2, y2))]
            out[border] = np.where(means[0] - means[1] <= theta, 1, -1)
        return out

    @staticmethod
    def _clipped_mean(integral, x, y, r, width, height):
        """Float32 mean of each box clipped to the image as the library clips it."""
        def clip(low, high, size):
            low = np.where(low < 0, 0, np.where(low >= size, size - 1, low))
            high = np.where(high <= 0, 1, np.where(high >= size + 1, size, high))
            return low, high
        x0, x1 = clip(x - r, x + r + 1, width)
        y0, y1 = clip(y - r, y + r + 1, height)
        total = integral[y1, x1] - integral[y0, x1] - integral[y1, x0] + integral[y0, x0]
        area = (y1 - y0) * (x1 - x0)
        return total.astype(np.float32) / area.astype(np.float32)

    def source_images(self, image):
        """The gray image in ``[0, 1]`` (BEBLID does not smooth)."""
        return [gray_uint8(image) / 255.0]

    sampled_images = source_images

    def keypoint_patterns(self, keypoints, *, fold_smoothing=True):
        """Each keypoint's boxes and thresholds, in patches of one size centred on their rounded positions.

        Field ``2 k`` is box ``q_k``, field ``2 k + 1`` box ``p_k``; pair ``k``
        is ``(2 k, 2 k + 1)`` with threshold ``-theta_k / 255``. BEBLID does
        not smooth, so ``fold_smoothing`` changes nothing.
        """
        if len(keypoints) == 0:
            return []
        boxes = self.image_boxes(keypoints)
        thresholds = -self.table[1] / 255.0
        cx = np.floor(keypoints.x.astype(np.float64) + 0.5).astype(np.int64)
        cy = np.floor(keypoints.y.astype(np.float64) + 0.5).astype(np.int64)
        pairs = np.arange(2 * self.n_bits).reshape(-1, 2)
        params = tuple(self.params().items())
        centers = np.stack([boxes[..., [2, 0]].reshape(len(keypoints), -1),
                            boxes[..., [3, 1]].reshape(len(keypoints), -1)], axis=-1).astype(np.float64)
        radii = np.repeat(boxes[..., 4], 2, axis=1).astype(np.float64)
        centers -= np.stack([cx, cy], axis=1)[:, None, :]
        reach = int(np.max(np.abs(centers) + radii[..., None])) + 1  # one patch size for all keypoints
        out = []
        for k in range(len(keypoints)):
            pattern = Pattern(self.name, 2 * reach + 1, centers[k] + reach, np.maximum(radii[k], 0.5), radii[k],
                              pairs, kernel="box", tie_positive=True, params=params, thresholds=thresholds)
            out.append(KeypointPattern(pattern, 0, (int(cy[k]) - reach, int(cx[k]) - reach), 1.0))
        return out


class TeblidModel(Model):
    """OpenCV contrib TEBLID: BEBLID's computation with TEBLID's learned boxes and real thresholds.

    Examples
    --------
    >>> TeblidModel().name
    'teblid'
    """

    name = "teblid"
    flavour = "teblid"
