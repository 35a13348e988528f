import numpy as np
import pytest

from lbdviewer.testing import dot_test
from lbdviewer.operators.descriptor import DescriptorOperator, field_entries, field_kernels
from lbdviewer.bits import pack_bits, sign_with_ties, unpack_bits
from lbdviewer.patterns.base import Pattern
from lbdviewer.patterns.families import make_pattern

CASES = [
    ("brief", "gaussian", ("dense", "sparse", "fields")),
    ("brief", "box", ("dense", "sparse", "fields", "integral")),
    ("freak", "box", ("dense", "sparse", "fields", "integral")),
    ("freak", "gaussian", ("dense", "sparse", "fields")),
    ("ra-freak", "box", ("dense", "fields", "integral")),
    ("ex-freak", "box", ("dense", "fields", "integral")),
]


def _operators():
    for name, kernel, backends in CASES:
        for size in (16, 21):
            pattern = make_pattern(name, patch_size=size, m=min(200, 903))
            for backend in backends:
                yield pytest.param(pattern, kernel, backend, id=f"{name}-{kernel}-{backend}-{size}")


@pytest.mark.parametrize("pattern, kernel, backend", list(_operators()))
def test_dot_test_and_agreement_with_dense_matrix(pattern, kernel, backend):
    op = DescriptorOperator(pattern, kernel=kernel, backend=backend, dtype=np.float64)
    rng = np.random.default_rng(0)
    dot_test(op, rng=rng, batch=(3,), atol=1e-10)
    x = rng.standard_normal((3, *op.patch_shape))
    y = rng.standard_normal((3, op.m))
    matrix = op.matrix()
    assert np.allclose(op.forward(x), x.reshape(3, -1) @ matrix.T, atol=1e-12)
    assert np.allclose(op.adjoint(y).reshape(3, -1), y @ matrix, atol=1e-12)


@pytest.mark.parametrize("name", ["brief", "freak", "ex-freak"])
@pytest.mark.parametrize("kernel", ["gaussian", "box"])
def test_kernels_are_unit_l1_and_constant_patch_gives_zero(name, kernel):
    op = DescriptorOperator(make_pattern(name), kernel=kernel)
    kernels = op.field_matrix()
    assert np.allclose(np.asarray(abs(kernels).sum(axis=1)).ravel(), 1.0)
    assert kernels.min() >= 0
    assert np.abs(op.forward(np.full((32, 32), 0.37))).max() < 1e-6
    assert np.allclose(op.matrix().sum(axis=1), 0.0, atol=1e-12)


def test_brief_fields_are_3x3_gaussians():
    kernels = field_kernels(make_pattern("brief", patch_size=16, m=8), "gaussian")
    row = kernels[0].toarray().reshape(16, 16)
    support = np.argwhere(row > 0)
    assert len(support) == 9
    assert np.ptp(support[:, 0]) == 2 and np.ptp(support[:, 1]) == 2
    centre = row.max()
    assert np.isclose(row.sum(), 1) and np.isclose(row[row > 0].min(), centre * np.exp(-1))


def test_batched_shapes_and_float32():
    op = DescriptorOperator(make_pattern("freak"))
    x = np.random.default_rng(0).random((2, 3, 32, 32))
    assert op.forward(x).shape == (2, 3, 512) and op.forward(x).dtype == np.float32
    assert op.adjoint(np.ones((4, 512))).shape == (4, 32, 32)
    assert op.forward(x[0, 0]).shape == (512,)
    with pytest.raises(ValueError, match=r"x must have shape \(\.\.\., 32, 32\), got \(3, 31, 32\)"):
        op.forward(np.zeros((3, 31, 32)))
    with pytest.raises(ValueError, match="y must have shape"):
        op.adjoint(np.zeros((3, 511)))


def test_ex_freak_has_903_rows():
    op = DescriptorOperator(make_pattern("ex-freak"))
    assert op.shape == (903, 1024) and op.matrix().shape == (903, 1024)


def test_describe_matches_sign_of_forward_and_ties():
    op = DescriptorOperator(make_pattern("brief"))
    patch = np.random.default_rng(1).random((32, 32))
    bits = op.describe(patch)
    assert bits.dtype == np.int8 and set(np.unique(bits)) <= {-1, 1}
    values = op.describe(patch, binary=False)
    assert np.array_equal(bits, np.where(values > 0, 1, -1))
    assert np.all(op.describe(np.full((32, 32), 0.5)) == -1)
    tie_positive = Pattern("toy", 8, [[2, 2], [5, 5]], [1, 1], [1, 1], [[0, 1]], tie_positive=True)
    assert DescriptorOperator(tie_positive).describe(np.full((8, 8), 0.5)).tolist() == [1]


