"""The lbdviewer desktop app; Qt lives only in this package.

Importing the package itself loads no Qt (so :mod:`lbdviewer.gui.model` stays
Qt-free); every Qt module here imports :mod:`lbdviewer.gui.qt` first.
"""

__all__ = []
