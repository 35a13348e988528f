"""The snapshot every solver yields: :class:`SolverState`, and :func:`frozen_copy` for its arrays."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class SolverState:
    """Snapshot of a batched solver after one iteration (arrays are read-only copies).

    Attributes
    ----------
    iteration : int
        Iterations done so far (1 after the first step).
    x : numpy.ndarray, shape (B, *domain_shape)
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
