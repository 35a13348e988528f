"""Recover thresholded box-difference tests by running the library itself.

BEBLID and TEBLID (OpenCV contrib) compute each bit ``k`` from two square
boxes of the same half-width ``r_k`` in a ``32 x 32`` normalised patch:

.. math:: \\mathrm{bit}_k = [\\, \\bar I(B^1_k) - \\bar I(B^2_k) \\le \\theta_k \\,]

with ``\\bar I`` the mean grey level over a box and ``\\theta_k`` a learned
threshold. Inside the image the library compares integer sums,
``S_1 - S_2 <= \\theta_k A`` with ``A = (2 r + 1)^2``, in float32.

Nothing here knows the library's tables. :func:`locate_box_tests` finds the
geometry (both centres and the half-width) of every bit by describing random
images at keypoints of unit scale and keeping, for each bit, the candidate
pair of boxes whose sum difference separates the bit perfectly (a threshold
exists). Bits whose threshold the random images rarely cross (large boxes
compared against 100 grey levels and more) are traced instead:
:func:`trace_box_pixels` bisects pixel-by-pixel paths between a window giving
bit 1 and one giving bit 0, and each flip names a pixel of one box.
:func:`lbdviewer.libraries.calibration.thresholds.bisect_thresholds` then pins each threshold down by crafting
patches whose sum difference is any integer we choose (grey 128 plus a few
changed pixels inside one box) and bisecting where the bit flips, at several
scales so that ``\\theta_k`` is known to well below ``1 / A`` of the largest
boxes the library will use.
"""

from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from lbdviewer.libraries.calibration.cache import CalibrationError

#: Grey level of a crafted patch outside its two boxes.
BASE = 128
#: Paths :func:`trace_box_pixels` bisects at once, on one canvas (bounds its memory).
_PATH_ROWS = 128
#: Bits (or candidate boxes) whose sums over every calibration sample are read at once in :func:`locate_box_tests`.
_SUM_COLUMNS = 32
#: Candidate pairs of boxes :func:`_boxes_through` scores on the straddling windows at once.
_PAIR_BLOCK = 2048


def integral_image(image):
    """Integral image with a zero first row and column, int64.

    Examples
    --------
    >>> integral_image(np.ones((2, 3), dtype=np.uint8)).tolist()
    [[0, 0, 0, 0], [0, 1, 2, 3], [0, 2, 4, 6]]
    """
    image = np.asarray(image, dtype=np.int64)
    out = np.zeros((image.shape[0] + 1, image.shape[1] + 1), dtype=np.int64)
    out[1:, 1:] = image.cumsum(axis=0).cumsum(axis=1)
    return out


def box_sums(integral, cx, cy, radius):
    """Sums over the boxes ``[cx - r, cx + r] x [cy - r, cy + r]`` (inclusive), read from ``integral``.

    Examples
    --------
    >>> ii = integral_image(np.arange(16).reshape(4, 4))
    >>> box_sums(ii, np.array([1]), np.array([1]), 1).tolist()
    [45]
    """
    x0, x1 = cx - radius, cx + radius + 1
    y0, y1 = cy - radius, cy + radius + 1
    return integral[y1, x1] - integral[y0, x1] - integral[y1, x0] + integral[y0, x0]


