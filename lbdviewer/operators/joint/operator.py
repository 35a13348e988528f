r"""The joint whole-image operator: every site's descriptor from one image.

For an image ``x`` (H x W) and sites ``s = 1..S`` (top-left pixel ``c_s`` and
pattern ``p_s``), the joint operator is

.. math::  (\mathcal A x)_{s,i} = (L_{p_s} E_s x)_i,

where ``E_s`` extracts the patch at ``c_s`` and ``L_p`` is the patch operator
of pattern ``p`` (:class:`lbdviewer.operators.descriptor.DescriptorOperator`); the
adjoint scatters ``L_p^T y_s`` back to the sites and sums where they overlap.
Reconstructing all descriptors at once with this operator (the *joint* mode)
lets overlapping patches agree on one image instead of being averaged.

Fast evaluation uses ``L = D K`` (pairs times field kernels): only field means
are computed, never patches. A field kernel is a small dense stencil anchored
in the patch; fields whose stencil is read many times over the image are
*filtered*: one correlation of the whole image with the stencil sampled at
shifted positions, ``mean_f(s) = (k_f \star x)[c_s + a_f]`` (BRIEF: one 3x3
Gaussian shared by all 1024 fields, OpenCV ``filter2D``; FREAK's boxes: all
from one integral image, O(1) a pixel whatever their size); the others are
*direct*: a loop over their taps at each site, boxes larger than 2x2 read as
the four corners of their box in the integral image (FREAK at offset 8:
4 reads a field and site instead of a plane of the whole image per box
size, 1.5x faster an evaluation). Measurements are differences
of two field means; identical fields of a pattern (BRIEF repeats ~40 % of its
1024 points) are read once. Nothing of size ``S x N`` is formed.

The kernels run over *blocks* of up to ``BLOCK_SITES`` consecutive sites with
one pattern (a stretch of a grid row), the site as the inner, vectorised
index: the block's field means ``(F, B)`` are gathered (consecutive values:
the planes are stored polyphase with the grid's spacing, see
:func:`lbdviewer.operators.joint._kernels._plane_index`), every test then runs over the
block at once, and gradients go back the same way. The data terms of BIHT
(:meth:`JointOperator.binary_gradient`) and of the sign-consistency solver
(:meth:`JointOperator.squared_hinge`) are fused with their back-projection
and read the bits packed, 8 a byte, so memory is ``O(HW + S M / 8)``; where
all of a block's fields are filtered (BRIEF), they read the planes and add to
their adjoints in place, with nothing gathered or scattered. Block
ranges run in parallel, the first in the calling thread and the others in
the solvers' shared pool (``nogil`` kernels, :func:`lbdviewer._runtime.parallel.map_parallel`);
each range back-projects into its own image.

Sites may carry their own patterns (rotated or scaled keypoint patterns,
different patch sizes); all patterns must have the same number of
measurements ``M``.

Bits are ``sign(A x - t)``: every pattern brings its thresholds (BEBLID and
TEBLID learn one a test; the others have 0), kept as one table
:attr:`JointOperator.thresholds` of shape ``(len(patterns), M)``. ``A``
itself stays linear; the data terms compare ``A x - t`` with the bits. The
fused kernels fold a test's threshold into its comparison and its margins
(scalars a test and block), so thresholds cost no work a site.
"""

from __future__ import annotations

import cv2
import numba
import numpy as np

from lbdviewer._validation import check_choice
from lbdviewer.operators.joint._kernels import (
    _adjoint_blocks, _bits_blocks, _block_words, _box_corners, _box_planes, _correlate_phased,
    _correlate_phased_adjoint, _forward_blocks, _integral_adjoint, _reorder_phases)
from lbdviewer.operators.joint._likelihood_kernels import _likelihood_blocks
from lbdviewer.operators.joint._tables import build_tables
from lbdviewer.operators.joint.site_patterns import index_patterns, pair_directions
from lbdviewer.operators.linear import power_norm
from lbdviewer._runtime.parallel import map_parallel

