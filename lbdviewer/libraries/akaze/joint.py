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
for nothing, as the library skips them. One evaluation gathers
:math:`K \times 1241` samples, and a level is filtered only in *windows*
around its samples: each keypoint's window (its samples and the filters'
reach) starts alone, and two windows become their bounding box while that
filters fewer pixels, a window counting ``WINDOW_OVERHEAD`` pixels more (its
own filter calls), so text lines, columns and isolated keypoints get windows
of their own; with zero padding the values at the samples are those of the
whole level. In a window only the Gaussians are filtered (OpenCV): one at
level 0, whose derivatives read the intensity, two above. AKAZE's
derivative kernels have 6 nonzero taps of :math:`(2w + 1)^2`, so the
derivatives are read from those taps at the window's sampled pixels only,
and the cells summed from the samples, by the compiled kernels of
:mod:`lbdviewer.libraries.akaze.joint_kernels`; :meth:`AkazeJointOperator.squared_hinge`
evaluates the sign-consistency data term without the ``(K, 486)`` arrays
between forward and adjoint, and the windows are dealt to the solvers'
thread pool. On the dark-mode screen sample (540x720, 500 keypoints) the
windows hold 592k of the 1.75M pixels of the levels in use (the bands of
rows before held 949k); forward and adjoint match the plain whole-level
computation to float rounding, and the solve takes a third of the time
(2.1-2.5 s against 6.3-7.5 s in two runs), 1.2-1.3 times the grid solve of
the image instead of 2.8-4.0 times (``scripts/bench_invert.py --rev``).
"""

from __future__ import annotations

import copy
import math
import threading

import numba
import numpy as np
from scipy import ndimage, sparse

from lbdviewer._runtime.parallel import map_parallel

from lbdviewer.libraries.akaze.grid import comparison_pairs
from lbdviewer.libraries.akaze.joint_kernels import (add_area_adjoint, read_cells, squared_hinge_cells,
                                                     write_cells)
from lbdviewer.libraries.akaze.operator import N_CELLS, _gaussian
from lbdviewer.libraries.akaze.scale_space import SMOOTH_SIGMA, derivative_kernels, level_sigmas

#: Filtered pixels a separate window must save to be worth its own filter calls: on the dark screen, document
#: and astronaut samples 2k to 32k evaluate within 10 % of each other, 8k as fast as any; one window a level
#: (no limit) is 35 % slower on the dark screen.
WINDOW_OVERHEAD = 8192
#: Work of one sample next to one pixel through one filter tap (the estimate that deals windows to threads).
SAMPLE_WORK = 16


def _cv2():
    import cv2

    return cv2


def _gaussian_kernel(sigma):
    """A normalised 1-D Gaussian of ``sigma`` (3 sigma each side; ``[1]`` for sigma 0), float32."""
    if sigma <= 0:
        return np.ones(1, dtype=np.float32)
    return _gaussian(sigma, max(1, int(math.ceil(3.0 * sigma)))).astype(np.float32)


def _correlate(image, kernel_x, kernel_y, out=None):
    """``image`` correlated with ``outer(kernel_y, kernel_x)`` (odd lengths, centred), zero outside (into ``out``).

    A view of a larger array is filtered alone: zero outside the view.
    """
    cv2 = _cv2()
    return cv2.sepFilter2D(image, cv2.CV_32F, kernel_x, kernel_y, dst=out, borderType=cv2.BORDER_CONSTANT)


def _derivative_taps(size):
    """The nonzero taps of AKAZE's scaled derivatives of half-width ``size``: ``(w, (d_-, d_+), (s_-, s_0, s_+))``.

    :func:`~lbdviewer.libraries.akaze.scale_space.derivative_kernels` is
    ``[d_-, 0 .. 0, d_+]`` across and ``[s_-, 0 .. s_0 .. 0, s_+]`` along
    (Scharr's 3 taps at ``size`` 1): the kernels rebuilt from these taps are
    those kernels exactly.

    Examples
    --------
    >>> w, across, along = _derivative_taps(2)
    >>> w, across.tolist(), [round(v, 4) for v in along.tolist()]
    (2, [-1.0, 1.0], [0.0469, 0.1563, 0.0469])
    """
    derivative, smoothing = derivative_kernels(1, 0, size)
    w = (len(derivative) - 1) // 2
    across = np.array([derivative[0], derivative[-1]], dtype=np.float32)
    along = np.array([smoothing[0], smoothing[w], smoothing[-1]], dtype=np.float32)
    rebuilt_derivative, rebuilt_smoothing = np.zeros_like(derivative), np.zeros_like(smoothing)
    rebuilt_derivative[[0, -1]], rebuilt_smoothing[[0, w, -1]] = across, along
    if not (np.array_equal(rebuilt_derivative, derivative) and np.array_equal(rebuilt_smoothing, smoothing)
            and np.array_equal(derivative_kernels(0, 1, size), (smoothing, derivative))):
        raise ValueError(f"AKAZE's derivative kernels of size {size} have other taps: {derivative}, {smoothing}")
    return w, across, along


def _window_groups(boxes, overhead=WINDOW_OVERHEAD):
    """Keypoints' windows ``(top, bottom, left, right)`` merged greedily into rectangles that filter fewer pixels.

    Two rectangles become their bounding box while that saves pixels, each
    separate rectangle counting ``overhead`` pixels more (its own filter
    calls): the merge saving most goes first. Text lines, columns and
    isolated keypoints thus get windows of their own, and overlapping or
    nearby ones share one. Returns ``[(indices, box)]``.

    Examples
    --------
    >>> boxes = [(0, 10, 0, 10), (5, 15, 5, 15), (100, 110, 100, 110)]
    >>> [(indices.tolist(), box) for indices, box in _window_groups(boxes, overhead=50)]
    [([0, 1], (0, 15, 0, 15)), ([2], (100, 110, 100, 110))]
    >>> len(_window_groups(boxes, overhead=0))  # 15 x 15 is more than twice 10 x 10
    3
    """
    boxes = np.array(boxes, dtype=np.int64).reshape(-1, 4)
    members = [[i] for i in range(len(boxes))]
    area = (boxes[:, 1] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 2])

    def savings(i):  # pixels saved by merging box i with each box
        top, bottom = np.minimum(boxes[:, 0], boxes[i, 0]), np.maximum(boxes[:, 1], boxes[i, 1])
        left, right = np.minimum(boxes[:, 2], boxes[i, 2]), np.maximum(boxes[:, 3], boxes[i, 3])
        saved = (area + area[i] + overhead - (bottom - top) * (right - left)).astype(np.float64)
        saved[i] = -np.inf
        saved[[j for j in range(len(boxes)) if not members[j]]] = -np.inf
        return saved

    table = np.array([savings(i) for i in range(len(boxes))]).reshape(len(boxes), len(boxes))
    while len(boxes) > 1:
        i, j = np.unravel_index(np.argmax(table), table.shape)
        if not table[i, j] > 0:
            break
        i, j = min(i, j), max(i, j)
        boxes[i] = (min(boxes[i, 0], boxes[j, 0]), max(boxes[i, 1], boxes[j, 1]),
                    min(boxes[i, 2], boxes[j, 2]), max(boxes[i, 3], boxes[j, 3]))
        area[i] = (boxes[i, 1] - boxes[i, 0]) * (boxes[i, 3] - boxes[i, 2])
        members[i] += members[j]
        members[j] = []
        table[j, :] = table[:, j] = -np.inf
        table[i, :] = table[:, i] = savings(i)
    return [(np.sort(np.asarray(m, dtype=int)), tuple(int(v) for v in boxes[i])) for i, m in enumerate(members) if m]


class _Window:
    """A window of one evolution level: its filters, its keypoints and the sampling of their cells.

    The level is filtered only in the window, the rows ``top:bottom`` and
    columns ``left:right`` of the level that its samples and the filters
    reaching them span (``reach``), cut at the level's border: with zero
    padding, the filtered values at the samples are those of the whole
    level. The samples read the window's distinct *sampled pixels*
    (``pixel_rows, pixel_cols``); CSR row ``k * 29 + c`` of ``indptr,
    indices, weights`` holds cell ``c`` of keypoint ``keypoints[k]``'s sample
    weights on them (see :mod:`lbdviewer.libraries.akaze.joint_kernels`).
    """

    def __init__(self, level, power, level_shape, intensity_sigma, derivative_sigma, size, keypoints, co, si):
        self.level, self.power, self.level_shape = level, power, level_shape
        self.intensity = _gaussian_kernel(intensity_sigma)  # the derivatives read the intensity at level 0
        self.smoothing = self.intensity if derivative_sigma == intensity_sigma else _gaussian_kernel(derivative_sigma)
        self.taps = _derivative_taps(size)  # (w, across, along)
        self.keypoints = keypoints
        half_intensity, half_smoothing = ((len(k) - 1) // 2 for k in (self.intensity, self.smoothing))
        self.reach = max(half_intensity, half_smoothing + self.taps[0])  # level pixels a sample reads
        self.co, self.si = co.astype(np.float32), si.astype(np.float32)
        self._scratch = threading.local()

    def set_sampling(self, rows, cols, weights, columns):
        """Place the window around the samples at ``(rows, cols)`` (inside the level) and build the sampling."""
        reach, (height, width) = self.reach, self.level_shape
        if not len(rows):  # no sample inside the level: a one-pixel window that reads nothing
            self.top, self.bottom, self.left, self.right = 0, 1, 0, 1
        else:
            self.top, self.bottom = max(int(rows.min()) - reach, 0), min(int(rows.max()) + reach + 1, height)
            self.left, self.right = max(int(cols.min()) - reach, 0), min(int(cols.max()) + reach + 1, width)
        self.shape = (self.bottom - self.top, self.right - self.left)
        pixels, where = np.unique((rows - self.top) * self.shape[1] + (cols - self.left), return_inverse=True)
        self.pixel_rows, self.pixel_cols = (v.astype(np.int64) for v in np.divmod(pixels, self.shape[1]))
        sampling = sparse.csr_matrix((np.asarray(weights, dtype=np.float32), (columns, where.ravel())),
                                     shape=(len(self.keypoints) * N_CELLS, len(pixels)))
        sampling.sum_duplicates()
        self.indptr, self.indices = sampling.indptr.astype(np.int64), sampling.indices.astype(np.int64)
        self.weights = sampling.data.astype(np.float32)
        taps = len(self.intensity) + (0 if self.smoothing is self.intensity else len(self.smoothing))
        self.work = self.shape[0] * self.shape[1] * taps + SAMPLE_WORK * len(self.weights)

    def _arrays(self):
        """Four float32 arrays of the window's shape for the calling thread, made at its first call (reused after)."""
        arrays = getattr(self._scratch, "arrays", None)
        if arrays is None:
            arrays = self._scratch.arrays = [np.empty(self.shape, dtype=np.float32) for _ in range(4)]
        return arrays

    def read(self, level, out):
        """Write the cells of the window's keypoints, read from the level image ``level``, into ``out`` (K, 29, 3)."""
        window = level[self.top:self.bottom, self.left:self.right]
        arrays = self._arrays()
        intensity = _correlate(window, self.intensity, self.intensity, arrays[0])
        smoothed = intensity if self.smoothing is self.intensity else _correlate(window, self.smoothing,
                                                                                 self.smoothing, arrays[1])
        read_cells(intensity, smoothed, self.pixel_rows, self.pixel_cols, *self.taps, self.indptr, self.indices,
                   self.weights, self.keypoints, self.co, self.si, out)

    def write(self, grads, out):
        """Add the transpose of :meth:`read` of the cell gradients ``grads`` (K, 29, 3) to the level-0 image ``out``."""
        intensity, smoothed, filtered, more = self._arrays()
        intensity.fill(0.0)
        if self.smoothing is self.intensity:
            smoothed = intensity
        else:
            smoothed.fill(0.0)
        write_cells(grads, self.keypoints, self.co, self.si, self.indptr, self.indices, self.weights, self.pixel_rows,
                    self.pixel_cols, *self.taps, intensity, smoothed)
        level = _correlate(intensity, self.intensity, self.intensity, filtered)  # the Gaussians are symmetric
        if smoothed is not intensity:
            level += _correlate(smoothed, self.smoothing, self.smoothing, more)
        if self.power == 1:
            out[self.top:self.bottom, self.left:self.right] += level
        else:
            add_area_adjoint(level, self.power, self.top, self.left, out)


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
        self._set_channel_weights(channel_weights)
        height, width = (int(v) for v in image_shape)
        self.domain_shape, self.range_shape = (height, width), (len(keypoints), 486)
        plan = level_sigmas(model.n_octaves, model.n_sublevels, (height, width))
        levels, cells, rows, cols, co, si = model.sample_grid(keypoints)
        if len(keypoints) and levels.max() >= len(plan):
            raise ValueError(f"keypoints reach level {int(levels.max())}, but a {height}x{width} image has "
                             f"{len(plan)} levels")
        pairs = comparison_pairs()
        self._first, self._second = (np.ascontiguousarray(pairs[:, i], dtype=np.int64) for i in range(2))
        self.test_channels = pairs[:, 0] % 3  # a pair compares two cells of one channel: index 3 cell + channel
        differences = np.zeros((3 * N_CELLS, len(pairs)), dtype=np.float32)  # cell values -> measurements
        differences[pairs[:, 0], np.arange(len(pairs))] = 1.0
        differences[pairs[:, 1], np.arange(len(pairs))] = -1.0
        self._differences = sparse.csr_matrix(differences)
        self._windows = []
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
            reach = _Window(*filters, here, co[here], si[here]).reach
            for group in self._groups(r, q, inside, reach, shape):  # text lines, columns, ...: each filtered alone
                lv = _Window(*filters, here[group], co[here[group]], si[here[group]])
                columns = np.arange(len(group))[:, None] * N_CELLS + cells[None, :]
                kept = inside[group]
                lv.set_sampling(r[group][kept], q[group][kept], weights[group][kept], columns[kept])
                self._windows.append(lv)
        self._covered = self._footprint()
        self._dealt = (0, [])

    @staticmethod
    def _groups(rows, cols, inside, reach, shape):
        """A level's keypoints grouped by window (:func:`_window_groups`); those with no sample inside join the first."""
        present = np.flatnonzero(inside.any(axis=1))
        boxes = [(max(int(rows[k][inside[k]].min()) - reach, 0), min(int(rows[k][inside[k]].max()) + reach + 1, shape[0]),
                  max(int(cols[k][inside[k]].min()) - reach, 0), min(int(cols[k][inside[k]].max()) + reach + 1, shape[1]))
                 for k in present]
        groups = [present[indices] for indices, _ in _window_groups(boxes)] or [np.zeros(0, dtype=int)]
        groups[0] = np.sort(np.concatenate([groups[0], np.flatnonzero(~inside.any(axis=1))]))
        return groups

    def _set_channel_weights(self, channel_weights):
        weights = np.asarray(channel_weights, dtype=np.float64)
        if weights.shape != (3,) or not np.all(np.isfinite(weights) & (weights > 0)):
            raise ValueError(f"channel_weights must be three positive numbers, got {channel_weights!r}")
        self.channel_weights = tuple(float(w) for w in weights)

    @property
    def _test_weights(self):
        return np.asarray(self.channel_weights, dtype=np.float32)[self.test_channels]

    def with_channel_weights(self, channel_weights):
        """The same operator with other ``channel_weights`` (sharing its windows: nothing is built again).

        Examples
        --------
        >>> from lbdviewer.features.keypoints import Keypoints
        >>> from lbdviewer.libraries.akaze.model import Model
        >>> op = AkazeJointOperator(Model(), Keypoints([40.0], [30.0], [4.8], [0.0], [0]), (64, 80))
        >>> op.with_channel_weights((1.0, 2.0, 3.0)).channel_weights, op.channel_weights
        ((1.0, 2.0, 3.0), (1.0, 1.0, 1.0))
        """
        other = copy.copy(self)
        other._set_channel_weights(channel_weights)
        return other

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
        for lv in self._windows:
            sampled = np.zeros(lv.shape, dtype=bool)
            sampled[lv.pixel_rows, lv.pixel_cols] = True
            hit = ndimage.maximum_filter(sampled, size=2 * lv.reach + 1, mode="constant", cval=False)
            blocks = np.kron(hit, np.ones((lv.power, lv.power), dtype=bool))
            top, left = lv.top * lv.power, lv.left * lv.power
            blocks = blocks[:max(height - top, 0), :max(width - left, 0)]
            covered[top:top + blocks.shape[0], left:left + blocks.shape[1]] |= blocks
        return covered

    def _levels(self, x):
        """``A_p x`` for every block size ``p`` in use: means over ``p x p`` blocks (``INTER_AREA`` by a whole factor)."""
        levels = {}
        for lv in self._windows:
            if lv.power not in levels:
                (h, w), p = lv.level_shape, lv.power
                levels[p] = x[:h, :w] if p == 1 else _cv2().resize(x[:h * p, :w * p], (w, h),
                                                                     interpolation=_cv2().INTER_AREA)
        return levels

    def _parts(self):
        """The windows dealt to ``numba.get_num_threads()`` threads: the most work first, each to the least loaded."""
        n_threads = numba.get_num_threads()
        if self._dealt[0] != n_threads:
            parts, loads = [[] for _ in range(n_threads)], np.zeros(n_threads)
            for lv in sorted(self._windows, key=lambda lv: -lv.work):
                lightest = int(np.argmin(loads))
                parts[lightest].append(lv)
                loads[lightest] += lv.work
            self._dealt = (n_threads, [part for part in parts if part])
        return self._dealt[1]

    def cell_values(self, x):
        """The ``(K, 29, 3)`` cell values of image ``x`` (intensity, turned derivatives)."""
        x = np.ascontiguousarray(np.asarray(x, dtype=np.float32).reshape(self.domain_shape))
        out = np.zeros((self.range_shape[0], N_CELLS, 3), dtype=np.float32)
        levels = self._levels(x)

        def read(part):  # a keypoint's cells come from one window: the parts write apart
            for lv in part:
                lv.read(levels[lv.power], out)

        map_parallel(read, self._parts())
        return out

    def forward(self, x):
        """``(H, W)`` image to the ``(K, 486)`` differences ``v_a - v_b``."""
        values = self.cell_values(x).reshape(self.range_shape[0], 3 * N_CELLS)
        return (values[:, self._first] - values[:, self._second]) * self._test_weights

    def margins(self, x):
        """The differences whose signs are the bits (no thresholds): :meth:`forward`."""
        return self.forward(x)

    def _cells_adjoint(self, grads):
        """The ``(H, W)`` image of the transpose of :meth:`cell_values` applied to ``grads`` (K, 29, 3)."""
        grads = np.ascontiguousarray(grads, dtype=np.float32).reshape(self.range_shape[0], N_CELLS, 3)

        def write(part):  # windows overlap: each part adds into an image of its own
            out = np.zeros(self.domain_shape, dtype=np.float32)
            for lv in part:
                lv.write(grads, out)
            return out

        images = map_parallel(write, self._parts())
        for image in images[1:]:
            images[0] += image
        return images[0]

    def adjoint(self, y):
        """``(K, 486)`` to the ``(H, W)`` image ``A^T y``."""
        y = np.asarray(y, dtype=np.float32).reshape(self.range_shape) * self._test_weights
        return self._cells_adjoint(np.asarray(self._differences @ y.T).T)

    def block_bits(self, positive):
        """Target bits as :meth:`squared_hinge` reads them: ``+1.0`` or ``-1.0``, float32, ``(K, 486)``.

        Parameters
        ----------
        positive : ndarray of bool, shape (K, 486), or of uint8, shape (K, 61)
            Bits (True = +1), or the same packed least-significant first.

        Examples
        --------
        >>> from lbdviewer.features.keypoints import Keypoints
        >>> from lbdviewer.libraries.akaze.model import Model
        >>> op = AkazeJointOperator(Model(), Keypoints([40.0], [30.0], [4.8], [0.0], [0]), (64, 80))
        >>> op.block_bits(np.packbits(np.arange(486) < 3, bitorder="little")[None])[0, 1:5].tolist()
        [1.0, 1.0, -1.0, -1.0]
        """
        k, m = self.range_shape
        positive = np.asarray(positive)
        if positive.dtype == np.uint8 and positive.shape == (k, (m + 7) // 8):
            positive = np.unpackbits(positive, axis=1, count=m, bitorder="little").astype(bool)
        if positive.dtype != bool or positive.shape != (k, m):
            raise ValueError(f"positive must be bool of shape {(k, m)} or packed uint8 of shape {(k, (m + 7) // 8)}, "
                             f"got {positive.dtype} of shape {positive.shape}")
        return np.where(positive, np.float32(1.0), np.float32(-1.0))

    def squared_hinge(self, x, positive, margin, *, orientation=None, atol=1e-5):
        r"""Squared hinge of the bits, its gradient and the bits reproduced, in one pass.

        .. math::  h(x) = \sum_{k,i} \big[\delta_{ki} - s_{ki} (A x)_{ki}\big]_+^2, \qquad
                   \nabla h = A^T\big(-2\, s \odot [\delta - s \odot A x]_+\big),

        :math:`s = \pm 1` the bits and :math:`\delta` the margin on the strict
        side of each test (none on the side that takes ties): the value and
        gradient of :meth:`forward` then :meth:`adjoint` (the generic path of
        :class:`~lbdviewer.solvers.image.consistency.SignConsistency`),
        without the ``(K, 486)`` arrays in between.

        Parameters
        ----------
        x : array_like, shape (H, W)
        positive : ndarray
            Target bits: bool ``(K, 486)``, packed uint8 ``(K, 61)`` or, the
            form to pass when the same bits are evaluated many times,
            :meth:`block_bits` of either.
        margin : float or array_like, shape (486,) or (1, 486)
        orientation : None
            Oriented margins are not modelled here.
        atol : float
            Tie tolerance of the bit count.

        Returns
        -------
        value : float
        gradient : ndarray of float32, shape (H, W)
        agree : int
            Bits of ``sign(A x)`` (ties per :attr:`tie_positive`) equal to the target.

        Examples
        --------
        >>> from lbdviewer.features.keypoints import Keypoints
        >>> from lbdviewer.libraries.akaze.model import Model
        >>> op = AkazeJointOperator(Model(), Keypoints([40.0], [30.0], [4.8], [0.0], [0]), (64, 80))
        >>> value, gradient, agree = op.squared_hinge(np.full((64, 80), 0.5), np.ones((1, 486), bool), 0.5)
        >>> round(value, 4), gradient.shape, agree
        (121.5, (64, 80), 0)
        """
        if orientation is not None:
            raise ValueError("AkazeJointOperator.squared_hinge takes no orientation, got one")
        k, m = self.range_shape
        positive = np.asarray(positive)
        signs = positive if positive.dtype == np.float32 and positive.shape == (k, m) else self.block_bits(positive)
        try:
            margin = np.ascontiguousarray(np.broadcast_to(np.asarray(margin, dtype=np.float32), (1, m))[0])
        except ValueError:
            raise ValueError(f"margin must be a number or have shape ({m},) or (1, {m}), got "
                             f"{np.shape(margin)}") from None
        values = self.cell_values(x).reshape(k, 3 * N_CELLS)
        grads = np.zeros_like(values)
        value, agree = squared_hinge_cells(values, self._first, self._second, self._test_weights,
                                           np.ascontiguousarray(signs), margin, float(atol), self.tie_positive, grads)
        return float(value), self._cells_adjoint(grads), int(agree)


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
