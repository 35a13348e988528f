r"""Binary Iterative Hard Thresholding (BIHT), Alg. 2 of the paper, batched.

Solves, for every row :math:`b \in \{-1, +1\}^M` of a batch,

.. math::

    \min_x \; J(x) = \big\|[\,b \odot \operatorname{sign}(Lx - t)\,]_-\big\|_1
    \quad\text{s.t.}\quad \|Wx\|_0 \le K,\; x \in S,

by repeating :math:`a = x + \tfrac{\tau}{2} L^T(b - \operatorname{sign}(Lx - t))`,
:math:`x \leftarrow P_S\big(W^T H_K(W a)\big)`. The thresholds :math:`t` are
the operator's (:func:`lbdviewer.solvers.patch.base.thresholds_of`: BEBLID and
TEBLID compare box differences against learned values); :math:`t = 0` is the
paper's problem, and then the iterations are exactly the paper's.

The fused path has a shortcut for operators with few distinct fields (FREAK:
43 boxes). Pixels whose columns of the field matrix :math:`K` are equal form a
*cell*; :math:`L^T r = K^T D^T r` is constant on every cell, and so is each
iterate whenever :math:`H_K` keeps every coefficient a cell-constant image can
have (:class:`CellSpace`). BIHT then runs on one value per cell, in float64,
without transforms (FREAK 32x32: 115 cells, :math:`W` maps them into 284 of the
1024 coefficients, fewer than :math:`K = 410`).
"""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass

import numpy as np
from scipy import sparse

from lbdviewer._validation import check_fraction, check_positive
from lbdviewer.bits import sign_with_ties
from lbdviewer._runtime.parallel import run_rows
from lbdviewer.solvers.patch._biht_kernels import biht_cell_rows, biht_rows
from lbdviewer.solvers.patch._kernels import keep_largest
from lbdviewer.solvers.patch.base import CONSTRAINT_CODES, BatchedSolver, check_data, flat_start, project_rows
from lbdviewer.solvers.state import SolverState, frozen_copy

_CELLS = weakref.WeakKeyDictionary()  # operator -> {(domain shape, transform kind): CellSpace}
_CELLS_LOCK = threading.Lock()  # solvers run on worker threads of the app: one build per operator


class _Run:
    """Mutable iteration state of one pass of :meth:`BIHT.steps` (flat rows).

    ``lx`` holds the margins :math:`Lx - t` of the current iterates. ``cells``
    holds the iterates of the cell path (one value per cell, float64), else
    None; ``x`` then follows it after every advance.
    """

    def __init__(self, x, lx, active, cells=None):
        self.x = x
        self.lx = lx
        self.active = active
        self.cells = cells
        self.iteration = 0
        self.iterations_run = np.zeros(x.shape[0], dtype=np.int64)
        self.inconsistent = np.zeros(x.shape[0], dtype=np.int64)


