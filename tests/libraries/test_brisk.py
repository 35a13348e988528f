"""BRISK (OpenCV contrib) against our model, calibrated once per test session."""

import json

import numpy as np
import pytest
from skimage import data, io

from lbdviewer.cli.main import main
from lbdviewer.features.keypoints import Keypoints
from lbdviewer.features.files import load_features
from lbdviewer.libraries.base import keypoint_patches
from lbdviewer.libraries.registry import get_model
from lbdviewer.operators.descriptor import field_bounds
from lbdviewer.libraries import brisk
from lbdviewer.libraries.brisk import (N_POINTS, long_pairs, rotation_index, short_pair_candidates,
                                             smoothed_intensities)


@pytest.fixture(scope="module")
def model():
    return get_model("brisk")


@pytest.fixture(scope="module")
def image():
    return data.moon()[100:356, 100:356] / 255.0


def _integral(image):
    return np.pad(image.astype(np.int64).cumsum(0).cumsum(1), ((1, 0), (1, 0)))


def test_brisk_model_is_bit_exact_with_its_own_orientation_and_border(model, image):
    gen = np.random.default_rng(0)
    n = 60
    x = np.concatenate([gen.uniform(30, 226, n), [5.0, 250.0, 128.0]])
    y = np.concatenate([gen.uniform(30, 226, n), [128.0, 128.0, 2.0]])
    sizes = np.concatenate([gen.uniform(5, 45, n), [12.0] * 3])
    keypoints = Keypoints(x, y, sizes, np.full(n + 3, 33.0))  # BRISK overwrites the angle
    result = model.run_library(image, keypoints)
    assert np.array_equal(result.index, np.nonzero(model.keeps(keypoints, image.shape))[0])
    assert 30 < len(result.keypoints) < n and not np.isin([n, n + 1, n + 2], result.index).any()
    angle = model.orientation(image, result.keypoints)
    np.testing.assert_array_equal(np.where(angle < 0, angle + np.float32(360), angle),
                                  result.keypoints.angle.astype(np.float32))
    assert np.array_equal(model.model_bits(image, result.keypoints), result.bits)


def test_calibrated_pairs_are_the_short_pairs_each_once(model):
    pairs = model.pairs
    assert pairs.shape == (512, 2) and np.all(pairs[:, 0] > pairs[:, 1])  # the library tests I_i > I_j, i > j
    found = np.zeros((N_POINTS, N_POINTS), dtype=int)
    np.add.at(found, (pairs[:, 0], pairs[:, 1]), 1)
    assert np.array_equal(found, short_pair_candidates().astype(int))
    assert long_pairs().shape == (870, 4) and not short_pair_candidates()[long_pairs()[:, 0], long_pairs()[:, 1]].any()


def test_smoothed_intensity_is_1024_times_the_square_mean():
    gen = np.random.default_rng(1)
    img = gen.integers(0, 256, (40, 40)).astype(np.uint8)
    xf, yf = gen.uniform(12, 28, 200).astype(np.float32), gen.uniform(12, 28, 200).astype(np.float32)
    sigma = gen.uniform(0.5, 6.0, 200).astype(np.float32)
    got = smoothed_intensities(img, _integral(img), xf, yf, sigma)
    centres = np.arange(40)
    for k in range(200):  # slow reference: exact overlap of each pixel [c - 1/2, c + 1/2] with the square
        wx = np.clip(np.minimum(centres + 0.5, xf[k] + sigma[k]) - np.maximum(centres - 0.5, xf[k] - sigma[k]), 0, 1)
        wy = np.clip(np.minimum(centres + 0.5, yf[k] + sigma[k]) - np.maximum(centres - 0.5, yf[k] - sigma[k]), 0, 1)
        mean = (wy[:, None] * wx[None, :] * img).sum() / (wy.sum() * wx.sum())
        assert abs(got[k] - 1024 * mean) < 2e-3 * 1024 * 255
    flat = np.full((20, 20), 77, np.uint8)
    narrow = smoothed_intensities(flat, _integral(flat), np.float32([9.3, 9.7]), np.float32([8.2, 9.9]),
                                  np.float32([0.3, 0.45]))  # bilinear branch
    assert narrow.tolist() == [77 * 1024, 77 * 1024]


