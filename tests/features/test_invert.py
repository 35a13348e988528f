import numpy as np
import pytest
from skimage import data

from lbdviewer.features.extract import extract_features
from lbdviewer.features.keypoints import FeatureSet, Keypoints
from lbdviewer.features.invert import (
    invert_features,
    iter_invert_features,
    keypoint_patterns,
    level0_pattern,
    trimmed)
from lbdviewer.features.progress import InversionProgress
from lbdviewer.libraries.base import KeypointPattern
from lbdviewer.libraries.registry import get_model
from lbdviewer.evaluation.metrics import correlation
from lbdviewer.patterns.base import Pattern
from lbdviewer.reconstruction.image import describe_sites
from lbdviewer.evaluation.records import solver_record


@pytest.fixture(scope="module")
def camera():
    return data.camera()[::2, ::2] / 255.0


@pytest.fixture(scope="module")
def orb_features(camera):
    return extract_features(camera, "orb", n_keypoints=25)


@pytest.fixture(scope="module")
def few_features(orb_features):
    keep = np.arange(8)
    return FeatureSet("orb", orb_features.params, orb_features.image_shape, orb_features.keypoints.take(keep),
                      orb_features.descriptors[keep], 256, "little")


def _bits_at(image, keypoint_pattern):
    pattern, (row, col) = level0_pattern(keypoint_pattern)
    return describe_sites(image, [[row, col]], pattern)[0]


def test_level0_patterns_reproduce_orb_bits_on_upper_pyramid_levels(camera):
    features = extract_features(camera, "orb", n_keypoints=60)
    agreement = []
    for k, kp in enumerate(get_model("orb").keypoint_patterns(features.keypoints)):
        pattern, (row, col) = level0_pattern(kp)
        inside = row >= 0 and col >= 0 and row + pattern.patch_size <= 256 and col + pattern.patch_size <= 256
        if kp.level > 0 and inside:
            assert pattern.patch_size > kp.pattern.patch_size
            agreement.append(np.mean(_bits_at(camera, kp) == features.bits()[k]))
    assert len(agreement) >= 5 and np.mean(agreement) > 0.9


def test_trimming_keeps_every_measurement_and_shrinks_freak_patches(camera):
    keypoints = Keypoints([80.0, 150.0, 128.0], [90.0, 120.0, 128.0], [8.0, 12.0, 20.0], [0.0, 45.0, 200.0])
    model = get_model("opencv-freak")
    for kp in model.keypoint_patterns(keypoints):
        cut = trimmed(kp)
        assert cut.pattern.patch_size < kp.pattern.patch_size
        np.testing.assert_array_equal(_bits_at(camera, cut), _bits_at(camera, kp))


def test_trimming_keeps_shared_patterns_shared(camera):
    features = extract_features(camera, "skimage-brief", n_keypoints=20)
    patterns = keypoint_patterns(features)
    assert len({id(kp.pattern) for kp in patterns}) == 1
    model_patterns = get_model("skimage-brief").keypoint_patterns(features.keypoints)
    for kp, original in zip(patterns, model_patterns):
        np.testing.assert_array_equal(_bits_at(camera, kp), _bits_at(camera, original))


def test_a_pattern_already_tight_is_returned_as_is():
    pattern = Pattern("toy", 3, [[1.0, 1.0]], [1.0], [1.0], [[0, 0]])
    kp = KeypointPattern(pattern, 0, (4, 5), 1.0)
    assert trimmed(kp) is kp


@pytest.mark.parametrize("mode", ["joint", "patches"])
def test_both_modes_recover_the_photo_where_keypoints_are(camera, few_features, mode):
    result = invert_features(few_features, mode=mode, iterations=30)
    assert result.image.shape == camera.shape and result.mode == mode
    assert 0.05 < result.covered.mean() < 1.0
    neutral = np.median(result.image[result.covered])  # uncovered pixels read as background, not as ink
    assert np.all(result.image[~result.covered] == neutral) and result.params["uncovered"]["value"] == neutral
    assert 0.0 <= result.image.min() and result.image.max() <= 1.0
    assert correlation(camera, result.image, mask=result.covered) > 0.3
    assert result.params["descriptor"] == "orb" and result.params["keypoints"] == 8
    settings = result.params["solver_settings"]
    if mode == "patches":
        assert settings is None  # BIHT: its sparsity is in the parameters
    else:  # ORB's pyramid: plain margins, no gate (the pyramid operator has no oriented kernel)
        assert settings["solver"] == "JointSignConsistency" and settings["iterations"] == 30
        assert not settings["oriented"] and settings["gated_after"] is None and not settings["strict_ties"]


