"""Synthetic image pairs with a known homography, as HPatches' viewpoint and illumination sequences.

From one image, :func:`synthetic_pairs` makes pairs ``(image, second)`` whose
ground truth is a homography ``H`` (a point ``(x, y)`` of the image is at
``H (x, y, 1)`` in the second, pixel centres at integers):

``viewpoint``
    ``second`` is the image warped by a seeded homography (each corner moved
    by up to :data:`PERSPECTIVE` of the image's side, then turned by up to
    :data:`ROTATION` degrees and scaled by a factor in :data:`SCALE` about
    the centre), with a little sensor noise; pixels that see nothing of the
    image are black and :attr:`SyntheticPair.valid` is False there.
``illumination``
    ``H`` is the identity; ``second`` is the image under a seeded change of
    gamma, gain and offset (brightness and contrast), a Gaussian blur and
    sensor noise (:data:`ILLUMINATION` gives the ranges).

Every draw comes from ``rng``, so a seed gives the same pairs on any machine.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from lbdviewer._validation import check_int

__all__ = ["ILLUMINATION", "PAIR_KINDS", "PERSPECTIVE", "ROTATION", "SCALE", "SyntheticPair", "random_homography",
           "synthetic_pairs"]

PAIR_KINDS = ("viewpoint", "illumination")
#: Largest move of each corner, as a share of the image's width and height.
PERSPECTIVE = 0.08
#: Largest in-plane rotation (degrees) and the range of scale factors.
ROTATION = 20.0
SCALE = (0.85, 1.15)
#: Standard deviation of the sensor noise added to a viewpoint pair's second image.
VIEWPOINT_NOISE = 0.01
#: Ranges of the illumination change: gamma (log-uniform), gain, offset, blur sigma (pixels), noise sigma.
ILLUMINATION = {"gamma": (0.6, 1.7), "gain": (0.7, 1.2), "offset": (-0.1, 0.1), "blur": (0.0, 1.2),
                "noise": (0.005, 0.02)}
#: Pixels next to the edge of the seen area (or of the image) counted as not seen: descriptors there read black.
EDGE = 8


@dataclass(frozen=True, eq=False)
class SyntheticPair:
    """The second image of a pair, the homography from the first and what made it.

    Attributes
    ----------
    kind : str
        One of :data:`PAIR_KINDS`.
    second : ndarray, shape (H, W)
        Float image in ``[0, 1]``.
    homography : ndarray, shape (3, 3)
        Maps the first image's ``(x, y, 1)`` to the second's.
    valid : ndarray of bool, shape (H, W)
        Pixels of ``second`` that see the first image, at least :data:`EDGE`
        pixels from the edge of what they see.
    params : dict
        The drawn parameters (JSON values).
    """

    kind: str
    second: np.ndarray
    homography: np.ndarray
    valid: np.ndarray
    params: dict


def random_homography(shape, rng):
    """A seeded homography of an image of ``shape`` (see the module notes) and its parameters.

    Returns
    -------
    homography : ndarray, shape (3, 3)
    params : dict
        ``rotation`` (degrees), ``scale``, ``corner_moves`` (pixels).

    Examples
    --------
    >>> h, params = random_homography((100, 200), np.random.default_rng(0))
    >>> h.shape, abs(params["rotation"]) <= 20.0
    ((3, 3), True)
    """
    import cv2

    height, width = shape
    rng = np.random.default_rng(rng)
    corners = np.array([[0, 0], [width - 1, 0], [width - 1, height - 1], [0, height - 1]], dtype=np.float64)
    moves = rng.uniform(-PERSPECTIVE, PERSPECTIVE, size=(4, 2)) * [width, height]
    angle = rng.uniform(-ROTATION, ROTATION)
    scale = rng.uniform(*SCALE)
    theta = math.radians(angle)
    rotation = np.array([[math.cos(theta), -math.sin(theta)], [math.sin(theta), math.cos(theta)]])
    centre = np.array([(width - 1) / 2.0, (height - 1) / 2.0])
    target = centre + scale * (corners + moves - centre) @ rotation.T
    homography = cv2.getPerspectiveTransform(corners.astype(np.float32), target.astype(np.float32))
    return homography, {"rotation": float(angle), "scale": float(scale), "corner_moves": moves.round(3).tolist()}


def _seen(shape, homography):
    """Pixels of the warped image that see the first one, :data:`EDGE` pixels inside."""
    import cv2

    height, width = shape
    ones = np.ones((height, width), dtype=np.uint8)
    seen = cv2.warpPerspective(ones, homography, (width, height), flags=cv2.INTER_NEAREST,
                               borderMode=cv2.BORDER_CONSTANT, borderValue=0)
    seen[[0, -1], :] = 0
    seen[:, [0, -1]] = 0
    return cv2.erode(seen, np.ones((2 * EDGE + 1, 2 * EDGE + 1), np.uint8)) > 0


def _viewpoint(image, rng):
    import cv2

    height, width = image.shape
    homography, params = random_homography(image.shape, rng)
    second = cv2.warpPerspective(image, homography, (width, height), flags=cv2.INTER_LINEAR,
                                 borderMode=cv2.BORDER_CONSTANT, borderValue=0.0)
    second = np.clip(second + rng.normal(0.0, VIEWPOINT_NOISE, second.shape), 0.0, 1.0)
    return SyntheticPair("viewpoint", second, homography, _seen(image.shape, homography),
                         {**params, "noise": VIEWPOINT_NOISE})


def _illumination(image, rng):
    import cv2

    ranges = ILLUMINATION
    gamma = math.exp(rng.uniform(*np.log(ranges["gamma"])))
    gain, offset = rng.uniform(*ranges["gain"]), rng.uniform(*ranges["offset"])
    blur, noise = rng.uniform(*ranges["blur"]), rng.uniform(*ranges["noise"])
    second = gain * np.power(image, gamma) + offset
    if blur > 0.05:
        second = cv2.GaussianBlur(second, (0, 0), blur, borderType=cv2.BORDER_REFLECT_101)
    second = np.clip(second + rng.normal(0.0, noise, second.shape), 0.0, 1.0)
    return SyntheticPair("illumination", second, np.eye(3), _seen(image.shape, np.eye(3)),
                         {"gamma": gamma, "gain": gain, "offset": offset, "blur": blur, "noise": noise})


def synthetic_pairs(image, *, viewpoints=4, illuminations=4, rng=0):
    """Seeded viewpoint and illumination pairs of ``image`` (see the module notes).

    Parameters
    ----------
    image : ndarray, shape (H, W)
        Gray image in ``[0, 1]``.
    viewpoints, illuminations : int
        How many pairs of each kind (>= 0).
    rng : int or numpy.random.Generator

    Returns
    -------
    list of SyntheticPair
        The viewpoint pairs first.

    Examples
    --------
    >>> image = np.random.default_rng(1).random((64, 80))
    >>> pairs = synthetic_pairs(image, viewpoints=1, illuminations=1, rng=0)
    >>> [p.kind for p in pairs], pairs[0].second.shape, bool(np.allclose(pairs[1].homography, np.eye(3)))
    (['viewpoint', 'illumination'], (64, 80), True)
    """
    image = np.asarray(image, dtype=np.float64)
    if image.ndim != 2:
        raise ValueError(f"image must be a 2-D gray image, got shape {image.shape}")
    viewpoints = check_int("viewpoints", viewpoints, minimum=0)
    illuminations = check_int("illuminations", illuminations, minimum=0)
    rng = np.random.default_rng(rng)
    return ([_viewpoint(image, rng) for _ in range(viewpoints)]
            + [_illumination(image, rng) for _ in range(illuminations)])
