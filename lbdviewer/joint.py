r"""The joint whole-image operator: every site's descriptor from one image.

For an image ``x`` (H x W) and sites ``s = 1..S`` (top-left pixel ``c_s`` and
pattern ``p_s``), the joint operator is

.. math::  (\mathcal A x)_{s,i} = (L_{p_s} E_s x)_i,

where ``E_s`` extracts the patch at ``c_s`` and ``L_p`` is the patch operator
of pattern ``p`` (:class:`lbdviewer.operators.DescriptorOperator`); the
adjoint scatters ``L_p^T y_s`` back to the sites and sums where they overlap.
Reconstructing all descriptors at once with this operator (the *joint* mode)
lets overlapping patches agree on one image instead of being averaged.

Fast evaluation uses ``L = D K`` (pairs times field kernels): only field means
are computed, never patches. A field kernel is a small dense stencil anchored
in the patch; fields whose stencil is read many times over the image (BRIEF:
one 3x3 Gaussian shared by all 1024 fields) are *filtered*: one correlation of
the whole image with the stencil (OpenCV ``filter2D``) sampled at shifted
positions, ``mean_f(s) = (k_f \star x)[c_s + a_f]``; the other fields (FREAK's
43 boxes) are *direct*: a numba loop over their taps at each site. Measurements
are then differences of two field means; identical fields of a pattern (BRIEF
repeats ~40 % of its 1024 points) are read once. Nothing of size ``S x N`` is
formed, and the data terms of BIHT (:meth:`JointOperator.binary_gradient`) and
of the sign-consistency solver (:meth:`JointOperator.squared_hinge`) are
fused with their back-projection (bits stay packed, 8 a byte), so memory is
``O(HW + S M / 8)``. Sites are split into ranges run by the solvers' shared
thread pool (``nogil`` kernels); each range back-projects into its own image.

Sites may carry their own patterns (rotated or scaled keypoint patterns,
different patch sizes); all patterns must have the same number of
measurements ``M``.
"""

from __future__ import annotations

import math

import cv2
import numba
import numpy as np

from lbdviewer.operators import field_kernels
from lbdviewer.patterns.base import Pattern
from lbdviewer.solvers.base import thread_pool

BACKENDS = ("auto", "direct", "filtered")
FILTER_READS_PER_PIXEL = 0.25
PARALLEL_MIN_SITES = 64  # fewer sites run in the calling thread
TIE_ATOL = 0.5 / 255  # half an 8-bit grey level: smaller differences are invisible in the output


@numba.njit(cache=True, nogil=True)
def _site_means(x, filtered, base, f0, f1, field_group, field_offset, tap_start, tap_offset, tap_weight, means):
    for f in range(f0, f1):
        group = field_group[f]
        if group >= 0:
            means[f - f0] = filtered[group, base + field_offset[f]]
        else:
            acc = 0.0
            for t in range(tap_start[f], tap_start[f + 1]):
                acc += tap_weight[t] * x[base + tap_offset[t]]
            means[f - f0] = acc


@numba.njit(cache=True, nogil=True)
def _scatter_means(grads, out_x, out_filtered, base, f0, f1, field_group, field_offset, tap_start,
                   tap_offset, tap_weight):
    for f in range(f0, f1):
        g = grads[f - f0]
        group = field_group[f]
        if group >= 0:  # no test of g: a mispredicted branch costs more than the add
            out_filtered[group, base + field_offset[f]] += g
        elif g != 0.0:
            for t in range(tap_start[f], tap_start[f + 1]):
                out_x[base + tap_offset[t]] += tap_weight[t] * g
        grads[f - f0] = 0.0


@numba.njit(cache=True, nogil=True)
def _forward_kernel(x, filtered, site_lo, site_hi, site_base, site_pattern, field_start, field_group,
                    field_offset, tap_start, tap_offset, tap_weight, pair_start, pair_a, pair_b, out):
    means = np.empty(np.max(np.diff(field_start)), dtype=x.dtype)
    m = out.shape[1]
    for s in range(site_lo, site_hi):
        p = site_pattern[s]
        base = site_base[s]
        _site_means(x, filtered, base, field_start[p], field_start[p + 1], field_group, field_offset,
                    tap_start, tap_offset, tap_weight, means)
        i0 = pair_start[p]
        for i in range(m):
            out[s, i] = means[pair_a[i0 + i]] - means[pair_b[i0 + i]]


