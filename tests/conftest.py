import os

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
