r"""Keypoints described on pyramid levels, as one linear operator of the level-0 image.

ORB describes a keypoint of octave ``l`` on level ``l`` of an image pyramid
whose levels are each resized from the previous one (bilinear,
``cv2.resize``) and read with reflect-101 padding. All fields of all its
keypoints are then one 7x7 Gaussian anchored at integer pixels of a level.
Rather than map every field to level 0 (where each becomes a wide Gaussian at
a fractional position, ``(2 r s + 1)^2`` pixels read per field at scale
``s``), the joint operator is composed with the pyramid itself:

.. math::  \mathcal A_{\mathrm{pyr}}\, x = \mathcal A\,(P\,x), \qquad
           \mathcal A_{\mathrm{pyr}}^T\, y = P^T \mathcal A^T y,

where :math:`P` (:class:`LevelAtlas`) builds every used level from the
level-0 image ``x``, pads each with reflect-101 as far as its patches reach
and stacks them into one *atlas* image, and :math:`\mathcal A` is the
:class:`lbdviewer.operators.joint.operator.JointOperator` of the level patterns on the atlas:
every field a read of one shared filtered plane. A level ``l`` is
:math:`Y_l\, x\, X_l^T` with :math:`Y_l, X_l` the products of the 1-D
resizing matrices (:func:`resize_matrix`) and the padding
(:func:`reflect_matrix`): separable, sparse, a few non-zeros a row.
"""

from __future__ import annotations

import cv2
import numpy as np
from scipy import sparse

from lbdviewer.operators import _pyramid_kernels as kernels
from lbdviewer.operators.joint.site_patterns import index_patterns
from lbdviewer.operators.joint.operator import TIE_ATOL
from lbdviewer.operators.descriptor import field_entries
from lbdviewer.patterns.base import Pattern
from lbdviewer._runtime.parallel import map_parallel


def resize_matrix(n_source, n_target):
    """The 1-D linear interpolation of ``cv2.resize(..., INTER_LINEAR)`` from ``n_source`` to ``n_target`` samples.

    Target sample ``d`` reads the source at ``(d + 1/2) n_source / n_target - 1/2``
    (pixel centres aligned), clamped to the first and last sample.

    Returns
    -------
    scipy.sparse.csr_matrix, shape (n_target, n_source)

    Examples
    --------
    >>> resize_matrix(4, 2).toarray().tolist()
    [[0.5, 0.5, 0.0, 0.0], [0.0, 0.0, 0.5, 0.5]]
    """
    if n_source < 1 or n_target < 1:
        raise ValueError(f"sizes must be positive, got {n_source} -> {n_target}")
    position = ((np.arange(n_target) + 0.5) * (n_source / n_target) - 0.5).astype(np.float32).astype(np.float64)
    left = np.floor(position).astype(np.int64)
    weight = position - left
    low, high = left < 0, left >= n_source - 1
    weight[low | high] = 0.0
    left = np.clip(left, 0, n_source - 1)
    right = np.minimum(left + 1, n_source - 1)
    rows = np.repeat(np.arange(n_target), 2)
    cols = np.column_stack([left, right]).ravel()
    values = np.column_stack([1.0 - weight, weight]).ravel()
    return sparse.csr_matrix((values, (rows, cols)), shape=(n_target, n_source))


def reflect_matrix(n, pad):
    """Padding by ``pad`` samples on both sides with reflect-101 (``cv2.BORDER_REFLECT_101``).

    Returns
    -------
    scipy.sparse.csr_matrix, shape (n + 2 pad, n)

    Examples
    --------
    >>> (reflect_matrix(3, 2) @ np.array([1.0, 2.0, 3.0])).tolist()
    [3.0, 2.0, 1.0, 2.0, 3.0, 2.0, 1.0]
    """
    index = np.arange(-pad, n + pad)
    if n == 1:
        index[:] = 0
    period = 2 * (n - 1) if n > 1 else 1
    index = np.abs(index) % period
    index = np.where(index >= n, period - index, index)
    return sparse.csr_matrix((np.ones(len(index)), (np.arange(len(index)), index)), shape=(len(index), n))


def _taps(n_source, n_target):
    """:func:`resize_matrix` as the kernels read it: ``(n_target, 3)`` rows ``(first, second, weight of second)``."""
    matrix = resize_matrix(n_source, n_target)
    cols = matrix.indices.reshape(-1, 2).astype(np.float64)
    return np.column_stack([cols, matrix.data.reshape(-1, 2)[:, 1]])


