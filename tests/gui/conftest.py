"""Fixtures for the GUI tests: a small window on a 96x96 image, temporary settings."""

import numpy as np
import pytest

import lbdviewer.gui.qt  # noqa: F401  (PyQt6 + row-major before anything else)
from PyQt6.QtCore import QSettings

from lbdviewer.gui.model import Parameters

SIZE = 96


def textured_image(size=SIZE, phase=0.0):
    """A 96x96 image with edges and texture everywhere (so every patch has bits to invert)."""
    rows, cols = np.mgrid[0:size, 0:size] / size
    image = 0.5 + 0.25 * np.sin(2 * np.pi * (3 * cols + 2 * rows) + phase)
    image[size // 4 : size // 2, size // 4 : 3 * size // 4] += 0.2
    image[(rows - 0.7) ** 2 + (cols - 0.3) ** 2 < 0.02] = 0.05
    return np.clip(image, 0.0, 1.0)


@pytest.fixture
def settings(tmp_path):
    store = QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat)
    yield store
    store.sync()


@pytest.fixture
def small_parameters():
    return Parameters(patch_size=16, m=128, iterations=40, offset=16)


@pytest.fixture
def window(qtbot, settings, small_parameters):
    from lbdviewer.gui.main_window import MainWindow

    win = MainWindow(settings, load_sample=False, parameters=small_parameters)
    qtbot.addWidget(win)
    win.resize(1200, 800)
    win.show()
    win.set_image(textured_image(), "test-image")
    yield win
    win.close()
    assert not win.busy()


@pytest.fixture
def make_image():
    """The :func:`textured_image` factory."""
    return textured_image


@pytest.fixture(scope="session", autouse=True)
def compiled_kernels():
    """Compile the solver kernels (or load them from numba's disk cache) before any test waits.

    On a fresh install the first solve of each kind compiles for seconds (the
    primal-dual kernels ~15 s); the tests wait for solver results with
    timeouts meant for running, not compiling.
    """
    from lbdviewer.warmup import compile_kernels

    compile_kernels()
