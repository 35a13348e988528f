import numpy as np
import pytest
import pywt

from lbdviewer.testing import dot_test
from lbdviewer.operators.wavelets import (
    LANES,
    HaarTransform,
    haar_adjoint_inplace,
    haar_adjoint_lanes,
    haar_forward_inplace,
    haar_forward_lanes,
)

SHAPES = [(1, 1), (1, 7), (7, 1), (3, 5), (5, 6), (8, 8), (9, 16), (32, 32)]


@pytest.mark.parametrize("shape", SHAPES)
def test_adjoint_inverts_forward_batched(shape):
    haar = HaarTransform(shape)
    x = np.random.default_rng(0).standard_normal((2, 3) + shape)
    np.testing.assert_allclose(haar.adjoint(haar.forward(x)), x, atol=1e-12)


@pytest.mark.parametrize("shape", SHAPES)
def test_forward_inverts_adjoint(shape):
    haar = HaarTransform(shape)
    c = np.random.default_rng(1).standard_normal((4,) + shape)
    np.testing.assert_allclose(haar.forward(haar.adjoint(c)), c, atol=1e-12)


@pytest.mark.parametrize("shape", SHAPES)
def test_dot_test_and_energy(shape):
    haar = HaarTransform(shape)
    rng = np.random.default_rng(2)
    dot_test(haar, rng=rng, atol=1e-10)
    x = rng.standard_normal(shape)
    assert np.linalg.norm(haar.forward(x)) == pytest.approx(np.linalg.norm(x), rel=1e-12)


@pytest.mark.parametrize("shape", [(3, 5), (8, 8), (6, 1)])
def test_matrix_is_orthogonal(shape):
    w = HaarTransform(shape).matrix()
    np.testing.assert_allclose(w @ w.T, np.eye(w.shape[0]), atol=1e-12)


@pytest.mark.parametrize("size", [2, 8, 32])
def test_matches_pywavelets_periodization(size):
    x = np.random.default_rng(3).standard_normal((size, size))
    expected, _ = pywt.coeffs_to_array(pywt.wavedec2(x, "haar", mode="periodization"))
    np.testing.assert_allclose(np.abs(HaarTransform((size, size)).forward(x)), np.abs(expected),
                               atol=1e-12)


@pytest.mark.parametrize("shape", [(8, 2), (32, 32), (1, 4)])
def test_constant_power_of_two_image_has_one_coefficient(shape):
    coefficients = HaarTransform(shape).forward(np.full(shape, 0.5))
    expected = np.zeros(shape)
    expected.flat[0] = 0.5 * np.sqrt(np.prod(shape))
    np.testing.assert_allclose(coefficients, expected, atol=1e-12)


def test_float32_stays_float32_and_ints_become_float():
    haar = HaarTransform((4, 4))
    assert haar.forward(np.ones((4, 4), dtype=np.float32)).dtype == np.float32
    assert haar.adjoint(np.ones((2, 4, 4), dtype=np.float32)).dtype == np.float32
    assert haar.forward(np.ones((4, 4), dtype=int)).dtype == np.float64


def test_one_dimensional_shape():
    haar = HaarTransform((5,))
    x = np.arange(5.0)
    np.testing.assert_allclose(haar.adjoint(haar.forward(x)), x, atol=1e-12)
    assert np.linalg.norm(haar.forward(x)) == pytest.approx(np.linalg.norm(x))


@pytest.mark.parametrize("shape", [(3, 5), (32, 32), (7, 2)])
def test_numba_kernels_match_numpy(shape):
    haar = HaarTransform(shape)
    x = np.random.default_rng(4).standard_normal(shape).astype(np.float32)
    flat, scratch = x.ravel().copy(), np.empty(max(shape), dtype=np.float32)
    haar_forward_inplace(flat, scratch, *shape)
    np.testing.assert_allclose(flat, haar.forward(x).ravel(), atol=1e-6)
    haar_adjoint_inplace(flat, scratch, *shape)
    np.testing.assert_allclose(flat, x.ravel(), atol=1e-5)


@pytest.mark.parametrize("shape", [(3, 5), (32, 32), (7, 2), (1, 6), (5, 1)])
def test_lane_kernels_match_the_one_image_kernels_bit_for_bit(shape):
    n = shape[0] * shape[1]
    images = np.random.default_rng(5).standard_normal((LANES, n)).astype(np.float32)
    interleaved = images.T.ravel().copy()  # element j of image k at j * LANES + k
    coefficients, block = np.empty_like(interleaved), np.empty_like(interleaved)
    haar_forward_lanes(interleaved, coefficients, block, *shape)
    expected, scratch = images.copy(), np.empty(max(shape), dtype=np.float32)
    for image in expected:
        haar_forward_inplace(image, scratch, *shape)
    np.testing.assert_array_equal(coefficients.reshape(n, LANES).T, expected)
    haar_adjoint_lanes(coefficients, block, *shape)
    for image in expected:
        haar_adjoint_inplace(image, scratch, *shape)
    np.testing.assert_array_equal(coefficients.reshape(n, LANES).T, expected)
    np.testing.assert_allclose(expected, images, atol=1e-5)


@pytest.mark.parametrize("shape", [(0, 3), (2, 2, 2)])
def test_bad_shape_raises(shape):
    with pytest.raises(ValueError, match="shape"):
        HaarTransform(shape)


def test_wrong_input_shape_raises():
    with pytest.raises(ValueError, match="x must have shape"):
        HaarTransform((4, 4)).forward(np.zeros((4, 5)))
