"""Calibration of thresholded box tests (BEBLID, TEBLID) against a synthetic library."""

import numpy as np
import pytest

from lbdviewer.libraries.calibration.box_tests import box_sums, integral_image, locate_box_tests, trace_box_pixels
from lbdviewer.libraries.calibration.thresholds import bisect_thresholds, craft_patch, threshold_intervals
from lbdviewer.libraries.blid import simplest_in

#: (u1, v1, u2, v2, r) in a 32 x 32 patch and thresholds in grey levels, chosen here (not any library's).
BOXES = np.array([[24, 10, 8, 20, 3], [16, 16, 12, 16, 2], [5, 5, 6, 6, 4], [20, 25, 17, 22, 3], [10, 28, 28, 4, 1]])
THETA = np.array([12.0, -3.0, 0.0, 7.35, 41.5])


def synthetic_library(scale=1, boxes=BOXES, theta=THETA):
    """bit k = [mean(B1) - mean(B2) <= theta_k] at keypoints of one scale, like BEBLID inside the image."""
    def describe(image, centers):
        ii = integral_image(image)
        x, y = centers[:, :1], centers[:, 1:]
        r = scale * boxes[:, 4]
        s1 = box_sums(ii, x + scale * (boxes[:, 0] - 16), y + scale * (boxes[:, 1] - 16), r)
        s2 = box_sums(ii, x + scale * (boxes[:, 2] - 16), y + scale * (boxes[:, 3] - 16), r)
        side = (2 * r + 1).astype(np.float32)
        return (s1 - s2) <= (theta.astype(np.float32) * side * side)
    return describe


def test_craft_patch_makes_the_difference_asked_within_uint8():
    for target in (0, 1, 355, -4000, 10 ** 6):
        xs, ys, deltas, reached = craft_patch((6, 6), (8, 7), 2, target)
        image = np.full((16, 16), 128)
        image[ys, xs] += deltas
        assert image.min() >= 0 and image.max() <= 255
        ii = integral_image(image)
        made = int(box_sums(ii, np.array([6]), np.array([6]), 2)[0] - box_sums(ii, np.array([8]), np.array([7]), 2)[0])
        assert made == reached
        assert reached == target or (abs(reached) < abs(target) and np.sign(reached) == np.sign(target))


def test_calibration_recovers_known_boxes_and_thresholds():
    boxes, bounds, errors = locate_box_tests(synthetic_library(), n_images=6, size=160, step=4, max_radius=5)
    assert boxes.tolist() == BOXES.tolist() and not errors.any()
    area = (2 * BOXES[:, 4] + 1) ** 2
    cut = bisect_thresholds(synthetic_library(), boxes, bounds[:, 0], bounds[:, 1], scale=1, canvas=512)
    assert cut.tolist() == np.floor(THETA * area).astype(int).tolist()
    low, high = cut / area, (cut + 1) / area
    area4 = (8 * BOXES[:, 4] + 1) ** 2
    cut4 = bisect_thresholds(synthetic_library(4), boxes, np.floor(low * area4).astype(int),
                             np.ceil(high * area4).astype(int), scale=4, canvas=1024)
    theta = simplest_in(np.maximum(low, cut4 / area4), np.minimum(high, (cut4 + 1) / area4))
    assert theta == pytest.approx(THETA, abs=1e-9)


def test_tracing_finds_large_boxes_whose_large_threshold_the_noise_rarely_crosses():
    # bits like TEBLID's worst: boxes of half-width 4-6 compared against 95-110 grey levels
    boxes = np.array([*BOXES, [27, 15, 9, 5, 4], [25, 25, 7, 14, 5], [16, 9, 6, 18, 6]])
    theta = np.array([*THETA, 110.25, 101.55, 95.35])
    library = synthetic_library(boxes=boxes, theta=theta)
    found, bounds, errors = locate_box_tests(library, n_images=6, size=160, step=4, max_radius=6)
    assert found.tolist() == boxes.tolist() and not errors.any()
    area = (2 * boxes[:, 4] + 1) ** 2
    cut = bisect_thresholds(library, found, bounds[:, 0], bounds[:, 1], scale=1, canvas=512)
    assert cut.tolist() == np.floor(theta.astype(np.float32) * area.astype(np.float32)).astype(int).tolist()


def test_traced_pixels_lie_in_one_box_only_and_straddle_the_threshold():
    library = synthetic_library()
    gen = np.random.default_rng(1)
    width = 2 * 24 + 1
    candidates = gen.integers(0, 256, (400, width, width)).astype(np.uint8)
    image = np.full((width * 20 + 80, width * 20 + 80), 128, np.uint8)
    centers = []
    for n, w in enumerate(candidates):
        top, left = 40 + (n // 20) * width, 40 + (n % 20) * width
        image[top:top + width, left:left + width] = w
        centers.append((left + width // 2, top + width // 2))
    bits = library(image, np.array(centers))
    k = 4  # boxes of half-width 1 far apart, threshold 41.5
    ones, zeros = candidates[bits[:, k]][:8], candidates[~bits[:, k]][:8]
    pixels, straddles = trace_box_pixels(library, [k], [ones], [zeros])
    u1, v1, u2, v2, r = BOXES[k]
    for u, v, sign in pixels[0]:
        in1, in2 = max(abs(u - u1), abs(v - v1)) <= r, max(abs(u - u2), abs(v - v2)) <= r
        assert (in1 and not in2) if sign > 0 else (in2 and not in1)
    for pair in straddles[0]:
        diffs = []
        for w in pair:
            ii = integral_image(w)
            c = width // 2 - 16
            diffs.append(int(box_sums(ii, np.array([u1 + c]), np.array([v1 + c]), r)[0]
                             - box_sums(ii, np.array([u2 + c]), np.array([v2 + c]), r)[0]))
        assert diffs[0] <= THETA[k] * 9 < diffs[1]


def test_thresholds_of_small_boxes_are_bisected_until_their_decimals_are_known():
    # half-width 1 at scale 4 is 81 pixels: 9.94 and 9.95 look alike; at scale 8 (289 pixels) they do not
    boxes = np.array([[16, 10, 10, 14, 1], [14, 8, 11, 1, 1], [15, 16, 12, 20, 1], [10, 9, 6, 20, 3]])
    theta = np.array([9.95, 0.85, -5.15, 2.45])

    def describe_at(scale):
        return synthetic_library(scale, boxes, theta)
    located, bounds, errors = locate_box_tests(describe_at(1), n_images=3, size=128, step=4, max_radius=3)
    assert located.tolist() == boxes.tolist() and not errors.any()
    settings = dict(half=16, canvas=1024, fine_canvas=1280)
    low, high = threshold_intervals(describe_at, located, bounds, scales=(1, 4), fine_scale=8, **settings)
    assert np.all((low <= theta) & (theta < high))
    assert simplest_in(low, high) == pytest.approx(theta, abs=1e-9)
    coarse = simplest_in(*threshold_intervals(describe_at, located, bounds, scales=(1, 4), fine_scale=4, **settings))
    assert coarse[:3] != pytest.approx(theta[:3], abs=1e-3)
