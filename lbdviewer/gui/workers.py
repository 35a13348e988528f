"""Long work on worker threads: play, pause, single step, stop, and a clean quit.

A job is a generator from the core (a solver's ``steps()``, a whole-image
progress iterator) run by a superqt ``GeneratorWorker`` on one of the
app's own thread pools (:class:`WorkerPools`), never Qt's global one: a
paused live solve holds its thread, a whole-image solve holds another, and
loading, exporting and metrics have threads of their own, so no job can
starve another. The generator is wrapped by :func:`gated`, which

* waits at a :class:`RunGate` before computing each item, so a paused job
  computes nothing, a single step computes exactly one item, and a stop ends
  the generator at once (superqt itself only looks at its quit flag between
  yields);
* throttles what crosses to the main thread (at most one item per
  ``interval`` while playing, every item while stepping, always the last one);
* closes the generator when it ends or is stopped, so a replaced job stops
  computing at its next yield and its ``finally`` clauses run.

:class:`JobRunner` owns at most one job at a time, numbers them, and drops
late items of a job that was replaced or stopped, so slots only ever see the
current job. Widgets are updated only in those main-thread slots.
"""

from __future__ import annotations

import lbdviewer.gui.qt  # noqa: F401  (PyQt6 and row-major images, before any Qt library)

import threading
import time

from dataclasses import dataclass

from PyQt6.QtCore import QObject, QThreadPool, pyqtSignal
from superqt.utils import create_worker

#: Threads of each pool: the live solver (one job at a time; a paused job keeps its thread), the whole
#: image (one job), loading files (one), short tasks (metrics, keypoint views, exports) and a defence's preview
#: (one inversion).
POOL_SIZES = {"live": 1, "whole": 1, "load": 1, "tasks": 2, "defence": 1}


@dataclass(frozen=True)
class WorkerPools:
    """The app's thread pools by name (:data:`POOL_SIZES`), owned by the window.

    Each kind of job has its own threads, so a paused live solve and a
    running whole-image solve never keep a file from loading, a figure from
    being written or metrics from being computed.
    """

    pools: dict

    @classmethod
    def create(cls, parent=None, sizes=None):
        """New pools of ``sizes`` threads (default :data:`POOL_SIZES`), children of ``parent``."""
        pools = {}
        for name, threads in (POOL_SIZES if sizes is None else sizes).items():
            pool = QThreadPool(parent)
            pool.setMaxThreadCount(int(threads))
            pool.setObjectName(f"lbdviewer-{name}")
            pools[name] = pool
        return cls(pools)

    def __getitem__(self, name):
        return self.pools[name]

    def active_threads(self):
        """Threads running a job, all pools together."""
        return sum(pool.activeThreadCount() for pool in self.pools.values())

    def wait(self, timeout_ms=10000):
        """Wait for every pool to drain; True when all did within ``timeout_ms`` (shared)."""
        deadline = time.monotonic() + timeout_ms / 1000.0
        done = True
        for pool in self.pools.values():
            left = max(0, int(1000 * (deadline - time.monotonic())))
            done = pool.waitForDone(left) and done
        return done


class RunGate:
    """Thread-safe play / pause / step / stop switch checked by the worker."""

    def __init__(self, *, paused=False, delay=0.0):
        self._condition = threading.Condition()
        self._paused = paused
        self._steps = 0
        self._stopped = False
        self.delay = delay

    @property
    def paused(self):
        return self._paused

    def pause(self):
        with self._condition:
            self._paused = True
            self._condition.notify_all()

    def resume(self):
        with self._condition:
            self._paused = False
            self._condition.notify_all()

    def step(self):
        with self._condition:
            self._paused = True
            self._steps += 1
            self._condition.notify_all()

    def stop(self):
        with self._condition:
            self._stopped = True
            self._condition.notify_all()

    def acquire(self, timeout=0.1):
        """May the next unit be computed? ``"go"``, ``"stop"``, or ``"wait"``.

        ``"wait"`` comes back after at most ``timeout`` seconds (or sooner, on
        any change), so the caller can flush what it holds and ask again. A
        single step is consumed by the ``"go"`` it produces.
        """
        with self._condition:
            if self._stopped:
                return "stop"
            if not self._paused:
                return "go"
            if self._steps:
                self._steps -= 1
                return "go"
            self._condition.wait(timeout)
            return "wait"

    def rest(self, seconds):
        """Sleep ``seconds`` unless paused, stepped or stopped meanwhile."""
        with self._condition:
            self._condition.wait(seconds)


def gated(items, gate, *, interval=0.04):
    """Run ``items`` behind ``gate``, yielding a throttled subset of them.

    Parameters
    ----------
    items : iterator
        The core's generator; each ``next`` is one unit of work.
    gate : RunGate
        Consulted before each unit.
    interval : float
        Minimum seconds between two items forwarded while playing.

    Yields
    ------
    object
        Items of ``items``: every one while stepping, at most one per
        ``interval`` while playing, and always the last one.
    """
    try:
        yield from _throttled(items, gate, interval)
    finally:  # stopped, ended or replaced: the core's generator stops where it is
        close = getattr(items, "close", None)
        if close is not None:
            close()


