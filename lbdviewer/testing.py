"""Helpers for testing operators and solvers: :func:`dot_test`, :class:`MatrixOperator`, :func:`joint_sign_problem`.

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
    """A dense matrix as a :class:`lbdviewer.operators.linear.LinearOperator`, for tests.

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


def joint_sign_problem(family, *, seed=0, size=40, patch_size=16, offset=8, m=128):
    """A small whole-image sign problem: a smooth random image, its joint operator and its bits.

    The image is a random walk along rows, ``clip(cumsum(N(0, 1)) / 20 + 0.5, 0, 1)``;
    patches of side ``patch_size`` sit on a grid of spacing ``offset``; the
    bits are :math:`\\operatorname{sign}(L x)` with the pattern's tie rule
    (:func:`lbdviewer.bits.sign_with_ties`, ``atol=1e-6``).

    Parameters
    ----------
    family : str
        Descriptor family of :func:`lbdviewer.patterns.families.make_pattern`.
    seed : int
        Seed of the image.
    size, patch_size, offset, m : int
        Image side, patch side, grid spacing and bits per descriptor.

    Returns
    -------
    image : ndarray, shape (size, size)
    op : lbdviewer.operators.joint.operator.JointOperator
    bits : ndarray of int8, shape ``op.range_shape``

    Examples
    --------
    >>> image, op, bits = joint_sign_problem("brief")
    >>> bits.shape == op.range_shape and set(np.unique(bits)) <= {-1, 1}
    True
    """
    from lbdviewer.operators.joint.operator import JointOperator
    from lbdviewer.bits import sign_with_ties
    from lbdviewer.patterns.families import make_pattern
    from lbdviewer.reconstruction.sites import grid_sites

    rng = np.random.default_rng(seed)
    image = np.clip(np.cumsum(rng.normal(size=(size, size)), axis=1) / 20 + 0.5, 0, 1)
    sites = grid_sites(image.shape, patch_size=patch_size, offset=offset)
    op = JointOperator(image.shape, sites, make_pattern(family, patch_size=patch_size, m=m))
    return image, op, sign_with_ties(op.forward(image), tie_positive=op.tie_positive, atol=1e-6)
