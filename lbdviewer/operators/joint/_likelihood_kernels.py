"""The compiled kernel of :meth:`lbdviewer.operators.joint.operator.JointOperator.bit_likelihood`.

The block sweep of the squared hinge (:func:`lbdviewer.operators.joint._kernels._bits_blocks`)
with a per-test loss that reads bits as noisy measurements: a robust
(algebraic) logistic likelihood, optionally mixed with the squared hinge, on
the tests a mask keeps. No transcendental function: one square root a test, so the
sweep vectorises and costs about what the hinge's does.
"""

from __future__ import annotations

import numba
import numpy as np

from lbdviewer.operators.joint._kernels import _block_means, _block_scatter, _block_sites


@numba.njit(cache=True, nogil=True, fastmath=True)
def _likelihood_blocks(x, filtered, integral, words, keep_words, margin, inverse_noise, thresholds, hinge_weight,
                       logistic_weight, tie_up, atol, m, block_start, block_stride, block_lo, block_hi, site_base,
                       integral_base, layout, site_pattern, field_start, field_group, field_offset, tap_start,
                       tap_offset, tap_weight, pair_start, pair_a, pair_b, out_x, out_filtered, out_corners):
    """Loss of the target bits, back-projected; returns ``(loss, bits reproduced)``.

    For test ``i`` of site ``s`` (pattern ``p``) with target sign ``b``,
    difference ``v``, threshold ``t = thresholds[p, i]`` and
    ``z = b (v - t) / noise[p, i]``, the loss is
    ``logistic_weight (sqrt(1 + z^2) - z) / 2 + hinge_weight [d - b (v - t)]_+^2``
    with ``d = margin[p, i]`` on the strict side only (the side that does not
    take ties), counted where ``keep_words`` has the test's bit set; its
    derivative in ``v`` goes back to the two fields. Target bits and the mask
    come as :func:`lbdviewer.operators.joint._kernels._block_words`.
    """
    width = np.max(np.diff(block_start[block_lo:block_hi + 1]))
    n_fields = np.max(np.diff(field_start))
    means = np.empty((n_fields, width), dtype=x.dtype)
    grads = np.zeros((n_fields, width), dtype=x.dtype)
    step, up, kept = np.empty(width, dtype=x.dtype), np.empty(width, dtype=x.dtype), np.empty(width, dtype=x.dtype)
    losses, right = np.zeros(width, dtype=x.dtype), np.zeros(width, dtype=x.dtype)  # a block's sums
    total, agree = 0.0, 0
    zero, half, one, two = x.dtype.type(0.0), x.dtype.type(0.5), x.dtype.type(1.0), x.dtype.type(2.0)
    tie, wh, wl = x.dtype.type(tie_up), x.dtype.type(hinge_weight), x.dtype.type(logistic_weight)
    for block in range(block_lo, block_hi):
        s0, n, stride, p, f0, f1, i0 = _block_sites(block, block_start, block_stride, site_pattern, field_start,
                                                    pair_start)
        _block_means(x, filtered, integral, s0, n, stride, f0, f1, site_base, integral_base, layout, field_group,
                     field_offset, tap_start, tap_offset, tap_weight, means)
        for i in range(m):
            a, b, word, keep = pair_a[i0 + i], pair_b[i0 + i], words[block, i], keep_words[block, i]
            for j in range(n):
                up[j] = x.dtype.type((word >> np.uint64(j)) & np.uint64(1))
                kept[j] = x.dtype.type((keep >> np.uint64(j)) & np.uint64(1))
            # The threshold folded into the margins, the cut and z (scalars a test: see _bits_blocks).
            shift = thresholds[p, i]
            high, low = margin[p, i] * (one - tie) + shift, margin[p, i] * tie - shift
            below, above = shift - atol, shift + atol
            k = inverse_noise[p, i]
            shift_k = shift * k
            for j in range(n):
                v = means[a, j] - means[b, j]
                bit = x.dtype.type(v >= below) if tie_up else x.dtype.type(v > above)
                right[j] += one - (bit - up[j]) * (bit - up[j])
                sign = two * up[j] - one
                r = max(low + up[j] * (high - low) - sign * v, zero)
                z = sign * (v * k - shift_k)
                root = np.sqrt(one + z * z)
                losses[j] += kept[j] * (wl * half * (root - z) + wh * r * r)
                step[j] = -sign * kept[j] * (wl * k * half * (one - z / root) + two * wh * r)
            for j in range(n):
                grads[a, j] += step[j]
            for j in range(n):
                grads[b, j] -= step[j]
        _block_scatter(grads, s0, n, stride, f0, f1, site_base, integral_base, layout, field_group, field_offset,
                       tap_start, tap_offset, tap_weight, out_x, out_filtered, out_corners)
        for j in range(n):
            total += losses[j]
            agree += int(right[j])
            losses[j], right[j] = zero, zero
    return total, agree
