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
:func:`_plane_index`), every test then runs over the
block at once, and gradients go back the same way. The data terms of BIHT
(:meth:`JointOperator.binary_gradient`) and of the sign-consistency solver
(:meth:`JointOperator.squared_hinge`) are fused with their back-projection
and read the bits packed, 8 a byte, so memory is ``O(HW + S M / 8)``. Block
ranges run in parallel, the first in the calling thread and the others in
the solvers' shared pool (``nogil`` kernels, :func:`lbdviewer.solvers.base.map_parallel`);
each range back-projects into its own image.

Sites may carry their own patterns (rotated or scaled keypoint patterns,
different patch sizes); all patterns must have the same number of
measurements ``M``.
"""

from __future__ import annotations

import math

import cv2
import numba
import numpy as np

from lbdviewer.operators import field_entries
from lbdviewer.patterns.base import Pattern
from lbdviewer.solvers.base import map_parallel

BACKENDS = ("auto", "direct", "filtered")
FILTER_READS_PER_PIXEL = 0.25
PARALLEL_MIN_SITES = 64  # fewer sites run in the calling thread
BLOCK_SITES = 64  # sites a block of the kernels handles at once: its bits of one test fill a 64-bit word
TIE_ATOL = 0.5 / 255  # half an 8-bit grey level: smaller differences are invisible in the output
BOX_PLANE_READS_PER_PIXEL = 1.0  # a box read less often than this is read as 4 corners of the integral image
INTEGRAL = -2  # ``field_group`` of a box read from the integral image (-1: taps of the image)
MAX_PHASES = 64  # planes are polyphase for grid spacings up to this (wider ones are sparse: read in place)
SMALL_STENCIL = 25  # stencils of at most this many weights are filtered by compiled row sweeps, larger ones by OpenCV


@numba.njit(cache=True, nogil=True)
def _plane_index(position, layout):
    """Index in a filtered plane of the pixel at flat ``position`` (``r W + c``) of the image.

    ``layout = (W, P, K)``: planes are stored *polyphase*, column ``c`` at
    ``(r P + c mod P) K + c div P`` with ``K = ceil(W / P)``, so that sites
    ``P`` columns apart (a grid row of offset ``P``) read consecutive values;
    ``P = 1`` is the image's own layout.
    """
    width, phases, per_phase = layout[0], layout[1], layout[2]
    r, c = position // width, position % width
    return (r * phases + c % phases) * per_phase + c // phases


@numba.njit(cache=True, nogil=True)
def _reorder_phases(planes, phased, layout, forward):
    """Copy row-major ``planes`` into the polyphase ``phased`` (``forward``) or back (padding written as 0 / dropped).

    Row by row: an image row and its ``P`` phase rows stay in the first-level cache.
    """
    width, phases, per_phase = layout[0], layout[1], layout[2]
    height = planes.shape[1] // width
    for g in range(planes.shape[0]):
        for r in range(height):
            row = planes[g, r * width:(r + 1) * width]
            for phase in range(phases):
                start = (r * phases + phase) * per_phase
                target = phased[g, start:start + per_phase]
                count = (width - phase + phases - 1) // phases  # columns phase, phase + P, ... inside the image
                if forward:
                    for k in range(count):
                        target[k] = row[k * phases + phase]
                    target[count:] = 0.0
                else:
                    for k in range(count):
                        row[k * phases + phase] = target[k]


@numba.njit(cache=True, nogil=True, fastmath=True)
def _correlate_phased(image, stencil, layout, plane):
    """``plane`` (laid out as :func:`_plane_index` says) = ``image`` correlated with ``stencil``.

    ``plane[r, c] = sum_ij stencil[i, j] image[r + i, c + j]``, zero outside
    the image (OpenCV's ``filter2D`` with the anchor at the stencil's top
    left and a constant border), a row at a time in loops that vectorise,
    written straight into the polyphase layout. For small stencils.
    """
    height, width = image.shape
    phases, per_phase = layout[1], layout[2]
    row = np.empty(width, dtype=plane.dtype)
    for r in range(height):
        row[:] = 0.0
        for i in range(min(stencil.shape[0], height - r)):
            source = image[r + i]
            for j in range(min(stencil.shape[1], width)):
                weight, shifted = stencil[i, j], source[j:]
                for c in range(width - j):
                    row[c] += weight * shifted[c]
        for phase in range(phases):
            start = (r * phases + phase) * per_phase
            target = plane[start:start + per_phase]
            count = (width - phase + phases - 1) // phases
            for k in range(count):
                target[k] = row[k * phases + phase]
            target[count:] = 0.0


@numba.njit(cache=True, nogil=True, fastmath=True)
def _correlate_phased_adjoint(plane, stencil, layout, row_lo, row_hi, out):
    """Adds the adjoint of :func:`_correlate_phased` applied to ``plane`` to the flat image ``out``.

    ``plane`` must be zero outside rows ``row_lo..row_hi``; those are skipped.
    """
    width, phases, per_phase = layout[0], layout[1], layout[2]
    height = out.shape[0] // width
    row = np.empty(width, dtype=plane.dtype)
    for r in range(max(row_lo, 0), min(row_hi, height)):
        for phase in range(phases):
            start = (r * phases + phase) * per_phase
            source = plane[start:start + per_phase]
            for k in range((width - phase + phases - 1) // phases):
                row[k * phases + phase] = source[k]
        for i in range(min(stencil.shape[0], height - r)):
            for j in range(min(stencil.shape[1], width)):
                weight, target = stencil[i, j], out[(r + i) * width + j:(r + i + 1) * width]
                for c in range(width - j):
                    target[c] += weight * row[c]


@numba.njit(cache=True, nogil=True)
def _block_means(x, filtered, integral, s0, n, stride, f0, f1, site_base, integral_base, layout, field_group,
                 field_offset, tap_start, tap_offset, tap_weight, means):
    """``means[f - f0, j]``: mean of field ``f`` at site ``s0 + j``, for the ``n`` sites of a block.

    Filtered fields are read from their plane (laid out as :func:`_plane_index`
    says: consecutive values when the block's sites are ``P`` pixels apart, a
    strided slice when ``P = 1`` and they are evenly spaced), boxes marked
    ``INTEGRAL`` from four corners of the integral image (float64, its taps
    offsets from ``integral_base``), the others from their taps in ``x``.
    """
    for f in range(f0, f1):
        group, offset = field_group[f], field_offset[f]
        row = means[f - f0]
        if group >= 0 and stride == layout[1]:  # consecutive values: a copy that vectorises
            start = _plane_index(site_base[s0] + offset, layout)
            source = filtered[group, start:start + n]
            for j in range(n):
                row[j] = source[j]
        elif group >= 0 and stride > 0 and layout[1] == 1:
            # slices, not index arithmetic: no negative-index checks in the loop
            start = site_base[s0] + offset
            source = filtered[group, start:start + (n - 1) * stride + 1:stride]
            for j in range(n):
                row[j] = source[j]
        elif group >= 0:
            for j in range(n):
                means[f - f0, j] = filtered[group, _plane_index(site_base[s0 + j] + offset, layout)]
        elif group == INTEGRAL and stride > 0:  # a block lies in one image row: its corners are evenly spaced
            t, span = tap_start[f], (n - 1) * stride + 1
            a, b = integral_base[s0] + tap_offset[t], integral_base[s0] + tap_offset[t + 1]
            c, d = integral_base[s0] + tap_offset[t + 2], integral_base[s0] + tap_offset[t + 3]
            corner_a, corner_b = integral[a:a + span:stride], integral[b:b + span:stride]
            corner_c, corner_d = integral[c:c + span:stride], integral[d:d + span:stride]
            wa, wb, wc, wd = tap_weight[t], tap_weight[t + 1], tap_weight[t + 2], tap_weight[t + 3]
            for j in range(n):
                row[j] = wa * corner_a[j] + wb * corner_b[j] + wc * corner_c[j] + wd * corner_d[j]
        elif group == INTEGRAL:
            for j in range(n):
                total = 0.0
                for t in range(tap_start[f], tap_start[f + 1]):
                    total += tap_weight[t] * integral[integral_base[s0 + j] + tap_offset[t]]
                means[f - f0, j] = total
        elif stride > 0:
            span = (n - 1) * stride + 1
            row[:n] = 0.0
            for t in range(tap_start[f], tap_start[f + 1]):
                tap, weight = site_base[s0] + tap_offset[t], tap_weight[t]
                source = x[tap:tap + span:stride]
                for j in range(n):
                    row[j] += weight * source[j]
        else:
            for j in range(n):
                acc = x.dtype.type(0.0)
                for t in range(tap_start[f], tap_start[f + 1]):
                    acc += tap_weight[t] * x[site_base[s0 + j] + tap_offset[t]]
                means[f - f0, j] = acc


@numba.njit(cache=True, nogil=True)
def _block_scatter(grads, s0, n, stride, f0, f1, site_base, integral_base, layout, field_group, field_offset,
                   tap_start, tap_offset, tap_weight, out_x, out_filtered, out_corners):
    """Adjoint of :func:`_block_means`: adds ``grads`` to the planes, corners or taps, then zeroes ``grads``."""
    for f in range(f0, f1):
        group, offset = field_group[f], field_offset[f]
        row = grads[f - f0]
        if group >= 0 and stride == layout[1]:
            start = _plane_index(site_base[s0] + offset, layout)
            target = out_filtered[group, start:start + n]
            for j in range(n):
                target[j] += row[j]
        elif group >= 0 and stride > 0 and layout[1] == 1:
            start = site_base[s0] + offset
            target = out_filtered[group, start:start + (n - 1) * stride + 1:stride]
            for j in range(n):
                target[j] += row[j]
        elif group >= 0:
            for j in range(n):
                out_filtered[group, _plane_index(site_base[s0 + j] + offset, layout)] += grads[f - f0, j]
        elif group == INTEGRAL and stride > 0:
            span = (n - 1) * stride + 1
            for t in range(tap_start[f], tap_start[f + 1]):
                corner = integral_base[s0] + tap_offset[t]
                target, weight = out_corners[corner:corner + span:stride], np.float64(tap_weight[t])
                for j in range(n):
                    target[j] += weight * row[j]
        elif group == INTEGRAL:
            for j in range(n):
                g = np.float64(grads[f - f0, j])
                for t in range(tap_start[f], tap_start[f + 1]):
                    out_corners[integral_base[s0 + j] + tap_offset[t]] += tap_weight[t] * g
        elif stride > 0:
            span = (n - 1) * stride + 1
            for t in range(tap_start[f], tap_start[f + 1]):
                tap, weight = site_base[s0] + tap_offset[t], tap_weight[t]
                target = out_x[tap:tap + span:stride]
                for j in range(n):
                    target[j] += weight * row[j]
        else:
            for j in range(n):
                g = grads[f - f0, j]
                for t in range(tap_start[f], tap_start[f + 1]):
                    out_x[site_base[s0 + j] + tap_offset[t]] += tap_weight[t] * g
        grads[f - f0, :n] = 0.0


@numba.njit(cache=True, nogil=True)
def _forward_blocks(x, filtered, integral, block_start, block_stride, block_lo, block_hi, site_base, integral_base,
                    layout, site_pattern, field_start, field_group, field_offset, tap_start, tap_offset, tap_weight,
                    pair_start, pair_a, pair_b, out):
    """``out[s, i]`` = difference of the two field means of test ``i`` at site ``s``, block by block."""
    width = np.max(np.diff(block_start[block_lo:block_hi + 1]))
    means = np.empty((np.max(np.diff(field_start)), width), dtype=x.dtype)
    for block in range(block_lo, block_hi):
        s0 = block_start[block]
        n = block_start[block + 1] - s0
        p = site_pattern[s0]
        f0, f1, i0 = field_start[p], field_start[p + 1], pair_start[p]
        _block_means(x, filtered, integral, s0, n, block_stride[block], f0, f1, site_base, integral_base, layout,
                     field_group, field_offset, tap_start, tap_offset, tap_weight, means)
        for i in range(out.shape[1]):
            a, b = pair_a[i0 + i], pair_b[i0 + i]
            for j in range(n):
                out[s0 + j, i] = means[a, j] - means[b, j]


@numba.njit(cache=True, nogil=True)
def _adjoint_blocks(y, block_start, block_stride, block_lo, block_hi, site_base, integral_base, layout, site_pattern,
                    field_start, field_group, field_offset, tap_start, tap_offset, tap_weight, pair_start, pair_a,
                    pair_b, out_x, out_filtered, out_corners):
    """Adds ``A^T y`` for the sites of blocks ``block_lo..block_hi`` to ``out_x``, the planes and the corners."""
    width = np.max(np.diff(block_start[block_lo:block_hi + 1]))
    grads = np.zeros((np.max(np.diff(field_start)), width), dtype=out_x.dtype)
    for block in range(block_lo, block_hi):
        s0 = block_start[block]
        n = block_start[block + 1] - s0
        p = site_pattern[s0]
        f0, f1, i0 = field_start[p], field_start[p + 1], pair_start[p]
        for i in range(y.shape[1]):
            a, b = pair_a[i0 + i], pair_b[i0 + i]
            for j in range(n):
                grads[a, j] += y[s0 + j, i]
            for j in range(n):
                grads[b, j] -= y[s0 + j, i]
        _block_scatter(grads, s0, n, block_stride[block], f0, f1, site_base, integral_base, layout, field_group,
                       field_offset, tap_start, tap_offset, tap_weight, out_x, out_filtered, out_corners)


@numba.njit(cache=True, nogil=True)
def _block_words(packed, block_start, m):
    """Bits regrouped by block: bit ``j`` of ``words[block, i]`` is bit ``i`` of the block's site ``j``.

    ``packed`` holds each site's bits least-significant first, 8 a byte. A
    block's bits for one test are then one 64-bit word, read by the kernels
    with shifts as they sweep the block's sites.
    """
    words = np.zeros((block_start.shape[0] - 1, m), dtype=np.uint64)
    for block in range(block_start.shape[0] - 1):
        for j in range(block_start[block + 1] - block_start[block]):
            site, bit = block_start[block] + j, np.uint64(1) << np.uint64(j)
            for i in range(m):
                if (packed[site, i >> 3] >> (i & 7)) & 1:
                    words[block, i] |= bit
    return words


@numba.njit(cache=True, nogil=True, fastmath=True)
def _bits_blocks(x, filtered, integral, words, margin, hinge, tie_up, atol, m, block_start, block_stride, block_lo,
                 block_hi, site_base, integral_base, layout, site_pattern, field_start, field_group, field_offset,
                 tap_start, tap_offset, tap_weight, pair_start, pair_a, pair_b, out_x, out_filtered, out_corners):
    """Data term against target bits, back-projected; returns ``(sum of squares, bits reproduced)``.

    Sites are processed a block at a time with the site as the inner,
    vectorised index: field means gathered ``(F, B)``, then every test ``i``
    runs over the block's sites at once, its target bits one word of
    ``words`` (:func:`_block_words`), and its step goes back to the means. ``hinge``: the step is
    ``-2 s [d - s v]_+`` with ``d = margin[p, i]`` on the strict side only
    (the side that does not take ties), and its squares are summed; else the
    step is the bit error ``(b - sign v) / 2`` (``s`` where the bit is wrong).
    """
    width = np.max(np.diff(block_start[block_lo:block_hi + 1]))
    n_fields = np.max(np.diff(field_start))
    means = np.empty((n_fields, width), dtype=x.dtype)
    grads = np.zeros((n_fields, width), dtype=x.dtype)
    step, up = np.empty(width, dtype=x.dtype), np.empty(width, dtype=x.dtype)
    squares, right = np.zeros(width, dtype=x.dtype), np.zeros(width, dtype=x.dtype)  # a block's sums, exact in right
    total, agree = 0.0, 0
    zero, one, two, tie = x.dtype.type(0.0), x.dtype.type(1.0), x.dtype.type(2.0), x.dtype.type(tie_up)
    for block in range(block_lo, block_hi):
        s0 = block_start[block]
        n = block_start[block + 1] - s0
        p = site_pattern[s0]
        f0, f1, i0 = field_start[p], field_start[p + 1], pair_start[p]
        stride = block_stride[block]
        _block_means(x, filtered, integral, s0, n, stride, f0, f1, site_base, integral_base, layout, field_group,
                     field_offset, tap_start, tap_offset, tap_weight, means)
        for i in range(m):
            a, b, word = pair_a[i0 + i], pair_b[i0 + i], words[block, i]
            for j in range(n):  # the target bits as 0/1, in a loop of their own: every loop vectorises
                up[j] = x.dtype.type((word >> np.uint64(j)) & np.uint64(1))
            # Margins when the target is 1 and when it is 0: only the strict side (not taking ties) has one.
            high, low = margin[p, i] * (one - tie), margin[p, i] * tie
            if hinge:  # loops without branches: each vectorises
                for j in range(n):
                    v = means[a, j] - means[b, j]
                    bit = x.dtype.type(v >= -atol) if tie_up else x.dtype.type(v > atol)
                    right[j] += one - (bit - up[j]) * (bit - up[j])
                    sign = two * up[j] - one
                    r = max(low + up[j] * (high - low) - sign * v, zero)
                    step[j] = -two * sign * r
                    squares[j] += r * r
            else:
                for j in range(n):
                    v = means[a, j] - means[b, j]
                    bit = x.dtype.type(v >= -atol) if tie_up else x.dtype.type(v > atol)
                    wrong = (bit - up[j]) * (bit - up[j])
                    right[j] += one - wrong
                    step[j] = (two * up[j] - one) * wrong
            for j in range(n):
                grads[a, j] += step[j]
            for j in range(n):
                grads[b, j] -= step[j]
        _block_scatter(grads, s0, n, stride, f0, f1, site_base, integral_base, layout, field_group, field_offset,
                       tap_start, tap_offset, tap_weight, out_x, out_filtered, out_corners)
        for j in range(n):
            total += squares[j]
            agree += int(right[j])
            squares[j], right[j] = zero, zero
    return total, agree


@numba.njit(cache=True)
def _site_blocks(site_base, site_pattern, width, limit):
    """Split the sites, in order, into blocks of one pattern evenly spaced along one image row (a grid row).

    Returns the block bounds (``B + 1``) and each block's spacing in pixels
    (0 for a single site). Blocks hold at most ``limit`` sites; ``width``
    is the image's.
    """
    starts, strides = [0], []
    first, stride = 0, 0
    for s in range(1, site_base.shape[0]):
        step = site_base[s] - site_base[s - 1]
        joins = site_pattern[s] == site_pattern[first] and site_base[s] // width == site_base[first] // width
        if s - first == 1 and joins and step > 0:
            stride = step
        elif s - first >= limit or not joins or step != stride or stride == 0:
            starts.append(s)
            strides.append(stride)
            first, stride = s, 0
    starts.append(site_base.shape[0])
    strides.append(stride)
    return np.array(starts, dtype=np.int64), np.array(strides, dtype=np.int64)


@numba.njit(cache=True, nogil=True)
def _box_planes(integral, boxes, planes):
    """``planes[k, r W + c] = weight_k * (box sum of the image at (r, c), size h_k x w_k)`` from its integral.

    ``integral`` is ``(H + 1, W + 1)`` float64 with ``integral[r, c]`` the
    sum of ``image[:r, :c]``; ``boxes`` rows are ``(h, w, weight)``. Only
    boxes inside the image are written (no field reads any other).
    """
    height, width = integral.shape[0] - 1, integral.shape[1] - 1
    for k in range(boxes.shape[0]):
        h, w, weight = int(boxes[k, 0]), int(boxes[k, 1]), boxes[k, 2]
        for r in range(height - h + 1):
            top, bottom = integral[r], integral[r + h]
            row = planes[k, r * width:(r + 1) * width]
            for c in range(width - w + 1):
                row[c] = weight * (bottom[c + w] - top[c + w] - bottom[c] + top[c])


@numba.njit(cache=True, nogil=True)
def _integral(image):
    """``(H + 1, W + 1)`` float64 integral image: ``out[r, c]`` = sum of ``image[:r, :c]``."""
    height, width = image.shape
    out = np.zeros((height + 1, width + 1))
    for r in range(height):
        running = 0.0
        for c in range(width):
            running += image[r, c]
            out[r + 1, c + 1] = out[r, c + 1] + running
    return out


@numba.njit(cache=True, nogil=True)
def _box_corners(planes, boxes, width, row_lo, row_hi, corners):
    """Adds the box planes' values, with their boxes' weights and signs, at the four corners of each box.

    ``corners`` is ``(H + 1, W + 1)``, like the integral image:
    :func:`_integral_adjoint` then finishes the adjoint of :func:`_box_planes`.
    Plane rows outside ``[row_lo, row_hi)`` must be zero; they are skipped.
    """
    height = corners.shape[0] - 1
    for k in range(boxes.shape[0]):
        h, w, weight = int(boxes[k, 0]), int(boxes[k, 1]), boxes[k, 2]
        for r in range(max(row_lo, 0), min(height - h + 1, row_hi)):
            values = planes[k, r * width:r * width + width - w + 1]
            top, bottom = corners[r], corners[r + h]
            for c in range(values.shape[0]):
                top[c] += weight * values[c]
                bottom[c] -= weight * values[c]
            for c in range(values.shape[0]):
                top[c + w] -= weight * values[c]
                bottom[c + w] += weight * values[c]


@numba.njit(cache=True, nogil=True)
def _integral_adjoint(corners, row_lo, row_hi, out):
    """Adds the adjoint of :func:`_integral` applied to ``corners`` to the flat image ``out``.

    Pixel ``(r, c)`` receives the sum of the corners at ``(r' > r, c' > c)``:
    one suffix-sum sweep from the bottom row up. Corners hold the signed
    weights of whole boxes, so only rows ``row_lo..row_hi`` (those the boxes
    span) receive anything; corner rows past ``row_hi`` must be zero.
    """
    height, width = corners.shape[0] - 1, corners.shape[1] - 1
    below = np.zeros(width + 1)  # suffix sums of the rows below the current one
    for r in range(min(height, row_hi), max(row_lo, 0), -1):
        running = 0.0
        for c in range(width, -1, -1):
            running += corners[r, c]
            below[c] += running
        for c in range(width):
            out[(r - 1) * width + c] += below[c + 1]


def _field_entries(patterns, kernel):
    """The nonzeros of the field kernels of all patterns, the fields numbered through the patterns in order.

    Parameters
    ----------
    patterns : sequence of Pattern
    kernel : {"gaussian", "box"} or None
        Field kernel; None: each pattern's own.

    Returns
    -------
    field_pattern : ndarray of int, shape (F,)
        Pattern of each field.
    entry_start : ndarray of int, shape (F + 1,)
        Entries of field ``f``: ``entry_start[f]:entry_start[f + 1]``, in
        row-major order, at least one (:func:`lbdviewer.operators.field_entries`).
    pixels : ndarray of int32, shape (E,)
        Row-major index of each entry's pixel in its patch.
    weights : ndarray of float64, shape (E,)
    """
    field_pattern = np.repeat(np.arange(len(patterns)), [pattern.n_fields for pattern in patterns])
    return (field_pattern, *field_entries(patterns, kernel=kernel))


@numba.njit(cache=True)
def _mix(value):
    """splitmix64 of a uint64: equal values give equal hashes, others hashes spread evenly."""
    z = value + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@numba.njit(cache=True)
def _field_stencils(entry_start, pixels, field_size, weights):
    """Each field's anchor and stencil shape, whether its stencil is a box, and hashes of both.

    A field's stencil is the dense rectangle of its kernel's bounding box.
    Stencils are equal when their shapes and weights rounded to 1e-9 are
    (see :func:`_same_fields`). The arguments are those of
    :func:`_field_entries` and each field's patch size.

    Returns
    -------
    corner : ndarray of int, shape (F, 4)
        ``(r0, c0, h, w)``: anchor (top-left pixel in the patch) and shape.
    box : ndarray of bool, shape (F,)
        Whether the stencil has one weight throughout (O(1) a pixel to filter).
    top_left : ndarray of float64, shape (F,)
        The stencil's top-left weight.
    hashes : ndarray of uint64, shape (F, 2)
        Hash of each field's stencil, and of the stencil and its anchor.
    """
    n_fields = entry_start.shape[0] - 1
    corner = np.empty((n_fields, 4), dtype=np.int64)
    box = np.empty(n_fields, dtype=np.bool_)
    top_left = np.empty(n_fields)
    hashes = np.empty((n_fields, 2), dtype=np.uint64)
    for f in range(n_fields):
        start, stop, size = entry_start[f], entry_start[f + 1], field_size[f]
        r0, r1 = pixels[start] // size, pixels[stop - 1] // size
        c0, c1 = size, 0
        low, high = weights[start], weights[start]
        for e in range(start, stop):
            c = pixels[e] - pixels[e] // size * size
            c0, c1 = min(c0, c), max(c1, c)
            low, high = min(low, weights[e]), max(high, weights[e])
        h, w = r1 - r0 + 1, c1 - c0 + 1
        corner[f, 0], corner[f, 1], corner[f, 2], corner[f, 3] = r0, c0, h, w
        box[f] = low == high and (stop - start == h * w or high == 0.0)
        top_left[f] = weights[start] if pixels[start] == r0 * size + c0 else 0.0
        value = _mix(_mix(np.uint64(h)) ^ np.uint64(w))
        for e in range(start, stop):
            rounded = np.int64(np.rint(weights[e] * 1e9))
            if rounded != 0:
                r = pixels[e] // size
                value = _mix(_mix(value ^ np.uint64((r - r0) * w + pixels[e] - r * size - c0)) ^ np.uint64(rounded))
        hashes[f, 0], hashes[f, 1] = value, _mix(_mix(value ^ np.uint64(r0)) ^ np.uint64(c0))
    return corner, box, top_left, hashes


@numba.njit(cache=True)
def _same_fields(head, corner, entry_start, pixels, field_size, weights, f, g):
    """Whether fields ``f`` and ``g`` have equal ``head`` rows and stencils.

    Stencils are compared as their weights that do not round to 0 at 1e-9,
    with their places in the stencil (``corner`` of :func:`_field_stencils`).
    """
    for c in range(head.shape[1]):
        if head[f, c] != head[g, c]:
            return False
    if corner[f, 2] != corner[g, 2] or corner[f, 3] != corner[g, 3]:
        return False
    i, j = entry_start[f], entry_start[g]
    while True:
        while i < entry_start[f + 1] and np.rint(weights[i] * 1e9) == 0.0:
            i += 1
        while j < entry_start[g + 1] and np.rint(weights[j] * 1e9) == 0.0:
            j += 1
        if i == entry_start[f + 1] or j == entry_start[g + 1]:
            return i == entry_start[f + 1] and j == entry_start[g + 1]
        ri, rj = pixels[i] // field_size[f], pixels[j] // field_size[g]
        if (np.rint(weights[i] * 1e9) != np.rint(weights[j] * 1e9) or ri - corner[f, 0] != rj - corner[g, 0]
                or pixels[i] - ri * field_size[f] - corner[f, 1] != pixels[j] - rj * field_size[g] - corner[g, 1]):
            return False
        i, j = i + 1, j + 1


@numba.njit(cache=True)
def _group_fields(fields, segment_start, hashes, head, corner, entry_start, pixels, field_size, weights):
    """Number the distinct ``fields`` of each segment in order of first occurrence (a hash table).

    Fields are equal when their ``head`` rows and stencils are (see
    :func:`_same_fields`; the other arguments are those of
    :func:`_field_stencils` and its ``corner``). ``hashes`` (one per field)
    must agree for equal fields; fields whose hashes agree are compared in
    full, so the grouping is exact whatever the hash. Fields of different
    segments (``fields[segment_start[s]:segment_start[s + 1]]``) are never grouped.

    Returns
    -------
    ids : ndarray of int, shape (n,)
        Group of each of ``fields``, ``0..G-1`` in order of first occurrence.
    first, last : ndarray of int, shape (G,)
        Position in ``fields`` of each group's first and last field.
    """
    n = fields.shape[0]
    size = 2
    while size < 2 * np.max(np.diff(segment_start)):
        size *= 2
    mask = np.uint64(size - 1)
    slots = np.empty((size, 2), dtype=np.uint64)  # (group + 1, hash): one cache line a probe
    ids = np.empty(n, dtype=np.int64)
    first = np.empty(n, dtype=np.int64)
    last = np.empty(n, dtype=np.int64)
    groups = 0
    for s in range(segment_start.shape[0] - 1):
        slots[:, 0] = 0
        for i in range(segment_start[s], segment_start[s + 1]):
            f = fields[i]
            slot = hashes[f] & mask
            while slots[slot, 0] > 0 and not (slots[slot, 1] == hashes[f] and _same_fields(
                    head, corner, entry_start, pixels, field_size, weights, f, fields[first[slots[slot, 0] - 1]])):
                slot = (slot + np.uint64(1)) & mask
            if slots[slot, 0] == 0:
                first[groups] = i
                groups += 1
                slots[slot, 0], slots[slot, 1] = groups, hashes[f]
            ids[i] = slots[slot, 0] - 1
            last[ids[i]] = i
    return ids, first[:groups].copy(), last[:groups].copy()


@numba.njit(cache=True)
def _taps(fields, integral, corner, entry_start, pixels, field_size, weights, width):
    """The taps of ``fields`` (none for -1), in order, as the kernels read them: ``(tap_start, tap_offset, tap_weight)``.

    A field's taps are its nonzero weights at their offsets in a
    ``width``-wide image or, where ``integral`` is True (a box, ``corner`` its
    anchor and shape), the four corners of its box in the ``(H + 1) x (W + 1)``
    integral image, weighted ``+w, -w, -w, +w``.
    """
    tap_start = np.zeros(fields.shape[0] + 1, dtype=np.int64)
    count = 0
    for i in range(fields.shape[0]):
        if fields[i] >= 0 and integral[i]:
            count += 4
        elif fields[i] >= 0:
            for e in range(entry_start[fields[i]], entry_start[fields[i] + 1]):
                count += weights[e] != 0.0
        tap_start[i + 1] = count
    tap_offset = np.empty(count, dtype=np.int64)
    tap_weight = np.empty(count)
    t = 0
    for i in range(fields.shape[0]):
        f = fields[i]
        if f < 0:
            continue
        if integral[i]:
            r0, c0, h, w = corner[f, 0], corner[f, 1], corner[f, 2], corner[f, 3]
            for dr, dc, sign in ((0, 0, 1.0), (0, w, -1.0), (h, 0, -1.0), (h, w, 1.0)):
                tap_offset[t] = (r0 + dr) * (width + 1) + c0 + dc
                tap_weight[t] = sign * weights[entry_start[f]]
                t += 1
            continue
        for e in range(entry_start[f], entry_start[f + 1]):
            if weights[e] != 0.0:
                tap_offset[t] = pixels[e] // field_size[f] * width + pixels[e] % field_size[f]
                tap_weight[t] = weights[e]
                t += 1
    return tap_start, tap_offset, tap_weight


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
        ``FILTER_READS_PER_PIXEL`` times per pixel (a box: when reading its
        taps directly would touch more values than the image has pixels),
        else reads taps directly; the other two force one way (for tests).
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
        self._ranges = (None, [])  # the last _chunks: ((threads, PARALLEL_MIN_SITES), block ranges)

    # -- construction ---------------------------------------------------
    def _build_tables(self, backend):
        """The kernels' tables: each pattern's distinct fields, the filtered planes, taps and pairs.

        Compiled passes over all fields of all patterns at once (5000 rotated
        keypoint patterns in about a second). A pattern's fields with the same
        anchor and stencil are one field; a stencil's reads (its distinct fields over
        all patterns, times their sites) decide whether it is filtered.
        Planes are the general stencils, then the boxes, each in order of
        first occurrence; a plane takes the weights of its stencil's last field.
        """
        height, width = self._shape2d
        n_pixels = height * width
        field_pattern, entry_start, pixels, weights = _field_entries(self.patterns, self.kernel)
        field_size = np.array([p.patch_size for p in self.patterns], dtype=np.int64)[field_pattern]
        corner, box, top_left, hashes = _field_stencils(entry_start, pixels, field_size, weights)
        entries = (corner, entry_start, pixels, field_size, weights)
        pattern_start = np.concatenate([[0], np.cumsum([p.n_fields for p in self.patterns])]).astype(np.int64)
        # Fields of a pattern with one anchor and stencil (BRIEF: 1024 fields, ~600 distinct).
        distinct, first, _ = _group_fields(np.arange(len(corner)), pattern_start, hashes[:, 1], corner[:, :2],
                                           *entries)
        field_counts = np.bincount(field_pattern[first], minlength=len(self.patterns))
        field_start = np.concatenate([[0], np.cumsum(field_counts)]).astype(np.int64)
        # Stencils of the distinct fields over all patterns, wherever anchored (BRIEF: one Gaussian).
        own, _, last = _group_fields(first, np.array([0, len(first)]), hashes[:, 0], corner[:, :0], *entries)
        last = first[last]  # the field whose weights each stencil's plane takes
        site_counts = np.bincount(self.site_pattern, minlength=len(self.patterns))
        reads = np.bincount(own, weights=site_counts[field_pattern[first]])
        size, box = corner[last, 2] * corner[last, 3], box[last]
        if backend == "filtered":
            chosen = np.ones(len(last), dtype=bool)
        elif backend == "direct":
            chosen = np.zeros(len(last), dtype=bool)
        else:
            chosen = np.where(box, reads >= BOX_PLANE_READS_PER_PIXEL * n_pixels,
                              reads >= FILTER_READS_PER_PIXEL * n_pixels)
        # Boxes read too rarely for a plane: four corners of the integral image, fewer taps than their pixels.
        from_integral = box & ~chosen & (size > 4) & (backend == "auto")
        general, boxes = np.flatnonzero(chosen & ~box), np.flatnonzero(chosen & box)
        group_of = np.full(len(last), -1, dtype=np.int64)
        group_of[np.concatenate([general, boxes])] = np.arange(len(general) + len(boxes))
        self._stencils = []
        for f in last[general]:
            r0, c0, h, w = corner[f]
            rows, cols = np.divmod(pixels[entry_start[f]:entry_start[f + 1]], field_size[f])
            dense = np.zeros((h, w))
            dense[rows - r0, cols - c0] = weights[entry_start[f]:entry_start[f + 1]]
            self._stencils.append(dense.astype(self.dtype))
        self._boxes = np.column_stack([corner[:, 2:], top_left])[last[boxes]].astype(np.float64)

        field_group = np.where(from_integral, INTEGRAL, group_of)[own]
        tap_start, tap_offset, tap_weight = _taps(np.where(field_group < 0, first, -1), field_group == INTEGRAL,
                                                  corner, entry_start, pixels, field_size, weights, width)
        pairs = np.concatenate([p.pairs + pattern_start[index] for index, p in enumerate(self.patterns)])
        pairs = distinct[pairs] - field_start[field_pattern[pairs]]
        self._tables = (
            field_start,
            field_group,
            np.where(field_group >= 0, corner[first, 0] * width + corner[first, 1], 0),
            tap_start,
            tap_offset,
            tap_weight.astype(self.dtype),
            np.cumsum([0] + [p.m for p in self.patterns]).astype(np.int64),
            np.ascontiguousarray(pairs[:, 0], dtype=np.int64),
            np.ascontiguousarray(pairs[:, 1], dtype=np.int64),
        )
        self._site_base = (self.sites[:, 0] * width + self.sites[:, 1]).astype(np.int64)
        self._integral_base = self._site_base + self.sites[:, 0]  # the same pixel in the (W + 1)-wide integral
        self._uses_integral = bool(len(self._boxes)) or bool(np.any(field_group == INTEGRAL))
        self._block_start, self._block_stride = _site_blocks(self._site_base, self.site_pattern, width, BLOCK_SITES)
        self._layout = np.array([width, 1, width], dtype=np.int64)
        strides = self._block_stride[np.diff(self._block_start) > 1]
        if len(self._stencils) + len(self._boxes) and len(strides):
            # Planes polyphase with the grid's spacing: a grid row reads consecutive values (_plane_index).
            phases = int(np.bincount(strides).argmax())
            if 1 < phases <= MAX_PHASES:
                self._layout = np.array([width, phases, -(-width // phases)], dtype=np.int64)

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

    # -- kernels --------------------------------------------------------
    def _filter(self, image):
        """The image correlated with every filtered stencil, one flat plane each, and its flat integral image.

        Box planes are computed from the integral image, which boxes marked
        ``INTEGRAL`` also read (a 1-element stand-in when nothing does).
        """
        n_stencils = len(self._stencils)
        integral = _integral(image) if self._uses_integral else np.zeros((1, 1))
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
        words = _block_words(np.ascontiguousarray(packed_bits), self._block_start, self.m)
        out, results = self._back_project(_bits_blocks, image.ravel(), *self._filter(image), words,
                                          np.zeros((len(self.patterns), self.m), dtype=self.dtype), False,
                                          self.tie_positive, self.dtype.type(TIE_ATOL), self.m)
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

    def squared_hinge(self, x, positive, margin, *, atol=TIE_ATOL):
        r"""Squared hinge of the bits, its gradient and the bits reproduced, in one pass.

        With :math:`s_{si} = \pm 1` the target bits and :math:`\delta_{si}` the
        margins (``margin`` of the site's pattern on the strict side of the
        test, 0 on the side that takes ties),

        .. math::  h(x) = \sum_{s,i} \big[\delta_{si} - s_{si} (A x)_{si}\big]_+^2, \qquad
                   \nabla h = A^T\big(-2\, s \odot [\delta - s \odot A x]_+\big).

        Parameters
        ----------
        x : array_like, shape (H, W)
            Current estimate.
        positive : ndarray of bool, shape (S, M), or of uint8, shape (S, ceil(M / 8))
            Target bits (True = +1), or the same packed least-significant
            first (:func:`lbdviewer.operators.pack_bits` of the ±1 bits),
            or in the kernels' own layout (:meth:`block_bits`, uint64): the
            one to pass when the same bits are evaluated many times.
        margin : float or array_like, shape (len(patterns), M)
            Margin of each test of each pattern (rows in the order of
            :attr:`patterns`), asked of strict tests only: memory stays
            ``O(M)`` per pattern, not per site.
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
        out, results = self._back_project(
            _bits_blocks, image.ravel(), *self._filter(image), words, np.ascontiguousarray(margin), True,
            self.tie_positive, self.dtype.type(atol), self.m)
        return (float(sum(r[0] for r in results)), out.reshape(self._shape2d),
                int(sum(r[1] for r in results)))

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