def _reflect_index(n, pad):
    return reflect_matrix(n, pad).indices.astype(np.int64)


class LevelAtlas:
    r"""The linear map :math:`P`: a level-0 image to its padded pyramid levels stacked into one image.

    Parameters
    ----------
    shape : (int, int)
        Level-0 image ``(H, W)``.
    level_shapes : sequence of (int, int)
        Shape of every level ``0..L``, each resized from the previous one
        (:func:`resize_matrix` along each axis).
    levels : sequence of int
        The levels to place in the atlas, in increasing order.
    pads : sequence of int
        Reflect-101 padding of each placed level (one per ``levels``).
    dtype : numpy dtype

    Attributes
    ----------
    shape : (int, int)
        The atlas: placed levels one below the other, left-aligned (zero elsewhere).
    offsets : dict of int to (int, int)
        Atlas ``(row, col)`` of pixel ``(0, 0)`` of each placed level (its padding starts ``pad`` before).

    Examples
    --------
    >>> atlas = LevelAtlas((8, 10), [(8, 10), (4, 5)], [0, 1], [0, 1])
    >>> atlas.shape, atlas.offsets[1]
    ((14, 10), (9, 1))
    >>> atlas.forward(np.ones((8, 10)))[9:13, 1:6].tolist() == np.ones((4, 5)).tolist()
    True
    """

    def __init__(self, shape, level_shapes, levels, pads, *, dtype=np.float32):
        self.domain_shape = tuple(int(v) for v in shape)
        self.level_shapes = [tuple(int(v) for v in s) for s in level_shapes]
        if self.level_shapes[0] != self.domain_shape:
            raise ValueError(f"level 0 must have the image's shape {self.domain_shape}, got {self.level_shapes[0]}")
        levels = [int(level) for level in levels]
        if levels != sorted(set(levels)) or not levels or levels[0] < 0 or levels[-1] >= len(self.level_shapes):
            raise ValueError(f"levels must increase within 0..{len(self.level_shapes) - 1}, got {levels}")
        self.dtype = np.dtype(dtype)
        self.n_levels = levels[-1] + 1
        self._steps = [(_taps(a[0], b[0]), _taps(a[1], b[1]))
                       for a, b in zip(self.level_shapes[:self.n_levels - 1], self.level_shapes[1:self.n_levels])]
        self._slots, self.offsets, top, width = {}, {}, 0, 0
        for level, pad in zip(levels, pads):
            height_l, width_l = self.level_shapes[level]
            if not 0 <= pad < min(height_l, width_l):
                raise ValueError(f"padding {pad} of level {level} must be in [0, {min(height_l, width_l)})")
            rows, cols = _reflect_index(height_l, pad), _reflect_index(width_l, pad)
            self._slots[level] = (rows, cols, top)
            self.offsets[level] = (top + pad, pad)
            top += len(rows)
            width = max(width, len(cols))
        self.shape = (top, width)

    def slots(self):
        """``(top, bottom, width)`` of each placed level's rectangle in the atlas (from column 0)."""
        return [(top, top + len(rows), len(cols)) for rows, cols, top in self._slots.values()]

    def forward(self, image, out=None):
        """:math:`P x`: the atlas of ``image`` ``(H, W)``, shape :attr:`shape` (written into ``out`` if given)."""
        level = np.ascontiguousarray(image, dtype=self.dtype)
        if out is None:
            out = np.zeros(self.shape, dtype=self.dtype)
        else:
            out[...] = 0.0
        for index in range(self.n_levels):
            if index:
                rows, cols = self._steps[index - 1]
                resized = np.empty(self.level_shapes[index], dtype=self.dtype)
                kernels.resize_forward(level, rows, cols, resized)
                level = resized
            if index in self._slots:
                rows, cols, top = self._slots[index]
                kernels.place(level, rows, cols, top, 0, out)
        return out

    def adjoint(self, atlas):
        """:math:`P^T a` for an atlas-shaped ``atlas``: an ``(H, W)`` image."""
        atlas = np.ascontiguousarray(atlas, dtype=self.dtype)
        if atlas.shape != self.shape:
            raise ValueError(f"atlas must have shape {self.shape}, got {atlas.shape}")
        below = None
        for index in range(self.n_levels - 1, -1, -1):
            grad = np.zeros(self.level_shapes[index], dtype=self.dtype)
            if below is not None:
                rows, cols = self._steps[index]
                kernels.resize_adjoint(below, rows, cols, grad)
            if index in self._slots:
                rows, cols, top = self._slots[index]
                kernels.place_adjoint(atlas, rows, cols, top, 0, grad)
            below = grad
        return below