@dataclass(frozen=True)
class CellSpace:
    r"""The pixels of an operator's domain grouped into cells, for the fused BIHT.

    A cell is a maximal set of pixels with equal columns of the field matrix
    :math:`K` (``L = D K``). Every :math:`L^T r = K^T (D^T r)` is constant on
    each cell, and so is the flat start. If :math:`W` maps every cell-constant
    image into one set of ``support`` coefficients and ``support`` :math:`\le K`,
    :math:`H_K` keeps all of them and :math:`W^T H_K W` is the identity on the
    iterates; the projections on "patch", "box" and unit norm keep equal
    pixels equal. BIHT then stays exactly in the cell-constant images:

    .. math::

        a_c = x_c + \tfrac{\tau}{2} \sum_f K_{fc} (D^T r)_f, \qquad
        x \leftarrow P_S(a), \qquad
        (Lx)_i = \sum_f D_{if} \sum_c n_c K_{fc} x_c,

    with :math:`n_c` the pixels of cell :math:`c` and the projection weighted by
    :math:`n_c`.

    Attributes
    ----------
    counts : numpy.ndarray, shape (C,)
        Pixels per cell (float64).
    cell_of : numpy.ndarray, shape (N,)
        Cell of each pixel.
    first_pixel : numpy.ndarray, shape (C,)
        One pixel of each cell.
    c_ptr, c_idx, c_val : numpy.ndarray
        CSR cells x fields: :math:`K_{fc}`, the value of field :math:`f` on a pixel of :math:`c`.
    f_ptr, f_idx, f_val : numpy.ndarray
        CSR fields x cells: :math:`n_c K_{fc}`.
    p_idx, p_val : numpy.ndarray, shape (R, M)
        The pair matrix :math:`D` (M x F) by slots: ``p_val[s, i]`` is the weight
        of field ``p_idx[s, i]`` in the ``s``-th of the at most ``R`` non-zeros
        of row ``i`` (padded with weight 0).
    support : int
        Number of transform coefficients any cell-constant image can have.
    """

    counts: np.ndarray
    cell_of: np.ndarray
    first_pixel: np.ndarray
    c_ptr: np.ndarray
    c_idx: np.ndarray
    c_val: np.ndarray
    f_ptr: np.ndarray
    f_idx: np.ndarray
    f_val: np.ndarray
    p_idx: np.ndarray
    p_val: np.ndarray
    support: int

    @property
    def arrays(self):
        """The tuple :func:`lbdviewer.solvers.patch._biht_kernels.biht_cell_rows` takes."""
        return (self.counts, self.cell_of, self.first_pixel, self.c_ptr, self.c_idx, self.c_val,
                self.f_ptr, self.f_idx, self.f_val, self.p_idx, self.p_val)


def cell_space(operator, domain_shape, transform):
    """The :class:`CellSpace` of an operator with ``field_matrix``/``pair_matrix``, else None.

    Parameters
    ----------
    operator : object
        The sensing operator.
    domain_shape : tuple of int
        Shape of one input.
    transform : HaarTransform or None
        The sparsity basis :math:`W` (None: the identity).

    Notes
    -----
    Built once per operator and transform kind (cached while the operator
    lives, under a lock): a solver is made for every chunk of patches.

    Examples
    --------
    >>> from lbdviewer.operators.descriptor import DescriptorOperator
    >>> from lbdviewer.patterns import make_pattern
    >>> from lbdviewer.operators.wavelets import HaarTransform
    >>> space = cell_space(DescriptorOperator(make_pattern("freak")), (32, 32), HaarTransform((32, 32)))
    >>> space.counts.size, space.support
    (115, 284)
    """
    if not (callable(getattr(operator, "field_matrix", None))
            and callable(getattr(operator, "pair_matrix", None))):
        return None
    key = (tuple(domain_shape), None if transform is None else "haar")
    with _CELLS_LOCK:
        try:
            cache = _CELLS.setdefault(operator, {})
        except TypeError:  # not weakly referenceable or not hashable: no cache
            return _build_cells(operator, key[0], transform)
        if key not in cache:
            cache[key] = _build_cells(operator, key[0], transform)
        return cache[key]


def _build_cells(operator, domain_shape, transform):
    fields = sparse.csc_matrix(operator.field_matrix(), dtype=np.float64)
    fields.sort_indices()
    cell_of, first_pixel = _equal_columns(fields)
    n = fields.shape[1]
    n_cells = first_pixel.size
    counts = np.bincount(cell_of, minlength=n_cells).astype(np.float64)
    by_cell = fields[:, first_pixel].T.tocsr()
    by_cell.sort_indices()
    by_field = (fields @ sparse.csr_matrix((np.ones(n), (np.arange(n), cell_of)), shape=(n, n_cells))).tocsr()
    by_field.sort_indices()
    pairs = sparse.csr_matrix(operator.pair_matrix(), dtype=np.float64)
    pairs.sort_indices()
    per_row = np.diff(pairs.indptr)
    slot = np.arange(pairs.nnz) - np.repeat(pairs.indptr[:-1], per_row)
    p_idx = np.zeros((max(1, int(per_row.max(initial=0))), pairs.shape[0]), dtype=np.int64)
    p_val = np.zeros(p_idx.shape)
    p_idx[slot, np.repeat(np.arange(pairs.shape[0]), per_row)] = pairs.indices
    p_val[slot, np.repeat(np.arange(pairs.shape[0]), per_row)] = pairs.data
    return CellSpace(
        counts, cell_of, first_pixel,
        by_cell.indptr.astype(np.int64), by_cell.indices.astype(np.int64), by_cell.data,
        by_field.indptr.astype(np.int64), by_field.indices.astype(np.int64), by_field.data,
        p_idx, p_val,
        _cell_support(cell_of, n_cells, domain_shape, transform),
    )


