r"""Binary Iterative Hard Thresholding (BIHT), Alg. 2 of the paper, batched.

Solves, for every row :math:`b \in \{-1, +1\}^M` of a batch,

.. math::

    \min_x \; J(x) = \big\|[\,b \odot \operatorname{sign}(Lx)\,]_-\big\|_1
    \quad\text{s.t.}\quad \|Wx\|_0 \le K,\; x \in S,

by repeating :math:`a = x + \tfrac{\tau}{2} L^T(b - \operatorname{sign}(Lx))`,
:math:`x \leftarrow P_S\big(W^T H_K(W a)\big)`.
"""

from __future__ import annotations

import numba
import numpy as np

from ..operators import sign_with_ties
from ..wavelets import haar_adjoint_inplace, haar_forward_inplace
from .base import (
    CONSTRAINT_CODES,
    BatchedSolver,
    SolverState,
    check_data,
    check_positive,
    differs,
    flat_start,
    frozen_copy,
    keep_largest,
    keep_largest_inplace,
    project_inplace,
    project_rows,
    run_rows,
    sparse_adjoint,
    sparse_forward,
)


class _Run:
    """Mutable iteration state of one pass of :meth:`BIHT.steps` (flat rows)."""

    def __init__(self, x, lx, active):
        self.x = x
        self.lx = lx
        self.active = active
        self.iteration = 0
        self.iterations_run = np.zeros(x.shape[0], dtype=np.int64)
        self.inconsistent = np.zeros(x.shape[0], dtype=np.int64)


