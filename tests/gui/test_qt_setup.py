"""Importing the app's Qt modules changes no global option of pyqtgraph; starting the app does."""

import subprocess
import sys

PROBE = """
import os
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
import pyqtgraph as pg
before = (pg.getConfigOption("imageAxisOrder"), pg.getConfigOption("antialias"))
import lbdviewer.gui.main_window, lbdviewer.gui.app
imported = (pg.getConfigOption("imageAxisOrder"), pg.getConfigOption("antialias"))
lbdviewer.gui.app.application()
started = (pg.getConfigOption("imageAxisOrder"), pg.getConfigOption("antialias"))
print(before == imported, started)
"""


def test_pyqtgraph_is_configured_when_the_app_starts_not_when_it_is_imported():
    result = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[0] == "True ('row-major', True)"
