"""What a feature file does not say, inferred: the image size and the descriptor that wrote the bits.

A plain OpenCV file (:mod:`lbdviewer.features.filestorage.reader`) holds
keypoints and a matrix of bytes; which library wrote them, and for how large
an image, is often left out. :func:`settle` fills both in, and records how
in :attr:`lbdviewer.features.keypoints.FeatureSet.provenance`:

**Image size.** Given by the caller, else from the file (a ``cv::Size``
node), else from the keypoints' extent: detectors keep the same border on
every side, so the image is taken to reach as far past the last keypoint as
the first lies from 0, up to :data:`EXTENT_BORDER` pixels (ORB's edge
threshold), with a note saying so.

**Descriptor.** Given by the caller or named by the file, else inferred
(``"auto"``):

1. the byte width leaves the descriptors of that many bytes
   (:data:`CANDIDATES`; scikit-image's BRIEF depends on the writer's random
   seed and is never guessed);
2. the keypoints rule out what cannot have described them
   (:func:`law_exclusions`): ORB's detector writes ``size = 31 * 1.2^octave``
   and ``class_id = -1``; AKAZE writes its level in ``class_id >= 0``;
3. where several candidates remain, a sample of :data:`SAMPLE_KEYPOINTS`
   keypoints is inverted with each (:func:`candidate_agreements`) and the
   real library describes each reconstruction at those keypoints: the share
   of the file's bits it reproduces is high (0.89-0.98 measured) for the
   descriptor that wrote them and near chance (0.5, at most 0.56 measured)
   for any other, whose tests the bits do not fit. Candidates are scored
   cheapest calibration first (:data:`CANDIDATES`) and scoring stops once
   one explains the bits and another scored does not (:func:`decided`): a
   BRISK file never calibrates BEBLID or TEBLID. The best is kept; the
   margin to the second scored and the candidates left unscored are
   recorded.

References
----------
The agreement is :func:`lbdviewer.features.consistency.library_bit_consistency`.
"""

from __future__ import annotations

import math

import numpy as np

from lbdviewer.features.consistency import library_bit_consistency
from lbdviewer.features.keypoints import FeatureSet, model_params
from lbdviewer.io.limits import check_pixels
from lbdviewer.libraries.registry import DESCRIPTORS, get_model

__all__ = ["AUTO", "CANDIDATES", "CHANCE_AGREEMENT", "DECISIVE_AGREEMENT", "SAMPLE_KEYPOINTS", "agreement_check",
           "candidate_agreements", "candidates_for", "decided", "extent_shape", "label", "law_exclusions", "settle"]

#: The ``descriptor`` value that asks for inference.
AUTO = "auto"
#: Descriptors (with the parameters that set their width) an inference may choose, in the order scored: cheapest
#: first-use calibration first (CPU seconds on a fresh cache: BRISK 0.4, FREAK 0.3, ORB 1.3, BRIEF 2.5-5.6,
#: BEBLID 5.2 / 10.2, TEBLID 7.3 / 14.9 for 256 / 512 bits; AKAZE needs none and is alone at 61 bytes).
CANDIDATES = (("orb", {}), ("brisk", {}), ("opencv-freak", {}), ("akaze", {}), ("opencv-brief", {"n_bytes": 16}),
              ("opencv-brief", {"n_bytes": 32}), ("opencv-brief", {"n_bytes": 64}), ("beblid", {"n_bits": 256}),
              ("teblid", {"n_bits": 256}), ("beblid", {"n_bits": 512}), ("teblid", {"n_bits": 512}))
#: Keypoints inverted per candidate when several remain.
SAMPLE_KEYPOINTS = 48
#: Iterations of each candidate's inversion.
SAMPLE_ITERATIONS = 40
#: Below this bit agreement an inversion explains the bits no better than chance would (0.5) by much.
CHANCE_AGREEMENT = 0.6
#: A sample agreement this high says the candidate wrote the bits (0.89-0.98 measured for the writer of each
#: modelled descriptor's file, at most 0.56 for any other candidate).
DECISIVE_AGREEMENT = 0.75
#: Most pixels the image is taken to extend past the last keypoint when its size is not given.
EXTENT_BORDER = 31
_ORB = {"patch_size": 31.0, "scale_factor": 1.2, "n_levels": 8}


def _width(name, params):
    return (get_model(name, **params).n_bits + 7) // 8


