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
are then differences of two field means. Nothing of size ``S x N`` is formed,
and the binary data term of BIHT is fused (bits stay packed, 8 a byte), so
memory is ``O(HW + S M / 8)``.

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

BACKENDS = ("auto", "direct", "filtered")
FILTER_READS_PER_PIXEL = 0.25
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
        if g == 0.0:
            continue
        group = field_group[f]
        if group >= 0:
            out_filtered[group, base + field_offset[f]] += g
        else:
            for t in range(tap_start[f], tap_start[f + 1]):
                out_x[base + tap_offset[t]] += tap_weight[t] * g
        grads[f - f0] = 0.0


@numba.njit(cache=True, nogil=True)
def _forward_kernel(x, filtered, site_base, site_pattern, field_start, field_group, field_offset, tap_start,
                    tap_offset, tap_weight, pair_start, pair_a, pair_b, out):
    means = np.empty(np.max(np.diff(field_start)), dtype=x.dtype)
    m = out.shape[1]
    for s in range(site_base.shape[0]):
        p = site_pattern[s]
        base = site_base[s]
        _site_means(x, filtered, base, field_start[p], field_start[p + 1], field_group, field_offset,
                    tap_start, tap_offset, tap_weight, means)
        i0 = pair_start[p]
        for i in range(m):
            out[s, i] = means[pair_a[i0 + i]] - means[pair_b[i0 + i]]


@numba.njit(cache=True, nogil=True)
def _adjoint_kernel(y, site_base, site_pattern, field_start, field_group, field_offset, tap_start,
                    tap_offset, tap_weight, pair_start, pair_a, pair_b, out_x, out_filtered):
    grads = np.zeros(np.max(np.diff(field_start)), dtype=out_x.dtype)
    m = y.shape[1]
    for s in range(site_base.shape[0]):
        p = site_pattern[s]
        i0 = pair_start[p]
        for i in range(m):
            v = y[s, i]
            grads[pair_a[i0 + i]] += v
            grads[pair_b[i0 + i]] -= v
        _scatter_means(grads, out_x, out_filtered, site_base[s], field_start[p], field_start[p + 1],
                       field_group, field_offset, tap_start, tap_offset, tap_weight)


@numba.njit(cache=True, nogil=True)
def _binary_kernel(x, filtered, bits, tie, atol, site_base, site_pattern, field_start, field_group,
                   field_offset, tap_start, tap_offset, tap_weight, pair_start, pair_a, pair_b, m,
                   out_x, out_filtered):
    size = np.max(np.diff(field_start))
    means = np.empty(size, dtype=x.dtype)
    grads = np.zeros(size, dtype=x.dtype)
    mismatches = 0
    for s in range(site_base.shape[0]):
        p = site_pattern[s]
        base = site_base[s]
        f0 = field_start[p]
        f1 = field_start[p + 1]
        _site_means(x, filtered, base, f0, f1, field_group, field_offset, tap_start, tap_offset,
                    tap_weight, means)
        i0 = pair_start[p]
        any_wrong = False
        for i in range(m):
            a = pair_a[i0 + i]
            b = pair_b[i0 + i]
            v = means[a] - means[b]
            sign = 1 if v > atol else (-1 if v < -atol else tie)
            bit = 2 * ((bits[s, i >> 3] >> (i & 7)) & 1) - 1
            if sign != bit:
                grads[a] += bit
                grads[b] -= bit
                mismatches += 1
                any_wrong = True
        if any_wrong:
            _scatter_means(grads, out_x, out_filtered, base, f0, f1, field_group, field_offset,
                           tap_start, tap_offset, tap_weight)
    return mismatches