@numba.njit(cache=True, nogil=True)
def _adjoint_kernel(y, site_lo, site_hi, site_base, site_pattern, field_start, field_group, field_offset,
                    tap_start, tap_offset, tap_weight, pair_start, pair_a, pair_b, out_x, out_filtered):
    grads = np.zeros(np.max(np.diff(field_start)), dtype=out_x.dtype)
    m = y.shape[1]
    for s in range(site_lo, site_hi):
        p = site_pattern[s]
        i0 = pair_start[p]
        for i in range(m):
            v = y[s, i]
            grads[pair_a[i0 + i]] += v
            grads[pair_b[i0 + i]] -= v
        _scatter_means(grads, out_x, out_filtered, site_base[s], field_start[p], field_start[p + 1],
                       field_group, field_offset, tap_start, tap_offset, tap_weight)


@numba.njit(cache=True, nogil=True)
def _bits_kernel(x, filtered, bits, margin, hinge, tie, atol, m, site_lo, site_hi, site_base, site_pattern,
                 field_start, field_group, field_offset, tap_start, tap_offset, tap_weight, pair_start,
                 pair_a, pair_b, out_x, out_filtered):
    """Data terms against packed target bits, back-projected; returns ``(value, bits reproduced)``.

    ``hinge``: residual ``-2 b [margin - b v]_+`` and value ``sum [.]_+^2``;
    else the bit errors ``b - sign(v)`` halved (``b`` where the bit is wrong)
    and value = the number of wrong bits. Branch-free inner loop: about half
    the tests are active.
    """
    size = np.max(np.diff(field_start))
    means = np.empty(size, dtype=x.dtype)
    grads = np.zeros(size, dtype=x.dtype)
    tie_up = tie > 0
    value = 0.0
    agree = 0
    for s in range(site_lo, site_hi):
        p = site_pattern[s]
        base = site_base[s]
        f0 = field_start[p]
        f1 = field_start[p + 1]
        _site_means(x, filtered, base, f0, f1, field_group, field_offset, tap_start, tap_offset,
                    tap_weight, means)
        i0 = pair_start[p]
        touched = False
        for i in range(m):
            a = pair_a[i0 + i]
            b = pair_b[i0 + i]
            v = means[a] - means[b]
            bit = (bits[s, i >> 3] >> (i & 7)) & 1
            sign = x.dtype.type(2 * np.int32(bit) - 1)
            right = ((v > atol) | (tie_up & (v >= -atol))) == (bit == 1)
            agree += right
            if hinge:
                r = max(margin[s, i] - sign * v, x.dtype.type(0.0))
                g = x.dtype.type(-2.0) * sign * r
                value += np.float64(r) * np.float64(r)
            else:
                g = sign * x.dtype.type(not right)
                value += not right
            grads[a] += g
            grads[b] -= g
            touched |= g != 0.0
        if touched:
            _scatter_means(grads, out_x, out_filtered, base, f0, f1, field_group, field_offset,
                           tap_start, tap_offset, tap_weight)
        else:
            grads[: f1 - f0] = 0.0
    return value, agree


def _stencils(matrix, patch_size):
    """Each row of a CSR field-kernel matrix as (anchor row, anchor col, dense stencil).

    Reads the CSR arrays directly: slicing a scipy row costs ~100 us, which
    dominated building operators with one pattern per keypoint.
    """
    rows, cols = np.divmod(matrix.indices, patch_size)
    for start, stop in zip(matrix.indptr[:-1], matrix.indptr[1:]):
        r, c = rows[start:stop], cols[start:stop]
        r0, c0 = r.min(), c.min()
        stencil = np.zeros((r.max() - r0 + 1, c.max() - c0 + 1))
        stencil[r - r0, c - c0] = matrix.data[start:stop]
        yield int(r0), int(c0), stencil