def candidates_for(n_bytes):
    """The ``(name, params)`` of :data:`CANDIDATES` whose descriptors have ``n_bytes`` bytes.

    Examples
    --------
    >>> [name for name, _ in candidates_for(61)]
    ['akaze']
    >>> candidates_for(16)
    [('opencv-brief', {'n_bytes': 16})]
    """
    return [(name, dict(params)) for name, params in CANDIDATES if _width(name, params) == n_bytes]


def label(name, params):
    """A candidate's name with the parameter that sets its width, when it has one.

    Examples
    --------
    >>> label("beblid", {"n_bits": 256}), label("orb", {})
    ('beblid-256', 'orb')
    """
    width = params.get("n_bits", params.get("n_bytes"))
    return name if width is None else f"{name}-{width}"


def law_exclusions(keypoints, class_id):
    """The descriptors the keypoints rule out, with the reason: ``{name: reason}``.

    Examples
    --------
    >>> from lbdviewer.features.keypoints import Keypoints
    >>> kp = Keypoints([10.0, 20.0], [10.0, 20.0], [31.0, 37.2], octave=[0, 1])
    >>> sorted(law_exclusions(kp, np.array([-1.0, -1.0])))
    ['akaze']
    >>> sorted(law_exclusions(Keypoints([10.0], [10.0], [12.5]), np.array([-1.0])))
    ['akaze', 'orb']
    """
    out = {}
    if len(keypoints):
        expected = np.float32(_ORB["patch_size"]) * np.float32(_ORB["scale_factor"]) ** keypoints.octave.astype(
            np.float32)
        if (np.any(keypoints.octave >= _ORB["n_levels"])
                or not np.allclose(keypoints.size, expected, rtol=1e-4, atol=0) or np.any(class_id != -1)):
            out["orb"] = "the keypoints do not follow ORB's detector (size 31 x 1.2^octave, class_id -1)"
        if np.any(class_id < 0) or np.any(class_id != np.round(class_id)):
            out["akaze"] = "AKAZE keypoints carry their scale level in class_id (>= 0)"
    return out


def extent_shape(keypoints):
    """``(height, width)`` the keypoints suggest: ``floor(max + min(min, EXTENT_BORDER)) + 1`` each way.

    Examples
    --------
    >>> from lbdviewer.features.keypoints import Keypoints
    >>> extent_shape(Keypoints([16.0, 495.0], [40.0, 300.5]))
    (332, 512)
    """
    if not len(keypoints):
        return (1, 1)
    sides = []
    for values in (keypoints.y, keypoints.x):
        low, high = max(float(values.min()), 0.0), float(values.max())
        sides.append(int(math.floor(high + min(low, EXTENT_BORDER))) + 1)
    return tuple(sides)


def _sample(n, size, rng=0):
    if n <= size:
        return np.arange(n)
    return np.sort(np.random.default_rng(rng).choice(n, size, replace=False))


def decided(agreements):
    """Whether the scores so far settle the choice: one candidate explains the bits and another scored does not.

    True when at least two candidates were scored, the best reaches
    :data:`DECISIVE_AGREEMENT` and the second is below
    :data:`CHANCE_AGREEMENT`. A candidate that did not write the bits stays
    near chance, so the candidates not yet scored (and not yet calibrated)
    cannot explain them better.

    Examples
    --------
    >>> decided([0.92, 0.51]), decided([0.92]), decided([0.92, 0.8]), decided([0.55, float("nan"), 0.5])
    (True, False, False, False)
    """
    ranked = sorted((a for a in agreements if not math.isnan(a)), reverse=True)
    return len(ranked) >= 2 and ranked[0] >= DECISIVE_AGREEMENT and ranked[1] < CHANCE_AGREEMENT


def candidate_agreements(features, candidates, *, sample=SAMPLE_KEYPOINTS, iterations=SAMPLE_ITERATIONS,
                         until_decided=False):
    """How well each candidate descriptor explains the bits of ``features`` on a sample of its keypoints.

    Each candidate's model inverts the sample (joint mode, ``iterations``);
    the real library then describes the reconstruction at those keypoints
    and the share of the file's bits it writes again is the candidate's
    agreement (:func:`lbdviewer.features.consistency.library_bit_consistency`).

    Parameters
    ----------
    features : FeatureSet
        Keypoints, descriptors and image size (its own descriptor is not used).
    candidates : sequence of (str, dict)
        Names and parameters, in the order to score them; each must give
        descriptors of the file's width.
    sample, iterations : int
    until_decided : bool
        Stop as soon as the scores are :func:`decided`: the candidates
        after that are neither calibrated nor scored.

    Returns
    -------
    list of (str, dict, float)
        ``(name, params, agreement)`` of the candidates scored, best first
        (NaN, last, where the library described none of the sample).
    """
    from lbdviewer.features.invert import invert_features  # the solvers load only when a sample is inverted

    index = _sample(len(features.keypoints), sample)
    out = []
    for name, params in candidates:
        model = get_model(name, **params)
        subset = FeatureSet(name, dict(params), features.image_shape, features.keypoints.take(index),
                            features.descriptors[index], model.n_bits, model.bitorder)
        result = invert_features(subset, iterations=iterations)
        agreement, _ = library_bit_consistency(subset, result.image)
        out.append((name, dict(params), agreement))
        if until_decided and decided([a for _, _, a in out]):
            break
    return sorted(out, key=lambda item: -item[2] if not math.isnan(item[2]) else math.inf)


