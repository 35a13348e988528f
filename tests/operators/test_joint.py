import numpy as np
import pytest

from lbdviewer.testing import dot_test
from lbdviewer.operators.joint import _tables, operator as joint_operator
from lbdviewer.operators.joint.operator import JointOperator
from lbdviewer.operators.descriptor import DescriptorOperator, field_kernels
from lbdviewer.bits import pack_bits, sign_with_ties
from lbdviewer.patterns.families import make_pattern
from lbdviewer.reconstruction.sites import grid_sites


@pytest.fixture(scope="module", params=["brief", "freak"])
def pattern(request):
    return make_pattern(request.param, patch_size=16, m=64)


@pytest.mark.parametrize("backend", ["direct", "filtered"])
def test_single_site_equals_the_patch_operator(pattern, backend):
    rng = np.random.default_rng(0)
    op = JointOperator((16, 16), [[0, 0]], pattern, backend=backend, dtype=np.float64)
    patch = DescriptorOperator(pattern, dtype=np.float64)
    x, y = rng.random((16, 16)), rng.standard_normal((1, 64))
    np.testing.assert_allclose(op.forward(x)[0], patch.forward(x), atol=1e-12)
    np.testing.assert_allclose(op.adjoint(y), patch.adjoint(y[0]), atol=1e-12)


@pytest.mark.parametrize("backend", ["direct", "filtered", "auto"])
def test_dot_test_on_overlapping_grid(pattern, backend):
    rng = np.random.default_rng(1)
    sites = grid_sites((30, 37), patch_size=16, offset=5)
    op = JointOperator((30, 37), sites, pattern, backend=backend, dtype=np.float64)
    dot_test(op, rng=rng)


def assert_sites_see_their_patches(op, image, patch, rng):
    """``op`` gives every site the descriptor of its patch, and its adjoint puts ``L^T y`` back there."""
    size = patch.pattern.patch_size
    y, expected = rng.standard_normal(op.range_shape), np.zeros_like(image)
    for (r, c), row, weights in zip(op.sites, op.forward(image), y):
        np.testing.assert_allclose(row, patch.forward(image[r:r + size, c:c + size]), atol=1e-12)
        expected[r:r + size, c:c + size] += patch.adjoint(weights)
    np.testing.assert_allclose(op.adjoint(y), expected, atol=1e-11)


@pytest.mark.parametrize("offset", [1, 2])
def test_large_gaussian_stencils_filtered_by_opencv_give_each_sites_patch(offset):
    rng = np.random.default_rng(16)
    pattern, shape = make_pattern("freak", patch_size=16, m=64), (64, 72)
    image, sites = rng.random(shape), grid_sites(shape, patch_size=16, offset=offset)
    op = JointOperator(shape, sites, pattern, kernel="gaussian", dtype=np.float64)
    sizes = [stencil.size for stencil in op._stencils]
    assert min(sizes) <= joint_operator.SMALL_STENCIL < max(sizes) and op._layout[1] == offset  # both filter paths
    assert_sites_see_their_patches(op, image, DescriptorOperator(pattern, kernel="gaussian", dtype=np.float64), rng)


@pytest.mark.parametrize("backend", ["filtered", "auto"])
def test_grid_planes_stored_polyphase_give_each_sites_patch(pattern, backend):
    rng = np.random.default_rng(15)
    image = rng.random((30, 37))
    sites = grid_sites(image.shape, patch_size=16, offset=5)  # rows of 5 px steps; 37 is not a multiple of 5
    op = JointOperator(image.shape, sites, pattern, backend=backend, dtype=np.float64)
    if op.n_filters:
        assert op._layout.tolist() == [37, 5, 8]
    assert_sites_see_their_patches(op, image, DescriptorOperator(pattern, dtype=np.float64), rng)


def test_each_site_sees_its_own_patch(pattern):
    rng = np.random.default_rng(2)
    image = rng.random((24, 40))
    sites = np.array([[0, 0], [8, 24], [3, 11]])
    values = JointOperator(image.shape, sites, pattern, dtype=np.float64).forward(image)
    patch = DescriptorOperator(pattern, dtype=np.float64)
    for (r, c), row in zip(sites, values):
        np.testing.assert_allclose(row, patch.forward(image[r:r + 16, c:c + 16]), atol=1e-12)


