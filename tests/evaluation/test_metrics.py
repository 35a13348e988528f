import numpy as np
import pytest

from lbdviewer.evaluation import metrics


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


def _straightforward_patch_metrics(reference, estimate, corners, p):
    """The definition, one patch at a time."""
    correlation, error = [], []
    for row, col in corners:
        r, x = reference[row:row + p, col:col + p], estimate[row:row + p, col:col + p]
        rc, xc = r - r.mean(), x - x.mean()
        denominator = np.sqrt((rc * rc).sum() * (xc * xc).sum())
        correlation.append((rc * xc).sum() / denominator if denominator > 1e-24 else 0.0)
        error.append(float(metrics.orientation_error(r, x)))
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
    recomputed, direct = [], metrics._direct_terms

    def counted(reference, estimate, corners, patch_size):
        recomputed.append(len(corners))
        return direct(reference, estimate, corners, patch_size)

    monkeypatch.setattr(metrics, "_direct_terms", counted)
    fast = metrics.patch_metrics(reference, estimate, corners, p)
    assert len(recomputed) == 1 and 0 < recomputed[0] < len(corners) / 4   # dense path, a few patches redone
    correlation, error = _straightforward_patch_metrics(reference, estimate, corners, p)
    assert np.isnan(error).any() and (~np.isnan(error)).sum() > len(corners) / 4
    assert (correlation == 0).any()
    np.testing.assert_allclose(fast["correlation"], correlation, rtol=0, atol=1e-12)
    np.testing.assert_allclose(fast["orientation_error_deg"], error, rtol=0, atol=1e-9)


def test_patch_metrics_reject_patches_outside_the_image():
    with pytest.raises(ValueError, match="inside the image"):
        metrics.patch_metrics(np.zeros((8, 8)), np.zeros((8, 8)), [[0, 5]], 4)
    with pytest.raises(ValueError, match="patch_size"):
        metrics.patch_metrics(np.zeros((8, 8)), np.zeros((8, 8)), [[0, 0]], 1)


@pytest.mark.parametrize("bitorder", ["little", "big"])
def test_packed_bit_consistency_equals_unpacked(bitorder):
    from lbdviewer.bits import pack_bits, unpack_bits

    rng = np.random.default_rng(4)
    bits = rng.choice([-1, 1], size=(6, 13))
    reference_bits = np.where(rng.random((6, 13)) < 0.3, -bits, bits)
    packed, reference_packed = pack_bits(bits, bitorder=bitorder), pack_bits(reference_bits, bitorder=bitorder)
    packed[:, -1] |= np.uint8(0b11100000 if bitorder == "little" else 0b00000111)  # bits past m must not count
    assert np.array_equal(unpack_bits(packed, 13, bitorder=bitorder), bits)
    per, overall = metrics.packed_bit_consistency(packed, reference_packed, 13, bitorder=bitorder)
    expected_per, expected_overall = metrics.bit_consistency(bits, reference_bits)
    assert np.array_equal(per, expected_per) and overall == expected_overall


def test_rank_correlation_ignores_tone_maps_but_not_orderings():
    rng = np.random.default_rng(1)
    reference = rng.random((16, 16))
    assert metrics.rank_correlation(reference, reference ** 3) == pytest.approx(1.0)
    assert metrics.correlation(reference, reference ** 3) < 0.95  # Pearson sees the tone map
    assert metrics.rank_correlation(reference, 1 - reference) == pytest.approx(-1.0)
    swapped = reference.copy()
    swapped[:, :8] = reference[:, 8:]
    swapped[:, 8:] = reference[:, :8]
    assert abs(metrics.rank_correlation(reference, swapped)) < 0.3
    mask = np.ones((16, 16), bool); mask[:, 8:] = False
    assert metrics.rank_correlation(reference, np.where(mask, np.sqrt(reference), 0.0), mask=mask) == pytest.approx(1.0)
    assert metrics.rank_correlation(reference, np.zeros((16, 16))) == 0.0
    assert "rank_correlation" in metrics.image_metrics(reference, reference ** 2)
