"""The gate and the throttle the worker threads run behind (driven here without threads)."""

import pytest

from lbdviewer.gui.workers import RunGate, gated


def test_gate_steps_one_unit_at_a_time():
    gate = RunGate(paused=True)
    assert gate.acquire(timeout=0.0) == "wait"
    gate.step()
    gate.step()
    assert [gate.acquire(timeout=0.0) for _ in range(3)] == ["go", "go", "wait"]
    gate.resume()
    assert gate.acquire() == "go"
    gate.stop()
    assert gate.acquire() == "stop"


def test_throttle_keeps_the_first_and_the_last_item():
    gate = RunGate()
    assert list(gated(iter(range(50)), gate, interval=60.0)) == [0, 49]
    assert list(gated(iter(range(5)), RunGate(), interval=0.0)) == [0, 1, 2, 3, 4]


class PausingGate(RunGate):
    """Pauses itself at the third ``acquire``, as a click from the main thread would."""

    def __init__(self):
        super().__init__()
        self.calls = 0

    def acquire(self, timeout=0.1):
        self.calls += 1
        if self.calls == 3:
            self.pause()
        return super().acquire(timeout=0.0)


def test_pausing_flushes_the_held_item_and_stepping_yields_every_item():
    gate = PausingGate()
    out = gated(iter(range(100)), gate, interval=60.0)
    assert next(out) == 0  # the first item goes at once
    assert next(out) == 1  # held by the throttle, flushed when the pause is seen
    gate.step()
    assert next(out) == 2
    gate.step()
    assert next(out) == 3
    gate.stop()
    with pytest.raises(StopIteration):
        next(out)


def test_a_replaced_job_stops_computing_and_is_closed(qtbot):
    import time

    from PyQt6.QtCore import QThreadPool

    from lbdviewer.gui.workers import JobRunner

    pool = QThreadPool()
    pool.setMaxThreadCount(2)  # room for both jobs at once: only the stop can end the first
    runner = JobRunner(pool=pool, interval=0.0)
    state = {"count": 0, "closed": False}

    def forever():
        try:
            while True:
                state["count"] += 1
                time.sleep(0.002)
                yield state["count"]
        finally:  # the generator was closed, not abandoned
            state["closed"] = True

    runner.start(forever())
    qtbot.waitUntil(lambda: state["count"] > 5, timeout=5000)
    with qtbot.waitSignal(runner.finished, timeout=5000):
        runner.start(iter(range(3)))  # the replacement
    qtbot.waitUntil(lambda: state["closed"], timeout=5000)
    count = state["count"]
    qtbot.wait(100)
    assert state["count"] == count  # nothing more computed
    assert pool.waitForDone(5000)