def test_sign_with_ties():
    values = np.array([2e-6, -2e-6, 5e-7, -5e-7, 0.0])
    assert sign_with_ties(values).tolist() == [1, -1, -1, -1, -1]
    assert sign_with_ties(values, tie_positive=True).tolist() == [1, -1, 1, 1, 1]


@pytest.mark.parametrize("bitorder", ["little", "big"])
def test_pack_unpack_round_trip(bitorder):
    bits = np.where(np.random.default_rng(2).random((5, 256)) > 0.5, 1, -1).astype(np.int8)
    packed = pack_bits(bits, bitorder=bitorder)
    assert packed.shape == (5, 32) and packed.dtype == np.uint8
    assert np.array_equal(unpack_bits(packed, 256, bitorder=bitorder), bits)


def test_pack_bit_orders_match_opencv_conventions():
    bits = np.full(8, -1)
    bits[0] = 1
    assert pack_bits(bits, bitorder="little").tolist() == [1]
    assert pack_bits(bits, bitorder="big").tolist() == [128]
    with pytest.raises(ValueError, match="m must be from 1 to 8"):
        unpack_bits(np.zeros(1, np.uint8), 9)
    with pytest.raises(ValueError, match="packed must be uint8"):
        unpack_bits(np.zeros(1, np.int64), 8)


def test_frame_vector_weight_and_occurrence_maps():
    op = DescriptorOperator(make_pattern("freak"))
    matrix = op.matrix()
    assert np.allclose(op.frame_vector(7).ravel(), matrix[7])
    weights = op.weight_map()
    assert np.isclose(weights.sum(), 2 * op.m)
    occurrence = op.occurrence_map()
    assert occurrence.dtype.kind == "i" and occurrence.max() <= op.m
    assert np.array_equal(occurrence > 0, weights > 0)
    # FREAK weighs the centre far more than the border; BRIEF is more even.
    brief = DescriptorOperator(make_pattern("brief")).weight_map()
    assert weights[14:18, 14:18].mean() > 10 * weights[:4, :4].mean()
    assert brief[14:18, 14:18].mean() < 3 * brief[2:6, 2:6].mean()
    with pytest.raises(ValueError, match="index must be an integer from 0 to 511, got 512"):
        op.frame_vector(512)


def test_occurrence_counts_pixels_read_by_either_field():
    pattern = Pattern("toy", 8, [[2, 2], [3, 2], [6, 6]], [1, 1, 1], [1, 1, 1], [[0, 1], [0, 2]], kernel="box")
    occurrence = DescriptorOperator(pattern).occurrence_map()
    assert occurrence[2, 2] == 2  # read by field 0, in both measurements
    assert occurrence[2, 4] == 1  # field 1 only
    assert occurrence[6, 6] == 1 and occurrence[0, 7] == 0


def test_norm_estimate_matches_svd():
    op = DescriptorOperator(make_pattern("brief", patch_size=16, m=128))
    assert np.isclose(op.norm_estimate(), np.linalg.norm(op.matrix(), 2), rtol=1e-6)


def test_integral_backend_needs_box_and_bad_backend():
    with pytest.raises(ValueError, match="needs box kernels"):
        DescriptorOperator(make_pattern("brief"), backend="integral")
    with pytest.raises(ValueError, match="backend must be one of"):
        DescriptorOperator(make_pattern("brief"), backend="gpu")


def test_field_outside_patch_is_refused():
    pattern = Pattern("toy", 8, [[20, 20], [3, 3]], [1, 1], [1, 1], [[0, 1]])
    with pytest.raises(ValueError, match="field 0 .* reads no pixel"):
        DescriptorOperator(pattern)


def test_rectangular_radii():
    pattern = Pattern("toy", 8, [[3, 3], [5, 5]], [1, 1], [[1, 0], [0, 2]], [[0, 1]], kernel="box")
    kernels = field_kernels(pattern, "box").toarray().reshape(2, 8, 8)
    assert np.argwhere(kernels[0]).tolist() == [[3, 2], [3, 3], [3, 4]]
    assert len(np.argwhere(kernels[1])) == 5


