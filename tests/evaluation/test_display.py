"""The one display rule (lbdviewer.evaluation.display)."""

import numpy as np
import pytest

from lbdviewer.evaluation.display import (PERCENTILES, difference_image, display_original, display_stretch,
                               percentile_gain_offset)


def _ramp(shape=(16, 16)):
    return np.linspace(0.0, 1.0, shape[0] * shape[1]).reshape(shape)


def test_fit_recovers_an_affine_copy_of_the_original_exactly():
    original = _ramp() ** 2
    estimate = 3.0 * original - 7.0                      # bits carry no gain or offset
    shown = display_stretch(estimate, reference=original)
    assert shown.rule == "fit" and "fitted to the original" in shown.description
    np.testing.assert_allclose(shown.image, original, atol=1e-12)
    assert shown.gain == pytest.approx(1 / 3) and shown.offset == pytest.approx(7 / 3)
    assert shown.clipped_fraction == 0.0


def test_fit_matches_mean_and_spread_of_the_original_at_full_contrast():
    rng = np.random.default_rng(0)
    original = rng.random((20, 20))
    estimate = 0.3 * original + 0.2 * rng.random((20, 20))
    shown = display_stretch(estimate, reference=original)
    mapped = shown.gain * estimate + shown.offset            # before clipping to [0, 1]
    assert mapped.mean() == pytest.approx(original.mean()) and mapped.std() == pytest.approx(original.std())
    # the least-squares fit would shrink the contrast by the correlation; this one does not
    least_squares = np.polyfit(estimate.ravel(), original.ravel(), 1)[0]
    correlation = np.corrcoef(estimate.ravel(), original.ravel())[0, 1]
    assert shown.gain == pytest.approx(least_squares / correlation)


def test_percentiles_over_covered_pixels_only_and_uncovered_black():
    image = _ramp()
    mask = np.zeros(image.shape, bool)
    mask[4:12, 4:12] = True
    image_with_outliers = np.where(mask, image, 100.0)   # uncovered values must not matter
    shown = display_stretch(image_with_outliers, mask=mask)
    assert shown.rule == "percentile" and "0.5" in shown.description and "99.5" in shown.description
    assert np.all(shown.image[~mask] == 0.0)
    low, high = np.percentile(image[mask], PERCENTILES)
    np.testing.assert_allclose(shown.image[mask], np.clip((image[mask] - low) / (high - low), 0, 1))
    assert shown.clipped_fraction == 2 / mask.sum()        # the lowest and the highest of 64 values


def test_inverted_estimate_is_not_shown_the_right_way_up():
    original = _ramp()
    shown = display_stretch(1.0 - original, reference=original)   # negative gain would "fix" it
    assert shown.rule == "percentile" and "not positive" in shown.description
    assert shown.gain > 0
    assert np.corrcoef(shown.image.ravel(), original.ravel())[0, 1] < 0


def test_constant_estimate_is_mid_grey_and_no_covered_pixel_is_black():
    assert np.all(display_stretch(np.full((3, 3), 0.7)).image == 0.5)
    assert percentile_gain_offset(np.ones((2, 2)), np.ones((2, 2), bool)) == (0.0, 0.5)
    empty = display_stretch(np.ones((3, 3)), mask=np.zeros((3, 3), bool))
    assert np.all(empty.image == 0.0) and "no covered pixel" in empty.description


def test_originals_are_shown_as_they_are():
    original = _ramp()
    shown = display_original(original)
    assert shown.rule == "none" and np.array_equal(shown.image, original)
    record = shown.record()
    assert record["gain"] == 1.0 and record["offset"] == 0.0 and record["percentiles"] is None


def test_record_names_the_rule_and_the_map():
    record = display_stretch(_ramp() * 2).record()
    assert record["rule"] == "percentile" and record["percentiles"] == [0.5, 99.5]
    assert set(record) == {"rule", "description", "gain", "offset", "clipped_fraction", "percentiles", "uncovered"}
    assert record["uncovered"] == "black"