def test_per_site_patterns_with_different_patch_sizes():
    small = make_pattern("brief", patch_size=8, m=32, rng=1)
    large = make_pattern("freak", patch_size=16, m=32).transformed(angle=30.0)
    image = np.random.default_rng(3).random((20, 20))
    op = JointOperator(image.shape, [[0, 0], [4, 2], [1, 12]], [large, large, small], dtype=np.float64)
    values = op.forward(image)
    np.testing.assert_allclose(values[1], DescriptorOperator(large, dtype=np.float64).forward(image[4:20, 2:18]),
                               atol=1e-12)
    np.testing.assert_allclose(values[2], DescriptorOperator(small, dtype=np.float64).forward(image[1:9, 12:20]),
                               atol=1e-12)


def test_binary_gradient_is_the_adjoint_of_the_bit_errors(pattern):
    rng = np.random.default_rng(4)
    sites = grid_sites((24, 24), patch_size=16, offset=4)
    op = JointOperator((24, 24), sites, pattern, dtype=np.float64)
    x = rng.random((24, 24))
    bits = np.where(rng.random(op.range_shape) < 0.5, 1, -1).astype(np.int8)
    gradient, mismatches = op.binary_gradient(x, pack_bits(bits))
    signs = sign_with_ties(op.forward(x), tie_positive=pattern.tie_positive, atol=1.0 / 510)
    np.testing.assert_allclose(gradient, op.adjoint((bits - signs) / 2.0), atol=1e-10)
    assert mismatches == np.count_nonzero(bits != signs)


def test_flat_image_is_consistent_with_tie_bits(pattern):
    sites = grid_sites((24, 24), patch_size=16, offset=8)
    op = JointOperator((24, 24), sites, pattern)
    tie = 1 if pattern.tie_positive else -1
    bits = pack_bits(np.full(op.range_shape, tie))
    gradient, mismatches = op.binary_gradient(np.full((24, 24), 0.3), bits)
    assert mismatches == 0 and not gradient.any()


def test_bad_sites_and_patterns_are_named():
    pattern = make_pattern("brief", patch_size=16, m=32)
    with pytest.raises(ValueError, match="sites"):
        JointOperator((20, 20), [[8, 8]], pattern)
    with pytest.raises(ValueError, match="same m"):
        JointOperator((20, 20), [[0, 0], [1, 1]], [pattern, make_pattern("brief", patch_size=16, m=16)])


def test_site_ranges_in_parallel_give_the_serial_results(pattern, monkeypatch):
    rng = np.random.default_rng(5)
    sites = grid_sites((40, 40), patch_size=16, offset=4)
    monkeypatch.setattr(_tables, "BLOCK_SITES", 5)  # 49 sites in 10 blocks
    op = JointOperator((40, 40), sites, pattern, dtype=np.float64)
    x, y = rng.random((40, 40)), rng.standard_normal(op.range_shape)
    positive, margin = y > 0, np.abs(rng.standard_normal((1, op.m))) * 0.01
    packed = pack_bits(np.where(positive, 1, -1))

    def everything():
        return (op.forward(x), op.adjoint(y), op.binary_gradient(x, packed), op.squared_hinge(x, positive, margin))

    monkeypatch.setattr(joint_operator, "PARALLEL_MIN_SITES", 10**9)
    serial = everything()
    monkeypatch.setattr(joint_operator, "PARALLEL_MIN_SITES", 1)
    monkeypatch.setattr(joint_operator.numba, "get_num_threads", lambda: 3)
    assert len(op._chunks()) == 3
    parallel = everything()
    np.testing.assert_array_equal(parallel[0], serial[0])
    np.testing.assert_allclose(parallel[1], serial[1], atol=1e-12)
    np.testing.assert_allclose(parallel[2][0], serial[2][0], atol=1e-12)
    assert parallel[2][1] == serial[2][1]
    assert np.isclose(parallel[3][0], serial[3][0]) and parallel[3][2] == serial[3][2]
    np.testing.assert_allclose(parallel[3][1], serial[3][1], atol=1e-12)


