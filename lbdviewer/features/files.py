"""Feature files of every format, by suffix: lbdviewer's ``.npz`` and OpenCV's FileStorage (YAML, XML, JSON)."""

from __future__ import annotations

from lbdviewer.features.filestorage.parser import format_of
from lbdviewer.features.filestorage.reader import load as load_filestorage
from lbdviewer.features.filestorage.writer import save as save_filestorage
from lbdviewer.features.npz import load_npz, save_features_npz

__all__ = ["FEATURE_SUFFIXES", "load_features", "save_features"]

#: Suffixes :func:`load_features` reads: ``.npz`` and OpenCV FileStorage's.
FEATURE_SUFFIXES = (".npz", ".yml", ".yaml", ".xml", ".json")


def save_features(path, features, *, fmt=None):
    """Write ``features`` to ``path`` atomically: ``.npz``, or OpenCV FileStorage by suffix or ``fmt``.

    Parameters
    ----------
    path : str or os.PathLike
    features : FeatureSet
    fmt : {"npz", "yaml", "xml", "json"}, optional
        Default: from the suffix (``.yml``/``.yaml``, ``.xml``, ``.json``:
        :mod:`lbdviewer.features.filestorage.reader`; anything else ``.npz``).
    """
    if fmt not in (None, "npz") or (fmt is None and format_of(path)):
        save_filestorage(path, features, fmt=fmt)
        return
    save_features_npz(path, features)


def load_features(path, *, max_pixels=None, max_keypoints=None, descriptor=None, image_shape=None):
    """Read and validate a feature file: ``.npz``, or OpenCV FileStorage (``.yml``, ``.yaml``, ``.xml``, ``.json``).

    What the file declares is checked before anything is read: see
    :func:`lbdviewer.features.npz.check_archive` (members, keypoint count) and the pixel limit on
    ``image_shape``.

    Parameters
    ----------
    path : str or os.PathLike
    max_pixels, max_keypoints : int, optional
        Limits on ``image_shape`` and on the number of keypoints; defaults
        :func:`lbdviewer.io.limits.max_pixels` and
        :func:`lbdviewer.io.limits.max_keypoints`.
    descriptor : str, optional
        FileStorage only: the descriptor, when the file does not name it.
    image_shape : (int, int), optional
        FileStorage only: ``(height, width)``, when the file does not give it.

    Returns
    -------
    FeatureSet

    Raises
    ------
    ValueError
        For a truncated or non-npz file, a pickled payload, a wrong format or
        version, an unknown descriptor, wrong shapes or dtypes, NaN keypoint
        values or keypoints outside the image.
    lbdviewer.io.limits.ResourceLimitError
        When the file declares more pixels or keypoints than the limits.
    """
    if format_of(path):
        return load_filestorage(path, descriptor=descriptor, image_shape=image_shape, max_pixels=max_pixels,
                                max_keypoints=max_keypoints)
    return load_npz(path, max_pixels=max_pixels, max_keypoints=max_keypoints)