def test_uncovered_pixels_are_black_or_the_covered_median():
    image = _ramp()
    mask = np.zeros(image.shape, dtype=bool)
    mask[:, : image.shape[1] // 2] = True
    black = display_stretch(image, mask=mask)
    neutral = display_stretch(image, mask=mask, uncovered="neutral")
    np.testing.assert_array_equal(black.image[mask], neutral.image[mask])
    assert np.all(black.image[~mask] == 0.0)
    assert np.allclose(neutral.image[~mask], np.median(neutral.image[mask]))
    assert 0.2 < neutral.image[~mask][0] < 0.8 and neutral.record()["uncovered"] == "neutral"


@pytest.mark.parametrize("kwargs, message", [
    ({"image": np.zeros(4)}, "image must be a non-empty 2-D array"),
    ({"image": np.array([[0.0, np.nan]])}, "image must be finite"),
    ({"image": np.zeros((2, 2)), "mask": np.ones((3, 3), bool)}, "mask must have the image's shape"),
    ({"image": np.zeros((2, 2)), "reference": np.zeros((2, 3))}, "reference must have the image's shape"),
    ({"image": np.zeros((2, 2)), "uncovered": "grey"}, "uncovered must be one of"),
])
def test_bad_input_names_the_parameter(kwargs, message):
    with pytest.raises(ValueError, match=message):
        display_stretch(**kwargs)


def test_difference_is_signed_with_a_symmetric_limit():
    original = np.array([[0.0, 0.5], [1.0, 0.25]])
    shown = np.array([[0.1, 0.5], [0.6, 0.25]])
    mask = np.array([[True, True], [True, False]])
    difference, limit = difference_image(original, shown, mask=mask)
    np.testing.assert_allclose(difference, [[0.1, 0.0], [-0.4, 0.0]])
    assert limit == pytest.approx(0.4)
    assert difference_image(original, original)[1] == pytest.approx(1 / 255)


def test_reconstruct_writes_the_display_rule_and_names_it(tmp_path):
    import json

    from lbdviewer.cli.main import main
    from lbdviewer.io.images import load_image, save_png

    image = np.zeros((40, 40))
    image[10:30, 10:30] = 0.8
    save_png(tmp_path / "in.png", image)
    common = ["reconstruct", str(tmp_path / "in.png"), "--patch-size", "16", "--m", "64", "--offset", "8",
              "--iterations", "20", "--quiet"]
    assert main([*common, "-o", str(tmp_path / "shown.png"), "--metrics", str(tmp_path / "m.json")]) == 0
    assert main([*common, "-o", str(tmp_path / "raw.png"), "--raw", "--metrics", str(tmp_path / "raw.json")]) == 0
    display = json.loads((tmp_path / "m.json").read_text())["display"]
    assert display["rule"] == "fit" and "fitted to the original" in display["description"]
    assert json.loads((tmp_path / "raw.json").read_text())["display"]["rule"] == "raw"
    raw, shown = load_image(tmp_path / "raw.png"), load_image(tmp_path / "shown.png")
    expected = np.clip(display["gain"] * raw + display["offset"], 0, 1)
    assert np.abs(shown - expected).max() <= (abs(display["gain"]) + 1) / 255 + 1e-9


def test_the_fit_reads_only_covered_pixels():
    rng = np.random.default_rng(3)
    original = rng.random((16, 16))
    estimate = 0.4 * original + 0.2 * rng.random((16, 16))
    mask = np.zeros((16, 16), bool)
    mask[2:13, 3:15] = True
    shown = display_stretch(np.where(mask, estimate, -50.0), mask=mask, reference=np.where(mask, original, 9.0))
    gain = original[mask].std() / estimate[mask].std()                   # the covered pixels' moments alone
    assert shown.rule == "fit"
    assert shown.gain == pytest.approx(gain) and shown.offset == pytest.approx(original[mask].mean()
                                                                              - gain * estimate[mask].mean())
    assert np.all(shown.image[~mask] == 0.0)
    # an estimate inverted on the covered pixels is not fitted, whatever lies outside them
    inverted = display_stretch(np.where(mask, 1 - original, original), mask=mask, reference=original)
    assert inverted.rule == "percentile" and "not positive" in inverted.description


def test_a_one_pixel_image_and_an_integer_mask():
    assert display_stretch(np.array([[0.3]])).image.tolist() == [[0.5]]           # constant: mid grey
    image = _ramp()
    mask = np.zeros(image.shape, int)
    mask[4:12, 4:12] = 1                                                   # 0/1 integers mean the same as booleans
    np.testing.assert_array_equal(display_stretch(image, mask=mask).image, display_stretch(image, mask=mask > 0).image)
