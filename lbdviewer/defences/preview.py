"""One defence seen at once: what the attacker rebuilds and how a synthetic pair still matches (for the app).

:func:`iter_preview_defence` applies a :class:`lbdviewer.defences.transforms.Defence`
(or none) to the features of an image, lets the aware attacker rebuild the
image from them (:func:`lbdviewer.defences.attacks.attack`; it yields the
inversion's progress so a caller can stop between reports) and matches the
image with one synthetic viewpoint pair through the same defence
(:func:`lbdviewer.defences.utility.score_pair`). The final
:class:`DefencePreview` carries the two numbers the app shows side by side:
the leakage (correlation over the pixels the undefended features describe)
and the matching accuracy at 3 px, with what a view draws: the
reconstruction, both images and the matches, correct ones marked.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lbdviewer.defences.attacks import attack_steps
from lbdviewer.defences.leakage import described_region, measure_leakage
from lbdviewer.defences.pairs import synthetic_pairs
from lbdviewer.defences.transforms import Defence
from lbdviewer.defences.utility import keypoints_inside, match_features, project_points, score_pair
from lbdviewer.features.extract import extract_features
from lbdviewer.features.progress import InversionProgress

__all__ = ["NO_DEFENCE", "STRENGTH_CHOICES", "DefencePreview", "defence_choice", "iter_preview_defence",
           "pair_picture", "preview_defence"]

#: The choice of a control that applies no defence.
NO_DEFENCE = "none"
#: Per defence, what a control offers: ``(minimum, maximum, step, default)`` of its strength.
STRENGTH_CHOICES = {"rr": (0.25, 16.0, 0.25, 2.0), "keep-bits": (0.05, 1.0, 0.05, 0.5),
                    "keep-keypoints": (0.05, 1.0, 0.05, 0.5), "keep-keypoints-aware": (0.05, 1.0, 0.05, 0.5),
                    "quantize": (1.0, 32.0, 1.0, 4.0), "jitter": (0.5, 16.0, 0.5, 2.0)}
#: Gray columns between the two images of :func:`pair_picture`.
PAIR_GAP = 8


def defence_choice(kind, strength=None):
    """The :class:`Defence` a control's ``kind`` and ``strength`` name, or None for :data:`NO_DEFENCE`.

    Raises
    ------
    ValueError
        Naming the kind or the strength.

    Examples
    --------
    >>> defence_choice("none") is None, defence_choice("rr").label, defence_choice("jitter", 4).label
    (True, 'rr eps=2', 'jitter sigma=4')
    """
    if kind == NO_DEFENCE:
        return None
    if kind not in STRENGTH_CHOICES:
        raise ValueError(f"defence must be one of {(NO_DEFENCE, *STRENGTH_CHOICES)}, got {kind!r}")
    return Defence(kind, STRENGTH_CHOICES[kind][3] if strength is None else strength)


def pair_picture(image, preview):
    """The two images of the preview's pair side by side and its matches as segments in that picture.

    Returns
    -------
    picture : ndarray, shape (H, 2 W + PAIR_GAP)
    segments : ndarray, shape (N, 2, 2)
        ``[[x0, y0], [x1, y1]]`` of each match, first image left.
    correct : ndarray of bool, shape (N,)

    Examples
    --------
    >>> from lbdviewer.features.keypoints import FeatureSet, Keypoints
    >>> fs = FeatureSet("orb", {}, (70, 70), Keypoints([35.0], [35.0]), np.zeros((1, 32), np.uint8), 256, "little")
    >>> view = DefencePreview("x", np.zeros((70, 70)), np.ones((70, 70), bool), {}, np.ones((70, 70)),
    ...                       np.array([[1.0, 2.0]]), np.array([[3.0, 4.0]]), np.array([[0, 0]]), np.array([True]), {})
    >>> picture, segments, correct = pair_picture(np.zeros((70, 70)), view)
    >>> picture.shape, segments.tolist()
    ((70, 148), [[[1.0, 2.0], [81.0, 4.0]]])
    """
    if preview.second is None:
        raise ValueError("the preview has no synthetic pair: it was made without the image")
    image = np.asarray(image, dtype=np.float64)
    height, width = image.shape
    picture = np.hstack([image, np.full((height, PAIR_GAP), 0.5), preview.second])
    starts = preview.first_points[preview.matches[:, 0]] if len(preview.matches) else np.zeros((0, 2))
    ends = preview.second_points[preview.matches[:, 1]] + [width + PAIR_GAP, 0] if len(preview.matches) \
        else np.zeros((0, 2))
    return picture, np.stack([starts, ends], axis=1), np.asarray(preview.correct, dtype=bool)


@dataclass(frozen=True, eq=False)
class DefencePreview:
    """What one defence leaves and costs on one image (see the module notes).

    Attributes
    ----------
    label : str
        The defence (``"no defence"``).
    reconstruction, covered : ndarray, shape (H, W)
        The aware attacker's image (``[0, 1]``) and the pixels it covers.
    leakage : dict
        :func:`lbdviewer.defences.leakage.measure_leakage` (no OCR); its
        ``correlation`` None without the image.
    second : ndarray, shape (H, W) or None
        The pair's second image (None without the image).
    first_points, second_points : ndarray, shape (K, 2)
        Released keypoints ``(x, y)`` of each image.
    matches : ndarray of int, shape (N, 2)
        Rows into the two point sets.
    correct : ndarray of bool, shape (N,)
        Matches within 3 px of where the true homography puts them.
    scores : dict
        :func:`lbdviewer.defences.utility.score_pair` of the pair (empty without the image).
    """

    label: str
    reconstruction: np.ndarray
    covered: np.ndarray
    leakage: dict
    second: np.ndarray
    first_points: np.ndarray
    second_points: np.ndarray
    matches: np.ndarray
    correct: np.ndarray
    scores: dict

    @property
    def correlation(self):
        """The leakage number (None without the image)."""
        return self.leakage["correlation"]

    @property
    def matching_accuracy(self):
        """The utility number: matching accuracy at 3 px on the pair (None without the image)."""
        return self.scores.get("matching_accuracy_3px")


def _points(features):
    return np.c_[features.keypoints.x, features.keypoints.y]


def iter_preview_defence(features, defence=None, *, image=None, iterations=None, rng=0):
    """Preview ``defence`` on ``features`` (see the module notes), yielding progress, then the :class:`DefencePreview`.

    Parameters
    ----------
    features : FeatureSet
        The features as the library wrote them (the app's library view
        extracts them; a feature file holds them).
    defence : Defence, optional
        None: the features as they are.
    image : ndarray, shape (H, W), optional
        The image they describe, gray in ``[0, 1]``. Without it the preview
        has the reconstruction only: no leakage score (nothing to compare
        with) and no synthetic pair (nothing to warp).
    iterations : int, optional
        Of the inversion (default: the solver's).
    rng : int
        Seed of the pair and of the defence's draws.

    Yields
    ------
    InversionProgress or DefencePreview
        The inversion's reports (a point where a caller can stop), the preview last.

    Examples
    --------
    >>> from lbdviewer.io.samples import sample_image
    >>> from lbdviewer.defences.transforms import Defence
    >>> image = sample_image("camera")[100:228, 150:278]
    >>> features = extract_features(image, "orb", n_keypoints=80)
    >>> preview = preview_defence(features, Defence("rr", 2.0), image=image, iterations=5)
    >>> preview.label, preview.reconstruction.shape, 0.0 <= preview.matching_accuracy <= 1.0
    ('rr eps=2', (128, 128), True)
    >>> preview_defence(features, iterations=5).matching_accuracy is None
    True
    """
    shape = tuple(features.image_shape)
    released = features if defence is None else defence.apply(features, rng=np.random.default_rng([rng, 0, 0]),
                                                                image=image)
    reconstruction = covered = None
    if len(released.keypoints):
        result = None
        for item in attack_steps(released, "aware", iterations=iterations):
            if isinstance(item, InversionProgress):
                yield item
            else:
                result = item[0]
        reconstruction, covered = result.image, result.covered
    first_points = _points(released)
    second = None
    second_points, matches, correct, scores = np.zeros((0, 2)), np.zeros((0, 2), dtype=np.int64), np.zeros(0, bool), {}
    leakage = {"correlation": None}
    if image is not None:
        leakage = measure_leakage(image, described_region(features), reconstruction, covered, ocr=False)
        [pair] = synthetic_pairs(image, viewpoints=1, illuminations=0, rng=rng)
        described = extract_features(pair.second, features.descriptor, n_keypoints=max(len(features.keypoints), 1))
        other = keypoints_inside(described, pair.valid)
        if defence is not None:
            other = defence.apply(other, rng=np.random.default_rng([rng, 0, 1]), image=pair.second)
        matches = match_features(released, other)
        second, second_points = pair.second, _points(other)
        errors = np.linalg.norm(project_points(pair.homography, first_points[matches[:, 0]])
                                - second_points[matches[:, 1]], axis=1) if len(matches) else np.zeros(0)
        correct, scores = errors <= 3.0, score_pair(released, other, pair.homography)
    yield DefencePreview(
        label="no defence" if defence is None else defence.label,
        reconstruction=np.zeros(shape) if reconstruction is None else reconstruction,
        covered=np.zeros(shape, dtype=bool) if covered is None else covered, leakage=leakage, second=second,
        first_points=first_points, second_points=second_points, matches=matches, correct=correct, scores=scores)


def preview_defence(features, defence=None, **options):
    """:func:`iter_preview_defence` run to its end: the :class:`DefencePreview`."""
    for item in iter_preview_defence(features, defence, **options):
        if isinstance(item, DefencePreview):
            return item
    raise AssertionError("iter_preview_defence ended without a preview")
