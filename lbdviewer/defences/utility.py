"""What a defence costs in matching, measured as HPatches scores it: synthetic pairs, OpenCV's matcher, RANSAC.

For each pair of :func:`lbdviewer.defences.pairs.synthetic_pairs`, both
images are described by the library (:func:`lbdviewer.features.extract.extract_features`;
keypoints of the second image outside what it sees are dropped) and both go
through the defence, as every device would send them (each its own random
draw; ``keep-bits`` one system-wide set of positions). The released
descriptors are matched by OpenCV's brute-force Hamming matcher with cross
check (mutual nearest neighbours, as in the HPatches protocol of D2-Net and
its successors) and scored at the released positions:

``matching_accuracy_{1,3,5}px``
    mean matching accuracy: per pair, the share of matches whose keypoint in
    the first image, mapped by the true homography, lies within 1, 3 or 5
    pixels of its match in the second (0 for a pair without a match),
    averaged over the pairs;
``homography_accuracy``
    the share of pairs for which ``cv2.findHomography`` (RANSAC, 3 px
    reprojection threshold) finds a homography that moves the image's
    four corners :data:`CORNER_THRESHOLD` pixels or less from where the true
    one puts them, on average. The RANSAC is OpenCV's MAGSAC++
    (``cv2.USAC_MAGSAC``): its plain ``cv2.RANSAC`` refines poorly here
    (camera, ORB, a viewpoint pair with 287 of 311 matches correct: corners
    13 px off, MAGSAC++ 1.7 px; an illumination pair whose 1 px jittered
    keypoints match 368 of 415 times: 6.9 px against 1.9 px);
``matches``, ``correct_matches``
    matches and matches correct at 3 px, per pair on average.
"""

from __future__ import annotations

import numpy as np

from lbdviewer.features.extract import extract_features

__all__ = ["CORNER_THRESHOLD", "THRESHOLDS", "keypoints_inside", "match_features", "measure_utility",
           "project_points", "score_pair"]

#: Pixel thresholds of the mean matching accuracy.
THRESHOLDS = (1, 3, 5)
#: Mean corner error (pixels) below which an estimated homography counts as correct.
CORNER_THRESHOLD = 3.0
#: Reprojection threshold of RANSAC (pixels).
RANSAC_THRESHOLD = 3.0


def match_features(first, second):
    """Mutual nearest neighbours of two feature sets under the Hamming distance (OpenCV, cross check).

    Returns
    -------
    ndarray of int, shape (N, 2)
        Row ``(i, j)``: keypoint ``i`` of ``first`` matches keypoint ``j`` of ``second``.

    Examples
    --------
    >>> from lbdviewer.features.keypoints import FeatureSet, Keypoints
    >>> desc = np.array([[0] * 32, [255] * 32], np.uint8)
    >>> a = FeatureSet("orb", {}, (64, 64), Keypoints([1.0, 2.0], [1.0, 1.0]), desc, 256, "little")
    >>> match_features(a, a.take([1, 0])).tolist()
    [[0, 1], [1, 0]]
    """
    import cv2

    if first.n_bits != second.n_bits:
        raise ValueError(f"features must have the same number of bits, got {first.n_bits} and {second.n_bits}")
    if not len(first.keypoints) or not len(second.keypoints):
        return np.zeros((0, 2), dtype=np.int64)
    matches = cv2.BFMatcher(cv2.NORM_HAMMING, crossCheck=True).match(
        np.ascontiguousarray(first.descriptors), np.ascontiguousarray(second.descriptors))
    return np.array(sorted((m.queryIdx, m.trainIdx) for m in matches), dtype=np.int64).reshape(-1, 2)


def project_points(homography, points):
    """``points`` ``(N, 2)`` of ``(x, y)`` mapped by a 3 x 3 ``homography``.

    Examples
    --------
    >>> project_points(np.array([[2.0, 0, 1], [0, 2.0, 0], [0, 0, 1]]), np.array([[1.0, 3.0]])).tolist()
    [[3.0, 6.0]]
    """
    projected = np.c_[points, np.ones(len(points))] @ np.asarray(homography, dtype=np.float64).T
    return projected[:, :2] / projected[:, 2:3]