def calibration_images(n_images, size, rng, *, noise=40, flat=False, salt=0.0):
    """Random uint8 images: a known structure plus known noise, never clipped.

    Returns
    -------
    images : list of ndarray of uint8, shape (size, size)
    noises : list of ndarray of float32
        ``image - structure`` for each image, uniform integers in
        ``[-noise, noise]`` independent of the structure (``flat``: grey 128
        plus uniform noise over the whole range).

    Notes
    -----
    The structure (smooth random fields, hard steps; grey levels within
    ``[noise, 255 - noise]`` so that nothing clips) moves box differences
    across thresholds of tens of grey levels; the noise locates the boxes.
    For a bit ``[w . I <= T]`` and noise ``n`` independent of the structure,
    ``E[(2 bit - 1) n(x)]`` is proportional to ``-w(x)`` (Stein's lemma for
    Gaussian noise, nearly so for uniform noise), so the bit-weighted mean of
    the noise draws both boxes, whatever the structure.

    Examples
    --------
    >>> images, noises = calibration_images(2, 32, 0)
    >>> images[0].dtype, int(abs(noises[1]).max()) <= 40
    (dtype('uint8'), True)
    """
    import cv2

    gen = np.random.default_rng(rng)
    images, noises = [], []
    low, high = noise, 255 - noise
    for i in range(n_images):
        coarse = gen.uniform(0.0, 1.0, (size // 16 + 2,) * 2).astype(np.float32)
        field = np.clip(cv2.resize(coarse, (size, size), interpolation=cv2.INTER_CUBIC), 0.0, 1.0)
        if i % 2 == 1:  # hard steps of full contrast
            field = (field > 0.5).astype(np.float32)
        field = np.rint(low + (high - low) * field)
        if flat:  # no structure, the strongest noise (black or white): for thresholds the noise alone crosses
            field[:] = 128
            n = np.where(gen.random((size, size)) < 0.5, -128, 127)
        elif salt:  # black and white regions, a share of pixels redrawn black or white: the largest thresholds
            field = np.where(field > 127.5, 255.0, 0.0)
            redrawn = np.where(gen.random((size, size)) < 0.5, 0.0, 255.0)
            image = np.where(gen.random((size, size)) < salt, redrawn, field)
            images.append(image.astype(np.uint8))
            noises.append((image - field - salt * (127.5 - field)).astype(np.float32))  # centred given the field
            continue
        else:
            n = gen.integers(-noise, noise + 1, (size, size))
        images.append((field + n).astype(np.uint8))
        noises.append(n.astype(np.float32))
    return images, noises


def _box_filter(maps, radius):
    """Sums of ``maps`` (H, W, M) over every ``(2 r + 1)^2`` box fully inside, (H - 2r, W - 2r, M)."""
    c = np.zeros((maps.shape[0] + 1, maps.shape[1] + 1, maps.shape[2]), dtype=np.float64)
    c[1:, 1:] = maps
    np.cumsum(c, axis=0, out=c)  # in place: summed in float64 whatever the maps' type
    np.cumsum(c, axis=1, out=c)
    w = 2 * radius + 1
    return c[w:, w:] - c[:-w, w:] - c[w:, :-w] + c[:-w, :-w]


def locate_box_tests(describe, *, half=16, max_radius=8, n_images=15, size=288, step=5, rng=0,
                     max_unexplained=None, n_paths=48):
    """Find the two boxes and the half-width each bit compares.

    Parameters
    ----------
    describe : callable
        ``describe(image_uint8, centers_xy (K, 2) int) -> bits (K, M) bool``:
        the library at unit scale and no rotation, so that a box centred at
        patch pixel ``(u, v)`` sits at image pixel ``(x + u - half, y + v - half)``.
    half : int
        Half the normalised patch side.
    max_radius : int
        Largest half-width tried.
    n_images, size, step, rng
        Calibration images (see :func:`calibration_images`), keypoint grid step.
    n_paths : int
        Paths traced per bit no candidate explains (see :func:`trace_box_pixels`; 0: none).
    max_unexplained : int, optional
        Raise if more bits than this have no exactly separating pair of
        boxes (None: never; those bits keep the pair that errs least).

    Returns
    -------
    boxes : ndarray of int64, shape (M, 5)
        ``(u1, v1, u2, v2, r)``: bit ``k`` is set when
        ``S(B1) - S(B2) <= T_k`` for the sums ``S`` over the two boxes.
    bounds : ndarray of int64, shape (M, 2)
        Sum differences seen to give bit 1 (the largest, ``[:, 0]``) and bit 0
        (the smallest, ``[:, 1]``), so ``bounds[:, 0] <= T_k < bounds[:, 1]``;
        ``-2**40`` or ``2**40`` when a bit never took that value.
    errors : ndarray of int64, shape (M,)
        Calibration samples each bit's boxes mispredict (0 for all but the
        few bits no candidate explains exactly).

    Raises
    ------
    CalibrationError
        If no candidate pair of boxes separates a bit.

    Notes
    -----
    The map ``sum_s (2 bit_s - 1) n_s`` over the patch window (see
    :func:`calibration_images`) is box-filtered at every half-width; the
    darkest and brightest boxes (scored by their sum over the side, a matched
    filter) are the candidates, and a candidate is accepted only if the sum
    differences it predicts separate the library's bits exactly. Bits with
    large thresholds and large boxes are rarely flipped by the noise; for the
    bits still unexplained, :func:`trace_box_pixels` finds pixels of their
    boxes directly and :func:`_boxes_through` keeps the boxes through them
    that separate every sample, the traced ones included. A local search
    around the candidates (:func:`_refine`) takes whatever is left.
    """
    reach = half + max_radius + 2
    margin = reach + 2 * half
    grid = np.arange(margin, size - margin, step)
    xs, ys = (g.ravel() for g in np.meshgrid(grid, grid))
    centers = np.stack([xs, ys], axis=1)
    offsets = np.arange(-reach, reach + 1)
    window = len(offsets)
    families = [calibration_images(n_images // 3, size, rng), calibration_images(n_images // 3, size, rng + 1, flat=True),
                calibration_images(n_images - 2 * (n_images // 3), size, rng + 2, salt=0.3)]
    family_maps, bits, integrals, pictures = [], [], [], []
    for images, noises in families:
        maps = 0.0
        for image, noise in zip(images, noises):
            b = np.asarray(describe(image, centers), dtype=bool)
            seen = sliding_window_view(noise, (window, window))[ys - reach, xs - reach]  # the noise each sees
            maps = maps + seen.reshape(len(xs), -1).T @ (2.0 * b - 1.0).astype(np.float32)
            bits.append(b)
            integrals.append(integral_image(image))
            pictures.append(image)
        family_maps.append(maps.reshape(window, window, -1))
    del seen
    bits = np.concatenate(bits)
    n_bits = bits.shape[1]
    integrals = np.stack(integrals)
    which = np.repeat(np.arange(n_images), len(xs))
    kx, ky = np.tile(xs, n_images), np.tile(ys, n_images)
    stride = integrals.shape[2]  # flat indices into all integral images: one gather a corner
    cells = integrals.ravel()
    origin = which * integrals[0].size + (ky - half) * stride + (kx - half)  # patch pixel (0, 0) of each sample

    def sums(u, v, r, rows=slice(None)):  # (S, M) sums over boxes centred at patch pixel (u, v) of each bit
        centre = origin[rows, None] + (v * stride + u)[None, :]
        return (cells.take(centre + ((r + 1) * stride + r + 1)) - cells.take(centre + (r + 1 - r * stride))
                - cells.take(centre + ((r + 1) * stride - r)) + cells.take(centre - (r * stride + r)))

    # candidates: per radius, the darkest box (box 1: bit 1 when it is dark) and the brightest (box 2)
    candidates = []
    for maps, radius in ((maps, radius) for maps in family_maps for radius in range(max_radius + 1)):
        scores = _box_filter(maps, radius) / (2 * radius + 1)
        flat = scores.reshape(-1, n_bits)
        side = window - 2 * radius
        first, second = np.argmin(flat, axis=0), np.argmax(flat, axis=0)
        strength = flat[second, np.arange(n_bits)] - flat[first, np.arange(n_bits)]
        to_patch = radius - reach + half  # window index of a box centre -> patch pixel
        candidates.append((strength, first % side + to_patch, first // side + to_patch,
                           second % side + to_patch, second // side + to_patch))
    strip_map = family_maps[1]  # the flat noise family's map, for _strip_candidate; the others are done with
    del family_maps
    strength = np.stack([c[0] / np.abs(c[0]).max() for c in candidates])  # (families x radii, M)
    order = np.argsort(-strength, axis=0)
    n_radii = max_radius + 1
    found = np.zeros(n_bits, dtype=bool)
    errors = np.zeros(n_bits, dtype=np.int64)
    boxes = np.zeros((n_bits, 5), dtype=np.int64)
    bounds = np.zeros((n_bits, 2), dtype=np.int64)
    big = np.int64(1) << 40
    for rank in range(len(candidates)):
        todo = np.flatnonzero(~found)
        if todo.size == 0:
            break
        for slot in np.unique(order[rank, todo]):
            radius = int(slot % n_radii)
            same = todo[order[rank, todo] == slot]
            for ks in np.array_split(same, -(-len(same) // _SUM_COLUMNS)):  # (samples, bits) a block at a time
                _, u1, v1, u2, v2 = (c[ks] for c in candidates[slot])
                diff = sums(u1, v1, radius) - sums(u2, v2, radius)
                b = bits[:, ks]
                low = np.where(b, diff, -big).max(axis=0)
                high = np.where(b, big, diff).min(axis=0)
                ok = high > low
                boxes[ks[ok]] = np.stack([u1, v1, u2, v2, np.full(len(ks), radius)], axis=1)[ok]
                bounds[ks[ok]] = np.stack([low, high], axis=1)[ok]
                found[ks[ok]] = True
    errors[~found] = len(bits)  # not explained yet
    both = bits.any(axis=0) & ~bits.all(axis=0)
    traced_bits = np.flatnonzero(~found & both)
    if traced_bits.size and n_paths:  # thresholds the noise rarely crosses: trace the boxes along crafted paths
        def windows(samples):
            return np.stack([pictures[which[s]][ky[s] - reach:ky[s] + reach + 1, kx[s] - reach:kx[s] + reach + 1]
                             for s in samples])
        gen = np.random.default_rng(rng + 3)
        ones = [windows(gen.choice(np.flatnonzero(bits[:, k]), n_paths)) for k in traced_bits]
        zeros = [windows(gen.choice(np.flatnonzero(~bits[:, k]), n_paths)) for k in traced_bits]
        pixels, straddles = trace_box_pixels(describe, traced_bits, ones, zeros, half=half, rng=rng + 4)
        for n, k in enumerate(traced_bits):
            traced = _boxes_through(pixels[n], straddles[n], sums, bits[:, k], half=half, max_radius=max_radius)
            if traced is not None and traced[2] < errors[k]:
                boxes[k], bounds[k], errors[k] = traced
    for k in np.flatnonzero(errors):  # boxes that overlap blur the map: search around the best candidates
        starts = [_strip_candidate(strip_map[..., k], half - reach)]
        starts += [np.array([c[k] for c in candidates[slot][1:]] + [slot % n_radii]) for slot in order[:, k]]
        for start in starts:
            if start is None:
                continue
            trial, cut, wrong = _refine(sums, bits[:, k], start, max_radius)
            if wrong < errors[k]:
                boxes[k], bounds[k], errors[k] = trial, cut, wrong
            if wrong == 0:
                break
    if max_unexplained is not None and np.count_nonzero(errors) > max_unexplained:
        missing = np.flatnonzero(errors)
        raise CalibrationError(f"no pair of boxes separates bit {int(missing[0])} ({missing.size} bits unexplained)")
    return boxes, bounds, errors


def trace_box_pixels(describe, bits, ones, zeros, *, half=16, rng=0):
    """Pixels of the boxes of ``bits``, found by bisecting paths between a window giving 1 and one giving 0.

    Parameters
    ----------
    describe : callable
        As in :func:`locate_box_tests` (unit scale, no rotation).
    bits : sequence of int
        The bits to trace.
    ones, zeros : list of ndarray of uint8, shape (P, W, W)
        Per bit, ``P`` windows centred on a keypoint (``W`` odd, wide enough
        to hold the bit's boxes) for which the library gives bit 1, and ``P``
        for which it gives 0.
    half : int
    rng : int

    Returns
    -------
    pixels : list of ndarray of int64, shape (P, 3)
        Per bit and path, ``(u, v, sign)``: patch pixel ``(u, v)`` lies in box
        1 only (``sign`` 1) or in box 2 only (``sign`` -1).
    straddles : list of ndarray of uint8, shape (P, 2, W, W)
        Per bit and path, two windows one pixel apart giving bits 1 and 0.

    Notes
    -----
    Path ``j`` copies the first ``j`` pixels (in a random order) of the
    0-window into the 1-window. The sum difference ``S(B1) - S(B2)`` moves
    only when a pixel of exactly one box changes, so where the bit first
    flips along a bisection (1 at ``j``, 0 at ``j + 1``) pixel ``j`` lies in
    one box only, and the sign of its change says which. The paths of all
    bits run :data:`_PATH_ROWS` at once, one keypoint each on one canvas:
    ``log2(W^2)`` calls a group.

    Examples
    --------
    One bit, ``I(17, 16) - I(19, 16) <= 0`` in patch pixels, traced from
    black windows to windows with patch pixel ``(17, 16)`` raised:

    >>> def describe(image, centers):
    ...     x, y = centers[:, 0], centers[:, 1]
    ...     return (image[y, x + 1].astype(int) - image[y, x + 3] <= 0)[:, None]
    >>> ones, zeros = np.zeros((1, 2, 9, 9), np.uint8), np.zeros((1, 2, 9, 9), np.uint8)
    >>> zeros[:, :, 4, 5] = 200  # the window's centre (4, 4) is patch pixel (16, 16)
    >>> pixels, straddles = trace_box_pixels(describe, [0], ones, zeros)
    >>> pixels[0].tolist(), straddles[0].shape
    ([[17, 16, 1], [17, 16, 1]], (2, 2, 9, 9))
    """
    gen = np.random.default_rng(rng)
    paths = [(n, row) for n, windows in enumerate(ones) for row in range(len(windows))]  # (bit, window) a path
    owner = np.asarray(bits, dtype=np.int64)[[n for n, _ in paths]]
    pixels = np.empty((len(paths), 3), dtype=np.int64)
    straddles = np.empty((len(paths), 2) + np.shape(ones[0])[1:], dtype=np.uint8)
    for first in range(0, len(paths), _PATH_ROWS):  # the paths a group at a time, on a canvas of their own
        group = slice(first, first + _PATH_ROWS)
        starts, ends = (np.stack([np.asarray(side[n][row], dtype=np.uint8) for n, row in paths[group]])
                        for side in (ones, zeros))
        pixels[group], straddles[group] = _trace_paths(describe, starts, ends, owner[group], gen, half)
    counts = np.cumsum([len(w) for w in ones])[:-1]
    return np.split(pixels, counts), np.split(straddles, counts)


def _trace_paths(describe, starts, ends, owner, gen, half):
    """``(pixels, straddles)`` of :func:`trace_box_pixels` for one group of paths, bisected on one canvas.

    Each path draws its random pixel order from ``gen`` in turn, so groups draw what one call for all would.
    """
    n_paths, width = starts.shape[0], starts.shape[1]
    flat_starts = starts.reshape(n_paths, -1).astype(np.int16)  # grey levels, signed differences
    flat_ends = ends.reshape(n_paths, -1).astype(np.int16)
    orders = np.argsort(gen.random(flat_starts.shape) + (flat_starts == flat_ends), axis=1)  # changed pixels first
    rank = np.argsort(orders, axis=1)  # each pixel's place in its path's order
    lo = np.zeros(n_paths, dtype=np.int64)
    hi = np.count_nonzero(flat_starts != flat_ends, axis=1)
    per_side = int(np.ceil(np.sqrt(n_paths)))
    margin = int(np.ceil(1.75 * half)) + 2  # keypoints this far inside take the integer path
    canvas = 2 * margin + per_side * width
    slot = np.arange(n_paths)
    top, left = margin + (slot // per_side) * width, margin + (slot % per_side) * width
    centers = np.stack([left + width // 2, top + width // 2], axis=1)

    def windows(count):  # path windows after ``count`` changed pixels
        return np.where(rank < count[:, None], flat_ends, flat_starts).reshape(n_paths, width, width)

    while np.any(hi - lo > 1):
        mid = (lo + hi) // 2
        image = np.full((canvas, canvas), BASE, dtype=np.uint8)
        for n, w in enumerate(windows(mid)):
            image[top[n]:top[n] + width, left[n]:left[n] + width] = w
        bit = np.asarray(describe(image, centers), dtype=bool)[slot, owner]
        lo, hi = np.where(bit, mid, lo), np.where(bit, hi, mid)
    flipped = orders[slot, lo]
    change = np.sign(flat_ends[slot, flipped] - flat_starts[slot, flipped])
    shift = half - width // 2
    pixels = np.stack([flipped % width + shift, flipped // width + shift, change], axis=1)
    return pixels, np.stack([windows(lo), windows(lo + 1)], axis=1).astype(np.uint8)


def _boxes_through(pixels, straddles, sums, bit, *, half, max_radius, limit=20000):
    """Boxes ``(u1, v1, u2, v2, r)`` holding the traced pixels that err least on all samples, or None.

    ``pixels`` and ``straddles`` come from :func:`trace_box_pixels` for one
    bit, ``sums`` and ``bit`` are the calibration samples of
    :func:`locate_box_tests`. Returns ``(boxes, bounds, errors)`` as
    :func:`_refine` does, with the straddling windows counted as samples.
    """
    first, second = pixels[pixels[:, 2] > 0, :2], pixels[pixels[:, 2] < 0, :2]
    if not len(first) or not len(second):
        return None
    width = straddles.shape[-1]
    windows = straddles.reshape(-1, width, width)
    window_bits = np.tile([True, False], len(straddles))
    integrals = np.stack([integral_image(w) for w in windows])
    shift = width // 2 - half

    def window_sums(u, v, r):
        x0, y0 = u - r + shift, v - r + shift
        x1, y1 = x0 + 2 * r + 1, y0 + 2 * r + 1
        return (integrals[:, y1, x1] - integrals[:, y0, x1] - integrals[:, y1, x0] + integrals[:, y0, x0])

    def centres(points, r):  # box centres within r of every point, whose box stays in the window
        low = np.maximum(points.max(axis=0) - r, r - shift)
        high = np.minimum(points.min(axis=0) + r, width - 1 - r - shift)
        if np.any(high < low):
            return np.zeros((0, 2), dtype=np.int64)
        grid = np.mgrid[low[0]:high[0] + 1, low[1]:high[1] + 1]
        return grid.reshape(2, -1).T

    def outside(points, c, r):  # (C,) no point within box c
        return np.all(np.abs(points[None, :, :] - c[:, None, :]).max(axis=2) > r, axis=1)
    best = None
    for r in range(max_radius + 1):
        c1, c2 = centres(first, r), centres(second, r)
        c1, c2 = c1[outside(second, c1, r)], c2[outside(first, c2, r)]
        if not len(c1) or not len(c2) or len(c1) * len(c2) > limit:
            continue
        i, j = (g.ravel() for g in np.meshgrid(np.arange(len(c1)), np.arange(len(c2))))

        def window_diff(pairs):  # (windows, pairs) sum differences on the straddling windows
            return window_sums(c1[i[pairs], 0], c1[i[pairs], 1], r) - window_sums(c2[j[pairs], 0], c2[j[pairs], 1], r)

        def sample_diff(pairs):  # (samples, pairs) sum differences on the calibration samples
            return sums(c1[i[pairs], 0], c1[i[pairs], 1], r) - sums(c2[j[pairs], 0], c2[j[pairs], 1], r)

        keep = []  # the pairs that separate the straddling windows, a block of pairs at a time
        for start in range(0, len(i), _PAIR_BLOCK):
            diff = window_diff(np.arange(start, min(start + _PAIR_BLOCK, len(i))))
            keep.append(start + np.flatnonzero(np.where(window_bits[:, None], diff, -np.inf).max(axis=0)
                                               < np.where(window_bits[:, None], np.inf, diff).min(axis=0)))
        keep = np.concatenate(keep)
        if not keep.size:
            continue
        wrong = np.concatenate([_errors(sample_diff(keep[start:start + _SUM_COLUMNS]), bit)
                                for start in range(0, len(keep), _SUM_COLUMNS)])
        n = int(np.argmin(wrong))
        if best is None or wrong[n] < best[2]:
            samples = np.concatenate([sample_diff(keep[[n]])[:, 0], window_diff(keep[[n]])[:, 0]])
            labels = np.concatenate([bit, window_bits])
            big = np.int64(1) << 40
            bounds = np.array([np.where(labels, samples, -big).max(), np.where(labels, big, samples).min()])
            boxes = np.array([*c1[i[keep[n]]], *c2[j[keep[n]]], r], dtype=np.int64)
            best = boxes, bounds, int(wrong[n])
    return best


def _strip_candidate(pixel_map, shift):
    """Boxes of equal size shifted by one pixel, from the two strips they leave in ``pixel_map``, or None.

    Two boxes ``B1`` and ``B2`` one row (or column) apart differ only on one
    row at each end: the map shows a dark strip (``B1`` only) and a bright
    one (``B2`` only) of length ``2 r + 1``. ``shift`` turns map indices into
    patch pixels.
    """
    dark = np.unravel_index(np.argmin(pixel_map), pixel_map.shape)
    bright = np.unravel_index(np.argmax(pixel_map), pixel_map.shape)
    level = 0.5 * min(-pixel_map[dark], pixel_map[bright])

    def run(point, sign, axis):
        line = sign * (pixel_map[point[0], :] if axis == 1 else pixel_map[:, point[1]])
        i = j = point[axis]
        while i > 0 and line[i - 1] > level:
            i -= 1
        while j < len(line) - 1 and line[j + 1] > level:
            j += 1
        return i, j

    (a0, a1), (b0, b1) = run(dark, -1, 1), run(dark, -1, 0)  # columns and rows of the dark strip
    horizontal = (a1 - a0) > (b1 - b0)
    length = (a1 - a0) if horizontal else (b1 - b0)
    if length % 2:
        return None
    radius = length // 2
    if horizontal:  # B1 only is a row: its box lies on the far side from the bright row
        x = (a0 + a1) // 2
        step = 1 if dark[0] < bright[0] else -1
        y1, y2 = dark[0] + step * radius, bright[0] - step * radius
        return np.array([x + shift, y1 + shift, x + shift, y2 + shift, radius])
    y = (b0 + b1) // 2
    step = 1 if dark[1] < bright[1] else -1
    x1, x2 = dark[1] + step * radius, bright[1] - step * radius
    return np.array([x1 + shift, y + shift, x2 + shift, y + shift, radius])


def _errors(diff, bit):
    """Fewest samples any threshold gets wrong, per column of ``diff`` (S, C) against ``bit`` (S,)."""
    order = np.argsort(diff, axis=0, kind="stable")
    b = bit[order]  # bits sorted by difference, per column
    ones_below = np.cumsum(b, axis=0)  # bit 1 at or below each cut (right)
    zeros_below = np.cumsum(~b, axis=0)  # bit 0 at or below each cut (wrong)
    wrong = zeros_below + (ones_below[-1] - ones_below)
    return np.minimum(wrong.min(axis=0), ones_below[-1])


def _refine(sums, bit, start, max_radius, *, steps=6, subset=3000):
    """Local search for the boxes ``(u1, v1, u2, v2, r)`` that best separate ``bit``.

    Returns
    -------
    boxes : ndarray of int64, shape (5,)
    bounds : ndarray of int64, shape (2,)
        As in :func:`locate_box_tests`, over all samples (for the best threshold when inexact).
    errors : int
        Samples the best threshold gets wrong (0: exact).
    """
    shifts = np.array([(a, b) for a in (-1, 0, 1) for b in (-1, 0, 1)])
    rows = np.arange(min(subset, len(bit)))
    current = np.array(start, dtype=np.int64)
    for _ in range(steps):
        trials = []
        for dr in (-1, 0, 1):
            r = current[4] + dr
            if 0 <= r <= max_radius:
                for s1 in shifts:
                    for s2 in shifts:
                        trials.append([*(current[:2] + s1), *(current[2:4] + s2), r])
        trials = np.array(trials)
        diff = np.empty((len(rows), len(trials)), dtype=np.int64)
        for r in np.unique(trials[:, 4]):
            cols = np.flatnonzero(trials[:, 4] == r)
            t = trials[cols]
            diff[:, cols] = (sums(t[:, 0], t[:, 1], r, rows) - sums(t[:, 2], t[:, 3], r, rows))
        errors = _errors(diff, bit[rows])
        best = int(np.argmin(errors))
        moved = not np.array_equal(trials[best], current)
        current = trials[best]
        if errors[best] == 0 or not moved:
            break
    full = sums(current[[0]], current[[1]], current[4])[:, 0] - sums(current[[2]], current[[3]], current[4])[:, 0]
    wrong = int(_errors(full[:, None], bit)[0])
    big = np.int64(1) << 40
    low, high = np.where(bit, full, -big).max(), np.where(bit, big, full).min()
    if high <= low:  # inexact: the cut that errs least, as bounds
        order = np.sort(full)
        cut = order[min(len(order) - 1, int(np.sum(bit)))]
        low, high = cut - 1, cut
    return current, np.array([low, high]), wrong
