"""Measure how long the GUI's event loop stalls while a whole-image joint reconstruction runs.

A QTimer fires every 10 ms on the main thread; the largest gap between two
ticks (minus the 10 ms period) is the worst stall a user would feel. Target:
under 100 ms. Runs offscreen; prints one line per measurement and a summary.

    python scripts/gui_responsiveness.py [--sample camera] [--offset 8] [--mode joint]
"""

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import numpy as np  # noqa: E402

import lbdviewer.gui.qt  # noqa: E402,F401
from PyQt6.QtCore import QElapsedTimer, QEventLoop, QSettings, QTimer  # noqa: E402

from lbdviewer.gui.app import application  # noqa: E402
from lbdviewer.gui.main_window import MainWindow  # noqa: E402
from lbdviewer.gui.model import Parameters  # noqa: E402

TICK_MS = 10
TARGET_MS = 100


def measure(window, action, done_signal, *, timeout_s=600):
    """Run ``action`` and record event-loop gaps until ``done_signal`` fires."""
    gaps = []
    clock = QElapsedTimer()
    timer = QTimer()
    timer.setInterval(TICK_MS)

    def tick():
        gaps.append(clock.restart())

    timer.timeout.connect(tick)
    loop = QEventLoop()
    done_signal.connect(lambda *args: loop.quit())
    QTimer.singleShot(timeout_s * 1000, loop.quit)
    clock.start()
    timer.start()
    started = time.perf_counter()
    action()
    loop.exec()
    timer.stop()
    return np.array(gaps[1:], dtype=float), time.perf_counter() - started


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sample", default="camera")
    parser.add_argument("--offset", type=int, default=8)
    parser.add_argument("--mode", default="joint", choices=("joint", "patches"))
    parser.add_argument("--iterations", type=int, default=300)
    args = parser.parse_args(argv)

    app = application()
    with tempfile.TemporaryDirectory() as folder:
        settings = QSettings(str(Path(folder) / "settings.ini"), QSettings.Format.IniFormat)
        parameters = Parameters(offset=args.offset, mode=args.mode, iterations=args.iterations)
        window = MainWindow(settings, load_sample=False, parameters=parameters)
        window.resize(1600, 1000)
        window.show()
        window.load_sample(args.sample)
        # Warm up (numba caches, first paint) so the measurement sees steady-state work.
        measure(window, lambda: None, window.live_finished, timeout_s=60)
        gaps, seconds = measure(window, window.run_whole, window.whole_finished)
        window.close()
    stalls = np.maximum(gaps - TICK_MS, 0.0)
    worst = float(stalls.max()) if stalls.size else float("nan")
    print(f"whole-image {args.mode} reconstruction of {args.sample!r} (offset {args.offset}, "
          f"{args.iterations} iterations): {seconds:.1f} s, {gaps.size} timer ticks")
    at = np.cumsum(gaps) / 1000.0
    for index in np.argsort(stalls)[::-1][:5]:
        print(f"  stall of {stalls[index]:.0f} ms ending {at[index]:.2f} s after the start")
    print(f"event-loop stall: max {worst:.1f} ms, 99th percentile {np.percentile(stalls, 99):.1f} ms, "
          f"median {np.median(stalls):.1f} ms (target < {TARGET_MS} ms)")
    return 0 if worst < TARGET_MS else 1


if __name__ == "__main__":
    sys.exit(main())
