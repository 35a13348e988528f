"""The fused BIHT iterations (numba): whole iterations per patch, on pixels or on cells.

:class:`lbdviewer.solvers.patch.biht.BIHT` runs these over its active rows
(:func:`lbdviewer._runtime.parallel.run_rows`) when its backend is ``"fused"``.
``lx`` holds the margins :math:`Lx - t` (``thresholds`` :math:`t`; an empty
array for the paper's bits, :math:`t = 0`, which then cost nothing); at the
flat start they are :math:`-t`, and the first step takes the sign of a tie as 0.
"""

from __future__ import annotations

import numba
import numpy as np

from lbdviewer.solvers.projections import mean_box_projection_inplace
from lbdviewer.solvers.patch._kernels import differs, keep_largest_inplace, project_inplace
from lbdviewer.solvers.patch._sparse import sparse_adjoint, sparse_forward
from lbdviewer.operators.wavelets import haar_adjoint_inplace, haar_forward_inplace


@numba.njit(cache=True, nogil=True)
def biht_rows(rows, x, lx, bits, active, iterations_run, inconsistent, n_steps, first,
               half_step, k, constraint, height, width, haar, tie, atol, thresholds, factors):
    for row in rows:
        _biht_row(row, x, lx, bits, active, iterations_run, inconsistent, n_steps, first,
                  half_step, k, constraint, height, width, haar, tie, atol, thresholds, factors)


@numba.njit(cache=True, nogil=True)
def _biht_row(row, x, lx, bits, active, iterations_run, inconsistent, n_steps, first,
              half_step, k, constraint, height, width, haar, tie, atol, thresholds, factors):
    """``n_steps`` BIHT iterations of one row, in place; stops at a fixed point."""
    n = x.shape[1]
    m = bits.shape[1]
    a = np.empty(n, dtype=np.float32)
    scratch = np.empty(max(height, width), dtype=np.float32)
    fields = np.empty(factors[7].shape[0], dtype=np.float32)
    plane = np.empty(n, dtype=np.float32)
    magnitude = np.empty(n, dtype=np.float32)
    residual = np.empty(m, dtype=np.float32)
    shift = np.nan  # of the last projection: the next one starts there
    xr = x[row]
    lxr = lx[row]
    br = bits[row]
    for it in range(n_steps):
        is_first = first and it == 0
        tie_now = 0 if is_first else tie  # at the flat start a tie's sign is 0
        for i in range(m):
            v = lxr[i]
            s = tie_now if abs(v) <= atol else (1 if v > 0 else -1)
            residual[i] = br[i] - s
        sparse_adjoint(residual, factors, fields, a)
        for j in range(n):
            a[j] = xr[j] + half_step * a[j]
        if haar:
            haar_forward_inplace(a, scratch, height, width)
        keep_largest_inplace(a, k, magnitude)
        if haar:
            haar_adjoint_inplace(a, scratch, height, width)
        shift = project_inplace(a, constraint, shift)
        if constraint == 2:  # no domain: unit-norm estimates
            norm = 0.0
            for j in range(n):
                norm += np.float64(a[j]) * a[j]
            if norm > 0.0:
                scale = np.float32(1.0 / np.sqrt(norm))
                for j in range(n):
                    a[j] *= scale
        iterations_run[row] += 1
        if not (is_first or differs(a, xr)):
            active[row] = False
            break
        xr[:] = a
        sparse_forward(xr, factors, fields, plane, lxr)
        if thresholds.shape[0]:
            for i in range(m):
                lxr[i] -= thresholds[i]
        count = 0
        for i in range(m):
            v = lxr[i]
            s = tie if abs(v) <= atol else (1 if v > 0 else -1)
            if s != br[i]:
                count += 1
        inconsistent[row] = count