def _pixel_reference(pattern, kernel):
    """Field kernels pixel by pixel: along each axis the pixels within the radius (or the nearest one), clipped.

    Returns the kernels (F x N) and how many fields the patch border clipped.
    """
    size = pattern.patch_size
    radii = pattern.radii if pattern.radii.ndim == 2 else np.stack([pattern.radii, pattern.radii], axis=1)
    kernels, clipped = np.zeros((pattern.n_fields, size, size)), 0
    for f, ((cx, cy), (rx, ry), sigma) in enumerate(zip(pattern.centers, radii, pattern.sigmas)):
        axes = []
        for c, r in ((cx, rx), (cy, ry)):
            candidates = np.arange(np.floor(c - r) - 1, np.ceil(c + r) + 2)
            read = candidates[np.abs(candidates - c) <= r + 1e-9]
            read = read if read.size else np.floor([c + 0.5])
            inside = (read >= 0) & (read < size)
            clipped += not inside.all()
            axes.append(read[inside].astype(int))
        xs, ys = np.meshgrid(*axes)
        weights = np.ones(xs.shape)
        if kernel == "gaussian":
            weights = np.exp(-((xs - cx) ** 2 + (ys - cy) ** 2) / (2 * sigma**2))
        kernels[f, ys, xs] = weights / weights.sum()
    return kernels.reshape(pattern.n_fields, -1), clipped


def _keypoint_patterns():
    rng = np.random.default_rng(3)
    brief = make_pattern("brief", patch_size=16, m=32)
    gaussian_brief = make_pattern("brief", patch_size=16, m=32, distribution="gaussian")
    freak = make_pattern("freak", m=64)
    patterns = [brief, freak]
    for angle, scale in zip(rng.uniform(0, 360, 4), rng.uniform(0.7, 1.3, 4)):
        patterns.append(brief.transformed(angle=angle, scale=scale, patch_size=24))
        patterns.append(gaussian_brief.transformed(angle=angle, scale=scale, patch_size=24))
        patterns.append(freak.transformed(angle=angle, scale=scale))
    # Corners of the rotated square fall outside the 16x16 patch: fields clipped by the border.
    patterns.append(brief.transformed(angle=45))
    return patterns


@pytest.mark.parametrize("kernel", [None, "gaussian", "box"])
def test_field_entries_of_many_patterns_are_each_patterns_field_kernels(kernel):
    patterns = _keypoint_patterns()
    entry_start, pixels, weights = field_entries(patterns, kernel=kernel)
    assert entry_start.dtype == np.int64 and pixels.dtype == np.int32 and weights.dtype == np.float64
    assert entry_start.shape == (sum(p.n_fields for p in patterns) + 1,) and entry_start[0] == 0
    first = 0
    for pattern in patterns:
        matrix = field_kernels(pattern, kernel or pattern.kernel)
        stop = entry_start[first + pattern.n_fields]
        assert np.array_equal(entry_start[first:first + pattern.n_fields + 1] - entry_start[first], matrix.indptr)
        assert np.array_equal(pixels[entry_start[first]:stop], matrix.indices)
        assert np.array_equal(weights[entry_start[first]:stop], matrix.data)
        first += pattern.n_fields


@pytest.mark.parametrize("kernel", ["gaussian", "box"])
def test_field_kernels_match_pixel_by_pixel_reference_including_clipped_fields(kernel):
    clipped = 0
    for pattern in _keypoint_patterns():
        matrix = field_kernels(pattern, kernel)
        reference, n_clipped = _pixel_reference(pattern, kernel)
        assert matrix.has_sorted_indices and np.allclose(matrix.toarray(), reference, rtol=1e-12, atol=0)
        clipped += n_clipped
    assert clipped > 0


def test_field_entries_name_the_field_and_pattern_that_read_no_pixel():
    outside = Pattern("toy", 8, [[3, 3], [20, 20]], [1, 1], [1, 1], [[0, 1]])
    brief = make_pattern("brief", patch_size=8, m=4)
    message = r"field 1 of pattern 'toy' \(patterns\[2\]\) at \(20\.00, 20\.00\) reads no pixel of the 8x8 patch"
    with pytest.raises(ValueError, match=message):
        field_entries([brief, brief, outside])
    with pytest.raises(ValueError, match=r"^field 1 of pattern 'toy' at \(20\.00, 20\.00\) reads no pixel"):
        field_kernels(outside, "box")
    with pytest.raises(ValueError, match="kernel must be one of"):
        field_entries([brief], kernel="disc")
    with pytest.raises(ValueError, match="patterns must hold at least one Pattern"):
        field_entries([])
