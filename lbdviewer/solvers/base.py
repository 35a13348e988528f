"""What every solver shares: the snapshot record, validation and operator plumbing.

Solvers accept any operator object with ``forward``, ``adjoint``, ``shape``
``(M, N)`` and ``domain_shape`` (or, like
:class:`lbdviewer.operators.DescriptorOperator`, ``patch_shape``). Operators that
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

import weakref
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import cv2
import numba
import numpy as np
from scipy import sparse

from ..projections import check_constraint, mean_box_projection_inplace, project
from ..wavelets import HaarTransform, level_shapes

TRANSFORMS = ("haar", None)
BACKENDS = ("auto", "fused", "batched", "reference")
CONSTRAINT_CODES = {"patch": 0, "box": 1, None: 2}  # the constraint as the fused kernels take it
PARALLEL_MIN_ROWS = 16
_POOLS = {}  # thread pools of the fused path, by size
_FACTORS = weakref.WeakKeyDictionary()  # operator -> (domain shape, SparseFactors)


@dataclass(frozen=True)
class SolverState:
    """Snapshot of a batched solver after one iteration (arrays are read-only copies).

    Attributes
    ----------
    iteration : int
        Iterations done so far (1 after the first step).
    x : numpy.ndarray, shape (B, *domain_shape)
        Current estimates.
    objective : numpy.ndarray, shape (B,)
        Objective per row (BIHT: number of inconsistent bits
        :math:`\\|[b \\odot \\operatorname{sign}(Lx)]_-\\|_1`; primal-dual:
        :math:`\\lambda\\|Lx - b\\|_1 + \\|Wx\\|_1`).
    bit_consistency : numpy.ndarray, shape (B,), or None
        Share of bits of ``sign(Lx)`` equal to the input bits, when the input
        is binary; ``None`` for real-valued data.
    active : numpy.ndarray of bool, shape (B,)
        Rows still changing; a row reaching an exact fixed point is frozen.
    iterations_run : numpy.ndarray of int, shape (B,)
        Iterations each row actually ran (a frozen row stops counting).
    finished : bool
        True on the last snapshot: the iteration budget is spent or every row
        is frozen.
    """

    iteration: int
    x: np.ndarray
    objective: np.ndarray
    bit_consistency: np.ndarray | None
    active: np.ndarray
    iterations_run: np.ndarray
    finished: bool


def frozen_copy(array, dtype=None):
    """Return a read-only copy of ``array`` (optionally cast to ``dtype``)."""
    out = np.array(array, dtype=dtype, copy=True)
    out.flags.writeable = False
    return out


def check_iterations(iterations):
    """Return ``iterations`` as an int >= 1 or raise ``ValueError`` naming it."""
    if isinstance(iterations, bool) or int(iterations) != iterations or iterations < 1:
        raise ValueError(f"iterations must be an integer >= 1, got {iterations!r}")
    return int(iterations)


def check_positive(name, value):
    """Return ``value`` as a float > 0 (finite) or raise ``ValueError`` naming ``name``."""
    if isinstance(value, bool) or not np.isfinite(value) or not value > 0:
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    return float(value)


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
    if transform not in TRANSFORMS:
        raise ValueError(f"transform must be one of {TRANSFORMS}, got {transform!r}")
    if transform == "haar":
        if len(domain_shape) > 2:
            raise ValueError(f"transform='haar' needs a 1-D or 2-D domain, got {domain_shape}")
        return "haar", HaarTransform(domain_shape)
    return None, None


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
    """``||L||_2``: ``operator.norm_estimate()`` if present, else the power method."""
    if callable(getattr(operator, "norm_estimate", None)):
        return float(operator.norm_estimate())
    v = np.random.default_rng(rng).standard_normal(domain_shape)
    value = 0.0
    for _ in range(iterations):
        w = np.asarray(operator.adjoint(operator.forward(v)), dtype=np.float64)
        value = float(np.linalg.norm(w))
        if value == 0.0:
            return 0.0
        v = w / value
    return float(np.sqrt(value))


def thread_pool():
    """The shared pool of ``numba.get_num_threads()`` workers that runs ``nogil`` kernels.

    Creating it turns OpenCV's own threading off (``cv2.setNumThreads(1)``):
    the joint operator's workers call OpenCV filters side by side, and
    OpenCV's workers would compete with them for the same cores (the fused
    hinge at 512x512, offset 8: 5-15 % faster on 2 cores).
    """
    n_threads = numba.get_num_threads()
    if n_threads not in _POOLS:
        cv2.setNumThreads(1)
        _POOLS[n_threads] = ThreadPoolExecutor(n_threads, thread_name_prefix="lbdviewer-solver")
    return _POOLS[n_threads]


def map_parallel(function, items):
    """``[function(item) for item in items]``, the first in the calling thread, the others in :func:`thread_pool`.

    The caller would only wait otherwise; each item handed to the pool costs
    a thread wake-up (tens of microseconds on a loaded machine), so a solver
    iteration that splits its work in two hands over half as many.

    Examples
    --------
    >>> map_parallel(lambda v: v * v, [1, 2, 3])
    [1, 4, 9]
    """
    items = list(items)
    if len(items) < 2:
        return [function(item) for item in items]
    futures = [thread_pool().submit(function, item) for item in items[1:]]
    try:
        first = function(items[0])
    finally:
        others = [future.result() for future in futures]
    return [first, *others]


class BatchedSolver:
    """Driver shared by the batched solvers: backend choice, ``steps``/``run`` and the step loop.

    Subclasses set ``self.iterations`` and implement ``_start() -> run`` (with
    ``run.iteration``, ``run.active``, ``run.iterations_run``),
    ``_snapshot(run, finished)``, ``_advance_fused(run, n_steps)`` and
    ``_step_numpy(run)`` (one iteration of the batched or reference path).
    """

    def _bind(self, operator):
        """Set ``operator``, ``domain_shape``, ``m``, ``n`` and ``tie_positive``."""
        self.operator = operator
        self.domain_shape = domain_shape_of(operator)
        self.m, self.n = (int(s) for s in operator.shape)
        self.tie_positive = tie_positive_of(operator)

    def _configure(self, *, iterations, constraint, transform, backend):
        """Validate and set the options every solver has (after :meth:`_bind`)."""
        self.iterations = check_iterations(iterations)
        self.constraint = check_constraint(constraint)
        self.transform_kind, self.transform = resolve_transform(transform, self.domain_shape)
        self._choose_backend(self.operator, backend)

    def _choose_backend(self, operator, backend):
        """Set ``backend`` ("auto" resolved) and ``_factors`` (fused path) or raise."""
        if backend not in BACKENDS:
            raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
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


def run_rows(kernel, active, *args, multiple=1):
    """Call ``kernel(rows, *args)`` on the active rows, split over threads if worthwhile.

    The kernels are serial ``nogil`` numba functions; a thread pool of
    ``numba.get_num_threads()`` workers shares big batches in small chunks (rows
    stop at different iterations). Small batches run in the calling thread.
    Chunks hold a multiple of ``multiple`` rows (but the last), for kernels
    that take rows in groups (:data:`LANES`).
    """
    rows = np.flatnonzero(active).astype(np.int64)
    n_threads = numba.get_num_threads()
    if rows.size < PARALLEL_MIN_ROWS or n_threads < 2:
        kernel(rows, *args)
        return
    pool = thread_pool()
    n_groups = -(-rows.size // multiple)
    groups = np.array_split(np.arange(n_groups), min(n_groups, 8 * n_threads))
    chunks = [rows[g[0] * multiple:(g[-1] + 1) * multiple] for g in groups]
    for future in [pool.submit(kernel, chunk, *args) for chunk in chunks]:
        future.result()


# --- fused path: sparse factors of L and per-patch numba kernels -------------------


@dataclass(frozen=True)
class SparseFactors:
    """Arrays (float32) of ``L = pairs @ fields`` for the numba kernels.

    Identical fields are stored once (BRIEF: 1024 fields, ~600 distinct).
    When many fields share one dense ``stencil`` (BRIEF: a single 3x3
    Gaussian), the forward kernel correlates the whole patch with it once
    (dense, vectorised) and reads each such field at its ``anchor`` (flat
    index of the stencil's top-left pixel; -1: the field has its own taps in
    the CSR arrays ``f_*``); the adjoint scatters the stencil at the anchors.
    ``pairs`` is CSR ``p_*`` over the distinct fields.
    """

    f_ptr: np.ndarray
    f_idx: np.ndarray
    f_val: np.ndarray
    p_ptr: np.ndarray
    p_idx: np.ndarray
    p_val: np.ndarray
    stencil: np.ndarray
    anchor: np.ndarray
    width: int

    @property
    def n_fields(self):
        return self.anchor.shape[0]

    @property
    def arrays(self):
        """The tuple the kernels take (:func:`sparse_forward`, :func:`sparse_adjoint`)."""
        return (self.f_ptr, self.f_idx, self.f_val, self.p_ptr, self.p_idx, self.p_val,
                self.stencil, self.anchor, self.width)


def _row_stencil(indices, data, width):
    """A field as ``(anchor, dense stencil)`` over its bounding box of the 2-D domain."""
    rows, cols = np.divmod(indices, width)
    r0, c0 = rows.min(), cols.min()
    stencil = np.zeros((rows.max() - r0 + 1, cols.max() - c0 + 1), dtype=np.float32)
    stencil[rows - r0, cols - c0] = data
    return int(r0 * width + c0), stencil


def sparse_factors(operator, domain_shape):
    """Return :class:`SparseFactors` if the operator exposes them, else None.

    Built once per operator (cached while it lives): a solver is made for
    every chunk of patches.
    """
    if not (callable(getattr(operator, "field_matrix", None))
            and callable(getattr(operator, "pair_matrix", None))):
        return None
    key = tuple(domain_shape)
    try:
        cached = _FACTORS.get(operator)
    except TypeError:  # not weakly referenceable or not hashable: no cache
        return _build_factors(operator, key)
    if cached is None or cached[0] != key:
        cached = (key, _build_factors(operator, key))
        _FACTORS[operator] = cached
    return cached[1]


def _build_factors(operator, domain_shape):
    fields = operator.field_matrix().tocsr().sorted_indices()
    pairs = operator.pair_matrix().tocsr()
    m, n = (int(s) for s in operator.shape)
    if fields.shape[1] != n or pairs.shape != (m, fields.shape[0]):
        raise ValueError(
            f"operator field_matrix {fields.shape} and pair_matrix {pairs.shape} "
            f"do not factor shape {operator.shape}"
        )
    height, width = domain_shape if len(domain_shape) == 2 else (1, n)
    distinct, index, rows = {}, np.empty(fields.shape[0], dtype=np.int64), []
    for f in range(fields.shape[0]):
        lo, hi = fields.indptr[f], fields.indptr[f + 1]
        key = (fields.indices[lo:hi].tobytes(), fields.data[lo:hi].astype(np.float32).tobytes())
        if key not in distinct:
            distinct[key] = len(rows)
            rows.append((fields.indices[lo:hi], fields.data[lo:hi]))
        index[f] = distinct[key]
    shared = {}  # stencil bytes -> (stencil, [(distinct field, anchor)])
    for f, (indices, data) in enumerate(rows):
        if indices.size:
            anchor, stencil = _row_stencil(indices, data, width)
            entry = shared.setdefault((stencil.shape, stencil.tobytes()), (stencil, []))
            entry[1].append((f, anchor))
    stencil, users = max(shared.values(), key=lambda entry: len(entry[1]), default=(None, []))
    anchors = np.full(len(rows), -1, dtype=np.int64)
    if stencil is not None:
        kh, kw = stencil.shape
        # Filtering costs a pass over the patch; worth it when the fields cover it.
        if len(users) * kh * kw >= (height - kh + 1) * (width - kw + 1) and kh * kw > 1:
            for f, anchor in users:
                anchors[f] = anchor
        else:
            stencil = None
    tap_rows = [(np.empty(0, np.int64), np.empty(0)) if anchors[f] >= 0 else row
                for f, row in enumerate(rows)]
    f_ptr = np.cumsum([0] + [idx.size for idx, _ in tap_rows]).astype(np.int64)
    pairs = pairs.tocoo()
    remapped = sparse.csr_matrix((pairs.data, (pairs.row, index[pairs.col])), shape=(m, len(rows)))
    remapped.sort_indices()
    return SparseFactors(
        f_ptr, np.concatenate([idx for idx, _ in tap_rows]).astype(np.int64),
        np.concatenate([val for _, val in tap_rows]).astype(np.float32),
        remapped.indptr.astype(np.int64), remapped.indices.astype(np.int64),
        remapped.data.astype(np.float32),
        np.zeros((0, 0), np.float32) if stencil is None else stencil, anchors, int(width),
    )


@numba.njit(cache=True, nogil=True)
def _filter_patch(x, stencil, width, plane):
    """``plane[r, c] = sum_ij stencil[i, j] x[r + i, c + j]`` where the stencil fits (flat arrays).

    Rows accumulate in a local buffer indexed by the loop counter only: numba
    then drops its negative-index checks and LLVM vectorises (4x faster).
    """
    kh, kw = stencil.shape
    height = x.shape[0] // width
    span = width - kw + 1
    row = np.empty(span, dtype=plane.dtype)
    for r in range(height - kh + 1):
        row[:] = 0.0
        for i in range(kh):
            for j in range(kw):
                w = stencil[i, j]
                source = x[(r + i) * width + j:]
                for c in range(span):
                    row[c] += w * source[c]
        plane[r * width: r * width + span] = row


@numba.njit(cache=True, nogil=True)
def sparse_forward(x, factors, fields, plane, out):
    """``out = pairs @ (fields_matrix @ x)`` for one flat patch (``fields``, ``plane`` are scratch)."""
    f_ptr, f_idx, f_val, p_ptr, p_idx, p_val, stencil, anchor, width = factors
    if stencil.shape[0] > 0:
        _filter_patch(x, stencil, width, plane)
    for f in range(anchor.shape[0]):
        if anchor[f] >= 0:
            fields[f] = plane[anchor[f]]
        else:
            acc = np.float32(0.0)
            for jj in range(f_ptr[f], f_ptr[f + 1]):
                acc += f_val[jj] * x[f_idx[jj]]
            fields[f] = acc
    for i in range(p_ptr.shape[0] - 1):
        acc = np.float32(0.0)
        for jj in range(p_ptr[i], p_ptr[i + 1]):
            acc += p_val[jj] * fields[p_idx[jj]]
        out[i] = acc


@numba.njit(cache=True, nogil=True)
def sparse_adjoint(r, factors, fields, out):
    """``out = fields_matrix^T @ (pairs^T @ r)`` for one patch (``fields`` is scratch).

    Zero entries of ``r`` and of the field gradients cost nothing (BIHT's
    residual is mostly zero). Fields of the shared stencil are scattered tap
    by tap from the stencil: measured faster than a dense correlation of the
    patch unless nearly every field is non-zero.
    """
    f_ptr, f_idx, f_val, p_ptr, p_idx, p_val, stencil, anchor, width = factors
    fields[:] = 0.0
    for i in range(p_ptr.shape[0] - 1):
        ri = r[i]
        if ri != 0.0:
            for jj in range(p_ptr[i], p_ptr[i + 1]):
                fields[p_idx[jj]] += p_val[jj] * ri
    out[:] = 0.0
    kh, kw = stencil.shape
    for f in range(anchor.shape[0]):
        g = fields[f]
        if g == 0.0:
            continue
        a = anchor[f]
        if a >= 0:
            for i in range(kh):
                target = out[a + i * width: a + i * width + kw]
                for j in range(kw):
                    target[j] += stencil[i, j] * g
        else:
            for jj in range(f_ptr[f], f_ptr[f + 1]):
                out[f_idx[jj]] += f_val[jj] * g


@numba.njit(cache=True, nogil=True)
def differs(a, b):
    """Whether two flat vectors differ anywhere (stops at the first difference)."""
    for j in range(a.shape[0]):
        if a[j] != b[j]:
            return True
    return False


@numba.njit(cache=True, nogil=True)
def project_inplace(a, constraint, shift):
    """Project one flat row on constraint 0 ("patch") or 1 ("box"); others are left alone.

    ``shift`` is the previous "patch" shift (a warm start); the new one is returned.
    """
    if constraint == 0:
        return mean_box_projection_inplace(a, 0.5, shift)
    if constraint == 1:
        for j in range(a.shape[0]):
            a[j] = min(max(a[j], np.float32(0.0)), np.float32(1.0))
    return shift


def keep_largest(c, k):
    """Hard threshold :math:`H_K` per row: keep the ``k`` largest ``|c|`` of each row.

    Entries tied with the ``k``-th largest magnitude are kept in index order, so
    exactly ``k`` survive and every path (numpy, numba) picks the same ones.

    Examples
    --------
    >>> keep_largest(np.array([[3.0, -1.0, 2.0, 1.0]]), 2)
    array([[3., 0., 2., 0.]])
    """
    n = c.shape[1]
    if k >= n:
        return c.copy()
    magnitude = np.abs(c)
    threshold = np.partition(magnitude, n - k, axis=1)[:, n - k: n - k + 1]
    keep = magnitude > threshold
    tied = magnitude == threshold
    room = k - keep.sum(axis=1, keepdims=True)
    keep |= tied & (np.cumsum(tied, axis=1) <= room)
    return np.where(keep, c, c.dtype.type(0))


@numba.njit(cache=True, nogil=True)
def _select_key(keys, kth):
    """The ``kth`` smallest of the uint32 ``keys`` (overwritten): radix select, 8 bits a pass.

    Non-negative float32 values order like their bit patterns, so this selects
    on magnitudes without comparisons that branch on the data.
    """
    counts = np.zeros(256, dtype=np.int64)
    size = keys.shape[0]
    prefix = np.uint32(0)
    for shift in (24, 16, 8, 0):
        counts[:] = 0
        for j in range(size):
            counts[(keys[j] >> shift) & 255] += 1
        digit = 0
        while kth >= counts[digit]:
            kth -= counts[digit]
            digit += 1
        prefix |= np.uint32(digit) << shift
        kept = 0  # keep the keys in the chosen bucket, in place at the front
        for j in range(size):
            key = keys[j]
            keys[kept] = key
            kept += ((key >> shift) & 255) == digit
        size = kept
    return prefix


@numba.njit(cache=True, nogil=True)
def keep_largest_inplace(c, k, magnitude):
    """In-place :func:`keep_largest` of one flat float32 vector (``magnitude``: float32 scratch).

    Magnitudes are compared as the bit patterns of ``|c|`` (sign bit cleared),
    which order like the floats.
    """
    n = c.shape[0]
    if k >= n:
        return
    bits = c.view(np.uint32)
    keys = magnitude.view(np.uint32)
    for j in range(n):
        keys[j] = bits[j] & np.uint32(0x7FFFFFFF)
    threshold = _select_key(keys, n - k)
    n_above = 0
    for j in range(n):
        n_above += (bits[j] & np.uint32(0x7FFFFFFF)) > threshold
    room = k - n_above
    for j in range(n):
        key = bits[j] & np.uint32(0x7FFFFFFF)
        if key < threshold:
            c[j] = 0.0
        elif key == threshold:
            if room > 0:
                room -= 1
            else:
                c[j] = 0.0


# --- lane-interleaved kernels: LANES patches at once -------------------------------
#
# Element j of patch k of a group sits at j * LANES + k, so the element-wise
# loops of an iteration run over one long contiguous array (which the compiler
# vectorises: numba turns off LLVM's straight-line vectoriser), and the sparse
# gathers and scatters move LANES independent values per index.

LANES = 8  # one AVX2 register of float32


def lane_factors(factors, n):
    """The tuple :func:`sparse_forward_lanes` and :func:`sparse_adjoint_lanes` take.

    Like :attr:`SparseFactors.arrays`, but each pair entry names where its
    field's value is in a work buffer of ``n + n_fields`` elements (per
    lane): the filtered patch at the field's anchor (shared stencil), else
    slot ``n + f``.
    """
    fields = factors.p_idx
    source = np.where(factors.anchor[fields] >= 0, factors.anchor[fields], n + fields)
    return (factors.f_ptr, factors.f_idx, factors.f_val, factors.p_ptr, source.astype(np.int64),
            factors.p_val, factors.stencil, factors.anchor, factors.width)


@numba.njit(cache=True, nogil=True, inline="always")
def to_lane(lanes, values, k):
    """Write the vector ``values`` into lane ``k`` of ``lanes``."""
    for j in range(values.shape[0]):
        lanes[j * LANES + k] = values[j]


@numba.njit(cache=True, nogil=True, inline="always")
def from_lane(lanes, values, k):
    """Read lane ``k`` of ``lanes`` into the vector ``values``."""
    for j in range(values.shape[0]):
        values[j] = lanes[j * LANES + k]


@numba.njit(cache=True, nogil=True)
def lanes_differ(a, b, k):
    """Whether lane ``k`` of two interleaved arrays differs anywhere (stops at the first difference)."""
    for q in range(k, a.shape[0], LANES):
        if a[q] != b[q]:
            return True
    return False


@numba.njit(cache=True, nogil=True)
def sparse_forward_lanes(x, factors, work, out):
    """:func:`sparse_forward` of ``LANES`` interleaved patches (``factors`` from :func:`lane_factors`).

    ``work`` (scratch, ``n + n_fields`` elements per lane) receives the
    filtered patch and the fields with taps of their own; pairs read them
    there. Same arithmetic, in the same order, as :func:`sparse_forward`.
    """
    f_ptr, f_idx, f_val, p_ptr, p_source, p_val, stencil, anchor, width = factors
    n = x.shape[0] // LANES
    kh, kw = stencil.shape
    if kh > 0:
        span = (width - kw + 1) * LANES
        for row in range(n // width - kh + 1):
            acc = work[row * width * LANES: row * width * LANES + span]
            acc[:] = 0.0
            for i in range(kh):
                for j in range(kw):
                    w = stencil[i, j]
                    source = x[((row + i) * width + j) * LANES:]
                    for q in range(span):
                        acc[q] += w * source[q]
    for f in range(anchor.shape[0]):
        if anchor[f] < 0:
            base = (n + f) * LANES
            for k in range(LANES):
                work[base + k] = 0.0
            for jj in range(f_ptr[f], f_ptr[f + 1]):
                v = f_val[jj]
                source = f_idx[jj] * LANES
                for k in range(LANES):
                    work[base + k] += v * x[source + k]
    for i in range(p_ptr.shape[0] - 1):
        base = i * LANES
        for k in range(LANES):
            out[base + k] = 0.0
        for jj in range(p_ptr[i], p_ptr[i + 1]):
            v = p_val[jj]
            source = p_source[jj] * LANES
            for k in range(LANES):
                out[base + k] += v * work[source + k]


@numba.njit(cache=True, nogil=True)
def sparse_adjoint_lanes(r, factors, work, out):
    """:func:`sparse_adjoint` of ``LANES`` interleaved patches (``factors`` from :func:`lane_factors`).

    Pairs scatter into ``work`` (as in :func:`sparse_forward_lanes`); the
    anchored part is then correlated with the transposed stencil in long
    loops (the primal-dual residual has no zeros to skip). Terms reach each
    pixel in another order than in :func:`sparse_adjoint`: equal to rounding.
    """
    f_ptr, f_idx, f_val, p_ptr, p_source, p_val, stencil, anchor, width = factors
    n = out.shape[0] // LANES
    work[:] = 0.0
    for i in range(p_ptr.shape[0] - 1):
        source = i * LANES
        for jj in range(p_ptr[i], p_ptr[i + 1]):
            v = p_val[jj]
            target = p_source[jj] * LANES
            for k in range(LANES):
                work[target + k] += v * r[source + k]
    out[:] = 0.0
    for f in range(anchor.shape[0]):
        if anchor[f] < 0:
            source = (n + f) * LANES
            for jj in range(f_ptr[f], f_ptr[f + 1]):
                v = f_val[jj]
                target = f_idx[jj] * LANES
                for k in range(LANES):
                    out[target + k] += v * work[source + k]
    kh, kw = stencil.shape
    if kh > 0:
        span = (width - kw + 1) * LANES
        for row in range(n // width - kh + 1):
            gradient = work[row * width * LANES: row * width * LANES + span]
            for i in range(kh):
                for j in range(kw):
                    w = stencil[i, j]
                    target = out[((row + i) * width + j) * LANES:]
                    for q in range(span):
                        target[q] += w * gradient[q]


_HAAR_SCALE = np.float32(1.0 / np.sqrt(2.0))  # as lbdviewer.wavelets computes it


@numba.njit(cache=True, nogil=True)
def haar_forward_lanes(source, a, block, height, width):
    """``a`` = :func:`~lbdviewer.wavelets.haar_forward_inplace` of ``source``, ``LANES`` interleaved images.

    Same levels and arithmetic (bit for bit); each split goes between ``a``
    (``source`` at the first level) and the scratch ``block`` (the current
    ``h x w`` block, rows of ``w``) instead of through a copy.
    """
    h = height
    w = width
    while h > 1 or w > 1:
        if w > 1:
            _split_rows(source, width, block, w, h, w)
        else:
            _copy_block(source, width, block, w, h, w)
        source = a
        if h > 1:
            _split_cols(block, w, a, width, h, w)
        else:
            _copy_block(block, w, a, width, h, w)
        h = (h + 1) // 2
        w = (w + 1) // 2


@numba.njit(cache=True, nogil=True)
def haar_adjoint_lanes(a, block, height, width):
    """In-place :func:`~lbdviewer.wavelets.haar_adjoint_inplace` of ``LANES`` interleaved images.

    ``block`` is scratch of the size of ``a``; bit for bit the same arithmetic.
    """
    heights, widths = level_shapes(height, width)
    for level in range(heights.shape[0] - 1, -1, -1):
        h, w = heights[level], widths[level]
        if h > 1:
            _merge_cols(a, width, block, w, h, w)
        else:
            _copy_block(a, width, block, w, h, w)
        if w > 1:
            _merge_rows(block, w, a, width, h, w)
        else:
            _copy_block(block, w, a, width, h, w)


# The four steps of a Haar level below read ``source`` (rows of ``source_width``
# pixels) and write ``target`` (rows of ``target_width``); they transform the
# top-left ``h x w`` block. A pair (u, v) gives ((u + v), (u - v)) / sqrt(2).


@numba.njit(cache=True, nogil=True, inline="always")
def _copy_block(source, source_width, target, target_width, h, w):
    for row in range(h):
        line = source[row * source_width * LANES: (row * source_width + w) * LANES]
        out = target[row * target_width * LANES:]
        for q in range(line.shape[0]):
            out[q] = line[q]


@numba.njit(cache=True, nogil=True, inline="always")
def _split_rows(source, source_width, target, target_width, h, w):
    """Pairs of columns: sums to the left half, differences to the right."""
    pairs = w // 2
    n_low = w - pairs
    for row in range(h):
        line = row * source_width * LANES
        out = row * target_width * LANES
        for j in range(pairs):
            u = line + 2 * j * LANES
            low = out + j * LANES
            high = out + (n_low + j) * LANES
            for k in range(LANES):
                first = source[u + k]
                second = source[u + LANES + k]
                target[low + k] = (first + second) * _HAAR_SCALE
                target[high + k] = (first - second) * _HAAR_SCALE
        if w % 2:  # the unpaired last column ends the left half
            for k in range(LANES):
                target[out + pairs * LANES + k] = source[line + (w - 1) * LANES + k]


@numba.njit(cache=True, nogil=True, inline="always")
def _split_cols(source, source_width, target, target_width, h, w):
    """Pairs of rows: sums to the top half, differences to the bottom."""
    pairs = h // 2
    n_low = h - pairs
    size = w * LANES
    for i in range(pairs):
        first = source[2 * i * source_width * LANES:]
        second = source[(2 * i + 1) * source_width * LANES:]
        low = target[i * target_width * LANES:]
        high = target[(n_low + i) * target_width * LANES:]
        for q in range(size):
            low[q] = (first[q] + second[q]) * _HAAR_SCALE
            high[q] = (first[q] - second[q]) * _HAAR_SCALE
    if h % 2:
        last = source[(h - 1) * source_width * LANES:]
        low = target[pairs * target_width * LANES:]
        for q in range(size):
            low[q] = last[q]


@numba.njit(cache=True, nogil=True, inline="always")
def _merge_rows(source, source_width, target, target_width, h, w):
    """Inverse of :func:`_split_rows`."""
    pairs = w // 2
    n_low = w - pairs
    for row in range(h):
        line = row * source_width * LANES
        out = row * target_width * LANES
        for j in range(pairs):
            low = line + j * LANES
            high = line + (n_low + j) * LANES
            u = out + 2 * j * LANES
            for k in range(LANES):
                lo = source[low + k]
                hi = source[high + k]
                target[u + k] = (lo + hi) * _HAAR_SCALE
                target[u + LANES + k] = (lo - hi) * _HAAR_SCALE
        if w % 2:
            for k in range(LANES):
                target[out + (w - 1) * LANES + k] = source[line + pairs * LANES + k]


@numba.njit(cache=True, nogil=True, inline="always")
def _merge_cols(source, source_width, target, target_width, h, w):
    """Inverse of :func:`_split_cols`."""
    pairs = h // 2
    n_low = h - pairs
    size = w * LANES
    for i in range(pairs):
        low = source[i * source_width * LANES:]
        high = source[(n_low + i) * source_width * LANES:]
        first = target[2 * i * target_width * LANES:]
        second = target[(2 * i + 1) * target_width * LANES:]
        for q in range(size):
            first[q] = (low[q] + high[q]) * _HAAR_SCALE
            second[q] = (low[q] - high[q]) * _HAAR_SCALE
    if h % 2:
        middle = source[pairs * source_width * LANES:]
        last = target[(h - 1) * target_width * LANES:]
        for q in range(size):
            last[q] = middle[q]
