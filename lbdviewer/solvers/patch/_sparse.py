"""Sparse factors ``L = pairs @ fields`` of a patch operator and the numba kernels that apply them.

The fused solver paths (:mod:`lbdviewer.solvers.patch.biht`,
:mod:`lbdviewer.solvers.patch.primal_dual`) run whole iterations per patch in
compiled code on these: one patch at a time (:func:`sparse_forward`,
:func:`sparse_adjoint`) or ``LANES`` patches interleaved
(:func:`sparse_forward_lanes`, :func:`sparse_adjoint_lanes`).
"""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass

import numba
import numpy as np
from scipy import sparse

from lbdviewer.operators.wavelets import LANES

_FACTORS = weakref.WeakKeyDictionary()  # operator -> (domain shape, SparseFactors)
_FACTORS_LOCK = threading.Lock()  # solvers run on worker threads of the app: one build per operator


@dataclass(frozen=True)
class SparseFactors:
    """Arrays (float32) of ``L = pairs @ fields`` for the numba kernels.

    Identical fields are stored once (BRIEF: 1024 fields, ~600 distinct).
    When many fields share one dense ``stencil`` (BRIEF: a single 3x3
    Gaussian), the forward kernel correlates the whole patch with it once
    (dense, vectorised) and reads each such field at its ``anchor`` (flat
    index of the stencil's top-left pixel; -1: the field has its own taps in
    the CSR arrays ``f_*``); the adjoint scatters the stencil at the anchors.
    ``pairs`` is CSR ``p_*`` over the distinct fields.
    """

    f_ptr: np.ndarray
    f_idx: np.ndarray
    f_val: np.ndarray
    p_ptr: np.ndarray
    p_idx: np.ndarray
    p_val: np.ndarray
    stencil: np.ndarray
    anchor: np.ndarray
    width: int

    @property
    def n_fields(self):
        return self.anchor.shape[0]

    @property
    def arrays(self):
        """The tuple the kernels take (:func:`sparse_forward`, :func:`sparse_adjoint`)."""
        return (self.f_ptr, self.f_idx, self.f_val, self.p_ptr, self.p_idx, self.p_val,
                self.stencil, self.anchor, self.width)


def _row_stencil(indices, data, width):
    """A field as ``(anchor, dense stencil)`` over its bounding box of the 2-D domain."""
    rows, cols = np.divmod(indices, width)
    r0, c0 = rows.min(), cols.min()
    stencil = np.zeros((rows.max() - r0 + 1, cols.max() - c0 + 1), dtype=np.float32)
    stencil[rows - r0, cols - c0] = data
    return int(r0 * width + c0), stencil


def sparse_factors(operator, domain_shape):
    """Return :class:`SparseFactors` if the operator exposes them, else None.

    Built once per operator (cached while it lives, under a lock: threads
    asking at once wait for one build): a solver is made for every chunk of
    patches.
    """
    if not (callable(getattr(operator, "field_matrix", None))
            and callable(getattr(operator, "pair_matrix", None))):
        return None
    key = tuple(domain_shape)
    with _FACTORS_LOCK:
        try:
            cached = _FACTORS.get(operator)
        except TypeError:  # not weakly referenceable or not hashable: no cache
            return _build_factors(operator, key)
        if cached is None or cached[0] != key:
            cached = (key, _build_factors(operator, key))
            _FACTORS[operator] = cached
        return cached[1]


