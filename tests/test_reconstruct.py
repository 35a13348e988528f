import numpy as np
import pytest

from lbdviewer.metrics import correlation
from lbdviewer.patterns import make_pattern
from lbdviewer.reconstruct import WHOLE_IMAGE_METHODS, average_patches, describe_sites, iter_reconstruct_image, \
    reconstruct_image
from lbdviewer.sites import grid_sites


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
