"""Long work on worker threads: play, pause, single step, stop, and a clean quit.

A job is a generator from the core (a solver's ``steps()``, a whole-image
progress iterator) run by a superqt ``GeneratorWorker`` on Qt's global
thread pool. The generator is wrapped by :func:`gated`, which

* waits at a :class:`RunGate` before computing each item, so a paused job
  computes nothing, a single step computes exactly one item, and a stop ends
  the generator at once (superqt itself only looks at its quit flag between
  yields);
* throttles what crosses to the main thread (at most one item per
  ``interval`` while playing, every item while stepping, always the last one).

:class:`JobRunner` owns at most one job at a time, numbers them, and drops
late items of a job that was replaced or stopped, so slots only ever see the
current job. Widgets are updated only in those main-thread slots.
"""

from __future__ import annotations

import lbdviewer.gui.qt  # noqa: F401  (PyQt6 and row-major images, before any Qt library)

import threading
import time

from PyQt6.QtCore import QObject, QThreadPool, pyqtSignal
from superqt.utils import create_worker


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


class JobRunner(QObject):
    """Runs one gated generator at a time on the thread pool.

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
    """

    progressed = pyqtSignal(object)
    finished = pyqtSignal(bool)
    failed = pyqtSignal(str)
    state_changed = pyqtSignal(str)

    def __init__(self, parent=None, *, interval=0.04):
        super().__init__(parent)
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
        worker.start()
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
        """Ask the current job to end; its late items are dropped."""
        if self._worker is None:
            return
        self._gate.stop()
        self._worker.quit()
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


def stop_all(runners, *, timeout_ms=10000):
    """Stop ``runners`` and wait for the thread pool to drain.

    Returns True when every worker thread ended within ``timeout_ms``.
    """
    for runner in runners:
        runner.stop()
    return QThreadPool.globalInstance().waitForDone(timeout_ms)