def _build_factors(operator, domain_shape):
    fields = operator.field_matrix().tocsr().sorted_indices()
    pairs = operator.pair_matrix().tocsr()
    m, n = (int(s) for s in operator.shape)
    if fields.shape[1] != n or pairs.shape != (m, fields.shape[0]):
        raise ValueError(
            f"operator field_matrix {fields.shape} and pair_matrix {pairs.shape} "
            f"do not factor shape {operator.shape}"
        )
    height, width = domain_shape if len(domain_shape) == 2 else (1, n)
    distinct, index, rows = {}, np.empty(fields.shape[0], dtype=np.int64), []
    for f in range(fields.shape[0]):
        lo, hi = fields.indptr[f], fields.indptr[f + 1]
        key = (fields.indices[lo:hi].tobytes(), fields.data[lo:hi].astype(np.float32).tobytes())
        if key not in distinct:
            distinct[key] = len(rows)
            rows.append((fields.indices[lo:hi], fields.data[lo:hi]))
        index[f] = distinct[key]
    shared = {}  # stencil bytes -> (stencil, [(distinct field, anchor)])
    for f, (indices, data) in enumerate(rows):
        if indices.size:
            anchor, stencil = _row_stencil(indices, data, width)
            entry = shared.setdefault((stencil.shape, stencil.tobytes()), (stencil, []))
            entry[1].append((f, anchor))
    stencil, users = max(shared.values(), key=lambda entry: len(entry[1]), default=(None, []))
    anchors = np.full(len(rows), -1, dtype=np.int64)
    if stencil is not None:
        kh, kw = stencil.shape
        # Filtering costs a pass over the patch; worth it when the fields cover it.
        if len(users) * kh * kw >= (height - kh + 1) * (width - kw + 1) and kh * kw > 1:
            for f, anchor in users:
                anchors[f] = anchor
        else:
            stencil = None
    tap_rows = [(np.empty(0, np.int64), np.empty(0)) if anchors[f] >= 0 else row
                for f, row in enumerate(rows)]
    f_ptr = np.cumsum([0] + [idx.size for idx, _ in tap_rows]).astype(np.int64)
    pairs = pairs.tocoo()
    remapped = sparse.csr_matrix((pairs.data, (pairs.row, index[pairs.col])), shape=(m, len(rows)))
    remapped.sort_indices()
    return SparseFactors(
        f_ptr, np.concatenate([idx for idx, _ in tap_rows]).astype(np.int64),
        np.concatenate([val for _, val in tap_rows]).astype(np.float32),
        remapped.indptr.astype(np.int64), remapped.indices.astype(np.int64),
        remapped.data.astype(np.float32),
        np.zeros((0, 0), np.float32) if stencil is None else stencil, anchors, int(width),
    )


@numba.njit(cache=True, nogil=True)
def _filter_patch(x, stencil, width, plane):
    """``plane[r, c] = sum_ij stencil[i, j] x[r + i, c + j]`` where the stencil fits (flat arrays).

    Rows accumulate in a local buffer indexed by the loop counter only: numba
    then drops its negative-index checks and LLVM vectorises (4x faster).
    """
    kh, kw = stencil.shape
    height = x.shape[0] // width
    span = width - kw + 1
    row = np.empty(span, dtype=plane.dtype)
    for r in range(height - kh + 1):
        row[:] = 0.0
        for i in range(kh):
            for j in range(kw):
                w = stencil[i, j]
                source = x[(r + i) * width + j:]
                for c in range(span):
                    row[c] += w * source[c]
        plane[r * width: r * width + span] = row


@numba.njit(cache=True, nogil=True)
def sparse_forward(x, factors, fields, plane, out):
    """``out = pairs @ (fields_matrix @ x)`` for one flat patch (``fields``, ``plane`` are scratch)."""
    f_ptr, f_idx, f_val, p_ptr, p_idx, p_val, stencil, anchor, width = factors
    if stencil.shape[0] > 0:
        _filter_patch(x, stencil, width, plane)
    for f in range(anchor.shape[0]):
        if anchor[f] >= 0:
            fields[f] = plane[anchor[f]]
        else:
            acc = np.float32(0.0)
            for jj in range(f_ptr[f], f_ptr[f + 1]):
                acc += f_val[jj] * x[f_idx[jj]]
            fields[f] = acc
    for i in range(p_ptr.shape[0] - 1):
        acc = np.float32(0.0)
        for jj in range(p_ptr[i], p_ptr[i + 1]):
            acc += p_val[jj] * fields[p_idx[jj]]
        out[i] = acc


@numba.njit(cache=True, nogil=True)
def sparse_adjoint(r, factors, fields, out):
    """``out = fields_matrix^T @ (pairs^T @ r)`` for one patch (``fields`` is scratch).

    Zero entries of ``r`` and of the field gradients cost nothing (BIHT's
    residual is mostly zero). Fields of the shared stencil are scattered tap
    by tap from the stencil: measured faster than a dense correlation of the
    patch unless nearly every field is non-zero.
    """
    f_ptr, f_idx, f_val, p_ptr, p_idx, p_val, stencil, anchor, width = factors
    fields[:] = 0.0
    for i in range(p_ptr.shape[0] - 1):
        ri = r[i]
        if ri != 0.0:
            for jj in range(p_ptr[i], p_ptr[i + 1]):
                fields[p_idx[jj]] += p_val[jj] * ri
    out[:] = 0.0
    kh, kw = stencil.shape
    for f in range(anchor.shape[0]):
        g = fields[f]
        if g == 0.0:
            continue
        a = anchor[f]
        if a >= 0:
            for i in range(kh):
                target = out[a + i * width: a + i * width + kw]
                for j in range(kw):
                    target[j] += stencil[i, j] * g
        else:
            for jj in range(f_ptr[f], f_ptr[f + 1]):
                out[f_idx[jj]] += f_val[jj] * g


