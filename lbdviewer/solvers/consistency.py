"""Sign consistency with a total-variation prior, for whole images.

The joint whole-image problem has millions of sign constraints that overlap
heavily. BIHT moves information one local step at a time, so brightness
crosses large flat areas very slowly; a quasi-Newton method on a smooth
objective moves it across the whole image at once. :class:`SignConsistency`
minimises

.. math::
    \\sum_i \\big[\\delta_i - b_i (A x)_i\\big]_+^2
    \\;+\\; \\mu \\sum_{q} \\sqrt{|\\nabla x|_q^2 + \\varepsilon^2}
    \\quad\\text{subject to}\\quad x \\in [0, 1]^{H \\times W},

a one-sided squared hinge that is zero exactly when every bit is reproduced
(with a margin ``delta`` on the strict side of each test and none on the side
that takes ties, so flat areas that produced tie bits can stay flat), plus a
smoothed total variation that fills regions between edges. A projected
L-BFGS handles the box (SciPy's L-BFGS-B spends ~80 ms an iteration on its
breakpoint search at 512 x 512, several times the objective itself). Bits
only fix signs, so the pair ``(delta, mu)`` fixes the contrast: multiplying
both by ``a`` scales the solution's contrast about 0.5 by ``a`` until the box
binds.
"""

from __future__ import annotations

import numba
import numpy as np

from lbdviewer.operators import sign_with_ties
from lbdviewer.solvers.base import SolverState, frozen_copy

DEFAULT_MARGIN = 2.0 / 255.0
DEFAULT_SMOOTHNESS = 8e-4
TV_EPSILON = 1.0 / 255.0
HISTORY = 10  # curvature pairs kept by L-BFGS
ARMIJO = 1e-4  # sufficient-decrease constant of the projected line search
MAX_BACKTRACKS = 30
PROJECTED_GRADIENT_TOLERANCE = 1e-5  # stop tests as in SciPy's L-BFGS-B defaults
RELATIVE_DECREASE_TOLERANCE = 1e7 * np.finfo(float).eps
CURVATURE_TOLERANCE = 1e-10


@numba.njit(cache=True, nogil=True, fastmath=True)
def _dot(a, b):
    """``a . b`` of two flat float64 vectors, without BLAS (threaded BLAS crawls on small loaded machines)."""
    total = 0.0
    for i in range(a.shape[0]):
        total += a[i] * b[i]
    return total


@numba.njit(cache=True, nogil=True)
def _axpy(alpha, x, y):
    """``y += alpha * x`` in place."""
    for i in range(y.shape[0]):
        y[i] += alpha * x[i]


def _two_loop(gradient, memory):
    """L-BFGS direction :math:`-H g` from the curvature pairs (steepest descent, scaled, if none)."""
    q = gradient.copy()
    if not memory:
        return -q / max(float(np.max(np.abs(q))), 1e-300)
    alphas = []
    for s_vector, y_vector, rho in reversed(memory):
        alpha = rho * _dot(s_vector, q)
        _axpy(-alpha, y_vector, q)
        alphas.append(alpha)
    s_vector, y_vector, rho = memory[-1]
    q *= 1.0 / (rho * _dot(y_vector, y_vector))
    for (s_vector, y_vector, rho), alpha in zip(memory, reversed(alphas)):
        _axpy(alpha - rho * _dot(y_vector, q), s_vector, q)
    return -q


def smoothed_total_variation(x, epsilon=TV_EPSILON):
    """Smoothed isotropic-free TV ``sum sqrt(dx^2 + e^2) + sqrt(dy^2 + e^2)`` and its gradient.

    Examples
    --------
    >>> value, grad = smoothed_total_variation(np.zeros((3, 3)), 0.5)
    >>> float(value), grad.shape
    (6.0, (3, 3))
    """
    x = np.ascontiguousarray(x, dtype=np.float64)
    grad = np.zeros_like(x)
    return float(_total_variation_kernel(x, float(epsilon), grad)), grad


