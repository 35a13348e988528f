"""The joint whole-image operator: every site's descriptor from one image (:mod:`lbdviewer.joint.operator`).

``operator`` holds :func:`index_patterns`, :class:`JointOperator` and :func:`site_subset`;
``_tables`` builds the tables its kernels read; ``_kernels`` holds the
compiled (numba) kernels.
"""

from lbdviewer.joint.operator import JOINT_BACKENDS, TIE_ATOL, JointOperator, index_patterns, site_subset

__all__ = ["JOINT_BACKENDS", "TIE_ATOL", "JointOperator", "index_patterns", "site_subset"]