def test_squared_hinge_is_the_hinge_of_forward_with_adjoint_gradient(pattern):
    rng = np.random.default_rng(6)
    sites = grid_sites((24, 24), patch_size=16, offset=4)
    op = JointOperator((24, 24), sites, pattern, dtype=np.float64)
    x = rng.random((24, 24))
    positive = rng.random(op.range_shape) > 0.5
    table = rng.random((1, 64)) * 0.02
    value, gradient, agree = op.squared_hinge(x, positive, table, atol=1e-9)
    sign = np.where(positive, 1.0, -1.0)
    strict = ~positive if pattern.tie_positive else positive
    margin = np.where(strict, table, 0.0)  # the side that takes ties has no margin
    values = op.forward(x)
    residual = np.maximum(margin - sign * values, 0.0)
    assert np.isclose(value, np.sum(residual**2))
    np.testing.assert_allclose(gradient, op.adjoint(-2 * sign * residual), atol=1e-12)
    assert agree == np.sum((sign_with_ties(values, tie_positive=op.tie_positive, atol=1e-9) > 0) == positive)


def test_squared_hinge_margins_follow_each_sites_pattern():
    rng = np.random.default_rng(9)
    first = make_pattern("brief", patch_size=8, m=32, rng=1)
    second = make_pattern("freak", patch_size=12, m=32).transformed(angle=40.0)
    sites = [[0, 0], [2, 5], [6, 1], [4, 4], [1, 8]]
    patterns = [first, second, second, first, second]  # runs of one pattern become kernel blocks
    op = JointOperator((20, 20), sites, patterns, dtype=np.float64)
    x = rng.random((20, 20))
    positive = rng.random(op.range_shape) > 0.5
    table = rng.random((2, 32)) * 0.05
    value, gradient, _ = op.squared_hinge(x, positive, table, atol=1e-9)
    strict = ~positive if op.tie_positive else positive
    sign = np.where(positive, 1.0, -1.0)
    residual = np.maximum(np.where(strict, table[op.site_pattern], 0.0) - sign * op.forward(x), 0.0)
    assert np.isclose(value, np.sum(residual**2))
    np.testing.assert_allclose(gradient, op.adjoint(-2 * sign * residual), atol=1e-12)


def test_squared_hinge_takes_packed_bits_and_names_bad_shapes(pattern):
    op = JointOperator((16, 16), [[0, 0]], pattern)
    positive = np.random.default_rng(7).random((1, 64)) > 0.5
    x = np.random.default_rng(8).random((16, 16))
    unpacked = op.squared_hinge(x, positive, 0.01)
    packed = op.squared_hinge(x, pack_bits(np.where(positive, 1, -1)), np.full((1, 64), 0.01))
    assert unpacked[0] == packed[0] and unpacked[2] == packed[2]
    with pytest.raises(ValueError, match=r"positive must be bool \(1, 64\) or uint8 \(1, 8\)"):
        op.squared_hinge(x, positive[:, :60], 0.01)
    with pytest.raises(ValueError, match=r"margin must be a number or have shape \(1, 64\)"):
        op.squared_hinge(x, positive, np.full((1, 60), 0.01))