def index_patterns(patterns, n_sites):
    """The distinct patterns of the sites and each site's index into them.

    Parameters
    ----------
    patterns : Pattern or sequence of Pattern
        One pattern for every site, or one per site. Patterns are told apart
        by identity, so sites that share a Pattern object share its tables.
    n_sites : int

    Returns
    -------
    unique : list of Pattern
    index : ndarray of int, shape (n_sites,)

    Raises
    ------
    ValueError
        Wrong count or type, or patterns whose ``m`` or tie rule differ.

    Examples
    --------
    >>> from lbdviewer.patterns import make_pattern
    >>> a, b = make_pattern("brief", m=8), make_pattern("freak", m=8)
    >>> unique, index = index_patterns([a, b, a], 3)
    >>> len(unique), index.tolist()
    (2, [0, 1, 0])
    """
    if isinstance(patterns, Pattern):
        return [patterns], np.zeros(n_sites, dtype=np.int64)
    patterns = list(patterns)
    if len(patterns) != n_sites:
        raise ValueError(f"patterns must be one Pattern or one per site ({n_sites}), got {len(patterns)}")
    unique, index, ids = [], np.empty(n_sites, dtype=np.int64), {}
    for s, pattern in enumerate(patterns):
        if not isinstance(pattern, Pattern):
            raise ValueError(f"patterns[{s}] must be a Pattern, got {type(pattern).__name__}")
        if id(pattern) not in ids:
            ids[id(pattern)] = len(unique)
            unique.append(pattern)
        index[s] = ids[id(pattern)]
    if len({p.m for p in unique}) != 1:
        raise ValueError(f"patterns must all have the same m, got {sorted({p.m for p in unique})}")
    if len({bool(p.tie_positive) for p in unique}) != 1:
        raise ValueError("patterns must all have the same tie_positive")
    return unique, index


