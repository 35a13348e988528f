"""Compiled pieces the fused solver paths share: hard thresholding, projections, lane access, Haar on lanes."""

from __future__ import annotations

import numba
import numpy as np

from lbdviewer.projections import mean_box_projection_inplace
from lbdviewer.wavelets import level_shapes


@numba.njit(cache=True, nogil=True)
def differs(a, b):
    """Whether two flat vectors differ anywhere (stops at the first difference)."""
    for j in range(a.shape[0]):
        if a[j] != b[j]:
            return True
    return False


@numba.njit(cache=True, nogil=True)
def project_inplace(a, constraint, shift):
    """Project one flat row on constraint 0 ("patch") or 1 ("box"); others are left alone.

    ``shift`` is the previous "patch" shift (a warm start); the new one is returned.
    """
    if constraint == 0:
        return mean_box_projection_inplace(a, 0.5, shift)
    if constraint == 1:
        for j in range(a.shape[0]):
            a[j] = min(max(a[j], np.float32(0.0)), np.float32(1.0))
    return shift


def keep_largest(c, k):
    """Hard threshold :math:`H_K` per row: keep the ``k`` largest ``|c|`` of each row.

    Entries tied with the ``k``-th largest magnitude are kept in index order, so
    exactly ``k`` survive and every path (numpy, numba) picks the same ones.

    Examples
    --------
    >>> keep_largest(np.array([[3.0, -1.0, 2.0, 1.0]]), 2)
    array([[3., 0., 2., 0.]])
    """
    n = c.shape[1]
    if k >= n:
        return c.copy()
    magnitude = np.abs(c)
    threshold = np.partition(magnitude, n - k, axis=1)[:, n - k: n - k + 1]
    keep = magnitude > threshold
    tied = magnitude == threshold
    room = k - keep.sum(axis=1, keepdims=True)
    keep |= tied & (np.cumsum(tied, axis=1) <= room)
    return np.where(keep, c, c.dtype.type(0))


@numba.njit(cache=True, nogil=True)
def _select_key(keys, kth):
    """The ``kth`` smallest of the uint32 ``keys`` (overwritten): radix select, 8 bits a pass.

    Non-negative float32 values order like their bit patterns, so this selects
    on magnitudes without comparisons that branch on the data.
    """
    counts = np.zeros(256, dtype=np.int64)
    size = keys.shape[0]
    prefix = np.uint32(0)
    for shift in (24, 16, 8, 0):
        counts[:] = 0
        for j in range(size):
            counts[(keys[j] >> shift) & 255] += 1
        digit = 0
        while kth >= counts[digit]:
            kth -= counts[digit]
            digit += 1
        prefix |= np.uint32(digit) << shift
        kept = 0  # keep the keys in the chosen bucket, in place at the front
        for j in range(size):
            key = keys[j]
            keys[kept] = key
            kept += ((key >> shift) & 255) == digit
        size = kept
    return prefix


@numba.njit(cache=True, nogil=True)
def keep_largest_inplace(c, k, magnitude):
    """In-place :func:`keep_largest` of one flat float32 vector (``magnitude``: float32 scratch).

    Magnitudes are compared as the bit patterns of ``|c|`` (sign bit cleared),
    which order like the floats.
    """
    n = c.shape[0]
    if k >= n:
        return
    bits = c.view(np.uint32)
    keys = magnitude.view(np.uint32)
    for j in range(n):
        keys[j] = bits[j] & np.uint32(0x7FFFFFFF)
    threshold = _select_key(keys, n - k)
    n_above = 0
    for j in range(n):
        n_above += (bits[j] & np.uint32(0x7FFFFFFF)) > threshold
    room = k - n_above
    for j in range(n):
        key = bits[j] & np.uint32(0x7FFFFFFF)
        if key < threshold:
            c[j] = 0.0
        elif key == threshold:
            if room > 0:
                room -= 1
            else:
                c[j] = 0.0


# --- lane-interleaved kernels: LANES patches at once -------------------------------
#
# Element j of patch k of a group sits at j * LANES + k, so the element-wise
# loops of an iteration run over one long contiguous array (which the compiler
# vectorises: numba turns off LLVM's straight-line vectoriser), and the sparse
# gathers and scatters move LANES independent values per index.

LANES = 8  # one AVX2 register of float32


@numba.njit(cache=True, nogil=True, inline="always")
def to_lane(lanes, values, k):
    """Write the vector ``values`` into lane ``k`` of ``lanes``."""
    for j in range(values.shape[0]):
        lanes[j * LANES + k] = values[j]


@numba.njit(cache=True, nogil=True, inline="always")
def from_lane(lanes, values, k):
    """Read lane ``k`` of ``lanes`` into the vector ``values``."""
    for j in range(values.shape[0]):
        values[j] = lanes[j * LANES + k]


@numba.njit(cache=True, nogil=True)
def lanes_differ(a, b, k):
    """Whether lane ``k`` of two interleaved arrays differs anywhere (stops at the first difference)."""
    for q in range(k, a.shape[0], LANES):
        if a[q] != b[q]:
            return True
    return False


_HAAR_SCALE = np.float32(1.0 / np.sqrt(2.0))  # as lbdviewer.wavelets computes it