def reference_tables(op, backend):
    """The tables of ``op`` built field by field (the obvious way), planes in order of first occurrence."""
    height, width = op.domain_shape
    site_counts = np.bincount(op.site_pattern, minlength=len(op.patterns))
    fields, field_counts, field_index, reads, stencils = [], [], [], {}, {}
    for p, pattern in enumerate(op.patterns):
        matrix = field_kernels(pattern, op.kernel or pattern.kernel).tocsr()
        seen, index = {}, np.empty(pattern.n_fields, dtype=np.int64)
        for f in range(pattern.n_fields):
            row = matrix[f]
            r, c = np.divmod(row.indices, pattern.patch_size)
            r0, c0 = int(r.min()), int(c.min())
            stencil = np.zeros((r.max() - r0 + 1, c.max() - c0 + 1))
            stencil[r - r0, c - c0] = row.data
            key = (stencil.shape, np.round(stencil * 1e9).astype(np.int64).tobytes())
            if (r0, c0, key) not in seen:
                seen[(r0, c0, key)] = len(seen)
                stencils[key] = stencil
                reads[key] = reads.get(key, 0) + int(site_counts[p])
                fields.append((r0, c0, stencil, key))
            index[f] = seen[(r0, c0, key)]
        field_counts.append(len(seen))
        field_index.append(index)

    def is_box(key):
        return bool(np.all(stencils[key] == stencils[key].flat[0]))

    if backend == "auto":
        chosen = [key for key, count in reads.items() if count >= height * width * (
            _tables.BOX_PLANE_READS_PER_PIXEL if is_box(key) else _tables.FILTER_READS_PER_PIXEL)]
    else:
        chosen = list(reads) if backend == "filtered" else []
    planes = [key for key in chosen if not is_box(key)] + [key for key in chosen if is_box(key)]
    group_of = {key: group for group, key in enumerate(planes)}
    field_group, field_offset, tap_start, tap_offset, tap_weight = [], [], [0], [], []
    for r0, c0, stencil, key in fields:
        corners = backend == "auto" and key not in group_of and is_box(key) and stencil.size > 4
        field_group.append(group_of.get(key, _tables.INTEGRAL if corners else -1))
        field_offset.append(r0 * width + c0 if key in group_of else 0)
        if corners:  # the box's four corners in the (W + 1)-wide integral image
            h, w = stencil.shape
            tap_offset.extend([r0 * (width + 1) + c0, r0 * (width + 1) + c0 + w,
                               (r0 + h) * (width + 1) + c0, (r0 + h) * (width + 1) + c0 + w])
            tap_weight.extend(stencil.flat[0] * np.array([1, -1, -1, 1]))
        elif key not in group_of:
            rows, cols = np.nonzero(stencil)
            tap_offset.extend((rows + r0) * width + cols + c0)
            tap_weight.extend(stencil[rows, cols])
        tap_start.append(len(tap_offset))
    tables = (np.cumsum([0] + field_counts), np.array(field_group), np.array(field_offset), np.array(tap_start),
              np.array(tap_offset, dtype=np.int64), np.array(tap_weight, dtype=op.dtype),
              np.cumsum([0] + [p.m for p in op.patterns]),
              np.concatenate([index[p.pairs[:, 0]] for p, index in zip(op.patterns, field_index)]),
              np.concatenate([index[p.pairs[:, 1]] for p, index in zip(op.patterns, field_index)]))
    boxes = np.array([(*stencils[key].shape, stencils[key].flat[0]) for key in planes if is_box(key)]).reshape(-1, 3)
    return tables, [stencils[key].astype(op.dtype) for key in planes if not is_box(key)], boxes


def assert_tables_equal(op, backend):
    tables, stencils, boxes = reference_tables(op, backend)
    for built, expected in zip(op._tables, tables):
        np.testing.assert_array_equal(built, expected)
        assert built.dtype == expected.dtype
    assert len(op._stencils) == len(stencils)
    for built, expected in zip(op._stencils, stencils):
        np.testing.assert_array_equal(built, expected)
    np.testing.assert_array_equal(op._boxes, boxes)


def keypoint_patterns(kind, count, rng):
    """``count`` rotated and scaled copies of a pattern, and three sharing its stencils, all 24 x 24.

    The last is turned by a hair: its stencils equal the others' to 1e-9, not bit for bit.
    """
    base = make_pattern(kind, patch_size=16, m=64, rng=3)
    angles, scales = rng.uniform(0, 360, count), rng.uniform(0.6, 1.0, count)
    patterns = [base.transformed(angle=float(a), scale=float(s), patch_size=24) for a, s in zip(angles, scales)]
    return patterns + [base.transformed(patch_size=24), base.transformed(angle=90.0, patch_size=24),
                       base.transformed(angle=1e-9, patch_size=24)]


@pytest.mark.parametrize("kind", ["brief", "freak"])
@pytest.mark.parametrize("backend", ["auto", "direct", "filtered"])
def test_tables_of_many_keypoint_patterns_match_a_field_by_field_build(kind, backend):
    rng = np.random.default_rng(10)
    patterns = keypoint_patterns(kind, 40, rng)
    sites = rng.integers(0, 40, (len(patterns), 2))
    assert_tables_equal(JointOperator((64, 64), sites, patterns, backend=backend, dtype=np.float64), backend)


@pytest.mark.parametrize("kernel", [None, "box", "gaussian"])
def test_tables_of_grids_match_a_field_by_field_build(pattern, kernel):
    sites = grid_sites((40, 48), patch_size=16, offset=1)  # enough reads to filter
    op = JointOperator((40, 48), sites, pattern, kernel=kernel)
    assert_tables_equal(op, "auto")
    assert op.n_filters > 0


