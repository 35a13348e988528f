"""BEBLID and TEBLID (OpenCV contrib) against our models, calibrated once (cached by OpenCV version)."""

import numpy as np
import pytest
from skimage import data

from lbdviewer.features.keypoints import Keypoints
from lbdviewer.libraries.registry import get_model
from lbdviewer.operators.descriptor import DescriptorOperator


@pytest.fixture(scope="module")
def model():
    return get_model("beblid", n_bits=256)


@pytest.fixture(scope="module")
def image():
    return data.moon()[100:356, 100:356] / 255.0


def test_beblid_model_is_bit_exact_inside_at_the_border_and_turned(model, image):
    gen = np.random.default_rng(0)
    n = 40
    x = np.concatenate([gen.uniform(60, 196, n), [10.0, 250.0, 128.0]])
    y = np.concatenate([gen.uniform(60, 196, n), [128.0, 20.0, 3.0]])
    keypoints = Keypoints(x, y, np.concatenate([gen.uniform(20, 50, n), [31.0] * 3]),
                          np.concatenate([gen.uniform(0, 360, n - 5), [-1.0] * 5, [0.0, 90.0, -1.0]]))
    result = model.run_library(image, keypoints)
    assert len(result.keypoints) == n + 3  # BEBLID drops no keypoint, border ones included
    assert model.near_border(result.keypoints, image.shape)[-3:].all()
    assert np.mean(model.model_bits(image, result.keypoints) == result.bits) > 0.999


def test_teblid_model_is_bit_exact_with_its_large_real_thresholds(image):
    model = get_model("teblid", n_bits=256)
    thresholds = model.table[1]
    assert np.abs(thresholds).max() > 90  # the bits whose boxes noise calibration alone misses
    gen = np.random.default_rng(1)
    n = 60
    keypoints = Keypoints(gen.uniform(60, 196, n), gen.uniform(60, 196, n), gen.uniform(20, 80, n),
                          np.concatenate([gen.uniform(0, 360, n - 10), [-1.0] * 10]))
    result = model.run_library(image, keypoints)
    assert np.mean(model.model_bits(image, result.keypoints) == result.bits) > 0.999


def test_beblid_patterns_are_thresholded_tests_of_the_operator(model, image):
    keypoints = Keypoints([100.0, 150.0], [120.0, 90.0], [31.0, 40.0], [30.0, -1.0])
    result = model.run_library(image, keypoints)
    patterns = model.keypoint_patterns(keypoints)
    assert patterns[0].pattern.thresholded and patterns[0].pattern.m == 256
    # sign(L p - t) with the operator reproduces the library: means are exact here, not rounded
    assert np.mean(model.linear_bits(image, keypoints) == result.bits) > 0.995
    # the thresholds matter: sign(L p) alone disagrees on many bits
    (kp,) = patterns[:1]
    patch = image[kp.origin[0]:kp.origin[0] + kp.pattern.patch_size, kp.origin[1]:kp.origin[1] + kp.pattern.patch_size]
    values = DescriptorOperator(kp.pattern, dtype=np.float64).describe(patch, binary=False)
    assert np.mean(np.where(values >= 0, 1, -1) == result.bits[0]) < 0.9


def test_pattern_thresholds_shift_the_bits_and_are_validated():
    from lbdviewer.patterns.base import Pattern

    plain = Pattern("toy", 8, [[2, 2], [5, 5]], [1, 1], [1, 1], [[0, 1], [1, 0]], kernel="box")
    shifted = Pattern("toy", 8, [[2, 2], [5, 5]], [1, 1], [1, 1], [[0, 1], [1, 0]], kernel="box",
                      thresholds=[0.3, -0.3])
    patch = np.zeros((8, 8))
    patch[:4, :4] = 0.2  # field 0 is 0.2 brighter: L p = (0.2, -0.2)
    assert DescriptorOperator(plain, dtype=np.float64).describe(patch).tolist() == [1, -1]
    assert DescriptorOperator(shifted, dtype=np.float64).describe(patch).tolist() == [-1, 1]
    assert not plain.thresholded and shifted.thresholded
    with pytest.raises(ValueError, match="thresholds must be 2"):
        Pattern("toy", 8, [[2, 2], [5, 5]], [1, 1], [1, 1], [[0, 1], [1, 0]], thresholds=[0.1])