def _choose_descriptor(entry, shape, given):
    """``(name, params, record)`` of the descriptor, from the caller, the file, or inference."""
    where = f"FileStorage file {entry.label}"
    if given not in (None, AUTO) and entry.descriptor is not None and given != entry.descriptor:
        raise ValueError(f"{where} holds {entry.descriptor} descriptors, not {given!r} as given")
    named = entry.descriptor if given in (None, AUTO) else given
    if named is not None:
        if named not in DESCRIPTORS:
            raise ValueError(f"{where}: unknown descriptor {named!r}; expected one of {DESCRIPTORS}")
        params = entry.params
        if params is None:
            params = {}
            if "n_bytes" in get_model(named).params():  # the length a program chose shows in the matrix
                params = {"n_bytes": entry.descriptors.shape[1]}
            elif "n_bits" in get_model(named).params():
                params = {"n_bits": 8 * entry.descriptors.shape[1]}
        source = "given" if given not in (None, AUTO) and entry.descriptor is None else "file"
        return named, params, {"method": source}
    width = entry.descriptors.shape[1]
    fitting = candidates_for(width)
    if not fitting:
        raise ValueError(f"{where}: no modelled descriptor has {width} bytes a row (ORB, BEBLID, TEBLID and BRIEF "
                         "have 32, BRISK, FREAK, BEBLID and TEBLID 64, AKAZE 61, BRIEF 16 or 64): name it "
                         f"(--descriptor, one of {', '.join(DESCRIPTORS)})")
    excluded = law_exclusions(entry.keypoints, entry.class_id)
    remaining = [c for c in fitting if c[0] not in excluded] or fitting
    record = {"method": "only candidate", "candidates": [label(*c) for c in fitting],
              "excluded": {label(*c): excluded[c[0]] for c in fitting if c[0] in excluded and c not in remaining}}
    if len(remaining) == 1:
        name, params = remaining[0]
        return name, params, record
    probe = FeatureSet(remaining[0][0], remaining[0][1], shape, entry.keypoints, entry.descriptors,
                       8 * width, "little")
    scores = candidate_agreements(probe, remaining, until_decided=True)
    best, second = scores[0], scores[1]
    scored = {label(n, p): a for n, p, a in scores}
    record.update(method="sample inversion", sample_keypoints=min(len(entry.keypoints), SAMPLE_KEYPOINTS),
                  agreements=scored, margin=best[2] - second[2],
                  unscored=[label(*c) for c in remaining if label(*c) not in scored])
    return best[0], best[1], record


