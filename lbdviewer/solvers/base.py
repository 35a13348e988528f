"""What every solver shares: the snapshot record, validation and operator plumbing.

Solvers accept any operator object with ``forward``, ``adjoint``, ``shape``
``(M, N)`` and ``domain_shape`` (or, like
:class:`lbdviewer.operators.DescriptorOperator`, ``patch_shape``). Operators that
also expose ``field_matrix()`` ``(F, N)`` and ``pair_matrix()`` ``(M, F)``
(sparse, with ``L = pair_matrix @ field_matrix``) unlock the fused numba path,
which runs whole iterations per patch without leaving compiled code.

Three execution paths compute the same iterations:

``"fused"``
    numba kernels over the sparse factors of ``L``, one patch per thread task,
    float32 (needs ``field_matrix``/``pair_matrix`` and a Haar or identity
    transform);
``"batched"``
    numpy over the whole batch with ``operator.forward``/``adjoint``, float32;
``"reference"``
    one patch at a time with dense float64 matrices; slow and obviously
    correct, used by tests and benchmarks as the yardstick.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numba
import numpy as np

from ..projections import check_constraint, project
from ..wavelets import HaarTransform

TRANSFORMS = ("haar", None)
PARALLEL_MIN_ROWS = 16
_POOLS = {}  # thread pools of the fused path, by size


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
    """Validate a ``(B, M)`` batch of descriptors; return it as float32 or int8.

    Binary data must hold only -1 and +1 and is returned as int8.
    """
    data = np.asarray(data)
    if data.ndim != 2 or data.shape[1] != m:
        raise ValueError(f"{name} must have shape (B, {m}), got {data.shape}")
    if binary:
        if data.size and not np.all((data == 1) | (data == -1)):
            raise ValueError(f"{name} must hold only -1 and +1 values")
        return data.astype(np.int8)
    if not np.all(np.isfinite(data)):
        raise ValueError(f"{name} must be finite")
    return data.astype(np.float32)


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


def run_rows(kernel, active, *args):
    """Call ``kernel(rows, *args)`` on the active rows, split over threads if worthwhile.

    The kernels are serial ``nogil`` numba functions; a thread pool of
    ``numba.get_num_threads()`` workers shares big batches in small chunks (rows
    stop at different iterations). Small batches run in the calling thread.
    """
    rows = np.flatnonzero(active).astype(np.int64)
    n_threads = numba.get_num_threads()
    if rows.size < PARALLEL_MIN_ROWS or n_threads < 2:
        kernel(rows, *args)
        return
    if n_threads not in _POOLS:
        _POOLS[n_threads] = ThreadPoolExecutor(n_threads, thread_name_prefix="lbdviewer-solver")
    pool = _POOLS[n_threads]
    chunks = np.array_split(rows, min(rows.size, 8 * n_threads))
    for future in [pool.submit(kernel, chunk, *args) for chunk in chunks]:
        future.result()


# --- fused path: sparse factors of L and per-patch numba kernels -------------------


@dataclass(frozen=True)
class SparseFactors:
    """CSR arrays (float32) of ``L = pairs @ fields`` for the numba kernels."""

    f_ptr: np.ndarray
    f_idx: np.ndarray
    f_val: np.ndarray
    p_ptr: np.ndarray
    p_idx: np.ndarray
    p_val: np.ndarray
    n_fields: int


def sparse_factors(operator):
    """Return :class:`SparseFactors` if the operator exposes them, else None."""
    if not (callable(getattr(operator, "field_matrix", None))
            and callable(getattr(operator, "pair_matrix", None))):
        return None
    fields = operator.field_matrix().tocsr()
    pairs = operator.pair_matrix().tocsr()
    m, n = (int(s) for s in operator.shape)
    if fields.shape[1] != n or pairs.shape != (m, fields.shape[0]):
        raise ValueError(
            f"operator field_matrix {fields.shape} and pair_matrix {pairs.shape} "
            f"do not factor shape {operator.shape}"
        )
    return SparseFactors(
        fields.indptr.astype(np.int64), fields.indices.astype(np.int64),
        fields.data.astype(np.float32), pairs.indptr.astype(np.int64),
        pairs.indices.astype(np.int64), pairs.data.astype(np.float32), fields.shape[0],
    )


@numba.njit(cache=True)
def sparse_forward(x, f_ptr, f_idx, f_val, p_ptr, p_idx, p_val, fields, out):
    """``out = pairs @ (fields_matrix @ x)`` for one flat patch (``fields`` is scratch)."""
    for f in range(f_ptr.shape[0] - 1):
        acc = np.float32(0.0)
        for jj in range(f_ptr[f], f_ptr[f + 1]):
            acc += f_val[jj] * x[f_idx[jj]]
        fields[f] = acc
    for i in range(p_ptr.shape[0] - 1):
        acc = np.float32(0.0)
        for jj in range(p_ptr[i], p_ptr[i + 1]):
            acc += p_val[jj] * fields[p_idx[jj]]
        out[i] = acc


@numba.njit(cache=True)
def sparse_adjoint(r, f_ptr, f_idx, f_val, p_ptr, p_idx, p_val, fields, out):
    """``out = fields_matrix^T @ (pairs^T @ r)`` for one patch (``fields`` is scratch)."""
    fields[:] = 0.0
    for i in range(p_ptr.shape[0] - 1):
        ri = r[i]
        if ri != 0.0:
            for jj in range(p_ptr[i], p_ptr[i + 1]):
                fields[p_idx[jj]] += p_val[jj] * ri
    out[:] = 0.0
    for f in range(f_ptr.shape[0] - 1):
        g = fields[f]
        if g != 0.0:
            for jj in range(f_ptr[f], f_ptr[f + 1]):
                out[f_idx[jj]] += f_val[jj] * g


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


@numba.njit(cache=True)
def _select_inplace(values, kth):
    """The ``kth`` smallest entry of ``values`` (reordered in place): quickselect."""
    lo = 0
    hi = values.shape[0] - 1
    while lo < hi:
        mid = (lo + hi) // 2
        a, b, c = values[lo], values[mid], values[hi]
        pivot = max(min(a, b), min(max(a, b), c))
        i = lo
        j = hi
        while i <= j:
            while values[i] < pivot:
                i += 1
            while values[j] > pivot:
                j -= 1
            if i <= j:
                values[i], values[j] = values[j], values[i]
                i += 1
                j -= 1
        if kth <= j:
            hi = j
        elif kth >= i:
            lo = i
        else:
            break
    return values[kth]


@numba.njit(cache=True)
def keep_largest_inplace(c, k, magnitude):
    """In-place :func:`keep_largest` of one flat vector (``magnitude`` is scratch)."""
    n = c.shape[0]
    if k >= n:
        return
    for j in range(n):
        magnitude[j] = abs(c[j])
    threshold = _select_inplace(magnitude, n - k)
    n_above = 0
    for j in range(n):
        if abs(c[j]) > threshold:
            n_above += 1
    room = k - n_above
    for j in range(n):
        v = abs(c[j])
        if v < threshold:
            c[j] = 0.0
        elif v == threshold:
            if room > 0:
                room -= 1
            else:
                c[j] = 0.0