def lane_factors(factors, n):
    """The tuple :func:`sparse_forward_lanes` and :func:`sparse_adjoint_lanes` take.

    Like :attr:`SparseFactors.arrays`, but each pair entry names where its
    field's value is in a work buffer of ``n + n_fields`` elements (per
    lane): the filtered patch at the field's anchor (shared stencil), else
    slot ``n + f``.
    """
    fields = factors.p_idx
    source = np.where(factors.anchor[fields] >= 0, factors.anchor[fields], n + fields)
    return (factors.f_ptr, factors.f_idx, factors.f_val, factors.p_ptr, source.astype(np.int64),
            factors.p_val, factors.stencil, factors.anchor, factors.width)


@numba.njit(cache=True, nogil=True)
def sparse_forward_lanes(x, factors, work, out):
    """:func:`sparse_forward` of ``LANES`` interleaved patches (``factors`` from :func:`lane_factors`).

    ``work`` (scratch, ``n + n_fields`` elements per lane) receives the
    filtered patch and the fields with taps of their own; pairs read them
    there. Same arithmetic, in the same order, as :func:`sparse_forward`.
    """
    f_ptr, f_idx, f_val, p_ptr, p_source, p_val, stencil, anchor, width = factors
    n = x.shape[0] // LANES
    _stencil_lanes(x, work, stencil, width, True)
    for f in range(anchor.shape[0]):
        if anchor[f] < 0:
            _csr_row_lanes(f_ptr, f_idx, f_val, f, x, work, (n + f) * LANES, True)
    for i in range(p_ptr.shape[0] - 1):
        _csr_row_lanes(p_ptr, p_source, p_val, i, work, out, i * LANES, True)


@numba.njit(cache=True, nogil=True)
def sparse_adjoint_lanes(r, factors, work, out):
    """:func:`sparse_adjoint` of ``LANES`` interleaved patches (``factors`` from :func:`lane_factors`).

    Pairs scatter into ``work`` (as in :func:`sparse_forward_lanes`); the
    anchored part is then correlated with the transposed stencil in long
    loops (the primal-dual residual has no zeros to skip). Terms reach each
    pixel in another order than in :func:`sparse_adjoint`: equal to rounding.
    """
    f_ptr, f_idx, f_val, p_ptr, p_source, p_val, stencil, anchor, width = factors
    n = out.shape[0] // LANES
    work[:] = 0.0
    for i in range(p_ptr.shape[0] - 1):
        _csr_row_lanes(p_ptr, p_source, p_val, i, work, r, i * LANES, False)
    out[:] = 0.0
    for f in range(anchor.shape[0]):
        if anchor[f] < 0:
            _csr_row_lanes(f_ptr, f_idx, f_val, f, out, work, (n + f) * LANES, False)
    _stencil_lanes(out, work, stencil, width, False)


# The forward and adjoint kernels above are mirror images: each part of L (the
# shared stencil, the fields' own taps, the pairs) is one kernel below with the
# direction as an argument, a constant where it is inlined.


@numba.njit(cache=True, nogil=True, inline="always")
def _csr_row_lanes(ptr, indices, values, row, dense, packed, base, gather):
    r"""Row ``row`` of a CSR matrix :math:`A` on ``LANES`` interleaved vectors, either way.

    ``gather``: ``packed[base + k]`` :math:`= \sum_j A_{row, j}` ``dense[j * LANES + k]``
    (the forward product, terms in index order); else ``dense[j * LANES + k]``
    :math:`\mathrel{+}= A_{row, j}` ``packed[base + k]`` (the adjoint's scatter).
    """
    if gather:
        for k in range(LANES):
            packed[base + k] = 0.0
    for jj in range(ptr[row], ptr[row + 1]):
        v = values[jj]
        place = indices[jj] * LANES
        if gather:
            for k in range(LANES):
                packed[base + k] += v * dense[place + k]
        else:
            for k in range(LANES):
                dense[place + k] += v * packed[base + k]


@numba.njit(cache=True, nogil=True, inline="always")
def _stencil_lanes(image, filtered, stencil, width, correlate):
    """``filtered`` = ``image`` correlated with ``stencil`` (``correlate``), else ``image`` += the transpose on ``filtered``.

    ``filtered`` holds, at the flat index of each valid top-left corner, the
    stencil's response there (``width`` pixels a row, ``LANES`` values a
    pixel); an empty stencil does nothing.
    """
    kh, kw = stencil.shape
    if kh > 0:
        span = (width - kw + 1) * LANES
        for row in range(image.shape[0] // LANES // width - kh + 1):
            line = filtered[row * width * LANES: row * width * LANES + span]
            if correlate:
                line[:] = 0.0
            for i in range(kh):
                for j in range(kw):
                    w = stencil[i, j]
                    shifted = image[((row + i) * width + j) * LANES:]
                    if correlate:
                        for q in range(span):
                            line[q] += w * shifted[q]
                    else:
                        for q in range(span):
                            shifted[q] += w * line[q]
