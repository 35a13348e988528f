"""Reconstruct a batch of patches from their descriptors, in memory-bounded chunks.

The two paper methods: BIHT on bits (the paper's 200 iterations, K = 40 % of
the Haar coefficients) and the primal-dual l1 solver on real values or bits
(the paper's 1000 iterations; lambda = :data:`~lbdviewer.solvers.patch.primal_dual.DEFAULT_LAM`,
not the paper's 0.1, which leaves most patches constant with unit-l1 fields).
"""

from __future__ import annotations

import numpy as np

from lbdviewer._validation import check_choice, check_int
from lbdviewer.solvers.patch.primal_dual import DEFAULT_LAM, PrimalDualL1
from lbdviewer.solvers.patch.biht import BIHT
from lbdviewer.solvers.patch.base import domain_shape_of

PATCH_METHODS = ("biht", "primal-dual")  # the solvers of one patch at a time
DEFAULT_ITERATIONS = {"biht": 200, "primal-dual": 1000}


def iter_reconstruct_patches(descriptors, operator, *, method="biht", iterations=None,
                             sparsity=0.4, lam=DEFAULT_LAM, binary=None, chunk=1024):
    """Reconstruct patches chunk by chunk, yielding progress after each chunk.

    Parameters
    ----------
    descriptors : array_like, shape (B, M)
        Bits in {-1, +1} or real measurements, one row per patch.
    operator : object
        The descriptor operator (``forward``/``adjoint``/``shape`` and
        ``patch_shape`` or ``domain_shape``), e.g.
        :class:`lbdviewer.operators.descriptor.DescriptorOperator`.
    method : {"biht", "primal-dual"}
        Solver; BIHT needs bits.
    iterations : int, optional
        Iteration budget; default 200 for BIHT and 1000 for primal-dual.
    sparsity : float
        BIHT: fraction of Haar coefficients kept.
    lam : float
        Primal-dual: data weight (default :data:`~lbdviewer.solvers.patch.primal_dual.DEFAULT_LAM`).
    binary : bool, optional
        Primal-dual: whether the descriptors are bits. Default: read from
        the array by :func:`lbdviewer.bits.descriptor_encoding` (integers
        are bits, floats real values; floats that are all -1 or +1 are
        refused, since they could be either).
    chunk : int
        Patches solved together, >= 1; bounds the memory to a few arrays of
        ``chunk x N``.

    Yields
    ------
    done : int
        Patches finished so far.
    total : int
        ``B``.
    patches : numpy.ndarray, shape ``(n_chunk, *patch_shape)``
        The estimates of this chunk, float32 in [0, 1].

    Raises
    ------
    ValueError
        If ``method`` or ``chunk`` is not valid, or primal-dual is left to
        guess whether float descriptors of only -1 and +1 are bits (solver
        parameters are checked by the solvers).

    Examples
    --------
    >>> from lbdviewer.operators.descriptor import DescriptorOperator
    >>> from lbdviewer.patterns import make_pattern
    >>> op = DescriptorOperator(make_pattern("brief", patch_size=8, m=32))
    >>> bits = op.describe(np.random.default_rng(0).random((3, 8, 8)))
    >>> [(done, total, part.shape) for done, total, part in
    ...  iter_reconstruct_patches(bits, op, iterations=20, chunk=2)]
    [(2, 3, (2, 8, 8)), (3, 3, (1, 8, 8))]
    """
    check_choice("method", method, PATCH_METHODS)
    chunk = check_int("chunk", chunk, minimum=1)
    descriptors = np.asarray(descriptors)
    if descriptors.ndim != 2:
        raise ValueError(f"descriptors must have shape (B, M), got {descriptors.shape}")
    if iterations is None:
        iterations = DEFAULT_ITERATIONS[method]
    total = descriptors.shape[0]
    for start in range(0, total, chunk):
        part = descriptors[start:start + chunk]
        if method == "biht":
            solver = BIHT(operator, part, sparsity=sparsity, iterations=iterations)
        else:
            solver = PrimalDualL1(operator, part, lam=lam, iterations=iterations, binary=binary)
        estimate = np.clip(solver.run().x, 0.0, 1.0).astype(np.float32)
        yield start + part.shape[0], total, estimate


def reconstruct_patches(descriptors, operator, *, method="biht", iterations=None,
                        sparsity=0.4, lam=DEFAULT_LAM, binary=None, chunk=1024):
    """Reconstruct every patch of a batch of descriptors.

    Same parameters as :func:`iter_reconstruct_patches`.

    Returns
    -------
    numpy.ndarray, shape ``(B, *patch_shape)``
        Estimates, float32 in [0, 1] (mean 0.5 per patch).

    Examples
    --------
    >>> from lbdviewer.operators.descriptor import DescriptorOperator
    >>> from lbdviewer.patterns import make_pattern
    >>> op = DescriptorOperator(make_pattern("brief", patch_size=8, m=32))
    >>> bits = op.describe(np.random.default_rng(0).random((2, 8, 8)))
    >>> out = reconstruct_patches(bits, op, iterations=20)
    >>> out.shape, float(out.min()) >= 0.0, bool(np.allclose(out.mean(axis=(1, 2)), 0.5))
    ((2, 8, 8), True, True)
    """
    parts = [part for _, _, part in iter_reconstruct_patches(
        descriptors, operator, method=method, iterations=iterations, sparsity=sparsity,
        lam=lam, binary=binary, chunk=chunk)]
    if not parts:
        return np.zeros((0,) + domain_shape_of(operator), dtype=np.float32)
    return np.concatenate(parts)