def _equal_columns(matrix):
    """Group the columns of a sparse matrix that are equal: ``(group of each column, first column of each)``.

    Columns are grouped by two random projections (of the values and of the
    pattern of non-zeros), then every column is checked against the first of
    its group; should two different columns ever share both projections,
    every column is its own group.
    """
    rng = np.random.default_rng(0)
    pattern = matrix.copy()
    pattern.data = np.ones_like(pattern.data)
    signatures = (matrix.T @ rng.standard_normal(matrix.shape[0])
                  + 1j * (pattern.T @ rng.standard_normal(matrix.shape[0])))
    _, first_pixel, group = np.unique(signatures, return_index=True, return_inverse=True)
    if (matrix - matrix[:, first_pixel[group]]).count_nonzero():
        return np.arange(matrix.shape[1]), np.arange(matrix.shape[1])
    return group.astype(np.int64), first_pixel.astype(np.int64)


def _cell_support(cell_of, n_cells, domain_shape, transform):
    """Coefficients of :math:`W` that cell-constant images reach (identity: every pixel).

    Two images with random values per cell: a coefficient that some cell
    reaches is non-zero in both unless their values cancel it, which happens
    with probability 0. Coefficients every cell misses are exact zeros up to
    the rounding of sums in a different order (``1e-9`` of the largest).
    """
    n = cell_of.size
    if transform is None:
        return n
    values = np.random.default_rng(0).uniform(0.5, 1.5, (2, n_cells))
    images = values[:, cell_of].reshape((2,) + tuple(domain_shape))
    magnitude = np.abs(transform.forward(images)).reshape(2, n)
    reached = np.any(magnitude > 1e-9 * magnitude.max(axis=1, keepdims=True), axis=0)
    return int(np.count_nonzero(reached))