def _stencil(pattern, field):
    """The dense stencil of one field read at the centre of a large patch: ``(weights, (cy, cx))``."""
    radius = np.atleast_1d(pattern.radii[field]).max()
    half = int(np.ceil(radius)) + 2
    probe = Pattern("probe", 2 * half + 1, [[half, half]], [pattern.sigmas[field]],
                    [pattern.radii[field]], [[0, 0]], kernel=pattern.kernel)
    start, pixels, weights = field_entries([probe])
    dense = np.zeros((2 * half + 1) ** 2)
    dense[pixels] = weights
    dense = dense.reshape(2 * half + 1, 2 * half + 1)
    rows, cols = np.flatnonzero(dense.any(axis=1)), np.flatnonzero(dense.any(axis=0))
    return dense[rows[0]:rows[-1] + 1, cols[0]:cols[-1] + 1], (half - rows[0], half - cols[0])


def shared_stencils(patterns):
    """Whether every field of ``patterns`` is one of a few stencils at an integer centre, wholly inside its patch.

    Fields with the same kernel, sigma and radius share a stencil.

    Returns
    -------
    list of (stencil, (cy, cx))
        The distinct stencils (dense weights and the centre pixel in them).
    ndarray of int, shape (F,)
        Each field's stencil, the fields of all patterns in order.

    Raises
    ------
    ValueError
        If a field sits between pixels or its stencil leaves the patch:
        the keypoints then need the level-0 joint operator.

    Examples
    --------
    >>> from lbdviewer.patterns.base import Pattern
    >>> p = Pattern("toy", 9, [[3.0, 3.0], [5.0, 4.0]], [1.0, 2.0], [1.5, 3.0], [[0, 1]])
    >>> stencils, ids = shared_stencils([p])
    >>> [s.shape for s, _ in stencils], ids.tolist()
    ([(3, 3), (7, 7)], [0, 1])
    """
    keys, ids, stencils = {}, [], []
    for pattern in patterns:  # pattern by pattern: no array over all fields but the ids
        if np.any(pattern.centers != np.round(pattern.centers)):
            raise ValueError(f"pattern {pattern.name!r} has fields between pixels")
        radii = pattern.radii if pattern.radii.ndim == 1 else pattern.radii.max(axis=1)
        if np.all(pattern.sigmas == pattern.sigmas[0]) and np.all(radii == radii[0]):
            field_keys, inverse = [(float(pattern.sigmas[0]), float(radii[0]))], np.zeros(pattern.n_fields, int)
        else:
            unique, first, inverse = np.unique(np.column_stack([pattern.sigmas, radii]), axis=0,
                                               return_index=True, return_inverse=True)
            field_keys = [tuple(row) for row in unique.tolist()]
        local = np.empty(len(field_keys), dtype=np.int64)
        for index, key in enumerate(field_keys):
            key = (*key, pattern.kernel)
            if key not in keys:
                keys[key] = len(stencils)
                field = 0 if len(field_keys) == 1 else int(first[index])
                stencils.append(_stencil(pattern, field))
            local[index] = keys[key]
        inverse = inverse.reshape(-1)
        for index, k in enumerate(local):  # each stencil's fields stay inside the patch
            (height, width), (cy, cx) = stencils[k][0].shape, stencils[k][1]
            centers = pattern.centers if len(local) == 1 else pattern.centers[inverse == index]
            low, high = centers.min(axis=0), centers.max(axis=0)
            if min(low[0] - cx, low[1] - cy) < 0 or max(high[0] - cx + width, high[1] - cy + height) > pattern.patch_size:
                raise ValueError(f"a field of pattern {pattern.name!r} leaves its patch")
        ids.append(local[inverse])
    ids = np.concatenate(ids)
    return stencils, ids


