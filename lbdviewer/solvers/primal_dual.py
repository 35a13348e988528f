r"""Primal-dual :math:`\ell_1` reconstruction, Alg. 1 of the paper, batched.

Solves, for every row :math:`b` (real measurements or bits) of a batch,

.. math::

    \min_{x \in S} \; \lambda \|Lx - b\|_1 + \|Wx\|_1 .
"""

from __future__ import annotations

import numba
import numpy as np

from ..operators import sign_with_ties
from ..projections import project
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
    operator_norm,
    project_inplace,
    run_rows,
    sparse_adjoint,
    sparse_forward,
)


class _Run:
    """Mutable primal and dual variables of one pass of :meth:`PrimalDualL1.steps`."""

    def __init__(self, x, lx, wx, m):
        n_rows, n = x.shape
        self.x, self.lx, self.wx = x, lx, wx
        self.lx_bar, self.wx_bar = lx.copy(), wx.copy()
        self.r = np.zeros((n_rows, m), dtype=x.dtype)
        self.s = np.zeros((n_rows, n), dtype=x.dtype)
        self.active = np.ones(n_rows, dtype=bool)
        self.iteration = 0
        self.iterations_run = np.zeros(n_rows, dtype=np.int64)
        self.objective = np.zeros(n_rows, dtype=np.float64)


