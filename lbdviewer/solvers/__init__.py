"""Batched reconstruction solvers that yield a snapshot after every iteration.

:class:`BIHT` inverts binary descriptors (Alg. 2 of the paper),
:class:`PrimalDualL1` real-valued or binary ones (Alg. 1).
"""

from .state import SolverState
from .biht import BIHT, reference_biht
from .primal_dual import DEFAULT_LAM, PrimalDualL1, reference_primal_dual

__all__ = ["BIHT", "DEFAULT_LAM", "PrimalDualL1", "SolverState", "reference_biht", "reference_primal_dual"]
