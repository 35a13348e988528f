r"""Compiled kernels of :class:`~lbdviewer.libraries.akaze.joint.AkazeJointOperator`.

A window of a level holds the level's intensity :math:`L = G_i * A_p x` and
its smoothed image :math:`S = G_s * A_p x` (OpenCV filters them); AKAZE's
scaled derivatives of :math:`S` have few nonzero taps (``[-1, 0 .. 0, 1]``
across, ``[n, 0 .. m .. 0, n]`` along: 6 of :math:`(2w + 1)^2`), so they are
read only at the window's *sampled pixels*, from those taps:

.. math:: D S(r, c) = \sum_a k_y[a] \sum_b k_x[b] \, S(r + o_y[a], c + o_x[b]),

zero outside the window, which is the correlation with the full kernels at
those pixels (a zero tap adds nothing). A cell is the weighted sum of its
samples' values (``indptr, indices, weights``: CSR rows are the window's
keypoints' cells, columns its sampled pixels), the derivative cells turned by
the keypoint's angle. :func:`write_cells` is the exact transpose of
:func:`read_cells`, :func:`add_area_adjoint` that of a block average, and
:func:`squared_hinge_cells` the sign-consistency data term on the cells.
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True, nogil=True, inline="always")
def _at(plane, r, c):
    """``plane[r, c]``, zero outside ``plane``."""
    if 0 <= r < plane.shape[0] and 0 <= c < plane.shape[1]:
        return plane[r, c]
    return np.float32(0.0)


@numba.njit(cache=True, nogil=True, inline="always")
def _add_at(plane, r, c, value):
    """``plane[r, c] += value`` inside ``plane``; nothing outside."""
    if 0 <= r < plane.shape[0] and 0 <= c < plane.shape[1]:
        plane[r, c] += value


@numba.njit(cache=True, nogil=True, inline="always")
def _taps(half, across, along):
    """``(w, d_-, d_+, s_-, s_0, s_+)``: the derivatives' half-width and nonzero taps."""
    return half, across[0], across[1], along[0], along[1], along[2]


@numba.njit(cache=True, nogil=True)
def read_cells(intensity, smoothed, pixel_rows, pixel_cols, half, across, along, indptr, indices, weights,
               keypoints, co, si, out):
    r"""The cells of a window's keypoints into ``out[keypoints]`` (``(K, 29, 3)``: intensity, turned derivatives).

    The derivatives' taps: ``across = (d_-, d_+)`` at offsets :math:`\mp w`
    (``half``), ``along = (s_-, s_0, s_+)`` at :math:`-w, 0, w`;
    :math:`D_x S(r, c) = \sum_a s_a (d_- S(r + a, c - w) + d_+ S(r + a, c + w))`
    and :math:`D_y` the same with rows and columns swapped. CSR row
    ``k * 29 + cell`` of ``indptr, indices, weights`` is the cell's sample
    weights on the sampled pixels ``(pixel_rows, pixel_cols)``.
    """
    n_pixels = pixel_rows.shape[0]
    values = np.empty((n_pixels, 3), dtype=np.float32)
    height, width = smoothed.shape
    w, d0, d1, s0, s1, s2 = _taps(half, across, along)
    for u in range(n_pixels):
        r, c = pixel_rows[u], pixel_cols[u]
        values[u, 0] = intensity[r, c]
        if w <= r < height - w and w <= c < width - w:
            a0, a1, a2 = smoothed[r - w, c - w], smoothed[r - w, c], smoothed[r - w, c + w]
            b0, b2 = smoothed[r, c - w], smoothed[r, c + w]
            c0, c1, c2 = smoothed[r + w, c - w], smoothed[r + w, c], smoothed[r + w, c + w]
        else:  # near the level's border: zero beyond it
            a0, a1, a2 = _at(smoothed, r - w, c - w), _at(smoothed, r - w, c), _at(smoothed, r - w, c + w)
            b0, b2 = _at(smoothed, r, c - w), _at(smoothed, r, c + w)
            c0, c1, c2 = _at(smoothed, r + w, c - w), _at(smoothed, r + w, c), _at(smoothed, r + w, c + w)
        values[u, 1] = s0 * (d0 * a0 + d1 * a2) + s1 * (d0 * b0 + d1 * b2) + s2 * (d0 * c0 + d1 * c2)
        values[u, 2] = d0 * (s0 * a0 + s1 * a1 + s2 * a2) + d1 * (s0 * c0 + s1 * c1 + s2 * c2)
    n_cells = out.shape[1]
    for row in range(indptr.shape[0] - 1):
        k, cell = row // n_cells, row % n_cells
        v0, v1, v2 = np.float32(0.0), np.float32(0.0), np.float32(0.0)
        for t in range(indptr[row], indptr[row + 1]):
            weight, u = weights[t], indices[t]
            v0 += weight * values[u, 0]
            v1 += weight * values[u, 1]
            v2 += weight * values[u, 2]
        target = keypoints[k]
        out[target, cell, 0] = v0
        out[target, cell, 1] = -v1 * si[k] + v2 * co[k]
        out[target, cell, 2] = v1 * co[k] + v2 * si[k]