@numba.njit(cache=True, nogil=True)
def biht_cell_rows(rows, cells, x, lx, bits, active, iterations_run, inconsistent, n_steps, first,
                    half_step, constraint, tie, atol, thresholds, space):
    """``n_steps`` BIHT iterations of ``rows`` on cells (:class:`CellSpace`), then ``x`` from the cells.

    The gradient :math:`D^T r` of the next step is gathered while the bits of
    the new iterate are read (:func:`_measure_cells`).
    """
    counts, cell_of, first_pixel, c_ptr, c_idx, c_val, f_ptr, f_idx, f_val, p_idx, p_val = space
    a = np.empty(counts.shape[0])
    gradient = np.empty(f_ptr.shape[0] - 1)
    fields = np.empty(f_ptr.shape[0] - 1)
    pixels = np.empty(cell_of.shape[0])
    for row in rows:
        xr = cells[row]
        lxr = lx[row]
        br = bits[row]
        # Residual of the current iterate (at the flat start: margins -t, a tie's sign 0).
        n_wrong = _bit_gradient(lxr, br, 0 if first else tie, atol, p_idx, p_val, gradient)
        shift = np.nan  # of the last projection with clipping: the next one starts there
        for it in range(n_steps):
            iterations_run[row] += 1
            if n_wrong == 0 and not (first and it == 0):  # a = x is in S: P_S(a) = x
                active[row] = False
                break
            for c in range(a.shape[0]):
                acc = 0.0
                for jj in range(c_ptr[c], c_ptr[c + 1]):
                    acc += c_val[jj] * gradient[c_idx[jj]]
                a[c] = xr[c] + half_step * acc
            shift = _project_cells(a, counts, constraint, shift, cell_of, first_pixel, pixels)
            if not (first and it == 0 or differs(a, xr)):
                active[row] = False
                break
            xr[:] = a
            n_wrong = _measure_cells(xr, f_ptr, f_idx, f_val, p_idx, p_val, fields, lxr, br, tie, atol,
                                     thresholds, gradient)
            inconsistent[row] = n_wrong
        for j in range(cell_of.shape[0]):
            x[row, j] = xr[cell_of[j]]


@numba.njit(cache=True, nogil=True, inline="always")
def _sign(v, tie, atol):
    """Bit of a measurement: +1 above ``atol``, -1 below ``-atol``, ``tie`` in between.

    Arithmetic on the comparisons instead of branches: the signs are random, so
    branches would be mispredicted half the time.
    """
    return tie + (v > atol) * (1 - tie) - (v < -atol) * (1 + tie)


@numba.njit(cache=True, nogil=True)
def _bit_gradient(lxr, br, tie, atol, p_idx, p_val, gradient):
    """``gradient = D^T r`` with ``r = b - sign(lxr)`` (ties: ``tie``, 0 at the flat start); return the wrong bits."""
    gradient[:] = 0.0
    n_wrong = 0
    for i in range(br.shape[0]):
        ri = np.float64(br[i] - _sign(lxr[i], tie, atol))
        if ri != 0.0:
            n_wrong += 1
            for w in range(p_idx.shape[0]):
                gradient[p_idx[w, i]] += p_val[w, i] * ri
    return n_wrong


@numba.njit(cache=True, nogil=True)
def _project_cells(a, counts, constraint, shift, cell_of, first_pixel, pixels):
    """Project cell values ``a`` (pixels per cell: ``counts``) on the constraint; return the shift.

    "patch" without clipping is a shift by the weighted mean; with clipping the
    pixels are expanded into ``pixels`` and projected exactly.
    """
    if constraint == 0:
        total = 0.0
        low = np.inf
        high = -np.inf
        for c in range(a.shape[0]):
            total += counts[c] * a[c]
            low = min(low, a[c])
            high = max(high, a[c])
        mu = total / cell_of.shape[0] - 0.5
        if low - mu >= 0.0 and high - mu <= 1.0:
            for c in range(a.shape[0]):
                a[c] -= mu
            return shift
        for j in range(cell_of.shape[0]):
            pixels[j] = a[cell_of[j]]
        shift = mean_box_projection_inplace(pixels, 0.5, shift)
        for c in range(a.shape[0]):
            a[c] = pixels[first_pixel[c]]
    elif constraint == 1:
        for c in range(a.shape[0]):
            a[c] = min(max(a[c], 0.0), 1.0)
    else:
        norm = 0.0
        for c in range(a.shape[0]):
            norm += counts[c] * a[c] * a[c]
        if norm > 0.0:
            scale = 1.0 / np.sqrt(norm)
            for c in range(a.shape[0]):
                a[c] *= scale
    return shift


@numba.njit(cache=True, nogil=True)
def _measure_cells(xr, f_ptr, f_idx, f_val, p_idx, p_val, fields, lxr, br, tie, atol, thresholds, gradient):
    """``lxr = L x - t`` from the cell values ``xr``, and ``gradient = D^T (b - sign(L x - t))``.

    ``fields`` is scratch; returns the number of inconsistent bits.
    """
    for f in range(fields.shape[0]):
        acc = 0.0
        for jj in range(f_ptr[f], f_ptr[f + 1]):
            acc += f_val[jj] * xr[f_idx[jj]]
        fields[f] = acc
    if thresholds.shape[0]:
        for i in range(lxr.shape[0]):
            lxr[i] = -thresholds[i]
    else:
        lxr[:] = 0.0
    for w in range(p_idx.shape[0]):  # slot by slot: contiguous, vectorised gathers
        for i in range(lxr.shape[0]):
            lxr[i] += p_val[w, i] * fields[p_idx[w, i]]
    return _bit_gradient(lxr, br, tie, atol, p_idx, p_val, gradient)
