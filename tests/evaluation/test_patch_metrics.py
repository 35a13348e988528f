"""Orientation and per-patch quality (lbdviewer.evaluation.orientation)."""

import numpy as np
import pytest

from lbdviewer.evaluation import metrics, orientation


def test_orientation_of_edges_and_error():
    vertical_edge = np.zeros((16, 16)); vertical_edge[:, 8:] = 1.0      # gradient along x: 0 degrees
    diagonal = np.add.outer(np.arange(16.0), np.arange(16.0))              # gradient along (1, 1): 45 degrees
    angle, coherence = orientation.structure_orientation(np.stack([vertical_edge, vertical_edge.T, diagonal]))
    assert angle.round(6).tolist() == [0.0, 90.0, 45.0]
    assert coherence.min() > 0.99
    assert orientation.orientation_error(vertical_edge, diagonal) == pytest.approx(45.0)
    flat = np.zeros((16, 16))
    assert np.isnan(orientation.orientation_error(flat, vertical_edge))


def _straightforward_patch_metrics(reference, estimate, corners, p):
    """The definition, one patch at a time."""
    correlation, error = [], []
    for row, col in corners:
        r, x = reference[row:row + p, col:col + p], estimate[row:row + p, col:col + p]
        rc, xc = r - r.mean(), x - x.mean()
        denominator = np.sqrt((rc * rc).sum() * (xc * xc).sum())
        correlation.append((rc * xc).sum() / denominator if denominator > 1e-24 else 0.0)
        error.append(float(orientation.orientation_error(r, x)))
    return np.array(correlation), np.array(error)


@pytest.mark.parametrize("p", [2, 5, 8])
def test_dense_patch_metrics_equal_the_per_patch_definition(p, monkeypatch):
    rng = np.random.default_rng(3)
    y, x = np.mgrid[0:23, 0:29]
    reference = 0.5 + 0.4 * np.sin(0.35 * x + 0.2 * y) + 0.1 * rng.random((23, 29))  # coherent and not
    reference[:7, :9] = 0.3                                         # constant patches, flat or not at zero
    reference[15:, 20:] = 0.0
    estimate = rng.random((23, 29)) + 0.3 * reference
    estimate[10:18, 2:12] = 0.7
    corners = np.argwhere(np.ones((24 - p, 30 - p), bool))          # every position: overlapping patches
    recomputed, direct = [], orientation._direct_terms

    def counted(reference, estimate, corners, patch_size):
        recomputed.append(len(corners))
        return direct(reference, estimate, corners, patch_size)

    monkeypatch.setattr(orientation, "_direct_terms", counted)
    fast = orientation.patch_metrics(reference, estimate, corners, p)
    assert len(recomputed) == 1 and 0 < recomputed[0] < len(corners) / 4   # dense path, a few patches redone
    correlation, error = _straightforward_patch_metrics(reference, estimate, corners, p)
    assert np.isnan(error).any() and (~np.isnan(error)).sum() > len(corners) / 4
    assert (correlation == 0).any()
    np.testing.assert_allclose(fast["correlation"], correlation, rtol=0, atol=1e-12)
    np.testing.assert_allclose(fast["orientation_error_deg"], error, rtol=0, atol=1e-9)


def test_patch_metrics_reject_patches_outside_the_image():
    with pytest.raises(ValueError, match="inside the image"):
        orientation.patch_metrics(np.zeros((8, 8)), np.zeros((8, 8)), [[0, 5]], 4)
    with pytest.raises(ValueError, match="patch_size"):
        orientation.patch_metrics(np.zeros((8, 8)), np.zeros((8, 8)), [[0, 0]], 1)


def test_image_metrics_report_orientation_over_coherent_patches():
    reference = np.zeros((32, 32)); reference[:, 16:] = 1.0
    estimate = np.zeros((32, 32)); estimate[8:, :] = 1.0                  # a horizontal edge instead
    result = metrics.image_metrics(reference, estimate, corners=[[0, 0], [0, 8]], patch_size=16)
    assert result["coherent_patches"] == 1          # the patch at column 0 is flat
    assert result["orientation_error_deg"] == pytest.approx(90.0)


def test_coherence_is_the_eigenvalue_contrast_of_the_structure_tensor():
    """An oracle for intermediate coherences: the eigenvalues of J by numpy, (l1 - l2) / (l1 + l2)."""
    rng = np.random.default_rng(11)
    patches = np.cumsum(rng.standard_normal((6, 9, 9)), axis=2) + 0.3 * rng.standard_normal((6, 9, 9))
    _, coherence = orientation.structure_orientation(patches)
    for patch, value in zip(patches, coherence):
        gx, gy = np.gradient(patch, axis=1), np.gradient(patch, axis=0)
        tensor = np.array([[np.sum(gx * gx), np.sum(gx * gy)], [np.sum(gx * gy), np.sum(gy * gy)]])
        low, high = np.linalg.eigvalsh(tensor)
        assert value == pytest.approx((high - low) / (high + low), abs=1e-12)
    assert 0.05 < coherence.min() and coherence.max() < 0.95            # intermediate values, not 0 or 1
    faint = np.tile(np.arange(8.0), (8, 1)) * 2.8e-7                    # trace 5e-12: faint, but a ramp
    assert float(orientation.structure_orientation(faint)[1]) == pytest.approx(1.0)
    assert float(orientation.structure_orientation(faint / 10)[1]) == 0.0   # trace 5e-14: flat
