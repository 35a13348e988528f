"""The versions of Python and of the libraries a result depends on, for run records."""

from __future__ import annotations

import platform
from importlib import metadata

__all__ = ["VERSIONED", "library_versions"]

#: Distributions whose versions go into figure and export metadata.
VERSIONED = ("lbdviewer", "numpy", "scipy", "numba", "PyWavelets", "scikit-image",
             "opencv-contrib-python-headless", "PyQt6", "pyqtgraph", "superqt")


def library_versions():
    """Versions of Python and of the installed libraries a result depends on (for JSON metadata).

    Examples
    --------
    >>> versions = library_versions()
    >>> "numpy" in versions and "python" in versions
    True
    """
    found = {"python": platform.python_version()}
    for name in VERSIONED:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = None
    return found
