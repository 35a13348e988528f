r"""Primal-dual :math:`\ell_1` reconstruction, Alg. 1 of the paper, batched.

Solves, for every row :math:`b` (real measurements or bits) of a batch,

.. math::

    \min_{x \in S} \; \lambda \|Lx - t - b\|_1 + \|Wx\|_1

for bits :math:`b = \operatorname{sign}(Lp - t)` (:math:`t`: the operator's
thresholds, :func:`lbdviewer.solvers.patch.base.thresholds_of`; 0 for the paper's
descriptors), and with :math:`t = 0` for real measurements :math:`b = Lp`,
which carry the thresholds' information already.

The default data weight is :data:`DEFAULT_LAM`, not the paper's 0.1: see there.
"""

from __future__ import annotations

import numba
import numpy as np

from lbdviewer._validation import check_positive
from lbdviewer.bits import descriptor_encoding, sign_with_ties
from lbdviewer._runtime.parallel import run_rows
from lbdviewer.solvers.projections import project
from lbdviewer.operators.wavelets import haar_adjoint_lanes, haar_forward_lanes
from lbdviewer.solvers.patch._kernels import LANES, from_lane, lanes_differ, to_lane
from lbdviewer.solvers.patch._sparse import lane_factors, sparse_adjoint_lanes, sparse_forward_lanes
from lbdviewer.solvers.patch.base import CONSTRAINT_CODES, BatchedSolver, check_data, flat_start, operator_norm
from lbdviewer.solvers.state import SolverState, frozen_copy

#: Default data weight :math:`\lambda` of :class:`PrimalDualL1`, for real values and bits, patchwise
#: and joint (``scripts/lam_sweep.py`` measures it). Not the paper's 0.1: with fields of unit
#: :math:`\ell_1` norm and an orthonormal Haar (the paper's definitions) the constant patch is the
#: exact minimiser whenever :math:`\lambda \le 1 / \|W L^T \operatorname{sign}(Lp)\|_\infty`
#: (Haar detail coefficients), for real values and bits alike, and on the ray from it to the true
#: patch it wins while :math:`\lambda < \|W(p - \bar p)\|_1 / \|Lp\|_1`, about 0.5 to 4 on natural
#: patches: at 0.1 most BRIEF patches come out exactly constant.
DEFAULT_LAM = 10.0

