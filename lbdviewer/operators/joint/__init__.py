"""The joint whole-image operator: every site's descriptor from one image, with its tables and compiled kernels."""

from lbdviewer._lazy import lazy_namespace

__getattr__, __dir__, __all__ = lazy_namespace(__name__, {
    "JointOperator": "operator",
    "JOINT_BACKENDS": "operator",
    "TIE_ATOL": "operator",
    "site_subset": "operator",
    "index_patterns": "site_patterns",
    "pair_directions": "site_patterns",
})
