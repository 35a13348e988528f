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
HISTORY = 5  # curvature pairs kept by L-BFGS
ARMIJO = 1e-4  # sufficient-decrease constant of the projected line search
MAX_BACKTRACKS = 30
PROJECTED_GRADIENT_TOLERANCE = 1e-5  # stop tests as in SciPy's L-BFGS-B defaults
RELATIVE_DECREASE_TOLERANCE = 1e7 * np.finfo(float).eps
CURVATURE_TOLERANCE = 1e-10


@numba.njit(cache=True, nogil=True, fastmath=True)
def _dot(a, b):
    """``a . b`` of two flat vectors, accumulated in float64, without BLAS (threaded BLAS crawls on small loaded machines)."""
    total = 0.0
    for i in range(a.shape[0]):
        total += np.float64(a[i]) * np.float64(b[i])
    return total


@numba.njit(cache=True, nogil=True, fastmath=True)
def _projected_gradient(x, gradient, out, free):
    """``out`` = the gradient, 0 where it pushes a pixel held at a bound outwards (``free`` False); returns ``max |out|``."""
    largest = 0.0
    for i in range(x.shape[0]):
        g = gradient[i]
        free[i] = not ((x[i] <= 0.0 and g > 0.0) or (x[i] >= 1.0 and g < 0.0))
        out[i] = g if free[i] else 0.0
        largest = max(largest, abs(out[i]))
    return largest


@numba.njit(cache=True, nogil=True, fastmath=True)
def _update_and_dot(out, alpha, update, probe):
    """``out += alpha * update``, then return ``probe . out``, in one pass."""
    total = 0.0
    for i in range(out.shape[0]):
        out[i] += alpha * update[i]
        total += np.float64(probe[i]) * np.float64(out[i])
    return total


@numba.njit(cache=True, nogil=True, fastmath=True)
def _two_loop(projected, free, s_memory, y_memory, rho, y_squared, order, out):
    """L-BFGS direction ``out = -H g`` on the free pixels (``projected`` is 0 on the others).

    ``order`` lists the rows of the curvature memory, oldest first; with no
    pairs the direction is steepest descent scaled to a largest step of 1.
    Each update of the two-loop recursion is fused with the dot product the
    next one needs, so ``k`` pairs cost ``2k + 2`` passes over the image.
    """
    out[:] = projected
    count = order.shape[0]
    if count == 0:
        scale = max(np.max(np.abs(out)), 1e-30)
        for i in range(out.shape[0]):
            out[i] = -out[i] / scale if free[i] else 0.0
        return
    alphas = np.empty(count)
    dot = _dot(s_memory[order[count - 1]], out)
    for k in range(count - 1, -1, -1):  # newest to oldest
        alphas[k] = rho[order[k]] * dot
        probe = s_memory[order[k - 1]] if k > 0 else s_memory[order[k]]
        dot = _update_and_dot(out, -alphas[k], y_memory[order[k]], probe)
    newest = order[count - 1]
    out *= 1.0 / (rho[newest] * y_squared[newest])
    dot = _dot(y_memory[order[0]], out)
    for k in range(count):  # oldest to newest
        beta = alphas[k] - rho[order[k]] * dot
        probe = y_memory[order[k + 1]] if k + 1 < count else y_memory[order[k]]
        dot = _update_and_dot(out, beta, s_memory[order[k]], probe)
    for i in range(out.shape[0]):
        out[i] = -out[i] if free[i] else 0.0


@numba.njit(cache=True, nogil=True, fastmath=True)
def _projected_step(x, direction, step, gradient, out):
    """``out = clip(x + step d, 0, 1)``; returns ``g . (out - x)``, the Armijo slope of the projected step."""
    slope = 0.0
    for i in range(x.shape[0]):
        out[i] = min(max(x[i] + step * direction[i], 0.0), 1.0)
        slope += gradient[i] * (out[i] - x[i])
    return slope