class PrimalDualL1(BatchedSolver):
    r"""Chambolle-Pock primal-dual solver for :math:`\ell_1` data fit + :math:`\ell_1` Haar sparsity.

    Parameters
    ----------
    operator : object
        Linear operator :math:`L` with ``forward``, ``adjoint``, ``shape``
        ``(M, N)``, ``domain_shape`` (or ``patch_shape``); ``norm_estimate()``
        is used when present.
    b : array_like, shape (B, M)
        Real descriptors :math:`Lp`, or bits in {-1, +1} (the paper notes that
        the solver also reconstructs from bits).
    lam : float
        Data weight :math:`\lambda > 0`. Paper: 0.1.
    iterations : int
        Maximum number of iterations, >= 1. Paper: 1000.
    theta : float
        Extrapolation :math:`\theta \in [0, 1]`. Paper: 1.
    constraint : {"patch", "box", None}
        Domain :math:`S` (exact projection); ``None`` = unconstrained.
    transform : {"haar", None}
        :math:`W`: orthonormal Haar or the identity.
    binary : bool, optional
        Whether ``b`` holds bits (then ``bit_consistency`` is reported).
        Default: true when every entry is -1 or +1.
    backend : {"auto", "fused", "batched", "reference"}
        Execution path, as for :class:`~lbdviewer.solvers.BIHT`.

    Raises
    ------
    ValueError
        On bad parameters; the message names the parameter and the value.

    Notes
    -----
    This is the paper's product-space formulation: with :math:`K =
    \operatorname{diag}(L, W)` acting on :math:`(y, z)`, :math:`F(Ky) =
    \lambda\|Ly - b\|_1 + \|Wz\|_1` and :math:`G = \imath_S(y) +
    \imath_{\{0\}}(y - z)`, whose prox maps both blocks to
    :math:`P_S((y + z)/2)`. With duals :math:`r \in \mathbb R^M`,
    :math:`s \in \mathbb R^N` one iteration reads

    .. math::

        r &\leftarrow \operatorname{clip}(r + \sigma(L\tilde x - b), -\lambda, \lambda)\\
        s &\leftarrow \operatorname{clip}(s + \sigma W\tilde x, -1, 1)\\
        x^+ &\leftarrow P_S\big(x - \tfrac{\tau}{2}(L^T r + W^T s)\big),\quad
        \tilde x \leftarrow x^+ + \theta (x^+ - x),

    with :math:`\tau = \sigma = 1/\Gamma`, :math:`\Gamma^2 = \|L\|^2 + 1 \ge
    \|K\|^2`. :math:`P_S` is the exact projection
    (:func:`lbdviewer.projections.project_mean_box`), not the paper's
    :math:`P_{S_1} \circ P_{S_2}`. :math:`L\tilde x` and :math:`W\tilde x` come
    by linearity from :math:`Lx^+` and :math:`Wx^+`, which the objective needs
    anyway, so an iteration costs one :math:`L`, one :math:`L^T`, one :math:`W`
    and one :math:`W^T`. Start: :math:`x = \tilde x = 0.5` (``None``: 0),
    :math:`r = s = 0`. A row whose primal and dual variables stop changing
    exactly is frozen.

    Examples
    --------
    >>> import numpy as np
    >>> class Diff:
    ...     shape, domain_shape = (1, 2), (2,)
    ...     def forward(self, x):
    ...         return x[..., :1] - x[..., 1:]
    ...     def adjoint(self, y):
    ...         return np.concatenate([y, -y], axis=-1)
    >>> state = PrimalDualL1(Diff(), [[0.5]], lam=10.0, iterations=500, transform=None).run()
    >>> state.x.round(3)
    array([[0.75, 0.25]], dtype=float32)
    """

    def __init__(self, operator, b, *, lam=0.1, iterations=1000, theta=1.0,
                 constraint="patch", transform="haar", binary=None, backend="auto"):
        self._bind(operator)
        values = np.asarray(b)
        if binary is None:
            binary = bool(values.size) and bool(np.all((values == 1) | (values == -1)))
        self.binary = bool(binary)
        self.b = check_data("b", values, self.m, binary=self.binary).astype(np.float32)
        self.lam = check_positive("lam", lam)
        if isinstance(theta, bool) or not 0.0 <= theta <= 1.0:
            raise ValueError(f"theta must be in [0, 1], got {theta!r}")
        self.theta = float(theta)
        self._configure(iterations=iterations, constraint=constraint, transform=transform, backend=backend)
        self.gamma = float(np.sqrt(operator_norm(operator, self.domain_shape) ** 2 + 1.0))
        self.tau = self.sigma = 1.0 / self.gamma

    # -- internals ----------------------------------------------------------------

    def _apply(self, x):
        """``(L x, W x)`` for flat rows, in the dtype of ``x``."""
        if self.backend == "reference":
            matrix, w = self._dense()
            return x @ matrix.T, x @ w.T
        shape = (x.shape[0],) + self.domain_shape
        lx = np.asarray(self.operator.forward(x.reshape(shape)), dtype=x.dtype)
        wx = x if self.transform is None else self.transform.forward(x.reshape(shape))
        return lx.reshape(x.shape[0], self.m), wx.reshape(x.shape)

    def _start(self):
        dtype = np.float64 if self.backend == "reference" else np.float32
        x = flat_start(self.constraint, self.b.shape[0], self.n, dtype)
        run = _Run(x, *self._apply(x), self.m)
        run.objective = self._objective(run.lx, run.wx, self.b)
        return run

    def _objective(self, lx, wx, b):
        return (self.lam * np.abs(lx - b).sum(axis=1, dtype=np.float64)
                + np.abs(wx).sum(axis=1, dtype=np.float64))

    def _snapshot(self, run, finished):
        consistency = None
        if self.binary:
            s = sign_with_ties(run.lx, tie_positive=self.tie_positive)
            consistency = frozen_copy(np.mean(s == self.b, axis=1))
        return SolverState(
            iteration=run.iteration,
            x=frozen_copy(run.x.reshape((run.x.shape[0],) + self.domain_shape)),
            objective=frozen_copy(run.objective),
            bit_consistency=consistency,
            active=frozen_copy(run.active),
            iterations_run=frozen_copy(run.iterations_run),
            finished=bool(finished),
        )

    def _advance_fused(self, run, n_steps):
        run_rows(
            _primal_dual_rows, run.active, run.x, run.lx, run.wx, run.lx_bar, run.wx_bar, run.r, run.s, self.b,
            run.active, run.iterations_run, run.objective, n_steps,
            np.float32(self.lam), np.float32(self.sigma), np.float32(self.tau / 2),
            np.float32(self.theta), CONSTRAINT_CODES[self.constraint], *self._grid,
            self.transform_kind == "haar", self._factors.arrays,
        )

    def _step_numpy(self, run):
        """One iteration of the batched (float32) or reference (float64) path."""
        rows = np.flatnonzero(run.active)
        x, b = run.x[rows], self.b[rows].astype(run.x.dtype)
        t = x.dtype.type
        r = np.clip(run.r[rows] + t(self.sigma) * (run.lx_bar[rows] - b), -t(self.lam), t(self.lam))
        s = np.clip(run.s[rows] + t(self.sigma) * run.wx_bar[rows], -1, 1).astype(x.dtype)
        if self.backend == "reference":
            matrix, w = self._dense()
            gradient = r @ matrix + s @ w
        else:
            shape = (rows.size,) + self.domain_shape
            back = np.asarray(self.operator.adjoint(r), dtype=x.dtype).reshape(x.shape)
            ws = s if self.transform is None else self.transform.adjoint(s.reshape(shape))
            gradient = back + ws.reshape(x.shape)
        z = x - t(self.tau / 2) * gradient
        new_x = z if self.constraint is None else project(z, self.constraint, ndim=1)
        new_x = new_x.astype(x.dtype, copy=False)
        lx, wx = self._apply(new_x)
        run.iterations_run[rows] += 1
        same = (np.all(new_x == x, axis=1) & np.all(r == run.r[rows], axis=1)
                & np.all(s == run.s[rows], axis=1))
        run.active[rows[same]] = False
        theta = t(self.theta)
        run.lx_bar[rows] = lx + theta * (lx - run.lx[rows])
        run.wx_bar[rows] = wx + theta * (wx - run.wx[rows])
        run.x[rows], run.lx[rows], run.wx[rows] = new_x, lx, wx
        run.r[rows], run.s[rows] = r, s
        run.objective[rows] = self._objective(lx, wx, b)


