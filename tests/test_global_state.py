"""No hidden global state: thread settings scoped and restored, the pool registry and operator caches locked."""

import threading
import time

import cv2
import numba
import numpy as np
import pytest

from lbdviewer._runtime import parallel
from lbdviewer.operators.descriptor import DescriptorOperator
from lbdviewer.patterns.families import make_pattern
from lbdviewer.solvers.patch import _sparse, biht

THREADS = 8


def _at_once(function):
    """``function()`` in THREADS threads released together; their results."""
    barrier, results = threading.Barrier(THREADS), [None] * THREADS

    def run(i):
        barrier.wait()
        results[i] = function()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    return results


@pytest.fixture
def opencv_threads():
    """OpenCV's thread count set to 3 by "the caller" for the test, then put back as it was."""
    before = cv2.getNumThreads()
    cv2.setNumThreads(3)
    yield 3
    cv2.setNumThreads(before)


def test_a_joint_solve_leaves_opencvs_thread_count_as_it_found_it(opencv_threads):
    from lbdviewer.reconstruction.image import describe_sites, reconstruct_image
    from lbdviewer.reconstruction.sites import grid_sites

    seen = []
    original = parallel.map_parallel

    def watching(function, items):  # OpenCV's count while work runs side by side (two items or more)
        items = list(items)
        if len(items) < 2:
            return original(function, items)
        return original(lambda item: (seen.append(cv2.getNumThreads()), function(item))[1], items)

    image = np.random.default_rng(0).random((64, 64))
    pattern = make_pattern("brief", patch_size=16, m=64)
    sites = grid_sites(image.shape, patch_size=16, offset=4)
    with pytest.MonkeyPatch.context() as patch:
        for module in ("lbdviewer.operators.joint.operator", "lbdviewer.solvers.image.consistency"):
            patch.setattr(f"{module}.map_parallel", watching)
        reconstruct_image(describe_sites(image, sites, pattern), sites, pattern, shape=image.shape, iterations=4)
    assert seen and set(seen) == {1}                      # OpenCV single-threaded while the workers run
    assert cv2.getNumThreads() == opencv_threads          # and as the caller set it afterwards


def test_overlapping_sections_restore_opencv_once_the_last_one_ends(opencv_threads):
    first, second = parallel.opencv_single_threaded(), parallel.opencv_single_threaded()
    first.__enter__()
    second.__enter__()
    first.__exit__(None, None, None)
    assert cv2.getNumThreads() == 1                       # the other section still runs
    second.__exit__(None, None, None)
    assert cv2.getNumThreads() == opencv_threads
    with pytest.raises(ZeroDivisionError), parallel.opencv_single_threaded():
        1 / 0
    assert cv2.getNumThreads() == opencv_threads          # restored on an error too


def test_an_audit_task_leaves_numbas_thread_count_as_it_found_it(tmp_path):
    from lbdviewer.audit.tasks import AuditTask, run_task
    from lbdviewer.io.images import save_png

    save_png(tmp_path / "a.png", np.random.default_rng(1).random((48, 48)))
    before = numba.get_num_threads()
    seen = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("lbdviewer.audit.tasks._audit", lambda *args: seen.append(numba.get_num_threads()))
        row, _ = run_task(AuditTask(str(tmp_path / "a.png"), "orb", threads=1, ocr=False))
    assert row["status"] == "ok" and seen == [1]          # the task ran with its own count
    assert numba.get_num_threads() == before               # the worker's is back


def test_a_defend_task_leaves_numbas_thread_count_as_it_found_it(tmp_path):
    from lbdviewer.defences.tasks import DefendTask, run_defend_task

    before = numba.get_num_threads()
    seen = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("lbdviewer.defences.tasks._defend", lambda *args: seen.append(numba.get_num_threads()))
        row, _ = run_defend_task(DefendTask(str(tmp_path / "a.png"), "orb", "none", None, "aware", threads=1))
    assert row["status"] == "ok" and seen == [1]          # the task ran with its own count
    assert numba.get_num_threads() == before               # the worker's is back (h27 left it at the task's)


def test_threads_asking_for_the_pool_at_once_share_one(monkeypatch):
    made = []

    def slow_pool(*args, **kwargs):                        # a window for a second thread to make another
        time.sleep(0.05)
        made.append(object())
        return made[-1]

    monkeypatch.setattr(parallel, "_POOLS", {})
    monkeypatch.setattr(parallel, "ThreadPoolExecutor", slow_pool)
    pools = _at_once(parallel.thread_pool)
    assert len(made) == 1 and all(pool is made[0] for pool in pools)


@pytest.mark.parametrize("cache, build, call", [
    ("_FACTORS", "_build_factors", lambda op: _sparse.sparse_factors(op, (16, 16))),
    ("_CELLS", "_build_cells", lambda op: biht.cell_space(op, (16, 16), None)),
])
def test_an_operator_cache_builds_once_for_threads_asking_at_once(monkeypatch, cache, build, call):
    module = _sparse if cache == "_FACTORS" else biht
    original, built = getattr(module, build), []

    def slow_build(*args):
        time.sleep(0.05)
        built.append(original(*args))
        return built[-1]

    monkeypatch.setattr(module, build, slow_build)
    operator = DescriptorOperator(make_pattern("brief", patch_size=16, m=32))
    results = _at_once(lambda: call(operator))
    assert len(built) == 1 and all(result is built[0] for result in results)
