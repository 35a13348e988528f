"""Start the app: ``lbdviewer [IMAGE] [--features FILE] [--screenshot OUT.png --size WxH]``."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import lbdviewer.gui.qt  # noqa: F401  (PyQt6 and row-major images, before any Qt library)
from PyQt6.QtCore import QSettings, QTimer
from PyQt6.QtWidgets import QApplication

from lbdviewer.gui.main_window import DEFAULT_SAMPLE, MainWindow

SCREENSHOT_TIMEOUT_S = 600


def parse_size(text):
    """``"1600x1000"`` -> ``(1600, 1000)``; ValueError naming the value otherwise."""
    try:
        width, height = (int(v) for v in str(text).lower().split("x"))
    except ValueError:
        raise ValueError(f"size must look like WIDTHxHEIGHT, got {text!r}") from None
    if width < 200 or height < 200:
        raise ValueError(f"size must be at least 200x200, got {text!r}")
    return width, height


def application():
    """The running QApplication, created if needed."""
    app = QApplication.instance()
    if app is None:
        app = QApplication(sys.argv[:1])
        app.setApplicationName("lbdviewer")
        app.setOrganizationName("lbdviewer")
    return app


def run_app(args):
    """Open the main window; with ``args.screenshot``, render it offscreen and exit.

    Returns the process exit status.
    """
    screenshot = getattr(args, "screenshot", None)
    size = parse_size(getattr(args, "size", None) or "1600x1000")
    if screenshot:
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    elif sys.platform.startswith("linux") and not any(
            os.environ.get(name) for name in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")):
        print("lbdviewer: no display found (DISPLAY is not set); use --screenshot OUT.png, "
              "or set QT_QPA_PLATFORM=offscreen", file=sys.stderr)
        return 1
    app = application()
    if not screenshot:
        return _run_window(app, args, QSettings("lbdviewer", "lbdviewer"), size, None)
    # A screenshot must neither depend on nor change the user's saved layout.
    with tempfile.TemporaryDirectory() as folder:
        settings = QSettings(str(Path(folder) / "settings.ini"), QSettings.Format.IniFormat)
        return _run_window(app, args, settings, size, screenshot)


def _run_window(app, args, settings, size, screenshot):
    window = MainWindow(settings, load_sample=not (args.image or getattr(args, "features", None)))
    if screenshot:
        window.resize(*size)
    status = {"code": 0}
    if args.image and not window.load_path(args.image):
        if screenshot:
            print(f"lbdviewer: {window.message_box.text()}", file=sys.stderr)
            return 2
        window.load_sample(DEFAULT_SAMPLE)  # the message box says why; show something meanwhile
    if getattr(args, "features", None):
        window.load_features_path(args.features)
    window.show()
    if screenshot:
        _schedule_screenshot(app, window, screenshot, status)
    app.exec()
    return status["code"]


def _schedule_screenshot(app, window, path, status):
    """Start the whole-image reconstruction; grab the window once all work is done."""
    if window.features is None:  # a feature file is already being inverted
        window.run_whole()
    waited = {"ticks": 0}

    def check():
        waited["ticks"] += 1
        if window.busy() and waited["ticks"] * 0.2 < SCREENSHOT_TIMEOUT_S:
            return
        timer.stop()
        if window.busy():
            print("lbdviewer: screenshot timed out waiting for the reconstructions", file=sys.stderr)
            status["code"] = 1
        app.processEvents()
        if not window.grab().save(path):
            print(f"lbdviewer: could not write {path}", file=sys.stderr)
            status["code"] = 1
        window.close()

    timer = QTimer(window)
    timer.setInterval(200)
    timer.timeout.connect(check)
    timer.start()
