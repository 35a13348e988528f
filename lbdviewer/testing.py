"""Helpers for testing operators and solvers: :func:`dot_test` and :class:`MatrixOperator`.

Every operator test runs :func:`dot_test` (pylops' ``dottest``): for random
``x`` and ``y``, :math:`\\langle A x, y\\rangle = \\langle x, A^T y\\rangle`
up to rounding.
"""

from __future__ import annotations

import numpy as np
from scipy import sparse


def dot_test(op, *, rng=0, batch=(), rtol=1e-10, atol=0.0):
    r"""Check that ``op.adjoint`` is the adjoint of ``op.forward`` on random data.

    Draws ``x`` of shape ``(*batch, *op.domain_shape)`` and ``y`` of shape
    ``(*batch, *op.range_shape)`` (standard normal, float64) and compares
    :math:`l = \langle A x, y\rangle` with :math:`r = \langle x, A^T y\rangle`.

    Parameters
    ----------
    op : LinearOperator
        Anything with ``forward``, ``adjoint``, ``domain_shape`` and ``range_shape``.
    rng : int or numpy.random.Generator
    batch : tuple of int
        Leading batch axes (checks that batches pass through).
    rtol, atol : float
        Pass when :math:`|l - r| \le` ``rtol`` :math:`(|l| + |r|) / 2 +` ``atol``.

    Returns
    -------
    (float, float)
        ``(l, r)``.

    Raises
    ------
    AssertionError
        When they differ by more.

    Examples
    --------
    >>> dot_test(MatrixOperator(np.arange(6.0).reshape(2, 3)))[0] != 0
    True
    """
    rng = np.random.default_rng(rng)
    batch = tuple(batch)
    x = rng.standard_normal(batch + tuple(op.domain_shape))
    y = rng.standard_normal(batch + tuple(op.range_shape))
    lhs = float(np.vdot(op.forward(x), y))
    rhs = float(np.vdot(x, op.adjoint(y)))
    if not abs(lhs - rhs) <= rtol * (abs(lhs) + abs(rhs)) / 2 + atol:
        raise AssertionError(f"dot test failed: <Ax, y> = {lhs!r}, <x, A^T y> = {rhs!r}")
    return lhs, rhs


class MatrixOperator:
    """A dense matrix as a :class:`lbdviewer.linear.LinearOperator`, for tests.

    Parameters
    ----------
    matrix : array_like, shape (M, N)
    domain_shape : tuple of int, optional
        Shape of one input (product ``N``); default ``(N,)``.
    factors : bool
        Also expose ``field_matrix() = A`` and ``pair_matrix() = I`` (sparse),
        the factorisation the solvers' fused paths take.
    tie_positive : bool, optional
        Give the operator a ``pattern.tie_positive`` (the bit of a tie).

    Examples
    --------
    >>> op = MatrixOperator([[1.0, 2.0], [0.0, 1.0]])
    >>> op.forward(np.array([1.0, 1.0])).tolist(), op.adjoint(np.array([1.0, 0.0])).tolist()
    ([3.0, 1.0], [1.0, 2.0])
    """

    def __init__(self, matrix, domain_shape=None, *, factors=False, tie_positive=None):
        self.a = np.asarray(matrix)
        self.shape = self.a.shape
        self.dtype = self.a.dtype
        self.domain_shape = (self.shape[1],) if domain_shape is None else tuple(domain_shape)
        self.range_shape = (self.shape[0],)
        if factors:
            self.field_matrix = lambda: sparse.csr_matrix(self.a)
            self.pair_matrix = lambda: sparse.identity(self.shape[0], format="csr")
        if tie_positive is not None:
            self.pattern = _TieRule(bool(tie_positive))

    def forward(self, x):
        x = np.asarray(x)
        return x.reshape(x.shape[: x.ndim - len(self.domain_shape)] + (-1,)) @ self.a.T

    def adjoint(self, y):
        y = np.asarray(y)
        return (y @ self.a).reshape(y.shape[:-1] + self.domain_shape)


class _TieRule:
    """The part of a Pattern the solvers read from an operator: its tie rule."""

    def __init__(self, tie_positive):
        self.tie_positive = tie_positive