class JointOperator:
    """All descriptors of an image as one linear operator ``A`` (see the module notes).

    Parameters
    ----------
    shape : (int, int)
        Image shape ``(H, W)``: the domain.
    sites : array_like of int, shape (S, 2)
        Top-left pixel ``(row, col)`` of each patch; patches must lie inside the image.
    patterns : Pattern or sequence of Pattern
        One pattern for every site, or one per site (each with its own patch
        size if needed). All must have the same ``m``.
    kernel : {"gaussian", "box"}, optional
        Field kernel; default each pattern's own.
    backend : {"auto", "direct", "filtered"}
        ``"auto"`` filters the image with a stencil when it is read at least
        ``FILTER_READS_PER_PIXEL`` times per pixel, else reads taps directly;
        the other two force one way (for tests).
    dtype : numpy dtype
        Working precision (float32 or float64).

    Attributes
    ----------
    shape : (int, int)
        ``(S * M, H * W)``, the matrix shape.
    domain_shape : (int, int)
        ``(H, W)``.
    range_shape : (int, int)
        ``(S, M)``: what :meth:`forward` returns (for one image).

    Examples
    --------
    >>> from lbdviewer.patterns import make_pattern
    >>> from lbdviewer.operators import DescriptorOperator
    >>> pattern = make_pattern("brief", patch_size=8, m=16)
    >>> op = JointOperator((8, 12), [[0, 0], [0, 4]], pattern, dtype=np.float64)
    >>> x = np.random.default_rng(0).random((8, 12))
    >>> y = op.forward(x)
    >>> y.shape, np.allclose(y[1], DescriptorOperator(pattern, dtype=np.float64).forward(x[:, 4:]))
    ((2, 16), True)
    """

    def __init__(self, shape, sites, patterns, *, kernel=None, backend="auto", dtype=np.float32):
        shape = tuple(int(v) for v in shape)
        if len(shape) != 2 or min(shape) < 1:
            raise ValueError(f"shape must be (H, W) with positive sides, got {shape}")
        if backend not in BACKENDS:
            raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
        self.dtype = np.dtype(dtype)
        if self.dtype not in (np.float32, np.float64):
            raise ValueError(f"dtype must be float32 or float64, got {dtype}")
        sites = np.asarray(sites, dtype=np.int64).reshape(-1, 2)
        if len(sites) == 0:
            raise ValueError("sites must hold at least one site, got none")
        unique, site_pattern = index_patterns(patterns, len(sites))
        sizes = np.array([p.patch_size for p in unique])[site_pattern]
        height, width = shape
        if sites.min() < 0 or (sites[:, 0] + sizes).max() > height or (sites[:, 1] + sizes).max() > width:
            raise ValueError(f"sites must put every patch inside the {height}x{width} image")
        self._shape2d = shape
        self.sites = sites
        self.patterns = tuple(unique)
        self.site_pattern = site_pattern
        self.patch_sizes = sizes
        self.m = unique[0].m
        self.tie_positive = bool(unique[0].tie_positive)
        self.kernel = kernel
        self._build_tables(backend)
        self._norm = None

    # -- construction ---------------------------------------------------
    def _build_tables(self, backend):
        height, width = self._shape2d
        n_pixels = height * width
        site_counts = np.bincount(self.site_pattern, minlength=len(self.patterns))
        fields = []  # (pattern index, anchor r, anchor c, stencil, key), each distinct field once
        field_counts, field_index = [], []  # per pattern: distinct fields, field -> distinct field
        reads = {}
        for p, pattern in enumerate(self.patterns):
            matrix = field_kernels(pattern, self.kernel or pattern.kernel).tocsr()
            matrix.sort_indices()
            seen, index = {}, np.empty(pattern.n_fields, dtype=np.int64)
            for f, (r0, c0, stencil) in enumerate(_stencils(matrix, pattern.patch_size)):
                key = (stencil.shape, np.round(stencil * 1e9).astype(np.int64).tobytes())
                if (r0, c0, key) not in seen:  # BRIEF: 1024 fields, ~600 distinct
                    seen[(r0, c0, key)] = len(seen)
                    reads[key] = reads.get(key, 0) + int(site_counts[p])
                    fields.append((p, r0, c0, stencil, key))
                index[f] = seen[(r0, c0, key)]
            field_counts.append(len(seen))
            field_index.append(index)
        if backend == "filtered":
            chosen = set(reads)
        elif backend == "direct":
            chosen = set()
        else:
            chosen = {key for key, count in reads.items() if count >= FILTER_READS_PER_PIXEL * n_pixels}
        group_of, self._stencils = {}, []
        field_group, field_offset, tap_start, tap_offset, tap_weight = [], [], [0], [], []
        for p, r0, c0, stencil, key in fields:
            if key in chosen:
                if key not in group_of:
                    group_of[key] = len(self._stencils)
                    self._stencils.append(stencil.astype(self.dtype))
                field_group.append(group_of[key])
                field_offset.append(r0 * width + c0)
                tap_start.append(tap_start[-1])
            else:
                rows, cols = np.nonzero(stencil)
                field_group.append(-1)
                field_offset.append(0)
                tap_offset.extend((rows + r0) * width + cols + c0)
                tap_weight.extend(stencil[rows, cols])
                tap_start.append(tap_start[-1] + rows.size)
        dtype = self.dtype
        self._tables = (
            np.cumsum([0] + field_counts).astype(np.int64),
            np.array(field_group, dtype=np.int64),
            np.array(field_offset, dtype=np.int64),
            np.array(tap_start, dtype=np.int64),
            np.array(tap_offset, dtype=np.int64),
            np.array(tap_weight, dtype=dtype),
            np.cumsum([0] + [p.m for p in self.patterns]).astype(np.int64),
            np.concatenate([index[p.pairs[:, 0]] for p, index in zip(self.patterns, field_index)]),
            np.concatenate([index[p.pairs[:, 1]] for p, index in zip(self.patterns, field_index)]),
        )
        self._site_base = (self.sites[:, 0] * width + self.sites[:, 1]).astype(np.int64)

    # -- shapes ---------------------------------------------------------
    @property
    def domain_shape(self):
        return self._shape2d

    @property
    def range_shape(self):
        return (len(self.sites), self.m)

    @property
    def shape(self):
        return (len(self.sites) * self.m, self._shape2d[0] * self._shape2d[1])

    @property
    def n_filters(self):
        """Number of distinct stencils evaluated by filtering the whole image."""
        return len(self._stencils)

    def __repr__(self):
        return (f"JointOperator(shape={self._shape2d}, sites={len(self.sites)}, m={self.m}, "
                f"patterns={len(self.patterns)}, filters={self.n_filters})")

    # -- kernels --------------------------------------------------------
    def _filter(self, image):
        if not self._stencils:
            return np.zeros((1, 1), dtype=self.dtype)
        return np.stack([
            cv2.filter2D(image, -1, stencil, anchor=(0, 0), borderType=cv2.BORDER_CONSTANT).ravel()
            for stencil in self._stencils
        ])

    def _unfilter(self, out_filtered, out_x):
        for stencil, plane in zip(self._stencils, out_filtered):
            h, w = stencil.shape
            flipped = np.ascontiguousarray(stencil[::-1, ::-1])
            out_x += cv2.filter2D(plane.reshape(self._shape2d), -1, flipped, anchor=(w - 1, h - 1),
                                  borderType=cv2.BORDER_CONSTANT).ravel()

    def _new_planes(self):
        n_pixels = self._shape2d[0] * self._shape2d[1]
        return np.zeros((max(len(self._stencils), 1), n_pixels if self._stencils else 1), dtype=self.dtype)

    def _as_image(self, x, name):
        x = np.asarray(x)
        if x.shape[-2:] != self._shape2d or x.ndim < 2:
            raise ValueError(f"{name} must have shape (..., {self._shape2d[0]}, {self._shape2d[1]}), got {x.shape}")
        return x.astype(self.dtype, copy=False)

    def _site_chunks(self):
        """Bounds of the site ranges run in parallel (one range below ``PARALLEL_MIN_SITES`` sites a thread)."""
        n_sites = len(self.sites)
        n_chunks = min(numba.get_num_threads(), max(1, n_sites // PARALLEL_MIN_SITES))
        return np.linspace(0, n_sites, n_chunks + 1).astype(np.int64)

    def _run_sites(self, chunk):
        """``[chunk(index, lo, hi)]`` over the site ranges, in the shared thread pool if more than one."""
        bounds = self._site_chunks()
        tasks = [(index, bounds[index], bounds[index + 1]) for index in range(len(bounds) - 1)]
        if len(tasks) == 1:
            return [chunk(*tasks[0])]
        return list(thread_pool().map(lambda task: chunk(*task), tasks))

    def _back_project(self, kernel, *args):
        """Run ``kernel(*args, lo, hi, <tables>, out_x, out_planes)`` over the site ranges.

        Each range adds into its own image and filter planes; they are summed
        and the planes correlated back. Returns the image (flat) and the
        kernel's results, one per range.
        """
        outputs = [(np.zeros(self._shape2d[0] * self._shape2d[1], dtype=self.dtype), self._new_planes())
                   for _ in range(len(self._site_chunks()) - 1)]
        results = self._run_sites(lambda index, lo, hi: kernel(
            *args, lo, hi, self._site_base, self.site_pattern, *self._tables, *outputs[index]))
        out, planes = outputs[0]
        for other_out, other_planes in outputs[1:]:
            out += other_out
            planes += other_planes
        self._unfilter(planes, out)
        return out, results

    def forward(self, x):
        """Measurements of every site, ``A x``: images ``(..., H, W)`` to ``(..., S, M)``."""
        x = self._as_image(x, "x")
        images = x.reshape(-1, *self._shape2d)
        out = np.empty((len(images), len(self.sites), self.m), dtype=self.dtype)
        for image, values in zip(images, out):
            image = np.ascontiguousarray(image)
            flat, filtered = image.ravel(), self._filter(image)
            self._run_sites(lambda index, lo, hi: _forward_kernel(
                flat, filtered, lo, hi, self._site_base, self.site_pattern, *self._tables, values))
        return out.reshape(*x.shape[:-2], len(self.sites), self.m)

    def adjoint(self, y):
        """Back-projection ``A^T y``, ``(..., S, M)`` to images ``(..., H, W)``.

        Each site's ``L^T y_s`` is added at its place; overlaps sum.
        """
        y = np.asarray(y)
        if y.shape[-2:] != self.range_shape or y.ndim < 2:
            raise ValueError(f"y must have shape (..., {len(self.sites)}, {self.m}), got {y.shape}")
        batches = y.astype(self.dtype, copy=False).reshape(-1, *self.range_shape)
        out = np.stack([self._back_project(_adjoint_kernel, np.ascontiguousarray(batch))[0]
                        for batch in batches])
        return out.reshape(*y.shape[:-2], *self._shape2d)

    def binary_gradient(self, x, packed_bits):
        """Back-projected bit errors ``A^T (b - sign(A x)) / 2`` and their count, fused.

        Parameters
        ----------
        x : array_like, shape (H, W)
            Current estimate.
        packed_bits : ndarray of uint8, shape (S, ceil(M / 8))
            Target bits, packed least-significant first (:func:`lbdviewer.operators.pack_bits`).

        Returns
        -------
        gradient : ndarray, shape (H, W)
        mismatches : int
            Number of bits of ``sign(A x)`` that differ from the target.

        Notes
        -----
        ``sign`` follows the patterns' tie convention with tolerance
        ``TIE_ATOL``, so a flat estimate is consistent with the bits of a flat
        image and is left flat.
        """
        image = np.ascontiguousarray(self._as_image(x, "x"))
        expected = (len(self.sites), (self.m + 7) // 8)
        if packed_bits.dtype != np.uint8 or packed_bits.shape != expected:
            raise ValueError(f"packed_bits must be uint8 of shape {expected}, got {packed_bits.dtype} {packed_bits.shape}")
        tie = 1 if self.tie_positive else -1
        out, results = self._back_project(_bits_kernel, image.ravel(), self._filter(image), packed_bits,
                                          np.zeros((1, 1), dtype=self.dtype), False, tie, TIE_ATOL, self.m)
        return out.reshape(self._shape2d), int(sum(r[0] for r in results))

    def squared_hinge(self, x, positive, margin, *, atol=TIE_ATOL):
        r"""Squared hinge of the bits, its gradient and the bits reproduced, in one pass.

        With :math:`s_{si} = \pm 1` the target bits and :math:`\delta_{si}` the margins,

        .. math::  h(x) = \sum_{s,i} \big[\delta_{si} - s_{si} (A x)_{si}\big]_+^2, \qquad
                   \nabla h = A^T\big(-2\, s \odot [\delta - s \odot A x]_+\big).

        Parameters
        ----------
        x : array_like, shape (H, W)
            Current estimate.
        positive : ndarray of bool, shape (S, M), or of uint8, shape (S, ceil(M / 8))
            Target bits (True = +1), or the same packed least-significant
            first (:func:`lbdviewer.operators.pack_bits` of the ±1 bits).
        margin : ndarray of float, shape (S, M)
            :math:`\delta`.
        atol : float
            Tie tolerance of the bit count: :math:`|(Ax)_{si}| \le` ``atol`` is a tie.

        Returns
        -------
        value : float
            :math:`h(x)`, accumulated in float64.
        gradient : ndarray, shape (H, W)
        agree : int
            Number of bits of ``sign(A x)`` (ties per the patterns) equal to the target.

        Examples
        --------
        >>> from lbdviewer.patterns import make_pattern
        >>> op = JointOperator((8, 8), [[0, 0]], make_pattern("brief", patch_size=8, m=16))
        >>> value, gradient, agree = op.squared_hinge(np.full((8, 8), 0.5), np.ones((1, 16), bool),
        ...                                           np.full((1, 16), 0.5, np.float32))
        >>> round(value, 6), gradient.shape, agree
        (4.0, (8, 8), 0)
        """
        image = np.ascontiguousarray(self._as_image(x, "x"))
        packed_shape = (len(self.sites), (self.m + 7) // 8)
        if positive.dtype == np.uint8 and positive.shape == packed_shape:
            bits = np.ascontiguousarray(positive)
        elif positive.dtype == bool and positive.shape == self.range_shape:
            bits = np.packbits(positive, axis=1, bitorder="little")
        else:
            raise ValueError(f"positive must be bool {self.range_shape} or uint8 {packed_shape}, "
                             f"got {positive.dtype} {positive.shape}")
        if margin.shape != self.range_shape:
            raise ValueError(f"margin must have shape {self.range_shape}, got {margin.shape}")
        margin = np.ascontiguousarray(margin, dtype=self.dtype)
        tie = 1 if self.tie_positive else -1
        out, results = self._back_project(_bits_kernel, image.ravel(), self._filter(image), bits, margin,
                                          True, tie, atol, self.m)
        return float(sum(r[0] for r in results)), out.reshape(self._shape2d), int(sum(r[1] for r in results))

    def norm_estimate(self, *, iterations=30, rng=0):
        """Spectral norm ``||A||_2`` by the power method (cached after the first call)."""
        if self._norm is None:
            vector = np.random.default_rng(rng).standard_normal(self._shape2d).astype(self.dtype)
            value = 0.0
            for _ in range(iterations):
                vector = self.adjoint(self.forward(vector))
                value = float(np.linalg.norm(vector))
                vector /= value
            self._norm = math.sqrt(value)
        return self._norm
