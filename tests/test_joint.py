import numpy as np
import pytest

from lbdviewer.joint import JointOperator
from lbdviewer.operators import DescriptorOperator, pack_bits, sign_with_ties
from lbdviewer.patterns import make_pattern
from lbdviewer.sites import grid_sites


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
    x, y = rng.standard_normal((30, 37)), rng.standard_normal(op.range_shape)
    assert abs(np.vdot(op.forward(x), y) - np.vdot(x, op.adjoint(y))) < 1e-10 * np.abs(y).sum()


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
    import lbdviewer.joint as joint

    rng = np.random.default_rng(5)
    sites = grid_sites((40, 40), patch_size=16, offset=4)
    monkeypatch.setattr(joint, "BLOCK_SITES", 5)  # 49 sites in 10 blocks
    op = JointOperator((40, 40), sites, pattern, dtype=np.float64)
    x, y = rng.random((40, 40)), rng.standard_normal(op.range_shape)
    positive, margin = y > 0, np.abs(rng.standard_normal((1, op.m))) * 0.01
    packed = pack_bits(np.where(positive, 1, -1))

    def everything():
        return (op.forward(x), op.adjoint(y), op.binary_gradient(x, packed), op.squared_hinge(x, positive, margin))

    monkeypatch.setattr(joint, "PARALLEL_MIN_SITES", 10**9)
    serial = everything()
    monkeypatch.setattr(joint, "PARALLEL_MIN_SITES", 1)
    monkeypatch.setattr(joint.numba, "get_num_threads", lambda: 3)
    assert len(op._chunks()) == 4
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
