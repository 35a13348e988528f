"""Batched solvers of patches: BIHT (Alg. 2 of the paper) and primal-dual l1 (Alg. 1), with their compiled kernels."""

from lbdviewer._lazy import lazy_namespace

__getattr__, __dir__, __all__ = lazy_namespace(__name__, {
    "BIHT": "biht",
    "reference_biht": "biht",
    "PrimalDualL1": "primal_dual",
    "DEFAULT_LAM": "primal_dual",
    "reference_primal_dual": "primal_dual",
    "BatchedSolver": "base",
})