def reference_primal_dual(operator, b, **options):
    """Final state of :class:`PrimalDualL1` with the dense per-patch reference path.

    Examples
    --------
    >>> import numpy as np
    >>> class Identity:
    ...     shape, domain_shape = (2, 2), (2,)
    ...     forward = adjoint = staticmethod(np.asarray)
    >>> reference_primal_dual(Identity(), [[0.25, 0.75]], lam=10.0, transform=None).x.round(3)
    array([[0.25, 0.75]])
    """
    return PrimalDualL1(operator, b, backend="reference", **options).run()


@numba.njit(cache=True, nogil=True)
def _primal_dual_rows(rows, x, lx, wx, lx_bar, wx_bar, r, s, b, active, iterations_run,
                      objective, n_steps, lam, sigma, half_tau, theta, constraint, height,
                      width, haar, factors):
    for row in rows:
        _primal_dual_row(row, x, lx, wx, lx_bar, wx_bar, r, s, b, active, iterations_run,
                         objective, n_steps, lam, sigma, half_tau, theta, constraint, height,
                         width, haar, factors)


@numba.njit(cache=True, nogil=True)
def _primal_dual_row(row, x, lx, wx, lx_bar, wx_bar, r, s, b, active, iterations_run, objective,
                     n_steps, lam, sigma, half_tau, theta, constraint, height, width, haar, factors):
    """``n_steps`` primal-dual iterations of one row, in place."""
    n = x.shape[1]
    m = b.shape[1]
    z = np.empty(n, dtype=np.float32)
    ws = np.empty(n, dtype=np.float32)
    new_lx = np.empty(m, dtype=np.float32)
    scratch = np.empty(max(height, width), dtype=np.float32)
    fields = np.empty(factors[7].shape[0], dtype=np.float32)
    plane = np.empty(n, dtype=np.float32)
    xr, rr, sr, br = x[row], r[row], s[row], b[row]
    shift = np.nan  # of the last projection: the next one starts there
    lxr, wxr, lxb, wxb = lx[row], wx[row], lx_bar[row], wx_bar[row]
    for _ in range(n_steps):
        dual_changed = False
        for i in range(m):
            v = min(max(rr[i] + sigma * (lxb[i] - br[i]), -lam), lam)
            if v != rr[i]:
                dual_changed = True
            rr[i] = v
        for j in range(n):
            v = min(max(sr[j] + sigma * wxb[j], np.float32(-1.0)), np.float32(1.0))
            if v != sr[j]:
                dual_changed = True
            sr[j] = v
            ws[j] = v
        if haar:
            haar_adjoint_inplace(ws, scratch, height, width)
        sparse_adjoint(rr, factors, fields, z)
        for j in range(n):
            z[j] = xr[j] - half_tau * (z[j] + ws[j])
        shift = project_inplace(z, constraint, shift)
        iterations_run[row] += 1
        if not (dual_changed or differs(z, xr)):
            active[row] = False
            break
        sparse_forward(z, factors, fields, plane, new_lx)
        for j in range(n):
            ws[j] = z[j]
        if haar:
            haar_forward_inplace(ws, scratch, height, width)
        for i in range(m):
            lxb[i] = new_lx[i] + theta * (new_lx[i] - lxr[i])
            lxr[i] = new_lx[i]
        for j in range(n):
            wxb[j] = ws[j] + theta * (ws[j] - wxr[j])
            wxr[j] = ws[j]
            xr[j] = z[j]
    # The objective of the current x, once per call: only snapshots read it.
    data = 0.0
    for i in range(m):
        data += abs(np.float64(lxr[i]) - br[i])
    prior = 0.0
    for j in range(n):
        prior += abs(np.float64(wxr[j]))
    objective[row] = lam * data + prior