def _stencil(row, patch_size):
    """A CSR row of a field kernel as (anchor row, anchor col, dense stencil)."""
    rows, cols = np.divmod(row.indices, patch_size)
    r0, c0 = rows.min(), cols.min()
    stencil = np.zeros((rows.max() - r0 + 1, cols.max() - c0 + 1))
    stencil[rows - r0, cols - c0] = row.data
    return int(r0), int(c0), stencil


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
        unique, site_pattern = self._index_patterns(patterns, len(sites))
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
    @staticmethod
    def _index_patterns(patterns, n_sites):
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

    def _build_tables(self, backend):
        height, width = self._shape2d
        n_pixels = height * width
        site_counts = np.bincount(self.site_pattern, minlength=len(self.patterns))
        fields = []  # (pattern index, anchor r, anchor c, stencil, key)
        reads = {}
        for p, pattern in enumerate(self.patterns):
            matrix = field_kernels(pattern, self.kernel or pattern.kernel).tocsr()
            matrix.sort_indices()
            for f in range(pattern.n_fields):
                r0, c0, stencil = _stencil(matrix[f], pattern.patch_size)
                key = (stencil.shape, np.round(stencil * 1e9).astype(np.int64).tobytes())
                reads[key] = reads.get(key, 0) + int(site_counts[p])
                fields.append((p, r0, c0, stencil, key))
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
            np.cumsum([0] + [p.n_fields for p in self.patterns]).astype(np.int64),
            np.array(field_group, dtype=np.int64),
            np.array(field_offset, dtype=np.int64),
            np.array(tap_start, dtype=np.int64),
            np.array(tap_offset, dtype=np.int64),
            np.array(tap_weight, dtype=dtype),
            np.cumsum([0] + [p.m for p in self.patterns]).astype(np.int64),
            np.concatenate([p.pairs[:, 0] for p in self.patterns]).astype(np.int64),
            np.concatenate([p.pairs[:, 1] for p in self.patterns]).astype(np.int64),
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

    def forward(self, x):
        """Measurements of every site, ``A x``.

        Parameters
        ----------
        x : array_like, shape (..., H, W)

        Returns
        -------
        ndarray, shape (..., S, M)
        """
        x = self._as_image(x, "x")
        lead = x.shape[:-2]
        images = x.reshape(-1, *self._shape2d)
        out = np.empty((len(images), len(self.sites), self.m), dtype=self.dtype)
        for index, image in enumerate(images):
            image = np.ascontiguousarray(image)
            _forward_kernel(image.ravel(), self._filter(image), self._site_base, self.site_pattern,
                            *self._tables, out[index])
        return out.reshape(*lead, len(self.sites), self.m)

    def adjoint(self, y):
        """Back-projection ``A^T y``: each site's ``L^T y_s`` added at its place.

        Parameters
        ----------
        y : array_like, shape (..., S, M)

        Returns
        -------
        ndarray, shape (..., H, W)
        """
        y = np.asarray(y)
        if y.shape[-2:] != self.range_shape or y.ndim < 2:
            raise ValueError(f"y must have shape (..., {len(self.sites)}, {self.m}), got {y.shape}")
        lead = y.shape[:-2]
        batches = y.astype(self.dtype, copy=False).reshape(-1, *self.range_shape)
        out = np.zeros((len(batches), self._shape2d[0] * self._shape2d[1]), dtype=self.dtype)
        for index, batch in enumerate(batches):
            planes = self._new_planes()
            _adjoint_kernel(np.ascontiguousarray(batch), self._site_base, self.site_pattern, *self._tables,
                            out[index], planes)
            self._unfilter(planes, out[index])
        return out.reshape(*lead, *self._shape2d)

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
        out = np.zeros(image.size, dtype=self.dtype)
        planes = self._new_planes()
        tie = 1 if self.tie_positive else -1
        mismatches = _binary_kernel(image.ravel(), self._filter(image), packed_bits, tie, TIE_ATOL,
                                    self._site_base, self.site_pattern, *self._tables, self.m, out, planes)
        self._unfilter(planes, out)
        return out.reshape(self._shape2d), int(mismatches)

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
