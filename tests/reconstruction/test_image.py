import json
import numpy as np
import pytest

from lbdviewer.evaluation.metrics import correlation
from lbdviewer.patterns.families import make_pattern
from lbdviewer.reconstruction.image import WHOLE_IMAGE_METHODS, average_patches, describe_sites, iter_reconstruct_image, \
    reconstruct_image
from lbdviewer.reconstruction.sites import grid_sites


def test_averaging_known_patches_rebuilds_a_known_image():
    image = np.random.default_rng(0).random((20, 28))
    sites = grid_sites(image.shape, patch_size=8, offset=3)
    patches = np.stack([image[r:r + 8, c:c + 8] for r, c in sites])
    rebuilt, counts = average_patches(patches, sites, image.shape)
    np.testing.assert_allclose(rebuilt, image)
    assert counts.min() >= 1 and counts.max() > 1


def test_uncovered_pixels_stay_black():
    rebuilt, counts = average_patches(np.ones((1, 4, 4)), [[2, 2]], (8, 8))
    assert rebuilt.sum() == 16 and (rebuilt[counts == 0] == 0).all()


@pytest.mark.parametrize("mode, method", [("joint", "biht"), ("patches", "biht"), ("joint", "primal-dual")])
def test_an_edge_is_recovered(mode, method):
    image = np.zeros((24, 24)); image[:, 12:] = 1.0
    pattern = make_pattern("brief", patch_size=16, m=128)
    sites = grid_sites(image.shape, patch_size=16, offset=4)
    result = reconstruct_image(describe_sites(image, sites, pattern), sites, pattern, shape=image.shape,
                               mode=mode, method=method, iterations=80)
    assert result.mode == mode and result.covered.all()
    assert correlation(image, result.image) > 0.6


@pytest.mark.parametrize("method", WHOLE_IMAGE_METHODS)
def test_a_joint_solve_reports_every_iteration(method):
    """Each report is a point where the app can cancel: a long solve must not run on for many iterations."""
    image = np.zeros((24, 24)); image[:, 12:] = 1.0
    pattern = make_pattern("brief", patch_size=16, m=128)
    sites = grid_sites(image.shape, patch_size=16, offset=4)
    reports = list(iter_reconstruct_image(describe_sites(image, sites, pattern), sites, pattern, shape=image.shape,
                                          mode="joint", method=method, iterations=200))
    ran = reports[-1].result.iterations_run
    assert ran > 2 and [report.done for report in reports[:-1]] == list(range(1, ran + 1))
    assert all(report.estimate.shape == image.shape for report in reports)


def test_a_dense_grid_records_both_stages_of_the_consistency_solve():
    image = np.zeros((48, 48)); image[:, 24:] = 1.0
    pattern = make_pattern("brief", patch_size=16, m=64)
    sites = grid_sites(image.shape, patch_size=16, offset=2)  # denser than the 8-pixel first stage
    result = reconstruct_image(describe_sites(image, sites, pattern), sites, pattern, shape=image.shape,
                               mode="joint", method="consistency", iterations=60)
    settings = result.params["solver_settings"]
    coarse, dense = settings["stages"]
    assert settings["solver"] == "CoarseToDense" and coarse["spacing"] == 8 and coarse["sites"] < len(sites)
    assert coarse["iterations"] + dense["iterations"] == 60 and dense["iterations"] == 12
    assert dense["gated_after"] == 10 and dense["tie_lean"] == 0.6 and dense["smoothness"] == 1e-3


@pytest.mark.parametrize("method", ["likelihood", "coherent", "biht"])
def test_other_joint_solvers_say_what_they_ran(method):
    image = np.zeros((24, 24)); image[:, 12:] = 1.0
    pattern = make_pattern("brief", patch_size=16, m=64)
    sites = grid_sites(image.shape, patch_size=16, offset=4)
    result = reconstruct_image(describe_sites(image, sites, pattern), sites, pattern, shape=image.shape,
                               mode="joint", method=method, iterations=8)
    settings = result.params["solver_settings"]
    if method == "biht":
        assert settings is None and result.params["sparsity"] == 0.4
    else:
        expected = {"likelihood": "JointLikelihood", "coherent": "JointCoherentContrast"}[method]
        assert settings["solver"] == expected and settings["iterations"] == 8
        json.dumps(settings)  # plain values: they go into metrics and run records as they are


