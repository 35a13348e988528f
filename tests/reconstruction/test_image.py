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
