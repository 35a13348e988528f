"""Qt set-up shared by every Qt module of the app; import it before any Qt library.

It selects PyQt6 for qtpy (which superqt goes through) and imports PyQt6
before pyqtgraph and superqt, so the whole process uses one binding; images
are shown row-major, as the core stores them.
"""

import os

os.environ.setdefault("QT_API", "pyqt6")

import PyQt6.QtCore  # noqa: E402,F401  (the binding first)
import pyqtgraph as pg  # noqa: E402

pg.setConfigOptions(imageAxisOrder="row-major", antialias=True)
