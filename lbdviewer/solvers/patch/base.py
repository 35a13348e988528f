"""What every solver shares: :class:`BatchedSolver`, validation and operator plumbing.

Solvers accept any operator object with ``forward``, ``adjoint``, ``shape``
``(M, N)`` and ``domain_shape`` (or, like
:class:`lbdviewer.operators.descriptor.DescriptorOperator`, ``patch_shape``). Operators that
also expose ``field_matrix()`` ``(F, N)`` and ``pair_matrix()`` ``(M, F)``
(sparse, with ``L = pair_matrix @ field_matrix``) unlock the fused numba path,
which runs whole iterations per patch without leaving compiled code.

Three execution paths compute the same iterations:

``"fused"``
    numba kernels over the sparse factors of ``L``, float32, a thread task
    per chunk of patches (BIHT: one patch at a time; primal-dual:
    :data:`LANES` patches interleaved); needs ``field_matrix``/``pair_matrix``
    and a Haar or identity transform;
``"batched"``
    numpy over the whole batch with ``operator.forward``/``adjoint``, float32;
``"reference"``
    one patch at a time with dense float64 matrices; slow and obviously
    correct, used by tests and benchmarks as the yardstick.
"""

from __future__ import annotations

import numpy as np

from lbdviewer._validation import check_choice, check_iterations
from lbdviewer.operators.linear import power_norm
from lbdviewer.solvers.projections import check_constraint, project
from lbdviewer.solvers.patch._sparse import sparse_factors
from lbdviewer.operators.wavelets import HaarTransform
from lbdviewer.solvers.state import IterativeSolver

TRANSFORMS = ("haar", None)
SOLVER_BACKENDS = ("auto", "fused", "batched", "reference")
CONSTRAINT_CODES = {"patch": 0, "box": 1, None: 2}  # the constraint as the fused kernels take it


def domain_shape_of(operator):
    """Shape of one operator input: ``domain_shape``, else ``patch_shape``.

    Raises
    ------
    ValueError
        If the operator has neither, or its ``shape[1]`` is not their product.
    """
    for attribute in ("domain_shape", "patch_shape"):
        shape = getattr(operator, attribute, None)
        if shape is not None:
            shape = tuple(int(s) for s in shape)
            break
    else:
        raise ValueError(f"operator must have domain_shape or patch_shape, got {operator!r}")
    m, n = (int(s) for s in operator.shape)
    if int(np.prod(shape)) != n:
        raise ValueError(f"operator.shape {operator.shape} does not match domain_shape {shape}")
    return shape


def check_data(name, data, m, *, binary):
    """Validate a ``(B, M)`` batch of descriptors; return it as float32 or int8, C-ordered.

    Binary data must hold only -1 and +1 and is returned as int8. The kernels
    read one row at a time: a column-major batch (as ``(K @ X.T).T`` gives)
    is copied to rows.
    """
    data = np.asarray(data)
    if data.ndim != 2 or data.shape[1] != m:
        raise ValueError(f"{name} must have shape (B, {m}), got {data.shape}")
    if binary:
        if data.size and not np.all((data == 1) | (data == -1)):
            raise ValueError(f"{name} must hold only -1 and +1 values")
        return np.array(data, dtype=np.int8, order="C")
    if not np.all(np.isfinite(data)):
        raise ValueError(f"{name} must be finite")
    return np.array(data, dtype=np.float32, order="C")


def resolve_transform(transform, domain_shape):
    """Return ``(kind, transform_object)`` for ``transform`` = "haar" or None."""
    check_choice("transform", transform, TRANSFORMS)
    if transform == "haar":
        if len(domain_shape) > 2:
            raise ValueError(f"transform='haar' needs a 1-D or 2-D domain, got {domain_shape}")
        return "haar", HaarTransform(domain_shape)
    return None, None


def thresholds_of(operator, m):
    r"""Thresholds ``t`` of the operator's bits ``sign(L x - t)``, float64 ``(M,)``; None when all are 0.

    Read from ``operator.thresholds`` if present, else from
    ``operator.pattern.thresholds`` (BEBLID, TEBLID: learned per test), else
    none. None lets every solver path run exactly its zero-threshold
    iterations, with no extra work.

    Raises
    ------
    ValueError
        If the thresholds are not ``M`` finite values.

    Examples
    --------
    >>> from lbdviewer.operators.descriptor import DescriptorOperator
    >>> from lbdviewer.patterns import make_pattern
    >>> thresholds_of(DescriptorOperator(make_pattern("brief", m=8)), 8) is None
    True
    """
    thresholds = getattr(operator, "thresholds", None)
    if thresholds is None:
        thresholds = getattr(getattr(operator, "pattern", None), "thresholds", None)
    if thresholds is None:
        return None
    thresholds = np.asarray(thresholds, dtype=np.float64)
    if thresholds.shape != (m,) or not np.all(np.isfinite(thresholds)):
        raise ValueError(f"operator thresholds must be {m} finite values, got shape {thresholds.shape}")
    return thresholds if np.any(thresholds != 0) else None


