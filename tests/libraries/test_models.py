import numpy as np
import pytest
from skimage import data

from lbdviewer.features.keypoints import Keypoints
from lbdviewer.libraries.base import agreement, keypoint_patches
from lbdviewer.libraries.registry import get_model
from lbdviewer.operators.descriptor import DescriptorOperator
from lbdviewer.bits import sign_with_ties


@pytest.fixture(scope="module")
def image():
    return data.moon()[100:356, 100:356] / 255.0


def _keypoints(n, rng, size=256, margin=48, octave_max=1):
    gen = np.random.default_rng(rng)
    return Keypoints(gen.uniform(margin, size - margin, n), gen.uniform(margin, size - margin, n),
                     gen.uniform(12, 24, n), gen.uniform(0, 360, n), gen.integers(0, octave_max + 1, n))


def test_orb_model_is_bit_exact_at_several_levels_and_angles(image):
    model = get_model("orb")
    result = model.run_library(image, _keypoints(40, 0, octave_max=2))
    assert len(result.keypoints) > 30 and set(result.keypoints.octave.tolist()) == {0, 1, 2}
    assert np.array_equal(model.model_bits(image, result.keypoints), result.bits)


def test_orb_keypoint_patterns_reproduce_bits_with_the_operator(image):
    model = get_model("orb")
    result = model.run_library(image, _keypoints(6, 1))
    exact = model.linear_bits(image, result.keypoints, fold_smoothing=False)
    assert np.array_equal(exact, result.bits)
    folded = model.linear_bits(image, result.keypoints)
    assert np.mean(folded == result.bits) > 0.9


def test_orb_pattern_matches_manual_lookup(image):
    model = get_model("orb")
    kp = Keypoints([128.0], [128.0], [31.0], [0.0])
    (kpat,) = model.keypoint_patterns(kp, fold_smoothing=False)
    patch = keypoint_patches(model.sampled_images(image), [kpat])[0]
    center = (kpat.pattern.patch_size - 1) // 2
    assert patch[center, center] == model.sampled_images(image)[0][128, 128]
    bits = sign_with_ties(DescriptorOperator(kpat.pattern, dtype=np.float64).describe(patch, binary=False),
                          atol=1e-12)
    assert np.array_equal(bits, model.model_bits(image, kp)[0])


def test_opencv_brief_model_is_bit_exact(image):
    model = get_model("opencv-brief", n_bytes=16)
    result = model.run_library(image, _keypoints(30, 2))
    assert result.bits.shape == (30, 128)
    assert np.array_equal(model.model_bits(image, result.keypoints), result.bits)
    assert np.array_equal(model.linear_bits(image, result.keypoints.take(slice(0, 5))),
                          result.bits[:5])


def test_opencv_freak_model_is_bit_exact_with_orientation(image):
    model = get_model("opencv-freak")
    result = model.run_library(image, _keypoints(30, 3))
    assert len(result.keypoints) > 20 and np.any(result.keypoints.angle != 0)
    assert np.array_equal(model.model_bits(image, result.keypoints), result.bits)
    assert np.mean(model.linear_bits(image, result.keypoints.take(slice(0, 5))) == result.bits[:5]) > 0.9  # FREAK rounds means: near-ties on the flat moon


def test_skimage_brief_model_is_bit_exact(image):
    model = get_model("skimage-brief", descriptor_size=64, rng=5)
    result = model.run_library(image, _keypoints(30, 4))
    assert result.bits.shape == (30, 64)
    assert np.array_equal(model.model_bits(image, result.keypoints), result.bits)
    assert np.array_equal(model.linear_bits(image, result.keypoints, fold_smoothing=False), result.bits)


def test_agreement_report_on_detected_keypoints(image):
    report = agreement(get_model("skimage-brief", descriptor_size=64, rng=5), image, n_keypoints=20)
    assert report["keypoints"] > 0 and report["exact"] == 1.0


def test_bad_parameters_name_the_value():
    with pytest.raises(ValueError, match="descriptor must be one of"):
        get_model("sift")
    with pytest.raises(ValueError, match="n_bytes must be one of"):
        get_model("opencv-brief", n_bytes=8)
    with pytest.raises(ValueError, match="rng must be an int"):
        get_model("skimage-brief", rng=np.random.default_rng(0))
