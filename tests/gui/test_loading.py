"""Files open on a worker thread: the window keeps turning, errors reach a dialog, close ends the work."""

import struct
import time
import zlib

import cv2
import numpy as np
import pytest
from PyQt6.QtCore import QTimer

from lbdviewer import io
from test_main_window import drop_file

#: Longest stall of the event loop allowed (seconds): a wall-clock bound, generous (a repaint takes 40-70 ms).
STALL_S = 1.0


def png_declaring(path, width, height, *, data=b""):
    """A small PNG whose header declares ``width x height`` gray pixels (its pixel data cut short)."""
    def chunk(kind, payload):
        return (struct.pack(">I", len(payload)) + kind + payload
                + struct.pack(">I", zlib.crc32(kind + payload) & 0xFFFFFFFF))

    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    compressed = zlib.compress(data or b"\0" * (width + 1) * 4)
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", compressed) + chunk(b"IEND", b""))
    return path


class Heartbeat:
    """Ticks of a 10 ms timer on the GUI thread: the longest gap says how long the event loop stalled."""

    def __init__(self):
        self.ticks = []
        self.timer = QTimer()
        self.timer.setInterval(10)
        self.timer.timeout.connect(lambda: self.ticks.append(time.perf_counter()))

    def __enter__(self):
        self.ticks.append(time.perf_counter())
        self.timer.start()
        return self

    def __exit__(self, *exc):
        self.timer.stop()
        self.ticks.append(time.perf_counter())

    def longest_gap(self):
        return float(np.max(np.diff(self.ticks)))


@pytest.fixture(scope="module")
def large_png(tmp_path_factory):
    """A 2500x2500 noise PNG (6 Mpixel): longer to decode, convert and hash than a frame may take."""
    path = tmp_path_factory.mktemp("large") / "large.png"
    noise = np.random.default_rng(0).integers(0, 256, (2500, 2500), dtype=np.uint8)
    ok, encoded = cv2.imencode(".png", noise, [cv2.IMWRITE_PNG_COMPRESSION, 1])
    assert ok
    path.write_bytes(encoded.tobytes())
    return path


@pytest.mark.wallclock
def test_a_large_image_loads_while_the_event_loop_keeps_turning(qtbot, window, large_png):
    started = time.perf_counter()
    with Heartbeat() as beat:
        with qtbot.waitSignal(window.image_loaded, timeout=30000):
            drop_file(window, large_png)
        loaded = time.perf_counter()
        qtbot.wait(300)  # the new image is drawn
    assert window.session.image.shape == (2500, 2500)
    # Loaded on the GUI thread, the window would freeze for the whole load; here it only repaints: each of its
    # eight image views once or twice, 150-250 ms in all offscreen on a busy 2-core machine (pyqtgraph queues
    # the views' repaints as posted events, handled in one batch). The bound that matters is relative to the
    # load's own time; the absolute one is generous.
    gap = beat.longest_gap()
    assert gap < 0.5 * (loaded - started) and gap < STALL_S, f"event loop stalled {gap:.3f} s"


@pytest.mark.wallclock
def test_a_hostile_file_reaches_a_dialog_and_the_window_keeps_turning(qtbot, window, tmp_path):
    before = window.session.image.copy()
    hostile = png_declaring(tmp_path / "hostile.png", 20000, 20000)
    assert hostile.stat().st_size < 2000
    with Heartbeat() as beat, qtbot.waitSignal(window.load_failed, timeout=30000) as blocker:
        drop_file(window, hostile)
    message = blocker.args[0]
    assert "hostile.png" in message and "20000 x 20000" in message and "limit" in message  # refused by its header
    assert message in window.message_box.text()
    assert window.message_box.isVisible()
    np.testing.assert_array_equal(window.session.image, before)
    assert beat.longest_gap() < STALL_S, f"event loop stalled {beat.longest_gap():.3f} s"


def test_closing_while_a_file_loads_ends_the_worker(qtbot, make_window, small_parameters, tmp_path, make_image):
    path = tmp_path / "image.png"
    io.save_png(path, make_image())
    win = make_window(small_parameters)
    win.load_path(str(path))
    assert win.loader.running
    win.close()
    assert not win.busy()  # the fixture also checks that no worker thread is left


def test_a_refused_image_size_names_what_raises_the_limit_in_the_app(qtbot, window, tmp_path, monkeypatch):
    # the app has no --max-pixels: its message names the environment variable it reads, and only that
    big = png_declaring(tmp_path / "big.png", 300, 200)
    monkeypatch.setenv("LBDVIEWER_MAX_PIXELS", "50000")
    with qtbot.waitSignal(window.load_failed, timeout=30000) as blocker:
        drop_file(window, big)
    message = blocker.args[0]
    assert "300 x 200 = 60,000 pixels, more than the limit of 50,000" in message
    assert "LBDVIEWER_MAX_PIXELS=N" in message and "--max-pixels" not in message
    assert message in window.message_box.text() and "--max-pixels" not in window.message_box.text()
