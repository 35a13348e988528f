"""The tables of :class:`lbdviewer.operators.joint.operator.JointOperator`: distinct fields, filtered stencils, taps, site blocks.

:func:`build_tables` turns the sites and their patterns into the arrays the
compiled kernels of :mod:`lbdviewer.operators.joint._kernels` read; it runs once, when
the operator is made.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np

from lbdviewer.operators.joint._kernels import INTEGRAL, LANES
from lbdviewer.operators.descriptor import _all_bounds, field_entries

FILTER_READS_PER_PIXEL = 0.25
BLOCK_SITES = LANES  # sites a block of the kernels handles at once: its bits of one test fill a 64-bit word
BOX_PLANE_READS_PER_PIXEL = 1.0  # a box read less often than this is read as 4 corners of the integral image
MAX_PHASES = 64  # planes are polyphase for grid spacings up to this (wider ones are sparse: read in place)


@dataclass(frozen=True)
class JointTables:
    """What the kernels read, built once per operator by :func:`build_tables`.

    Attributes
    ----------
    stencils : tuple of ndarray
        Dense general stencils filtered over the whole image, one plane each.
    boxes : ndarray of float64, shape (n_boxes, 3)
        ``(h, w, weight)`` of each box plane (``_box_planes`` in the kernels).
    kernel_tables : tuple of ndarray
        ``(field_start, field_group, field_offset, tap_start, tap_offset,
        tap_weight, pair_start, pair_a, pair_b)`` as the kernels take them.
    site_base, integral_base : ndarray of int64, shape (S,)
        Each site's top-left pixel, flat in the image and in the ``(W + 1)``-wide integral image.
    uses_integral : bool
        Whether any field reads the integral image.
    block_start, block_stride : ndarray of int64
        Block bounds ``(B + 1,)`` and spacings ``(B,)`` (:func:`_site_blocks`).
    layout : ndarray of int64, shape (3,)
        ``(W, P, ceil(W / P))``: the planes' polyphase layout (``_plane_index`` in the kernels).
    """

    stencils: tuple
    boxes: np.ndarray
    kernel_tables: tuple
    site_base: np.ndarray
    integral_base: np.ndarray
    uses_integral: bool
    block_start: np.ndarray
    block_stride: np.ndarray
    layout: np.ndarray


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
        row-major order, at least one (:func:`lbdviewer.operators.descriptor.field_entries`).
    pixels : ndarray of int32, shape (E,)
        Row-major index of each entry's pixel in its patch.
    weights : ndarray of float64, shape (E,)
    """
    field_pattern = np.repeat(np.arange(len(patterns)), [pattern.n_fields for pattern in patterns])
    return (field_pattern, *field_entries(patterns, kernel=kernel))


def _compact_entries(patterns, kernel):
    """:func:`_field_entries`, but a box field is one entry: its top-left pixel with the box's weight.

    Box stencils are described by their shape alone, so thousands of
    keypoint patterns of wide boxes (FREAK at a large keypoint size) cost
    one entry a field instead of one a pixel.

    Returns
    -------
    field_pattern, entry_start, pixels, weights
        As :func:`_field_entries` (box fields: one entry each).
    box_shape : ndarray of int64, shape (F, 2)
        ``(h, w)`` of each box field, ``(0, 0)`` for the others.
    """
    field_pattern = np.repeat(np.arange(len(patterns)), [pattern.n_fields for pattern in patterns])
    is_box = np.array([(kernel or pattern.kernel) == "box" for pattern in patterns])
    starts, pixels, weights, shapes = [np.zeros(1, dtype=np.int64)], [], [], []
    edges = np.flatnonzero(np.diff(is_box.astype(np.int8))) + 1
    for lo, hi in zip(np.concatenate([[0], edges]), np.concatenate([edges, [len(patterns)]])):
        run = list(patterns[lo:hi])
        if is_box[lo]:
            bounds, _, _, sizes = _all_bounds(run)
            width, height = bounds[:, 1] - bounds[:, 0] + 1, bounds[:, 3] - bounds[:, 2] + 1
            run_starts = np.arange(1, len(bounds) + 1, dtype=np.int64)
            run_pixels = (bounds[:, 2] * sizes + bounds[:, 0]).astype(np.int32)
            run_weights, run_shapes = 1.0 / (height * width), np.column_stack([height, width])
        else:
            run_starts, run_pixels, run_weights = field_entries(run, kernel=kernel)
            run_starts = run_starts[1:]
            run_shapes = np.zeros((len(run_starts), 2), dtype=np.int64)
        starts.append(run_starts + starts[-1][-1])
        pixels.append(run_pixels)
        weights.append(np.asarray(run_weights, dtype=np.float64))
        shapes.append(run_shapes.astype(np.int64))
    return (field_pattern, np.concatenate(starts), np.concatenate(pixels), np.concatenate(weights),
            np.concatenate(shapes))