JOINT_BACKENDS = ("auto", "direct", "filtered")
PARALLEL_MIN_SITES = 64  # fewer sites run in the calling thread
TIE_ATOL = 0.5 / 255  # half an 8-bit grey level: smaller differences are invisible in the output
SMALL_STENCIL = 25  # stencils of at most this many weights are filtered by compiled row sweeps, larger ones by OpenCV


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
        ``FILTER_READS_PER_PIXEL`` times per pixel (a box: when reading its
        taps directly would touch more values than the image has pixels),
        else reads taps directly; the other two force one way (for tests).
    dtype : numpy dtype
        Working precision (float32 or float64).

    Attributes
    ----------
    thresholds : ndarray, shape (len(patterns), M)
        Thresholds ``t`` of each test of each pattern (rows in the order of
        :attr:`patterns`, in ``dtype``): bits are ``sign(A x - t)``.
    thresholded : bool
        Whether any threshold is non-zero.
    shape : (int, int)
        ``(S * M, H * W)``, the matrix shape.
    domain_shape : (int, int)
        ``(H, W)``.
    range_shape : (int, int)
        ``(S, M)``: what :meth:`forward` returns (for one image).

    Examples
    --------
    >>> from lbdviewer.patterns import make_pattern
    >>> from lbdviewer.operators.descriptor import DescriptorOperator
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
        check_choice("backend", backend, JOINT_BACKENDS)
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
        self.thresholds = np.ascontiguousarray([p.thresholds for p in unique], dtype=self.dtype)
        self.thresholded = bool(np.any(self.thresholds != 0))
        self.kernel = kernel
        tables = build_tables(shape, sites, self.patterns, site_pattern, kernel=kernel, backend=backend,
                              dtype=self.dtype)
        self._stencils, self._boxes, self._tables = tables.stencils, tables.boxes, tables.kernel_tables
        self._site_base, self._integral_base = tables.site_base, tables.integral_base
        self._uses_integral, self._layout = tables.uses_integral, tables.layout
        self._block_start, self._block_stride = tables.block_start, tables.block_stride
        self.test_directions = pair_directions(self.patterns, self.dtype)
        self._neutral_orientation = np.zeros((7, 1), dtype=self.dtype)  # never read: ``oriented`` off
        self._orientation_table = (None, None)  # (the last orientation passed, its kernel table)
        self._norm = None
        self._ranges = (None, [])  # the last _chunks: ((threads, PARALLEL_MIN_SITES), block ranges)

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
        """Number of distinct stencils evaluated by filtering the whole image (boxes included)."""
        return len(self._stencils) + len(self._boxes)

    def __repr__(self):
        return (f"JointOperator(shape={self._shape2d}, sites={len(self.sites)}, m={self.m}, "
                f"patterns={len(self.patterns)}, filters={self.n_filters})")

    def site_thresholds(self):
        """Thresholds of every site's tests, ``(S, M)``: rows of :attr:`thresholds` by site.

        Examples
        --------
        >>> from lbdviewer.patterns import make_pattern
        >>> op = JointOperator((8, 9), [[0, 0], [0, 1]], make_pattern("brief", patch_size=8, m=3))
        >>> op.site_thresholds().shape, bool(op.thresholded)
        ((2, 3), False)
        """
        return self.thresholds[self.site_pattern]

    def margins(self, x):
        """``A x - t`` of every site: images ``(..., H, W)`` to ``(..., S, M)``; their signs are the bits."""
        values = self.forward(x)
        return values - self.site_thresholds() if self.thresholded else values

    # -- kernels --------------------------------------------------------
    def _filter(self, image):
        """The image correlated with every filtered stencil, one flat plane each, and its flat integral image.

        Box planes are computed from the integral image, which boxes marked
        ``INTEGRAL`` also read (a 1-element stand-in when nothing does).
        """
        n_stencils = len(self._stencils)
        # OpenCV's integral image (float64, (H + 1) x (W + 1)): 1.5x faster than a compiled loop at 512 x 512
        integral = cv2.integral(image, sdepth=cv2.CV_64F) if self._uses_integral else np.zeros((1, 1))
        if n_stencils + len(self._boxes) == 0:
            return self._new_planes(), integral.ravel()
        size = self._shape2d[0] * int(self._layout[1] * self._layout[2])
        planes = np.empty((n_stencils + len(self._boxes), size), dtype=self.dtype)
        for k, stencil in enumerate(self._stencils):
            # In the calling thread: handing half of it to another thread costs about what it saves.
            if stencil.size <= SMALL_STENCIL:
                _correlate_phased(image, stencil, self._layout, planes[k])
            else:
                plane = cv2.filter2D(image, -1, stencil, anchor=(0, 0), borderType=cv2.BORDER_CONSTANT)
                planes[k:k + 1] = self._to_phases(plane.reshape(1, -1))
        if len(self._boxes):
            # Not zeroed: box planes leave out only positions that no field reads.
            boxes, split = np.empty((len(self._boxes), image.size), dtype=self.dtype), (len(self._boxes) + 1) // 2
            halves = (slice(0, split), slice(split, None))  # two halves in parallel, written in place
            map_parallel(lambda half: _box_planes(integral, self._boxes[half], boxes[half]), halves)
            planes[n_stencils:] = self._to_phases(boxes)
        return planes, integral.ravel()


    def _to_phases(self, planes):
        """Row-major planes ``(n, H W)`` in the polyphase layout of :func:`_plane_index` (unchanged if ``P = 1``)."""
        if self._layout[1] == 1:
            return planes
        out = np.empty((len(planes), self._shape2d[0] * self._layout[1] * self._layout[2]), dtype=self.dtype)
        _reorder_phases(planes, out, self._layout, True)
        return out

    def _from_phases(self, planes):
        """Inverse of :meth:`_to_phases` (the padding columns are dropped)."""
        if self._layout[1] == 1:
            return planes
        out = np.empty((len(planes), self._shape2d[0] * self._shape2d[1]), dtype=self.dtype)
        _reorder_phases(out, planes, self._layout, False)
        return out

    def _unfilter(self, out_filtered, out_corners, out_x, rows):
        """Add the adjoint of :meth:`_filter` applied to the planes and integral-image corners to the flat ``out_x``.

        ``rows``: ``(first, stop)``, the rows outside which the planes are
        zero and the corners' boxes lie.
        """
        n_stencils = len(self._stencils)
        for k, stencil in enumerate(self._stencils):
            if stencil.size <= SMALL_STENCIL:
                _correlate_phased_adjoint(out_filtered[k], stencil, self._layout, *rows, out_x)
                continue
            h, w = stencil.shape
            plane = self._from_phases(out_filtered[k:k + 1]).reshape(self._shape2d)
            out_x += cv2.filter2D(plane, -1, np.ascontiguousarray(stencil[::-1, ::-1]), anchor=(w - 1, h - 1),
                                  borderType=cv2.BORDER_CONSTANT).ravel()
        if self._uses_integral:
            corners = out_corners.reshape(self._shape2d[0] + 1, self._shape2d[1] + 1)
            if len(self._boxes):
                _box_corners(self._from_phases(out_filtered[n_stencils:]), self._boxes, self._shape2d[1], *rows,
                             corners)
            _integral_adjoint(corners, *rows, out_x)

    def _new_planes(self):
        """Zeroed planes in the kernels' layout (one 1-element stand-in when there are none)."""
        n_planes = len(self._stencils) + len(self._boxes)
        size = self._shape2d[0] * int(self._layout[1] * self._layout[2])
        return np.zeros((max(n_planes, 1), size if n_planes else 1), dtype=self.dtype)

    def _new_corners(self):
        """Zeroed flat ``(H + 1) x (W + 1)`` float64 corners of the integral image (1 element when unused)."""
        return np.zeros((self._shape2d[0] + 1) * (self._shape2d[1] + 1) if self._uses_integral else 1)

    def _as_image(self, x, name):
        x = np.asarray(x)
        if x.shape[-2:] != self._shape2d or x.ndim < 2:
            raise ValueError(f"{name} must have shape (..., {self._shape2d[0]}, {self._shape2d[1]}), got {x.shape}")
        return x.astype(self.dtype, copy=False)

    def _chunks(self):
        """Block ranges ``(index, lo, hi)`` run in parallel: one a thread, each ``PARALLEL_MIN_SITES`` sites or more."""
        n_threads = numba.get_num_threads()
        if self._ranges[0] != (n_threads, PARALLEL_MIN_SITES):
            n_sites = len(self.sites)
            n_chunks = min(n_threads, max(1, n_sites // PARALLEL_MIN_SITES))
            bounds = np.unique(np.searchsorted(self._block_start,
                                               np.linspace(0, n_sites, n_chunks + 1).astype(np.int64)))
            self._ranges = ((n_threads, PARALLEL_MIN_SITES),
                            [(index, int(lo), int(hi)) for index, (lo, hi) in enumerate(zip(bounds[:-1], bounds[1:]))])
        return self._ranges[1]

    def _run_blocks(self, chunk):
        """``[chunk(index, lo, hi)]`` over the block ranges, all but the first in the pool (:func:`map_parallel`)."""
        return map_parallel(lambda task: chunk(*task), self._chunks())

    def _back_project(self, kernel, *args):
        """Run ``kernel(*args, <blocks>, lo, hi, <tables>, out_x, out_planes)`` over the block ranges.

        Each range adds into its own image and filter planes and correlates
        its planes back itself, in its thread, over the rows its patches
        cover; the images are then summed. Returns the image (flat) and the
        kernel's results, one per range.
        """
        def back_project_range(index, lo, hi):
            out, planes = np.zeros(self._shape2d[0] * self._shape2d[1], dtype=self.dtype), self._new_planes()
            corners = self._new_corners()
            result = kernel(*args, self._block_start, self._block_stride, lo, hi, self._site_base,
                            self._integral_base, self._layout, self.site_pattern, *self._tables, out, planes, corners)
            first, stop = self._block_start[lo], self._block_start[hi]
            tops = self.sites[first:stop, 0]
            self._unfilter(planes, corners, out, (int(tops.min()), int((tops + self.patch_sizes[first:stop]).max())))
            return out, result

        pieces = self._run_blocks(back_project_range)
        out = pieces[0][0]
        for other, _ in pieces[1:]:
            out += other
        return out, [result for _, result in pieces]

    def forward(self, x):
        """Measurements of every site, ``A x``: images ``(..., H, W)`` to ``(..., S, M)``."""
        x = self._as_image(x, "x")
        images = x.reshape(-1, *self._shape2d)
        out = np.empty((len(images), len(self.sites), self.m), dtype=self.dtype)
        for image, values in zip(images, out):
            image = np.ascontiguousarray(image)
            flat, (filtered, integral) = image.ravel(), self._filter(image)
            self._run_blocks(lambda index, lo, hi: _forward_blocks(
                flat, filtered, integral, self._block_start, self._block_stride, lo, hi, self._site_base,
                self._integral_base, self._layout, self.site_pattern, *self._tables, values))
        return out.reshape(*x.shape[:-2], len(self.sites), self.m)

    def adjoint(self, y):
        """Back-projection ``A^T y``, ``(..., S, M)`` to images ``(..., H, W)``.

        Each site's ``L^T y_s`` is added at its place; overlaps sum.
        """
        y = np.asarray(y)
        if y.shape[-2:] != self.range_shape or y.ndim < 2:
            raise ValueError(f"y must have shape (..., {len(self.sites)}, {self.m}), got {y.shape}")
        batches = y.astype(self.dtype, copy=False).reshape(-1, *self.range_shape)
        out = np.stack([self._back_project(_adjoint_blocks, np.ascontiguousarray(batch))[0]
                        for batch in batches])
        return out.reshape(*y.shape[:-2], *self._shape2d)

    def binary_gradient(self, x, packed_bits):
        """Back-projected bit errors ``A^T (b - sign(A x - t)) / 2`` and their count, fused.

        Parameters
        ----------
        x : array_like, shape (H, W)
            Current estimate.
        packed_bits : ndarray of uint8, shape (S, ceil(M / 8))
            Target bits, packed least-significant first (:func:`lbdviewer.bits.pack_bits`).

        Returns
        -------
        gradient : ndarray, shape (H, W)
        mismatches : int
            Number of bits of ``sign(A x - t)`` that differ from the target.

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
        words = _block_words(np.ascontiguousarray(packed_bits), self._block_start, self.m)
        out, results = self._back_project(_bits_blocks, image.ravel(), *self._filter(image), words,
                                          np.zeros((len(self.patterns), self.m), dtype=self.dtype), self.thresholds,
                                          False, False, self._neutral_orientation, self.test_directions,
                                          False, self.tie_positive, self.dtype.type(TIE_ATOL), self.m)
        agree = sum(r[1] for r in results)
        return out.reshape(self._shape2d), int(len(self.sites) * self.m - agree)

    def block_bits(self, positive):
        """Target bits in the layout of the kernels: one 64-bit word per block of sites and test.

        Parameters
        ----------
        positive : ndarray of bool, shape (S, M), or of uint8, shape (S, ceil(M / 8))
            Bits (True = +1), or the same packed least-significant first.

        Returns
        -------
        ndarray of uint64, shape (blocks, M)
            For :meth:`squared_hinge`; as large as the packed bits.

        Examples
        --------
        >>> from lbdviewer.patterns import make_pattern
        >>> op = JointOperator((8, 9), [[0, 0], [0, 1]], make_pattern("brief", patch_size=8, m=3))
        >>> op.block_bits(np.array([[True, False, True], [False, False, True]])).tolist()
        [[1, 0, 3]]
        """
        packed_shape = (len(self.sites), (self.m + 7) // 8)
        if positive.dtype == np.uint8 and positive.shape == packed_shape:
            packed = np.ascontiguousarray(positive)
        elif positive.dtype == bool and positive.shape == self.range_shape:
            packed = np.packbits(positive, axis=1, bitorder="little")
        else:
            raise ValueError(f"positive must be bool {self.range_shape} or uint8 {packed_shape}, "
                             f"got {positive.dtype} {positive.shape}")
        return _block_words(packed, self._block_start, self.m)

    def squared_hinge(self, x, positive, margin, *, orientation=None, atol=TIE_ATOL):
        r"""Squared hinge of the bits, its gradient and the bits reproduced, in one pass.

        With :math:`s_{si} = \pm 1` the target bits, :math:`t` the thresholds
        and :math:`\delta_{si}` the margins (``margin`` of the site's pattern
        on the strict side of the test, 0 on the side that takes ties),

        .. math::  h(x) = \sum_{s,i} \big[\delta_{si} - s_{si} (A x - t)_{si}\big]_+^2, \qquad
                   \nabla h = A^T\big(-2\, s \odot [\delta - s \odot (A x - t)]_+\big).

        With an ``orientation`` :math:`(c_s, g_s)` the margin of test :math:`i`
        at site :math:`s` is scaled by :math:`c_s + (g_s \cdot u_i)^2`, with
        :math:`u_i` the unit vector between the test's two fields
        (:attr:`test_directions`): a test across the direction :math:`g_s` is
        asked less than one along it (see
        :func:`lbdviewer.solvers.image.orientation.ramp_orientation`). A third
        array :math:`e_s \in [0, 1]` asks the side that takes ties for
        :math:`e_s` of the margin too (default 0; a bit of that side is a
        strict sign where the bits show no flat region,
        :func:`lbdviewer.solvers.image.orientation.tie_side`); a fourth and
        fifth, :math:`(w_s, r_s)`, ask a test whose bit :math:`\operatorname{sign}(r_s \cdot u_i)`
        predicts for :math:`1 - w_s` of it (:mod:`lbdviewer.solvers.image.large_scales`).

        Parameters
        ----------
        x : array_like, shape (H, W)
            Current estimate.
        positive : ndarray of bool, shape (S, M), or of uint8, shape (S, ceil(M / 8))
            Target bits (True = +1), or the same packed least-significant
            first (:func:`lbdviewer.bits.pack_bits` of the ±1 bits),
            or in the kernels' own layout (:meth:`block_bits`, uint64): the
            one to pass when the same bits are evaluated many times.
        margin : float or array_like, shape (len(patterns), M)
            Margin of each test of each pattern (rows in the order of
            :attr:`patterns`), asked of strict tests only: memory stays
            ``O(M)`` per pattern, not per site.
        orientation : tuple of ndarray, optional
            ``(scale, direction[, tie_side[, ramp, ramp_direction]])``, shapes ``(S,)``, ``(S, 2)``,
            ``(S,)``, ``(S,)``, ``(S, 2)``: :math:`c_s, g_s, e_s, w_s, r_s` (row, column) of every site.
        atol : float
            Tie tolerance of the bit count: :math:`|(Ax - t)_{si}| \le` ``atol`` is a tie.

        Returns
        -------
        value : float
            :math:`h(x)`, accumulated in float64.
        gradient : ndarray, shape (H, W)
        agree : int
            Number of bits of ``sign(A x - t)`` (ties per the patterns) equal to the target.

        Examples
        --------
        >>> from lbdviewer.patterns import make_pattern
        >>> op = JointOperator((8, 8), [[0, 0]], make_pattern("brief", patch_size=8, m=16))
        >>> value, gradient, agree = op.squared_hinge(np.full((8, 8), 0.5), np.ones((1, 16), bool), 0.5)
        >>> round(value, 6), gradient.shape, agree
        (4.0, (8, 8), 0)
        """
        image = np.ascontiguousarray(self._as_image(x, "x"))
        words = positive if positive.dtype == np.uint64 else self.block_bits(positive)
        if words.shape != (len(self._block_start) - 1, self.m):
            raise ValueError(f"positive must be uint64 {(len(self._block_start) - 1, self.m)} from block_bits, "
                             f"got {positive.dtype} {positive.shape}")
        table_shape = (len(self.patterns), self.m)
        margin = np.asarray(margin, dtype=self.dtype)
        if margin.ndim == 0:
            margin = np.full(table_shape, margin, dtype=self.dtype)
        if margin.shape != table_shape:
            raise ValueError(f"margin must be a number or have shape {table_shape}, got {margin.shape}")
        terms, ramped = self._orientation_terms(orientation)
        out, results = self._back_project(
            _bits_blocks, image.ravel(), *self._filter(image), words, np.ascontiguousarray(margin), self.thresholds,
            orientation is not None, ramped, terms, self.test_directions, True, self.tie_positive,
            self.dtype.type(atol), self.m)
        return (float(sum(r[0] for r in results)), out.reshape(self._shape2d),
                int(sum(r[1] for r in results)))

    def _orientation_terms(self, orientation):
        """``orientation`` as the kernels' ``(7, S)`` table and whether it holds ramps, checked (None: a dummy).

        The table of the last orientation object is kept: a solver passes the
        same one at every evaluation.
        """
        if orientation is None:
            return self._neutral_orientation, False
        if self._orientation_table[0] is orientation:
            return self._orientation_table[1]
        n_sites = len(self.sites)
        if len(orientation) not in (2, 3, 5):
            raise ValueError(f"orientation must be (scale, direction[, tie_side[, ramp, ramp_direction]]), got "
                             f"{len(orientation)} arrays")
        defaults = (None, None, np.zeros(n_sites), np.zeros(n_sites), np.zeros((n_sites, 2)))
        parts = [np.asarray(v, dtype=self.dtype) for v in (*orientation, *defaults[len(orientation):])]
        shapes = tuple(part.shape for part in parts)
        if shapes != ((n_sites,), (n_sites, 2), (n_sites,), (n_sites,), (n_sites, 2)):
            raise ValueError(f"orientation must be (scale, direction[, tie_side[, ramp, ramp_direction]]) of shapes "
                             f"({n_sites},), ({n_sites}, 2), ({n_sites},), ({n_sites},), ({n_sites}, 2), got "
                             f"{shapes[:len(orientation)]}")
        scale, direction, tie_side, ramp, ramp_direction = parts
        if not all(np.all(np.isfinite(part)) for part in parts) or not np.all(scale >= 0):
            raise ValueError("orientation must be finite with a non-negative scale")
        for name, values in (("tie_side", tie_side), ("ramp", ramp)):
            if not np.all((values >= 0) & (values <= 1)):
                raise ValueError(f"orientation's {name} must lie in [0, 1]")
        table = np.ascontiguousarray(np.vstack([scale[None], direction.T, tie_side[None], ramp[None], ramp_direction.T]))
        self._orientation_table = (orientation, (table, bool(np.any(ramp > 0))))
        return self._orientation_table[1]

    def bit_likelihood(self, x, words, keep_words, margin, inverse_noise, *, hinge_weight=0.0, logistic_weight=1.0,
                       atol=TIE_ATOL):
        r"""Noisy-bit loss of the bits, its gradient and the bits reproduced, in one pass.

        With :math:`b` the target signs, :math:`t` the thresholds,
        :math:`z = b \odot (A x - t) / \sigma`, :math:`\delta` the margins on
        the strict side and :math:`K` the tests kept,

        .. math::  \ell(x) = \sum_{(s,i) \in K} \Big(\lambda_\ell \tfrac12\big(\sqrt{1 + z_{si}^2} - z_{si}\big)
                   + \lambda_h \big[\delta_{si} - b_{si} (A x - t)_{si}\big]_+^2\Big).

        Parameters
        ----------
        x : array_like, shape (H, W)
        words, keep_words : ndarray of uint64
            Target bits and the mask of tests kept, from :meth:`block_bits`.
        margin, inverse_noise : ndarray, shape (len(patterns), M)
            :math:`\delta` and :math:`1 / \sigma` of each test of each pattern.
        hinge_weight, logistic_weight : float
            :math:`\lambda_h`, :math:`\lambda_\ell`.
        atol : float
            Tie tolerance of the bit count.

        Returns
        -------
        value : float
        gradient : ndarray, shape (H, W)
        agree : int
            Bits of ``sign(A x - t)`` (ties per the patterns) equal to the target.

        Examples
        --------
        >>> from lbdviewer.patterns import make_pattern
        >>> op = JointOperator((8, 8), [[0, 0]], make_pattern("brief", patch_size=8, m=16))
        >>> ones = np.ones((1, 16), np.float32)
        >>> value, gradient, agree = op.bit_likelihood(np.full((8, 8), 0.5), op.block_bits(np.ones((1, 16), bool)),
        ...                                            op.block_bits(np.ones((1, 16), bool)), ones, ones)
        >>> round(value, 6), gradient.shape, agree          # z = 0: each test costs 1/2
        (8.0, (8, 8), 0)
        """
        image = np.ascontiguousarray(self._as_image(x, "x"))
        blocks = (len(self._block_start) - 1, self.m)
        expected = {"words": blocks, "keep_words": blocks,
                    "margin": (len(self.patterns), self.m), "inverse_noise": (len(self.patterns), self.m)}
        arrays = {"words": words, "keep_words": keep_words, "margin": margin, "inverse_noise": inverse_noise}
        for name, array in arrays.items():
            if np.shape(array) != expected[name] or (name.endswith("words") and array.dtype != np.uint64):
                raise ValueError(f"{name} must have shape {expected[name]}, got {np.shape(array)}")
        tables = [np.ascontiguousarray(arrays[name], dtype=self.dtype) for name in ("margin", "inverse_noise")]
        out, results = self._back_project(
            _likelihood_blocks, image.ravel(), *self._filter(image), words, keep_words, *tables, self.thresholds,
            float(hinge_weight),
            float(logistic_weight), self.tie_positive, self.dtype.type(atol), self.m)
        return (float(sum(r[0] for r in results)), out.reshape(self._shape2d),
                int(sum(r[1] for r in results)))

    def norm_estimate(self, *, iterations=30, rng=0):
        """Spectral norm ``||A||_2`` by the power method (:func:`lbdviewer.operators.linear.power_norm`; cached after the first call)."""
        if self._norm is None:
            self._norm = power_norm(self.forward, self.adjoint, self._shape2d, iterations=iterations, rng=rng,
                                    dtype=self.dtype)
        return self._norm


def site_subset(operator, rows):
    """The :class:`JointOperator` of ``operator``'s sites ``rows`` (a boolean mask or indices), patterns kept.

    Examples
    --------
    >>> from lbdviewer.patterns import make_pattern
    >>> op = JointOperator((16, 24), [[0, 0], [0, 8]], make_pattern("brief", patch_size=16, m=64))
    >>> site_subset(op, np.array([False, True])).sites.tolist()
    [[0, 8]]
    """
    unique = operator.patterns
    patterns = unique[0] if len(unique) == 1 else [unique[i] for i in operator.site_pattern[rows]]
    return JointOperator(operator.domain_shape, operator.sites[rows], patterns)
