"""Fixtures for the GUI tests: a small window on a 96x96 image, temporary settings, leak checks."""

import gc
import numpy as np
import pytest

from lbdviewer.gui.qt import configure_pyqtgraph  # PyQt6 before anything else
from PyQt6.QtCore import QCoreApplication, QEvent, QSettings, QStandardPaths, QThreadPool
from PyQt6.QtWidgets import QApplication

from lbdviewer.gui.model import Parameters

SIZE = 96


def textured_image(size=SIZE, phase=0.0):
    """A 96x96 image with edges and texture everywhere (so every patch has bits to invert)."""
    rows, cols = np.mgrid[0:size, 0:size] / size
    image = 0.5 + 0.25 * np.sin(2 * np.pi * (3 * cols + 2 * rows) + phase)
    image[size // 4 : size // 2, size // 4 : 3 * size // 4] += 0.2
    image[(rows - 0.7) ** 2 + (cols - 0.3) ** 2 < 0.02] = 0.05
    return np.clip(image, 0.0, 1.0)


@pytest.fixture(scope="session", autouse=True)
def pyqtgraph_as_the_app_sets_it():
    """pyqtgraph's options as :func:`lbdviewer.gui.app.application` sets them (pytest-qt makes the QApplication)."""
    configure_pyqtgraph()


@pytest.fixture(scope="session", autouse=True)
def no_user_settings(tmp_path_factory):
    """Any ``QSettings("lbdviewer", "lbdviewer")`` made during the tests lives in a temporary folder."""
    QStandardPaths.setTestModeEnabled(True)
    folder = str(tmp_path_factory.mktemp("qsettings"))
    for kind in (QSettings.Format.NativeFormat, QSettings.Format.IniFormat):
        QSettings.setPath(kind, QSettings.Scope.UserScope, folder)
    yield
    QStandardPaths.setTestModeEnabled(False)


@pytest.fixture
def settings(tmp_path):
    store = QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat)
    yield store
    store.sync()


@pytest.fixture
def small_parameters():
    return Parameters(patch_size=16, m=128, iterations=40, offset=16)


def _delete_now(widget):
    widget.deleteLater()
    QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete.value)
    QCoreApplication.processEvents()
    gc.collect()  # pyqtgraph's parentless menus go with the Python objects that hold them


@pytest.fixture
def make_window(qtbot, settings):
    """Make main windows; at teardown close them and check nothing leaked (as napari's ``make_napari_viewer``).

    Leaks checked: a worker thread still running, a top-level widget that
    outlived its window.
    """
    from lbdviewer.gui.main_window import MainWindow

    before = set(QApplication.topLevelWidgets())
    made = []

    def make(parameters=None, *, store=None, size=(1200, 800), show=True, load_sample=False):
        win = MainWindow(store if store is not None else settings, load_sample=load_sample, parameters=parameters)
        made.append(win)
        if size is not None:  # None: the size the window restored
            win.resize(*size)
        if show:
            win.show()
        return win

    yield make
    for win in made:
        win.close()
        assert not win.busy(), "a job outlived its window"
        assert win.pools.active_threads() == 0, "a worker thread outlived its window"
        _delete_now(win)
    assert QThreadPool.globalInstance().waitForDone(5000)
    assert QThreadPool.globalInstance().activeThreadCount() == 0, "a job ran on Qt's global pool"
    leaked = [w for w in QApplication.topLevelWidgets() if w not in before]
    assert not leaked, f"widgets outlived their window: {leaked}"


@pytest.fixture
def window(make_window, small_parameters):
    win = make_window(small_parameters)
    win.session.set_image(textured_image(), "test-image", sha256="0" * 64)
    return win


@pytest.fixture
def open_extracted_features(qtbot, window, tmp_path):
    """Open in ``window`` a feature file the real library extracts from an image, and wait for its inversion.

    Call as ``open_extracted_features(image, descriptor, n_keypoints=..., timeout=...)``;
    ``iterations`` (default 20) is set on the window first unless ``None``;
    ``image_file`` (the file ``image`` was read from) has its SHA-256
    recorded, as ``lbdviewer extract`` does. Returns the arguments of
    ``whole_finished`` (``[True]`` when the inversion finished).
    """
    import hashlib

    from lbdviewer.features.extract import extract_features
    from lbdviewer.features.files import save_features

    def open_features(image, descriptor, *, n_keypoints, timeout, iterations=20, image_file=None):
        path = tmp_path / f"{descriptor}.npz"
        digest = None if image_file is None else hashlib.sha256(image_file.read_bytes()).hexdigest()
        save_features(path, extract_features(image, descriptor, n_keypoints=n_keypoints, image_sha256=digest))
        if iterations is not None:
            window.parameters.iterations = iterations
        with qtbot.waitSignal(window.whole_finished, timeout=timeout) as blocker:
            window.load_path(str(path))  # opened on a worker thread
        return blocker.args

    return open_features


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
    from lbdviewer._runtime.warmup import compile_kernels

    compile_kernels()