@numba.njit(cache=True, nogil=True)
def _total_variation_kernel(x, epsilon, grad):
    """Value of the smoothed TV of ``x``; adds its gradient to ``grad`` (one pass)."""
    height, width = x.shape
    e2 = epsilon * epsilon
    value = 0.0
    for r in range(height):
        for c in range(width):
            if c + 1 < width:
                d = x[r, c + 1] - x[r, c]
                n = np.sqrt(d * d + e2)
                value += n
                grad[r, c + 1] += d / n
                grad[r, c] -= d / n
            if r + 1 < height:
                d = x[r + 1, c] - x[r, c]
                n = np.sqrt(d * d + e2)
                value += n
                grad[r + 1, c] += d / n
                grad[r, c] -= d / n
    return value


class SignConsistency:
    """Whole-image reconstruction from bits by projected L-BFGS on hinge + TV.

    Parameters
    ----------
    operator : object
        Linear operator with ``forward(x) -> (S, M)`` for an image ``x`` of
        ``domain_shape`` and ``adjoint``, e.g.
        :class:`lbdviewer.joint.JointOperator`.
    bits : array_like of int, shape (S, M)
        Bits in {-1, +1}.
    margin : float
        ``delta``: how far past zero a strict test must be pushed.
    smoothness : float
        ``mu``, the weight of the total variation. The default was tuned on
        512x512 photos at offset 8 (about 7 measurements per pixel); with far
        fewer measurements per pixel, lower it.
    iterations : int
        L-BFGS iterations.
    tie_positive : bool, optional
        Bit of a tie; default ``operator.tie_positive`` or False.
    x0 : array_like, optional
        Start (default 0.5 everywhere).

    Notes
    -----
    One iteration: the free variables are those not held at a bound by the
    gradient; the L-BFGS two-loop recursion (``HISTORY`` pairs) gives a
    direction on them, and a backtracking Armijo search along the projected
    path :math:`P_{[0,1]}(x + t d)`, :math:`t = 1, 1/2, \\dots`, picks the step.
    Curvature pairs with :math:`s^T y \\le 0` are skipped. It stops, like
    SciPy's L-BFGS-B, when the projected gradient vanishes (``1e-5``) or the
    objective stops decreasing (relative ``1e7`` machine epsilons).
    Operators with a fused ``squared_hinge`` (:class:`lbdviewer.joint.JointOperator`)
    evaluate the data term in one pass; others use ``forward`` and ``adjoint``.

    Examples
    --------
    >>> from lbdviewer.patterns import make_pattern
    >>> from lbdviewer.joint import JointOperator
    >>> image = np.zeros((16, 24)); image[:, 12:] = 1.0
    >>> op = JointOperator(image.shape, [[0, 0], [0, 8]], make_pattern("brief", patch_size=16, m=64))
    >>> bits = sign_with_ties(op.forward(image), atol=1e-6)
    >>> state = SignConsistency(op, bits, smoothness=0.0, iterations=60).run()
    >>> bool(state.bit_consistency[0] > 0.95), bool(state.x[0][:, 16:].mean() > state.x[0][:, :8].mean())
    (True, True)
    """

    def __init__(self, operator, bits, *, margin=DEFAULT_MARGIN, smoothness=DEFAULT_SMOOTHNESS,
                 iterations=300, tie_positive=None, x0=None):
        margin = np.asarray(margin, dtype=np.float32)
        if not (np.all(margin >= 0) and np.any(margin > 0)):
            raise ValueError(f"margin must be non-negative and not all zero, got {margin!r}")
        if not smoothness >= 0:
            raise ValueError(f"smoothness must be non-negative, got {smoothness!r}")
        if isinstance(iterations, bool) or int(iterations) != iterations or iterations < 1:
            raise ValueError(f"iterations must be a positive integer, got {iterations!r}")
        self.operator = operator
        self.shape = tuple(operator.domain_shape)
        bits = np.asarray(bits)
        probe = operator.forward(np.zeros(self.shape, dtype=np.float32))
        if bits.shape != probe.shape:
            raise ValueError(f"bits must have shape {probe.shape}, got {bits.shape}")
        if tie_positive is None:
            tie_positive = bool(getattr(operator, "tie_positive", False))
        self.tie_positive = tie_positive
        self.positive = bits > 0
        # The side of each test that takes ties needs no margin.
        strict = ~self.positive if tie_positive else self.positive
        self.margin = np.where(strict, margin, 0.0).astype(np.float32)
        self.sign = np.where(self.positive, 1.0, -1.0).astype(np.float32)
        self._packed = None  # the bits packed 8 a byte, for a fused squared_hinge
        self.atol = 1e-5
        self.smoothness = float(smoothness)
        self.iterations = int(iterations)
        self.x0 = np.full(self.shape, 0.5) if x0 is None else np.asarray(x0, dtype=np.float64)
        if self.x0.shape != self.shape:
            raise ValueError(f"x0 must have shape {self.shape}, got {self.x0.shape}")

    def _evaluate(self, x):
        """Objective, gradient (float64, flat) and share of reproduced bits at ``x``."""
        image = x.reshape(self.shape).astype(np.float32)
        if callable(getattr(self.operator, "squared_hinge", None)):
            if self._packed is None:
                self._packed = np.packbits(self.positive, axis=1, bitorder="little")
            value, gradient, agree = self.operator.squared_hinge(image, self._packed, self.margin,
                                                                 atol=self.atol)
            consistency = agree / self.positive.size
        else:
            values = self.operator.forward(image)
            residual = np.maximum(self.margin - self.sign * values, 0.0)
            value = float(np.sum(residual.astype(np.float64) ** 2))
            gradient = self.operator.adjoint(-2.0 * self.sign * residual)
            bits = sign_with_ties(values, tie_positive=self.tie_positive, atol=self.atol)
            consistency = float(np.mean((bits > 0) == self.positive))
        gradient = np.asarray(gradient, dtype=np.float64).ravel()
        if self.smoothness:
            tv, tv_gradient = smoothed_total_variation(x.reshape(self.shape))
            value += self.smoothness * tv
            gradient += self.smoothness * tv_gradient.ravel()
        return value, gradient, consistency

    def _state(self, iteration, x, objective, consistency, finished):
        return SolverState(
            iteration=iteration,
            x=frozen_copy(x.reshape(1, *self.shape)),
            objective=frozen_copy([objective], np.float64),
            bit_consistency=frozen_copy([consistency], np.float64),
            active=frozen_copy([not finished]),
            iterations_run=frozen_copy([iteration]),
            finished=finished,
        )

    def steps(self):
        """Yield a :class:`SolverState` after every projected L-BFGS iteration."""
        x = np.clip(self.x0.ravel(), 0.0, 1.0)
        value, gradient, consistency = self._evaluate(x)
        memory = []  # (s, y, 1 / s.y), oldest first
        for iteration in range(1, self.iterations + 1):
            free = ~(((x <= 0.0) & (gradient > 0.0)) | ((x >= 1.0) & (gradient < 0.0)))
            projected = np.where(free, gradient, 0.0)
            if np.max(np.abs(projected), initial=0.0) <= PROJECTED_GRADIENT_TOLERANCE:
                yield self._state(iteration, x, value, consistency, True)
                return
            direction = _two_loop(projected, memory)
            direction[~free] = 0.0
            slope = _dot(gradient, direction)
            if slope >= 0.0:  # not a descent direction: forget the curvature pairs
                memory.clear()
                direction = _two_loop(projected, memory)
                slope = _dot(gradient, direction)
            step, accepted = 1.0, None
            for _ in range(MAX_BACKTRACKS):
                candidate = np.clip(x + step * direction, 0.0, 1.0)
                trial = self._evaluate(candidate)
                if trial[0] <= value + ARMIJO * _dot(gradient, candidate - x):
                    accepted = candidate, trial
                    break
                step *= 0.5
            if accepted is None:  # no decrease left along any step: converged
                yield self._state(iteration, x, value, consistency, True)
                return
            candidate, (new_value, new_gradient, consistency) = accepted
            s_vector, y_vector = candidate - x, new_gradient - gradient
            curvature = _dot(s_vector, y_vector)
            if curvature > CURVATURE_TOLERANCE * _dot(y_vector, y_vector):
                memory.append((s_vector, y_vector, 1.0 / curvature))
                del memory[:-HISTORY]
            decrease = value - new_value
            x, value, gradient = candidate, new_value, new_gradient
            finished = (iteration == self.iterations
                        or decrease <= RELATIVE_DECREASE_TOLERANCE * max(abs(value), abs(value + decrease), 1.0))
            yield self._state(iteration, x, value, consistency, finished)
            if finished:
                return

    def run(self):
        """Run to the end and return the last :class:`SolverState`."""
        state = None
        for state in self.steps():
            pass
        return state
