"""What every solver shares: the snapshot it yields (:class:`SolverState`), its arrays' :func:`frozen_copy`, and
:class:`IterativeSolver`, whose ``run()`` is the last state of ``steps()``."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["IterativeSolver", "SolverState", "frozen_copy"]


@dataclass(frozen=True)
class SolverState:
    """Snapshot of a batched solver after one iteration (arrays are read-only copies).

    Attributes
    ----------
    iteration : int
        Iterations done so far (1 after the first step).
    x : numpy.ndarray, shape ``(B, *domain_shape)``
        Current estimates.
    objective : numpy.ndarray, shape (B,)
        Objective per row (BIHT: number of inconsistent bits
        :math:`\\|[b \\odot \\operatorname{sign}(Lx)]_-\\|_1`; primal-dual:
        :math:`\\lambda\\|Lx - b\\|_1 + \\|Wx\\|_1`).
    bit_consistency : numpy.ndarray, shape (B,), or None
        Share of bits of ``sign(Lx)`` equal to the input bits, when the input
        is binary; ``None`` for real-valued data.
    active : numpy.ndarray of bool, shape (B,)
        Rows still changing; a row reaching an exact fixed point is frozen.
    iterations_run : numpy.ndarray of int, shape (B,)
        Iterations each row actually ran (a frozen row stops counting).
    finished : bool
        True on the last snapshot: the iteration budget is spent or every row
        is frozen.
    """

    iteration: int
    x: np.ndarray
    objective: np.ndarray
    bit_consistency: np.ndarray | None
    active: np.ndarray
    iterations_run: np.ndarray
    finished: bool


def frozen_copy(array, dtype=None):
    """Return a read-only copy of ``array`` (optionally cast to ``dtype``)."""
    out = np.array(array, dtype=dtype, copy=True)
    out.flags.writeable = False
    return out


class IterativeSolver:
    """A solver as a generator of snapshots: ``steps()`` yields a :class:`SolverState` every iteration.

    Subclasses validate in ``__init__`` and implement :meth:`steps`; the GUI, the
    command line and the tests drive the same generator. :meth:`run` is the one
    driver loop: it exhausts the generator and returns its last state.
    """

    def steps(self):
        """Yield a frozen :class:`SolverState` after every iteration (the last one has ``finished`` set)."""
        raise NotImplementedError(f"{type(self).__name__} must implement steps()")

    def run(self):
        """Run to the end and return the final :class:`SolverState`."""
        state = None
        for state in self.steps():
            pass
        return state