@pytest.mark.parametrize("kind, kernel, offset", [("freak", None, 7), ("brief", "box", 40)])
def test_boxes_read_from_the_integral_image_equal_their_taps(kind, kernel, offset):
    rng = np.random.default_rng(13)
    pattern, shape = make_pattern(kind, patch_size=16, m=64), (67, 75)
    sites = grid_sites(shape, patch_size=16, offset=offset)  # few reads a pixel: corners, not planes
    fast = JointOperator(shape, sites, pattern, kernel=kernel, dtype=np.float64)
    taps = JointOperator(shape, sites, pattern, kernel=kernel, backend="direct", dtype=np.float64)
    assert np.any(fast._tables[1] == _tables.INTEGRAL)
    x, y = rng.random(shape), rng.standard_normal(fast.range_shape)
    np.testing.assert_allclose(fast.forward(x), taps.forward(x), atol=1e-12)
    np.testing.assert_allclose(fast.adjoint(y), taps.adjoint(y), atol=1e-11)
    positive = rng.random(fast.range_shape) > 0.5
    for got, expected in zip(fast.squared_hinge(x, positive, 0.01), taps.squared_hinge(x, positive, 0.01)):
        np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-11)


def test_blocks_stay_in_one_image_row_even_when_spacing_continues():
    rng = np.random.default_rng(14)
    pattern = make_pattern("freak", patch_size=16, m=64)
    sites = [[0, 0], [0, 24], [1, 8]]  # 24 pixels apart in memory, across a row boundary
    fast = JointOperator((24, 40), sites, pattern, dtype=np.float64)
    taps = JointOperator((24, 40), sites, pattern, backend="direct", dtype=np.float64)
    assert fast._block_start.tolist() == [0, 2, 3] and np.any(fast._tables[1] == _tables.INTEGRAL)
    x, y = rng.random((24, 40)), rng.standard_normal(fast.range_shape)
    np.testing.assert_allclose(fast.forward(x), taps.forward(x), atol=1e-12)
    np.testing.assert_allclose(fast.adjoint(y), taps.adjoint(y), atol=1e-11)


@pytest.mark.parametrize("anchored", [False, True])
def test_fields_with_colliding_hashes_are_told_apart(anchored):
    rng = np.random.default_rng(11)
    patterns = keypoint_patterns("brief", 3, rng) + keypoint_patterns("freak", 3, rng)
    field_pattern, entry_start, pixels, weights = _tables._field_entries(patterns, None)
    sizes = np.full(len(field_pattern), 24)
    corner, _, _, hashes = _tables._field_stencils(entry_start, pixels, sizes, weights)
    fields, segments = np.arange(len(field_pattern)), np.array([0, 100, len(field_pattern)])
    head = corner[:, :2] if anchored else corner[:, :0]
    entries = (corner, entry_start, pixels, sizes, weights)
    expected = _tables._group_fields(fields, segments, hashes[:, int(anchored)], head, *entries)
    assert 1 < len(expected[1]) < len(fields)  # some fields are equal, not all
    collide = np.zeros(len(fields), dtype=np.uint64)  # every field in one slot
    for built, reference in zip(_tables._group_fields(fields, segments, collide, head, *entries), expected):
        np.testing.assert_array_equal(built, reference)


def test_many_keypoint_patterns_equal_the_patch_operator_at_each_site():
    rng = np.random.default_rng(12)
    patterns = keypoint_patterns("brief", 20, rng) + keypoint_patterns("freak", 20, rng)
    patterns += patterns[:3]  # sites sharing a Pattern
    image = rng.random((48, 56))
    sites = np.stack([rng.integers(0, 48 - 24, len(patterns)), rng.integers(0, 56 - 24, len(patterns))], axis=1)
    op = JointOperator(image.shape, sites, patterns, dtype=np.float64)
    values, y = op.forward(image), rng.standard_normal(op.range_shape)
    expected = np.zeros_like(image)
    for (r, c), pattern, row, weights in zip(sites, patterns, values, y):
        patch = DescriptorOperator(pattern, dtype=np.float64)
        np.testing.assert_allclose(row, patch.forward(image[r:r + 24, c:c + 24]), atol=1e-12)
        expected[r:r + 24, c:c + 24] += patch.adjoint(weights)
    np.testing.assert_allclose(op.adjoint(y), expected, atol=1e-12)


