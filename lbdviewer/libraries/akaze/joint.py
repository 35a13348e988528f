r"""Every keypoint's AKAZE bits from one level-0 image: a linear operator for a joint solve.

:class:`~lbdviewer.libraries.akaze.operator.AkazePatchOperator` writes one
keypoint's 486 measurements as functionals of a patch of its own level;
inverting each alone gives each patch up to an offset and a gain, and their
average is a blurred band-pass picture (the document sample from 500
keypoints: correlation 0.54, no line read). Here all keypoints read one
unknown image :math:`x` of level-0 pixels, as the linear view of
:mod:`lbdviewer.libraries.akaze.model` has them:

- a keypoint of level :math:`e` (octave :math:`o`, pixel size
  :math:`p = 2^o`, scale :math:`\sigma_e`) reads the level image
  :math:`A_p x` (means over :math:`p \times p` blocks, as ``INTER_AREA``
  resizes by a whole factor);
- its intensity channel reads :math:`L_e = G_{\sigma_e / p} * A_p x`, the
  nonlinear diffusion replaced by the linear one of the same time (the
  library's first Gaussian included);
- its derivative channels read AKAZE's scaled derivatives
  :math:`D_x, D_y` (half-width of the level) of
  :math:`G_{s} * A_p x`, :math:`s = \sqrt{(\sigma_{e-1} / p)^2 + 1}` at
  levels above 0 (the previous level's time and the library's 5x5
  smoothing), of :math:`L_0` at level 0;
- cell :math:`c` averages its in-level samples (:meth:`Model.sample_grid`),
  the derivative channels turned by the keypoint's angle, and measurement
  :math:`i` is :math:`v_{a_i} - v_{b_i}`
  (:func:`~lbdviewer.libraries.akaze.grid.comparison_pairs`).

Measurement :math:`i` may be weighted by its channel (``channel_weights``:
the signs, hence the bits, do not change). The derivative channels'
functionals are 6 to 7 times shorter than the intensity's (AKAZE scales its
derivatives), so in a hinge with one margin their bits weigh ~40 times less;
:func:`balanced_channel_weights` gives every channel the intensity's mean
norm (the closed form of :mod:`lbdviewer.features.invert_akaze` scales its
rows the same way).

The filters are separable, applied with zero padding (so the adjoint is the
filters' transposes, exactly); samples outside a level read zero and count
for nothing, as the library skips them. One evaluation filters each level
in use a few times and gathers :math:`K \times 1241` samples. A level is
filtered only in windows around its samples, one a band of rows whose
keypoints' windows overlap (text lines far apart make separate bands): the
values at the samples are those of the whole level. On the dark-mode screen
sample (540x720, 500 keypoints) that filters 31 % of the levels' pixels and
takes the solve from 8.5 to 6.4 s (``scripts/bench_invert.py``).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import ndimage, sparse

from lbdviewer.libraries.akaze.grid import comparison_pairs
from lbdviewer.libraries.akaze.operator import N_CELLS
from lbdviewer.libraries.akaze.scale_space import SMOOTH_SIGMA, derivative_kernels, level_sigmas


def _cv2():
    import cv2

    return cv2


def _gaussian_kernel(sigma):
    """A normalised 1-D Gaussian of ``sigma`` (3 sigma each side; ``[1]`` for sigma 0)."""
    if sigma <= 0:
        return np.ones(1, dtype=np.float32)
    radius = max(1, int(math.ceil(3.0 * sigma)))
    x = np.arange(-radius, radius + 1, dtype=np.float64)
    g = np.exp(-x * x / (2.0 * sigma * sigma))
    return (g / g.sum()).astype(np.float32)


def _correlate(image, kernel_x, kernel_y):
    """``image`` correlated with ``outer(kernel_y, kernel_x)`` (odd lengths, centred), zero outside."""
    cv2 = _cv2()
    return cv2.sepFilter2D(image, cv2.CV_32F, kernel_x, kernel_y, borderType=cv2.BORDER_CONSTANT)


class _Level:
    """One evolution level in use: its block size, filters, window and the sampling of its keypoints' cells.

    The level is filtered only in its *window*, the rows ``top:bottom`` and
    columns ``left:right`` of the level that its samples and the filters
    reaching them span (``reach``), cut at the level's border: with zero
    padding, the filtered values at the samples are those of the whole
    level. ``sampling`` is the sparse ``(window pixels, keypoints x 29)``
    matrix of the cells' sample weights: a cell's value is ``sampling.T @ channel``.
    """

    def __init__(self, level, power, level_shape, intensity_sigma, derivative_sigma, size, keypoints, co, si):
        self.level, self.power, self.level_shape = level, power, level_shape
        self.intensity = _gaussian_kernel(intensity_sigma)  # the derivatives read the intensity at level 0
        self.smoothing = self.intensity if derivative_sigma == intensity_sigma else _gaussian_kernel(derivative_sigma)
        self.dx = tuple(k.astype(np.float32) for k in derivative_kernels(1, 0, size))
        self.dy = tuple(k.astype(np.float32) for k in derivative_kernels(0, 1, size))
        self.flipped = tuple(tuple(np.ascontiguousarray(k[::-1]) for k in kernel) for kernel in (self.dx, self.dy))
        self.keypoints = keypoints
        half = [(len(k) - 1) // 2 for k in (self.intensity, self.smoothing, *self.dx, *self.dy)]
        self.reach = max(half[0], half[1] + max(half[2:]))  # level pixels a sample reads through the filters
        self.co, self.si = co[:, None].astype(np.float32), si[:, None].astype(np.float32)

    def set_sampling(self, rows, cols, weights, columns):
        """Place the window around the samples at ``(rows, cols)`` (inside the level) and build ``sampling``."""
        reach, (height, width) = self.reach, self.level_shape
        if not len(rows):  # no sample inside the level: a one-pixel window that reads nothing
            rows = cols = np.zeros(0, dtype=int)
            reach = 0
            self.top, self.bottom, self.left, self.right = 0, 1, 0, 1
        else:
            self.top, self.bottom = max(int(rows.min()) - reach, 0), min(int(rows.max()) + reach + 1, height)
            self.left, self.right = max(int(cols.min()) - reach, 0), min(int(cols.max()) + reach + 1, width)
        self.shape = (self.bottom - self.top, self.right - self.left)
        pixels = (rows - self.top) * self.shape[1] + (cols - self.left)
        self.sampling = sparse.coo_matrix((weights, (pixels, columns)),
                                          shape=(self.shape[0] * self.shape[1],
                                                 len(self.keypoints) * N_CELLS)).tocsr()
        self.sampling_t = self.sampling.T.tocsr()


def _row_bands(rows, inside, reach):
    """Keypoints grouped into bands of level rows whose windows (rows ``reach`` beyond the samples) overlap.

    ``rows`` and ``inside`` are ``(K, S)``: each keypoint's sample rows and
    which samples lie inside the level. Keypoints with no sample inside join
    the first band. Returns a list of index arrays, one a band.

    Examples
    --------
    >>> rows = np.array([[10, 20], [25, 30], [90, 99], [0, 0]])
    >>> inside = np.array([[True, True], [True, True], [True, True], [False, False]])
    >>> [band.tolist() for band in _row_bands(rows, inside, 4)]
    [[0, 1, 3], [2]]
    """
    spans = [(int(r[k].min()), int(r[k].max())) if k.any() else None for r, k in zip(rows, inside)]
    order = sorted((span, i) for i, span in enumerate(spans) if span is not None)
    bands, last = [], None
    for (low, high), i in order:
        if last is None or low - reach > last + reach:
            bands.append([])
        bands[-1].append(i)
        last = high if last is None or low - reach > last + reach else max(last, high)
    empty = [i for i, span in enumerate(spans) if span is None]
    if not bands:
        return [np.asarray(empty, dtype=int)]
    bands[0] += empty
    return [np.sort(np.asarray(band, dtype=int)) for band in bands]


class AkazeJointOperator:
    """The bits of every keypoint of an AKAZE feature file as one linear map of a level-0 image (module notes).

    Parameters
    ----------
    model : lbdviewer.libraries.akaze.model.Model
    keypoints : lbdviewer.features.keypoints.Keypoints
    image_shape : (int, int)
    channel_weights : (float, float, float), optional
        Weights of the measurements of the intensity and the two derivative
        channels (default 1, 1, 1: the differences themselves).

    Attributes
    ----------
    domain_shape : (int, int)
    range_shape : (int, int)
        ``(K, 486)``.
    channel_weights : tuple of float
    tie_positive : bool
        False: a bit is ``value_a > value_b``.

    Examples
    --------
    >>> from lbdviewer.features.keypoints import Keypoints
    >>> from lbdviewer.libraries.akaze.model import Model
    >>> op = AkazeJointOperator(Model(), Keypoints([40.0], [30.0], [4.8], [0.0], [0]), (64, 80))
    >>> op.forward(np.zeros((64, 80))).shape, op.adjoint(np.ones((1, 486))).shape
    ((1, 486), (64, 80))
    """

    tie_positive = False

    def __init__(self, model, keypoints, image_shape, *, channel_weights=(1.0, 1.0, 1.0)):
        weights = np.asarray(channel_weights, dtype=np.float64)
        if weights.shape != (3,) or not np.all(np.isfinite(weights) & (weights > 0)):
            raise ValueError(f"channel_weights must be three positive numbers, got {channel_weights!r}")
        self.channel_weights = tuple(float(w) for w in weights)
        height, width = (int(v) for v in image_shape)
        self.domain_shape, self.range_shape = (height, width), (len(keypoints), 486)
        plan = level_sigmas(model.n_octaves, model.n_sublevels, (height, width))
        levels, cells, rows, cols, co, si = model.sample_grid(keypoints)
        if len(keypoints) and levels.max() >= len(plan):
            raise ValueError(f"keypoints reach level {int(levels.max())}, but a {height}x{width} image has "
                             f"{len(plan)} levels")
        pairs = comparison_pairs()
        self._pairs = pairs
        self.test_channels = pairs[:, 0] % 3  # a pair compares two cells of one channel: index 3 cell + channel
        self._test_weights = weights[self.test_channels].astype(np.float32)
        differences = np.zeros((3 * N_CELLS, len(pairs)), dtype=np.float32)  # cell values -> measurements
        differences[pairs[:, 0], np.arange(len(pairs))] = 1.0
        differences[pairs[:, 1], np.arange(len(pairs))] = -1.0
        self._differences = sparse.csr_matrix(differences)
        self._levels = []
        for e in np.unique(levels):
            octave, _, esigma, size = plan[e]
            power = 1 << octave
            shape = (int(height / power), int(width / power))
            here = np.flatnonzero(levels == e)
            r, q = rows[here], cols[here]
            inside = (r >= 0) & (r < shape[0]) & (q >= 0) & (q < shape[1])
            counts = np.stack([np.bincount(cells[row], minlength=N_CELLS) for row in inside], axis=0)
            weights = inside / np.maximum(counts[:, cells], 1)  # 1 / n_c on a cell's samples inside the level
            previous = plan[e - 1][2] if e > 0 else 0.0
            derivative_sigma = math.hypot(previous / power, SMOOTH_SIGMA) if e > 0 else esigma / power
            filters = (int(e), power, shape, esigma / power, derivative_sigma, size)
            reach = _Level(*filters, here, co[here], si[here]).reach
            for band in _row_bands(r, inside, reach):  # text lines far apart: each band filtered alone
                lv = _Level(*filters, here[band], co[here[band]], si[here[band]])
                columns = np.arange(len(band))[:, None] * N_CELLS + cells[None, :]
                kept = inside[band]
                lv.set_sampling(r[band][kept], q[band][kept], weights[band][kept].astype(np.float32), columns[kept])
                self._levels.append(lv)
        self._covered = self._footprint()

    @property
    def shape(self):
        return (self.range_shape[0] * self.range_shape[1], self.domain_shape[0] * self.domain_shape[1])

    @property
    def covered(self):
        """Level-0 pixels some keypoint's samples read through their level's filters, ``(H, W)`` bool.

        The operator's support: a pixel outside it changes no measurement.
        (The samples' own pixels alone are a sparse lattice at coarse levels:
        a reconstruction drawn or filled only there comes out speckled.)
        """
        return self._covered

    def _footprint(self):
        height, width = self.domain_shape
        covered = np.zeros(self.domain_shape, dtype=bool)
        for lv in self._levels:
            sampled = (lv.sampling.getnnz(axis=1) > 0).reshape(lv.shape)
            hit = ndimage.maximum_filter(sampled, size=2 * lv.reach + 1, mode="constant", cval=False)
            blocks = np.kron(hit, np.ones((lv.power, lv.power), dtype=bool))
            top, left = lv.top * lv.power, lv.left * lv.power
            blocks = blocks[:max(height - top, 0), :max(width - left, 0)]
            covered[top:top + blocks.shape[0], left:left + blocks.shape[1]] |= blocks
        return covered

    @staticmethod
    def _area(x, power, shape):
        """``A_p x``: means over ``p x p`` blocks (the level's shape)."""
        h, w = shape
        if power == 1:
            return x[:h, :w]
        return x[:h * power, :w * power].reshape(h, power, w, power).mean(axis=(1, 3), dtype=np.float32)

    @staticmethod
    def _window(area, lv):
        """The level's window of its level image ``area``."""
        return np.ascontiguousarray(area[lv.top:lv.bottom, lv.left:lv.right])

    @staticmethod
    def _area_adjoint(g, lv, out):
        """Add ``A_p^T`` of the window's ``g`` to the level-0 image ``out``."""
        p = lv.power
        rows, cols = slice(lv.top * p, lv.bottom * p), slice(lv.left * p, lv.right * p)
        out[rows, cols] += g if p == 1 else np.repeat(np.repeat(g / (p * p), p, axis=0), p, axis=1)

    @staticmethod
    def _channels(level, lv):
        """The level's intensity and the two derivatives it samples, from its level image."""
        intensity = _correlate(level, lv.intensity, lv.intensity)
        smoothed = intensity if lv.smoothing is lv.intensity else _correlate(level, lv.smoothing, lv.smoothing)
        return intensity, _correlate(smoothed, *lv.dx), _correlate(smoothed, *lv.dy)

    def cell_values(self, x):
        """The ``(K, 29, 3)`` cell values of image ``x`` (intensity, turned derivatives)."""
        x = np.ascontiguousarray(np.asarray(x, dtype=np.float32).reshape(self.domain_shape))
        out = np.zeros((self.range_shape[0], N_CELLS, 3), dtype=np.float32)
        areas = {}  # one block average an octave
        for lv in self._levels:
            if lv.power not in areas:
                areas[lv.power] = self._area(x, lv.power, lv.level_shape)
            channels = self._channels(self._window(areas[lv.power], lv), lv)
            intensity, dx, dy = ((lv.sampling_t @ c.ravel()).reshape(-1, N_CELLS) for c in channels)
            out[lv.keypoints, :, 0] = intensity
            out[lv.keypoints, :, 1] = -dx * lv.si + dy * lv.co
            out[lv.keypoints, :, 2] = dx * lv.co + dy * lv.si
        return out

    def forward(self, x):
        """``(H, W)`` image to the ``(K, 486)`` differences ``v_a - v_b``."""
        values = self.cell_values(x).reshape(self.range_shape[0], 3 * N_CELLS)
        return (values[:, self._pairs[:, 0]] - values[:, self._pairs[:, 1]]) * self._test_weights

    def margins(self, x):
        """The differences whose signs are the bits (no thresholds): :meth:`forward`."""
        return self.forward(x)

    def adjoint(self, y):
        """``(K, 486)`` to the ``(H, W)`` image ``A^T y``."""
        y = np.asarray(y, dtype=np.float32).reshape(self.range_shape) * self._test_weights
        grads = np.asarray(self._differences @ y.T).T.reshape(-1, N_CELLS, 3)
        out = np.zeros(self.domain_shape, dtype=np.float32)
        for lv in self._levels:
            g = grads[lv.keypoints]
            g0, g1, g2 = g[..., 0], g[..., 1], g[..., 2]
            planes = [(lv.sampling @ values.ravel()).astype(np.float32).reshape(lv.shape)
                      for values in (g0, -g1 * lv.si + g2 * lv.co, g1 * lv.co + g2 * lv.si)]
            smoothed = _correlate(planes[1], *lv.flipped[0]) + _correlate(planes[2], *lv.flipped[1])
            if lv.smoothing is lv.intensity:
                level = _correlate(planes[0] + smoothed, lv.intensity, lv.intensity)
            else:
                level = _correlate(planes[0], lv.intensity, lv.intensity) + _correlate(smoothed, lv.smoothing,
                                                                                        lv.smoothing)
            self._area_adjoint(level, lv, out)
        return out


def balanced_channel_weights(operator, *, probes=8, seed=0):
    r"""Channel weights that give each channel's measurements the intensity channel's mean norm.

    The squared norm of a functional :math:`a_i` is the mean of
    :math:`(a_i^T z)^2` over white noise :math:`z` (Hutchinson's estimate,
    ``probes`` images of a fixed ``seed``); per channel :math:`c`,
    :math:`n_c = \sqrt{\mathrm{mean}_{i \in c} \lVert a_i \rVert^2}` and the
    weight is :math:`w_c = n_0 / n_c` times the operator's own.

    Parameters
    ----------
    operator : AkazeJointOperator
    probes : int
    seed : int

    Returns
    -------
    tuple of float
        ``(1, w_1, w_2)`` for an operator of unit weights.

    Examples
    --------
    >>> from lbdviewer.features.keypoints import Keypoints
    >>> from lbdviewer.libraries.akaze.model import Model
    >>> op = AkazeJointOperator(Model(), Keypoints([40.0, 30.0], [30.0, 36.0], [4.8, 6.0], [0.0, 90.0], [0, 0]), (64, 80))
    >>> weights = balanced_channel_weights(op)
    >>> weights[0], bool(weights[1] > 2 and weights[2] > 2)
    (1.0, True)
    """
    rng = np.random.default_rng(seed)
    squares = np.zeros(operator.range_shape, dtype=np.float64)
    for _ in range(int(probes)):
        squares += operator.forward(rng.standard_normal(operator.domain_shape).astype(np.float32)) ** 2
    norms = np.array([np.sqrt(squares[:, operator.test_channels == c].mean()) for c in range(3)])
    if not np.all(norms > 0):
        return operator.channel_weights
    return tuple(float(w * norms[0] / n) for w, n in zip(operator.channel_weights, norms))