@numba.njit(cache=True, nogil=True)
def write_cells(grads, keypoints, co, si, indptr, indices, weights, pixel_rows, pixel_cols, half, across, along,
                intensity_plane, smoothed_plane):
    """Add the transpose of :func:`read_cells` of ``grads[keypoints]`` to the two planes (they may be one array)."""
    n_pixels = pixel_rows.shape[0]
    values = np.zeros((n_pixels, 3), dtype=np.float32)
    n_cells = grads.shape[1]
    for row in range(indptr.shape[0] - 1):
        k, cell = row // n_cells, row % n_cells
        source = keypoints[k]
        g0, g1, g2 = grads[source, cell, 0], grads[source, cell, 1], grads[source, cell, 2]
        gx, gy = -g1 * si[k] + g2 * co[k], g1 * co[k] + g2 * si[k]
        for t in range(indptr[row], indptr[row + 1]):
            weight, u = weights[t], indices[t]
            values[u, 0] += weight * g0
            values[u, 1] += weight * gx
            values[u, 2] += weight * gy
    height, width = smoothed_plane.shape
    w, d0, d1, s0, s1, s2 = _taps(half, across, along)
    for u in range(n_pixels):
        r, c = pixel_rows[u], pixel_cols[u]
        intensity_plane[r, c] += values[u, 0]
        gx, gy = values[u, 1], values[u, 2]
        a0, a1, a2 = s0 * d0 * gx + d0 * s0 * gy, d0 * s1 * gy, s0 * d1 * gx + d0 * s2 * gy
        b0, b2 = s1 * d0 * gx, s1 * d1 * gx
        c0, c1, c2 = s2 * d0 * gx + d1 * s0 * gy, d1 * s1 * gy, s2 * d1 * gx + d1 * s2 * gy
        if w <= r < height - w and w <= c < width - w:
            smoothed_plane[r - w, c - w] += a0
            smoothed_plane[r - w, c] += a1
            smoothed_plane[r - w, c + w] += a2
            smoothed_plane[r, c - w] += b0
            smoothed_plane[r, c + w] += b2
            smoothed_plane[r + w, c - w] += c0
            smoothed_plane[r + w, c] += c1
            smoothed_plane[r + w, c + w] += c2
        else:  # near the level's border: what falls beyond it is dropped
            _add_at(smoothed_plane, r - w, c - w, a0)
            _add_at(smoothed_plane, r - w, c, a1)
            _add_at(smoothed_plane, r - w, c + w, a2)
            _add_at(smoothed_plane, r, c - w, b0)
            _add_at(smoothed_plane, r, c + w, b2)
            _add_at(smoothed_plane, r + w, c - w, c0)
            _add_at(smoothed_plane, r + w, c, c1)
            _add_at(smoothed_plane, r + w, c + w, c2)


@numba.njit(cache=True, nogil=True)
def add_area_adjoint(plane, power, top, left, out):
    """Add ``A_p^T`` of a window's ``plane`` (level rows from ``top``, columns from ``left``) to the image ``out``."""
    scale = np.float32(power * power)
    height, width = plane.shape
    for i in range(height):
        for a in range(power):
            target = out[(top + i) * power + a]
            for j in range(width):
                value = plane[i, j] / scale
                first = (left + j) * power
                for b in range(power):
                    target[first + b] += value


@numba.njit(cache=True, nogil=True, fastmath=True)
def squared_hinge_cells(values, first, second, test_weights, signs, margin, atol, tie_positive, grads):
    r"""The squared hinge of the tests ``m_i = w_i (v_{a_i} - v_{b_i})`` of the cells ``values`` against the bits.

    With :math:`s = \pm 1` the bits (``signs``, ``(K, M)`` float32) and
    :math:`\delta_i` ``margin[i]`` on the strict side (none on the side that
    takes ties), adds :math:`\partial h / \partial v` of
    :math:`h = \sum [\delta - s m]_+^2` to ``grads`` (``(K, 3 * 29)`` like
    ``values``) and returns :math:`h` (float64) and the number of bits the
    signs reproduce (ties, :math:`|m| \le` ``atol``, per ``tie_positive``).
    """
    total, agree = 0.0, 0
    n = first.shape[0]
    zero, half = np.float32(0.0), np.float32(0.5)
    tolerance = np.float32(atol)
    strict = np.float32(-1.0) if tie_positive else np.float32(1.0)  # the bit whose tests have a margin
    gradient = np.empty(n, dtype=np.float32)
    for k in range(values.shape[0]):
        row, grad, bits = values[k], grads[k], signs[k]
        part, count = 0.0, 0
        for i in range(n):
            m = (row[first[i]] - row[second[i]]) * test_weights[i]
            s = bits[i]
            residual = max(margin[i] * (half + half * s * strict) - s * m, zero)  # the margin times 1 or 0
            part += np.float64(residual) * np.float64(residual)
            gradient[i] = np.float32(-2.0) * s * residual * test_weights[i]
            bit = np.float32(1.0) if (m > tolerance) | ((m >= -tolerance) & tie_positive) else np.float32(-1.0)
            count += bit == s
        total += part
        agree += count
        for i in range(n):  # apart from the loop above: its adds into a cell would wait on each other
            grad[first[i]] += gradient[i]
            grad[second[i]] -= gradient[i]
    return total, agree
