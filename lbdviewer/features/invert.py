"""Images from feature files alone: invert the bits a real library wrote.

A feature file (:mod:`lbdviewer.features.keypoints`) holds keypoints and their packed
descriptors. The library model of its descriptor
(:mod:`lbdviewer.libraries.base`) gives, for every keypoint, the pattern the
library used: turned by the keypoint angle, at its pyramid level or FREAK
scale, placed in a patch of that level. Two modes invert the bits:

``"joint"`` (default)
    one level-0 image explains every keypoint's bits at once (sign
    consistency with a total-variation prior,
    :class:`lbdviewer.solvers.image.joint.JointSignConsistency`). Where every
    field is one of a few stencils at integer pixels of its level (ORB on its
    pyramid, the BRIEF models on level 0), the operator is
    :class:`lbdviewer.operators.pyramid.PyramidJointOperator`: the levels are built
    from the unknown image as the library builds them (bilinear resizing,
    reflect-101 padding), each stencil filters them once and every test is
    two reads; its cost is close to a grid's. Otherwise (FREAK, whose fields
    scale with the keypoint) :func:`lbdviewer.reconstruction.image.iter_reconstruct_image`
    runs with one level-0 pattern per keypoint: :func:`level0_pattern` maps a
    pattern of level ``l`` (pixel size ``s`` in level-0 pixels) to level 0,
    field centres moved to the level-0 position of the level pixel they sat
    on, sigmas and radii multiplied by ``s``; patches that leave the image
    read free pixels of a border cropped away afterwards.
``"patches"`` (the paper's protocol)
    each keypoint's bits are inverted with BIHT on its own patch (at its
    level), the estimates are resized to level-0 pixels, placed at their
    keypoints and averaged where they overlap.

A file that holds only some of the descriptor's bits (``params["bit_positions"]``,
:meth:`lbdviewer.features.keypoints.FeatureSet.bit_positions`) is inverted
with the tests of those bits alone. Bits released through randomized response
(each flipped with a known probability, ``flip_rate``) are read as noisy
measurements: the joint solve minimises the flip-aware likelihood of
:class:`lbdviewer.solvers.image.likelihood.BitLikelihood` instead of sign consistency.

Each pattern is first cut down to the square that its fields read
(:func:`trimmed`): FREAK's patterns share the patch of the largest keypoint,
which would otherwise count pixels no field reads as covered. Pixels no
keypoint's patch covers hold the median of the covered ones in the result
(:func:`neutral_uncovered`); ``result.covered`` says which they are.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from dataclasses import fields, replace

import numpy as np

from lbdviewer._validation import check_choice, check_fraction, check_iterations
from lbdviewer.features.invert_akaze import iter_invert_akaze, iter_invert_akaze_joint
from lbdviewer.features.progress import InversionProgress
from lbdviewer.libraries.registry import get_model
from lbdviewer.operators.descriptor import DescriptorOperator, field_bounds
from lbdviewer.bits import pack_bits
from lbdviewer.operators.joint.operator import JointOperator
from lbdviewer.operators.pyramid import PyramidJointOperator, shared_stencils
from lbdviewer.reconstruction.image import DEFAULT_ITERATIONS, MODES, ImageResult, iter_reconstruct_image
from lbdviewer.reconstruction.sites import coverage
from lbdviewer.solvers.image.joint import JointSignConsistency
from lbdviewer.solvers.image.likelihood import BitLikelihood
from lbdviewer.solvers.patch.biht import BIHT

#: Default iterations of a feature file's inversion: the grid's, except the joint keypoint solve, which keeps
#: the 200 of plain (not oriented) sign consistency.
FEATURE_ITERATIONS = {**DEFAULT_ITERATIONS, ("joint", "consistency"): 200}

#: Most distinct field stencils for which the pyramid operator (one filtered plane each) is used.
MAX_SHARED_STENCILS = 4
#: Keypoints solved in one BIHT batch when they share a pattern (the BRIEF models).
PATCH_BATCH = 256
#: Estimates handed out during a patchwise inversion (the other reports carry none).
PATCH_ESTIMATES = 50
#: Estimates handed out during a joint inversion on the pyramid operator (it reports every iteration).
JOINT_ESTIMATES = 100
#: Keypoints whose patterns are made between two reports (ORB: ~0.1 s on this kind of machine).
KEYPOINT_CHUNK = 256
#: Noise scale and total variation of the flip-aware likelihood (bits released with randomized response).
#: Measured on camera, ORB, 500 keypoints, 200 iterations, correlation at flip rates 0.38 / 0.27 / 0.12 / 0.02:
#: noise 0.03 and smoothness 1: 0.81 / 0.88 / 0.88 / 0.89; 3: 0.83 / 0.87 / 0.88 / 0.87; noise 0.1 lower
#: (sign consistency, which reads every bit as true: 0.69 / 0.76 / 0.84 / 0.90).
FLIP_NOISE = 0.03
FLIP_SMOOTHNESS = 2.0


def trimmed(keypoint_pattern):
    """The keypoint pattern in the smallest square patch holding every field's support.

    The fields keep their place in the image: the patch origin moves by as
    much as the field centres move back.

    Parameters
    ----------
    keypoint_pattern : lbdviewer.libraries.base.KeypointPattern

    Returns
    -------
    KeypointPattern

    Examples
    --------
    >>> from lbdviewer.libraries.base import KeypointPattern
    >>> from lbdviewer.patterns.base import Pattern
    >>> p = Pattern("toy", 9, [[2.0, 3.0], [4.0, 3.0]], [1.0, 1.0], [1.0, 1.0], [[0, 1]])
    >>> kp = trimmed(KeypointPattern(p, 0, (10, 20), 1.0))
    >>> kp.pattern.patch_size, kp.origin, kp.pattern.centers.tolist()
    (5, (12, 21), [[1.0, 1.0], [3.0, 1.0]])
    """
    pattern = keypoint_pattern.pattern
    x0, x1, y0, y1 = field_bounds(pattern).T  # the pixels the fields read, field by field
    top, left = int(y0.min()), int(x0.min())
    side = max(int(y1.max()) - top, int(x1.max()) - left) + 1
    if side == pattern.patch_size:
        return keypoint_pattern
    pattern = replace(pattern, patch_size=side, centers=pattern.centers - [left, top])
    row, col = keypoint_pattern.origin
    return replace(keypoint_pattern, pattern=pattern, origin=(row + top, col + left))


def level0_pattern(keypoint_pattern):
    """A keypoint's pattern in level-0 pixels and the level-0 ``(row, col)`` of its patch corner.

    Level pixel ``(r, c)`` is centred at level-0 ``((c + 1/2) s - 1/2, (r + 1/2) s - 1/2)``
    with ``s`` the level's pixel size. A field centred at ``(x, y)`` in a patch
    whose corner sits at level pixel ``(r0, c0)`` moves to
    ``((c0 + x + 1/2) s - 1/2 - C0, (r0 + y + 1/2) s - 1/2 - R0)`` in a patch of
    side ``ceil(P s) + 1`` whose corner is the level-0 pixel
    ``(R0, C0) = (round(r0 s), round(c0 s))``; sigmas and radii scale by ``s``.
    A level-0 keypoint (``s = 1``) keeps its pattern object unchanged.

    Parameters
    ----------
    keypoint_pattern : lbdviewer.libraries.base.KeypointPattern

    Returns
    -------
    pattern : Pattern
    origin : (int, int)

    Examples
    --------
    >>> from lbdviewer.libraries.base import KeypointPattern
    >>> from lbdviewer.patterns.base import Pattern
    >>> p = Pattern("toy", 4, [[1.0, 2.0]], [1.0], [1.0], [[0, 0]])
    >>> q, origin = level0_pattern(KeypointPattern(p, 1, (3, 5), 2.0))
    >>> q.patch_size, origin, q.centers.tolist(), q.sigmas.tolist()
    (9, (6, 10), [[2.5, 4.5]], [2.0])
    """
    pattern, scale = keypoint_pattern.pattern, float(keypoint_pattern.scale)
    row, col = keypoint_pattern.origin
    if scale == 1.0:
        return pattern, (int(row), int(col))
    origin = (int(math.floor(row * scale + 0.5)), int(math.floor(col * scale + 0.5)))
    corner = np.array([col, row], dtype=np.float64)
    centers = (corner + pattern.centers + 0.5) * scale - 0.5 - np.array([origin[1], origin[0]])
    size = int(math.ceil(pattern.patch_size * scale)) + 1
    return replace(pattern, patch_size=size, centers=centers, sigmas=pattern.sigmas * scale,
                   radii=pattern.radii * scale), origin


def _model(features):
    """The library model of ``features`` with its parameters."""
    return get_model(features.descriptor, **features.model_params())


def keypoint_patterns(features):
    """The trimmed pattern of every keypoint of ``features`` (see :func:`trimmed`).

    Keypoints that share one pattern object in the model (the BRIEF models)
    still share one after trimming.

    Returns
    -------
    list of KeypointPattern
    """
    return [kp for chunk in iter_keypoint_patterns(features) for kp in chunk]


def iter_keypoint_patterns(features, *, chunk=KEYPOINT_CHUNK):
    """:func:`keypoint_patterns` ``chunk`` keypoints at a time: a list per chunk, so a caller can stop between.

    The model makes each chunk's patterns in turn. Trimming makes a pattern
    independent of the patch the model placed it in (FREAK, BRISK and
    BEBLID size that patch by the largest keypoint they are given), so the
    chunks give the patterns one call for all keypoints would. A pattern
    the model shares between keypoints (the BRIEF models) stays one object
    across chunks: each chunk's is recognised by its content.

    Examples
    --------
    >>> from lbdviewer.features.keypoints import FeatureSet, Keypoints
    >>> bits = np.zeros((5, 32), dtype=np.uint8)
    >>> features = FeatureSet("opencv-brief", {}, (80, 80), Keypoints([30.0] * 5, [40.0] * 5), bits, 256, "big")
    >>> chunks = list(iter_keypoint_patterns(features, chunk=2))
    >>> [len(c) for c in chunks], len({id(kp.pattern) for c in chunks for kp in c})
    ([2, 2, 1], 1)
    """
    if isinstance(chunk, bool) or not isinstance(chunk, int) or chunk < 1:
        raise ValueError(f"chunk must be a positive integer, got {chunk!r}")
    model, keypoints, positions = _model(features), features.keypoints, features.bit_positions()
    cache, shared = {}, {}  # id(model's pattern) -> (that pattern, trimmed); content key -> trimmed
    for start in range(0, len(keypoints), chunk):
        part = keypoints if len(keypoints) <= chunk else keypoints.take(np.arange(start, min(start + chunk,
                                                                                             len(keypoints))))
        made = model.keypoint_patterns(part)
        uses = Counter(id(kp.pattern) for kp in made)
        out = []
        for kp in made:
            if id(kp.pattern) not in cache:
                key = _content_key(kp.pattern) if uses[id(kp.pattern)] > 1 or len(made) == 1 else None
                cut = shared.get(key) if key is not None else None
                if cut is None:
                    cut = trimmed(replace(kp, origin=(0, 0)))
                    if positions is not None:
                        cut = replace(cut, pattern=released_tests(cut.pattern, positions))
                    if uses[id(kp.pattern)] > 1:
                        shared[key] = cut
                cache[id(kp.pattern)] = (kp.pattern, cut)
            cut = cache[id(kp.pattern)][1]
            out.append(replace(cut, level=kp.level, scale=kp.scale,
                               origin=(kp.origin[0] + cut.origin[0], kp.origin[1] + cut.origin[1])))
        yield out


def released_tests(pattern, positions):
    """The tests of ``pattern`` at the bit ``positions`` a file holds, in that order (same fields).

    Raises
    ------
    ValueError
        A position past the pattern's tests.

    Examples
    --------
    >>> from lbdviewer.patterns.base import Pattern
    >>> p = Pattern("toy", 8, [[2, 2], [5, 5], [3, 6]], [1, 1, 1], [1, 1, 1], [[0, 1], [1, 2], [2, 0]])
    >>> released_tests(p, [2, 0]).pairs.tolist()
    [[2, 0], [0, 1]]
    """
    positions = np.asarray(positions, dtype=np.int64)
    if positions.size == 0 or positions.min() < 0 or positions.max() >= pattern.m:
        raise ValueError(f"bit_positions must lie in 0..{pattern.m - 1} (the {pattern.name} tests), got "
                         f"{positions.min(initial=0)}..{positions.max(initial=0)}")
    return pattern.with_pairs(pattern.pairs[positions], thresholds=pattern.thresholds[positions])


def _content_key(pattern):
    """A hashable key equal for two patterns with equal fields (arrays by shape, type and bytes)."""
    return tuple((value.shape, value.dtype.str, value.tobytes()) if isinstance(value, np.ndarray) else repr(value)
                 for value in (getattr(pattern, f.name) for f in fields(pattern)))


def iter_invert_features(features, *, mode="joint", iterations=None, sparsity=0.4, flip_rate=0.0):
    """Reconstruct the image a feature file describes, yielding :class:`InversionProgress`.

    Parameters
    ----------
    features : lbdviewer.features.keypoints.FeatureSet
    mode : {"joint", "patches"}
        See the module notes.
    iterations : int, optional
        Iterations of the whole-image solver (``"joint"``) or of BIHT per
        keypoint (``"patches"``); default :data:`FEATURE_ITERATIONS` of the mode.
    sparsity : float
        Share of Haar coefficients BIHT keeps (``"patches"``; the joint
        default solver, sign consistency, has no sparsity).
    flip_rate : float
        Probability in ``[0, 0.5)`` that each bit was flipped before release
        (randomized response); above 0 the joint solve reads the bits as noisy
        measurements (see the module notes). Needs ``mode="joint"``; not for AKAZE.

    Yields
    ------
    InversionProgress
        The last one carries the :class:`lbdviewer.reconstruction.image.ImageResult`
        (image in ``[0, 1]``, neutral where no keypoint's patch reaches: the
        median of the covered pixels, :func:`neutral_uncovered`; the covered
        mask; ``params`` with every parameter, the descriptor, the number of
        keypoints, what the uncovered pixels hold (``uncovered``: rule, value,
        count) and the joint solver's ``solver_settings`` (None
        patchwise and for AKAZE's closed form); ``iterations_run``: the iterations the solver really
        ran, the most any keypoint ran for ``"patches"``, fewer than
        ``iterations`` when it stopped early). AKAZE's patchwise inversion
        is closed form: it records 0 iterations requested and run; its joint
        one is sign consistency on its own operator
        (:func:`lbdviewer.features.invert_akaze.iter_invert_akaze_joint`).

    Raises
    ------
    ValueError
        For a bad mode, iteration count, sparsity or flip rate.

    Examples
    --------
    >>> from lbdviewer.features.keypoints import FeatureSet, Keypoints
    >>> bits = np.random.default_rng(0).integers(0, 256, (1, 32), dtype=np.uint8)
    >>> features = FeatureSet("opencv-brief", {}, (60, 60), Keypoints([30.0], [30.0]), bits, 256, "big")
    >>> reports = list(iter_invert_features(features, mode="patches", iterations=5))
    >>> reports[-1].result.image.shape, reports[-1].done == reports[-1].total
    ((60, 60), True)
    >>> 1 <= reports[-1].result.iterations_run <= 5
    True
    """
    check_choice("mode", mode, MODES)
    method = "consistency" if mode == "joint" else "biht"
    iterations = FEATURE_ITERATIONS[(mode, method)] if iterations is None else check_iterations(iterations)
    sparsity = check_fraction("sparsity", sparsity)
    flip_rate = _check_flip_rate(flip_rate, features, mode)
    if flip_rate:
        method = "likelihood"
    started = time.perf_counter()
    if features.descriptor == "akaze" and features.bit_positions() is not None:
        raise ValueError("an AKAZE file that holds a subset of the bits (params['bit_positions']) cannot be inverted")
    if features.descriptor == "akaze" and mode == "joint":  # no field pattern: its own joint operator
        items = iter_invert_akaze_joint(features, int(iterations))
    elif features.descriptor == "akaze":  # each keypoint alone at its scale, in closed form
        method, items, iterations = "akaze-cell-ranks", iter_invert_akaze(features), 0  # no iterative solve
    else:
        patterns = []  # thresholded patterns (BEBLID, TEBLID) carry their t to the solvers
        total = int(iterations) if mode == "joint" else len(features.keypoints)
        for chunk in iter_keypoint_patterns(features):
            patterns.extend(chunk)
            yield InversionProgress(done=0, total=total, iterations_run=0)  # a point where a caller can stop
        if mode == "joint":
            items = _joint(features, patterns, int(iterations), sparsity, flip_rate)
        else:
            items = _patchwise(features, patterns, int(iterations), sparsity)
    image = covered = consistency = settings = None
    ran = 0
    for item in items:
        if isinstance(item, InversionProgress):
            yield item
        else:
            image, covered, consistency, ran, settings = item
    image, neutral = neutral_uncovered(np.clip(image, 0.0, 1.0), covered)
    params = {"descriptor": features.descriptor, "keypoints": len(features.keypoints), "mode": mode,
              "method": method, "iterations": int(iterations), "sparsity": float(sparsity),
              "image_shape": list(features.image_shape), "solver_settings": settings,
              "uncovered": {"rule": "covered median", "value": neutral,
                            "pixels": int(np.size(covered) - np.count_nonzero(covered))}}
    if flip_rate:
        params["flip_rate"] = flip_rate
    if features.bit_positions() is not None:
        params["bits_released"] = int(features.n_bits)
    result = ImageResult(image=image, covered=covered, mode=mode,
                         method=method, iterations=int(iterations), solver_bit_consistency=consistency,
                         seconds=time.perf_counter() - started, params=params, iterations_run=int(ran))
    yield InversionProgress(done=1, total=1, image=result.image, result=result, iterations_run=int(ran))


def neutral_uncovered(image, covered):
    """``image`` with the pixels no keypoint covers set to the median of the covered ones, and that median.

    Bits say nothing of the pixels outside every keypoint's patch. Drawn
    black they read as the darkest ink: a dark-mode screen rebuilt from its
    keypoints, light text on dark, came out as a dark page with black holes,
    and tesseract read its light text as background (0 of 6 lines). At the
    covered median they read as background, whatever the polarity.

    Parameters
    ----------
    image : array_like, shape (H, W)
    covered : array_like of bool, shape (H, W)

    Returns
    -------
    image : ndarray of float64, shape (H, W)
    value : float or None
        The median written (None when no pixel is covered: the image is returned as it is).

    Examples
    --------
    >>> image, value = neutral_uncovered(np.array([[0.2, 0.9, 0.0]]), np.array([[True, True, False]]))
    >>> image.tolist(), value
    ([[0.2, 0.9, 0.55]], 0.55)
    """
    image = np.asarray(image, dtype=np.float64)
    covered = np.asarray(covered, dtype=bool)
    if covered.shape != image.shape:
        raise ValueError(f"covered must have the image's shape {image.shape}, got {covered.shape}")
    if not covered.any():
        return image.copy(), None
    value = float(np.median(image[covered]))
    return np.where(covered, image, value), value


def invert_features(features, *, mode="joint", iterations=None, sparsity=0.4, flip_rate=0.0):
    """Reconstruct the image a feature file describes.

    Same parameters as :func:`iter_invert_features`; returns its final
    :class:`lbdviewer.reconstruction.image.ImageResult`.
    """
    for progress in iter_invert_features(features, mode=mode, iterations=iterations, sparsity=sparsity,
                                         flip_rate=flip_rate):
        if progress.result is not None:
            return progress.result
    raise AssertionError("iter_invert_features ended without a result")


def weighs_flipped_bits(features):
    """Whether inverting ``features`` takes a ``flip_rate`` above 0 (AKAZE's: no, nothing weighs its bits).

    >>> from types import SimpleNamespace
    >>> [weighs_flipped_bits(SimpleNamespace(descriptor=name)) for name in ("orb", "akaze")]
    [True, False]
    """
    return features.descriptor != "akaze"


def _check_flip_rate(flip_rate, features, mode):
    """``flip_rate`` as a float in ``[0, 0.5)``, or a ValueError naming it (and what cannot take one)."""
    if isinstance(flip_rate, bool) or not isinstance(flip_rate, (int, float, np.floating)) \
            or not 0.0 <= flip_rate < 0.5:
        raise ValueError(f"flip_rate must be a number in [0, 0.5), got {flip_rate!r}")
    if flip_rate and mode != "joint":
        raise ValueError(f"flip_rate needs mode 'joint' (the likelihood solves the whole image), got {mode!r}")
    if flip_rate and not weighs_flipped_bits(features):
        raise ValueError("flip_rate is not supported for AKAZE files: no inversion of theirs weighs flipped bits")
    return float(flip_rate)


def _joint_solver(operator, bits, iterations, flip_rate):
    """The joint solver of a feature file's keypoints and what it runs (its ``solver_settings``).

    Sign consistency without oriented margins (sparse keypoints at several
    scales and angles were not measured with them; the pyramid operator has
    no oriented kernel), or, for flipped bits, the flip-aware likelihood.
    """
    if not flip_rate:
        solver = JointSignConsistency(operator, bits, iterations=iterations, oriented=False)
        return solver, solver.settings
    solver = BitLikelihood(operator, bits, noise=FLIP_NOISE, smoothness=FLIP_SMOOTHNESS, flip_rate=flip_rate,
                           iterations=iterations)
    return solver, {"solver": "BitLikelihood", "iterations": iterations, "flip_rate": flip_rate,
                    "noise": FLIP_NOISE, "smoothness": FLIP_SMOOTHNESS}


def _patchwise(features, patterns, iterations, sparsity):
    import cv2

    bits = features.bits()
    height, width = features.image_shape
    total = np.zeros((height, width))
    weight = np.zeros((height, width))
    consistent = 0.0
    groups = {}
    for k, kp in enumerate(patterns):
        groups.setdefault(id(kp.pattern), []).append(k)
    every = max(1, len(patterns) // PATCH_ESTIMATES)
    done, reported, ran = 0, 0, 0
    for rows in groups.values():
        operator = DescriptorOperator(patterns[rows[0]].pattern)
        for start in range(0, len(rows), PATCH_BATCH):
            batch = rows[start:start + PATCH_BATCH]
            state = BIHT(operator, bits[batch], iterations=iterations, sparsity=sparsity).run()
            ran = max(ran, int(np.max(state.iterations_run)))
            consistent += float(np.sum(state.bit_consistency))
            for k, patch in zip(batch, state.x):
                _place(total, weight, patterns[k], np.asarray(patch, dtype=np.float32), cv2)
            done += len(batch)
            estimate = None
            if done - reported >= every:
                reported = done
                estimate = np.where(weight > 0, total / np.maximum(weight, 1.0), 0.0)
            yield InversionProgress(done=done, total=len(patterns), image=estimate, iterations_run=ran)
    yield total / np.maximum(weight, 1.0), weight > 0, consistent / max(len(patterns), 1), ran, None


def _place(total, weight, kp, patch, cv2):
    """Add a level patch estimate, resized to level-0 pixels, at its place in ``total``."""
    height, width = total.shape
    size = max(1, int(round(kp.pattern.patch_size * kp.scale)))
    if size != patch.shape[0]:
        patch = cv2.resize(patch, (size, size), interpolation=cv2.INTER_LINEAR)
    # level pixel (r, c) is centred at level-0 ((c + 0.5) * s - 0.5, (r + 0.5) * s - 0.5)
    top = int(round((kp.origin[0] + 0.5) * kp.scale - 0.5))
    left = int(round((kp.origin[1] + 0.5) * kp.scale - 0.5))
    r0, c0 = max(top, 0), max(left, 0)
    r1, c1 = min(top + size, height), min(left + size, width)
    if r0 < r1 and c0 < c1:
        total[r0:r1, c0:c1] += patch[r0 - top:r1 - top, c0 - left:c1 - left]
        weight[r0:r1, c0:c1] += 1.0


def _covered(shape, patterns):
    """Pixels of the level-0 image inside some keypoint's patch (placed as :func:`level0_pattern` does)."""
    scale = np.array([kp.scale for kp in patterns], dtype=np.float64)
    origins = np.array([kp.origin for kp in patterns], dtype=np.int64).reshape(-1, 2)
    sizes = np.array([kp.pattern.patch_size for kp in patterns], dtype=np.int64)
    scaled = scale != 1.0
    origins = np.where(scaled[:, None], np.floor(origins * scale[:, None] + 0.5), origins).astype(np.int64)
    sizes = np.where(scaled, np.ceil(sizes * scale) + 1, sizes).astype(np.int64)
    height, width = shape
    top, left = np.clip(origins[:, 0], 0, height), np.clip(origins[:, 1], 0, width)
    bottom, right = np.clip(origins[:, 0] + sizes, 0, height), np.clip(origins[:, 1] + sizes, 0, width)
    counts = np.zeros((shape[0] + 1, shape[1] + 1), dtype=np.int32)
    np.add.at(counts, (top, left), 1)
    np.add.at(counts, (top, right), -1)
    np.add.at(counts, (bottom, left), -1)
    np.add.at(counts, (bottom, right), 1)
    return np.cumsum(np.cumsum(counts, axis=0), axis=1)[:-1, :-1] > 0


def _pyramid_stencils(patterns):
    """The field stencils the keypoints' patterns share (:func:`lbdviewer.operators.pyramid.shared_stencils`), or None.

    None where the :class:`lbdviewer.operators.pyramid.PyramidJointOperator` does not apply: thresholded bits
    (BEBLID and TEBLID, ``sign(L x - t)``), fields between pixels (FREAK's scaled patterns), or more
    than :data:`MAX_SHARED_STENCILS` stencils.
    """
    unique = list({id(kp.pattern): kp.pattern for kp in patterns}.values())  # in order of first use
    if any(p.thresholded for p in unique):
        return None
    try:
        stencils = shared_stencils(unique)
    except ValueError:
        return None
    return stencils if len(stencils[0]) <= MAX_SHARED_STENCILS else None


def _pyramid_operator(features, patterns, stencils):
    """The :class:`lbdviewer.operators.pyramid.PyramidJointOperator` of the keypoints, or None where it does not apply.

    It applies when all fields are a few stencils at integer pixels of the
    keypoints' levels (``stencils`` from :func:`_pyramid_stencils` is not
    None: ORB; the BRIEF models, whose keypoints are all on level 0) and the
    levels above 0 are each resized from the previous one
    (``pyramid == "chained"``).
    """
    if stencils is None:
        return None
    if all(kp.level == 0 for kp in patterns):
        level_shapes = [features.image_shape]
    elif _model(features).pyramid == "chained":
        level_shapes = [level.shape for level in _model(features).source_images(np.zeros(features.image_shape))]
    else:
        return None
    return PyramidJointOperator(features.image_shape, level_shapes, [kp.level for kp in patterns],
                                [kp.origin for kp in patterns], [kp.pattern for kp in patterns], stencils=stencils)


def _solve_joint(operator, bits, iterations, flip_rate, covered, crop=(slice(None), slice(None))):
    """Run :func:`_joint_solver` on ``operator``, then yield ``(image, covered, consistency, run, settings)``.

    It reports every iteration (a point where a caller can stop), with the
    estimate (cut to ``crop``) every 1/:data:`JOINT_ESTIMATES` of the budget and at the end.
    """
    estimate_every = max(1, iterations // JOINT_ESTIMATES)
    state = None
    solver, settings = _joint_solver(operator, bits, iterations, flip_rate)
    for state in solver.steps():
        done = state.iteration
        image = np.clip(state.x[0][crop], 0.0, 1.0) if done % estimate_every == 0 or state.finished else None
        yield InversionProgress(done=done, total=iterations, image=image, iterations_run=done)
    yield (np.asarray(state.x[0][crop], dtype=np.float64), covered, float(state.bit_consistency[0]),
           int(state.iteration), settings)


def _joint(features, patterns, iterations, sparsity, flip_rate):
    height, width = features.image_shape
    if not patterns:
        yield np.zeros((height, width)), np.zeros((height, width), dtype=bool), None, 0, None
        return
    stencils = _pyramid_stencils(patterns)
    yield InversionProgress(done=0, total=iterations, iterations_run=0)  # each stage of the set-up: a point to stop
    operator = _pyramid_operator(features, patterns, stencils)
    if operator is not None:
        yield InversionProgress(done=0, total=iterations, iterations_run=0)
        yield from _solve_joint(operator, features.bits(), iterations, flip_rate,
                                _covered(features.image_shape, patterns))
        return
    mapped = [level0_pattern(kp) for kp in patterns]  # level-0 keypoints keep shared patterns shared
    level0 = [pattern for pattern, _ in mapped]
    origins = np.array([origin for _, origin in mapped], dtype=np.int64).reshape(-1, 2)
    sizes = np.array([p.patch_size for p in level0], dtype=np.int64)
    top, left = max(0, -int(origins[:, 0].min())), max(0, -int(origins[:, 1].min()))
    bottom = max(0, int((origins[:, 0] + sizes).max()) - height)
    right = max(0, int((origins[:, 1] + sizes).max()) - width)
    shape = (height + top + bottom, width + left + right)
    crop = (slice(top, top + height), slice(left, left + width))
    if flip_rate:  # the flip-aware likelihood on the joint operator of the level-0 patterns
        sites = origins + [top, left]
        covered = coverage(shape, sites, sizes)[crop] > 0
        yield from _solve_joint(JointOperator(shape, sites, level0), features.bits(), iterations, flip_rate,
                                covered, crop)
        return
    for progress in iter_reconstruct_image(pack_bits(features.bits()), origins + [top, left], level0,
                                           shape=shape, mode="joint", iterations=iterations, sparsity=sparsity):
        if progress.result is None:
            estimate = None if progress.estimate is None else np.clip(progress.estimate[crop], 0.0, 1.0)
            yield InversionProgress(done=progress.done, total=progress.total, image=estimate,
                                    iterations_run=progress.done)  # the joint solver reports iterations done
            continue
        result = progress.result
        yield (result.image[crop], result.covered[crop], result.solver_bit_consistency, result.iterations_run,
               result.params.get("solver_settings"))

