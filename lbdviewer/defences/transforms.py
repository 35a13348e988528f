r"""Defences: pure functions ``FeatureSet -> FeatureSet`` that an app can apply before it uploads features.

Each returns new features and appends what it did to ``params["defences"]``
(a list of records, oldest first: ``kind``, its strength parameter, what it
kept, the seed), so a defended feature file says how it was defended:

:func:`randomized_response` (``rr``, strength :math:`\varepsilon`)
    every bit is flipped independently with probability
    :math:`p = 1 / (1 + e^{\varepsilon})`: :math:`\varepsilon`-local
    differential privacy for each bit (Warner's randomized response; a
    descriptor of :math:`M` bits is :math:`M\varepsilon`-LDP by composition),
    as LDP-Feat (Pittaluga & Zhuang 2023) does for float descriptors.
:func:`keep_bits` (``keep-bits``, the share kept)
    only some bit positions are released, the same for every keypoint and
    every device (a system-wide seed), so released descriptors still match;
    ``params["bit_positions"]`` names them.
:func:`keep_keypoints` (``keep-keypoints``, the share kept)
    a random subset of the keypoints.
:func:`keep_matchable_keypoints` (``keep-keypoints-aware``, the share kept)
    a subset chosen for utility and privacy, in the spirit of Dangwal et al.
    (2021): keypoints in lines of text (:func:`lbdviewer.defences.text_regions.text_mask`
    of the image, when given) are dropped, and of the rest those that match
    best are kept: the strongest detector responses whose descriptors are
    most distinct from the others of the image (an ambiguous descriptor fails
    the matcher's ratio or cross check, and repeated strokes of letters are
    ambiguous).
:func:`quantize_coordinates` (``quantize``, the cell side in pixels)
    each keypoint moves to the centre of its cell of a square grid.
:func:`jitter_coordinates` (``jitter``, sigma in pixels)
    Gaussian noise is added to each keypoint's position.

:class:`Defence` names one of them and a strength (as the command line
writes it, :func:`parse_defences`) and applies it.

References
----------
Dangwal, D. et al. (2021). Analysis and mitigations of reverse engineering
attacks on local feature descriptors. BMVC.
Pittaluga, F. and Zhuang, B. (2023). LDP-Feat: image features with local
differential privacy. ICCV.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from lbdviewer._validation import check_fraction, check_positive
from lbdviewer.bits import pack_bits
from lbdviewer.features.keypoints import Keypoints
from lbdviewer.patterns.base import seed_for_metadata

__all__ = ["DEFENCES", "STRENGTH_NAMES", "Defence", "applied_defences", "flip_probability", "jitter_coordinates",
           "keep_bits", "keep_keypoints", "keep_matchable_keypoints", "parse_defences", "quantize_coordinates",
           "randomized_response"]

#: The defences, by the name the command line and the records use.
DEFENCES = ("rr", "keep-bits", "keep-keypoints", "keep-keypoints-aware", "quantize", "jitter")
#: The name of each defence's strength parameter.
STRENGTH_NAMES = {"rr": "eps", "keep-bits": "fraction", "keep-keypoints": "fraction",
                  "keep-keypoints-aware": "fraction", "quantize": "step", "jitter": "sigma"}
#: Cells a side of the grid over which :func:`keep_matchable_keypoints` spreads the keypoints it keeps.
SPREAD_CELLS = 4
#: +1 where a larger strength hides more (pixels of noise), -1 where a smaller one does (epsilon, shares kept).
HIDES_MORE = {"rr": -1, "keep-bits": -1, "keep-keypoints": -1, "keep-keypoints-aware": -1, "quantize": 1,
              "jitter": 1}


def flip_probability(epsilon):
    r"""The flip probability of :math:`\varepsilon`-LDP randomized response on one bit, :math:`1 / (1 + e^\varepsilon)`.

    Examples
    --------
    >>> round(flip_probability(2.0), 4), flip_probability(0.0)
    (0.1192, 0.5)
    """
    epsilon = float(epsilon)
    if not epsilon >= 0 or not math.isfinite(epsilon):
        raise ValueError(f"epsilon must be a finite number >= 0, got {epsilon!r}")
    return 1.0 / (1.0 + math.exp(epsilon))


def applied_defences(features):
    """The defences recorded in ``features`` (``params["defences"]``), oldest first; ``[]`` for none."""
    return list(features.params.get("defences", []))


def _with(features, record, **changes):
    """``features`` with ``changes`` and ``record`` appended to its defences."""
    params = {**features.params, **changes.pop("params", {}),
              "defences": applied_defences(features) + [record]}
    return replace(features, params=params, **changes)


def _seeded(record, rng):
    seed = seed_for_metadata(rng)
    return record if seed is None else {**record, "seed": seed}


def randomized_response(features, epsilon, *, rng=0):
    r"""Flip every bit independently with probability :math:`1 / (1 + e^{\varepsilon})`.

    Parameters
    ----------
    features : FeatureSet
    epsilon : float
        Privacy budget of one bit, :math:`\ge 0` (0: every bit is a coin toss).
    rng : int or numpy.random.Generator

    Returns
    -------
    FeatureSet
        Same keypoints; its record holds ``eps`` and ``flip_rate``.

    Notes
    -----
    For either value of the true bit :math:`b`, the released bit equals
    :math:`b` with probability :math:`e^\varepsilon / (1 + e^\varepsilon)`,
    so the likelihood ratio of the two values of :math:`b` given what is
    released is at most :math:`e^\varepsilon`.

    Examples
    --------
    >>> from lbdviewer.features.keypoints import FeatureSet
    >>> fs = FeatureSet("orb", {}, (64, 64), Keypoints([32.0] * 50, [32.0] * 50), np.zeros((50, 32), np.uint8),
    ...                 256, "little")
    >>> defended = randomized_response(fs, 2.0, rng=0)
    >>> round(float((defended.bits() > 0).mean()), 2), defended.params["defences"][0]["kind"]
    (0.12, 'rr')
    """
    p = flip_probability(epsilon)
    bits = features.bits()
    flips = np.random.default_rng(rng).random(bits.shape) < p
    released = np.where(flips, -bits, bits)
    packed = pack_bits(released, bitorder=features.bitorder).reshape(len(bits), -1)
    record = _seeded({"kind": "rr", "eps": float(epsilon), "flip_rate": p}, rng)
    return _with(features, record, descriptors=packed)


def keep_bits(features, fraction, *, rng=0):
    """Release only a share of the bit positions, the same ones for every keypoint.

    Parameters
    ----------
    features : FeatureSet
    fraction : float
        Share of the positions kept, in (0, 1] (at least one).
    rng : int or numpy.random.Generator
        Draws the positions: every device must use the same seed, or the
        descriptors no longer compare.

    Returns
    -------
    FeatureSet
        ``n_bits`` the positions kept, named (in the full descriptor's
        numbering) by ``params["bit_positions"]``, in increasing order.

    Examples
    --------
    >>> from lbdviewer.features.keypoints import FeatureSet
    >>> fs = FeatureSet("orb", {}, (64, 64), Keypoints([32.0], [32.0]), np.full((1, 32), 255, np.uint8),
    ...                 256, "little")
    >>> half = keep_bits(fs, 0.5, rng=1)
    >>> half.n_bits, len(half.bit_positions()), bool(np.all(np.diff(half.bit_positions()) > 0))
    (128, 128, True)
    """
    fraction = check_fraction("fraction", fraction)
    kept = max(1, int(round(fraction * features.n_bits)))
    chosen = np.sort(np.random.default_rng(rng).choice(features.n_bits, size=kept, replace=False))
    before = features.bit_positions()
    positions = chosen if before is None else before[chosen]
    packed = pack_bits(features.bits()[:, chosen], bitorder=features.bitorder).reshape(len(features.keypoints), -1)
    record = _seeded({"kind": "keep-bits", "fraction": fraction, "kept": kept, "of": int(features.n_bits)}, rng)
    return _with(features, record, n_bits=kept, descriptors=packed,
                 params={"bit_positions": [int(v) for v in positions]})


def _kept_count(fraction, total):
    return min(total, max(1, int(round(fraction * total)))) if total else 0


def keep_keypoints(features, fraction, *, rng=0):
    """Release a random share of the keypoints (at least one).

    Examples
    --------
    >>> from lbdviewer.features.keypoints import FeatureSet
    >>> fs = FeatureSet("orb", {}, (64, 64), Keypoints(np.arange(40.0), np.full(40, 9.0)),
    ...                 np.zeros((40, 32), np.uint8), 256, "little")
    >>> kept = keep_keypoints(fs, 0.25, rng=0)
    >>> len(kept.keypoints), bool(np.all(np.diff(kept.keypoints.x) > 0))
    (10, True)
    """
    fraction = check_fraction("fraction", fraction)
    total = len(features.keypoints)
    kept = _kept_count(fraction, total)
    index = np.sort(np.random.default_rng(rng).choice(total, size=kept, replace=False))
    record = _seeded({"kind": "keep-keypoints", "fraction": fraction, "kept": kept, "of": total}, rng)
    return _with(features.take(index), record)


def distinctiveness(features):
    """Hamming distance from each keypoint's descriptor to the nearest other one of ``features``, in bits.

    Examples
    --------
    >>> from lbdviewer.features.keypoints import FeatureSet
    >>> desc = np.array([[0] * 32, [1] + [0] * 31, [255] * 32], np.uint8)
    >>> fs = FeatureSet("orb", {}, (64, 64), Keypoints([1.0, 2.0, 3.0], [1.0, 1.0, 1.0]), desc, 256, "little")
    >>> distinctiveness(fs).tolist()
    [1, 1, 255]
    """
    import cv2

    desc = np.ascontiguousarray(features.descriptors)
    if len(desc) < 2:
        return np.full(len(desc), features.n_bits, dtype=np.int64)
    matches = cv2.BFMatcher(cv2.NORM_HAMMING).knnMatch(desc, desc, k=2)
    out = np.empty(len(desc), dtype=np.int64)
    for row, pair in enumerate(matches):
        others = [m.distance for m in pair if m.trainIdx != row]
        out[row] = int(others[0]) if others else int(pair[-1].distance)
    return out


def keep_matchable_keypoints(features, fraction, *, image=None):
    """Release the share of keypoints that match best, none in lines of text (deterministic).

    Parameters
    ----------
    features : FeatureSet
    fraction : float
        Share of the keypoints kept, in (0, 1]; fewer when the text regions
        hold more than the rest.
    image : ndarray, shape (H, W), optional
        The image the features describe (the device has it): keypoints in
        its :func:`~lbdviewer.defences.text_regions.text_mask` are dropped
        first. Without it no text region is known.

    Returns
    -------
    FeatureSet
        Its record says how many keypoints lay in text (``in_text``, None
        without an image).

    Notes
    -----
    The rest are ranked by the sum of two ranks: detector response (strong
    corners are found again in the other image) and
    :func:`distinctiveness` (a descriptor close to another of the same image
    is ambiguous for the matcher); ties keep the earlier keypoint. They are
    then taken in turn from the cells of a :data:`SPREAD_CELLS` x
    :data:`SPREAD_CELLS` grid, the best of each cell first, so the kept
    keypoints stay spread over the image (homographies need that).

    Examples
    --------
    >>> from lbdviewer.features.keypoints import FeatureSet
    >>> desc = np.array([[0] * 32, [1] + [0] * 31, [255] * 32, [15] * 32], np.uint8)
    >>> kp = Keypoints([5.0, 6.0, 7.0, 8.0], [5.0] * 4, response=[0.9, 0.1, 0.5, 0.2])
    >>> fs = FeatureSet("orb", {}, (64, 64), kp, desc, 256, "little")
    >>> keep_matchable_keypoints(fs, 0.5).keypoints.x.tolist()
    [5.0, 7.0]
    """
    from scipy.stats import rankdata

    from lbdviewer.defences.text_regions import text_mask

    fraction = check_fraction("fraction", fraction)
    total = len(features.keypoints)
    candidates = np.arange(total)
    in_text = None
    if image is not None:
        image = np.asarray(image)
        if image.shape != tuple(features.image_shape):
            raise ValueError(f"image must have the features' shape {features.image_shape}, got {image.shape}")
        mask = text_mask(image)
        rows = np.clip(np.rint(features.keypoints.y).astype(np.int64), 0, image.shape[0] - 1)
        cols = np.clip(np.rint(features.keypoints.x).astype(np.int64), 0, image.shape[1] - 1)
        outside = ~mask[rows, cols]
        in_text = int(total - outside.sum())
        candidates = candidates[outside]
    kept = min(_kept_count(fraction, total), len(candidates))
    score = (rankdata(features.keypoints.response[candidates])
             + rankdata(distinctiveness(features.take(candidates))))
    order = candidates[np.argsort(-score, kind="stable")]
    best = order[_spread(features.keypoints.take(order), features.image_shape)[:kept]]
    record = {"kind": "keep-keypoints-aware", "fraction": fraction, "kept": int(kept), "of": total,
              "in_text": in_text}
    return _with(features.take(np.sort(best)), record)


def _spread(keypoints, shape, cells=SPREAD_CELLS):
    """An order of ``keypoints`` (best first) that takes the best of every grid cell, then the second, ...

    A homography estimated from keypoints bunched in one part of the image
    is poorly fixed elsewhere; taking them in turn from ``cells`` x ``cells``
    cells keeps them spread as the detector spread them.

    Examples
    --------
    >>> _spread(Keypoints([1.0, 2.0, 60.0], [1.0, 1.0, 60.0]), (64, 64), cells=2).tolist()
    [0, 2, 1]
    """
    height, width = shape
    cell = (np.minimum(keypoints.y * cells // height, cells - 1) * cells
            + np.minimum(keypoints.x * cells // width, cells - 1)).astype(np.int64)
    turn = np.zeros(len(cell), dtype=np.int64)  # how many better keypoints share each one's cell
    seen = {}
    for row, value in enumerate(cell):
        turn[row] = seen.get(value, 0)
        seen[value] = turn[row] + 1
    return np.lexsort((np.arange(len(cell)), turn))


def _moved(features, x, y):
    height, width = features.image_shape
    kp = features.keypoints
    return Keypoints(np.clip(x, 0, width - 1), np.clip(y, 0, height - 1), kp.size, kp.angle, kp.octave, kp.response)


def quantize_coordinates(features, step):
    """Move each keypoint to the centre of its cell of a grid of ``step``-pixel squares (kept in the image).

    Examples
    --------
    >>> from lbdviewer.features.keypoints import FeatureSet
    >>> fs = FeatureSet("orb", {}, (64, 64), Keypoints([9.2, 30.0], [0.4, 63.0]), np.zeros((2, 32), np.uint8),
    ...                 256, "little")
    >>> q = quantize_coordinates(fs, 4)
    >>> q.keypoints.x.tolist(), q.keypoints.y.tolist()
    ([9.5, 29.5], [1.5, 61.5])
    """
    step = check_positive("step", step)
    kp = features.keypoints
    # pixel centres at integers: cell i holds the coordinates from i step - 1/2 to (i + 1) step - 1/2
    x, y = ((np.floor((v + 0.5) / step) + 0.5) * step - 0.5 for v in (kp.x, kp.y))
    return _with(features, {"kind": "quantize", "step": step}, keypoints=_moved(features, x, y))


def jitter_coordinates(features, sigma, *, rng=0):
    """Add Gaussian noise of ``sigma`` pixels to each keypoint coordinate (kept in the image).

    Examples
    --------
    >>> from lbdviewer.features.keypoints import FeatureSet
    >>> fs = FeatureSet("orb", {}, (640, 640), Keypoints(np.full(400, 320.0), np.full(400, 320.0)),
    ...                 np.zeros((400, 32), np.uint8), 256, "little")
    >>> moved = jitter_coordinates(fs, 2.0, rng=0).keypoints
    >>> round(float(np.std(moved.x - 320.0)), 1), round(float(np.std(moved.y - 320.0)), 1)
    (2.0, 2.0)
    """
    sigma = check_positive("sigma", sigma)
    generator = np.random.default_rng(rng)
    kp = features.keypoints
    noise = generator.normal(0.0, sigma, size=(2, len(kp)))
    record = _seeded({"kind": "jitter", "sigma": sigma}, rng)
    return _with(features, record, keypoints=_moved(features, kp.x + noise[0], kp.y + noise[1]))


@dataclass(frozen=True)
class Defence:
    """One defence and its strength, as ``lbdviewer defend --defence`` names them.

    Parameters
    ----------
    kind : str
        One of :data:`DEFENCES`.
    strength : float
        Its parameter (:data:`STRENGTH_NAMES`): epsilon, a share kept, a cell
        side or a sigma in pixels.
    seed : int
        The system-wide seed of ``keep-bits`` (the positions every device
        keeps); the other defences draw from the ``rng`` of :meth:`apply`,
        one per device.

    Examples
    --------
    >>> Defence("rr", 2).label, Defence("keep-bits", 0.5).label
    ('rr eps=2', 'keep-bits fraction=0.5')
    """

    kind: str
    strength: float
    seed: int = 0

    def __post_init__(self):
        if self.kind not in DEFENCES:
            raise ValueError(f"defence must be one of {', '.join(DEFENCES)}, got {self.kind!r}")
        strength = float(self.strength)
        if self.kind == "rr":
            flip_probability(strength)
        elif self.kind in ("quantize", "jitter"):
            check_positive(STRENGTH_NAMES[self.kind], strength)
        else:
            check_fraction(STRENGTH_NAMES[self.kind], strength)
        object.__setattr__(self, "strength", strength)

    @property
    def label(self):
        """``"kind name=value"``."""
        return f"{self.kind} {STRENGTH_NAMES[self.kind]}={self.strength:g}"

    def apply(self, features, *, rng=0, image=None):
        """The defended features (``image``: used by ``keep-keypoints-aware`` only)."""
        if self.kind == "rr":
            return randomized_response(features, self.strength, rng=rng)
        if self.kind == "keep-bits":
            return keep_bits(features, self.strength, rng=self.seed)
        if self.kind == "keep-keypoints":
            return keep_keypoints(features, self.strength, rng=rng)
        if self.kind == "keep-keypoints-aware":
            return keep_matchable_keypoints(features, self.strength, image=image)
        if self.kind == "quantize":
            return quantize_coordinates(features, self.strength)
        return jitter_coordinates(features, self.strength, rng=rng)


def parse_defences(text):
    """The defences of one ``--defence`` value: ``KIND:VALUE,VALUE,...`` or ``KIND:NAME=VALUE,...``.

    Raises
    ------
    ValueError
        Naming the value, for an unknown kind, a wrong parameter name or a
        strength out of range.

    Examples
    --------
    >>> [d.label for d in parse_defences("rr:eps=0.5,2")]
    ['rr eps=0.5', 'rr eps=2']
    >>> [d.strength for d in parse_defences("jitter:1,4")]
    [1.0, 4.0]
    """
    kind, sep, values = str(text).partition(":")
    kind = kind.strip()
    if not sep or kind not in DEFENCES:
        raise ValueError(f"--defence must be KIND:VALUES with KIND one of {', '.join(DEFENCES)} "
                         f"(e.g. rr:eps=0.5,1,2), got {text!r}")
    name, equals, rest = values.partition("=")
    if equals:
        if name.strip() != STRENGTH_NAMES[kind]:
            raise ValueError(f"--defence {kind} takes {STRENGTH_NAMES[kind]}=VALUES, got {text!r}")
        values = rest
    items = [item.strip() for item in values.split(",") if item.strip()]
    if not items:
        raise ValueError(f"--defence {kind} needs at least one value, got {text!r}")
    out = []
    for item in items:
        try:
            strength = float(item)
        except ValueError:
            raise ValueError(f"--defence {kind}: {item!r} is not a number (in {text!r})") from None
        try:
            out.append(Defence(kind, strength))
        except ValueError as error:
            raise ValueError(f"--defence {text!r}: {error}") from None
    return list(dict.fromkeys(out))