def smoothed_total_variation(x, epsilon=TV_EPSILON):
    """Smoothed anisotropic TV ``sum sqrt(dx^2 + e^2) + sqrt(dy^2 + e^2)`` and its gradient.

    Examples
    --------
    >>> value, grad = smoothed_total_variation(np.zeros((3, 3)), 0.5)
    >>> float(value), grad.shape
    (6.0, (3, 3))
    """
    x = np.ascontiguousarray(x, dtype=np.float32 if np.asarray(x).dtype == np.float32 else np.float64)
    grad = np.zeros_like(x)
    return float(_add_total_variation(x, float(epsilon), 1.0, grad)), grad


@numba.njit(cache=True, nogil=True, fastmath=True)
def _add_total_variation(x, epsilon, weight, grad):
    """Adds ``weight`` times the gradient of the smoothed TV of ``x`` to ``grad``; returns the TV.

    One sweep down the rows; each row's differences (to the right, and to the
    row below) are computed once, in loops that vectorise, and the row's
    gradient is written once.
    """
    height, width = x.shape
    e2, w = x.dtype.type(epsilon * epsilon), x.dtype.type(weight)
    value = 0.0
    across = np.zeros(width + 1, dtype=x.dtype)  # across[c]: slope of the difference of columns c - 1, c
    above, below = np.zeros(width, dtype=x.dtype), np.zeros(width, dtype=x.dtype)  # vertical slopes
    for r in range(height):
        row, total = x[r], x.dtype.type(0.0)
        for c in range(width - 1):
            d = row[c + 1] - row[c]
            q = d * d + e2
            inverse = x.dtype.type(1.0) / np.sqrt(q)
            total += q * inverse
            across[c + 1] = w * d * inverse
        if r + 1 < height:
            following = x[r + 1]
            for c in range(width):
                d = following[c] - row[c]
                q = d * d + e2
                inverse = x.dtype.type(1.0) / np.sqrt(q)
                total += q * inverse
                below[c] = w * d * inverse
        else:
            below[:] = 0.0
        out = grad[r]
        for c in range(width):
            out[c] += across[c] - across[c + 1] + above[c] - below[c]
        above, below = below, above
        value += total
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
        Bits in {-1, +1}. They are kept packed, 8 a byte.
    margin : float or array_like, shape (M,) or (len(operator.patterns), M)
        ``delta``: how far past zero a strict test must be pushed, for all
        tests, per test, or per test of each of the operator's patterns.
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
        n_patterns = len(getattr(operator, "patterns", (None,)))
        if not smoothness >= 0:
            raise ValueError(f"smoothness must be non-negative, got {smoothness!r}")
        if isinstance(iterations, bool) or int(iterations) != iterations or iterations < 1:
            raise ValueError(f"iterations must be a positive integer, got {iterations!r}")
        self.operator = operator
        self.shape = tuple(operator.domain_shape)
        bits = np.asarray(bits)
        expected = getattr(operator, "range_shape", None) or operator.forward(np.zeros(self.shape)).shape
        if bits.shape != tuple(expected):
            raise ValueError(f"bits must have shape {tuple(expected)}, got {bits.shape}")
        if tie_positive is None:
            tie_positive = bool(getattr(operator, "tie_positive", False))
        self.tie_positive = tie_positive
        self.n_bits = bits.size
        self.packed = np.packbits(bits > 0, axis=1, bitorder="little")
        # The fused kernel's own layout of the bits, built once (JointOperator.block_bits).
        block_bits = getattr(operator, "block_bits", None)
        self._targets = block_bits(self.packed) if callable(block_bits) else self.packed
        try:
            self.margin = np.ascontiguousarray(np.broadcast_to(margin, (n_patterns, bits.shape[1])))
        except ValueError:
            raise ValueError(f"margin must be a number or have shape ({bits.shape[1]},) or "
                             f"({n_patterns}, {bits.shape[1]}), got {margin.shape}") from None
        self.atol = 1e-5
        self.smoothness = float(smoothness)
        self.iterations = int(iterations)
        self.x0 = np.full(self.shape, 0.5) if x0 is None else np.asarray(x0, dtype=np.float64)
        if self.x0.shape != self.shape:
            raise ValueError(f"x0 must have shape {self.shape}, got {self.x0.shape}")

    def _evaluate(self, x):
        """Objective, gradient (float32, flat) and share of reproduced bits at ``x`` (float32, flat)."""
        image = x.reshape(self.shape)
        if callable(getattr(self.operator, "squared_hinge", None)):
            value, gradient, agree = self.operator.squared_hinge(image, self._targets, self.margin, atol=self.atol)
            consistency = agree / self.n_bits
        else:
            values = self.operator.forward(image)
            positive = np.unpackbits(self.packed, axis=1, count=values.shape[-1], bitorder="little") == 1
            sign = np.where(positive, np.float32(1.0), np.float32(-1.0))
            rows = self.margin[getattr(self.operator, "site_pattern", np.zeros(len(values), dtype=int))]
            strict = ~positive if self.tie_positive else positive  # the side taking ties needs no margin
            residual = np.maximum(np.where(strict, rows, 0.0) - sign * values, 0.0)
            value = float(np.sum(residual.astype(np.float64) ** 2))
            gradient = self.operator.adjoint(-2.0 * sign * residual)
            bits = sign_with_ties(values, tie_positive=self.tie_positive, atol=self.atol)
            consistency = float(np.mean((bits > 0) == positive))
        gradient = np.asarray(gradient, dtype=np.float32).reshape(self.shape)
        if self.smoothness:
            value += self.smoothness * _add_total_variation(image, TV_EPSILON, self.smoothness, gradient)
        return value, gradient.ravel(), consistency

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
        # Single precision throughout (values and dot products add up in double):
        # every vector pass over the image costs half as much.
        x = np.clip(self.x0.ravel(), 0.0, 1.0).astype(np.float32)
        n = x.size
        value, gradient, consistency = self._evaluate(x)
        s_memory = np.empty((HISTORY, n), dtype=np.float32)  # curvature pairs, a ring buffer
        y_memory = np.empty((HISTORY, n), dtype=np.float32)
        rho, y_squared = np.empty(HISTORY), np.empty(HISTORY)
        order = []  # rows of the memory, oldest first
        projected, free = np.empty(n, dtype=np.float32), np.empty(n, dtype=bool)
        direction, candidate = np.empty(n, dtype=np.float32), np.empty(n, dtype=np.float32)
        for iteration in range(1, self.iterations + 1):
            if _projected_gradient(x, gradient, projected, free) <= PROJECTED_GRADIENT_TOLERANCE:
                yield self._state(iteration, x, value, consistency, True)
                return
            _two_loop(projected, free, s_memory, y_memory, rho, y_squared, np.array(order, dtype=np.int64), direction)
            if _dot(gradient, direction) >= 0.0:  # not a descent direction: forget the curvature pairs
                order.clear()
                _two_loop(projected, free, s_memory, y_memory, rho, y_squared, np.array(order, dtype=np.int64),
                          direction)
            step, trial = 1.0, None
            for _ in range(MAX_BACKTRACKS):
                slope = _projected_step(x, direction, step, gradient, candidate)
                trial = self._evaluate(candidate)
                if trial[0] <= value + ARMIJO * slope:
                    break
                step, trial = step * 0.5, None
            if trial is None:  # no decrease left along any step: converged
                yield self._state(iteration, x, value, consistency, True)
                return
            new_value, new_gradient, consistency = trial
            s_vector, y_vector = candidate - x, new_gradient - gradient
            curvature, squared = _dot(s_vector, y_vector), _dot(y_vector, y_vector)
            if curvature > CURVATURE_TOLERANCE * squared:
                row = (order[-1] + 1) % HISTORY if order else 0
                s_memory[row], y_memory[row] = s_vector, y_vector
                rho[row], y_squared[row] = 1.0 / curvature, squared
                order = [r for r in order if r != row][-(HISTORY - 1):] + [row]
            decrease = value - new_value
            x, candidate = candidate, x
            value, gradient = new_value, new_gradient
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
