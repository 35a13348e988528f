r"""Two attackers of defended features: one who knows the defence, one who ignores it.

Both rebuild an image from the released features alone
(:func:`lbdviewer.features.invert.invert_features`). What the defence record
(``params["defences"]``, :mod:`lbdviewer.defences.transforms`) tells them:

``naive``
    nothing: it inverts the features as if no defence had been applied;
    released bit positions (``keep-bits``) are read as the first bits of the
    descriptor.
``aware``
    everything a defended file says about itself (Kerckhoffs' principle):

    - randomized response: each bit was flipped with probability :math:`p`,
      so the bits are noisy measurements and the solve minimises their
      flip-aware likelihood (``flip_rate``); two rounds of randomized response
      compose to :math:`p_1 + p_2 - 2 p_1 p_2`;
    - a subset of bit positions: each released bit is inverted as the test it
      is (``params["bit_positions"]``);
    - coordinates moved by jitter of :math:`\sigma` pixels or to the centres
      of a grid of cells: after a first inversion, each keypoint moves to the
      integer shift (within :math:`2\sigma` or within its cell) whose bits,
      recomputed by the library model on that first estimate, agree best with
      the released ones, weighed by the prior of the shift (:func:`refine_positions`);
      the second inversion uses the refined positions.

The higher of the two leakages is the defence's leakage.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from lbdviewer._validation import check_choice
from lbdviewer.defences.transforms import applied_defences
from lbdviewer.features.invert import iter_invert_features, weighs_flipped_bits
from lbdviewer.features.progress import InversionProgress
from lbdviewer.features.keypoints import Keypoints
from lbdviewer.libraries.registry import get_model

__all__ = ["ATTACKERS", "attack", "attack_steps", "known_flip_rate", "naive_view", "refine_positions"]

ATTACKERS = ("aware", "naive")
#: Agreement assumed at the right shift is clipped to this range (the estimate is never perfect, never chance).
AGREEMENT_RANGE = (0.55, 0.95)


def naive_view(features):
    """``features`` as the naive attacker reads them: no defence record; released bits taken as the first ones.

    Examples
    --------
    >>> from lbdviewer.features.keypoints import FeatureSet
    >>> fs = FeatureSet("orb", {"bit_positions": [5, 9], "defences": [{"kind": "keep-bits"}]}, (64, 64),
    ...                 Keypoints([32.0], [32.0]), np.zeros((1, 1), np.uint8), 2, "little")
    >>> naive_view(fs).params
    {'bit_positions': [0, 1]}
    """
    params = features.model_params()
    if features.bit_positions() is not None:
        params["bit_positions"] = list(range(features.n_bits))
    return replace(features, params=params)


def known_flip_rate(features):
    """The probability that a released bit differs from the library's, from the randomized responses recorded.

    Examples
    --------
    >>> from lbdviewer.features.keypoints import FeatureSet
    >>> fs = FeatureSet("orb", {"defences": [{"kind": "rr", "flip_rate": 0.1}, {"kind": "rr", "flip_rate": 0.2}]},
    ...                 (64, 64), Keypoints([32.0], [32.0]), np.zeros((1, 32), np.uint8), 256, "little")
    >>> round(known_flip_rate(fs), 2)
    0.26
    """
    p = 0.0
    for record in applied_defences(features):
        if record.get("kind") == "rr":
            q = float(record["flip_rate"])
            p = p + q - 2.0 * p * q
    return p


def _shifts(records):
    r"""Candidate integer shifts ``(dx, dy)`` and their log-prior, from the coordinate defences recorded, or None.

    Within :math:`2\sigma` of the released position for jitter (a disc, the
    Gaussian's log-density as prior; stride :math:`\sigma / 2` rounded), within
    the cell for quantization (a square, a uniform prior).

    Examples
    --------
    >>> dx, dy, prior = _shifts([{"kind": "quantize", "step": 4.0}])
    >>> len(dx), float(dx.max()), float(prior.max())
    (9, 1.0, 0.0)
    """
    sigma = math.sqrt(sum(float(r["sigma"]) ** 2 for r in records if r.get("kind") == "jitter"))
    half_cell = sum((float(r["step"]) - 1.0) / 2.0 for r in records if r.get("kind") == "quantize")
    if not sigma and not half_cell:
        return None
    reach = 2.0 * sigma + half_cell
    offsets = np.arange(-math.floor(reach), math.floor(reach) + 1, max(1, int(round(sigma / 2.0))))
    dx, dy = (v.ravel().astype(np.float64) for v in np.meshgrid(offsets, offsets))
    inside = np.hypot(dx, dy) <= reach if not half_cell else np.ones(dx.shape, dtype=bool)
    dx, dy = dx[inside], dy[inside]
    log_prior = -(dx * dx + dy * dy) / (2.0 * sigma * sigma) if sigma else np.zeros(len(dx))
    return dx, dy, log_prior


def refine_positions(features, estimate):
    r"""Keypoints moved back toward where the library described them, given the coordinate defences recorded.

    Parameters
    ----------
    features : FeatureSet
        Released features whose record names ``jitter`` or ``quantize``.
    estimate : ndarray, shape (H, W)
        A first reconstruction from them.

    Returns
    -------
    FeatureSet
        Same bits, each keypoint at the shift :math:`d` that maximises
        :math:`A(d) \log\frac{q}{1 - q} + \log \pi(d)`, with :math:`A(d)` the
        bits the library model computes on ``estimate`` at the shifted
        keypoint that agree with the released ones, :math:`q` the agreement
        at no shift averaged over the keypoints (clipped to
        :data:`AGREEMENT_RANGE`) and :math:`\pi` the prior of the shift
        (Gaussian of the jitter's sigma; uniform over a cell). Features
        without coordinate defences come back unchanged.
    """
    candidates = _shifts(applied_defences(features))
    if candidates is None or not len(features.keypoints):
        return features
    dx, dy, log_prior = candidates
    model = get_model(features.descriptor, **features.model_params())
    positions = features.bit_positions()
    released = features.bits()
    height, width = features.image_shape
    kp = features.keypoints

    def agreements(shift_x, shift_y):
        moved = Keypoints(np.clip(kp.x + shift_x, 0, width - 1), np.clip(kp.y + shift_y, 0, height - 1),
                          kp.size, kp.angle, kp.octave, kp.response)
        bits = model.model_bits(estimate, moved)
        bits = bits if positions is None else bits[:, positions]
        return np.count_nonzero(bits == released, axis=1)

    at_zero = agreements(0.0, 0.0)
    q = float(np.clip(at_zero.mean() / features.n_bits, *AGREEMENT_RANGE))
    weight = math.log(q / (1.0 - q))
    best = at_zero * weight  # the zero shift is always a candidate with the highest prior
    best_x, best_y = np.zeros(len(kp)), np.zeros(len(kp))
    for shift_x, shift_y, prior in zip(dx, dy, log_prior):
        if shift_x == 0 and shift_y == 0:
            continue
        score = agreements(shift_x, shift_y) * weight + prior
        better = score > best
        best[better], best_x[better], best_y[better] = score[better], shift_x, shift_y
    moved = Keypoints(np.clip(kp.x + best_x, 0, width - 1), np.clip(kp.y + best_y, 0, height - 1), kp.size,
                      kp.angle, kp.octave, kp.response)
    return replace(features, keypoints=moved)


def attack_steps(features, attacker, *, iterations=None):
    """:func:`attack`, yielding the inversions' :class:`~lbdviewer.features.progress.InversionProgress` first.

    Yields
    ------
    InversionProgress or tuple
        The reports of each inversion (a point where a caller can stop), then
        ``(result, notes)`` as :func:`attack` returns them.
    """
    check_choice("attacker", attacker, ATTACKERS)
    if attacker == "naive":
        view = naive_view(features)
        notes = {"flip_rate": 0.0, "bit_positions": "assumed first" if view.bit_positions() is not None else None,
                 "refined": None}
        result = yield from _inverted(view, iterations, 0.0)
        yield result, notes
        return
    flip_rate = known_flip_rate(features)
    notes = {"flip_rate": flip_rate, "bit_positions": "known" if features.bit_positions() is not None else None,
             "refined": None}
    if flip_rate and not weighs_flipped_bits(features):  # no likelihood to weigh its bits
        notes["flip_rate_unused"], notes["flip_rate"], flip_rate = flip_rate, 0.0, 0.0  # the record: what ran
    result = yield from _inverted(features, iterations, flip_rate)
    if _shifts(applied_defences(features)) is not None:
        refined = refine_positions(features, result.image)
        moves = np.hypot(refined.keypoints.x - features.keypoints.x, refined.keypoints.y - features.keypoints.y)
        notes["refined"] = {"moved": int(np.count_nonzero(moves)), "mean_move": float(moves.mean())}
        result = yield from _inverted(refined, iterations, flip_rate)
    yield result, notes


def _inverted(features, iterations, flip_rate):
    """Yield the inversion's progress; return its result."""
    for progress in iter_invert_features(features, iterations=iterations, flip_rate=flip_rate):
        if progress.result is not None:
            return progress.result
        yield progress
    raise AssertionError("iter_invert_features ended without a result")


def attack(features, attacker, *, iterations=None):
    """Rebuild the image ``features`` describe as the ``attacker`` would (see the module notes).

    Parameters
    ----------
    features : FeatureSet
        Released (defended or not) features.
    attacker : {"aware", "naive"}
    iterations : int, optional
        Solver iterations of each inversion (default: the solver's).

    Returns
    -------
    result : ImageResult
        Of the last inversion.
    notes : dict
        What the attacker used: ``flip_rate``, ``bit_positions`` (known or
        assumed), ``refined`` (keypoints moved, their mean move in pixels);
        a flip rate that the inversion cannot weigh (AKAZE's, see
        :func:`~lbdviewer.features.invert.weighs_flipped_bits`) is recorded as
        ``flip_rate_unused``.

    Examples
    --------
    >>> from lbdviewer.io.samples import sample_image
    >>> from lbdviewer.features.extract import extract_features
    >>> from lbdviewer.defences.transforms import randomized_response
    >>> image = sample_image("camera")[100:228, 150:278]
    >>> released = randomized_response(extract_features(image, "orb", n_keypoints=60), 2.0, rng=0)
    >>> result, notes = attack(released, "aware", iterations=10)
    >>> result.image.shape, round(notes["flip_rate"], 3)
    ((128, 128), 0.119)
    """
    for item in attack_steps(features, attacker, iterations=iterations):
        if not isinstance(item, InversionProgress):
            return item
    raise AssertionError("attack_steps ended without a result")
