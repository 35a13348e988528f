"""Doctest collection of the package: the GUI's Qt-free modules are collected, its Qt modules are not.

``lbdviewer/gui`` holds Qt widgets (no doctests; the pytest-qt tests in
``tests/gui`` drive them) and Qt-free models whose doctests must run.
"""

from pathlib import Path

GUI = Path(__file__).resolve().parent / "lbdviewer" / "gui"
QT_FREE_GUI_MODULES = {"model.py", "session.py", "sidecars.py", "jobs.py", "presenter.py", "runs.py", "overlay.py",
                       "library_jobs.py"}


def pytest_ignore_collect(collection_path, config):
    """Skip the Qt modules of ``lbdviewer/gui`` (None: let pytest decide for everything else)."""
    if collection_path.parent == GUI and collection_path.suffix == ".py" \
            and collection_path.name not in QT_FREE_GUI_MODULES:
        return True
    return None
