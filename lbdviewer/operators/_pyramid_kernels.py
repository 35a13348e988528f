"""Compiled kernels of :mod:`lbdviewer.operators.pyramid`: level resizing, padding into the atlas, tests against bits."""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True, nogil=True, fastmath=True)
def resize_forward(source, rows, cols, out):
    """Bilinear resize: ``out[r, c] = sum`` of the 2x2 source values of ``rows[r]`` x ``cols[c]``.

    ``rows``/``cols`` are ``(n, 3)`` float64 tables ``(first, second, weight of second)``.
    """
    line = np.empty(source.shape[1], dtype=out.dtype)
    for r in range(out.shape[0]):
        a, b, w = int(rows[r, 0]), int(rows[r, 1]), out.dtype.type(rows[r, 2])
        top, bottom = source[a], source[b]
        for c in range(source.shape[1]):
            line[c] = top[c] + w * (bottom[c] - top[c])
        target = out[r]
        for c in range(out.shape[1]):
            lo, hi, v = int(cols[c, 0]), int(cols[c, 1]), out.dtype.type(cols[c, 2])
            target[c] = line[lo] + v * (line[hi] - line[lo])


@numba.njit(cache=True, nogil=True, fastmath=True)
def resize_adjoint(grad, rows, cols, out):
    """Adds the adjoint of :func:`resize_forward` applied to ``grad`` to ``out`` (the source's shape)."""
    line = np.empty(out.shape[1], dtype=out.dtype)
    one = out.dtype.type(1.0)
    for r in range(grad.shape[0]):
        line[:] = 0.0
        source = grad[r]
        for c in range(grad.shape[1]):
            lo, hi, v = int(cols[c, 0]), int(cols[c, 1]), out.dtype.type(cols[c, 2])
            line[lo] += (one - v) * source[c]
            line[hi] += v * source[c]
        a, b, w = int(rows[r, 0]), int(rows[r, 1]), out.dtype.type(rows[r, 2])
        top, bottom = out[a], out[b]
        for c in range(out.shape[1]):
            top[c] += (one - w) * line[c]
        for c in range(out.shape[1]):
            bottom[c] += w * line[c]


@numba.njit(cache=True, nogil=True)
def place(level, row_index, col_index, top, left, atlas):
    """``atlas[top + i, left + j] = level[row_index[i], col_index[j]]`` (the padded level, in its slot)."""
    for i in range(row_index.shape[0]):
        source, target = level[row_index[i]], atlas[top + i]
        for j in range(col_index.shape[0]):
            target[left + j] = source[col_index[j]]


@numba.njit(cache=True, nogil=True)
def place_adjoint(atlas, row_index, col_index, top, left, level):
    """Adds the adjoint of :func:`place`: each slot value back to the level pixel it copies."""
    for i in range(row_index.shape[0]):
        source, target = atlas[top + i], level[row_index[i]]
        for j in range(col_index.shape[0]):
            target[col_index[j]] += source[left + j]


@numba.njit(cache=True, nogil=True)
def test_values(planes, index_a, index_b, out):
    """``out[s, i] = planes[index_a[s, i]] - planes[index_b[s, i]]`` (flat indices into the stacked planes)."""
    for s in range(out.shape[0]):
        for i in range(out.shape[1]):
            out[s, i] = planes[index_a[s, i]] - planes[index_b[s, i]]


@numba.njit(cache=True, nogil=True)
def test_values_adjoint(y, index_a, index_b, out):
    """Adds the adjoint of :func:`test_values` applied to ``y`` to the flat planes ``out``."""
    for s in range(y.shape[0]):
        for i in range(y.shape[1]):
            out[index_a[s, i]] += y[s, i]
            out[index_b[s, i]] -= y[s, i]


@numba.njit(cache=True, nogil=True, fastmath=True)
def hinge_tests(planes, index_a, index_b, packed, margin, site_pattern, order, hinge, tie_up, atol, out):
    """The data term of the joint kernels, one test at a time; returns ``(sum of squares, bits reproduced)``.

    Test ``i`` of site ``s`` has value ``v = planes[a] - planes[b]`` and target
    bit ``b`` (``packed``, least significant first). Its bit reads
    ``v >= -atol`` if ``tie_up`` else ``v > atol``. ``hinge``: adds
    ``-2 t r`` to the planes' gradient ``out`` at ``a`` (minus at ``b``), with
    ``t = 2 b - 1`` and ``r = [d - t v]_+``, ``d = margin[p, i]`` on the strict
    side only, and sums ``r^2``; else adds the bit error ``t [bit != b]``.
    Sites are visited in ``order`` (by their place in the planes: neighbours
    share cache lines).
    """
    total, agree = 0.0, 0
    for s in order:
        p = site_pattern[s]
        for i in range(index_a.shape[1]):
            a, b = index_a[s, i], index_b[s, i]
            v = planes[a] - planes[b]
            up = (packed[s, i >> 3] >> (i & 7)) & 1
            bit = (v >= -atol) if tie_up else (v > atol)
            agree += bit == up
            sign = 2.0 * up - 1.0
            if hinge:
                strict = up != tie_up
                r = max((margin[p, i] if strict else 0.0) - sign * v, 0.0)
                step = -2.0 * sign * r
                total += r * r
            else:
                step = sign if bit != up else 0.0
            out[a] += step
            out[b] -= step
    return total, agree