def test_rotation_index_reads_back_the_library_quantisation_of_negative_angles():
    # the library quantises -1.6875 deg (-4.8 steps) as int(-4.3) = -4 -> 1020, then returns 358.3125
    assert rotation_index(np.array([358.3125, 1.6875, 180.0, -1.0])).tolist() == [1020, 5, 512, 0]


def test_brisk_keypoint_patterns_are_the_squares_the_operator_reads(model, image):
    keypoints = Keypoints([100.0, 150.5, 128.0], [120.0, 90.0, 128.0], [9.0, 20.0, 30.0])
    result = model.run_library(image, keypoints)
    patterns = model.keypoint_patterns(result.keypoints)
    pattern = patterns[0].pattern
    assert pattern.n_fields == N_POINTS and pattern.m == 512 and pattern.kernel == "box"
    assert pattern.patch_size % 2 == 1 and field_bounds(pattern).min() >= 0  # every square inside the patch
    assert keypoint_patches(model.source_images(image), patterns).shape == (3, pattern.patch_size, pattern.patch_size)
    assert np.mean(model.linear_bits(image, result.keypoints) == result.bits) > 0.93


def test_brisk_feature_file_through_the_cli(tmp_path, capsys):
    path = tmp_path / "astronaut.png"
    io.imsave(path, (data.astronaut()[96:288, 160:352].mean(axis=2)).astype(np.uint8))
    features = tmp_path / "brisk.npz"
    assert main(["extract", str(path), "-o", str(features), "--descriptor", "brisk", "--keypoints", "60"]) == 0
    loaded = load_features(features)
    assert loaded.descriptor == "brisk" and loaded.n_bits == 512 and 20 < len(loaded.keypoints) <= 60
    capsys.readouterr()
    assert main(["verify-model", str(path), "--descriptor", "brisk", "--keypoints", "60", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["descriptors"][0]["exact"] == 1.0 and report["brisk_logf"] == brisk.logf_source() is not None
    out, metrics = tmp_path / "inverted.png", tmp_path / "metrics.json"
    assert main(["invert", str(features), "-o", str(out), "--iterations", "30", "--reference", str(path),
                 "--metrics", str(metrics)]) == 0
    report = json.loads(metrics.read_text())
    assert report["parameters"]["descriptor"] == "brisk" and report["correlation"] > 0.5


def test_bad_brisk_parameters_name_the_value():
    with pytest.raises(ValueError, match="pattern_scale must be a number from 0.25 to 8, got 0"):
        get_model("brisk", pattern_scale=0)
    with pytest.raises(ValueError, match="octaves must be a non-negative integer, got 1.5"):
        get_model("brisk", octaves=1.5)


def test_logf_without_a_c_library_warns_and_verify_model_says_so(tmp_path, monkeypatch, capsys):
    values = np.array([0.5, 1.0, 30.0, 2.5e-3], dtype=np.float32)
    assert brisk.logf(values).dtype == np.float32
    np.testing.assert_allclose(brisk.logf(values), np.log(values.astype(np.float64)), rtol=1e-6)
    monkeypatch.setattr(brisk, "_libm", lambda: None)
    assert brisk.logf_source() is None
    with pytest.warns(brisk.LogfFallbackWarning, match="numpy's log"):
        np.testing.assert_array_equal(brisk.logf(values), np.log(values))
    path = tmp_path / "moon.png"
    io.imsave(path, data.moon()[100:228, 100:228])
    capsys.readouterr()
    with pytest.warns(brisk.LogfFallbackWarning):
        assert main(["verify-model", str(path), "--descriptor", "brisk", "--keypoints", "20", "--quiet"]) == 0
    assert "brisk logf: numpy's log (no C library logf found)" in capsys.readouterr().out