def test_block_bits_hold_each_sites_bits_and_serve_squared_hinge(monkeypatch):
    monkeypatch.setattr(_tables, "BLOCK_SITES", 4)
    rng = np.random.default_rng(11)
    pattern = make_pattern("brief", patch_size=8, m=20)
    sites = grid_sites((20, 23), patch_size=8, offset=3)  # rows of 6 sites: blocks of 4 and 2
    op = JointOperator((20, 23), sites, pattern)
    positive = rng.random(op.range_shape) > 0.5
    words = op.block_bits(positive)
    np.testing.assert_array_equal(words, op.block_bits(np.packbits(positive, axis=1, bitorder="little")))
    starts = op._block_start
    for block, (lo, hi) in enumerate(zip(starts[:-1], starts[1:])):
        for j, site in enumerate(range(lo, hi)):
            np.testing.assert_array_equal((words[block] >> np.uint64(j)) & np.uint64(1), positive[site])
    x = rng.random((20, 23))
    assert op.squared_hinge(x, words, 0.01)[0] == op.squared_hinge(x, positive, 0.01)[0]


def test_box_fields_are_one_entry_each_and_give_the_same_operator():
    rng = np.random.default_rng(15)
    patterns = keypoint_patterns("freak", 4, rng) + keypoint_patterns("brief", 2, rng)
    field_pattern, entry_start, _, _, box_shape = _tables._compact_entries(patterns, None)
    boxes = np.array([patterns[p].kernel == "box" for p in field_pattern])
    assert np.all(np.diff(entry_start)[boxes] == 1) and np.all(box_shape[boxes] > 0) and not box_shape[~boxes].any()
    sites = np.stack([rng.integers(0, 48 - 24, len(patterns)), rng.integers(0, 56 - 24, len(patterns))], axis=1)
    image = rng.random((48, 56))
    for backend in ("auto", "direct", "filtered"):
        op = JointOperator(image.shape, sites, patterns, backend=backend, dtype=np.float64)
        for (r, c), pattern, values in zip(sites, patterns, op.forward(image)):
            patch = image[r:r + pattern.patch_size, c:c + pattern.patch_size]
            np.testing.assert_allclose(values, DescriptorOperator(pattern, dtype=np.float64).forward(patch),
                                       atol=1e-10)
        dot_test(op, rtol=1e-9)


def test_oriented_squared_hinge_scales_each_sites_margins_by_its_direction():
    rng = np.random.default_rng(10)
    first = make_pattern("brief", patch_size=8, m=32, rng=1)
    second = make_pattern("freak", patch_size=12, m=32).transformed(angle=40.0)
    sites = [[0, 0], [2, 5], [6, 1], [4, 4], [1, 8]]
    op = JointOperator((20, 20), sites, [first, second, second, first, second], dtype=np.float64)
    x = rng.random((20, 20))
    positive = rng.random(op.range_shape) > 0.5
    table = rng.random((2, 32)) * 0.05
    scale, direction = rng.random(5), rng.standard_normal((5, 2))
    value, gradient, agree = op.squared_hinge(x, positive, table, orientation=(scale, direction), atol=1e-9)
    units = op.test_directions[op.site_pattern]  # (S, 2, M)
    along = direction[:, 0, None] * units[:, 0] + direction[:, 1, None] * units[:, 1]
    margins = table[op.site_pattern] * (scale[:, None] + along**2)
    strict = ~positive if op.tie_positive else positive
    sign = np.where(positive, 1.0, -1.0)
    residual = np.maximum(np.where(strict, margins, 0.0) - sign * op.forward(x), 0.0)
    assert np.isclose(value, np.sum(residual**2))
    np.testing.assert_allclose(gradient, op.adjoint(-2 * sign * residual), atol=1e-12)
    # the neutral orientation (scale 1, no direction) is the plain hinge
    neutral = op.squared_hinge(x, positive, table, orientation=(np.ones(5), np.zeros((5, 2))), atol=1e-9)
    plain = op.squared_hinge(x, positive, table, atol=1e-9)
    assert np.isclose(neutral[0], plain[0]) and neutral[2] == plain[2] == agree
    np.testing.assert_allclose(neutral[1], plain[1], atol=1e-12)


