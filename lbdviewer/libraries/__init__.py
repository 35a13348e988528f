"""Bit-exact models of the descriptors real software emits (OpenCV, scikit-image), their calibration, and the one registry."""

from lbdviewer._lazy import lazy_namespace

__getattr__, __dir__, __all__ = lazy_namespace(__name__, {
    "DESCRIPTORS": "registry",
    "get_model": "registry",
    "LibraryModel": "base",
    "KeypointPattern": "base",
    "LibraryResult": "base",
    "agreement": "base",
})
