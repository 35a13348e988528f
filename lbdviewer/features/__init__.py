"""Keypoints and the features described at them: feature files (npz, OpenCV FileStorage), extraction, and inversion."""

from lbdviewer._lazy import lazy_namespace

__getattr__, __dir__, __all__ = lazy_namespace(__name__, {
    "Keypoints": "keypoints",
    "FeatureSet": "keypoints",
    "load_features": "files",
    "save_features": "files",
    "FEATURE_SUFFIXES": "files",
    "extract_features": "extract",
    "invert_features": "invert",
    "iter_invert_features": "invert",
    "InversionProgress": "invert",
})