class PyramidJointOperator:
    """The joint operator of keypoints on pyramid levels, on the level-0 image (see the module notes).

    Parameters
    ----------
    shape : (int, int)
        Level-0 image ``(H, W)``: the domain.
    level_shapes : sequence of (int, int)
        Every level's shape, level 0 first, each resized from the previous one.
    levels : array_like of int, shape (S,)
        Level of each site.
    origins : array_like of int, shape (S, 2)
        ``(row, col)`` of each patch's pixel ``(0, 0)`` in its level (may lie
        outside it: the level is padded with reflect-101 as far as needed).
    patterns : sequence of Pattern
        Each site's pattern in level pixels, fields at integer centres
        (:func:`shared_stencils`), all with the same ``m`` and tie rule.
    dtype : numpy dtype
    stencils : tuple, optional
        :func:`shared_stencils` of the distinct patterns (in order of first
        use), if the caller has it already.

    Notes
    -----
    Fields with the same stencil are read from one filtered copy of the atlas
    (``cv2.sepFilter2D`` for a separable stencil): every test is then two
    reads, and its gradient two additions, at indices computed once. Memory
    is the atlas and its planes plus two ``uint32`` indices a test.

    Examples
    --------
    >>> from lbdviewer.patterns.base import Pattern
    >>> p = Pattern("toy", 9, [[3.0, 3.0], [5.0, 4.0]], [1.0, 1.0], [1.5, 1.5], [[0, 1]])
    >>> op = PyramidJointOperator((20, 24), [(20, 24), (17, 20)], [0, 1], [[2, 3], [-1, 5]], [p, p])
    >>> op.forward(np.random.default_rng(0).random((20, 24))).shape
    (2, 1)
    """

    def __init__(self, shape, level_shapes, levels, origins, patterns, *, dtype=np.float32, stencils=None):
        levels = np.asarray(levels, dtype=np.int64).reshape(-1)
        origins = np.asarray(origins, dtype=np.int64).reshape(-1, 2)
        if len(levels) == 0 or len(origins) != len(levels):
            raise ValueError(f"levels ({len(levels)}) and origins ({len(origins)}) must have one entry per site, "
                             "at least one")
        unique, site_pattern = index_patterns(patterns, len(levels))
        if any(p.thresholded for p in unique):
            raise ValueError("thresholded patterns (bits sign(L x - t)) are not supported by the pyramid operator")
        sizes = np.array([p.patch_size for p in unique], dtype=np.int64)[site_pattern]
        used = np.unique(levels)
        pads = []
        for level in used:
            here = levels == level
            height_l, width_l = level_shapes[level]
            pads.append(max(0, -int(origins[here].min()), int((origins[here, 0] + sizes[here]).max()) - height_l,
                            int((origins[here, 1] + sizes[here]).max()) - width_l))
        self.atlas = LevelAtlas(shape, level_shapes, used, pads, dtype=dtype)
        self.dtype = self.atlas.dtype
        self.patterns = tuple(unique)
        self.site_pattern = site_pattern
        self.m = unique[0].m
        self.tie_positive = bool(unique[0].tie_positive)
        self.levels = levels
        self._buffers = {}
        stencils, field_stencil = shared_stencils(unique) if stencils is None else stencils
        self._stencils = [self._separable(weights, centre, self.dtype) for weights, centre in stencils]
        place = np.array([self.atlas.offsets[int(level)] for level in levels], dtype=np.int64).reshape(-1, 2)
        corner = origins + place
        width, plane_size = self.atlas.shape[1], self.atlas.shape[0] * self.atlas.shape[1]
        if len(stencils) * plane_size >= 2**31:
            raise ValueError(f"the atlas {self.atlas.shape} with {len(stencils)} planes is too large")
        # Flat index of each field's mean in the stacked planes, per pattern, then each test's two.
        starts = np.concatenate([[0], np.cumsum([p.n_fields for p in unique])])
        field_index = [field_stencil[a:b] * plane_size + p.centers[:, 1].astype(np.int64) * width
                       + p.centers[:, 0].astype(np.int64) for p, a, b in zip(unique, starts[:-1], starts[1:])]
        base = corner[:, 0] * width + corner[:, 1]
        # Sites in atlas order, in two runs for two threads, split where the levels' slots meet (no shared pixel).
        order = np.argsort(base, kind="stable")
        cuts = np.flatnonzero(np.diff(levels[order])) + 1
        split = int(cuts[np.argmin(np.abs(cuts - len(order) / 2))]) if len(cuts) else len(order)
        self._runs = [run for run in (order[:split], order[split:]) if len(run)]
        # unsigned: the kernels' reads and writes at these indices carry no negative-index checks (inversion 6 % faster)
        self._index = [np.empty((len(levels), self.m), dtype=np.uint32) for _ in range(2)]
        by_pattern = np.argsort(site_pattern, kind="stable")
        bounds = np.searchsorted(site_pattern[by_pattern], np.arange(len(unique) + 1))
        for k, p in enumerate(unique):
            here = by_pattern[bounds[k]:bounds[k + 1]]
            for side in range(2):
                self._index[side][here] = base[here, None] + field_index[k][p.pairs[:, side]][None, :]

    @staticmethod
    def _separable(weights, centre, dtype):
        """``(kernel_y, kernel_x, anchor)`` of a rank-1 stencil, or ``(weights, None, anchor)``."""
        u, singular, vt = np.linalg.svd(weights)
        anchor = (int(centre[1]), int(centre[0]))
        if singular[1:].sum() <= 1e-9 * singular[0]:
            scale = np.sqrt(singular[0])
            return ((u[:, 0] * scale * np.sign(u[:, 0].sum())).astype(dtype),
                    (vt[0] * scale * np.sign(vt[0].sum())).astype(dtype), anchor)
        return weights.astype(dtype), None, anchor

    domain_shape = property(lambda self: self.atlas.domain_shape)
    range_shape = property(lambda self: (len(self.levels), self.m))

    def __repr__(self):
        return (f"PyramidJointOperator(shape={self.domain_shape}, sites={len(self.levels)}, m={self.m}, "
                f"atlas={self.atlas.shape}, stencils={len(self._stencils)})")

    def _filter(self, source, stencil, adjoint, out):
        """``out`` = ``source`` correlated with ``stencil`` (or its adjoint) inside each level's slot.

        Zero elsewhere. The slots are cut in two bands of rows each, filtered
        by two threads (each band reads the rows its stencil reaches).
        """
        ky, kx, anchor = stencil
        if adjoint:  # the adjoint of a correlation: the flipped stencil, the anchor mirrored
            anchor = ((len(kx) if kx is not None else ky.shape[1]) - 1 - anchor[0],
                      (len(ky) if kx is not None else ky.shape[0]) - 1 - anchor[1])
            ky = np.ascontiguousarray(ky[::-1] if kx is not None else ky[::-1, ::-1])
            kx = None if kx is None else np.ascontiguousarray(kx[::-1])
        reach = len(ky) if kx is not None else ky.shape[0]
        for top, bottom, width in self.atlas.slots():
            out[top:bottom, width:] = 0.0

        def bands(half):
            for top, bottom, width in self.atlas.slots():
                lo, hi = (top, (top + bottom) // 2) if half == 0 else ((top + bottom) // 2, bottom)
                first, last = max(lo - reach, top), min(hi + reach, bottom)
                window = source[first:last, :width]
                if kx is None:
                    result = cv2.filter2D(window, -1, ky, anchor=anchor, borderType=cv2.BORDER_CONSTANT)
                else:
                    result = cv2.sepFilter2D(window, -1, kx, ky, anchor=anchor, borderType=cv2.BORDER_CONSTANT)
                out[lo:hi, :width] = result[lo - first:hi - first]

        map_parallel(bands, [0, 1])

    def _buffer(self, name, planes=1):
        """A work array of ``planes`` atlases kept between calls: fresh large arrays cost a page fault every 4 kB."""
        if name not in self._buffers:
            self._buffers[name] = np.empty((planes, *self.atlas.shape), dtype=self.dtype)
        return self._buffers[name]

    def _planes(self, x):
        """The atlas of ``x`` correlated with every stencil, flat ``(n_stencils * rows * cols,)`` (a work array)."""
        atlas = self.atlas.forward(x, out=self._buffer("atlas")[0])
        planes = self._buffer("planes", len(self._stencils))
        for k, stencil in enumerate(self._stencils):
            self._filter(atlas, stencil, False, planes[k])
        return planes.reshape(-1)

    def _zeroed_grads(self):
        """The planes' gradient work array, zeroed, flat."""
        grads = self._buffer("grads", len(self._stencils)).reshape(-1)
        grads[:] = 0.0
        return grads

    def _unplanes(self, grads):
        """Adjoint of :meth:`_planes`: stacked flat plane gradients to an ``(H, W)`` image."""
        grads = grads.reshape(len(self._stencils), *self.atlas.shape)
        total, part = self._buffer("atlas")[0], self._buffer("part")[0]
        self._filter(grads[0], self._stencils[0], True, total)
        for k in range(1, len(self._stencils)):
            self._filter(grads[k], self._stencils[k], True, part)
            total += part
        return self.atlas.adjoint(total)

    @property
    def shape(self):
        """``(S M, H W)``: the matrix shape (:class:`lbdviewer.operators.linear.LinearOperator`)."""
        return (len(self.levels) * self.m, self.domain_shape[0] * self.domain_shape[1])

    def forward(self, x):
        """Measurements of every site: images ``(..., H, W)`` to ``(..., S, M)``."""
        x = np.asarray(x)
        if x.shape[-2:] != self.domain_shape:
            raise ValueError(f"x must have shape (..., {self.domain_shape[0]}, {self.domain_shape[1]}), got {x.shape}")
        images = x.reshape(-1, *self.domain_shape)
        out = np.empty((len(images), *self.range_shape), dtype=self.dtype)
        for image, values in zip(images, out):
            kernels.test_values(self._planes(image), *self._index, values)
        return out.reshape(*x.shape[:-2], *self.range_shape)

    def adjoint(self, y):
        """The back-projection: ``(..., S, M)`` to images ``(..., H, W)``."""
        y = np.asarray(y, dtype=self.dtype)
        if y.shape[-2:] != self.range_shape:
            raise ValueError(f"y must have shape (..., {self.range_shape[0]}, {self.m}), got {y.shape}")
        out = []
        for batch in y.reshape(-1, *self.range_shape):
            grads = self._zeroed_grads()
            kernels.test_values_adjoint(np.ascontiguousarray(batch), *self._index, grads)
            out.append(self._unplanes(grads))
        return np.stack(out).reshape(*y.shape[:-2], *self.domain_shape)

    def block_bits(self, positive):
        """Target bits as the kernels read them: packed least significant first, ``(S, ceil(M / 8))`` uint8."""
        packed_shape = (len(self.levels), (self.m + 7) // 8)
        if positive.dtype == np.uint8 and positive.shape == packed_shape:
            return np.ascontiguousarray(positive)
        if positive.dtype == bool and positive.shape == self.range_shape:
            return np.packbits(positive, axis=1, bitorder="little")
        raise ValueError(f"positive must be bool {self.range_shape} or uint8 {packed_shape}, "
                         f"got {positive.dtype} {positive.shape}")

    def squared_hinge(self, x, positive, margin, *, orientation=None, atol=TIE_ATOL):
        r"""Squared hinge of the bits, its gradient and the bits reproduced (as :meth:`lbdviewer.operators.joint.operator.JointOperator.squared_hinge`).

        ``orientation`` must be None: keypoints at several scales and angles
        have no oriented margins (:mod:`lbdviewer.solvers.image.orientation`).
        """
        if orientation is not None:
            raise ValueError("orientation is not supported by PyramidJointOperator (keypoint pyramids); pass None")
        packed = self.block_bits(positive)
        margin = np.asarray(margin, dtype=self.dtype)
        table_shape = (len(self.patterns), self.m)
        margin = np.full(table_shape, margin, dtype=self.dtype) if margin.ndim == 0 else margin
        if margin.shape != table_shape:
            raise ValueError(f"margin must be a number or have shape {table_shape}, got {margin.shape}")
        value, agree, grads = self._tests(x, packed, np.ascontiguousarray(margin), True, atol)
        return value, self._unplanes(grads), agree

    def _tests(self, x, packed, margin, hinge, atol):
        """:func:`lbdviewer.operators._pyramid_kernels.hinge_tests` over the runs of sites in parallel: sum, agree, gradient."""
        planes, grads = self._planes(x), self._zeroed_grads()
        parts = map_parallel(lambda run: kernels.hinge_tests(planes, *self._index, packed, margin, self.site_pattern,
                                                             run, hinge, self.tie_positive, self.dtype.type(atol),
                                                             grads), self._runs)
        return float(sum(part[0] for part in parts)), int(sum(part[1] for part in parts)), grads

    def binary_gradient(self, x, packed_bits):
        """Back-projected bit errors ``A^T (b - sign(A x)) / 2`` and their count."""
        packed = self.block_bits(packed_bits)
        margin = np.zeros((len(self.patterns), self.m), dtype=self.dtype)
        _, agree, grads = self._tests(x, packed, margin, False, TIE_ATOL)
        return self._unplanes(grads), len(self.levels) * self.m - agree
