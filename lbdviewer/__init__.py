"""lbdviewer: invert local binary descriptors (BRIEF, FREAK, ORB) back into images.

The numeric core never imports Qt; the desktop app lives in :mod:`lbdviewer.gui`.

Examples
--------
>>> import numpy as np
>>> import lbdviewer as lbd
>>> op = lbd.DescriptorOperator(lbd.make_pattern("brief", patch_size=16, m=128))
>>> bits = op.describe(np.random.default_rng(0).random((4, 16, 16)))
>>> lbd.reconstruct_patches(bits, op, iterations=20).shape
(4, 16, 16)
"""

import importlib

#: Where each public name lives. Names are imported on first use (PEP 562), so the command
#: line starts (``--help``, ``--version``, an early Ctrl-C) without waiting for numpy, OpenCV
#: and numba.
_HOMES = {
    "BIHT": "lbdviewer.solvers",
    "DescriptorOperator": "lbdviewer.operators",
    "FAMILIES": "lbdviewer.patterns",
    "FeatureSet": "lbdviewer.features",
    "HaarTransform": "lbdviewer.wavelets",
    "JointOperator": "lbdviewer.joint",
    "Keypoints": "lbdviewer.features",
    "Pattern": "lbdviewer.patterns",
    "PrimalDualL1": "lbdviewer.solvers",
    "SignConsistency": "lbdviewer.solvers.consistency",
    "SolverState": "lbdviewer.solvers",
    "describe_sites": "lbdviewer.reconstruct",
    "fast_sites": "lbdviewer.sites",
    "get_model": "lbdviewer.library_models",
    "grid_sites": "lbdviewer.sites",
    "image_metrics": "lbdviewer.metrics",
    "invert_features": "lbdviewer.inversion",
    "iter_invert_features": "lbdviewer.inversion",
    "iter_reconstruct_image": "lbdviewer.reconstruct",
    "iter_reconstruct_patches": "lbdviewer.patches",
    "load_features": "lbdviewer.features",
    "load_image": "lbdviewer.io",
    "make_pattern": "lbdviewer.patterns",
    "max_measurements": "lbdviewer.patterns",
    "pack_bits": "lbdviewer.operators",
    "reconstruct_image": "lbdviewer.reconstruct",
    "reconstruct_patches": "lbdviewer.patches",
    "sample_image": "lbdviewer.io",
    "sample_images": "lbdviewer.io",
    "save_features": "lbdviewer.features",
    "save_json": "lbdviewer.io",
    "save_png": "lbdviewer.io",
    "sign_with_ties": "lbdviewer.operators",
    "unpack_bits": "lbdviewer.operators",
}


def __getattr__(name):
    if name in _HOMES:
        value = getattr(importlib.import_module(_HOMES[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'lbdviewer' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_HOMES))


__version__ = "0.1.0"

__all__ = [
    "BIHT",
    "FAMILIES",
    "DescriptorOperator",
    "FeatureSet",
    "HaarTransform",
    "JointOperator",
    "Keypoints",
    "Pattern",
    "PrimalDualL1",
    "SignConsistency",
    "SolverState",
    "describe_sites",
    "fast_sites",
    "get_model",
    "grid_sites",
    "image_metrics",
    "invert_features",
    "iter_invert_features",
    "iter_reconstruct_image",
    "iter_reconstruct_patches",
    "load_features",
    "load_image",
    "make_pattern",
    "max_measurements",
    "pack_bits",
    "reconstruct_image",
    "reconstruct_patches",
    "sample_image",
    "sample_images",
    "save_features",
    "save_json",
    "save_png",
    "sign_with_ties",
    "unpack_bits",
]