class BIHT(BatchedSolver):
    r"""Binary Iterative Hard Thresholding for a batch of binary descriptors.

    Parameters
    ----------
    operator : object
        Linear operator :math:`L` with ``forward``, ``adjoint``, ``shape``
        ``(M, N)`` and ``domain_shape`` (or ``patch_shape``). If it has
        ``pattern.tie_positive``, that decides the bit of a tie.
    bits : array_like, shape (B, M)
        Descriptors in {-1, +1}, one row per patch.
    sparsity : float
        Fraction of transform coefficients kept, :math:`K = \operatorname{round}(sN)`
        (at least 1), in ``(0, 1]``. Paper: 0.4.
    iterations : int
        Maximum number of iterations, >= 1. Paper: 200.
    step : float, optional
        Gradient step :math:`\tau`; default :math:`1/M`.
    constraint : {"patch", "box", None}
        Domain :math:`S`: ``"patch"`` = :math:`[0,1]^N` with mean 0.5 (exact
        projection), ``"box"`` = :math:`[0,1]^N`, ``None`` = unit-norm estimates
        (classical 1-bit compressive sensing).
    transform : {"haar", None}
        Sparsity basis :math:`W`: orthonormal Haar (:class:`HaarTransform`) or
        the identity.
    atol : float
        Tie tolerance: :math:`|(Lx)_i| \le` ``atol`` counts as a tie.
    backend : {"auto", "fused", "batched", "reference"}
        Execution path (see :mod:`lbdviewer.solvers.base`). ``"auto"`` takes
        ``"fused"`` when the operator has ``field_matrix``/``pair_matrix``,
        else ``"batched"``. ``"reference"`` is the slow dense per-patch loop.

    Raises
    ------
    ValueError
        On bad parameters; the message names the parameter and the value.

    Notes
    -----
    Start :math:`x^{(0)} = 0.5` (``None``: 0). The first step is
    :math:`a^{(1)} = x^{(0)} + \frac{\tau}{2} L^T b`: :math:`Lx^{(0)}` is zero
    up to rounding and its sign is taken as 0, as in the paper. Later steps use
    :math:`\operatorname{sign}` with ties resolved like the descriptor
    (:func:`lbdviewer.operators.sign_with_ties`), so a row whose bits are all the tie
    value is already consistent at the flat start: it is frozen there from the
    outset. Then :math:`x^{(i+1)} = P_S\big(W^T H_K(W a^{(i+1)})\big)` with
    :math:`H_K` keeping the :math:`K` largest magnitudes (ties in index order).
    A row whose iterate does not change (an exact fixed point, which repeats
    forever) is frozen and costs nothing afterwards; the generator ends when
    the budget is spent or every row is frozen.

    Examples
    --------
    >>> import numpy as np
    >>> class Dense:
    ...     def __init__(self, matrix):
    ...         self.a, self.shape, self.domain_shape = matrix, matrix.shape, (matrix.shape[1],)
    ...     def forward(self, x):
    ...         return x @ self.a.T
    ...     def adjoint(self, y):
    ...         return y @ self.a
    >>> L = np.random.default_rng(0).standard_normal((64, 16))
    >>> x_true = np.zeros(16); x_true[[2, 9]] = [1.0, -0.5]
    >>> bits = np.where(L @ x_true > 0, 1, -1)[None]
    >>> state = BIHT(Dense(L), bits, sparsity=2 / 16, iterations=50,
    ...              constraint=None, transform=None).run()
    >>> int(state.objective[0]), sorted(np.flatnonzero(state.x[0]).tolist())
    (0, [2, 9])
    """

    def __init__(self, operator, bits, *, sparsity=0.4, iterations=200, step=None,
                 constraint="patch", transform="haar", atol=1e-6, backend="auto"):
        self._bind(operator)
        self.bits = check_data("bits", bits, self.m, binary=True)
        if isinstance(sparsity, bool) or not 0.0 < sparsity <= 1.0:
            raise ValueError(f"sparsity must be in (0, 1], got {sparsity!r}")
        self.sparsity = float(sparsity)
        self.k = max(1, int(round(self.sparsity * self.n)))
        self.step = 1.0 / self.m if step is None else check_positive("step", step)
        self.atol = float(atol)
        if not self.atol >= 0.0:
            raise ValueError(f"atol must be >= 0, got {atol!r}")
        self._configure(iterations=iterations, constraint=constraint, transform=transform, backend=backend)

    # -- internals ----------------------------------------------------------------

    def _start(self):
        n_rows = self.bits.shape[0]
        dtype = np.float64 if self.backend == "reference" else np.float32
        x = flat_start(self.constraint, n_rows, self.n, dtype)
        run = _Run(x, np.zeros((n_rows, self.m), dtype=dtype), np.ones(n_rows, dtype=bool))
        # L x0 = 0 exactly in exact arithmetic: every bit reads as a tie.
        tie = 1 if self.tie_positive else -1
        run.inconsistent = np.count_nonzero(self.bits != tie, axis=1).astype(np.int64)
        run.active = run.inconsistent > 0
        return run

    def _snapshot(self, run, finished):
        x = run.x.reshape((run.x.shape[0],) + self.domain_shape)
        objective = run.inconsistent.astype(np.float64)
        return SolverState(
            iteration=run.iteration,
            x=frozen_copy(x),
            objective=frozen_copy(objective),
            bit_consistency=frozen_copy(1.0 - objective / self.m),
            active=frozen_copy(run.active),
            iterations_run=frozen_copy(run.iterations_run),
            finished=bool(finished),
        )

    def _advance_fused(self, run, n_steps):
        run_rows(
            _biht_rows, run.active, run.x, run.lx, self.bits, run.active, run.iterations_run, run.inconsistent,
            n_steps, run.iteration == 0, np.float32(self.step / 2), self.k,
            CONSTRAINT_CODES[self.constraint], *self._grid,
            self.transform_kind == "haar", 1 if self.tie_positive else -1, self.atol, self._factors.arrays,
        )

    def _step_numpy(self, run):
        if self.backend == "batched":
            self._step_batched(run)
        else:
            self._step_reference(run)

    def _residual(self, bits, lx, first):
        if first:
            return bits.astype(lx.dtype)
        return (bits - sign_with_ties(lx, tie_positive=self.tie_positive, atol=self.atol)).astype(lx.dtype)

    def _update(self, run, rows, new_x, new_lx_of):
        first = run.iteration == 0 and run.iterations_run[rows].max() == 0
        run.iterations_run[rows] += 1
        same = np.all(new_x == run.x[rows], axis=1) & (not first)
        run.active[rows[same]] = False
        moving = rows[~same]
        if moving.size:
            run.x[moving] = new_x[~same]
            run.lx[moving] = new_lx_of(new_x[~same])
            s = sign_with_ties(run.lx[moving], tie_positive=self.tie_positive, atol=self.atol)
            run.inconsistent[moving] = np.count_nonzero(s != self.bits[moving], axis=1)

    def _step_batched(self, run):
        rows = np.flatnonzero(run.active)
        x = run.x[rows]
        first = run.iteration == 0 and run.iterations_run[rows].max() == 0
        residual = self._residual(self.bits[rows], run.lx[rows], first)
        shape = (rows.size,) + self.domain_shape
        gradient = np.asarray(self.operator.adjoint(residual), dtype=x.dtype).reshape(x.shape)
        a = x + x.dtype.type(self.step / 2) * gradient
        if self.transform is not None:
            a = self.transform.forward(a.reshape(shape)).reshape(x.shape)
        a = keep_largest(a, self.k)
        if self.transform is not None:
            a = self.transform.adjoint(a.reshape(shape)).reshape(x.shape)
        new_x = project_rows(a, self.constraint).astype(x.dtype, copy=False)

        def forward(values):
            out = self.operator.forward(values.reshape((values.shape[0],) + self.domain_shape))
            return np.asarray(out, dtype=x.dtype)

        self._update(run, rows, new_x, forward)

    def _step_reference(self, run):
        matrix, w = self._dense()
        first = run.iteration == 0 and run.iterations_run.max() == 0
        rows = np.flatnonzero(run.active)
        new_x = np.empty((rows.size, self.n))
        for j, row in enumerate(rows):
            residual = self._residual(self.bits[row], run.lx[row], first)
            a = run.x[row] + self.step / 2 * (matrix.T @ residual)
            coefficients = keep_largest((w @ a)[None], self.k)[0]
            new_x[j] = project_rows((w.T @ coefficients)[None], self.constraint)[0]
        self._update(run, rows, new_x, lambda values: values @ matrix.T)


