"""The lbdviewer desktop app (Qt lives only in this package).

Importing :mod:`lbdviewer.gui` selects PyQt6 for qtpy (which superqt goes
through) and imports PyQt6 before pyqtgraph and superqt, so that every Qt
binding in the process is the same one. Images are shown row-major, as the
core stores them.
"""

import os

os.environ.setdefault("QT_API", "pyqt6")

import PyQt6.QtCore  # noqa: E402,F401  (import the binding before pyqtgraph/superqt)
import pyqtgraph as pg  # noqa: E402

pg.setConfigOptions(imageAxisOrder="row-major", antialias=True)