class BIHT(BatchedSolver):
    r"""Binary Iterative Hard Thresholding for a batch of binary descriptors.

    Parameters
    ----------
    operator : object
        Linear operator :math:`L` with ``forward``, ``adjoint``, ``shape``
        ``(M, N)`` and ``domain_shape`` (or ``patch_shape``). If it has
        ``pattern.tie_positive``, that decides the bit of a tie; its
        ``thresholds`` (or ``pattern.thresholds``) are :math:`t`.
    bits : array_like, shape (B, M)
        Descriptors ``sign(L p - t)`` in {-1, +1}, one row per patch.
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
        Tie tolerance: :math:`|(Lx - t)_i| \le` ``atol`` counts as a tie.
    backend : {"auto", "fused", "batched", "reference"}
        Execution path (see :mod:`lbdviewer.solvers.patch.base`). ``"auto"`` takes
        ``"fused"`` when the operator has ``field_matrix``/``pair_matrix``,
        else ``"batched"``. ``"reference"`` is the slow dense per-patch loop.
        ``"fused"`` iterates on cells (:class:`CellSpace`, float64) when
        ``K`` is at least the cell support, else on pixels (float32).

    Raises
    ------
    ValueError
        On bad parameters; the message names the parameter and the value.

    Notes
    -----
    Start :math:`x^{(0)} = 0.5` (``None``: 0). :math:`Lx^{(0)}` is zero up to
    rounding, so the first step is :math:`a^{(1)} = x^{(0)} + \frac{\tau}{2}
    L^T(b - \operatorname{sign}(-t))` with the sign of a tie (:math:`|t_i| \le`
    ``atol``) taken as 0, as in the paper (:math:`t = 0`: :math:`L^T b`). Later
    steps use :math:`\operatorname{sign}` with ties resolved like the descriptor
    (:func:`lbdviewer.bits.sign_with_ties`), so a row whose bits are those
    of a flat patch is already consistent at the flat start: it is frozen there
    from the outset. Then :math:`x^{(i+1)} = P_S\big(W^T H_K(W a^{(i+1)})\big)` with
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
        self.sparsity = check_fraction("sparsity", sparsity)
        self.k = max(1, int(round(self.sparsity * self.n)))
        self.step = 1.0 / self.m if step is None else check_positive("step", step)
        self.atol = float(atol)
        if not self.atol >= 0.0:
            raise ValueError(f"atol must be >= 0, got {atol!r}")
        self._configure(iterations=iterations, constraint=constraint, transform=transform, backend=backend)
        space = cell_space(operator, self.domain_shape, self.transform) if self.backend == "fused" else None
        self._cells = space if space is not None and space.support <= self.k else None

    # -- internals ----------------------------------------------------------------

    def _start(self):
        n_rows = self.bits.shape[0]
        dtype = np.float64 if self.backend == "reference" else np.float32
        x = flat_start(self.constraint, n_rows, self.n, dtype)
        # L x0 = 0 exactly in exact arithmetic: the margins are -t (ties where t = 0).
        margins = np.zeros(self.m) if self.thresholds is None else -self.thresholds
        lx = np.repeat(margins.astype(np.float64 if self._cells is not None else dtype)[None], n_rows, axis=0)
        if self._cells is None:
            run = _Run(x, lx, np.ones(n_rows, dtype=bool))
        else:
            cells = flat_start(self.constraint, n_rows, self._cells.counts.size, np.float64)
            run = _Run(x, lx, np.ones(n_rows, dtype=bool), cells)
        start_bits = sign_with_ties(margins, tie_positive=self.tie_positive, atol=self.atol)
        run.inconsistent = np.count_nonzero(self.bits != start_bits, axis=1).astype(np.int64)
        run.active = run.inconsistent > 0
        return run

    @property
    def _kernel_thresholds(self):
        """``t`` as the fused kernels take it (empty when there are none: no work for them)."""
        dtype = np.float64 if self._cells is not None else np.float32
        return np.zeros(0, dtype=dtype) if self.thresholds is None else self.thresholds.astype(dtype)

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
        if run.cells is not None:
            run_rows(
                biht_cell_rows, run.active, run.cells, run.x, run.lx, self.bits, run.active,
                run.iterations_run, run.inconsistent, n_steps, run.iteration == 0, self.step / 2,
                CONSTRAINT_CODES[self.constraint], 1 if self.tie_positive else -1, self.atol,
                self._kernel_thresholds, self._cells.arrays,
            )
            return
        run_rows(
            biht_rows, run.active, run.x, run.lx, self.bits, run.active, run.iterations_run, run.inconsistent,
            n_steps, run.iteration == 0, np.float32(self.step / 2), self.k,
            CONSTRAINT_CODES[self.constraint], *self._grid,
            self.transform_kind == "haar", 1 if self.tie_positive else -1, self.atol, self._kernel_thresholds,
            self._factors.arrays,
        )

    def _step_numpy(self, run):
        if self.backend == "batched":
            self._step_batched(run)
        else:
            self._step_reference(run)

    def _residual(self, bits, lx, first):
        """``b - sign(lx)`` of the margins ``lx``; at the flat start a tie's sign is 0."""
        if first:
            signs = np.where(np.abs(lx) <= self.atol, 0, np.sign(lx))
            return (bits - signs).astype(lx.dtype)
        return (bits - sign_with_ties(lx, tie_positive=self.tie_positive, atol=self.atol)).astype(lx.dtype)

    def _margins(self, values):
        """``L x - t`` from ``L x``."""
        return values if self.thresholds is None else values - self.thresholds.astype(values.dtype)

    def _update(self, run, rows, new_x, new_lx_of):
        first = run.iteration == 0 and run.iterations_run[rows].max() == 0
        run.iterations_run[rows] += 1
        same = np.all(new_x == run.x[rows], axis=1) & (not first)
        run.active[rows[same]] = False
        moving = rows[~same]
        if moving.size:
            run.x[moving] = new_x[~same]
            run.lx[moving] = self._margins(new_lx_of(new_x[~same]))
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
