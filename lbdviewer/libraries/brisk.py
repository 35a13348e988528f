"""Model of OpenCV contrib's BRISK descriptor (``cv2.xfeatures2d.BRISK_create``).

BRISK samples 60 points on 5 concentric rings holding 1, 10, 14, 15 and 20
points at radii ``0.85 * s * (0, 2.9, 4.9, 7.4, 10.8)`` pixels (``s`` the
pattern scale), point ``n`` of ring ``r`` at angle ``2 pi n / N_r``. Each
sample is smoothed over a square of half-width

.. math:: \\sigma_r = 1.3\\, c_j\\, \\rho_r \\sin(\\pi / N_r) \\quad (\\sigma_0 = 0.65\\, c_j),

which grows with the ring radius ``rho_r``; ``c_j = 30^{j / 64}`` is the
scale of the keypoint's scale index ``j = round(64 log_30(size / 7.2))``. The
"smoothed intensity" is not a Gaussian: it is the mean of the square
``[x - sigma, x + sigma] x [y - sigma, y + sigma]`` with fractional weights for
the border pixels, in fixed point (weights scaled by ``2^22 / area``, read
from an integral image, the sum rounded and divided by an integer). The
pattern is turned by the keypoint angle quantised to 1024 steps; the angle
itself is the direction of the sum of the long pairs' (distance above
``8.2 s``) intensity gradients, which BRISK always recomputes. Bit ``k`` is

.. math:: \\mathrm{bit}_k = [\\, \\bar I_{a_k} > \\bar I_{b_k} \\,]

for the 512 short pairs (distance below ``5.85 s``) in the library's output
order, packed least significant bit first. The pairs and their order are
recovered by calibration against the installed library
(:mod:`lbdviewer.libraries.calibration.cache`); the long pairs follow from the geometry.

Because the library rounds each smoothed value to an integer,
``sign(L_k patch_k)`` with box fields can differ from the library where two
values are within a grey level; :meth:`Model.model_bits` reproduces the
integer arithmetic exactly.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import math
import warnings

import numpy as np

from lbdviewer.libraries.calibration.cache import cache_key, cached_arrays, identify_pairs
from lbdviewer.features.keypoints import Keypoints
from lbdviewer.libraries.base import KeypointPattern, LibraryModel, gray_uint8, opencv_describe
from lbdviewer.patterns.base import Pattern

N_BITS = 512
N_SCALES = 64
N_ROTATIONS = 1024
SCALE_RANGE = 30.0
BASIC_SIZE = 12.0
RING_COUNTS = (1, 10, 14, 15, 20)
RING_RADII = (0.0, 2.9, 4.9, 7.4, 10.8)  # times 0.85 * pattern_scale
N_POINTS = sum(RING_COUNTS)
_F32 = np.float32


def _cv2():
    import cv2

    return cv2


class LogfFallbackWarning(UserWarning):
    """No C library ``logf`` was found: BRISK's model takes numpy's ``log``, and may differ from OpenCV's bits."""


@functools.lru_cache(maxsize=None)
def libm_names():
    """The C libraries searched for ``logf``, in order.

    glibc's libm, the platform's libm and libc (macOS, musl), then the
    symbols already in the running process (None). Looked up at the first
    call, not at import: ``find_library`` may run ``ldconfig``, and every
    command imports this module.

    Examples
    --------
    >>> libm_names()[-1] is None
    True
    """
    return tuple(dict.fromkeys(("libm.so.6", ctypes.util.find_library("m"), ctypes.util.find_library("c"), None)))


@functools.lru_cache(maxsize=None)
def _libm():
    """``(name, function)``: the C library's ``logf`` (what OpenCV calls for ``std::log`` of a float), or None."""
    for name in libm_names():
        try:
            function = ctypes.CDLL(name).logf
        except (OSError, AttributeError):
            continue
        function.restype = ctypes.c_float
        function.argtypes = [ctypes.c_float]
        return ("the running process" if name is None else name), function
    return None


def logf_source():
    """Where :func:`logf` comes from: the C library's name, or None when it falls back to numpy's ``log``.

    ``lbdviewer verify-model`` reports it: with the fallback, BRISK's model
    is not guaranteed bit-exact (numpy's float32 ``log`` may round a scale
    differently from the C library's ``logf``).

    Examples
    --------
    >>> logf_source() is None or isinstance(logf_source(), str)
    True
    """
    found = _libm()
    return None if found is None else found[0]