def test_progress_counts_up_and_ends_with_the_result(few_features):
    reports = list(iter_invert_features(few_features, iterations=10))
    assert all(isinstance(r, InversionProgress) for r in reports)
    assert all(r.result is None for r in reports[:-1]) and reports[-1].result is not None
    fractions = [r.done / r.total for r in reports]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0
    assert reports[-1].result.mode == "joint"  # the default
    assert any(r.image is not None and r.image.shape == (256, 256) for r in reports[:-1])


def test_closing_the_generator_cancels_the_joint_solve(few_features):
    progress = iter_invert_features(few_features, iterations=400)
    first = next(progress)
    assert first.done < first.total
    progress.close()  # must not hang on the solver thread


def test_patchwise_progress_is_per_keypoint(few_features):
    reports = list(iter_invert_features(few_features, mode="patches", iterations=5))
    assert [r.done for r in reports[:-1] if r.done] == list(range(1, 9))  # after the set-up's reports (done 0)


@pytest.mark.parametrize("descriptor, mode", [("orb", "joint"),            # the pyramid operator
                                              ("orb", "patches"),          # BIHT per keypoint
                                              ("brisk", "joint")])  # level-0 patterns, whole-image solver
def test_the_result_and_its_record_say_the_iterations_that_ran(camera, orb_features, descriptor, mode):
    features = orb_features if descriptor == "orb" else extract_features(camera, descriptor, n_keypoints=30)
    reports = list(iter_invert_features(features, mode=mode, iterations=12))
    result = reports[-1].result
    ran = [r.iterations_run for r in reports]
    assert None not in ran and ran == sorted(ran) and ran[-1] == result.iterations_run
    assert 1 <= result.iterations_run <= 12
    record = solver_record(result=result)
    assert (record["iterations_requested"], record["iterations_run"]) == (12, result.iterations_run)
    assert record["stopped_early"] == (result.iterations_run < 12)


def test_no_keypoints_gives_an_empty_result():
    features = FeatureSet("orb", {}, (40, 50), Keypoints([], []), np.zeros((0, 32), np.uint8), 256, "little")
    for mode in ("joint", "patches"):
        result = invert_features(features, mode=mode, iterations=3)
        assert result.image.shape == (40, 50) and not result.covered.any() and not result.image.any()


@pytest.mark.parametrize("options, message", [({"mode": "wavelet"}, "mode must be one of"),
                                              ({"iterations": 0}, "iterations must be a positive"),
                                              ({"sparsity": 1.5}, "sparsity must be in")])
def test_bad_options_are_value_errors(few_features, options, message):
    with pytest.raises(ValueError, match=message):
        invert_features(few_features, **options)


def test_a_joint_inversion_reports_its_set_up_and_every_iteration(few_features):
    """Each report is a point where the app can stop: no stretch of the set-up or the solve goes unreported."""
    reports = list(iter_invert_features(few_features, iterations=300))
    ran = reports[-1].result.iterations_run
    done = [r.done for r in reports[:-1]]
    setup = done[:done.index(1)]
    assert setup and set(setup) == {0} and done[len(setup):] == list(range(1, ran + 1))
    estimates = [r.done for r in reports[:-1] if r.image is not None]  # an estimate every 1/100 of the budget
    assert ran > 6 and estimates == [d for d in range(1, ran + 1) if d % 3 == 0 or d == ran]


@pytest.mark.parametrize("descriptor", ["orb", "opencv-freak", "brisk", "skimage-brief"])
def test_patterns_made_in_chunks_are_those_made_at_once(descriptor):
    """FREAK and BRISK size their patches by the largest keypoint given; skimage's BRIEF shares one pattern."""
    from lbdviewer.features.invert import iter_keypoint_patterns

    features = extract_features(data.astronaut()[..., 1] / 255.0, descriptor, n_keypoints=150)
    at_once = list(iter_keypoint_patterns(features, chunk=len(features.keypoints)))[0]
    chunked = [kp for chunk in iter_keypoint_patterns(features, chunk=7) for kp in chunk]
    assert len(chunked) == len(at_once) == len(features.keypoints) > 14
    for a, b in zip(at_once, chunked):
        assert (a.level, a.origin, a.scale, a.pattern.patch_size) == (b.level, b.origin, b.scale, b.pattern.patch_size)
        for name in ("centers", "sigmas", "radii", "pairs", "thresholds"):
            np.testing.assert_array_equal(getattr(a.pattern, name), getattr(b.pattern, name))
    assert len({id(kp.pattern) for kp in chunked}) == len({id(kp.pattern) for kp in at_once})  # BRIEF: one
