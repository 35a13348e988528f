"""Linear operators: the descriptor's sensing matrix ``L``, the joint whole-image and pyramid operators, the Haar transform."""

from lbdviewer._lazy import lazy_namespace

__getattr__, __dir__, __all__ = lazy_namespace(__name__, {
    "DescriptorOperator": "descriptor",
    "OPERATOR_BACKENDS": "descriptor",
    "field_kernels": "descriptor",
    "LinearOperator": "linear",
    "power_norm": "linear",
    "HaarTransform": "wavelets",
    "JointOperator": "joint.operator",
    "JOINT_BACKENDS": "joint.operator",
    "TIE_ATOL": "joint.operator",
    "site_subset": "joint.operator",
    "PyramidJointOperator": "pyramid",
})
