"""Defences as FeatureSet -> FeatureSet transforms: what each releases, at the rate its parameter implies."""

import math

import numpy as np
import pytest

from lbdviewer.defences.text_regions import text_mask
from lbdviewer.defences.transforms import (Defence, distinctiveness, flip_probability, jitter_coordinates, keep_bits,
                                           keep_keypoints, keep_matchable_keypoints, parse_defences,
                                           quantize_coordinates, randomized_response)
from lbdviewer.features.extract import extract_features
from lbdviewer.features.keypoints import FeatureSet, Keypoints
from lbdviewer.io.samples import sample_image


def _features(n=400, n_bits=256, seed=0, shape=(200, 300)):
    rng = np.random.default_rng(seed)
    kp = Keypoints(rng.uniform(0, shape[1] - 1, n), rng.uniform(0, shape[0] - 1, n), response=rng.random(n))
    return FeatureSet("orb", {}, shape, kp, rng.integers(0, 256, (n, n_bits // 8), dtype=np.uint8), n_bits,
                      "little")


@pytest.mark.parametrize("epsilon", [0.5, 1.0, 2.0, 4.0])
def test_randomized_response_flips_bits_at_the_rate_epsilon_implies(epsilon):
    features = _features(n=400)
    released = randomized_response(features, epsilon, rng=7)
    flipped = released.bits() != features.bits()
    p = 1.0 / (1.0 + math.exp(epsilon))  # Warner's randomized response, epsilon-LDP per bit
    n = flipped.size
    assert abs(flipped.mean() - p) < 4.0 * math.sqrt(p * (1 - p) / n)
    # independent of the bit position and of the bit's value: each half flips at the same rate
    for part in (flipped[:, :128], flipped[:, 128:], flipped[features.bits() > 0], flipped[features.bits() < 0]):
        assert abs(part.mean() - p) < 5.0 * math.sqrt(p * (1 - p) / part.size)
    # the privacy guarantee itself: P(release = b | b) / P(release = b | -b) = e^epsilon
    assert math.isclose((1 - p) / p, math.exp(epsilon), rel_tol=1e-12)
    record = released.params["defences"][-1]
    assert record == {"kind": "rr", "eps": epsilon, "flip_rate": p, "seed": 7}
    assert released.keypoints is features.keypoints
    assert np.array_equal(randomized_response(features, epsilon, rng=7).descriptors, released.descriptors)


def test_flip_probability_refuses_a_bad_epsilon():
    assert flip_probability(0.0) == 0.5
    with pytest.raises(ValueError, match="epsilon must be a finite number >= 0, got -1.0"):
        flip_probability(-1)


def test_keep_bits_releases_the_same_positions_for_every_image_and_composes():
    a, b = _features(seed=1), _features(seed=2)
    half_a, half_b = keep_bits(a, 0.5, rng=3), keep_bits(b, 0.5, rng=3)
    positions = half_a.bit_positions()
    assert half_a.n_bits == 128 and np.array_equal(positions, half_b.bit_positions())
    assert np.array_equal(half_a.bits(), a.bits()[:, positions])
    quarter = keep_bits(half_a, 0.5, rng=4)
    assert quarter.n_bits == 64 and set(quarter.bit_positions()) <= set(positions)
    assert np.array_equal(quarter.bits(), a.bits()[:, quarter.bit_positions()])
    assert [r["kind"] for r in quarter.params["defences"]] == ["keep-bits", "keep-bits"]
    assert quarter.model_params() == {}


def test_keep_keypoints_takes_a_random_share_with_its_descriptors():
    features = _features(n=200)
    kept = keep_keypoints(features, 0.25, rng=5)
    assert len(kept.keypoints) == 50
    rows = [int(np.flatnonzero(features.keypoints.x == x)[0]) for x in kept.keypoints.x]
    assert np.array_equal(kept.descriptors, features.descriptors[rows])
    assert kept.params["defences"][-1]["kept"] == 50 and kept.params["defences"][-1]["of"] == 200


def test_distinctiveness_is_the_hamming_distance_to_the_nearest_other_descriptor():
    features = _features(n=60)
    bits = features.bits() > 0
    brute = [min(int(np.count_nonzero(bits[i] != bits[j])) for j in range(60) if j != i) for i in range(60)]
    assert distinctiveness(features).tolist() == brute


def test_text_mask_finds_the_lines_of_the_documents_and_nothing_in_the_photos():
    for name in ("document", "book-titles"):
        mask = text_mask(sample_image(name))
        assert 0.1 < mask.mean() < 0.4
    assert text_mask(sample_image("document"))[40:70, 30:300].mean() > 0.8  # "IDENTITY CARD"
    for name in ("camera", "astronaut", "shapes"):
        assert not text_mask(sample_image(name)).any()


def test_utility_aware_selection_drops_text_and_keeps_strong_distinct_keypoints():
    document = sample_image("document")
    features = extract_features(document, "orb", n_keypoints=300)
    assert not len(keep_matchable_keypoints(features, 0.5, image=document).keypoints)  # all its keypoints are text
    camera = sample_image("camera")
    features = extract_features(camera, "orb", n_keypoints=300)
    kept = keep_matchable_keypoints(features, 0.5, image=camera)
    assert len(kept.keypoints) == 150 and kept.params["defences"][-1]["in_text"] == 0
    assert np.median(kept.keypoints.response) > np.median(features.keypoints.response)
    assert np.median(distinctiveness(kept)) >= np.median(distinctiveness(features))
    again = keep_matchable_keypoints(features, 0.5, image=camera)  # deterministic: both devices keep alike
    assert np.array_equal(again.keypoints.x, kept.keypoints.x)


def test_quantization_moves_keypoints_to_cell_centres():
    features = _features(n=100)  # 200 x 300: the last cells are cut by the edge
    moved = quantize_coordinates(features, 8).keypoints
    for old, new, last in ((features.keypoints.x, moved.x, 299.0), (features.keypoints.y, moved.y, 199.0)):
        centre = np.isclose(((new + 0.5) / 8) % 1, 0.5)  # cell k holds k 8 - 1/2 .. (k + 1) 8 - 1/2
        assert np.all(centre | (new == last))
        assert np.array_equal(np.floor((old + 0.5) / 8), np.floor((new + 0.5) / 8))  # its own cell


def test_jitter_adds_noise_of_the_given_sigma_inside_the_image():
    features = _features(n=2000, shape=(2000, 2000))
    moved = jitter_coordinates(features, 3.0, rng=1).keypoints
    dx = moved.x - features.keypoints.x
    inside = (moved.x > 0) & (moved.x < 1999)
    assert abs(dx[inside].std() - 3.0) < 0.15 and abs(dx[inside].mean()) < 0.2
    assert np.all((moved.x >= 0) & (moved.x <= 1999) & (moved.y >= 0) & (moved.y <= 1999))


def test_parse_defences_names_bad_values():
    assert [d.label for d in parse_defences("keep-keypoints-aware:0.25,0.5")] == [
        "keep-keypoints-aware fraction=0.25", "keep-keypoints-aware fraction=0.5"]
    for text, message in (("blur:1", "KIND one of"), ("rr:sigma=1", "takes eps=VALUES"),
                          ("keep-bits:1.5", "fraction must be in"), ("jitter:", "at least one value"),
                          ("rr:eps=two", "'two' is not a number")):
        with pytest.raises(ValueError, match=message):
            parse_defences(text)
    assert Defence("keep-bits", 0.5, seed=9).apply(_features()).params["defences"][-1]["seed"] == 9
