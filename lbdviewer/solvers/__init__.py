"""Solvers that yield a frozen :class:`SolverState` every iteration: of patches (``patch``) and of whole images (``image``)."""

from lbdviewer._lazy import lazy_namespace

__getattr__, __dir__, __all__ = lazy_namespace(__name__, {
    "SolverState": "state", "IterativeSolver": "state",
    "CONSTRAINTS": "projections",
    "project": "projections",
    "BIHT": "patch.biht",
    "reference_biht": "patch.biht",
    "PrimalDualL1": "patch.primal_dual",
    "DEFAULT_LAM": "patch.primal_dual",
    "reference_primal_dual": "patch.primal_dual",
    "SignConsistency": "image.consistency",
    "BitLikelihood": "image.likelihood",
    "JointBIHT": "image.joint",
    "JointSignConsistency": "image.joint",
    "JointLikelihood": "image.likelihood",
    "CoarseToDense": "image.joint",
    "FlatRange": "image.joint",
    "JointCoherentContrast": "image.coherence",
})
