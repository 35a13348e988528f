"""The first window on a 1280x720 screen: inside it, every control on view and as large as it needs."""

import json
import os
import subprocess
import sys
import textwrap

#: Run in a fresh process whose (offscreen) screen is 1280x720, as a first launch on such a screen.
CHECK = textwrap.dedent("""
    import json, sys, tempfile
    from PyQt6.QtCore import QSettings, QRect
    from PyQt6.QtWidgets import (QAbstractButton, QAbstractSlider, QAbstractSpinBox, QComboBox, QProgressBar,
                                 QStatusBar)
    from lbdviewer.gui.app import application
    from lbdviewer.gui.main_window import MainWindow
    from lbdviewer.gui.run_panels import StateBadge
    from lbdviewer.io.samples import sample_image

    app = application()
    settings = QSettings(tempfile.mkdtemp() + "/settings.ini", QSettings.Format.IniFormat)
    window = MainWindow(settings, load_sample=False)
    window.session.set_image(sample_image("camera"), "sample:camera", sha256="0" * 64)
    window.show()
    for _ in range(20):
        app.processEvents()
    screen = window.screen().availableGeometry()
    problems = []
    if not screen.contains(window.frameGeometry()):
        problems.append(f"window {window.frameGeometry()} outside the screen {screen}")
    kinds = (QAbstractButton, QComboBox, QAbstractSpinBox, QAbstractSlider, QProgressBar, StateBadge, QStatusBar)
    controls = [w for kind in kinds for w in window.findChildren(kind) if w.isVisibleTo(window)]
    for widget in controls:
        name = f"{type(widget).__name__} {getattr(widget, 'text', lambda: '')() or widget.toolTip()[:40]!r}"
        top_left = widget.mapTo(window, widget.rect().topLeft())
        rect = QRect(top_left, widget.size())
        if not widget.isVisible() or widget.visibleRegion().isEmpty():
            problems.append(f"{name} hidden")
        elif not window.rect().contains(rect):
            problems.append(f"{name} at {rect} outside the window {window.rect()}")
        hint = widget.minimumSizeHint()
        if widget.width() < hint.width() - 1 or widget.height() < hint.height() - 1:
            problems.append(f"{name} squeezed to {widget.width()}x{widget.height()} (needs {hint.width()}x{hint.height()})")
    print(json.dumps({"screen": [screen.width(), screen.height()], "controls": len(controls), "problems": problems,
                      "size": [window.width(), window.height()]}))
    window.close()
""")


def test_the_first_window_fits_1280x720_with_every_control_visible(tmp_path):
    config = tmp_path / "screen.json"
    config.write_text(json.dumps({"screens": [{"name": "small", "x": 0, "y": 0, "width": 1280, "height": 720,
                                               "logicalDpi": 96, "logicalBaseDpi": 96, "dpr": 1}]}))
    env = {**os.environ, "QT_QPA_PLATFORM": f"offscreen:configfile={config}", "XDG_CONFIG_HOME": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", CHECK], capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["screen"] == [1280, 720] and report["size"][0] <= 1280 and report["size"][1] <= 720
    assert report["controls"] >= 35  # the form, the transport buttons, the whole-image controls, the docks' buttons
    assert report["problems"] == []
