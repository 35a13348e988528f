"""Qt set-up shared by every Qt module of the app; import it before any Qt library.

It selects PyQt6 for qtpy (which superqt goes through) and imports PyQt6
before pyqtgraph and superqt, so the whole process uses one binding. Importing
it changes nothing else: pyqtgraph's global options (images shown row-major,
as the core stores them; antialiasing) are set by :func:`configure_pyqtgraph`
when the app starts (:func:`lbdviewer.gui.app.application`), not for every
program that imports a module of the app.
"""

import os

os.environ.setdefault("QT_API", "pyqt6")

import PyQt6.QtCore  # noqa: E402,F401  (the binding first)
import pyqtgraph as pg  # noqa: E402

#: pyqtgraph's options for the app: arrays are (row, column), as lbdviewer stores images.
PYQTGRAPH_OPTIONS = {"imageAxisOrder": "row-major", "antialias": True}


def configure_pyqtgraph():
    """Set :data:`PYQTGRAPH_OPTIONS`, pyqtgraph's process-wide options, for the app (called at its start)."""
    pg.setConfigOptions(**PYQTGRAPH_OPTIONS)