def default_step_ratio(lam):
    r"""Ratio :math:`\tau / \sigma` of :class:`PrimalDualL1`'s steps for ``lam``: :math:`\min(1, (0.1/\lambda)^{3/2})`.

    Chambolle-Pock needs only :math:`\tau \sigma \Gamma^2 \le 1`; how the
    product is split is free. The data dual ranges over :math:`[-\lambda,
    \lambda]^M` while the primal stays in :math:`[0, 1]^N`, so the larger
    :math:`\lambda`, the larger the dual step should be. Equal steps (the
    paper's) are right at the paper's 0.1 and crawl at :data:`DEFAULT_LAM`.
    Measured by ``scripts/pd_steps.py`` (held-out coffee, chelsea, rocket and
    camera; 32x32, M = 512, real values; objective above the lowest any run
    reached, after 1000 iterations):

    * lambda 10, 64 FAST patches: equal steps leave 12-14 % (BRIEF) and
      28-32 % (FREAK), 1e-3 leaves 1.5-1.7 % and 3.9-4.0 %, and the median
      per-patch correlation rises by 0.02-0.05 for BRIEF (camera 0.74 to
      0.79), 0-0.03 for FREAK; the joint solve of a 128x128 crop on the
      offset-8 grid goes from 68-119 % to 12-19 % (1e-4 converges further by
      1000 iterations but is behind at 300 on the crops);
    * lambda 1: 0.01-0.03 beats both 1 and 1e-3 on the crops (0.0-0.3 % at
      1000 iterations against 2.6-3.4 %);
    * lambda 0.1: equal steps are best (0.1-0.2 %; 1e-3 leaves 3-5 % and
      the crops' correlation drops from 0.94 to 0.80-0.93).

    Bits converge within 300 iterations at any ratio.

    Examples
    --------
    >>> default_step_ratio(0.1), round(default_step_ratio(10.0), 6)
    (1.0, 0.001)
    """
    return min(1.0, (0.1 / lam) ** 1.5)


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
        is used when present, and its thresholds :math:`t` for bits.
    b : array_like, shape (B, M)
        Real descriptors :math:`Lp` (as ``describe(binary=False)`` gives
        them), or bits :math:`\operatorname{sign}(Lp - t)` in {-1, +1} (the
        paper notes that the solver also reconstructs from bits).
    lam : float
        Data weight :math:`\lambda > 0`. Default :data:`DEFAULT_LAM`; the
        paper's 0.1 leaves most patches exactly constant with our (the
        paper's) normalisation (see :data:`DEFAULT_LAM`).
    iterations : int
        Maximum number of iterations, >= 1. Paper: 1000.
    theta : float
        Extrapolation :math:`\theta \in [0, 1]`. Paper: 1.
    step_ratio : float, optional
        :math:`\tau / \sigma > 0`, the ratio of the primal and dual steps
        (their product is fixed by :math:`\tau \sigma \Gamma^2 = 1`).
        Default :func:`default_step_ratio` of ``lam``; the paper's equal steps are 1.
    constraint : {"patch", "box", None}
        Domain :math:`S` (exact projection); ``None`` = unconstrained.
    transform : {"haar", None}
        :math:`W`: orthonormal Haar or the identity.
    binary : bool, optional
        Whether ``b`` holds bits (then ``bit_consistency`` is reported).
        Default: read by the one rule :func:`lbdviewer.bits.descriptor_encoding`
        (integer bits; float arrays of only -1 and +1 are refused as ambiguous).
    backend : {"auto", "fused", "batched", "reference"}
        Execution path, as for :class:`~lbdviewer.solvers.patch.biht.BIHT`.

    Raises
    ------
    ValueError
        On bad parameters, as :class:`~lbdviewer.solvers.patch.biht.BIHT` does.

    Notes
    -----
    This is the paper's product-space formulation: with :math:`K =
    \operatorname{diag}(L, W)` acting on :math:`(y, z)`, :math:`F(Ky) =
    \lambda\|Ly - b\|_1 + \|Wz\|_1` and :math:`G = \imath_S(y) +
    \imath_{\{0\}}(y - z)`, whose prox maps both blocks to
    :math:`P_S((y + z)/2)`. With duals :math:`r \in \mathbb R^M`,
    :math:`s \in \mathbb R^N` one iteration reads

    .. math::

        r &\leftarrow \operatorname{clip}(r + \sigma(L\tilde x - c), -\lambda, \lambda)\\
        s &\leftarrow \operatorname{clip}(s + \sigma W\tilde x, -1, 1)\\
        x^+ &\leftarrow P_S\big(x - \tfrac{\tau}{2}(L^T r + W^T s)\big),\quad
        \tilde x \leftarrow x^+ + \theta (x^+ - x),

    with :math:`\tau = \sqrt\rho/\Gamma`, :math:`\sigma = 1/(\sqrt\rho\,\Gamma)`
    (:math:`\rho`: ``step_ratio``; the paper's :math:`\tau = \sigma` is
    :math:`\rho = 1`), :math:`\Gamma^2 = \|L\|^2 + 1 \ge
    \|K\|^2`, and the target :math:`c = b + t` (bits) or :math:`c = b`
    (real values): the thresholds cost nothing an iteration. :math:`P_S` is the exact projection
    (:func:`lbdviewer.solvers.projections.project_mean_box`), not the paper's
    :math:`P_{S_1} \circ P_{S_2}`. :math:`L\tilde x` and :math:`W\tilde x` come
    by linearity from :math:`Lx^+` and :math:`Wx^+`, which the objective needs
    anyway, so an iteration costs one :math:`L`, one :math:`L^T`, one :math:`W`
    and one :math:`W^T`. Start: :math:`x = \tilde x = 0.5` (``None``: 0),
    :math:`r = s = 0`. A row whose primal and dual variables stop changing
    exactly is frozen.

    The fused path advances :data:`~lbdviewer.solvers.patch._kernels.LANES` rows at a
    time, interleaved element by element, so that every element-wise step is
    one long vectorised loop and every sparse index serves all of them. It
    computes the same float32 iterations as the batched path; the sums of
    the projection and of the stencil part of :math:`L^T` add their terms in
    another order, so iterates agree to rounding.

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

    def __init__(self, operator, b, *, lam=DEFAULT_LAM, iterations=1000, theta=1.0, step_ratio=None,
                 constraint="patch", transform="haar", binary=None, backend="auto"):
        self._bind(operator)
        values = np.asarray(b)
        if binary is None:
            readable = values.size and values.ndim and values.shape[-1] == self.m  # else check_data says why
            binary = bool(readable) and descriptor_encoding(values, self.m) == "bits"
        self.binary = bool(binary)
        self.b = check_data("b", values, self.m, binary=self.binary).astype(np.float32)
        shift = self.thresholds is not None and self.binary
        self._target = self.b + self.thresholds.astype(np.float32) if shift else self.b  # c = b + t
        self.lam = check_positive("lam", lam)
        if isinstance(theta, bool) or not 0.0 <= theta <= 1.0:
            raise ValueError(f"theta must be in [0, 1], got {theta!r}")
        self.theta = float(theta)
        self.step_ratio = (default_step_ratio(self.lam) if step_ratio is None
                           else check_positive("step_ratio", step_ratio))
        self._configure(iterations=iterations, constraint=constraint, transform=transform, backend=backend)
        self.gamma = float(np.sqrt(operator_norm(operator, self.domain_shape) ** 2 + 1.0))
        self._lanes = lane_factors(self._factors, self.n) if self.backend == "fused" else None
        root = float(np.sqrt(self.step_ratio))
        self.tau, self.sigma = root / self.gamma, 1.0 / (root * self.gamma)

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
        # All rows start at one point: map it once, so that no start depends on the batch.
        lx, wx = (np.repeat(v, x.shape[0], axis=0) for v in self._apply(x[:1]))
        run = _Run(x, lx, wx, self.m)
        run.objective = self._objective(run.lx, run.wx, self._target)
        return run

    def _objective(self, lx, wx, b):
        return (self.lam * np.abs(lx - b).sum(axis=1, dtype=np.float64)
                + np.abs(wx).sum(axis=1, dtype=np.float64))

    def _snapshot(self, run, finished):
        consistency = None
        if self.binary:
            margins = run.lx if self.thresholds is None else run.lx - self.thresholds
            s = sign_with_ties(margins, tie_positive=self.tie_positive)
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
            _primal_dual_rows, run.active, run.x, run.lx, run.wx, run.lx_bar, run.wx_bar, run.r, run.s, self._target,
            run.active, run.iterations_run, run.objective, n_steps,
            np.float32(self.lam), np.float32(self.sigma), np.float32(self.tau / 2),
            np.float32(self.theta), CONSTRAINT_CODES[self.constraint], *self._grid,
            self.transform_kind == "haar", self._lanes, multiple=LANES,
        )

    def _step_numpy(self, run):
        """One iteration of the batched (float32) or reference (float64) path."""
        rows = np.flatnonzero(run.active)
        x, b = run.x[rows], self._target[rows].astype(run.x.dtype)
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
    """``n_steps`` primal-dual iterations of the given rows, in place, ``LANES`` rows at a time.

    Each group of rows is copied into lane-interleaved buffers (a short last
    group repeats its last row in the spare lanes, which are never written
    back), iterated, and copied back. One iteration: the dual steps on
    :math:`r` and :math:`s`, :math:`W^T s` and :math:`L^T r`, the projected
    primal step, the freeze test, :math:`Lx^+` and :math:`Wx^+`, the
    extrapolations. Buffers that hold the previous iterate swap roles
    instead of being copied. A lane whose row reaches an exact fixed point
    is written back at once and then stands still.
    """
    n = x.shape[1]
    m = b.shape[1]
    span = n * LANES
    xs = np.empty(span, dtype=np.float32)
    wxs = np.empty(span, dtype=np.float32)
    wxb = np.empty(span, dtype=np.float32)
    ss = np.empty(span, dtype=np.float32)
    ss_old = np.empty(span, dtype=np.float32)
    z = np.empty(span, dtype=np.float32)
    new_x = np.empty(span, dtype=np.float32)
    ws = np.empty(span, dtype=np.float32)
    work = np.empty((n + factors[7].shape[0]) * LANES, dtype=np.float32)  # n + n_fields per lane
    lxs = np.empty(m * LANES, dtype=np.float32)
    lxb = np.empty(m * LANES, dtype=np.float32)
    rs = np.empty(m * LANES, dtype=np.float32)
    rs_old = np.empty(m * LANES, dtype=np.float32)
    bs = np.empty(m * LANES, dtype=np.float32)
    new_lx = np.empty(m * LANES, dtype=np.float32)
    parts = np.empty((4, _CHUNK * LANES), dtype=np.float64)
    bounds = np.empty((2, _CHUNK * LANES), dtype=np.float32)
    shifts = np.empty(LANES, dtype=np.float64)
    live = np.empty(LANES, dtype=np.bool_)
    for first in range(0, rows.shape[0], LANES):
        group = rows[first:first + LANES]
        count = group.shape[0]
        for k in range(LANES):
            row = group[min(k, count - 1)]  # padding lanes repeat the last row
            _exchange_row(row, k, xs, wxs, wxb, ss, lxs, lxb, rs, x, wx, wx_bar, s, lx, lx_bar, r, True)
            to_lane(bs, b[row], k)
            live[k] = k < count
            shifts[k] = np.nan  # of the last projection: the next one starts there
        for _ in range(n_steps):
            rs, rs_old = rs_old, rs
            ss, ss_old = ss_old, ss
            _ascend_data(rs, rs_old, lxb, bs, sigma, lam)
            _ascend_prior(ss, ss_old, wxb, sigma, ws)
            if haar:
                haar_adjoint_lanes(ws, z, height, width)  # z is free until L^T r
            sparse_adjoint_lanes(rs, factors, work, z)
            if constraint == 0:
                _descend_and_project(xs, z, ws, half_tau, new_x, shifts, live, parts, bounds)
            else:
                _descend(xs, z, ws, half_tau, constraint == 1, new_x)
            n_live = 0
            for k in range(LANES):
                if live[k]:
                    row = group[k]
                    iterations_run[row] += 1
                    if (lanes_differ(new_x, xs, k) or lanes_differ(rs, rs_old, k)
                            or lanes_differ(ss, ss_old, k)):
                        n_live += 1
                        continue
                    live[k] = False  # an exact fixed point: store the row as it is
                    active[row] = False
                    _exchange_row(row, k, xs, wxs, wxb, ss, lxs, lxb, rs, x, wx, wx_bar, s, lx, lx_bar, r, False)
                _copy_lane(xs, new_x, k)  # frozen or padding lanes stand still
            if n_live == 0:
                break
            sparse_forward_lanes(new_x, factors, work, new_lx)
            if haar:
                haar_forward_lanes(new_x, ws, z, height, width)  # z is free again
            else:
                ws[:] = new_x
            _extrapolate(new_lx, lxs, theta, lxb)
            _extrapolate(ws, wxs, theta, wxb)
            xs, new_x = new_x, xs
            lxs, new_lx = new_lx, lxs
            wxs, ws = ws, wxs
        for k in range(count):
            if live[k]:
                _exchange_row(group[k], k, xs, wxs, wxb, ss, lxs, lxb, rs, x, wx, wx_bar, s, lx, lx_bar, r, False)
        for k in range(count):
            objective[group[k]] = _objective_row(lx[group[k]], wx[group[k]], b[group[k]], lam)


# The flat loops of an iteration live in functions of their own: inlined into
# the kernel, where the buffers swap roles, the compiler does not vectorise them.


@numba.njit(cache=True, nogil=True)
def _ascend_data(new, old, bar, b, sigma, lam):
    """Dual step of the data term: ``new = clip(old + sigma (bar - b), -lam, lam)``."""
    for q in range(new.shape[0]):
        new[q] = min(max(old[q] + sigma * (bar[q] - b[q]), -lam), lam)


@numba.njit(cache=True, nogil=True)
def _ascend_prior(new, old, bar, sigma, copy):
    """Dual step of the prior: ``new = copy = clip(old + sigma bar, -1, 1)``."""
    for q in range(new.shape[0]):
        v = min(max(old[q] + sigma * bar[q], np.float32(-1.0)), np.float32(1.0))
        new[q] = v
        copy[q] = v


@numba.njit(cache=True, nogil=True)
def _descend(x, gradient, ws, half_tau, box, out):
    """Primal step ``out = x - half_tau (gradient + ws)``, clipped to [0, 1] if ``box``."""
    for q in range(out.shape[0]):
        out[q] = x[q] - half_tau * (gradient[q] + ws[q])
    if box:
        for q in range(out.shape[0]):
            out[q] = min(max(out[q], np.float32(0.0)), np.float32(1.0))


@numba.njit(cache=True, nogil=True)
def _extrapolate(new, old, theta, out):
    """``out = new + theta (new - old)``."""
    for q in range(out.shape[0]):
        out[q] = new[q] + theta * (new[q] - old[q])


_CHUNK = 16  # pixels per pass of the projection's partial sums (times LANES entries)


@numba.njit(cache=True, nogil=True)
def _descend_and_project(x, gradient, ws, half_tau, out, shifts, live, parts, bounds):
    r"""``out`` = :math:`P_S(x - \tfrac{\tau}{2}(g + w))` per live lane of ``LANES`` interleaved rows.

    :math:`S = \{x \in [0,1]^N : \bar x = 1/2\}`; ``g`` is ``gradient``
    (:math:`L^T r`), ``w`` is ``ws`` (:math:`W^T s`).

    The safeguarded Newton iteration of
    :func:`~lbdviewer.solvers.projections.mean_box_projection_inplace` on all lanes in
    lock step, each lane stopping on its own test. ``gradient`` (:math:`g`)
    receives the point before projection; ``shifts`` holds each lane's
    previous shift :math:`\mu` (the warm start; NaN: none) and receives the
    new one; ``parts`` (float64, 4 rows) and ``bounds`` (float32, 2 rows) are
    scratch of ``_CHUNK * LANES`` columns.

    The passes are fused: the first computes the point, its bracket and the
    Newton sums at the warm start; every later Newton pass also writes the
    projection at its shift, which is the result once every lane has stopped
    there (the common case: two passes in all). Sums run per lane over
    ``_CHUNK`` pixels at a time (flat loops the compiler vectorises), in
    another order than the one-row kernel: sums of float32 values in float64
    are nearly always exact.
    """
    n = x.shape[0] // LANES
    width = _CHUNK * LANES
    target = 0.5 * n
    shift, total, fixed, count = parts[0], parts[1], parts[2], parts[3]
    lo, hi = bounds[0], bounds[1]
    for q in range(width):
        shift[q] = shifts[q % LANES]
    total[:] = 0.0
    fixed[:] = 0.0  # per entry: n_upper + the active values
    count[:] = 0.0  # per entry: n_active
    lo[:] = np.inf
    hi[:] = -np.inf
    for start in range(0, x.shape[0], width):
        x_part = x[start:start + width]
        g_part = gradient[start:start + width]
        w_part = ws[start:start + width]
        for q in range(x_part.shape[0]):
            point = x_part[q] - half_tau * (g_part[q] + w_part[q])
            g_part[q] = point
            lo[q] = np.minimum(lo[q], point)  # the builtins do not vectorise here
            hi[q] = np.maximum(hi[q], point)
        for q in range(g_part.shape[0]):  # a separate loop vectorises
            v = np.float64(g_part[q])
            total[q] += v
            d = v - shift[q]
            inside = d > 0.0 and d < 1.0
            fixed[q] += 1.0 if d >= 1.0 else (v if inside else 0.0)
            count[q] += 1.0 if inside else 0.0
    mu = np.empty(LANES, dtype=np.float64)
    used = np.full(LANES, np.nan)  # the shifts ``out`` was written with
    lower = np.empty(LANES, dtype=np.float64)
    upper = np.empty(LANES, dtype=np.float64)
    done = np.empty(LANES, dtype=np.bool_)
    warm = True
    for k in range(LANES):
        mean, smallest, largest = 0.0, np.inf, -np.inf
        for q in range(k, width, LANES):
            mean += total[q]
            smallest = min(smallest, lo[q])
            largest = max(largest, hi[q])
        lower[k] = np.float64(smallest) - 1.0  # = min(z - 1): rounding is monotone
        upper[k] = np.float64(largest)
        mu[k] = mean / n - 0.5
        if lower[k] <= shifts[k] <= upper[k]:
            mu[k] = shifts[k]
        elif live[k]:
            warm = False
        done[k] = not live[k]
    for iteration in range(200):
        if iteration > 0 or not warm:  # else the first pass has the sums at mu
            for q in range(width):
                shift[q] = mu[q % LANES]
            fixed[:] = 0.0
            count[:] = 0.0
            for start in range(0, x.shape[0], width):
                part = gradient[start:start + width]
                result = out[start:start + width]
                for q in range(part.shape[0]):
                    v = np.float64(part[q])
                    d = v - shift[q]
                    inside = d > 0.0 and d < 1.0
                    fixed[q] += 1.0 if d >= 1.0 else (v if inside else 0.0)
                    count[q] += 1.0 if inside else 0.0
                    result[q] = min(max(d, 0.0), 1.0)
            used[:] = mu
        for k in range(LANES):
            if not done[k]:
                value = 0.0
                active = 0.0
                for q in range(k, width, LANES):
                    value += fixed[q]
                    active += count[q]
                done[k] = _newton_step(k, mu, lower, upper, value, active, target)
        if done.all():
            break
    stale = False  # does any live lane need ``out`` at another shift?
    for k in range(LANES):
        stale |= live[k] and mu[k] != used[k]
    if stale:
        for q in range(width):
            shift[q] = mu[q % LANES]
        for start in range(0, x.shape[0], width):
            part = gradient[start:start + width]
            result = out[start:start + width]
            for q in range(part.shape[0]):
                result[q] = min(max(np.float64(part[q]) - shift[q], 0.0), 1.0)
    shifts[:] = mu


@numba.njit(cache=True, nogil=True, inline="always")
def _newton_step(k, mu, lower, upper, fixed, count, target):
    """One safeguarded Newton step on lane ``k``; return whether it has converged."""
    f = fixed - mu[k] * count - target
    if f == 0.0:
        return True
    if f > 0.0:
        lower[k] = max(lower[k], mu[k])
    else:
        upper[k] = min(upper[k], mu[k])
    new_mu = (fixed - target) / count if count > 0 else 0.5 * (lower[k] + upper[k])
    if not (lower[k] <= new_mu <= upper[k]):
        new_mu = 0.5 * (lower[k] + upper[k])
    converged = new_mu == mu[k] or upper[k] - lower[k] <= 1e-15 * max(1.0, abs(mu[k]))
    mu[k] = new_mu
    return converged


@numba.njit(cache=True, nogil=True)
def _objective_row(lxr, wxr, br, lam):
    r""":math:`\lambda \|Lx - b\|_1 + \|Wx\|_1` of one row, accumulated in float64."""
    data = 0.0
    for i in range(lxr.shape[0]):
        data += abs(np.float64(lxr[i]) - br[i])
    prior = 0.0
    for j in range(wxr.shape[0]):
        prior += abs(np.float64(wxr[j]))
    return lam * data + prior


@numba.njit(cache=True, nogil=True, inline="always")
def _copy_lane(source, target, k):
    """Copy lane ``k`` of one interleaved array into lane ``k`` of another."""
    for j in range(source.shape[0] // LANES):
        target[j * LANES + k] = source[j * LANES + k]


@numba.njit(cache=True, nogil=True)
def _exchange_row(row, k, xs, wxs, wxb, ss, lxs, lxb, rs, x, wx, wx_bar, s, lx, lx_bar, r, into_lanes):
    """Copy row ``row`` of the run arrays into lane ``k`` of the interleaved state (``into_lanes``), or back."""
    _exchange(xs, x[row], k, into_lanes)
    _exchange(wxs, wx[row], k, into_lanes)
    _exchange(wxb, wx_bar[row], k, into_lanes)
    _exchange(ss, s[row], k, into_lanes)
    _exchange(lxs, lx[row], k, into_lanes)
    _exchange(lxb, lx_bar[row], k, into_lanes)
    _exchange(rs, r[row], k, into_lanes)


@numba.njit(cache=True, nogil=True, inline="always")
def _exchange(lanes, values, k, into_lanes):
    """:func:`~lbdviewer.solvers.patch._kernels.to_lane` if ``into_lanes``, else ``from_lane``."""
    if into_lanes:
        to_lane(lanes, values, k)
    else:
        from_lane(lanes, values, k)