def logf(values):
    """Single-precision natural logarithm as the C library computes it, elementwise.

    Without a C library ``logf`` (see :func:`libm_names`) numpy's ``log`` is
    used and a :class:`LogfFallbackWarning` says so.

    Examples
    --------
    >>> float(logf(np.float32(1.0)))
    0.0
    """
    values = np.asarray(values, dtype=_F32)
    found = _libm()
    if found is None:
        warnings.warn("no C library logf was found (tried " + ", ".join(str(n) for n in libm_names())
                      + "): BRISK's model uses numpy's log, so its scales, and bits, may differ from OpenCV's",
                      LogfFallbackWarning, stacklevel=2)
        return np.log(values)
    function = found[1]
    return np.array([function(float(v)) for v in values.ravel()], dtype=_F32).reshape(values.shape)


def _trunc_int(values):
    """C's conversion to int: truncation toward zero."""
    return np.trunc(values).astype(np.int64)


def _c_div(numerator, denominator):
    """C's integer division (rounds toward zero)."""
    quotient = np.abs(numerator) // np.abs(denominator)
    return np.where((numerator < 0) != (denominator < 0), -quotient, quotient)


@functools.lru_cache(maxsize=8)
def pattern_geometry(pattern_scale=1.0):
    """BRISK's sampling pattern at every scale index, in the library's float arithmetic.

    Parameters
    ----------
    pattern_scale : float
        ``patternScale`` of ``BRISK_create``.

    Returns
    -------
    dict
        ``scale_radius`` (64, 60) float64: scale times ring radius of each
        point; ``alpha_cos``, ``alpha_sin`` (60,): the point's angle on its
        ring; ``sigma`` (64, 60) float32: half-width of each point's square;
        ``reach`` (64,) int: the border BRISK keeps free at each scale;
        ``rot_cos``, ``rot_sin`` (1024,): the rotation table;
        ``d_max``, ``d_min`` float32: short and long pair distance limits.

    Examples
    --------
    >>> g = pattern_geometry()
    >>> g["sigma"].shape, int(g["reach"][0])
    ((64, 60), 13)
    """
    f = 0.85 * float(pattern_scale)
    radius_list = np.array([_F32(f * r) for r in RING_RADII], dtype=_F32)
    lb_scale = _F32(float(logf(_F32(SCALE_RANGE))) / math.log(2.0))  # std::log of a float is logf
    lb_step = _F32(lb_scale / _F32(N_SCALES))
    scale_list = np.array([_F32(math.pow(2.0, float(_F32(_F32(j) * lb_step)))) for j in range(N_SCALES)],
                          dtype=_F32)
    sigma_scale = _F32(1.3)
    ring_of_point = np.repeat(np.arange(len(RING_COUNTS)), RING_COUNTS)
    sigma = np.empty((N_SCALES, len(RING_COUNTS)), dtype=_F32)
    reach = np.zeros(N_SCALES, dtype=np.int64)
    for j in range(N_SCALES):
        for ring, count in enumerate(RING_COUNTS):
            if ring == 0:
                sigma[j, ring] = sigma_scale * scale_list[j] * _F32(0.5)
            else:
                sigma[j, ring] = _F32(float(sigma_scale * scale_list[j]) * float(radius_list[ring])
                                      * math.sin(math.pi / count))
            size = math.ceil(float(_F32(scale_list[j] * radius_list[ring]) + sigma[j, ring])) + 1
            reach[j] = max(reach[j], size)
    alpha = [n * 2 * math.pi / count for count in RING_COUNTS for n in range(count)]
    rot_cos, rot_sin = np.empty(N_ROTATIONS), np.empty(N_ROTATIONS)
    cos_value, sin_value = 1.0, 0.0
    d_cos, d_sin = math.cos(2 * math.pi / N_ROTATIONS), math.sin(2 * math.pi / N_ROTATIONS)
    for rot in range(N_ROTATIONS):  # the library's recurrence, not exact sines
        rot_sin[rot], rot_cos[rot] = sin_value, cos_value
        sin_value, cos_value = sin_value * d_cos + cos_value * d_sin, cos_value * d_cos - sin_value * d_sin
    return {
        "scale_radius": (scale_list[:, None] * radius_list[ring_of_point]).astype(np.float64),  # a float product
        "alpha_cos": np.array([math.cos(a) for a in alpha]), "alpha_sin": np.array([math.sin(a) for a in alpha]),
        "sigma": sigma[:, ring_of_point], "reach": reach, "rot_cos": rot_cos, "rot_sin": rot_sin,
        "d_max": _F32(5.85 * pattern_scale), "d_min": _F32(8.2 * pattern_scale),
    }


