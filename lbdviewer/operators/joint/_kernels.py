"""The compiled kernels of :class:`lbdviewer.operators.joint.operator.JointOperator`: field means, back-projection, fused data terms.

Blocks of up to ``BLOCK_SITES`` consecutive sites with one pattern, the site
as the inner, vectorised index (see :mod:`lbdviewer.operators.joint.operator`). All
are ``nogil`` numba functions cached on disk; :mod:`lbdviewer._runtime.warmup`
compiles them once.
"""

from __future__ import annotations

import numba
import numpy as np

LANES = 64  # the most sites a block holds (its bits of one test are one 64-bit word); the fused kernels' loop count
INTEGRAL = -2  # ``field_group`` of a box read from the integral image (-1: taps of the image)


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


@numba.njit(inline="always")
def _block_scratch_shape(block_start, block_lo, block_hi, field_start):
    """Shape ``(fields of the largest pattern, sites of the widest block)`` of a sweep's per-field scratch."""
    return np.max(np.diff(field_start)), np.max(np.diff(block_start[block_lo:block_hi + 1]))


@numba.njit(inline="always")
def _block_sites(block, block_start, block_stride, site_pattern, field_start, pair_start):
    """The sites of ``block``: ``(s0, n, stride, p, f0, f1, i0)``.

    First site ``s0``, count ``n``, the sites' spacing ``stride``, their
    pattern ``p``, its fields ``f0..f1`` and its first test ``i0``. Inlined
    (numba ``inline="always"``) into the block sweeps.
    """
    s0 = block_start[block]
    p = site_pattern[s0]
    return s0, block_start[block + 1] - s0, block_stride[block], p, field_start[p], field_start[p + 1], pair_start[p]


