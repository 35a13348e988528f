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


def test_shape_mismatch_is_named():
    with pytest.raises(ValueError, match="estimate"):
        metrics.correlation(np.zeros((4, 4)), np.zeros((4, 5)))


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


def _oracle_fit(reference, estimate):
    """The gain >= 0 least-squares fit by scipy's bounded least squares (an independent solver)."""
    from scipy.optimize import lsq_linear

    design = np.stack([estimate.ravel(), np.ones(estimate.size)], axis=1)
    return lsq_linear(design, reference.ravel(), bounds=([0.0, -np.inf], [np.inf, np.inf]), tol=1e-14).x


@pytest.mark.parametrize("gain", [2.0, 0.3, -0.3, -2.0])
def test_fit_is_bounded_least_squares_with_a_nonnegative_gain(gain):
    rng = np.random.default_rng(5)
    reference = rng.random((12, 12))
    estimate = gain * reference + 0.8 * rng.random((12, 12))
    expected = _oracle_fit(reference, estimate)
    fitted = metrics.least_squares_gain_offset(reference, estimate)
    np.testing.assert_allclose(fitted, expected, atol=1e-9)
    assert (fitted[0] > 0) == (gain > 0)


def test_the_fit_is_scale_free_down_to_its_flatness_floor():
    """An estimate varying by 1e-12 (sum of squared deviations ~5e-24, above the 1e-24 floor) is still fitted."""
    reference = np.random.default_rng(7).random((8, 8))
    tiny = 1e-12 * reference + 3.0
    spread = float(((tiny - tiny.mean()) ** 2).sum())
    assert 1e-24 < spread < 1e-23
    gain, offset = metrics.least_squares_gain_offset(reference, tiny)
    np.testing.assert_allclose(gain * tiny + offset, reference, atol=1e-3)   # as the bounded least squares oracle
    assert metrics.least_squares_gain_offset(reference, np.full((8, 8), 3.0)) == (0.0, pytest.approx(reference.mean()))


def test_an_inverted_estimate_scores_like_a_flat_guess():
    reference = np.random.default_rng(6).random((48, 48))
    inverted = 1.0 - reference
    flat_psnr = 10 * np.log10(1.0 / reference.var())                  # the PSNR of guessing the mean
    assert np.isfinite(metrics.psnr(reference, inverted))
    assert metrics.psnr(reference, inverted) == pytest.approx(flat_psnr) and flat_psnr < 12
    assert metrics.ssim(reference, inverted) < 0.05                     # near 0, not 0.99999999
    assert metrics.psnr(reference, reference) == float("inf") and metrics.ssim(reference, reference) == 1.0
    assert metrics.correlation(reference, inverted) == pytest.approx(-1.0)   # the sign says it is inverted
    scores = metrics.image_metrics(reference, inverted)
    assert scores["psnr"] < 12 and scores["ssim"] < 0.05 and scores["correlation"] < -0.99


def test_ssim_without_a_mask_is_scikit_images_mean_ssim():
    from skimage.metrics import structural_similarity

    rng = np.random.default_rng(7)
    reference = rng.random((40, 36))
    estimate = 2.0 * reference + rng.random((40, 36))
    gain, offset = _oracle_fit(reference, estimate)
    expected = structural_similarity(reference, gain * estimate + offset, data_range=1.0)
    assert metrics.ssim(reference, estimate) == pytest.approx(expected, abs=1e-12)


def test_masked_psnr_and_ssim_read_nothing_outside_the_mask():
    from skimage.metrics import structural_similarity

    rng = np.random.default_rng(8)
    reference = rng.random((40, 40))
    estimate = 0.5 * reference + 0.3 * rng.random((40, 40))
    mask = np.zeros((40, 40), bool)
    mask[5:31, 8:36] = True
    garbage = np.where(mask, estimate, 1e3 * rng.standard_normal((40, 40)))
    other_garbage = np.where(mask, reference, -7.0)
    psnr = metrics.psnr(reference, estimate, mask=mask)
    ssim = metrics.ssim(reference, estimate, mask=mask)
    assert metrics.psnr(other_garbage, garbage, mask=mask) == pytest.approx(psnr, abs=1e-9)
    assert metrics.ssim(other_garbage, garbage, mask=mask) == pytest.approx(ssim, abs=1e-9)
    # the oracles: the fit and the error over the rectangle alone; scikit-image's SSIM of the rectangle
    r, x = reference[5:31, 8:36], estimate[5:31, 8:36]
    gain, offset = _oracle_fit(r, x)
    assert psnr == pytest.approx(10 * np.log10(1 / np.mean((gain * x + offset - r) ** 2)), abs=1e-9)
    assert ssim == pytest.approx(structural_similarity(r, gain * x + offset, data_range=1.0), abs=1e-9)
    assert metrics.psnr(reference, garbage) < psnr - 3 and metrics.ssim(reference, garbage) < ssim - 0.3


def test_ssim_of_a_mask_without_a_whole_window_is_undefined():
    mask = np.zeros((16, 16), bool)
    mask[:, 3:9] = True                                   # six columns: no 7x7 window fits
    assert np.isnan(metrics.ssim(np.eye(16), np.eye(16), mask=mask))
    mask[:, 9] = True
    assert metrics.ssim(np.eye(16), np.eye(16), mask=mask) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="at least 7x7"):
        metrics.ssim(np.zeros((6, 20)), np.zeros((6, 20)))


@pytest.mark.parametrize("gain", [1.0, 0.05, -0.05, -1.0])
def test_the_display_rule_and_the_metrics_share_one_fit(gain):
    from lbdviewer.evaluation.display import display_stretch

    rng = np.random.default_rng(9)
    reference = rng.random((20, 20))
    estimate = gain * reference + rng.random((20, 20))
    fitted_gain, _ = metrics.least_squares_gain_offset(reference, estimate)
    shown = display_stretch(estimate, reference=reference)
    assert (shown.rule == "fit") == (fitted_gain > 0) == (gain > 0)


def test_packed_consistency_for_every_m_its_bytes_can_hold():
    from lbdviewer.bits import pack_bits

    bits = np.random.default_rng(12).choice([-1, 1], size=(3, 16))
    for m in (9, 12, 16):                                              # two bytes hold 9 to 16 bits
        packed = pack_bits(bits[:, :m])
        assert metrics.packed_bit_consistency(packed, packed, m)[1] == 1.0
    for m in (8, 17):
        with pytest.raises(ValueError, match="m must be from 9 to 16"):
            metrics.packed_bit_consistency(pack_bits(bits), pack_bits(bits), m)