def pattern_points(geometry, scale, rotation):
    """Float32 offsets ``(x, y)`` of the 60 points for each (scale, rotation), shape (K, 60) each.

    Point ``p`` at ``(rho_p cos(a_p + t), rho_p sin(a_p + t))``, ``rho_p`` the
    scaled ring radius and ``t`` the rotation, with the library's rotation table.

    Examples
    --------
    >>> x, y = pattern_points(pattern_geometry(), np.array([0]), np.array([256]))  # a quarter turn
    >>> abs(round(float(x[0, 1]), 4)), round(float(y[0, 1]), 4)
    (0.0, 2.465)
    """
    scale, rotation = np.asarray(scale), np.asarray(rotation)
    product = geometry["scale_radius"][scale]
    c, s = geometry["rot_cos"][rotation][:, None], geometry["rot_sin"][rotation][:, None]
    ca, sa = geometry["alpha_cos"], geometry["alpha_sin"]
    return (product * (c * ca - s * sa)).astype(_F32), (product * (s * ca + c * sa)).astype(_F32)


@functools.lru_cache(maxsize=8)
def long_pairs(pattern_scale=1.0):
    """BRISK's long pairs ``(i, j, weighted_dx, weighted_dy)``, from the unscaled, unrotated pattern.

    A pair of points farther apart than ``d_min`` contributes
    ``(I_i - I_j) * round(2048 (p_j - p_i) / |p_j - p_i|^2) / 1024`` to the
    orientation vector (integer division toward zero).

    Examples
    --------
    >>> long_pairs().shape[1]
    4
    """
    geometry = pattern_geometry(pattern_scale)
    x, y = (v[0] for v in pattern_points(geometry, np.array([0]), np.array([0])))
    i, j = np.tril_indices(N_POINTS, -1)
    dx, dy = x[j] - x[i], y[j] - y[i]
    norm_sq = dx * dx + dy * dy
    keep = norm_sq > geometry["d_min"] * geometry["d_min"]
    weighted = [_trunc_int((d[keep] / norm_sq[keep]).astype(np.float64) * 2048.0 + 0.5) for d in (dx, dy)]
    return np.stack([i[keep], j[keep], *weighted], axis=1)


def short_pair_candidates(pattern_scale=1.0):
    """Boolean (60, 60): points ``i > j`` closer than ``d_max`` (the pairs BRISK's bits may compare)."""
    geometry = pattern_geometry(pattern_scale)
    x, y = (v[0] for v in pattern_points(geometry, np.array([0]), np.array([0])))
    dx, dy = x[None, :] - x[:, None], y[None, :] - y[:, None]
    return np.tril(dx * dx + dy * dy < geometry["d_max"] * geometry["d_max"], -1)


