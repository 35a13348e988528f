"""Feature files of every format, by suffix: lbdviewer's ``.npz`` and OpenCV's FileStorage (YAML, XML, JSON)."""

from __future__ import annotations

from lbdviewer.features.filestorage.parser import format_of
from lbdviewer.features.filestorage.reader import file_entries, read_entries, read_entry
from lbdviewer.features.filestorage.writer import save as save_filestorage
from lbdviewer.features.infer import AUTO, extent_shape, settle
from lbdviewer.features.npz import load_npz, save_features_npz

__all__ = ["FEATURE_SUFFIXES", "entry_summaries", "feature_entries", "load_features", "save_features"]

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


def feature_entries(path, *, max_keypoints=None):
    """The entries (images) of a feature file: ``[None]`` for a file of one image (every ``.npz``).

    See :func:`lbdviewer.features.filestorage.reader.file_entries` for FileStorage files of several images.
    """
    if format_of(path):
        return file_entries(path, max_keypoints=max_keypoints)
    return [None]


def entry_summaries(path, *, max_pixels=None, max_keypoints=None):
    """What each entry of a feature file holds, as the file says it (nothing inferred).

    Returns
    -------
    list of dict
        ``entry`` (None for a file of one image), ``keypoints``, ``bytes``
        (a descriptor), ``descriptor`` and ``image_size`` (``(height,
        width)``), None where the file does not say; ``extent``, the image
        size the keypoints suggest (:func:`lbdviewer.features.infer.extent_shape`).
    """
    if not format_of(path):
        features = load_npz(path, max_pixels=max_pixels, max_keypoints=max_keypoints)
        return [{"entry": None, "keypoints": len(features.keypoints), "bytes": features.descriptors.shape[1],
                 "descriptor": features.descriptor, "image_size": features.image_shape,
                 "extent": extent_shape(features.keypoints)}]
    return [{"entry": found.name, "keypoints": len(found.keypoints), "bytes": found.descriptors.shape[1],
             "descriptor": found.descriptor, "image_size": found.image_shape, "extent": extent_shape(found.keypoints)}
            for found in read_entries(path, max_pixels=max_pixels, max_keypoints=max_keypoints)]


def load_features(path, *, max_pixels=None, max_keypoints=None, descriptor=None, image_shape=None, entry=None):
    """Read and validate a feature file: ``.npz``, or OpenCV FileStorage (``.yml``, ``.yaml``, ``.xml``, ``.json``).

    What the file declares is checked before anything is read: see
    :func:`lbdviewer.features.npz.check_archive` (members, keypoint count),
    the FileStorage parsers' budget and the pixel limit on ``image_shape``.
    What a FileStorage file does not say is settled by
    :func:`lbdviewer.features.infer.settle` (the image size from the
    keypoints' extent, the descriptor inferred), recorded in the result's
    ``provenance``.

    Parameters
    ----------
    path : str or os.PathLike
    max_pixels, max_keypoints : int, optional
        Limits on ``image_shape`` and on the number of keypoints; defaults
        :func:`lbdviewer.io.limits.max_pixels` and
        :func:`lbdviewer.io.limits.max_keypoints`.
    descriptor : str, optional
        FileStorage only: the descriptor, or ``"auto"`` (the default, as
        None) to take the file's or infer it. A name the file contradicts is
        an error.
    image_shape : (int, int), optional
        FileStorage only: ``(height, width)``; a size the file contradicts
        is an error.
    entry : str, optional
        FileStorage only: which image of a file of several
        (:func:`feature_entries`).

    Returns
    -------
    FeatureSet

    Raises
    ------
    ValueError
        For a file that is not a regular file, a truncated or non-npz file,
        a pickled payload, a wrong format or version, an unknown
        descriptor, wrong shapes or dtypes, NaN keypoint values or keypoints
        outside the image; and for an option that does not apply to the
        file (``descriptor``, ``image_shape`` or ``entry`` for an ``.npz``).
    lbdviewer.io.limits.ResourceLimitError
        When the file declares more pixels or keypoints than the limits.
    """
    if format_of(path):
        found = read_entry(path, entry=entry, max_pixels=max_pixels, max_keypoints=max_keypoints)
        return settle(found, descriptor=descriptor, image_shape=image_shape, max_pixels=max_pixels)
    given = {"descriptor": descriptor if descriptor not in (None, AUTO) else None, "image size": image_shape,
             "entry": entry}
    for what, value in given.items():
        if value is not None:
            raise ValueError(f"feature file {str(path)!r} is an lbdviewer .npz, which names its own descriptor and "
                             f"image size and holds one image: the {what} given does not apply to it")
    return load_npz(path, max_pixels=max_pixels, max_keypoints=max_keypoints)