@pytest.mark.parametrize("backend", ["filtered", "direct"])
def test_fused_terms_on_wide_blocks_match_forward_and_adjoint(pattern, backend):
    # Rows of 104 sites: a block of 64 and one of 40, both run over all 64 lanes (the second after the first's
    # means), and rows of 20: one block that runs over its own sites. The results must not see the padding.
    # BRIEF filtered reads and writes its one Gaussian plane in place; the others gather and scatter.
    rng = np.random.default_rng(12)
    for width in (214, 46):
        sites = grid_sites((12, width), patch_size=8, offset=2)
        op = JointOperator((12, width), sites, make_pattern(pattern.name, patch_size=8, m=32, rng=3),
                           dtype=np.float64, backend=backend)
        assert np.diff(op._block_start).max() in (64, 20)
        x = rng.random((12, width))
        positive = rng.random(op.range_shape) > 0.5
        table = rng.random((1, 32)) * 0.05
        scale, direction, share = rng.random(len(sites)), rng.standard_normal((len(sites), 2)), rng.random(len(sites))
        value, gradient, agree = op.squared_hinge(x, positive, table, orientation=(scale, direction, share),
                                                  atol=1e-9)
        units = op.test_directions[op.site_pattern]
        along = direction[:, 0, None] * units[:, 0] + direction[:, 1, None] * units[:, 1]
        margins = table[op.site_pattern] * (scale[:, None] + along**2)
        strict = ~positive if op.tie_positive else positive
        sign, values = np.where(positive, 1.0, -1.0), op.forward(x)
        residual = np.maximum(np.where(strict, margins, share[:, None] * margins) - sign * values, 0.0)
        assert np.isclose(value, np.sum(residual**2))
        np.testing.assert_allclose(gradient, op.adjoint(-2 * sign * residual), atol=1e-12)
        assert agree == np.sum((sign_with_ties(values, tie_positive=op.tie_positive, atol=1e-9) > 0) == positive)
        errors, wrong = op.binary_gradient(x, pack_bits(sign))
        bits = sign_with_ties(values, tie_positive=op.tie_positive, atol=0.5 / 255)
        assert wrong == np.sum(bits != sign)
        np.testing.assert_allclose(errors, op.adjoint((sign - bits) / 2), atol=1e-12)


def test_fused_terms_ignore_whatever_lies_past_a_blocks_end(monkeypatch):
    # FREAK on a dense grid reads box planes, which are not zeroed where no field reads them; the kernels read
    # 64 lanes whatever the block's length. With every array numpy leaves uninitialised full of NaN, the results
    # must still be the references'.
    rng = np.random.default_rng(13)
    sites = grid_sites((40, 60), patch_size=16, offset=1)  # rows of 45 sites: blocks wider than half the lanes
    op = JointOperator((40, 60), sites, make_pattern("freak", patch_size=16, m=64), dtype=np.float64)
    assert len(op._boxes)  # box planes, read in place
    x = rng.random((40, 60))
    positive = rng.random(op.range_shape) > 0.5
    table = rng.random((1, 64)) * 0.05

    class NaNEmpty:  # numpy, but the operator's uninitialised arrays are NaN
        def __getattr__(self, name):
            return getattr(np, name)

        @staticmethod
        def empty(*args, **kwargs):
            return np.full_like(np.empty(*args, **kwargs), np.nan)

    with monkeypatch.context() as patch:
        patch.setattr(joint_operator, "np", NaNEmpty())
        value, gradient, agree = op.squared_hinge(x, positive, table, atol=1e-9)
    strict = ~positive if op.tie_positive else positive
    sign, values = np.where(positive, 1.0, -1.0), op.forward(x)
    residual = np.maximum(np.where(strict, table, 0.0) - sign * values, 0.0)
    assert np.isfinite(value) and np.isclose(value, np.sum(residual**2))
    np.testing.assert_allclose(gradient, op.adjoint(-2 * sign * residual), atol=1e-12)


def test_test_directions_are_unit_vectors_from_the_second_field_to_the_first(pattern):
    op = JointOperator((16, 16), [[0, 0]], pattern, dtype=np.float64)
    units = op.test_directions[0]
    centers = pattern.centers[:, ::-1]  # (x, y) to (row, column)
    step = centers[pattern.pairs[:, 0]] - centers[pattern.pairs[:, 1]]
    length = np.hypot(*step.T)
    np.testing.assert_allclose(units.T * length[:, None], step, atol=1e-9)
    np.testing.assert_allclose(np.hypot(*units)[length > 0], 1.0)


def test_orientation_of_the_wrong_shape_or_sign_is_named(pattern):
    op = JointOperator((16, 16), [[0, 0]], pattern)
    x, positive = np.full((16, 16), 0.5), np.ones((1, 64), bool)
    with pytest.raises(ValueError, match="orientation must be"):
        op.squared_hinge(x, positive, 0.01, orientation=(np.ones(2), np.zeros((2, 2))))
    with pytest.raises(ValueError, match="non-negative scale"):
        op.squared_hinge(x, positive, 0.01, orientation=(-np.ones(1), np.zeros((1, 2))))
