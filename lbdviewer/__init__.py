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

from lbdviewer.features import FeatureSet, Keypoints, load_features, save_features
from lbdviewer.inversion import invert_features, iter_invert_features
from lbdviewer.io import load_image, sample_image, sample_images, save_json, save_png
from lbdviewer.joint import JointOperator
from lbdviewer.library_models import get_model
from lbdviewer.metrics import image_metrics
from lbdviewer.operators import DescriptorOperator, pack_bits, sign_with_ties, unpack_bits
from lbdviewer.patches import iter_reconstruct_patches, reconstruct_patches
from lbdviewer.patterns import FAMILIES, Pattern, make_pattern, max_measurements
from lbdviewer.reconstruct import describe_sites, iter_reconstruct_image, reconstruct_image
from lbdviewer.sites import fast_sites, grid_sites
from lbdviewer.solvers import BIHT, PrimalDualL1, SolverState
from lbdviewer.solvers.consistency import SignConsistency
from lbdviewer.wavelets import HaarTransform

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
