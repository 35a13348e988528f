"""Feature files as an app makes them: keypoints detected and described by the real library."""

from __future__ import annotations

import numpy as np

from lbdviewer.bits import pack_bits
from lbdviewer.features.keypoints import FeatureSet
from lbdviewer.libraries.registry import get_model

__all__ = ["MIN_SIDE", "extract_features"]

#: Smallest image side the detector works on (ORB's border of 31 pixels on each side, and one more).
MIN_SIDE = 2 * 31 + 1


def extract_features(image, descriptor, *, n_keypoints=500, name="image", image_sha256=None):
    """Detect keypoints and describe them with the library of ``descriptor``.

    Keypoints come from the library's detector (AKAZE's and BRISK's own; OpenCV's
    ORB detector, FAST + Harris over the pyramid, for the others), the
    ``n_keypoints`` strongest; the library of ``descriptor`` then describes
    them, as an app built on it would.

    Parameters
    ----------
    image : ndarray, shape (H, W)
        Gray image, float in ``[0, 1]``; each side at least :data:`MIN_SIDE`.
    descriptor : str
        One of :data:`lbdviewer.libraries.registry.DESCRIPTORS`.
    n_keypoints : int
        Most keypoints to describe (the detector's extra ties at its cut are
        dropped, weakest response first).
    name : str
        How error messages name the image.
    image_sha256 : str, optional
        SHA-256 (hex) of the image file, recorded as ``params["image_sha256"]``
        so that a viewer can tell the image the features came from
        (:attr:`FeatureSet.image_sha256`).

    Returns
    -------
    FeatureSet

    Raises
    ------
    ValueError
        An image smaller than :data:`MIN_SIDE` or an unknown descriptor.

    Examples
    --------
    >>> from lbdviewer.io.samples import sample_image
    >>> features = extract_features(sample_image("camera"), "orb", n_keypoints=50)
    >>> features.descriptor, features.n_bits, len(features.keypoints) <= 50
    ('orb', 256, True)
    """
    if image.ndim != 2:
        raise ValueError(f"{name} must be a 2-D gray image, got shape {image.shape}")
    if min(image.shape) < MIN_SIDE:
        raise ValueError(f"{name} is {image.shape[1]} x {image.shape[0]} pixels; the detector needs at least "
                         f"{MIN_SIDE} x {MIN_SIDE}")
    model = get_model(descriptor)
    keypoints = model.detect(image, n_keypoints=n_keypoints)
    if len(keypoints) > n_keypoints:  # OpenCV's ORB keeps ties at its cut: at most n_keypoints leave here
        strongest = np.argsort(-keypoints.response, kind="stable")[:n_keypoints]
        keypoints = keypoints.take(np.sort(strongest))
    result = model.run_library(image, keypoints)
    params = {**model.params(), "library": model.library_version()}
    if image_sha256 is not None:
        params["image_sha256"] = image_sha256
    return FeatureSet(
        descriptor=descriptor, params=params,
        image_shape=image.shape, keypoints=result.keypoints,
        descriptors=pack_bits(result.bits, bitorder=model.bitorder).reshape(len(result.keypoints),
                                                                            (model.n_bits + 7) // 8),
        n_bits=model.n_bits, bitorder=model.bitorder,
    )