@numba.njit(cache=True)
def _mix(value):
    """splitmix64 of a uint64: equal values give equal hashes, others hashes spread evenly."""
    z = value + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@numba.njit(cache=True)
def _field_stencils(entry_start, pixels, field_size, weights, box_shape=None):
    """Each field's anchor and stencil shape, whether its stencil is a box, and hashes of both.

    A field's stencil is the dense rectangle of its kernel's bounding box.
    Stencils are equal when their shapes and weights rounded to 1e-9 are
    (see :func:`_same_fields`). The arguments are those of
    :func:`_field_entries` and each field's patch size, or those of
    :func:`_compact_entries` with its ``box_shape``.

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
        if box_shape is not None and box_shape[f, 0] > 0:  # a compact box: its top-left pixel, its shape
            h, w = box_shape[f, 0], box_shape[f, 1]
            r0, c0 = pixels[start] // size, pixels[start] % size
            corner[f, 0], corner[f, 1], corner[f, 2], corner[f, 3] = r0, c0, h, w
            box[f], top_left[f] = True, weights[start]
            value = _mix(_mix(_mix(np.uint64(h)) ^ np.uint64(w)) ^ np.uint64(np.int64(np.rint(weights[start] * 1e9))))
            hashes[f, 0], hashes[f, 1] = value, _mix(_mix(value ^ np.uint64(r0)) ^ np.uint64(c0))
            continue
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
def _taps(fields, integral, corner, entry_start, pixels, field_size, weights, width, box_shape):
    """The taps of ``fields`` (none for -1), in order, as the kernels read them: ``(tap_start, tap_offset, tap_weight)``.

    A field's taps are its nonzero weights at their offsets in a
    ``width``-wide image or, where ``integral`` is True (a box, ``corner`` its
    anchor and shape), the four corners of its box in the ``(H + 1) x (W + 1)``
    integral image, weighted ``+w, -w, -w, +w``. A compact box (``box_shape``
    of :func:`_compact_entries`) read by taps has one a pixel of its box.
    """
    tap_start = np.zeros(fields.shape[0] + 1, dtype=np.int64)
    count = 0
    for i in range(fields.shape[0]):
        if fields[i] >= 0 and integral[i]:
            count += 4
        elif fields[i] >= 0 and box_shape[fields[i], 0] > 0:
            count += box_shape[fields[i], 0] * box_shape[fields[i], 1]
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
        if box_shape[f, 0] > 0:
            r0, c0 = pixels[entry_start[f]] // field_size[f], pixels[entry_start[f]] % field_size[f]
            for r in range(r0, r0 + box_shape[f, 0]):
                for c in range(c0, c0 + box_shape[f, 1]):
                    tap_offset[t] = r * width + c
                    tap_weight[t] = weights[entry_start[f]]
                    t += 1
            continue
        for e in range(entry_start[f], entry_start[f + 1]):
            if weights[e] != 0.0:
                tap_offset[t] = pixels[e] // field_size[f] * width + pixels[e] % field_size[f]
                tap_weight[t] = weights[e]
                t += 1
    return tap_start, tap_offset, tap_weight


def build_tables(shape, sites, patterns, site_pattern, *, kernel, backend, dtype):
    """The kernels' tables: each pattern's distinct fields, the filtered planes, taps and pairs.

    Compiled passes over all fields of all patterns at once (5000 rotated
    keypoint patterns in about a second). A pattern's fields with the same
    anchor and stencil are one field; a stencil's reads (its distinct fields over
    all patterns, times their sites) decide whether it is filtered.
    Planes are the general stencils, then the boxes, each in order of
    first occurrence; a plane takes the weights of its stencil's last field.

    Parameters
    ----------
    shape : (int, int)
        Image shape ``(H, W)``.
    sites : ndarray of int, shape (S, 2)
        Top-left pixel of each patch.
    patterns : sequence of Pattern
        The distinct patterns (:func:`lbdviewer.operators.joint.index_patterns`).
    site_pattern : ndarray of int, shape (S,)
        Each site's index into ``patterns``.
    kernel : {"gaussian", "box"} or None
        Field kernel; None: each pattern's own.
    backend : {"auto", "direct", "filtered"}
        See :class:`lbdviewer.operators.joint.operator.JointOperator`.
    dtype : numpy dtype

    Returns
    -------
    JointTables
    """
    height, width = shape
    n_pixels = height * width
    field_pattern, entry_start, pixels, weights, box_shape = _compact_entries(patterns, kernel)
    field_size = np.array([p.patch_size for p in patterns], dtype=np.int64)[field_pattern]
    corner, box, top_left, hashes = _field_stencils(entry_start, pixels, field_size, weights, box_shape)
    entries = (corner, entry_start, pixels, field_size, weights)
    pattern_start = np.concatenate([[0], np.cumsum([p.n_fields for p in patterns])]).astype(np.int64)
    # Fields of a pattern with one anchor and stencil (BRIEF: 1024 fields, ~600 distinct).
    distinct, first, _ = _group_fields(np.arange(len(corner)), pattern_start, hashes[:, 1], corner[:, :2],
                                       *entries)
    field_counts = np.bincount(field_pattern[first], minlength=len(patterns))
    field_start = np.concatenate([[0], np.cumsum(field_counts)]).astype(np.int64)
    # Stencils of the distinct fields over all patterns, wherever anchored (BRIEF: one Gaussian).
    own, _, last = _group_fields(first, np.array([0, len(first)]), hashes[:, 0], corner[:, :0], *entries)
    last = first[last]  # the field whose weights each stencil's plane takes
    site_counts = np.bincount(site_pattern, minlength=len(patterns))
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
    stencils = []
    for f in last[general]:
        r0, c0, h, w = corner[f]
        rows, cols = np.divmod(pixels[entry_start[f]:entry_start[f + 1]], field_size[f])
        dense = np.zeros((h, w))
        dense[rows - r0, cols - c0] = weights[entry_start[f]:entry_start[f + 1]]
        stencils.append(dense.astype(dtype))
    boxes_table = np.column_stack([corner[:, 2:], top_left])[last[boxes]].astype(np.float64)

    field_group = np.where(from_integral, INTEGRAL, group_of)[own]
    tap_start, tap_offset, tap_weight = _taps(np.where(field_group < 0, first, -1), field_group == INTEGRAL,
                                              corner, entry_start, pixels, field_size, weights, width, box_shape)
    pairs = np.concatenate([p.pairs + pattern_start[index] for index, p in enumerate(patterns)])
    pairs = distinct[pairs] - field_start[field_pattern[pairs]]
    tables = (
        field_start,
        field_group,
        np.where(field_group >= 0, corner[first, 0] * width + corner[first, 1], 0),
        tap_start,
        tap_offset,
        tap_weight.astype(dtype),
        np.cumsum([0] + [p.m for p in patterns]).astype(np.int64),
        np.ascontiguousarray(pairs[:, 0], dtype=np.int64),
        np.ascontiguousarray(pairs[:, 1], dtype=np.int64),
    )
    site_base = (sites[:, 0] * width + sites[:, 1]).astype(np.int64)
    integral_base = site_base + sites[:, 0]  # the same pixel in the (W + 1)-wide integral
    uses_integral = bool(len(boxes_table)) or bool(np.any(field_group == INTEGRAL))
    block_start, block_stride = _site_blocks(site_base, site_pattern, width, BLOCK_SITES)
    layout = np.array([width, 1, width], dtype=np.int64)
    strides = block_stride[np.diff(block_start) > 1]
    if len(stencils) + len(boxes_table) and len(strides):
        # Planes polyphase with the grid's spacing: a grid row reads consecutive values (_plane_index).
        phases = int(np.bincount(strides).argmax())
        if 1 < phases <= MAX_PHASES:
            layout = np.array([width, phases, -(-width // phases)], dtype=np.int64)
    return JointTables(stencils=tuple(stencils), boxes=boxes_table, kernel_tables=tables, site_base=site_base,
                       integral_base=integral_base, uses_integral=uses_integral, block_start=block_start,
                       block_stride=block_stride, layout=layout)
