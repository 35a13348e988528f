"""Start the app: ``lbdviewer [IMAGE] [--features FILE] [--no-restore] [--screenshot OUT.png [--size WxH]]``.

The window remembers its parameters, layout, folders and last image in the
user's QSettings (organisation and application ``"lbdviewer"``). A
screenshot and ``--no-restore`` run on an empty temporary store instead, so
they start from the defaults and leave the user's settings alone: a
screenshot shows what a first launch shows (the window fitted to the screen
unless ``--size`` is given), once its work is done.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from lbdviewer.gui.qt import configure_pyqtgraph  # PyQt6 first, before any Qt library
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
    """The running QApplication, created if needed, with pyqtgraph set up for the app (row-major images)."""
    configure_pyqtgraph()
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
    size = parse_size(args.size) if getattr(args, "size", None) else None
    if screenshot:
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    elif sys.platform.startswith("linux") and not any(
            os.environ.get(name) for name in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")):
        print("lbdviewer: no display found (DISPLAY is not set); use --screenshot OUT.png, "
              "or set QT_QPA_PLATFORM=offscreen", file=sys.stderr)
        return 1
    app = application()
    if not (screenshot or getattr(args, "no_restore", False)):
        return _run_window(app, args, QSettings("lbdviewer", "lbdviewer"), size, None)
    # A screenshot (and --no-restore) must neither depend on nor change the user's settings.
    with tempfile.TemporaryDirectory() as folder:
        settings = QSettings(str(Path(folder) / "settings.ini"), QSettings.Format.IniFormat)
        return _run_window(app, args, settings, size, screenshot)


def _run_window(app, args, settings, size, screenshot):
    features = getattr(args, "features", None)
    window = MainWindow(settings, load_sample=not (args.image or features))
    if screenshot and size is not None:
        window.resize(*size)
    status = {"code": 0}

    def failed(message):
        if screenshot:
            print(f"lbdviewer: {message}", file=sys.stderr)
            status["code"] = 2
            window.close()
        elif window.session.image is None:
            window.load_sample(DEFAULT_SAMPLE)  # the message box says why; show something meanwhile

    window.load_failed.connect(failed)
    if args.image:
        window.load_path(args.image)
    if features:
        window.load_path(features)
    window.show()
    if screenshot:
        _schedule_screenshot(app, window, screenshot, status)
    app.exec()
    return status["code"]


def _schedule_screenshot(app, window, path, status):
    """Grab the window once the work of its launch is done (what a user sees when it settles)."""
    waited = {"ticks": 0}

    def check():
        waited["ticks"] += 1
        if status["code"]:
            timer.stop()
            return
        timed_out = waited["ticks"] * 0.2 >= SCREENSHOT_TIMEOUT_S
        if (window.busy() or window.session.image is None) and not timed_out:
            return
        timer.stop()
        if window.busy():
            print("lbdviewer: screenshot timed out waiting for the window's work", file=sys.stderr)
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