def smoothed_intensities(image, integral, xf, yf, sigma):
    """BRISK's fixed-point box means at float32 positions ``(xf, yf)`` of half-width ``sigma``.

    Parameters
    ----------
    image : ndarray of uint8, shape (H, W)
    integral : ndarray of int64, shape (H + 1, W + 1)
        ``integral[r, c]`` = sum of ``image[:r, :c]``.
    xf, yf, sigma : ndarray of float32, same shape
        Positions and half-widths; every square must lie inside the image.

    Returns
    -------
    ndarray of int64
        Below half a pixel of half-width: bilinear interpolation with 10-bit
        weights (the library's corner weights, as written). Otherwise the
        square's mean: corner and edge pixels weighted by their overlap
        ``w`` as ``int(w * q)``, inner pixels by ``q = int(2^22 / area)``,
        summed, then divided by ``int(q * area / 1024)`` rounding half up:
        1024 times the mean grey level.

    Examples
    --------
    >>> img = np.full((8, 8), 100, np.uint8)
    >>> ii = np.pad(img.astype(np.int64).cumsum(0).cumsum(1), ((1, 0), (1, 0)))
    >>> smoothed_intensities(img, ii, np.float32([3.3]), np.float32([4.1]), np.float32([1.7])).tolist()  # ~1024 * 100
    [102425]
    """
    xf, yf, sigma = (np.asarray(v, dtype=_F32) for v in (xf, yf, sigma))
    img = np.asarray(image, dtype=np.int64)
    out = np.empty(xf.shape, dtype=np.int64)
    small = sigma < 0.5
    if np.any(small):
        xs, ys = xf[small], yf[small]
        x, y = _trunc_int(xs), _trunc_int(ys)
        r_x = _trunc_int((xs - x.astype(_F32)) * _F32(1024))
        r_y = _trunc_int((ys - y.astype(_F32)) * _F32(1024))
        total = ((1024 - r_x) * (1024 - r_y) * img[y, x] + r_x * (1024 - r_y) * img[y, x + 1]
                 + r_x * r_y * img[y + 1, x] + (1024 - r_x) * r_y * img[y + 1, x + 1])
        out[small] = (total + 512) // 1024
    big = ~small
    if not np.any(big):
        return out
    xf, yf, s = xf[big], yf[big], sigma[big]
    area = _F32(4.0) * s * s
    scaling = _trunc_int(4194304.0 / area.astype(np.float64))
    scaling2 = _trunc_int((scaling.astype(_F32) * area).astype(np.float64) / 1024.0)
    x_1, x1, y_1, y1 = xf - s, xf + s, yf - s, yf + s
    left, right, top, bottom = (_trunc_int(v.astype(np.float64) + 0.5) for v in (x_1, x1, y_1, y1))
    half = _F32(0.5)
    w_left = (left.astype(_F32) - x_1) + half
    w_top = (top.astype(_F32) - y_1) + half
    w_right = (x1 - right.astype(_F32)) + half
    w_bottom = (y1 - bottom.astype(_F32)) + half
    q = scaling.astype(_F32)

    def weight(w):
        return _trunc_int(w * q)

    def block(r0, r1, c0, c1):  # sum of image[r0:r1, c0:c1]
        return integral[r1, c1] - integral[r0, c1] - integral[r1, c0] + integral[r0, c0]

    total = (weight(w_left * w_top) * img[top, left] + weight(w_right * w_top) * img[top, right]
             + weight(w_right * w_bottom) * img[bottom, right] + weight(w_left * w_bottom) * img[bottom, left])
    total += weight(w_top) * block(top, top + 1, left + 1, right)
    total += weight(w_bottom) * block(bottom, bottom + 1, left + 1, right)
    total += weight(w_left) * block(top + 1, bottom, left, left + 1)
    total += weight(w_right) * block(top + 1, bottom, right, right + 1)
    total += scaling * block(top + 1, bottom, left + 1, right)
    out[big] = (total + scaling2 // 2) // scaling2
    return out


def _integral(image):
    integral = np.zeros((image.shape[0] + 1, image.shape[1] + 1), dtype=np.int64)
    integral[1:, 1:] = np.cumsum(np.cumsum(np.asarray(image, dtype=np.int64), axis=0), axis=1)
    return integral


def rotation_index(angle):
    """BRISK's rotation index (1024 steps) for angles as the library returns them.

    The library quantises its angle ``a`` in ``(-180, 180]`` as
    ``int(1024 a / 360 + 0.5)`` (truncated toward zero) before adding 360 to
    negative angles; an angle above 180 is turned back first so the same
    index comes out. An angle of exactly -1 means "no orientation" (index 0).

    Examples
    --------
    >>> rotation_index(np.array([0.0, 90.0, 359.0, -1.0])).tolist()  # 359 is -1: int(-2.84 + 0.5) = -2
    [0, 256, 1022, 0]
    """
    angle = np.asarray(angle, dtype=_F32)
    signed = np.where(angle > _F32(180), angle - _F32(360), angle)
    index = _trunc_int(N_ROTATIONS * (signed.astype(np.float64) / 360.0) + 0.5)
    index = np.where(index < 0, index + N_ROTATIONS, index)
    index = np.where(index >= N_ROTATIONS, index - N_ROTATIONS, index)
    return np.where(angle == _F32(-1), 0, index)


class Model(LibraryModel):
    """OpenCV contrib BRISK (descriptor of 512 bits).

    Parameters
    ----------
    threshold : int
        FAST threshold of BRISK's own detector (``thresh``, 30).
    octaves : int
        Detection octaves (3).
    pattern_scale : float
        ``patternScale`` (1): scales every ring.

    Examples
    --------
    >>> Model().scale_index(Keypoints([50.0], [50.0], [7.2])).tolist()
    [0]
    """

    name = "brisk"
    bitorder = "little"
    tie_positive = False
    n_bits = N_BITS

    def __init__(self, *, threshold=30, octaves=3, pattern_scale=1.0):
        if isinstance(threshold, bool) or int(threshold) != threshold or threshold < 0:
            raise ValueError(f"threshold must be a non-negative integer, got {threshold!r}")
        if isinstance(octaves, bool) or int(octaves) != octaves or octaves < 0:
            raise ValueError(f"octaves must be a non-negative integer, got {octaves!r}")
        if not (isinstance(pattern_scale, (int, float)) and 0.25 <= pattern_scale <= 8):
            raise ValueError(f"pattern_scale must be a number from 0.25 to 8, got {pattern_scale!r}")
        self.threshold = int(threshold)
        self.octaves = int(octaves)
        self.pattern_scale = float(pattern_scale)
        self._pairs = None

    def params(self):
        """Parameters as a JSON-ready dict."""
        return {"threshold": self.threshold, "octaves": self.octaves, "pattern_scale": self.pattern_scale}

    @staticmethod
    def library_version():
        return f"opencv-contrib {_cv2().__version__}"

    def _create(self):
        return _cv2().xfeatures2d.BRISK_create(self.threshold, self.octaves, self.pattern_scale)

    # -- geometry ---------------------------------------------------------
    @property
    def geometry(self):
        """The sampling pattern of this pattern scale (see :func:`pattern_geometry`)."""
        return pattern_geometry(self.pattern_scale)

    def scale_index(self, keypoints):
        """BRISK's scale index, ``int(64 / log2(30) * log2(size / 7.2) + 0.5)`` in 0..63 (float32 maths)."""
        lb_range = _F32(logf(_F32(SCALE_RANGE)) / _F32(0.693147180559945))
        ratio = keypoints.size.astype(_F32) / (_F32(BASIC_SIZE) * _F32(0.6))
        value = (_F32(N_SCALES) / lb_range) * (logf(ratio) / _F32(0.693147180559945))
        return np.clip(_trunc_int(value.astype(np.float64) + 0.5), 0, N_SCALES - 1)

    def keeps(self, keypoints, image_shape):
        """Which keypoints BRISK describes: at least its pattern reach from every border."""
        border = self.geometry["reach"][self.scale_index(keypoints)].astype(_F32)
        x, y = keypoints.x.astype(_F32), keypoints.y.astype(_F32)
        return ((x >= border) & (y >= border) & (x < _F32(image_shape[1]) - border)
                & (y < _F32(image_shape[0]) - border))

    def _points(self, keypoints, rotation):
        scale = self.scale_index(keypoints)
        px, py = pattern_points(self.geometry, scale, rotation)
        xf = px + keypoints.x.astype(_F32)[:, None]
        yf = py + keypoints.y.astype(_F32)[:, None]
        return xf, yf, self.geometry["sigma"][scale]

    def intensities(self, image, keypoints, rotation, integral=None):
        """The 60 smoothed intensities (K, 60) of each keypoint at the given rotation indices."""
        image = gray_uint8(image)
        integral = _integral(image) if integral is None else integral
        return smoothed_intensities(image, integral, *self._points(keypoints, rotation))

    def orientation(self, image, keypoints, integral=None):
        """BRISK's angle in degrees, in ``(-180, 180]``, from the long pairs of the unrotated pattern."""
        values = self.intensities(image, keypoints, np.zeros(len(keypoints), dtype=np.int64), integral)
        pairs = long_pairs(self.pattern_scale)
        delta = values[:, pairs[:, 0]] - values[:, pairs[:, 1]]
        direction_x = _c_div(delta * pairs[:, 2], 1024).sum(axis=1)
        direction_y = _c_div(delta * pairs[:, 3], 1024).sum(axis=1)
        # atan2 of two floats, in double precision (the library's call resolves to the double atan2)
        radians = np.array([math.atan2(float(dy), float(dx)) for dy, dx in
                            zip(direction_y.astype(_F32), direction_x.astype(_F32))], dtype=np.float64)
        return (radians / np.pi * 180.0).astype(_F32)

    # -- calibration ------------------------------------------------------
    @property
    def pairs(self):
        """Calibrated ``(512, 2)`` point pairs in output bit order (``I_a > I_b``)."""
        if self._pairs is None:
            key = cache_key("opencv-brisk", _cv2().__version__, ("pattern_scale", self.pattern_scale))
            self._pairs = cached_arrays(key, self._calibrate, probe=self._probe)["pairs"].astype(np.int64)
        return self._pairs

    def _samples(self, gen, step=5):
        """The library's bits and our 60 intensities (at the library's angles) on one random image."""
        cv2 = _cv2()
        coarse = gen.integers(0, 256, (40, 40)).astype(np.float32)
        image = cv2.resize(coarse, (200, 200), interpolation=cv2.INTER_CUBIC)
        image = np.clip(image + gen.normal(0, 20, image.shape), 0, 255).astype(np.uint8)
        grid = np.arange(40, 160, step, dtype=np.float64)
        xs, ys = (g.ravel() for g in np.meshgrid(grid, grid))
        keypoints = Keypoints(xs + gen.uniform(0, 1, xs.shape), ys + gen.uniform(0, 1, xs.shape),
                              gen.uniform(7.2, 20.0, xs.shape))
        kps, desc = self._create().compute(image, keypoints.to_cv())
        kept = Keypoints.from_cv(kps)
        bits = np.unpackbits(desc, axis=1, bitorder="little")[:, :N_BITS].astype(bool)
        return bits, self.intensities(image, kept, rotation_index(kept.angle))

    def _calibrate(self):
        """Match every output bit to the one ordered point pair that predicts it on random images."""
        gen = np.random.default_rng(5)
        bits, values = zip(*(self._samples(gen) for _ in range(3)))
        return {"pairs": identify_pairs(np.concatenate(values), np.concatenate(bits), tie_positive=False)}

    def _probe(self, arrays):
        """Library bits on a fixed probe image and those ``arrays["pairs"]`` predict (see the calibration cache)."""
        bits, values = self._samples(np.random.default_rng(20261126), step=30)
        pairs = np.asarray(arrays["pairs"], dtype=np.int64)
        return bits, values[:, pairs[:, 0]] > values[:, pairs[:, 1]]

    # -- bits ---------------------------------------------------------------
    def _run_library(self, image, keypoints):
        kept, bits, index = opencv_describe(self._create(), image, keypoints, n_bits=self.n_bits,
                                            bitorder=self.bitorder)
        return Keypoints.from_cv(kept), bits, index

    def model_bits(self, image, keypoints):
        """BRISK's bits recomputed with our code, orientation included: ``{-1, +1}``, (K, 512).

        The keypoints' angles are ignored: BRISK recomputes them (see
        :meth:`orientation`), and so does this model.
        """
        image = gray_uint8(image)
        integral = _integral(image)
        rotation = rotation_index(self.orientation(image, keypoints, integral))
        values = self.intensities(image, keypoints, rotation, integral)
        return np.where(values[:, self.pairs[:, 0]] > values[:, self.pairs[:, 1]], 1, -1).astype(np.int8)

    def detect(self, image, *, n_keypoints=500):
        """Keypoints of BRISK's own detector (AGAST over octaves), the ``n_keypoints`` strongest."""
        found = Keypoints.from_cv(self._create().detect(gray_uint8(image), None))
        order = np.argsort(-found.response, kind="stable")[:int(n_keypoints)]
        return found.take(np.sort(order))

    def source_images(self, image):
        """The gray image in ``[0, 1]``."""
        return [gray_uint8(image) / 255.0]

    sampled_images = source_images

    def keypoint_patterns(self, keypoints, *, fold_smoothing=True):
        """Each keypoint's 60 square fields at its angle, in a patch centred on it.

        A field is the square of half-width ``sigma`` around the point (a box
        kernel: the library's fractional border weights are rounded to whole
        pixels). BRISK's smoothing is these squares, so ``fold_smoothing``
        changes nothing. All patches share the size needed by the largest
        keypoint given; the rotation comes from ``keypoints.angle`` as the
        library returned it.
        """
        if len(keypoints) == 0:
            return []
        xf, yf, sigma = self._points(keypoints, rotation_index(keypoints.angle))
        half = int(self.geometry["reach"][self.scale_index(keypoints)].max()) + 1
        cx = np.floor(keypoints.x.astype(np.float64) + 0.5).astype(np.int64)
        cy = np.floor(keypoints.y.astype(np.float64) + 0.5).astype(np.int64)
        params = tuple(self.params().items())
        out = []
        for k in range(len(keypoints)):
            centers = np.stack([xf[k] - cx[k] + half, yf[k] - cy[k] + half], axis=1).astype(np.float64)
            radius = sigma[k].astype(np.float64)
            pattern = Pattern("brisk", 2 * half + 1, centers, radius, radius, self.pairs, kernel="box",
                              tie_positive=False, params=params)
            out.append(KeypointPattern(pattern, 0, (int(cy[k]) - half, int(cx[k]) - half), 1.0))
        return out
