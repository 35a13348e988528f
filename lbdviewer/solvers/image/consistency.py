"""Sign consistency with a total-variation prior, for whole images.

The joint whole-image problem has millions of sign constraints that overlap
heavily. BIHT moves information one local step at a time, so brightness
crosses large flat areas very slowly; a quasi-Newton method on a smooth
objective moves it across the whole image at once. :class:`SignConsistency`
minimises

.. math::
    \\sum_i \\big[\\delta_i - b_i (A x - t)_i\\big]_+^2
    \\;+\\; \\mu \\sum_{q} \\sqrt{|\\nabla x|_q^2 + \\varepsilon^2}
    \\quad\\text{subject to}\\quad x \\in [0, 1]^{H \\times W},

a one-sided squared hinge that is zero exactly when every bit
:math:`b = \\operatorname{sign}(A p - t)` is reproduced (:math:`t`: the
operator's thresholds, 0 but for BEBLID and TEBLID; with a margin ``delta`` on
the strict side of each test and none on the side that takes ties, so flat
areas that produced tie bits can stay flat), plus a
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

from lbdviewer._validation import check_iterations
from lbdviewer.bits import sign_with_ties
from lbdviewer._runtime.parallel import map_parallel
from lbdviewer.solvers.state import IterativeSolver, SolverState, frozen_copy

DEFAULT_MARGIN = 2.0 / 255.0
DEFAULT_SMOOTHNESS = 8e-4
TV_EPSILON = 1.0 / 255.0
HISTORY = 5  # curvature pairs kept by L-BFGS
ARMIJO = 1e-4  # sufficient-decrease constant of the projected line search
MAX_BACKTRACKS = 30
PROJECTED_GRADIENT_TOLERANCE = 1e-5  # stop tests as in SciPy's L-BFGS-B defaults
RELATIVE_DECREASE_TOLERANCE = 1e7 * np.finfo(float).eps
CURVATURE_TOLERANCE = 1e-10
FIRST_STEP = 1.0 / 16  # largest pixel change of a steepest-descent step (a step of 1 overshoots: 4 backtracks)
PASS_CHUNK = 4096  # pixels a vector pass handles at a time (stays in the first-level caches)
PARALLEL_MIN_PIXELS = 65536  # smaller images run the vector passes in the calling thread


@numba.njit(cache=True, nogil=True, fastmath=True)
def _curvature_pass(x, x_old, gradient, gradient_old, s_memory, y_memory, row, lo, hi, store):
    """Pixels ``lo..hi`` of one L-BFGS update, in one sweep over the memory.

    If ``store``: writes ``s = x - x_old`` and ``y = gradient - gradient_old``
    into row ``row`` of the memories. With ``p`` the projected gradient (0
    where ``x`` sits on a bound the gradient pushes against), returns the
    partial dot products ``dots[0, r] = S_r . y``, ``dots[1, r] = Y_r . y``,
    ``dots[2, r] = S_r . p``, ``dots[3, r] = Y_r . p`` for every row ``r``
    (rows 0 and 1 only if ``store``) and ``max |p|``. Work goes in chunks
    of ``PASS_CHUNK`` pixels, as slices, so every loop vectorises; each
    chunk's sums are single precision, their total double.
    """
    rows = s_memory.shape[0]
    dots = np.zeros((4, rows))
    largest = 0.0
    projected = np.empty(PASS_CHUNK, dtype=gradient.dtype)
    zero, one = x.dtype.type(0.0), x.dtype.type(1.0)
    for c0 in range(lo, hi, PASS_CHUNK):
        c1 = min(c0 + PASS_CHUNK, hi)
        xs, gs, p = x[c0:c1], gradient[c0:c1], projected[:c1 - c0]
        s, y = s_memory[row, c0:c1], y_memory[row, c0:c1]
        if store:
            x0, g0 = x_old[c0:c1], gradient_old[c0:c1]
            for i in range(p.shape[0]):
                s[i] = xs[i] - x0[i]
                y[i] = gs[i] - g0[i]
        chunk_largest = zero
        for i in range(p.shape[0]):
            g = gs[i]
            p[i] = zero if (xs[i] <= zero and g > zero) or (xs[i] >= one and g < zero) else g
            chunk_largest = max(chunk_largest, abs(p[i]))
        largest = max(largest, np.float64(chunk_largest))
        for r in range(rows):
            sr, yr = s_memory[r, c0:c1], y_memory[r, c0:c1]
            if store:
                with_y = _chunk_dots(sr, yr, y)
                dots[0, r] += with_y[0]
                dots[1, r] += with_y[1]
            with_p = _chunk_dots(sr, yr, p)
            dots[2, r] += with_p[0]
            dots[3, r] += with_p[1]
    return dots, largest


@numba.njit(cache=True, nogil=True, fastmath=True, inline="always")
def _chunk_dots(a, b, v):
    """``(a . v, b . v)`` of one chunk, summed in the vectors' precision (a chunk is short)."""
    first, second = v.dtype.type(0.0), v.dtype.type(0.0)
    for i in range(v.shape[0]):
        first += a[i] * v[i]
        second += b[i] * v[i]
    return first, second