def test_descriptor_forms_and_errors():
    image = np.random.default_rng(1).random((16, 16))
    pattern = make_pattern("brief", patch_size=16, m=64)
    sites = [[0, 0]]
    real = describe_sites(image, sites, pattern, binary=False)
    assert real.dtype == np.float32 and real.shape == (1, 64)
    with pytest.raises(ValueError, match="biht"):
        reconstruct_image(real, sites, pattern, shape=image.shape, method="biht")
    with pytest.raises(ValueError, match="mode"):
        reconstruct_image(real, sites, pattern, shape=image.shape, mode="other", method="primal-dual")
    result = reconstruct_image(real, sites, pattern, shape=image.shape, method="primal-dual", iterations=20)
    assert result.mode == "patches" and result.solver_bit_consistency is None


def test_describe_and_describe_sites_share_one_encoding():
    from lbdviewer.bits import pack_bits, unpack_bits
    from lbdviewer.operators.descriptor import DescriptorOperator

    image = np.random.default_rng(2).random((24, 24))
    pattern = make_pattern("brief", patch_size=16, m=64)
    op = DescriptorOperator(pattern)
    sites = [[0, 0], [8, 5]]
    patches = np.stack([image[r:r + 16, c:c + 16] for r, c in sites])
    bits = describe_sites(image, sites, pattern)
    assert bits.dtype == op.describe(patches).dtype == np.int8
    np.testing.assert_array_equal(bits, op.describe(patches))
    packed = describe_sites(image, sites, pattern, packed=True)
    assert packed.dtype == np.uint8 and packed.shape == (2, 8)
    np.testing.assert_array_equal(packed, op.describe(patches, packed=True))
    np.testing.assert_array_equal(packed, pack_bits(bits))
    np.testing.assert_array_equal(unpack_bits(packed, 64), bits)
    for refuse in (lambda: describe_sites(image, sites, pattern, binary=False, packed=True),
                   lambda: op.describe(patches, binary=False, packed=True)):
        with pytest.raises(ValueError, match="packed=True needs binary=True"):
            refuse()


def test_float_signs_are_refused_and_each_form_says_what_it_is():
    from lbdviewer.reconstruction.patches import reconstruct_patches
    from lbdviewer.operators.descriptor import DescriptorOperator

    image = np.zeros((32, 32)); image[:, 16:] = 1.0
    image += 0.1 * np.random.default_rng(3).random((32, 32))
    pattern = make_pattern("brief", patch_size=16, m=128)
    sites = grid_sites(image.shape, patch_size=16, offset=8)
    real = describe_sites(image, sites, pattern, binary=False)
    signs = np.sign(real).astype(np.float64)                            # what a user gets from np.sign
    assert np.all(np.abs(signs) == 1)
    with pytest.raises(ValueError, match=r"all -1 or \+1.*astype\(np\.int8\).*not their signs"):
        reconstruct_image(signs, sites, pattern, shape=image.shape)
    with pytest.raises(ValueError, match=r"all -1 or \+1"):
        reconstruct_image(np.where(real > 0, 1.0, -1.0), sites, pattern, shape=image.shape, method="primal-dual")
    as_bits = reconstruct_image(signs.astype(np.int8), sites, pattern, shape=image.shape, iterations=30)
    assert as_bits.params["binary"] and as_bits.method == "consistency"
    as_real = reconstruct_image(real, sites, pattern, shape=image.shape, iterations=30)
    assert not as_real.params["binary"] and as_real.method == "primal-dual"
    op = DescriptorOperator(pattern)
    patch_signs = np.sign(op.describe(image[None, :16, :16], binary=False))
    with pytest.raises(ValueError, match=r"all -1 or \+1"):
        reconstruct_patches(patch_signs, op, method="primal-dual", iterations=5)
    said = reconstruct_patches(patch_signs, op, method="primal-dual", iterations=5, binary=True)  # the caller says
    assert said.shape == (1, 16, 16)
