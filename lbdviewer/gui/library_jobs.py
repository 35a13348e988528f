"""Generators the workers run for the library descriptors and feature files: describe, one keypoint's view, solve.

A library descriptor (ORB, BRISK, BEBLID, AKAZE, ...) is shown as the real
library sees the image: :func:`describe_library` detects and describes the
keypoints with the library itself (what ``lbdviewer extract`` does) and keeps
the images the model reads patches from; :func:`keypoint_view` builds, for
one keypoint, the pattern the library used there (turned by its angle, at its
pyramid level and scale), its operator, the overlay to draw, its weight and
occurrence maps, its bits and, when there are pixels, its true patch;
:func:`keypoint_live_updates` solves that patch from the library's own bits.
The same views serve a feature file (its keypoints and bits, no pixels unless
its original is open).

Nothing here imports Qt: the records cross from the worker threads to the
main thread, which only draws them.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from lbdviewer.features.extract import extract_features
from lbdviewer.gui.jobs import solver_updates
from lbdviewer.gui.overlay import cells_overlay, pattern_overlay
from lbdviewer.libraries.base import keypoint_patches
from lbdviewer.libraries.registry import get_model
from lbdviewer.operators.descriptor import DescriptorOperator


@dataclass(frozen=True, eq=False)
class LibraryDocument:
    """An image described by a library: its features and the images the model reads patches from.

    ``features`` is the :class:`~lbdviewer.features.keypoints.FeatureSet`
    ``lbdviewer extract`` would write (the image's SHA-256 recorded);
    ``images`` the model's ``source_images`` (pyramid levels, AKAZE's
    evolution sources); ``keypoints_requested`` what the detector was asked for.
    """

    features: object
    images: tuple
    keypoints_requested: int
    seconds: float

    @property
    def descriptor(self):
        return self.features.descriptor


def _model(features):
    return get_model(features.descriptor, **features.model_params())


def describe_library(image, descriptor, *, n_keypoints, image_sha256=None):
    """Detect and describe ``image`` with the library of ``descriptor``; yield one :class:`LibraryDocument`.

    Between the stages (features, then the model's images) it yields None,
    so a worker can stop it there.

    Raises
    ------
    ValueError
        From :func:`lbdviewer.features.extract.extract_features` (an image
        too small for the detector, an unknown descriptor).
    """
    started = time.perf_counter()
    features = extract_features(image, descriptor, n_keypoints=n_keypoints, image_sha256=image_sha256)
    yield None
    images = tuple(_model(features).source_images(image))
    yield LibraryDocument(features, images, int(n_keypoints), time.perf_counter() - started)


def library_images(features, image):
    """The images the model of ``features`` reads patches from, for ``image`` (a feature file's original); yield them."""
    yield tuple(_model(features).source_images(image))


def nearest_keypoint(keypoints, x, y):
    """Index of the keypoint nearest to ``(x, y)`` (level-0 pixels), None when there is none.

    Examples
    --------
    >>> from lbdviewer.features.keypoints import Keypoints
    >>> nearest_keypoint(Keypoints([10.0, 40.0], [10.0, 12.0]), 35.0, 20.0)
    1
    """
    if len(keypoints) == 0:
        return None
    distance = np.hypot(np.asarray(keypoints.x) - x, np.asarray(keypoints.y) - y)
    return int(np.argmin(distance))


@dataclass(frozen=True, eq=False)
class KeypointView:
    """One keypoint as its descriptor sees it: pattern, operator, overlay, maps, bits and true patch.

    Attributes
    ----------
    index : int
        Row of the keypoint in the features.
    descriptor : str
    keypoint : dict
        ``x``, ``y`` (level-0 pixels), ``size``, ``angle`` (degrees), ``octave``, ``response``.
    level : int
        The image the patch is read from (pyramid level; AKAZE: evolution level).
    scale : float
        Size of one of its pixels in level-0 pixels.
    origin : (int, int)
        ``(row, col)`` of patch pixel ``(0, 0)`` in that image.
    operator : DescriptorOperator or AkazePatchOperator
        Patch to measurements (``frame_vector``, ``weight_map``, ``occurrence_map``).
    pattern : Pattern or None
        The fields and pairs (None for AKAZE, whose cells are not fields).
    overlay : lbdviewer.gui.overlay.Overlay
    bits : ndarray of int8, shape (M,)
        The library's bits for this keypoint, in {-1, +1}.
    patch : ndarray or None
        The true patch (None without pixels: a feature file alone).
    weights, occurrences : ndarray, shape (P, P)
    """

    index: int
    descriptor: str
    keypoint: dict
    level: int
    scale: float
    origin: tuple
    operator: object
    pattern: object
    overlay: object
    bits: np.ndarray
    patch: np.ndarray | None
    weights: np.ndarray
    occurrences: np.ndarray

    @property
    def patch_size(self):
        return int(self.operator.domain_shape[0])

    @property
    def m(self):
        return int(self.operator.shape[0])

    def footprint(self):
        """``(x, y, side)`` of the patch in level-0 view coordinates (pixel ``(r, c)`` covers ``[c, c+1]``).

        Level pixel ``(r, c)`` covers level-0 ``[c s, (c + 1) s]``, ``s`` the level's pixel size.
        """
        row, col = self.origin
        return col * self.scale, row * self.scale, self.patch_size * self.scale

    def describe(self):
        """What the keypoint is, for titles and records.

        Examples
        --------
        >>> view = KeypointView(3, "orb", {"x": 10.25, "y": 4.0, "size": 31.0, "angle": 90.0, "octave": 1,
        ...                     "response": 0.0}, 1, 1.2, (0, 0), None, None, None, None, None, None, None)
        >>> view.describe()
        'keypoint 3 at (10.2, 4.0), 90°, level 1 (pixel 1.20)'
        """
        kp = self.keypoint
        angle = "no angle" if kp["angle"] < 0 else f"{kp['angle']:.0f}°"
        level = f"level {self.level}" + (f" (pixel {self.scale:.2f})" if self.scale != 1.0 else "")
        return f"keypoint {self.index} at ({kp['x']:.1f}, {kp['y']:.1f}), {angle}, {level}"

    def record(self):
        """The keypoint and where its patch is, as JSON values (for the run records)."""
        return {"index": int(self.index), **{k: float(v) for k, v in self.keypoint.items()},
                "level": int(self.level), "level_pixel": float(self.scale), "patch_origin": list(self.origin),
                "patch_size": self.patch_size}


def _keypoint_dict(keypoints):
    return {name: float(getattr(keypoints, name)[0]) for name in ("x", "y", "size", "angle", "octave", "response")}


def keypoint_view(features, index, images=None):
    """Build the :class:`KeypointView` of keypoint ``index`` of ``features``; yield it.

    Parameters
    ----------
    features : FeatureSet
    index : int
    images : sequence of ndarray, optional
        The model's source images of the pixels (:class:`LibraryDocument`
        ``images``), for the true patch; None without pixels.
    """
    index = int(index)
    if not 0 <= index < len(features.keypoints):
        raise ValueError(f"index must be a keypoint from 0 to {len(features.keypoints) - 1}, got {index}")
    model = _model(features)
    one = features.keypoints.take([index])
    bits = np.asarray(features.bits()[index], dtype=np.int8)
    if features.descriptor == "akaze":
        from lbdviewer.libraries.akaze.grid import N_CHANNELS, comparison_pairs

        (operator,) = model.patch_operators(one, image_shape=features.image_shape)
        _, corners = model.cell_corners(one)
        top, left = operator.origin
        overlay = cells_overlay(corners[0] - [left, top], comparison_pairs() // N_CHANNELS)
        pattern, level, scale, origin = None, operator.level, float(operator.power), operator.origin
        patch = None if images is None else operator.extract(images[level])
    else:
        (placed,) = model.keypoint_patterns(one)
        pattern = placed.pattern
        operator = DescriptorOperator(pattern)
        overlay = pattern_overlay(pattern, kernel_shapes=True)
        level, scale, origin = placed.level, float(placed.scale), tuple(int(v) for v in placed.origin)
        patch = None if images is None else keypoint_patches(images, [placed])[0]
    yield KeypointView(index, features.descriptor, _keypoint_dict(one), int(level), scale,
                       tuple(int(v) for v in origin), operator, pattern, overlay, bits,
                       None if patch is None else np.asarray(patch, dtype=np.float64),
                       np.asarray(operator.weight_map(), dtype=np.float64),
                       np.asarray(operator.occurrence_map()))


def keypoint_live_updates(view, parameters):
    """Solve a keypoint's patch from the library's own bits, yielding a :class:`~lbdviewer.gui.jobs.LiveUpdate` per iteration.

    The bits are :attr:`KeypointView.bits` (what the library or the file
    says), never bits recomputed from the pixels; the solver is the form's
    (BIHT or primal-dual) with its iterations, K and lambda.
    """
    yield from solver_updates(view.operator, view.bits[None].astype(np.float64), parameters)