def settle(entry, *, descriptor=None, image_shape=None, max_pixels=None):
    """The :class:`~lbdviewer.features.keypoints.FeatureSet` of a file entry, what it does not say filled in.

    Parameters
    ----------
    entry : lbdviewer.features.filestorage.reader.FileEntry
    descriptor : str, optional
        The descriptor, or :data:`AUTO`/None to take the file's or infer it
        (see the module notes). A name the file contradicts is an error.
    image_shape : (int, int), optional
        ``(height, width)``; an image size the file contradicts is an error.
    max_pixels : int, optional
        Limit on the image size settled (:func:`lbdviewer.io.limits.check_pixels`),
        checked before any sample is inverted.

    Returns
    -------
    FeatureSet
        With ``provenance``: ``entry``, ``image_size`` (``"file"``,
        ``"given"`` or ``"keypoint extent"``), ``descriptor`` (how it was
        chosen: the candidates, those the keypoints excluded, each scored
        candidate's sample agreement, the margin over the second and those
        left ``unscored`` once the choice was decided) and ``notes``.
    """
    where = f"FileStorage file {entry.label}"
    notes = []
    if image_shape is not None:
        image_shape = tuple(int(v) for v in image_shape)
        if entry.image_shape is not None and image_shape != tuple(entry.image_shape):
            raise ValueError(f"{where} gives the image size {entry.image_shape[1]}x{entry.image_shape[0]}, not "
                             f"{image_shape[1]}x{image_shape[0]} as given (--image-size)")
        shape, size_source = image_shape, "given" if entry.image_shape is None else "file"
    elif entry.image_shape is not None:
        shape, size_source = tuple(entry.image_shape), "file"
    else:
        shape, size_source = extent_shape(entry.keypoints), "keypoint extent"
        notes.append(f"the file does not give the image size: {shape[1]}x{shape[0]} is taken from the keypoints' "
                     "extent (give --image-size WIDTHxHEIGHT if you know it)")
    check_pixels(*shape, where, limit=max_pixels)
    name, params, choice = _choose_descriptor(entry, shape, descriptor)
    if choice["method"] == "sample inversion":
        notes.append(f"the file does not name its descriptor: {label(name, params)} explains a sample of its bits "
                     f"best ({choice['agreements'][label(name, params)]:.2f}, margin {choice['margin']:.2f} over "
                     f"the next); give --descriptor to choose another")
    elif choice["method"] == "only candidate":
        notes.append(f"the file does not name its descriptor: {label(name, params)} is the only one of "
                     f"{entry.descriptors.shape[1]} bytes that fits its keypoints")
    model = get_model(name, **model_params(params))
    n_bits = entry.n_bits if entry.n_bits is not None else model.n_bits
    if entry.descriptors.shape[1] != (n_bits + 7) // 8:
        raise ValueError(f"{where}: descriptors have {entry.descriptors.shape[1]} bytes a row; {name} with "
                         f"{n_bits} bits has {(n_bits + 7) // 8}")
    provenance = {"entry": entry.name, "image_size": size_source, "descriptor": {"name": name, **choice},
                  "notes": notes}
    return FeatureSet(descriptor=name, params=params, image_shape=shape, keypoints=entry.keypoints,
                      descriptors=entry.descriptors, n_bits=n_bits, bitorder=entry.bitorder or model.bitorder,
                      provenance=provenance)


def agreement_check(features, image):
    """Whether ``image`` explains the bits of ``features``; when it does not, which descriptor would.

    The real library describes ``image`` at the file's keypoints
    (:func:`lbdviewer.features.consistency.library_bit_consistency`). Below
    :data:`CHANCE_AGREEMENT` the bits were most likely not written by
    ``features.descriptor`` (a wrong name reconstructs noise and agrees at
    chance, 0.5): the named descriptor, then every candidate of the file's
    width, is scored on a sample (:func:`candidate_agreements`, until
    :func:`decided`) and those that explain it better than the named one
    are listed.

    Returns
    -------
    dict
        ``bit_agreement``, ``bit_agreement_min_site``, ``threshold``,
        ``warning`` (None, or a sentence for the user) and ``likelier``
        (``{label: sample agreement}``, best first; the named descriptor's
        own sample agreement under ``sampled``; the candidates left
        ``unscored`` once the scores were decided).
    """
    overall, worst = library_bit_consistency(features, image)
    record = {"bit_agreement": overall, "bit_agreement_min_site": worst, "threshold": CHANCE_AGREEMENT,
              "warning": None, "likelier": {}, "sampled": None, "unscored": []}
    if math.isnan(overall) or overall >= CHANCE_AGREEMENT:
        return record
    params = features.model_params()
    named = label(features.descriptor, params)
    pool = [(features.descriptor, params)] + [c for c in candidates_for(features.descriptors.shape[1])
                                             if label(*c) != named]
    scores = candidate_agreements(features, pool, until_decided=True)
    scored = {label(n, p): a for n, p, a in scores}
    own = record["sampled"] = scored[named]
    record["unscored"] = [label(*c) for c in pool if label(*c) not in scored]
    record["likelier"] = {label(n, p): a for n, p, a in scores
                          if label(n, p) != named and a >= CHANCE_AGREEMENT and not a <= own + 0.05}
    if record["likelier"]:
        better = ", ".join(f"{name} ({a:.2f})" for name, a in record["likelier"].items())
        advice = f"likelier: {better}; give --descriptor to choose"
    else:
        advice = "no modelled descriptor of this width explains them better: check the file and its image size"
    record["warning"] = (f"the reconstruction reproduces only {overall:.0%} of the file's bits (chance is 50 %): "
                         f"they were most likely not written by {named}; {advice}")
    return record
