"""Pin down the thresholds of located box tests by crafting patches (BEBLID, TEBLID).

Once :func:`lbdviewer.libraries.calibration.box_tests.locate_box_tests` knows the two boxes
``B1, B2`` and half-width ``r`` of a bit ``[S(B1) - S(B2) <= theta A]``
(``S`` box sums, ``A = (2 r + 1)^2``), :func:`craft_patch` makes grey
patches whose sum difference is any integer we choose and
:func:`bisect_thresholds` bisects where the bit flips. At scale ``s`` the
boxes grow to half-width ``s r``, so :func:`threshold_intervals` repeats the
bisection at larger scales until ``theta`` is known to ``1 / A`` of a box
wide enough to tell the thresholds' decimals apart.
"""

from __future__ import annotations

import numpy as np

from lbdviewer.libraries.calibration.box_tests import BASE

#: Boxes whose area at the largest probe scale is below this are bisected again at the fine scale.
FINE_AREA = 200


def threshold_intervals(describe_at, boxes, bounds, *, scales=(1, 4), fine_scale=8, half=16, canvas=2048,
                        fine_canvas=3072):
    """Bounds ``[low, high)`` on each threshold ``theta_k`` (grey levels), from bisections at several scales.

    Parameters
    ----------
    describe_at : callable
        ``describe_at(scale)`` returns the library's ``describe`` (see
        :func:`bisect_thresholds`) at an integer ``scale``.
    boxes, bounds : ndarray of int, shapes (M, 5) and (M, 2)
        From :func:`lbdviewer.libraries.calibration.box_tests.locate_box_tests` (sum differences at scale 1).
    scales : tuple of int
        Scales every bit is bisected at, in increasing order.
    fine_scale : int
        Scale at which boxes still smaller than :data:`FINE_AREA` pixels at
        ``scales[-1]`` (half-width 1 for scale 4: ``81`` pixels, ``theta`` to
        0.012) are bisected once more (``(2 * 8 + 1)^2 = 289``: to 0.0035).
    half, canvas, fine_canvas
        Patch half-side; sides of the probe images.

    Returns
    -------
    low, high : ndarray of float64, shape (M,)
        ``low <= theta_k < high``.

    Notes
    -----
    At scale ``s`` the library compares ``S(B1) - S(B2) <= theta (2 s r + 1)^2``:
    the largest difference ``c`` still giving 1 puts ``theta`` in
    ``[c / A_s, (c + 1) / A_s)``, and what is known so far, as differences at
    the next scale, starts its bisection.
    """
    boxes = np.asarray(boxes, dtype=np.int64)
    radius = boxes[:, 4]
    low, high = np.full(len(boxes), -np.inf), np.full(len(boxes), np.inf)

    def narrow(scale, bits, side):
        area = (2 * scale * radius[bits] + 1) ** 2
        if np.isfinite(low[bits]).all():
            start_low, start_high = np.floor(low[bits] * area), np.ceil(high[bits] * area)
        else:
            start_low, start_high = bounds[bits, 0], bounds[bits, 1]
        describe = describe_at(scale)
        cut = bisect_thresholds(lambda image, centers: np.asarray(describe(image, centers))[:, bits], boxes[bits],
                                np.asarray(start_low, dtype=np.int64), np.asarray(start_high, dtype=np.int64),
                                scale=scale, half=half, canvas=side)
        low[bits] = np.maximum(low[bits], cut / area)
        high[bits] = np.minimum(high[bits], (cut + 1) / area)
    every = np.arange(len(boxes))
    for scale in scales:
        narrow(scale, every, canvas)
    fine = np.flatnonzero((radius > 0) & ((2 * scales[-1] * radius + 1) ** 2 < FINE_AREA))
    if fine.size:
        narrow(fine_scale, fine, fine_canvas)
    return low, high


