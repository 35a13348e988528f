"""The thread pool that runs ``nogil`` kernels side by side: :func:`map_parallel` and :func:`run_rows`.

One pool of ``numba.get_num_threads()`` workers, shared by the joint
operator's block ranges and the solvers' fused paths.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import cv2
import numba
import numpy as np

PARALLEL_MIN_ROWS = 16
_POOLS = {}  # thread pools, by size


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


def run_rows(kernel, active, *args, multiple=1):
    """Call ``kernel(rows, *args)`` on the active rows, split over threads if worthwhile.

    The kernels are serial ``nogil`` numba functions; a thread pool of
    ``numba.get_num_threads()`` workers shares big batches in small chunks (rows
    stop at different iterations). Small batches run in the calling thread.
    Chunks hold a multiple of ``multiple`` rows (but the last), for kernels
    that take rows in groups (:data:`lbdviewer.solvers.patch._kernels.LANES`).
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
