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
from lbdviewer.defences.utility import keypoints_inside, match_features, project_points, score_pair
from lbdviewer.features.extract import extract_features
from lbdviewer.features.progress import InversionProgress

__all__ = ["DefencePreview", "iter_preview_defence", "preview_defence"]


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
        :func:`lbdviewer.defences.leakage.measure_leakage` (no OCR).
    second : ndarray, shape (H, W)
        The pair's second image.
    first_points, second_points : ndarray, shape (K, 2)
        Released keypoints ``(x, y)`` of each image.
    matches : ndarray of int, shape (N, 2)
        Rows into the two point sets.
    correct : ndarray of bool, shape (N,)
        Matches within 3 px of where the true homography puts them.
    scores : dict
        :func:`lbdviewer.defences.utility.score_pair` of the pair.
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
        """The leakage number."""
        return self.leakage["correlation"]

    @property
    def matching_accuracy(self):
        """The utility number: matching accuracy at 3 px on the pair."""
        return self.scores["matching_accuracy_3px"]


def _points(features):
    return np.c_[features.keypoints.x, features.keypoints.y]


def iter_preview_defence(image, descriptor, defence=None, *, n_keypoints=500, iterations=None, rng=0):
    """Preview ``defence`` on ``image`` (see the module notes), yielding progress, then the :class:`DefencePreview`.

    Parameters
    ----------
    image : ndarray, shape (H, W)
        Gray image in ``[0, 1]`` (each side at least 63 pixels).
    descriptor : str
        A library descriptor.
    defence : Defence, optional
        None: the features as the library writes them.
    n_keypoints : int
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
    >>> preview = preview_defence(image, "orb", Defence("rr", 2.0), n_keypoints=80, iterations=5)
    >>> preview.label, preview.reconstruction.shape, 0.0 <= preview.matching_accuracy <= 1.0
    ('rr eps=2', (128, 128), True)
    """
    features = extract_features(image, descriptor, n_keypoints=n_keypoints)
    released = features if defence is None else defence.apply(features, rng=np.random.default_rng([rng, 0, 0]),
                                                                image=image)
    region = described_region(features)
    reconstruction = covered = None
    if len(released.keypoints):
        result = None
        for item in attack_steps(released, "aware", iterations=iterations):
            if isinstance(item, InversionProgress):
                yield item
            else:
                result = item[0]
        reconstruction, covered = result.image, result.covered
    [pair] = synthetic_pairs(image, viewpoints=1, illuminations=0, rng=rng)
    second = keypoints_inside(extract_features(pair.second, descriptor, n_keypoints=n_keypoints), pair.valid)
    if defence is not None:
        second = defence.apply(second, rng=np.random.default_rng([rng, 0, 1]), image=pair.second)
    matches = match_features(released, second)
    first_points, second_points = _points(released), _points(second)
    errors = (np.linalg.norm(project_points(pair.homography, first_points[matches[:, 0]]) - second_points[matches[:, 1]],
                             axis=1) if len(matches) else np.zeros(0))
    yield DefencePreview(
        label="no defence" if defence is None else defence.label,
        reconstruction=np.zeros_like(image) if reconstruction is None else reconstruction,
        covered=np.zeros(image.shape, dtype=bool) if covered is None else covered,
        leakage=measure_leakage(image, region, reconstruction, covered, ocr=False), second=pair.second,
        first_points=first_points, second_points=second_points, matches=matches, correct=errors <= 3.0,
        scores=score_pair(released, second, pair.homography))


def preview_defence(image, descriptor, defence=None, **options):
    """:func:`iter_preview_defence` run to its end: the :class:`DefencePreview`."""
    for item in iter_preview_defence(image, descriptor, defence, **options):
        if isinstance(item, DefencePreview):
            return item
    raise AssertionError("iter_preview_defence ended without a preview")