@numba.njit(cache=True, nogil=True, fastmath=True)
def _direction_pass(x, gradient, s_memory, y_memory, coef_s, coef_y, gamma, lo, hi, out):
    """``out = -(gamma p + sum_r coef_s[r] S_r + coef_y[r] Y_r)`` on free pixels ``lo..hi``, 0 on the others.

    ``p`` is the projected gradient (see :func:`_curvature_pass`); rows with
    both coefficients 0 are skipped. Returns the partial ``gradient . out``.
    """
    rows = s_memory.shape[0]
    zero, one = x.dtype.type(0.0), x.dtype.type(1.0)
    scale = x.dtype.type(gamma)
    slope = 0.0
    for c0 in range(lo, hi, PASS_CHUNK):
        c1 = min(c0 + PASS_CHUNK, hi)
        xs, gs, d = x[c0:c1], gradient[c0:c1], out[c0:c1]
        for i in range(d.shape[0]):
            d[i] = scale * gs[i]
        for r in range(rows):
            if coef_s[r] == 0.0 and coef_y[r] == 0.0:
                continue
            sr, yr = s_memory[r, c0:c1], y_memory[r, c0:c1]
            a, b = x.dtype.type(coef_s[r]), x.dtype.type(coef_y[r])
            for i in range(d.shape[0]):
                d[i] += a * sr[i] + b * yr[i]
        for i in range(d.shape[0]):
            g = gs[i]
            free = not ((xs[i] <= zero and g > zero) or (xs[i] >= one and g < zero))
            d[i] = -d[i] if free else zero
            slope += np.float64(g) * np.float64(d[i])
    return slope


@numba.njit(cache=True, nogil=True, fastmath=True)
def _projected_step(x, direction, step, gradient, out):
    """``out = clip(x + step d, 0, 1)``; returns ``g . (out - x)``, the Armijo slope of the projected step."""
    slope = 0.0
    for i in range(x.shape[0]):
        out[i] = min(max(x[i] + step * direction[i], 0.0), 1.0)
        slope += gradient[i] * (out[i] - x[i])
    return slope


def operator_margins(operator, x):
    """``A x - t``: ``operator.margins(x)`` if it has them (:class:`lbdviewer.operators.joint.operator.JointOperator`), else ``A x``.

    Examples
    --------
    >>> from lbdviewer.testing import MatrixOperator
    >>> operator_margins(MatrixOperator([[1.0, -1.0]]), np.array([0.75, 0.25])).tolist()
    [0.5]
    """
    margins = getattr(operator, "margins", None)
    return margins(x) if callable(margins) else operator.forward(x)


def remember_pair(order, sty, yty, dots, row):
    """Keep the pair just stored in memory row ``row`` if its curvature is positive; returns the new ``order``.

    ``dots`` are those of :func:`_curvature_pass`: its column ``row`` of
    ``S^T Y`` and of ``Y^T Y`` go into ``sty`` and ``yty``; the oldest of
    ``HISTORY + 1`` pairs is dropped. Pairs with ``s . y <= 0`` (tiny next to
    ``y . y``) would make the approximation indefinite and are skipped.
    """
    if dots[0, row] > CURVATURE_TOLERANCE * dots[1, row]:
        sty[:, row] = dots[0]
        yty[:, row] = yty[row, :] = dots[1]
        order = (order + [row])[-HISTORY:]
    return order