@numba.njit(cache=True, nogil=True)
def haar_forward_lanes(source, a, block, height, width):
    """``a`` = :func:`~lbdviewer.wavelets.haar_forward_inplace` of ``source``, ``LANES`` interleaved images.

    Same levels and arithmetic (bit for bit); each split goes between ``a``
    (``source`` at the first level) and the scratch ``block`` (the current
    ``h x w`` block, rows of ``w``) instead of through a copy.
    """
    h = height
    w = width
    while h > 1 or w > 1:
        if w > 1:
            _split_rows(source, width, block, w, h, w)
        else:
            _copy_block(source, width, block, w, h, w)
        source = a
        if h > 1:
            _split_cols(block, w, a, width, h, w)
        else:
            _copy_block(block, w, a, width, h, w)
        h = (h + 1) // 2
        w = (w + 1) // 2


@numba.njit(cache=True, nogil=True)
def haar_adjoint_lanes(a, block, height, width):
    """In-place :func:`~lbdviewer.wavelets.haar_adjoint_inplace` of ``LANES`` interleaved images.

    ``block`` is scratch of the size of ``a``; bit for bit the same arithmetic.
    """
    heights, widths = level_shapes(height, width)
    for level in range(heights.shape[0] - 1, -1, -1):
        h, w = heights[level], widths[level]
        if h > 1:
            _merge_cols(a, width, block, w, h, w)
        else:
            _copy_block(a, width, block, w, h, w)
        if w > 1:
            _merge_rows(block, w, a, width, h, w)
        else:
            _copy_block(block, w, a, width, h, w)


# The four steps of a Haar level below read ``source`` (rows of ``source_width``
# pixels) and write ``target`` (rows of ``target_width``); they transform the
# top-left ``h x w`` block. A pair (u, v) gives ((u + v), (u - v)) / sqrt(2).


@numba.njit(cache=True, nogil=True, inline="always")
def _copy_block(source, source_width, target, target_width, h, w):
    for row in range(h):
        line = source[row * source_width * LANES: (row * source_width + w) * LANES]
        out = target[row * target_width * LANES:]
        for q in range(line.shape[0]):
            out[q] = line[q]


@numba.njit(cache=True, nogil=True, inline="always")
def _split_rows(source, source_width, target, target_width, h, w):
    """Pairs of columns: sums to the left half, differences to the right."""
    pairs = w // 2
    n_low = w - pairs
    for row in range(h):
        line = row * source_width * LANES
        out = row * target_width * LANES
        for j in range(pairs):
            u = line + 2 * j * LANES
            low = out + j * LANES
            high = out + (n_low + j) * LANES
            for k in range(LANES):
                first = source[u + k]
                second = source[u + LANES + k]
                target[low + k] = (first + second) * _HAAR_SCALE
                target[high + k] = (first - second) * _HAAR_SCALE
        if w % 2:  # the unpaired last column ends the left half
            for k in range(LANES):
                target[out + pairs * LANES + k] = source[line + (w - 1) * LANES + k]


@numba.njit(cache=True, nogil=True, inline="always")
def _split_cols(source, source_width, target, target_width, h, w):
    """Pairs of rows: sums to the top half, differences to the bottom."""
    pairs = h // 2
    n_low = h - pairs
    size = w * LANES
    for i in range(pairs):
        first = source[2 * i * source_width * LANES:]
        second = source[(2 * i + 1) * source_width * LANES:]
        low = target[i * target_width * LANES:]
        high = target[(n_low + i) * target_width * LANES:]
        for q in range(size):
            low[q] = (first[q] + second[q]) * _HAAR_SCALE
            high[q] = (first[q] - second[q]) * _HAAR_SCALE
    if h % 2:
        last = source[(h - 1) * source_width * LANES:]
        low = target[pairs * target_width * LANES:]
        for q in range(size):
            low[q] = last[q]


@numba.njit(cache=True, nogil=True, inline="always")
def _merge_rows(source, source_width, target, target_width, h, w):
    """Inverse of :func:`_split_rows`."""
    pairs = w // 2
    n_low = w - pairs
    for row in range(h):
        line = row * source_width * LANES
        out = row * target_width * LANES
        for j in range(pairs):
            low = line + j * LANES
            high = line + (n_low + j) * LANES
            u = out + 2 * j * LANES
            for k in range(LANES):
                lo = source[low + k]
                hi = source[high + k]
                target[u + k] = (lo + hi) * _HAAR_SCALE
                target[u + LANES + k] = (lo - hi) * _HAAR_SCALE
        if w % 2:
            for k in range(LANES):
                target[out + (w - 1) * LANES + k] = source[line + pairs * LANES + k]


@numba.njit(cache=True, nogil=True, inline="always")
def _merge_cols(source, source_width, target, target_width, h, w):
    """Inverse of :func:`_split_cols`."""
    pairs = h // 2
    n_low = h - pairs
    size = w * LANES
    for i in range(pairs):
        low = source[i * source_width * LANES:]
        high = source[(n_low + i) * source_width * LANES:]
        first = target[2 * i * target_width * LANES:]
        second = target[(2 * i + 1) * target_width * LANES:]
        for q in range(size):
            first[q] = (low[q] + high[q]) * _HAAR_SCALE
            second[q] = (low[q] - high[q]) * _HAAR_SCALE
    if h % 2:
        middle = source[pairs * source_width * LANES:]
        last = target[(h - 1) * target_width * LANES:]
        for q in range(size):
            last[q] = middle[q]
