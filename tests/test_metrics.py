import numpy as np
import pytest

from lbdviewer import metrics


def test_bit_consistency_counts_equal_bits():
    per, overall = metrics.bit_consistency([[1, -1, 1, 1], [1, 1, 1, 1]], [[1, 1, 1, 1], [1, 1, 1, 1]])
    assert per.tolist() == [0.75, 1.0] and overall == 0.875


def test_gain_offset_fit_makes_psnr_and_correlation_invariant():
    rng = np.random.default_rng(0)
    reference = rng.random((20, 20))
    assert metrics.correlation(reference, 0.3 * reference + 0.2) == pytest.approx(1.0)
    assert metrics.psnr(reference, 0.3 * reference + 0.2) == float("inf")
    assert metrics.correlation(reference, 1 - reference) == pytest.approx(-1.0)


def test_psnr_of_a_known_error():
    reference = np.zeros((8, 8)); reference[:, 4:] = 1.0
    error = np.where(np.add.outer(np.arange(8), np.arange(8)) % 2, 0.05, -0.05)  # orthogonal to image and 1
    assert metrics.psnr(reference, reference + error) == pytest.approx(10 * np.log10(1 / 0.05**2), abs=0.1)


def test_mask_excludes_pixels():
    reference = np.linspace(0, 1, 64).reshape(8, 8)
    estimate = reference.copy(); estimate[:, :2] = 0.9
    mask = np.ones((8, 8), bool); mask[:, :2] = False
    assert metrics.correlation(reference, estimate, mask=mask) == pytest.approx(1.0)
    assert metrics.correlation(reference, estimate) < 0.99


def test_ssim_is_one_for_affine_copies_and_lower_for_noise():
    reference = np.random.default_rng(1).random((32, 32))
    assert metrics.ssim(reference, 2 * reference - 1) == pytest.approx(1.0)
    assert metrics.ssim(reference, np.random.default_rng(2).random((32, 32))) < 0.2


def test_orientation_of_edges_and_error():
    vertical_edge = np.zeros((16, 16)); vertical_edge[:, 8:] = 1.0      # gradient along x: 0 degrees
    diagonal = np.add.outer(np.arange(16.0), np.arange(16.0))              # gradient along (1, 1): 45 degrees
    angle, coherence = metrics.structure_orientation(np.stack([vertical_edge, vertical_edge.T, diagonal]))
    assert angle.round(6).tolist() == [0.0, 90.0, 45.0]
    assert coherence.min() > 0.99
    assert metrics.orientation_error(vertical_edge, diagonal) == pytest.approx(45.0)
    flat = np.zeros((16, 16))
    assert np.isnan(metrics.orientation_error(flat, vertical_edge))


def test_image_metrics_report_orientation_over_coherent_patches():
    reference = np.zeros((32, 32)); reference[:, 16:] = 1.0
    estimate = np.zeros((32, 32)); estimate[8:, :] = 1.0                  # a horizontal edge instead
    result = metrics.image_metrics(reference, estimate, corners=[[0, 0], [0, 8]], patch_size=16)
    assert result["coherent_patches"] == 1          # the patch at column 0 is flat
    assert result["orientation_error_deg"] == pytest.approx(90.0)


def test_shape_mismatch_is_named():
    with pytest.raises(ValueError, match="estimate"):
        metrics.correlation(np.zeros((4, 4)), np.zeros((4, 5)))