@numba.njit(cache=True, nogil=True)
def _forward_blocks(x, filtered, integral, block_start, block_stride, block_lo, block_hi, site_base, integral_base,
                    layout, site_pattern, field_start, field_group, field_offset, tap_start, tap_offset, tap_weight,
                    pair_start, pair_a, pair_b, out):
    """``out[s, i]`` = difference of the two field means of test ``i`` at site ``s``, block by block."""
    means = np.empty(_block_scratch_shape(block_start, block_lo, block_hi, field_start), dtype=x.dtype)
    for block in range(block_lo, block_hi):
        s0, n, stride, p, f0, f1, i0 = _block_sites(block, block_start, block_stride, site_pattern, field_start,
                                                    pair_start)
        _block_means(x, filtered, integral, s0, n, stride, f0, f1, site_base, integral_base, layout,
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
    grads = np.zeros(_block_scratch_shape(block_start, block_lo, block_hi, field_start), dtype=out_x.dtype)
    for block in range(block_lo, block_hi):
        s0, n, stride, p, f0, f1, i0 = _block_sites(block, block_start, block_stride, site_pattern, field_start,
                                                    pair_start)
        for i in range(y.shape[1]):
            a, b = pair_a[i0 + i], pair_b[i0 + i]
            for j in range(n):
                grads[a, j] += y[s0 + j, i]
            for j in range(n):
                grads[b, j] -= y[s0 + j, i]
        _block_scatter(grads, s0, n, stride, f0, f1, site_base, integral_base, layout, field_group,
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


@numba.njit(cache=True, nogil=True)
def _filtered_patterns(field_start, field_group):
    """Whether every field of a pattern is read from a filtered plane, a pattern (not taps, not corners)."""
    filtered = np.ones(field_start.shape[0] - 1, dtype=np.bool_)
    for p in range(filtered.shape[0]):
        for f in range(field_start[p], field_start[p + 1]):
            filtered[p] = filtered[p] and field_group[f] >= 0
    return filtered


@numba.njit(inline="always")
def _block_tests(count, m, block, p, i0, words, pair_a, pair_b, margin, thresholds, oriented, ramped, test_directions,
                 hinge, tie_up, atol, source, target, offsets, inside, terms, up, margins, step, squares, right):
    """Every test of a block's pattern over the block's first ``count`` sites (see :func:`_bits_blocks`).

    Field ``f``'s means at the sites are ``source[offsets[f] + j]``, and its
    steps are added to ``target[offsets[f] + j]``: the gathered means and
    their gradients, or the filtered planes and their adjoints, read and
    written in place. ``inside[j]`` is 1 for the block's sites, 0 past its
    end: their steps are dropped by a select, not a product, since what
    lies past a block's end may be any value, NaN included (planes are not
    zeroed where no field reads them). Indices are cast to unsigned, so the
    loops carry no negative-index checks (slices of ``source`` a test cost
    as much as the test's arithmetic). Inlined (numba ``inline="always"``):
    called with the constant ``LANES``, every loop over the sites has a
    count known when compiled, and vectorises whole, with no scalar
    remainder (13 % faster a call than the block's own 61 sites at offset 8
    on 512 pixels).
    """
    dtype = source.dtype
    zero, one, two, tie = dtype.type(0.0), dtype.type(1.0), dtype.type(2.0), dtype.type(tie_up)
    scale, along_row, along_col, tie_side = terms[0], terms[1], terms[2], terms[3]
    ramp, ramp_row, ramp_col = terms[4], terms[5], terms[6]
    for i in range(m):
        a, b, word = offsets[pair_a[i0 + i]], offsets[pair_b[i0 + i]], words[block, i]
        for j in range(count):  # the target bits as 0/1, in a loop of their own: every loop vectorises
            up[j] = dtype.type((word >> np.uint64(j)) & np.uint64(1))
        # Margins: only the strict side (not taking ties) has one, d (tie + up (1 - 2 tie)) with up the
        # target as 0/1; [d - s (v - t)]_+ = [d + s t - s v]_+ with the threshold folded in.
        shift = thresholds[p, i]
        below, above = shift - atol, shift + atol  # sign(v - t) with ties: compare v with these
        if hinge and oriented:
            u_row, u_col, base = test_directions[p, 0, i], test_directions[p, 1, i], margin[p, i]
            for j in range(count):
                along = along_row[j] * u_row + along_col[j] * u_col
                margins[j] = base * (scale[j] + along * along)
            if ramped:  # a bit that the site's regional ramp explains is asked (1 - ramp) of its margin
                for j in range(count):
                    rising = dtype.type(ramp_row[j] * u_row + ramp_col[j] * u_col > zero)
                    explained = one - (rising - up[j]) * (rising - up[j])
                    margins[j] *= one - ramp[j] * explained
        elif hinge:
            for j in range(count):
                margins[j] = margin[p, i]
        if hinge:  # loops without branches: each vectorises
            for j in range(count):
                v = source[np.uint64(a + j)] - source[np.uint64(b + j)]  # unsigned: no negative-index checks
                bit = dtype.type(v >= below) if tie_up else dtype.type(v > above)
                right[j] += one - (bit - up[j]) * (bit - up[j])
                sign = two * up[j] - one
                strict = tie + up[j] * (one - two * tie)
                r = max(margins[j] * (strict + (one - strict) * tie_side[j]) + sign * shift - sign * v, zero)
                step[j] = -two * sign * r if inside[j] > zero else zero  # a select: past the end may be NaN
                squares[j] += r * r
        else:
            for j in range(count):
                v = source[np.uint64(a + j)] - source[np.uint64(b + j)]  # unsigned: no negative-index checks
                bit = dtype.type(v >= below) if tie_up else dtype.type(v > above)
                wrong = (bit - up[j]) * (bit - up[j])
                right[j] += one - wrong
                step[j] = (two * up[j] - one) * wrong if inside[j] > zero else zero
        for j in range(count):
            target[np.uint64(a + j)] += step[j]
        for j in range(count):
            target[np.uint64(b + j)] -= step[j]


@numba.njit(cache=True, nogil=True, fastmath=True)
def _bits_blocks(x, filtered, integral, words, margin, thresholds, oriented, ramped, site_terms, test_directions,
                 hinge, tie_up, atol, m, block_start, block_stride, block_lo,
                 block_hi, site_base, integral_base, layout, site_pattern, field_start, field_group, field_offset,
                 tap_start, tap_offset, tap_weight, pair_start, pair_a, pair_b, out_x, out_filtered, out_corners):
    """Data term against target bits, back-projected; returns ``(sum of squares, bits reproduced)``.

    Sites are processed a block at a time with the site as the inner,
    vectorised index: every test ``i`` runs over the block's sites at once,
    its target bits one word of ``words`` (:func:`_block_words`)
    (:func:`_block_tests`). A block whose fields are all filtered and whose
    sites read consecutive plane values (a grid row) reads the planes and
    adds its steps to their adjoints in place (BRIEF at offset 8: 2x faster
    a call than gathering its 614 fields' means ``(F, B)`` and scattering
    their gradients back); other blocks gather and scatter
    (:func:`_block_means`, :func:`_block_scatter`). A block of more than
    ``LANES / 2`` sites runs all ``LANES`` of them, the ones past its end
    reading values that are dropped, their steps zero: loops of a constant
    count are faster than loops of the block's own.
    With ``v`` the difference and ``t = thresholds[p, i]``: ``hinge``: the
    step is ``-2 s [d - s (v - t)]_+`` with ``d = margin[p, i]`` on the strict
    side only (the side that does not take ties), and its squares are summed;
    else the step is the bit error ``(b - sign(v - t)) / 2`` (``s`` where the
    bit is wrong). The threshold moves the test's cut and margins (scalars),
    not ``v``: no work a site. ``oriented``: the margin of test ``i`` at
    site ``s`` is ``d (c_s + (g_s . u_i)^2)`` instead, with ``site_terms[:, s]
    = (c_s, g_s, e_s)`` and ``u_i = test_directions[p, :, i]``, and the side
    that takes ties is asked ``e_s`` of it (see
    :meth:`lbdviewer.operators.joint.operator.JointOperator.squared_hinge`). ``ramped`` (with
    ``oriented``): rows 4-6 of ``site_terms`` are ``(w_s, r_s)``, and a test
    whose bit the regional ramp ``r_s`` explains (``sign(r_s . u_i)`` equal to
    the bit) is asked ``1 - w_s`` of its margin.
    """
    n_fields = np.max(np.diff(field_start))
    gathered, grads = np.zeros(n_fields * LANES, dtype=x.dtype), np.zeros(n_fields * LANES, dtype=x.dtype)
    stacked, offsets = np.arange(n_fields) * LANES, np.empty(n_fields, dtype=np.int64)  # field f's row in gathered
    # the block's site terms: scale, along (row, col), tie side (the share of the margin the side taking ties is
    # asked), ramp weight, ramp direction (row, col)
    terms = np.zeros((7, LANES), dtype=x.dtype)
    up, margins, step = np.zeros(LANES, dtype=x.dtype), np.zeros(LANES, dtype=x.dtype), np.zeros(LANES, x.dtype)
    squares, right = np.zeros(LANES, dtype=x.dtype), np.zeros(LANES, dtype=x.dtype)  # a block's sums, exact in right
    inside = np.zeros(LANES, dtype=x.dtype)
    all_filtered = _filtered_patterns(field_start, field_group)
    planes, adjoints = filtered.reshape(filtered.size), out_filtered.reshape(out_filtered.size)  # all planes, flat
    total, agree = 0.0, 0
    for block in range(block_lo, block_hi):
        s0, n, stride, p, f0, f1, i0 = _block_sites(block, block_start, block_stride, site_pattern, field_start,
                                                    pair_start)
        count = LANES if 2 * n > LANES else n  # all LANES sites, those past the block's end dropped
        inside[:n], inside[n:] = 1.0, 0.0
        # A pattern whose fields all read planes, at consecutive values (BRIEF: one Gaussian), is read from the
        # planes and its steps added to their adjoints in place: nothing gathered or scattered.
        in_place = all_filtered[p] and (stride == layout[1] or n == 1)
        if in_place:
            for f in range(f0, f1):
                offsets[f - f0] = field_group[f] * filtered.shape[1] + _plane_index(site_base[s0] + field_offset[f],
                                                                                     layout)
            in_place = np.max(offsets[:f1 - f0]) + count <= planes.shape[0]
        if not in_place:
            _block_means(x, filtered, integral, s0, n, stride, f0, f1, site_base, integral_base, layout,
                         field_group, field_offset, tap_start, tap_offset, tap_weight,
                         gathered.reshape((n_fields, LANES)))
        block_ramped = False  # a block whose sites lie in no ramp region skips the ramp's relief
        if oriented:
            for row in range(7 if ramped else 4):
                terms[row, :n] = site_terms[row, s0:s0 + n]
            block_ramped = ramped and np.max(terms[4, :n]) > 0
        source, target, rows = (planes, adjoints, offsets) if in_place else (gathered, grads, stacked)
        if count == LANES:
            _block_tests(LANES, m, block, p, i0, words, pair_a, pair_b, margin, thresholds, oriented, block_ramped,
                         test_directions, hinge, tie_up, atol, source, target, rows, inside, terms, up, margins, step, squares,
                         right)
        else:
            _block_tests(n, m, block, p, i0, words, pair_a, pair_b, margin, thresholds, oriented, block_ramped,
                         test_directions, hinge, tie_up, atol, source, target, rows, inside, terms, up, margins, step, squares,
                         right)
        if not in_place:
            _block_scatter(grads.reshape((n_fields, LANES)), s0, n, stride, f0, f1, site_base, integral_base, layout,
                           field_group, field_offset, tap_start, tap_offset, tap_weight, out_x, out_filtered,
                           out_corners)
        for j in range(n):
            total += squares[j]
            agree += int(right[j])
        squares[:], right[:] = 0.0, 0.0
    return total, agree


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
    """Adds the adjoint of the integral image (``cv2.integral``) applied to ``corners`` to the flat image ``out``.

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