def score_pair(first, second, homography):
    """HPatches scores of one pair of (released) feature sets whose true homography is ``homography``.

    Returns
    -------
    dict
        ``matches``, ``correct_{t}px`` (matches within ``t`` pixels),
        ``matching_accuracy_{t}px`` for each of :data:`THRESHOLDS`,
        ``corner_error`` (pixels; None without an estimate) and
        ``homography_correct``.

    Examples
    --------
    >>> from lbdviewer.features.keypoints import FeatureSet, Keypoints
    >>> rng = np.random.default_rng(0)
    >>> desc = rng.integers(0, 256, (30, 32), dtype=np.uint8)
    >>> kp = Keypoints(rng.uniform(5, 90, 30), rng.uniform(5, 90, 30))
    >>> a = FeatureSet("orb", {}, (100, 100), kp, desc, 256, "little")
    >>> shift = np.array([[1.0, 0, 2], [0, 1, 0], [0, 0, 1]])
    >>> b = FeatureSet("orb", {}, (100, 100), Keypoints(kp.x + 2, kp.y), desc, 256, "little")
    >>> scores = score_pair(a, b, shift)
    >>> scores["matches"], scores["matching_accuracy_1px"], scores["homography_correct"]
    (30, 1.0, True)
    """
    import cv2

    pairs = match_features(first, second)
    out = {"matches": len(pairs)}
    points_a = np.c_[first.keypoints.x, first.keypoints.y][pairs[:, 0]]
    points_b = np.c_[second.keypoints.x, second.keypoints.y][pairs[:, 1]]
    errors = np.linalg.norm(project_points(homography, points_a) - points_b, axis=1) if len(pairs) else np.zeros(0)
    for threshold in THRESHOLDS:
        correct = int(np.count_nonzero(errors <= threshold))
        out[f"correct_{threshold}px"] = correct
        out[f"matching_accuracy_{threshold}px"] = correct / len(pairs) if len(pairs) else 0.0
    out["corner_error"], out["homography_correct"] = None, False
    if len(pairs) >= 4:
        estimate, _ = cv2.findHomography(points_a, points_b, cv2.USAC_MAGSAC, RANSAC_THRESHOLD)
        if estimate is not None:
            height, width = first.image_shape
            corners = np.array([[0, 0], [width - 1, 0], [width - 1, height - 1], [0, height - 1]], np.float64)
            error = float(np.linalg.norm(project_points(estimate, corners) - project_points(homography, corners), axis=1).mean())
            out["corner_error"], out["homography_correct"] = error, error <= CORNER_THRESHOLD
    return out


def keypoints_inside(features, valid):
    """The keypoints of ``features`` that lie where ``valid`` is True."""
    rows = np.clip(np.rint(features.keypoints.y).astype(np.int64), 0, valid.shape[0] - 1)
    cols = np.clip(np.rint(features.keypoints.x).astype(np.int64), 0, valid.shape[1] - 1)
    return features.take(np.flatnonzero(valid[rows, cols]))


def measure_utility(image, descriptor, pairs, *, defence=None, n_keypoints=500, rng=0):
    """Mean HPatches scores of ``descriptor`` released through ``defence`` on the synthetic ``pairs`` of ``image``.

    Parameters
    ----------
    image : ndarray, shape (H, W)
        Gray image in ``[0, 1]``: the first image of every pair.
    descriptor : str
        A library descriptor.
    pairs : list of SyntheticPair
        From :func:`lbdviewer.defences.pairs.synthetic_pairs`.
    defence : Defence, optional
        None: the features as the library writes them (the baseline).
    n_keypoints : int
        Keypoints to detect in each image.
    rng : int
        Seed of the defence's draws (each image of each pair draws its own
        from it).

    Returns
    -------
    dict
        ``matching_accuracy_{1,3,5}px``, ``homography_accuracy``, ``matches``,
        ``correct_matches`` (see the module notes), ``keypoints`` (released
        in the first images, on average) and ``pairs``.

    Examples
    --------
    >>> from lbdviewer.io.samples import sample_image
    >>> from lbdviewer.defences.pairs import synthetic_pairs
    >>> image = sample_image("camera")[100:260, 150:310]
    >>> scores = measure_utility(image, "orb", synthetic_pairs(image, viewpoints=1, illuminations=1), n_keypoints=100)
    >>> scores["pairs"], scores["matching_accuracy_3px"] > 0.5
    (2, True)
    """
    if not pairs:
        raise ValueError("pairs must hold at least one synthetic pair")
    scores, released = [], []
    described = extract_features(image, descriptor, n_keypoints=n_keypoints)
    for index, pair in enumerate(pairs):
        first = described
        second = keypoints_inside(extract_features(pair.second, descriptor, n_keypoints=n_keypoints), pair.valid)
        if defence is not None:
            first = defence.apply(first, rng=np.random.default_rng([rng, index, 0]), image=image)
            second = defence.apply(second, rng=np.random.default_rng([rng, index, 1]), image=pair.second)
        released.append(len(first.keypoints))
        scores.append(score_pair(first, second, pair.homography))
    out = {f"matching_accuracy_{t}px": float(np.mean([s[f"matching_accuracy_{t}px"] for s in scores]))
           for t in THRESHOLDS}
    out.update(homography_accuracy=float(np.mean([s["homography_correct"] for s in scores])),
               matches=float(np.mean([s["matches"] for s in scores])),
               correct_matches=float(np.mean([s["correct_3px"] for s in scores])),
               keypoints=float(np.mean(released)), pairs=len(pairs))
    return out
