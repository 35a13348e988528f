import numpy as np
import pytest
from skimage import data

from lbdviewer.operators.descriptor import DescriptorOperator
from lbdviewer.reconstruction.patches import iter_reconstruct_patches, reconstruct_patches
from lbdviewer.patterns.families import make_pattern
from lbdviewer.solvers.patch.biht import BIHT


@pytest.fixture(scope="module")
def operator():
    return DescriptorOperator(make_pattern("brief", patch_size=16, m=128))


@pytest.fixture(scope="module")
def patches():
    image = data.camera().astype(np.float64) / 255.0
    return np.stack([image[r:r + 16, c:c + 16] for r, c in [(100, 200), (300, 50), (40, 400)]])


@pytest.mark.parametrize("method", ["biht", "primal-dual"])
def test_output_is_a_valid_patch_batch(operator, patches, method):
    out = reconstruct_patches(operator.describe(patches), operator, method=method, iterations=50)
    assert out.shape == (3, 16, 16) and out.dtype == np.float32
    assert out.min() >= 0.0 and out.max() <= 1.0
    np.testing.assert_allclose(out.mean(axis=(1, 2)), 0.5, atol=1e-5)


def test_biht_reconstruction_resembles_the_patches(operator, patches):
    out = reconstruct_patches(operator.describe(patches), operator)
    correlation = [np.corrcoef(a.ravel(), b.ravel())[0, 1] for a, b in zip(out, patches)]
    assert np.mean(correlation) > 0.4


def test_primal_dual_on_real_descriptors(operator, patches):
    out = reconstruct_patches(operator.describe(patches, binary=False), operator,
                              method="primal-dual", iterations=300)  # lam = DEFAULT_LAM
    correlation = [np.corrcoef(a.ravel(), b.ravel())[0, 1] for a, b in zip(out, patches)]
    assert np.mean(correlation) > 0.3


def test_chunks_report_progress_and_do_not_change_the_result(operator, patches):
    bits = operator.describe(patches)
    progress = list(iter_reconstruct_patches(bits, operator, iterations=30, chunk=2))
    assert [(done, total) for done, total, _ in progress] == [(2, 3), (3, 3)]
    whole = reconstruct_patches(bits, operator, iterations=30, chunk=1024)
    np.testing.assert_array_equal(np.concatenate([part for *_, part in progress]), whole)


def test_defaults_are_the_papers(operator, patches):
    bits = operator.describe(patches)
    expected = BIHT(operator, bits, sparsity=0.4, iterations=200).run().x
    np.testing.assert_array_equal(reconstruct_patches(bits, operator), expected)


def test_empty_batch(operator):
    assert reconstruct_patches(np.zeros((0, 128)), operator).shape == (0, 16, 16)


@pytest.mark.parametrize(("options", "name"), [
    ({"method": "admm"}, "method"), ({"chunk": 0}, "chunk"), ({"sparsity": 2.0}, "sparsity"),
    ({"method": "primal-dual", "lam": 0.0}, "lam"), ({"iterations": 0}, "iterations"),
])
def test_bad_options_name_the_parameter(operator, patches, options, name):
    with pytest.raises(ValueError, match=name):
        reconstruct_patches(operator.describe(patches), operator, **options)


def test_descriptors_must_be_two_dimensional(operator):
    with pytest.raises(ValueError, match="descriptors"):
        reconstruct_patches(np.ones(128), operator)
