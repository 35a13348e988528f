"""Esc during a feature file's inversion: the worker stops within a fraction of a second, set-up or solve."""

import time

import pytest
from PyQt6.QtCore import Qt
from PyQt6.QtTest import QTest

from skimage import data

from lbdviewer.features.extract import extract_features
from lbdviewer.features.files import save_features
from lbdviewer.libraries.registry import get_model

#: Esc to the worker's end: the target is 0.2 s, with room for a loaded machine (a wall-clock bound, so
#: the test is marked ``wallclock``). Before the fix the set-up of this file (~1 s) and up to 20
#: iterations (1/100 of the budget) ran on after Esc.
ESC_WITHIN_S = 0.6
#: The iteration budget: an estimate every 20 iterations.
ITERATIONS = 2000


@pytest.fixture(scope="module")
def many_keypoints(tmp_path_factory):
    """An ORB feature file of ~2500 keypoints of a 512x512 photo."""
    features = extract_features(data.astronaut()[..., 1] / 255.0, "orb", n_keypoints=2500)
    get_model("orb").keypoint_patterns(features.keypoints.take([0]))  # ORB's one-off calibration (cached): here
    assert len(features.keypoints) > 2000
    path = tmp_path_factory.mktemp("features") / "many.npz"
    save_features(path, features)
    return path


def esc_seconds(qtbot, window):
    """Press Esc; return the seconds until no worker thread runs (the panel already says cancelled)."""
    started = time.perf_counter()
    QTest.keyClick(window, Qt.Key.Key_Escape)
    assert window.session.whole.status == "cancelled"
    qtbot.waitUntil(lambda: window.pools.active_threads() == 0, timeout=10000)
    return time.perf_counter() - started


@pytest.mark.wallclock
@pytest.mark.parametrize("phase", ["set-up", "solve"])
def test_esc_stops_a_feature_file_inversion_at_once(qtbot, window, many_keypoints, phase):
    window.parameters.iterations = ITERATIONS
    window.load_path(str(many_keypoints))
    qtbot.waitUntil(lambda: window.session.whole is not None and window.session.whole.status == "running",
                    timeout=10000)
    if phase == "set-up":  # well into the set-up (~1 s: patterns, operator), before the first iteration
        qtbot.wait(300)
        assert not window.session.whole.iterations_run
    else:  # the solver runs and has handed out an estimate
        qtbot.waitUntil(lambda: window.session.whole.estimate is not None, timeout=20000)
    seconds = esc_seconds(qtbot, window)
    assert seconds < ESC_WITHIN_S
    run = window.session.whole
    assert run.status == "cancelled" and run.result is None
    title = window.whole.state_label.full_text()
    if phase == "set-up":
        assert title == "Cancelled before any estimate" and run.estimate is None
    else:
        assert title.startswith("Cancelled at") and "partial estimate" in title
        assert 20 <= run.iterations_run < ITERATIONS and window.whole.result.is_dimmed()
        assert window.whole.result.array is not None  # the partial estimate stays on view
