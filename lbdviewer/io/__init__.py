"""Files in and out: images, strict JSON, atomic writes, resource limits, and the shipped samples."""

from lbdviewer._lazy import lazy_namespace

__getattr__, __dir__, __all__ = lazy_namespace(__name__, {
    "load_image": "images",
    "to_gray": "images",
    "to_uint8": "images",
    "encode_image": "images",
    "save_png": "images",
    "save_image": "images",
    "atomic_write": "files",
    "atomic_write_all": "files",
    "file_sha256": "files",
    "dumps_strict": "strict_json",
    "save_json": "strict_json",
    "sample_image": "samples",
    "sample_images": "samples",
    "ResourceLimitError": "limits",
})
