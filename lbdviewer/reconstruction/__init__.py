"""Whole images from the descriptors of their patches: sites, patch batches, and the image drivers."""

from lbdviewer._lazy import lazy_namespace

__getattr__, __dir__, __all__ = lazy_namespace(__name__, {
    "grid_sites": "sites",
    "fast_sites": "sites",
    "sites_from_points": "sites",
    "coverage": "sites",
    "reconstruct_patches": "patches",
    "iter_reconstruct_patches": "patches",
    "PATCH_METHODS": "patches",
    "describe_sites": "image",
    "reconstruct_image": "image",
    "iter_reconstruct_image": "image",
    "ImageResult": "image",
    "ImageProgress": "image",
    "average_patches": "image",
    "default_method": "image",
    "METHODS": "image",
    "WHOLE_IMAGE_METHODS": "image",
    "MODES": "image",
})