def compact_coefficients(order, sty, yty, projected_dots, largest):
    r"""Coefficients of the L-BFGS direction in its compact form (Byrd, Nocedal and Schnabel, 1994).

    With the stored pairs ``S = [s_i]``, ``Y = [y_i]`` (oldest first),
    ``R`` the upper triangle of ``S^T Y``, ``D`` its diagonal and
    ``gamma = s^T y / y^T y`` of the newest pair, the inverse-Hessian
    approximation of the two-loop recursion is

    .. math::
        H = \gamma I + [S\;\gamma Y]
            \begin{bmatrix} R^{-T}(D + \gamma Y^T Y) R^{-1} & -R^{-T} \\ -R^{-1} & 0 \end{bmatrix}
            \begin{bmatrix} S^T \\ \gamma Y^T \end{bmatrix},

    so ``H p = gamma p + S u - gamma Y v`` with ``v = R^{-1} S^T p`` and
    ``u = R^{-T}((D + gamma Y^T Y) v - gamma Y^T p)``: two sweeps over the
    memory (the dot products, then the combination) instead of ``4k + 2``.

    Parameters
    ----------
    order : list of int
        Memory rows of the pairs in use, oldest first.
    sty, yty : ndarray, shape (R, R)
        ``S_i . y_j`` (needed for ``i`` no newer than ``j``) and ``y_i . y_j``, by memory row.
    projected_dots : ndarray, shape (2, R)
        ``S_r . p`` and ``Y_r . p``.
    largest : float
        ``max |p|``: with no pairs the direction is ``-FIRST_STEP p / max |p|``.

    Returns
    -------
    coef_s, coef_y : ndarray, shape (R,)
    gamma : float
        ``-H p = -(gamma p + sum coef_s[r] S_r + coef_y[r] Y_r)``.
    """
    return _compact_coefficients(np.asarray(order, dtype=np.int64), sty, yty, projected_dots, largest)


@numba.njit(cache=True, nogil=True)
def _compact_coefficients(order, sty, yty, projected_dots, largest):
    """:func:`compact_coefficients` compiled: ``k <= HISTORY`` pairs, two triangular solves by substitution."""
    rows, k = sty.shape[0], order.shape[0]
    coef_s, coef_y = np.zeros(rows), np.zeros(rows)
    if k == 0:
        return coef_s, coef_y, FIRST_STEP / max(largest, 1e-30)
    newest = order[k - 1]
    gamma = sty[newest, newest] / yty[newest, newest]
    v = np.zeros(k)
    for i in range(k - 1, -1, -1):  # R v = S^T p, R upper triangular: R[i, j] = s_i . y_j for i <= j
        total = projected_dots[0, order[i]]
        for j in range(i + 1, k):
            total -= sty[order[i], order[j]] * v[j]
        v[i] = total / sty[order[i], order[i]]
    right = np.empty(k)
    for i in range(k):  # (D + gamma Y^T Y) v - gamma Y^T p
        total = sty[order[i], order[i]] * v[i] - gamma * projected_dots[1, order[i]]
        for j in range(k):
            total += gamma * yty[order[i], order[j]] * v[j]
        right[i] = total
    u = np.zeros(k)
    for i in range(k):  # R^T u = right, R^T lower triangular
        total = right[i]
        for j in range(i):
            total -= sty[order[j], order[i]] * u[j]
        u[i] = total / sty[order[i], order[i]]
    for i in range(k):
        coef_s[order[i]] = u[i]
        coef_y[order[i]] = -gamma * v[i]
    return coef_s, coef_y, gamma


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
    return float(_add_total_variation(x, float(epsilon), 1.0, grad, 0, x.shape[0])), grad


@numba.njit(cache=True, nogil=True, fastmath=True)
def _add_total_variation(x, epsilon, weight, grad, row_lo, row_hi):
    """Adds ``weight`` times the gradient of the smoothed TV to rows ``row_lo..row_hi`` of ``grad``.

    Returns the TV of those rows: their differences to the right and to the
    row below. Only rows ``row_lo..row_hi`` of ``grad`` are written (the
    difference to the row above is computed again), so row ranges can run
    in parallel on one gradient. Row sweeps that vectorise.
    """
    height, width = x.shape
    e2, w = x.dtype.type(epsilon * epsilon), x.dtype.type(weight)
    value = 0.0
    across = np.zeros(width + 1, dtype=x.dtype)  # across[c]: slope of the difference of columns c - 1, c
    above, below = np.zeros(width, dtype=x.dtype), np.zeros(width, dtype=x.dtype)  # vertical slopes
    if row_lo > 0:
        upper, row = x[row_lo - 1], x[row_lo]
        for c in range(width):
            d = row[c] - upper[c]
            above[c] = w * d / np.sqrt(d * d + e2)
    for r in range(row_lo, row_hi):
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


