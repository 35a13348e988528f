"""Compiled pieces the fused solver paths share: hard thresholding, projections, lane access.

The lane layout (:data:`LANES`) and the Haar transform on lanes live in :mod:`lbdviewer.operators.wavelets`.
"""

from __future__ import annotations

import numba
import numpy as np

from lbdviewer.solvers.projections import mean_box_projection_inplace
from lbdviewer.operators.wavelets import LANES


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