def reference_biht(operator, bits, **options):
    """Final state of :class:`BIHT` with the dense per-patch reference path.

    Examples
    --------
    >>> class Identity:
    ...     shape, domain_shape = (2, 2), (2,)
    ...     forward = adjoint = staticmethod(np.asarray)
    >>> reference_biht(Identity(), [[1, -1]], sparsity=1.0, transform=None).x
    array([[1., 0.]])
    """
    return BIHT(operator, bits, backend="reference", **options).run()


@numba.njit(cache=True, nogil=True)
def _biht_rows(rows, x, lx, bits, active, iterations_run, inconsistent, n_steps, first,
               half_step, k, constraint, height, width, haar, tie, atol, factors):
    for row in rows:
        _biht_row(row, x, lx, bits, active, iterations_run, inconsistent, n_steps, first,
                  half_step, k, constraint, height, width, haar, tie, atol, factors)


@numba.njit(cache=True, nogil=True)
def _biht_row(row, x, lx, bits, active, iterations_run, inconsistent, n_steps, first,
              half_step, k, constraint, height, width, haar, tie, atol, factors):
    """``n_steps`` BIHT iterations of one row, in place; stops at a fixed point."""
    n = x.shape[1]
    m = bits.shape[1]
    a = np.empty(n, dtype=np.float32)
    scratch = np.empty(max(height, width), dtype=np.float32)
    fields = np.empty(factors[7].shape[0], dtype=np.float32)
    plane = np.empty(n, dtype=np.float32)
    magnitude = np.empty(n, dtype=np.float32)
    residual = np.empty(m, dtype=np.float32)
    shift = np.nan  # of the last projection: the next one starts there
    xr = x[row]
    lxr = lx[row]
    br = bits[row]
    for it in range(n_steps):
        is_first = first and it == 0
        for i in range(m):
            if is_first:
                residual[i] = br[i]
            else:
                v = lxr[i]
                s = tie if abs(v) <= atol else (1 if v > 0 else -1)
                residual[i] = br[i] - s
        sparse_adjoint(residual, factors, fields, a)
        for j in range(n):
            a[j] = xr[j] + half_step * a[j]
        if haar:
            haar_forward_inplace(a, scratch, height, width)
        keep_largest_inplace(a, k, magnitude)
        if haar:
            haar_adjoint_inplace(a, scratch, height, width)
        shift = project_inplace(a, constraint, shift)
        if constraint == 2:  # no domain: unit-norm estimates
            norm = 0.0
            for j in range(n):
                norm += np.float64(a[j]) * a[j]
            if norm > 0.0:
                scale = np.float32(1.0 / np.sqrt(norm))
                for j in range(n):
                    a[j] *= scale
        iterations_run[row] += 1
        if not (is_first or differs(a, xr)):
            active[row] = False
            break
        xr[:] = a
        sparse_forward(xr, factors, fields, plane, lxr)
        count = 0
        for i in range(m):
            v = lxr[i]
            s = tie if abs(v) <= atol else (1 if v > 0 else -1)
            if s != br[i]:
                count += 1
        inconsistent[row] = count