def tie_positive_of(operator):
    """Bit given to a tie: ``operator.pattern.tie_positive`` if present, else False."""
    return bool(getattr(getattr(operator, "pattern", None), "tie_positive", False))


def flat_start(constraint, n_rows, n, dtype):
    """Starting point ``P(0)``-like: 0.5 for "patch"/"box", 0 for None."""
    value = 0.0 if constraint is None else 0.5
    return np.full((n_rows, n), value, dtype=dtype)


def project_rows(x, constraint):
    """Project flat rows ``(B, N)`` on the constraint; None = unit-norm rows."""
    check_constraint(constraint)
    if constraint is None:
        norms = np.linalg.norm(x, axis=1, keepdims=True)
        return np.divide(x, norms, out=np.zeros_like(x), where=norms > 0)
    return project(x, constraint, ndim=1)


def dense_matrix(operator, domain_shape):
    """Dense float64 ``(M, N)`` matrix of ``operator`` (``matrix()`` if present)."""
    if callable(getattr(operator, "matrix", None)):
        return np.asarray(operator.matrix(), dtype=np.float64)
    n = int(np.prod(domain_shape))
    eye = np.eye(n).reshape((n,) + tuple(domain_shape))
    return np.asarray(operator.forward(eye), dtype=np.float64).reshape(n, -1).T


def operator_norm(operator, domain_shape, *, iterations=100, rng=0):
    """``||L||_2``: ``operator.norm_estimate()`` if present, else :func:`lbdviewer.operators.linear.power_norm`."""
    if callable(getattr(operator, "norm_estimate", None)):
        return float(operator.norm_estimate())
    return power_norm(operator.forward, operator.adjoint, domain_shape, iterations=iterations, rng=rng)


class BatchedSolver(IterativeSolver):
    """Driver shared by the batched solvers: backend choice, ``steps``/``run`` and the step loop.

    Subclasses set ``self.iterations`` and implement ``_start() -> run`` (with
    ``run.iteration``, ``run.active``, ``run.iterations_run``),
    ``_snapshot(run, finished)``, ``_advance_fused(run, n_steps)`` and
    ``_step_numpy(run)`` (one iteration of the batched or reference path).
    """

    def _bind(self, operator):
        """Set ``operator``, ``domain_shape``, ``m``, ``n``, ``tie_positive`` and ``thresholds`` (None: all 0)."""
        self.operator = operator
        self.domain_shape = domain_shape_of(operator)
        self.m, self.n = (int(s) for s in operator.shape)
        self.tie_positive = tie_positive_of(operator)
        self.thresholds = thresholds_of(operator, self.m)

    def _configure(self, *, iterations, constraint, transform, backend):
        """Validate and set the options every solver has (after :meth:`_bind`)."""
        self.iterations = check_iterations(iterations)
        self.constraint = check_constraint(constraint)
        self.transform_kind, self.transform = resolve_transform(transform, self.domain_shape)
        self._choose_backend(self.operator, backend)

    def _choose_backend(self, operator, backend):
        """Set ``backend`` ("auto" resolved) and ``_factors`` (fused path) or raise."""
        check_choice("backend", backend, SOLVER_BACKENDS)
        factors = (sparse_factors(operator, self.domain_shape) if backend in ("auto", "fused")
                   else None)
        if backend == "fused" and factors is None:
            raise ValueError("backend='fused' needs an operator with field_matrix and pair_matrix")
        if backend == "auto":
            backend = "fused" if factors is not None else "batched"
        self.backend, self._factors = backend, factors

    def _dense(self):
        """``(L, W)`` as dense float64 matrices (built on first use, for the reference path)."""
        if getattr(self, "_matrices", None) is None:
            w = np.eye(self.n) if self.transform is None else self.transform.matrix()
            self._matrices = (dense_matrix(self.operator, self.domain_shape), w)
        return self._matrices

    @property
    def _grid(self):
        """``(height, width)`` of one input (a 1-D domain is one row)."""
        shape = self.domain_shape
        return shape if len(shape) == 2 else (1, shape[0])

    def steps(self):
        """Iterate, yielding a :class:`SolverState` after every iteration.

        Each call starts again from the initial point; the last state has
        ``finished`` set (budget spent or every row frozen).
        """
        run = self._start()
        while True:
            self._advance(run, 1)
            finished = run.iteration >= self.iterations or not run.active.any()
            yield self._snapshot(run, finished)
            if finished:
                return

    def run(self):
        """Run to the end and return the final :class:`SolverState`.

        Equal to the last state of :meth:`steps`, without the per-iteration copies.
        """
        run = self._start()
        self._advance(run, self.iterations)
        return self._snapshot(run, True)

    def _advance(self, run, n_steps):
        n_steps = min(n_steps, self.iterations - run.iteration)
        if n_steps <= 0 or not run.active.any():
            return
        before = run.iterations_run.copy()
        if self.backend == "fused":
            self._advance_fused(run, n_steps)
        else:
            for _ in range(n_steps):
                if not run.active.any():
                    break
                self._step_numpy(run)
        run.iteration += int((run.iterations_run - before).max())
