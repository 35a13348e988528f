import os
import socket
import subprocess
import sys
import time

import cv2
import numpy as np
import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("QT_API", "pyqt6")

#: The port a Dask scheduler's dashboard takes by default (where "Port 8787 is already in use" came from).
DASK_DEFAULT_PORT = 8787
#: A process that holds a port until its standard input closes (prints "busy" if it cannot take it).
HOLD_PORT = """
import socket, sys
try:
    server = socket.create_server(("", int(sys.argv[1])))
except OSError:
    print("busy", flush=True)
else:
    print("held", flush=True)
sys.stdin.read()
"""


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


@pytest.fixture(scope="module")
def port_8787_held():
    """Dask's default dashboard port held by another process, as beside a running cluster; the port number."""
    holder = subprocess.Popen([sys.executable, "-c", HOLD_PORT, str(DASK_DEFAULT_PORT)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() in ("held", "busy")  # busy: someone else holds it already
        with pytest.raises(OSError):                                  # either way no one else can bind it now
            with socket.create_server(("", DASK_DEFAULT_PORT)):
                pass
        yield DASK_DEFAULT_PORT
    finally:
        holder.stdin.close()                                          # the holder exits when its stdin closes
        holder.wait(timeout=30)
        holder.stdout.close()


@pytest.fixture(scope="module")
def dask_client(port_8787_held):
    """A Dask cluster of two workers in this process, on no fixed port and without a dashboard.

    In-process workers (worker processes would each load numba's kernels again) talk over ``inproc://``;
    the scheduler's HTTP server, on 8787 by default even with ``dashboard_address=None``, takes a port the
    system chooses (``:0``) on the loopback, so the tests do not depend on what else runs on the machine
    (see ``port_8787_held``).
    """
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address="127.0.0.1:0", scheduler_kwargs={"dashboard": False}) \
            as cluster, distributed.Client(cluster) as client:
        yield client
