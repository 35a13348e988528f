"""The thread pool that runs ``nogil`` kernels side by side: :func:`map_parallel` and :func:`run_rows`.

One pool of ``numba.get_num_threads()`` workers, shared by the joint
operator's block ranges and the solvers' fused paths. No thread setting of
the process is changed for longer than the work that needs it:
:func:`opencv_single_threaded` turns OpenCV's own threads off while the
pool's workers call OpenCV side by side and restores the count after, and
:func:`numba_threads` sets numba's count for the calling thread and restores
it after.
"""

from __future__ import annotations

import contextlib
import threading
from concurrent.futures import ThreadPoolExecutor

import cv2
import numba
import numpy as np

PARALLEL_MIN_ROWS = 16
_POOLS = {}  # thread pools, by size
_POOLS_LOCK = threading.Lock()
_OPENCV_LOCK = threading.Lock()
_opencv = {"users": 0, "saved": None}  # sections in opencv_single_threaded, and the count they put back


def thread_pool():
    """The shared pool of ``numba.get_num_threads()`` workers that runs ``nogil`` kernels.

    Created once per size, under a lock (threads asking at once share one pool).
    """
    n_threads = numba.get_num_threads()
    with _POOLS_LOCK:
        if n_threads not in _POOLS:
            _POOLS[n_threads] = ThreadPoolExecutor(n_threads, thread_name_prefix="lbdviewer-solver")
        return _POOLS[n_threads]


@contextlib.contextmanager
def opencv_single_threaded():
    """OpenCV without its own threads for the duration, then as it was (``cv2.setNumThreads`` restored).

    The joint operator's workers call OpenCV filters side by side, and
    OpenCV's workers would compete with them for the same cores (the fused
    hinge at 512x512, offset 8: 5-15 % faster on 2 cores). The setting is
    process-wide, so overlapping sections (threads of an app) share it: the
    first one in saves the count, the last one out puts it back.

    Examples
    --------
    >>> before = cv2.getNumThreads()
    >>> with opencv_single_threaded():
    ...     inside = cv2.getNumThreads()
    >>> inside, cv2.getNumThreads() == before
    (1, True)
    """
    with _OPENCV_LOCK:
        if _opencv["users"] == 0:
            _opencv["saved"] = cv2.getNumThreads()
            cv2.setNumThreads(1)
        _opencv["users"] += 1
    try:
        yield
    finally:
        with _OPENCV_LOCK:
            _opencv["users"] -= 1
            if _opencv["users"] == 0:
                cv2.setNumThreads(_opencv["saved"])


@contextlib.contextmanager
def numba_threads(n):
    """numba's thread count for the calling thread set to ``n`` (clipped to 1..NUMBA_NUM_THREADS), then restored.

    numba keeps the count per thread; None leaves it as it is.

    Examples
    --------
    >>> before = numba.get_num_threads()
    >>> with numba_threads(1):
    ...     inside = numba.get_num_threads()
    >>> inside, numba.get_num_threads() == before
    (1, True)
    """
    previous = numba.get_num_threads()
    if n is not None:
        numba.set_num_threads(max(1, min(int(n), numba.config.NUMBA_NUM_THREADS)))
    try:
        yield
    finally:
        numba.set_num_threads(previous)


def map_parallel(function, items):
    """``[function(item) for item in items]``, the first in the calling thread, the others in :func:`thread_pool`.

    The caller would only wait otherwise; each item handed to the pool costs
    a thread wake-up (tens of microseconds on a loaded machine), so a solver
    iteration that splits its work in two hands over half as many. OpenCV's
    own threads are off meanwhile (:func:`opencv_single_threaded`).

    Examples
    --------
    >>> map_parallel(lambda v: v * v, [1, 2, 3])
    [1, 4, 9]
    """
    items = list(items)
    if len(items) < 2:
        return [function(item) for item in items]
    with opencv_single_threaded():
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
