"""Solvers of a whole image at once through the joint operator: sign consistency, likelihood, coherent contrast."""

from lbdviewer._lazy import lazy_namespace

__getattr__, __dir__, __all__ = lazy_namespace(__name__, {
    "SignConsistency": "consistency",
    "BitLikelihood": "likelihood",
    "JointBIHT": "joint",
    "JointSignConsistency": "joint",
    "JointLikelihood": "likelihood",
    "CoarseToDense": "joint",
    "FlatRange": "joint",
    "JointCoherentContrast": "coherence",
})
