"""Attackers of defended features: the one who knows the defence, the one who ignores it, and what leaks."""

import numpy as np
import pytest

from lbdviewer.defences.attacks import attack, known_flip_rate, naive_view, refine_positions
from lbdviewer.defences.leakage import described_region, measure_leakage
from lbdviewer.defences.transforms import jitter_coordinates, keep_bits, parse_defences, quantize_coordinates
from lbdviewer.features.extract import extract_features
from lbdviewer.features.invert import invert_features
from lbdviewer.features.keypoints import FeatureSet, Keypoints
from lbdviewer.io.samples import sample_image

#: Small crops of the shipped samples (row, column, side): a photo and book titles.
CROPS = {"camera": (80, 180, 128), "book-titles": (20, 80, 128)}
KEYPOINTS, ITERATIONS = 100, 40
#: Weakest and strongest strength of each defence the issue names (and eps = 2).
SPECS = ("rr:eps=8,2,0.5", "keep-bits:0.75,0.25", "keep-keypoints:0.5,0.25", "keep-keypoints-aware:0.5,0.25",
         "quantize:2,8", "jitter:1,4")
#: Defences that leave nothing to know: the naive attacker is the aware one.
NOTHING_TO_KNOW = ("keep-keypoints", "keep-keypoints-aware")


@pytest.fixture(scope="module")
def crops():
    out = {}
    for name, (row, col, side) in CROPS.items():
        image = sample_image(name)[row:row + side, col:col + side]
        out[name] = (image, extract_features(image, "orb", n_keypoints=KEYPOINTS))
    return out


def _leak(image, features, released, attacker):
    if not len(released.keypoints):
        return 0.0
    result, _ = attack(released, attacker, iterations=ITERATIONS)
    return measure_leakage(image, described_region(features), result.image, result.covered, ocr=False)["correlation"]


@pytest.fixture(scope="module")
def leakage(crops):
    """``{(defence label, attacker): [correlation per crop]}`` and the baseline."""
    table = {}
    for image, features in crops.values():
        table.setdefault(("none", "naive"), []).append(_leak(image, features, features, "naive"))
        for spec in SPECS:
            for defence in parse_defences(spec):
                released = defence.apply(features, rng=0, image=image)
                for attacker in ("aware",) if defence.kind in NOTHING_TO_KNOW else ("aware", "naive"):
                    table.setdefault((defence.label, attacker), []).append(_leak(image, features, released, attacker))
                if defence.kind in NOTHING_TO_KNOW:
                    table[(defence.label, "naive")] = table[(defence.label, "aware")]
    return table


def test_aware_attacker_beats_the_naive_one_under_randomized_response_at_eps_2(leakage):
    aware, naive = leakage[("rr eps=2", "aware")], leakage[("rr eps=2", "naive")]
    assert all(a >= n for a, n in zip(aware, naive)), (aware, naive)
    assert min(aware) > 0.6


def test_leakage_falls_as_each_defence_strengthens(leakage):
    def leak(label):  # the higher attacker's, averaged over the crops
        return float(np.mean(np.maximum(leakage[(label, "aware")], leakage[(label, "naive")])))

    baseline = float(np.mean(leakage[("none", "naive")]))
    for spec in SPECS:
        labels = [d.label for d in parse_defences(spec)]
        weak, strong = labels[0], labels[-1]
        assert leak(strong) < leak(weak) - 0.01, (spec, leak(weak), leak(strong))
        assert leak(weak) <= baseline + 0.03, (spec, baseline, leak(weak))


def test_the_aware_attacker_uses_what_the_record_says(leakage, crops):
    for label in ("keep-bits fraction=0.25", "jitter sigma=4", "quantize step=8", "rr eps=0.5"):
        aware, naive = np.mean(leakage[(label, "aware")]), np.mean(leakage[(label, "naive")])
        assert aware > naive, (label, aware, naive)
    image, features = crops["camera"]
    released = parse_defences("keep-keypoints:0.5")[0].apply(features, rng=0)
    (aware, notes), (naive, _) = (attack(released, attacker, iterations=5) for attacker in ("aware", "naive"))
    assert np.array_equal(aware.image, naive.image) and notes == {"flip_rate": 0.0, "bit_positions": None,
                                                                   "refined": None}