def craft_patch(box1, box2, radius, target):
    """Offsets from grey :data:`BASE` giving ``S(B1) - S(B2) == target`` and nothing else.

    Parameters
    ----------
    box1, box2 : (int, int)
        Centres ``(x, y)`` in a patch whose origin is the top-left of a
        canvas wide enough to hold both boxes.
    radius : int
    target : int

    Returns
    -------
    xs, ys : ndarray of int
        Pixels changed.
    deltas : ndarray of int
        Their offsets from :data:`BASE`, in ``[-128, 127]``.
    reached : int
        The sum difference actually made (``target`` unless out of reach).

    Examples
    --------
    >>> xs, ys, d, reached = craft_patch((2, 2), (6, 2), 1, 300)
    >>> int(d.sum()), reached
    (300, 300)
    """
    low = np.minimum(box1, box2) - radius
    side = np.abs(np.subtract(box1, box2)) + 2 * radius + 1
    yy, xx = np.mgrid[low[1]:low[1] + side[1], low[0]:low[0] + side[0]]
    xx, yy = xx.ravel(), yy.ravel()

    def inside(c):
        return (np.abs(xx - c[0]) <= radius) & (np.abs(yy - c[1]) <= radius)
    in1, in2 = inside(box1), inside(box2)
    only1 = (xx[in1 & ~in2], yy[in1 & ~in2])
    only2 = (xx[in2 & ~in1], yy[in2 & ~in1])
    # the difference grows by raising B1 or lowering B2, and shrinks the other way
    if target >= 0:
        moves = ((only1, 1, 255 - BASE), (only2, -1, BASE))
    else:
        moves = ((only1, -1, BASE), (only2, 1, 255 - BASE))
    remaining = abs(int(target))
    xs, ys, deltas = [], [], []
    for group, sign, room in moves:
        if remaining == 0 or not len(group[0]):
            continue
        count = min(len(group[0]), -(-remaining // room))
        amounts = np.full(count, room, dtype=np.int64)
        amounts[-1] = min(room, remaining - room * (count - 1))
        xs.append(group[0][:count].astype(np.int64))
        ys.append(group[1][:count].astype(np.int64))
        deltas.append(sign * amounts)
        remaining -= int(amounts.sum())
    reached = int(target) - int(np.sign(target)) * remaining
    if not xs:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64), reached
    return np.concatenate(xs), np.concatenate(ys), np.concatenate(deltas), reached


def bisect_thresholds(describe, boxes, low, high, *, scale, half=16, canvas=2048):
    """Find ``T_k``, the largest sum difference that still gives bit 1, at one scale.

    Parameters
    ----------
    describe : callable
        ``describe(image_uint8, centers_xy (K, 2) int) -> bits (K, M) bool``
        with the library scaled by ``scale`` (an integer), no rotation: a box
        ``(u, v, r)`` of the normalised patch sits at ``(x + s u - s half,
        y + s v - s half)`` with half-width ``s r``.
    boxes : ndarray, shape (M, 5)
        From :func:`locate_box_tests`.
    low, high : ndarray of int, shape (M,)
        Sum differences (at this scale) known to give bit 1 and bit 0.
    scale : int
    half : int
    canvas : int
        Side of the images the probes are drawn on.

    Returns
    -------
    ndarray of int64, shape (M,)
        ``T_k``; bits whose flip is out of reach keep the reachable bound.
    """
    boxes = np.asarray(boxes, dtype=np.int64)
    low = np.array(low, dtype=np.int64)
    high = np.array(high, dtype=np.int64)
    s = int(scale)
    reach = s * (2 * half + 2 * int(boxes[:, 4].max()) + 2)
    border = int(np.ceil(1.75 * half * s)) + reach + 2
    pitch = reach + 2
    per_side = max(1, (canvas - 2 * border) // pitch)
    while True:
        open_bits = np.flatnonzero(high - low > 1)
        if open_bits.size == 0:
            return low
        mids = (low + high) // 2
        for start in range(0, open_bits.size, per_side * per_side):
            chunk = open_bits[start:start + per_side * per_side]
            image = np.full((canvas, canvas), BASE, dtype=np.uint8)
            slots = np.arange(len(chunk))
            cx = border + (slots % per_side) * pitch + reach // 2
            cy = border + (slots // per_side) * pitch + reach // 2
            reached = np.empty(len(chunk), dtype=np.int64)
            for n, k in enumerate(chunk):
                u1, v1, u2, v2, r = boxes[k]
                origin = np.array([cx[n] - s * half, cy[n] - s * half])
                xs, ys, deltas, reached[n] = craft_patch(origin + s * np.array([u1, v1]),
                                                         origin + s * np.array([u2, v2]), s * r, mids[k])
                image[ys, xs] = BASE + deltas  # distinct pixels, deltas in [-BASE, 255 - BASE]
            out = np.asarray(describe(image, np.stack([cx, cy], axis=1)), dtype=bool)
            bit = out[slots, chunk]
            low[chunk] = np.where(bit, reached, low[chunk])
            high[chunk] = np.where(bit, high[chunk], reached)
            # a target out of reach (no uint8 patch makes it) whose bit did not flip: the flip
            # lies beyond what any image can show, so the bound reached settles the bit
            closed = (reached != mids[chunk]) & (bit == (mids[chunk] > 0))
            high[chunk[closed & bit]] = low[chunk[closed & bit]] + 1
            low[chunk[closed & ~bit]] = high[chunk[closed & ~bit]] - 1
