import os
import time

import cv2
import numpy as np
import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("QT_API", "pyqt6")


@pytest.fixture(scope="session", autouse=True)
def calibration_cache(tmp_path_factory):
    """One calibration cache for the whole session, never the user's own."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("LBDVIEWER_CACHE_DIR", str(tmp_path_factory.mktemp("lbdcache")))
        yield


@pytest.fixture(scope="session")
def write_wave_image(tmp_path_factory):
    """Write a ``size`` x ``size`` 8-bit PNG of ``128 + 100 sin(row / 5) cos(col / 7)``; return its path."""
    def write(size):
        path = tmp_path_factory.mktemp("img") / "small.png"
        rows, cols = np.mgrid[0:size, 0:size]
        cv2.imwrite(str(path), (128 + 100 * np.sin(rows / 5.0) * np.cos(cols / 7.0)).astype(np.uint8))
        return path

    return write


@pytest.fixture
def wait_until():
    """``wait_until(condition, timeout, what)``: poll ``condition()`` every 0.1 s until true; fail after ``timeout`` s.

    A bounded wait for an event (a process ending, a file appearing), as pytest-qt's ``qtbot.waitUntil``:
    the timeout is generous and the test asserts the event, not the time it took.
    """
    def wait(condition, timeout, what):
        deadline = time.monotonic() + timeout
        while not condition():
            assert time.monotonic() < deadline, f"waited {timeout} s for {what}"
            time.sleep(0.1)

    return wait