def test_naive_view_forgets_the_record_and_reads_released_bits_as_the_first():
    features = FeatureSet("orb", {}, (64, 64), Keypoints([32.0], [32.0]), np.zeros((1, 32), np.uint8), 256, "little")
    released = keep_bits(features, 0.25, rng=0)
    naive = naive_view(released)
    assert "defences" not in naive.params and naive.bit_positions().tolist() == list(range(64))
    assert known_flip_rate(naive) == 0.0


def test_released_bits_are_inverted_as_the_tests_they_are(crops):
    image, features = crops["camera"]
    released = keep_bits(features, 0.5, rng=1)
    known = invert_features(released, iterations=ITERATIONS)
    assert known.params["bits_released"] == 128 and known.solver_bit_consistency > 0.9
    with pytest.raises(ValueError, match="bit_positions must lie in 0..255"):
        bad = dict(released.params, bit_positions=[300] + released.params["bit_positions"][1:])
        invert_features(FeatureSet(**{**released.__dict__, "params": bad}), iterations=2)


@pytest.mark.parametrize("move", ["jitter", "quantize"])
def test_refined_positions_move_back_toward_the_true_ones(crops, move):
    image, features = crops["camera"]
    moved = jitter_coordinates(features, 3.0, rng=2) if move == "jitter" else quantize_coordinates(features, 6)
    refined = refine_positions(moved, image)  # the oracle estimate: the image itself

    def error(fs):
        return float(np.mean(np.hypot(fs.keypoints.x - features.keypoints.x, fs.keypoints.y - features.keypoints.y)))

    assert error(refined) < 0.5 * error(moved)
    assert np.array_equal(refined.descriptors, moved.descriptors)
    assert refine_positions(features, image) is features  # nothing recorded: nothing moved


def test_described_region_is_each_keypoint_square():
    kp = Keypoints([10.0, 30.0], [10.0, 12.0], size=[7.0, 3.0])
    features = FeatureSet("orb", {}, (40, 40), kp, np.zeros((2, 32), np.uint8), 256, "little")
    expected = np.zeros((40, 40), bool)
    rows, cols = np.mgrid[0:40, 0:40]
    for x, y, s in ((10, 10, 7), (30, 12, 3)):
        expected |= (np.abs(cols - x) <= s / 2) & (np.abs(rows - y) <= s / 2)
    assert np.array_equal(described_region(features), expected)


def test_leakage_of_nothing_released_is_zero():
    scores = measure_leakage(np.random.default_rng(0).random((8, 8)), np.ones((8, 8), bool), lines=["A LINE"],
                             ocr=False)
    assert scores == {"correlation": 0.0, "rank_correlation": 0.0, "coverage": 0.0, "ocr_lines_read": 0,
                      "ocr_lines_total": 1}


def test_the_aware_attacker_of_akaze_under_randomized_response_says_it_cannot_weigh_the_flips(crops):
    """The inverter refuses a flip rate for AKAZE files; the attacker inverts the bits as they are and says so."""
    from lbdviewer.defences.transforms import randomized_response

    image, _ = crops["camera"]
    released = randomized_response(extract_features(image, "akaze", n_keypoints=40), 2.0, rng=0)
    with pytest.raises(ValueError, match="flip_rate is not supported for AKAZE"):
        invert_features(released, flip_rate=known_flip_rate(released))
    result, notes = attack(released, "aware", iterations=5)
    assert notes["flip_rate"] == 0.0 and notes["flip_rate_unused"] == pytest.approx(known_flip_rate(released))
    assert result.image.shape == image.shape