class SignConsistency(IterativeSolver):
    """Whole-image reconstruction from bits by projected L-BFGS on hinge + TV.

    Parameters
    ----------
    operator : object
        Linear operator with ``forward(x) -> (S, M)`` for an image ``x`` of
        ``domain_shape`` and ``adjoint``, e.g.
        :class:`lbdviewer.operators.joint.operator.JointOperator`.
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
    orientation : (ndarray, ndarray), optional
        Per-site ``(scale, direction)`` that orient the margins
        (:func:`lbdviewer.solvers.image.orientation.ramp_orientation`); needs an
        operator with a fused ``squared_hinge`` (:class:`lbdviewer.operators.joint.operator.JointOperator`).
    reweigh : (int, callable), optional
        ``(after, update)``: after ``after`` iterations (``1 <= after <
        iterations``), ``update(image)`` returns ``(orientation, start)``:
        the orientation the margins take from then on (same form as
        ``orientation``), and ``None`` or an image to go on from. The
        objective changes there, and the L-BFGS curvature pairs, which
        describe the objective before, are dropped: kept, they let rounding
        steer the rest of the solve (camera at offset 8 from starts perturbed
        by 1e-4: 0.873-0.909 BRIEF, 0.805-0.865 FREAK; dropped:
        0.899-0.902, 0.826-0.831). Until then a slow
        decrease does not end the solve; a step that cannot decrease the
        objective at all brings the update forward. Needs ``orientation``.
    gradient_tolerance, decrease_tolerance : float, optional
        Stop tests (0 turns one off): the largest projected-gradient entry
        and the objective's relative decrease in one iteration below which
        the solve ends (default ``PROJECTED_GRADIENT_TOLERANCE`` and
        ``RELATIVE_DECREASE_TOLERANCE``). With a weak total variation the
        objective barely moves while large-scale brightness still does
        (camera, BRIEF, offset 8, average margin 2e-3 growing as the test
        length squared, ``smoothness`` 4e-6: the defaults stop at iteration
        2086, correlation 0.839; with both off it runs to 2808, 0.848).

    Notes
    -----
    One iteration: the free variables are those not held at a bound by the
    gradient; L-BFGS (``HISTORY`` pairs, in the compact form of
    :func:`compact_coefficients`: one sweep over the memory for its dot
    products, fused with the total variation, and one for the direction, each
    split into row ranges run in parallel) gives a
    direction on them, and a backtracking Armijo search along the projected
    path :math:`P_{[0,1]}(x + t d)`, :math:`t = 1, 1/2, \\dots`, picks the step.
    Curvature pairs with :math:`s^T y \\le 0` are skipped. It stops, like
    SciPy's L-BFGS-B, when the projected gradient vanishes (``1e-5``) or the
    objective stops decreasing (relative ``1e7`` machine epsilons).
    Operators with a fused ``squared_hinge`` (:class:`lbdviewer.operators.joint.operator.JointOperator`)
    evaluate the data term in one pass; others use ``forward`` and ``adjoint``.

    Examples
    --------
    >>> from lbdviewer.patterns import make_pattern
    >>> from lbdviewer.operators.joint import JointOperator
    >>> image = np.zeros((16, 24)); image[:, 12:] = 1.0
    >>> op = JointOperator(image.shape, [[0, 0], [0, 8]], make_pattern("brief", patch_size=16, m=64))
    >>> bits = sign_with_ties(op.forward(image), atol=1e-6)
    >>> state = SignConsistency(op, bits, smoothness=0.0, iterations=60).run()
    >>> bool(state.bit_consistency[0] > 0.95), bool(state.x[0][:, 16:].mean() > state.x[0][:, :8].mean())
    (True, True)
    """

    def __init__(self, operator, bits, *, margin=DEFAULT_MARGIN, smoothness=DEFAULT_SMOOTHNESS,
                 iterations=300, tie_positive=None, x0=None, orientation=None, reweigh=None,
                 gradient_tolerance=None, decrease_tolerance=None):
        margin = np.asarray(margin, dtype=np.float32)
        if not (np.all(margin >= 0) and np.any(margin > 0)):
            raise ValueError(f"margin must be non-negative and not all zero, got {margin!r}")
        n_patterns = len(getattr(operator, "patterns", (None,)))
        if not smoothness >= 0:
            raise ValueError(f"smoothness must be non-negative, got {smoothness!r}")
        iterations = check_iterations(iterations)
        gradient_tolerance = PROJECTED_GRADIENT_TOLERANCE if gradient_tolerance is None else gradient_tolerance
        decrease_tolerance = RELATIVE_DECREASE_TOLERANCE if decrease_tolerance is None else decrease_tolerance
        for name, value in (("gradient_tolerance", gradient_tolerance), ("decrease_tolerance", decrease_tolerance)):
            if not value >= 0:
                raise ValueError(f"{name} must be non-negative, got {value!r}")
        self.gradient_tolerance, self.decrease_tolerance = float(gradient_tolerance), float(decrease_tolerance)
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
        if orientation is not None and not callable(getattr(operator, "squared_hinge", None)):
            raise ValueError(f"orientation needs an operator with squared_hinge, got {type(operator).__name__}")
        # read-only copies, one tuple for the whole solve (the operator keeps its kernel table by identity)
        self.orientation = None if orientation is None else tuple(frozen_copy(v) for v in orientation)
        if reweigh is not None:
            after, update = reweigh
            if orientation is None:
                raise ValueError("reweigh needs an orientation: its update replaces it")
            if not (isinstance(after, (int, np.integer)) and 1 <= after < iterations):
                raise ValueError(f"reweigh's iteration must be an integer in [1, iterations={iterations}), got "
                                 f"{after!r}")
            if not callable(update):
                raise ValueError(f"reweigh's update must be callable, got {update!r}")
            reweigh = (int(after), update)
        self.reweigh = reweigh
        self.atol = 1e-5
        self.smoothness = float(smoothness)
        self.iterations = int(iterations)
        self.x0 = np.full(self.shape, 0.5) if x0 is None else np.asarray(x0, dtype=np.float64)
        height = self.shape[0]
        ranges = min(numba.get_num_threads(), max(1, height * self.shape[1] // PARALLEL_MIN_PIXELS))
        bounds = np.linspace(0, height, ranges + 1).astype(int)
        self._row_ranges = [(int(lo), int(hi)) for lo, hi in zip(bounds[:-1], bounds[1:]) if hi > lo]
        if self.x0.shape != self.shape:
            raise ValueError(f"x0 must have shape {self.shape}, got {self.x0.shape}")

    def _evaluate(self, x, memory=None, previous=None):
        """Objective, gradient (float32, flat) and share of reproduced bits at ``x`` (float32, flat).

        Given the L-BFGS ``memory = (s_memory, y_memory)``, also runs the
        sweep of :func:`_curvature_pass` at ``x`` (``previous = (x_old,
        gradient_old, row)``: the pair to store) with the total variation, row
        range by row range in parallel, and returns its dot products (summed
        over the ranges) and ``max |p|`` too (else None, None).
        """
        image = x.reshape(self.shape)
        value, gradient, consistency = self._data_term(image)
        gradient = np.asarray(gradient, dtype=np.float32).reshape(self.shape)
        flat = gradient.ravel()
        x_old, gradient_old, row = previous if previous is not None else (x, flat, 0)
        width = self.shape[1]

        def rows(bounds):
            tv = (_add_total_variation(image, TV_EPSILON, self.smoothness, gradient, *bounds)
                  if self.smoothness else 0.0)
            if memory is None:
                return tv, None, None
            return (tv, *_curvature_pass(x, x_old, flat, gradient_old, *memory, row, bounds[0] * width,
                                         bounds[1] * width, previous is not None))

        parts = map_parallel(rows, self._row_ranges)
        value += self.smoothness * sum(part[0] for part in parts)
        if memory is None:
            return value, flat, consistency, None, None
        return value, flat, consistency, sum(part[1] for part in parts), max(part[2] for part in parts)

    def _data_term(self, image):
        """The squared hinge at ``image``: its value, gradient (an image) and share of bits reproduced."""
        if callable(getattr(self.operator, "squared_hinge", None)):
            value, gradient, agree = self.operator.squared_hinge(image, self._targets, self.margin,
                                                                 orientation=self.orientation, atol=self.atol)
            consistency = agree / self.n_bits
        else:
            values = operator_margins(self.operator, image)
            positive = np.unpackbits(self.packed, axis=1, count=values.shape[-1], bitorder="little") == 1
            sign = np.where(positive, np.float32(1.0), np.float32(-1.0))
            rows = self.margin[getattr(self.operator, "site_pattern", np.zeros(len(values), dtype=int))]
            strict = ~positive if self.tie_positive else positive  # the side taking ties needs no margin
            residual = np.maximum(np.where(strict, rows, 0.0) - sign * values, 0.0)
            value = float(np.sum(residual.astype(np.float64) ** 2))
            gradient = self.operator.adjoint(-2.0 * sign * residual)
            bits = sign_with_ties(values, tie_positive=self.tie_positive, atol=self.atol)
            consistency = float(np.mean((bits > 0) == positive))
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
        # Single precision throughout (dot products add up in double): every
        # sweep over the image costs half as much.
        x = np.clip(self.x0.ravel(), 0.0, 1.0).astype(np.float32)
        n = x.size
        rows = HISTORY + 1  # one spare row takes each new pair before its curvature is checked
        memory = (np.zeros((rows, n), dtype=np.float32), np.zeros((rows, n), dtype=np.float32))
        sty, yty = np.zeros((rows, rows)), np.zeros((rows, rows))  # s_i . y_j and y_i . y_j by memory row
        order = []  # rows of the pairs in use, oldest first
        value, gradient, consistency, dots, largest = self._evaluate(x, memory)
        direction, candidate = np.empty(n, dtype=np.float32), np.empty(n, dtype=np.float32)
        # Until the reweigh, a slow decrease does not end the solve; no decrease at all reweighs at once.
        pending, stuck = self.reweigh is not None, False
        for iteration in range(1, self.iterations + 1):
            if pending and (stuck or iteration == self.reweigh[0] + 1 or largest <= self.gradient_tolerance):
                x, value, gradient, consistency, dots, largest = self._reweighed(x, memory)
                pending, stuck = False, False
                order.clear()  # the pairs describe the objective before the reweigh: start the curvature afresh
            if largest <= self.gradient_tolerance:
                yield self._state(iteration, x, value, consistency, True)
                return
            if self._direction(x, gradient, memory, order, sty, yty, dots, largest, direction) >= 0.0:
                order.clear()  # not a descent direction: forget the curvature pairs
                self._direction(x, gradient, memory, order, sty, yty, dots, largest, direction)
            spare = next(r for r in range(rows) if r not in order)
            step, trial = 1.0, None
            for _ in range(MAX_BACKTRACKS):
                slope = _projected_step(x, direction, step, gradient, candidate)
                trial = self._evaluate(candidate, memory, (x, gradient, spare))
                if trial[0] <= value + ARMIJO * slope:
                    break
                step, trial = step * 0.5, None
            if trial is None:  # no decrease left along any step: converged
                stuck = pending and iteration < self.iterations
                yield self._state(iteration, x, value, consistency, not stuck)
                if stuck:
                    continue
                return
            new_value, new_gradient, consistency, dots, largest = trial
            order = remember_pair(order, sty, yty, dots, spare)
            decrease = value - new_value
            x, candidate = candidate, x
            value, gradient = new_value, new_gradient
            finished = (iteration == self.iterations or not pending
                        and decrease <= self.decrease_tolerance * max(abs(value), abs(value + decrease), 1.0))
            yield self._state(iteration, x, value, consistency, finished)
            if finished:
                return

    def _reweighed(self, x, memory):
        """Apply ``reweigh``'s update at ``x``; returns the point to go on from and its evaluation there."""
        orientation, start = self.reweigh[1](x.reshape(self.shape).copy())
        self.orientation = tuple(frozen_copy(v) for v in orientation)
        if start is not None:
            start = np.asarray(start, dtype=np.float64)
            if start.shape != self.shape:
                raise ValueError(f"reweigh's start must have shape {self.shape}, got {start.shape}")
            x = np.clip(start.ravel(), 0.0, 1.0).astype(np.float32)
        return (x, *self._evaluate(x, memory))

    def _direction(self, x, gradient, memory, order, sty, yty, dots, largest, out):
        """The L-BFGS direction into ``out`` (see :func:`compact_coefficients`); returns ``gradient . out``."""
        coef_s, coef_y, gamma = compact_coefficients(order, sty, yty, dots[2:], largest)
        width = self.shape[1]

        def rows(bounds):
            return _direction_pass(x, gradient, *memory, coef_s, coef_y, gamma, bounds[0] * width, bounds[1] * width,
                                   out)

        return sum(map_parallel(rows, self._row_ranges))
