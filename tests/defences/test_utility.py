"""Utility measured as HPatches scores it: synthetic pairs, OpenCV's matcher, RANSAC homographies."""

import cv2
import numpy as np
import pytest

from lbdviewer.defences.pairs import ILLUMINATION, synthetic_pairs
from lbdviewer.defences.transforms import parse_defences
from lbdviewer.defences.utility import measure_utility, score_pair
from lbdviewer.features.keypoints import FeatureSet, Keypoints
from lbdviewer.io.samples import sample_image, sample_images


def test_pairs_are_seeded_and_their_homography_maps_what_they_show():
    image = sample_image("camera")
    first, again = synthetic_pairs(image, rng=3), synthetic_pairs(image, rng=3)
    assert [p.kind for p in first] == ["viewpoint"] * 4 + ["illumination"] * 4
    for a, b in zip(first, again):
        assert np.array_equal(a.second, b.second) and np.array_equal(a.homography, b.homography)
    for pair in first[:4]:  # warping the first image by H gives the second (noise aside) where it is valid
        warped = cv2.warpPerspective(image, pair.homography, image.shape[::-1], flags=cv2.INTER_LINEAR)
        assert np.abs(warped - pair.second)[pair.valid].mean() < 0.02
        rows, cols = np.nonzero(pair.valid)
        back = cv2.perspectiveTransform(np.c_[cols, rows][None].astype(np.float64), np.linalg.inv(pair.homography))
        assert back.min() >= -0.5 and back[0, :, 0].max() <= 511.5 and back[0, :, 1].max() <= 511.5
    for pair in first[4:]:
        assert np.array_equal(pair.homography, np.eye(3))
        assert ILLUMINATION["gamma"][0] <= pair.params["gamma"] <= ILLUMINATION["gamma"][1]
        assert np.corrcoef(image.ravel(), pair.second.ravel())[0, 1] > 0.8


def _set(x, y, descriptors):
    return FeatureSet("orb", {}, (100, 100), Keypoints(x, y), descriptors, 256, "little")


def test_scores_count_matches_within_the_thresholds_of_the_true_homography():
    rng = np.random.default_rng(0)
    x, y = rng.uniform(10, 90, 40), rng.uniform(10, 90, 40)
    desc = rng.integers(0, 256, (40, 32), dtype=np.uint8)
    shift = np.array([[1.0, 0.0, 2.0], [0.0, 1.0, -1.0], [0.0, 0.0, 1.0]])
    errors = np.repeat([0.5, 2.0, 4.0, 8.0], 10)  # each match lands this far from where H puts it
    angle = rng.uniform(0, 2 * np.pi, 40)
    second = _set(x + 2 + errors * np.cos(angle), y - 1 + errors * np.sin(angle), desc)
    scores = score_pair(_set(x, y, desc), second, shift)
    assert scores["matches"] == 40
    assert (scores["matching_accuracy_1px"], scores["matching_accuracy_3px"], scores["matching_accuracy_5px"]) == (
        0.25, 0.5, 0.75)
    exact = score_pair(_set(x, y, desc), _set(x + 2, y - 1, desc), shift)
    assert exact["homography_correct"] and exact["corner_error"] < 1e-6
    wrong = score_pair(_set(x, y, desc), _set(x + 5, y - 4, desc), np.eye(3))  # 6.4 px from where the truth says
    assert wrong["matches"] == 40 and wrong["matching_accuracy_5px"] == 0.0
    assert not wrong["homography_correct"] and wrong["corner_error"] == pytest.approx(np.hypot(5, 4), abs=1e-6)
    none = score_pair(_set(x, y, desc), _set(x[:0], y[:0], desc[:0]), shift)
    assert none["matches"] == 0 and none["matching_accuracy_3px"] == 0.0 and not none["homography_correct"]


@pytest.mark.parametrize("descriptor", ["orb", "beblid"])
def test_without_defence_matching_accuracy_at_3px_is_at_least_0_8_on_the_samples(descriptor):
    per_sample = {}
    for name in sample_images():
        image = sample_image(name)
        per_sample[name] = measure_utility(image, descriptor, synthetic_pairs(image, rng=0))
    mean = np.mean([s["matching_accuracy_3px"] for s in per_sample.values()])  # every sample has 8 pairs
    assert mean >= 0.8, per_sample
    assert min(per_sample[name]["homography_accuracy"] for name in ("camera", "astronaut")) >= 0.75


def test_matching_falls_as_each_defence_strengthens():
    images = [sample_image("camera"), sample_image("astronaut")]
    pairs = [synthetic_pairs(image, viewpoints=2, illuminations=2, rng=0) for image in images]

    def accuracy(defence):
        return np.mean([measure_utility(image, "orb", p, defence=defence)["matching_accuracy_3px"]
                        for image, p in zip(images, pairs)])

    baseline = accuracy(None)
    for spec in ("rr:eps=8,4,2,1,0.5", "keep-bits:0.75,0.5,0.25", "keep-keypoints:0.5,0.25",
                 "keep-keypoints-aware:0.5,0.25", "quantize:2,4,8", "jitter:1,2,4"):
        curve = [accuracy(defence) for defence in parse_defences(spec)]  # weakest first
        assert curve[0] <= baseline + 0.01, (spec, baseline, curve)
        assert all(b <= a + 0.01 for a, b in zip(curve, curve[1:])), (spec, curve)
        assert curve[-1] < curve[0] - 0.02, (spec, curve)


def test_aware_keypoint_selection_matches_better_than_a_random_one():
    image = sample_image("camera")
    pairs = synthetic_pairs(image, rng=0)
    aware, random = (measure_utility(image, "orb", pairs, defence=d)
                     for d in parse_defences("keep-keypoints-aware:0.25") + parse_defences("keep-keypoints:0.25"))
    assert aware["matching_accuracy_3px"] > random["matching_accuracy_3px"]
    assert aware["correct_matches"] > random["correct_matches"]
