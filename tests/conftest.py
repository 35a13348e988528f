import os

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("QT_API", "pyqt6")


@pytest.fixture(scope="session", autouse=True)
def calibration_cache(tmp_path_factory):
    """One calibration cache for the whole session, never the user's own."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("LBDVIEWER_CACHE_DIR", str(tmp_path_factory.mktemp("lbdcache")))
        yield
