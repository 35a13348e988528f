r"""The contract every linear operator of lbdviewer meets, and the one power-method norm estimate.

:class:`LinearOperator` is a structural protocol (nothing to inherit):
:class:`lbdviewer.operators.descriptor.DescriptorOperator` (a patch to its ``M``
measurements) and :class:`lbdviewer.operators.joint.operator.JointOperator` (an image to every
site's measurements) both satisfy it, and so does
:class:`lbdviewer.testing.MatrixOperator`. ``forward`` maps arrays of shape
``(..., *domain_shape)`` to ``(..., *range_shape)`` and ``adjoint`` back;
``shape`` is the ``(M, N)`` of the matrix they apply.

Examples
--------
>>> from lbdviewer.operators.descriptor import DescriptorOperator
>>> from lbdviewer.patterns import make_pattern
>>> isinstance(DescriptorOperator(make_pattern("brief", patch_size=8, m=16)), LinearOperator)
True
"""

from __future__ import annotations

import math
from typing import Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class LinearOperator(Protocol):
    """A linear map ``A`` with its adjoint, applied to batches.

    Attributes
    ----------
    shape : (int, int)
        ``(M, N)``: ``M = prod(range_shape)``, ``N = prod(domain_shape)``.
    dtype : numpy.dtype
        Working precision of :meth:`forward` and :meth:`adjoint`.
    domain_shape : tuple of int
        Shape of one input.
    range_shape : tuple of int
        Shape of one output.
    """

    shape: tuple
    dtype: np.dtype
    domain_shape: tuple
    range_shape: tuple

    def forward(self, x):
        """``A x``: ``(..., *domain_shape)`` to ``(..., *range_shape)``."""

    def adjoint(self, y):
        """``A^T y``: ``(..., *range_shape)`` to ``(..., *domain_shape)``."""


def power_norm(forward, adjoint, domain_shape, *, iterations=100, rtol=0.0, rng=0, dtype=np.float64):
    r"""Spectral norm :math:`\|A\|_2` by the power method on :math:`A^T A`.

    Starting from a standard normal ``v`` (``rng``, cast to ``dtype``),
    repeat :math:`w = A^T A v`, :math:`\sigma^2 \approx \|w\|`,
    :math:`v = w / \|w\|`.

    Parameters
    ----------
    forward, adjoint : callable
        ``A`` and ``A^T`` on arrays of ``domain_shape`` (and the range).
    domain_shape : tuple of int
    iterations : int
        At most this many products with :math:`A^T A`.
    rtol : float
        Stop when the estimate of :math:`\sigma^2` changes by at most
        ``rtol`` times itself (0: always run ``iterations``).
    rng : int or numpy.random.Generator
    dtype : numpy dtype
        Precision of the iterate.

    Returns
    -------
    float
        The estimate (from below); 0 if ``A^T A v`` vanishes.

    Examples
    --------
    >>> a = np.diag([3.0, 1.0])
    >>> round(power_norm(lambda v: a @ v, lambda r: a.T @ r, (2,)), 6)
    3.0
    """
    vector = np.random.default_rng(rng).standard_normal(domain_shape).astype(dtype)
    value = 0.0
    for _ in range(iterations):
        vector = np.asarray(adjoint(forward(vector)), dtype=dtype)
        new_value = float(np.linalg.norm(vector))
        if new_value == 0.0:
            return 0.0
        vector = vector / new_value
        converged = rtol > 0 and abs(new_value - value) <= rtol * new_value
        value = new_value
        if converged:
            break
    return math.sqrt(value)