def _throttled(items, gate, interval):
    last_sent = 0.0
    pending = None
    has_pending = False
    rested = False
    while True:
        status = gate.acquire()
        if status == "stop":
            return
        if status == "wait":
            if has_pending:  # paused: show the last unit computed before the pause
                last_sent, has_pending = time.monotonic(), False
                yield pending
            continue
        if gate.delay and not gate.paused and not rested:
            gate.rest(gate.delay)
            rested = True
            continue
        rested = False
        try:
            item = next(items)
        except StopIteration:
            break
        now = time.monotonic()
        if gate.paused or now - last_sent >= interval:
            last_sent, has_pending = now, False
            yield item
        else:
            pending, has_pending = item, True
    if has_pending:
        yield pending


#: Workers started and not yet finished: a stopped job's worker must outlive the runner's reference to it.
#: Added to by the GUI thread, removed from by the worker's ``finished`` (its thread, if Qt calls it there).
_ALIVE = set()
_ALIVE_LOCK = threading.Lock()


def _forget_worker(worker):
    with _ALIVE_LOCK:
        _ALIVE.discard(worker)


class JobRunner(QObject):
    """Runs one gated generator at a time on a thread pool of its own kind.

    Signals carry the job number first so a slot can tell which job spoke;
    items of stale jobs are dropped here and never reach the slots.

    Signals
    -------
    progressed(object)
        A (throttled) item of the current job.
    finished(bool)
        The current job ended; True when it ran to completion, False when it
        was stopped or replaced.
    failed(str)
        The current job raised; the message (a ``ValueError``'s or
        ``OSError``'s own, else prefixed with the exception's type).
    state_changed(str)
        ``"running"``, ``"paused"``, ``"stopped"`` (stopped or replaced) or
        ``"finished"`` (ran to its end).

    Parameters
    ----------
    parent : QObject, optional
    pool : QThreadPool, optional
        Where the jobs run (default: Qt's global pool, for code outside the
        window; the window gives each runner one of its :class:`WorkerPools`).
    interval : float
        Throttle of :func:`gated`.
    """

    progressed = pyqtSignal(object)
    finished = pyqtSignal(bool)
    failed = pyqtSignal(str)
    state_changed = pyqtSignal(str)

    def __init__(self, parent=None, *, pool=None, interval=0.04):
        super().__init__(parent)
        self.pool = QThreadPool.globalInstance() if pool is None else pool
        self.interval = interval
        self._job = 0
        self._worker = None
        self._gate = None
        self._completed = False

    @property
    def running(self):
        """True while a job is alive (playing or paused)."""
        return self._worker is not None

    @property
    def paused(self):
        return self._gate is not None and self._gate.paused

    def start(self, items, *, paused=False, delay=0.0):
        """Stop the current job (if any) and run ``items`` as a new one."""
        self.stop()
        self._job += 1
        job = self._job
        gate = RunGate(paused=paused, delay=delay)
        # Errors go to `failed` (below), not re-raised in the event loop as superqt does by default.
        worker = create_worker(gated, items, gate, interval=self.interval, _start_thread=False, _ignore_errors=True)
        worker.yielded.connect(lambda item, job=job: self._on_item(job, item))
        worker.errored.connect(lambda error, job=job: self._on_error(job, error))
        worker.finished.connect(lambda job=job: self._on_finished(job))
        self._worker, self._gate, self._completed = worker, gate, True
        with _ALIVE_LOCK:
            _ALIVE.add(worker)
        worker.finished.connect(lambda worker=worker: _forget_worker(worker))
        self.pool.start(worker)
        self.state_changed.emit("paused" if paused else "running")

    def set_delay(self, seconds):
        """Seconds to wait between two units while playing (slow motion)."""
        if self._gate is not None:
            self._gate.delay = seconds

    def pause(self):
        if self._gate is not None:
            self._gate.pause()
            self.state_changed.emit("paused")

    def resume(self):
        if self._gate is not None:
            self._gate.resume()
            self.state_changed.emit("running")

    def toggle(self):
        if self.paused:
            self.resume()
        else:
            self.pause()

    def step(self):
        """Compute exactly one more unit, then stay paused."""
        if self._gate is not None:
            self._gate.step()
            self.state_changed.emit("paused")

    def stop(self):
        """Ask the current job to end; its late items are dropped.

        The gate ends the generator at its next unit (superqt's own quit
        would leave it suspended, never closed): :func:`gated` then closes
        the core's generator, whose ``finally`` clauses run on the worker.
        """
        if self._worker is None:
            return
        self._gate.stop()
        self._job += 1
        self._worker = self._gate = None
        self.finished.emit(False)
        self.state_changed.emit("stopped")

    def _on_item(self, job, item):
        if job == self._job:
            self.progressed.emit(item)

    def _on_error(self, job, error):
        if job == self._job:
            self._completed = False
            # The core's ValueError / OSError messages are written for users; others name their type.
            expected = isinstance(error, ValueError | OSError)
            self.failed.emit(str(error) if expected else f"{type(error).__name__}: {error}")

    def _on_finished(self, job):
        if job == self._job:
            completed = self._completed
            self._worker = self._gate = None
            self.finished.emit(completed)
            self.state_changed.emit("finished" if completed else "stopped")


def stop_all(runners, pools, *, timeout_ms=10000):
    """Stop ``runners`` and wait for ``pools`` (:class:`WorkerPools`) to drain.

    Returns True when every worker thread ended within ``timeout_ms``.
    """
    for runner in runners:
        runner.stop()
    return pools.wait(timeout_ms)
