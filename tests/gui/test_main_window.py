"""Drive the real main window: drop, patch selector, parameters, live solver, export, close."""

import hashlib

import numpy as np
import pytest
from PyQt6.QtCore import QMimeData, QPoint, QPointF, Qt, QUrl
from PyQt6.QtGui import QDragEnterEvent, QDropEvent

from lbdviewer import io
from lbdviewer.evaluation.display import display_stretch


def drop_file(window, path):
    """Drag a file over the window and drop it.

    Qt only routes drag-and-drop events through QApplication while a real
    drag is in progress, so the handlers get the events directly.
    """
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(path))])
    enter = QDragEnterEvent(QPoint(50, 50), Qt.DropAction.CopyAction, mime,
                            Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier)
    window.dragEnterEvent(enter)
    assert enter.isAccepted()
    event = QDropEvent(QPointF(50, 50), Qt.DropAction.CopyAction, mime,
                       Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier)
    window.dropEvent(event)
    return event


def live_update(window):
    """The live run's last update (None before the first iteration)."""
    return None if window.session.live is None else window.session.live.update


def wait_live_done(qtbot, window, timeout=10000):
    qtbot.waitUntil(lambda: live_update(window) is not None and live_update(window).finished
                    and not window.live_runner.running, timeout=timeout)


def load(qtbot, window, path, *, timeout=10000):
    """Open ``path`` as a user would and wait until it is shown."""
    with qtbot.waitSignal(window.image_loaded, timeout=timeout):
        window.load_path(str(path))


def test_drop_loads_image(qtbot, window, tmp_path, make_image):
    new = make_image(phase=1.0)[:80, :90]
    path = tmp_path / "dropped.png"
    io.save_png(path, new)
    with qtbot.waitSignal(window.image_loaded, timeout=5000):
        event = drop_file(window, path)
    assert event.isAccepted() and event.dropAction() == Qt.DropAction.CopyAction  # never a move
    assert window.session.image.shape == (80, 90)
    np.testing.assert_allclose(window.session.image, np.round(new * 255) / 255, atol=1e-9)
    assert window.session.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert window.recent_files()[0] == str(path)
    assert window.last_folder() == str(tmp_path)


def test_bad_file_keeps_previous_image(qtbot, window, tmp_path):
    before = window.session.image.copy()
    bad = tmp_path / "broken.png"
    bad.write_text("not an image")
    with qtbot.waitSignal(window.load_failed, timeout=5000):
        drop_file(window, bad)
    assert window.message_box is not None and window.message_box.isVisible()
    assert "broken.png" in window.message_box.text()
    assert "could not be decoded" in window.message_box.text()
    np.testing.assert_array_equal(window.session.image, before)
    window.message_box.close()


def test_moving_the_patch_selector_updates_the_patch_view(qtbot, window):
    wait_live_done(qtbot, window)
    patch_before = window.pattern_panel.patch.array.copy()
    live_before = live_update(window).estimate
    window.source.roi.setPos((3.4, 70.6))  # what a drag does; the view snaps to pixels
    assert window.source.patch_position() == (3, 71) or window.source.patch_position() == (3, 80)
    x, y = window.source.patch_position()
    np.testing.assert_array_equal(window.pattern_panel.patch.array, window.session.image[y : y + 16, x : x + 16])
    assert not np.array_equal(window.pattern_panel.patch.array, patch_before)
    qtbot.waitUntil(lambda: live_update(window) is not None and live_update(window).finished
                    and not np.array_equal(live_update(window).estimate, live_before), timeout=10000)
    np.testing.assert_array_equal(window.live.original.array, window.session.image[y : y + 16, x : x + 16])


def test_patch_selector_stays_inside_the_image(qtbot, window):
    window.source.set_patch_position(500, -20)
    assert window.source.patch_position() == (96 - 16, 0)


def test_changing_m_and_k_changes_operator_and_reconstruction(qtbot, window):
    wait_live_done(qtbot, window)
    first = live_update(window).estimate
    window.controls.set_value("m", 64)
    qtbot.waitUntil(lambda: window.session.operator.m == 64, timeout=3000)
    assert window.pattern_panel.spin.maximum() == 64  # pairs numbered from 1, as the paper
    wait_live_done(qtbot, window)
    second = live_update(window).estimate
    assert not np.allclose(first, second)
    window.controls.set_value("sparsity", 0.1)
    assert window.parameters.sparsity == pytest.approx(0.1)
    qtbot.waitUntil(lambda: live_update(window) is None or live_update(window).iteration == 1
                    or not np.array_equal(live_update(window).estimate, second), timeout=3000)
    wait_live_done(qtbot, window)
    assert not np.allclose(live_update(window).estimate, second)


def test_m_beyond_the_family_maximum_is_refused_at_the_control(qtbot, window):
    window.controls.set_value("family", "freak")
    spin = window.controls.widgets["m"]
    assert spin.maximum() == 903
    assert "903" in spin.toolTip()
    spin.setValue(5000)
    assert window.parameters.m <= 903
    with pytest.raises(ValueError, match="m must be between 1 and 903"):
        window.parameters.m = 5000
    window.controls.set_value("family", "ex-freak")
    qtbot.waitUntil(lambda: window.session.operator.m == 903, timeout=3000)
    assert not spin.isEnabled()


def test_real_values_need_the_primal_dual_solver(qtbot, window):
    combo = window.controls.widgets["binary"]
    real_item = combo.model().item(combo.findData(False))
    assert not real_item.isEnabled()
    with qtbot.waitSignal(window.controls.refused, timeout=1000) as blocker:
        combo.setCurrentIndex(combo.findData(False))
    assert "primal-dual" in blocker.args[0]
    assert window.parameters.binary is True and combo.currentData() is True
    window.controls.set_value("solver", "primal-dual")
    window.controls.set_value("binary", False)
    assert window.parameters.binary is False
    # The first primal-dual solve of a fresh install compiles its kernels (~15 s, cached on disk after).
    qtbot.waitUntil(lambda: live_update(window) is not None and live_update(window).bit_consistency is None
                    and live_update(window).finished, timeout=60000)


def test_live_solver_play_pause_step_stop(qtbot, window):
    window.parameters.solver = "primal-dual"  # runs its whole budget (BIHT may stop at a fixed point)
    window.parameters.iterations = 400
    window.live.delay.setValue(20)
    window.rebuild()
    qtbot.waitUntil(lambda: live_update(window) is not None and live_update(window).iteration >= 3, timeout=5000)
    window.play_pause()  # pause
    assert window.live_runner.paused
    qtbot.wait(150)
    paused_at = live_update(window).iteration
    qtbot.wait(150)
    assert live_update(window).iteration == paused_at
    assert window.live.iteration_label.text() == f"iteration {paused_at}"
    window.step()
    qtbot.waitUntil(lambda: live_update(window).iteration == paused_at + 1, timeout=3000)
    qtbot.wait(100)
    assert live_update(window).iteration == paused_at + 1
    window.play_pause()  # resume
    qtbot.waitUntil(lambda: live_update(window).iteration > paused_at + 3, timeout=5000)
    with qtbot.waitSignal(window.live_finished, timeout=3000) as blocker:
        window.stop()
    assert blocker.args == [False]
    stopped_at = live_update(window).iteration
    qtbot.wait(150)
    assert live_update(window).iteration == stopped_at and not window.live_runner.running


def test_parameter_change_mid_run_restarts_cleanly(qtbot, window):
    window.live.delay.setValue(20)
    window.parameters.solver = "primal-dual"
    window.parameters.iterations = 300
    window.rebuild()
    qtbot.waitUntil(lambda: live_update(window) is not None and live_update(window).iteration >= 5, timeout=5000)
    window.controls.set_value("seed", 3)
    qtbot.waitUntil(lambda: window.session.pattern.params and dict(window.session.pattern.params).get("rng") == 3, timeout=3000)
    qtbot.waitUntil(lambda: live_update(window) is not None and live_update(window).iteration < 5, timeout=3000)
    window.stop()


def test_close_mid_run_stops_and_waits_for_workers(qtbot, window, capfd):
    window.live.delay.setValue(50)
    window.parameters.solver = "primal-dual"
    window.parameters.iterations = 1000
    window.rebuild()
    qtbot.waitUntil(lambda: live_update(window) is not None, timeout=5000)
    assert window.live_runner.running
    window.close()
    assert not window.busy()
    assert window.pools.active_threads() == 0
    assert "QThread: Destroyed" not in capfd.readouterr().err


def test_layout_and_folder_are_remembered(qtbot, make_window, settings, small_parameters, tmp_path, make_image):
    path = tmp_path / "remember.png"
    io.save_png(path, make_image())
    first = make_window(small_parameters)
    load(qtbot, first, path)
    first.docks["whole"].hide()
    first.close()
    second = make_window()
    assert second.last_folder() == str(tmp_path)
    assert second.recent_files() == [str(path)]
    assert not second.docks["whole"].isVisible()


@pytest.mark.parametrize("mode", ["patches", "joint"])
def test_whole_image_reconstruction_runs_to_completion(qtbot, window, mode):
    window.parameters.offset = 8
    window.parameters.mode = mode
    window.rebuild()
    with qtbot.waitSignal(window.whole_finished, timeout=20000) as blocker:
        window.run_whole()
    assert blocker.args == [True]
    run = window.session.whole
    assert run.status == "completed" and run.result.image.shape == (96, 96) and run.result.mode == mode
    shown = display_stretch(run.result.image, mask=run.result.covered, reference=window.session.image)
    np.testing.assert_array_equal(window.whole.result.array, shown.image)  # the one display rule
    assert window.whole.result.metadata["display"] == shown.record()
    assert window.whole.progress.value() == 100
    assert window.whole.metrics_label.text().startswith("PSNR")
    assert not window.whole.result.is_dimmed()
    window.whole.edges_box.setChecked(True)
    assert window.whole.edges_item.image is not None and window.whole.edges_item.image.shape[:2] == (96, 96)


def test_whole_image_reconstruction_can_be_cancelled(qtbot, window):
    window.parameters.offset = 1
    window.parameters.iterations = 400
    window.parameters.mode = "patches"  # 6561 patches x 400 iterations: far longer than the wait below
    window.rebuild()
    window.run_whole()
    assert window.whole.cancel_button.isEnabled()
    qtbot.wait(200)
    with qtbot.waitSignal(window.whole_finished, timeout=5000) as blocker:
        window.whole.cancel_button.click()
    assert blocker.args == [False]
    run = window.session.whole
    assert run.status == "cancelled" and run.result is None and window.whole.run_button.isEnabled()
    assert "cancelled" in window.statusBar().currentMessage()
    qtbot.waitUntil(lambda: window.pools.active_threads() == 0, timeout=5000)


def test_a_running_estimate_is_redrawn_at_most_every_half_second_and_the_progress_every_update(window):
    from lbdviewer.gui.jobs import WholeUpdate
    from lbdviewer.gui.presenter import ESTIMATE_REDRAW_SECONDS

    session, panel = window.session, window.whole
    now = [100.0]
    window.presenter.clock = lambda: now[0]
    session.start_whole()  # recorded as running; its updates are fed by hand below
    first, second = np.tri(96), np.fliplr(np.tri(96))  # two different estimates
    session.whole_progress(WholeUpdate(0.1, first))
    drawn = panel.result.array.copy()
    now[0] += 0.9 * ESTIMATE_REDRAW_SECONDS
    session.whole_progress(WholeUpdate(0.2, second))
    assert panel.progress.value() == 20 and np.array_equal(panel.result.array, drawn)  # not drawn again yet
    now[0] += 0.2 * ESTIMATE_REDRAW_SECONDS
    session.whole_progress(WholeUpdate(0.3, second))
    assert panel.progress.value() == 30 and not np.array_equal(panel.result.array, drawn)
    drawn = panel.result.array.copy()
    session.whole_progress(WholeUpdate(0.4, first))
    session.whole_ended(False)  # an ended run is drawn at once
    assert panel.state_label.full_text().startswith("Cancelled at 40 %") and not np.array_equal(panel.result.array, drawn)


def test_feature_file_shows_keypoints_and_inverts_them(window, make_image, open_extracted_features):
    image = np.tile(make_image(), (2, 2))
    assert open_extracted_features(image, "orb", n_keypoints=20, timeout=20000) == [True]
    assert window.session.image.shape == image.shape and not window.session.image.any()  # an empty canvas
    assert len(window.source.keypoints_item.getData()[0]) > 0
    assert window.whole.result.array.shape == image.shape and window.whole.result.array.any()


def test_opening_the_original_after_features_shows_them_side_by_side(qtbot, window, tmp_path, make_image,
                                                                     open_extracted_features):
    from lbdviewer.io.images import save_png

    image = np.tile(make_image(), (2, 2))
    original = tmp_path / "original.png"
    save_png(original, image)
    open_extracted_features(image, "orb", n_keypoints=20, timeout=20000, image_file=original)
    inversion = window.session.whole.result
    assert window.whole.result.metadata["display"]["rule"] == "percentile"  # no original to fit to
    assert "PSNR" not in window.whole.metrics_label.text()  # nothing to compare with yet
    with qtbot.waitSignal(window.metrics_finished, timeout=20000):  # measured on a worker
        load(qtbot, window, original)
    assert window.session.whole.result is inversion and window.session.pairing == "original"  # the inversion stays
    assert window.whole.result.metadata["display"]["rule"] == "fit"  # ... now shown fitted to the original
    np.testing.assert_allclose(window.whole.original.array, window.session.image)
    assert window.session.image.any() and len(window.source.keypoints_item.getData()[0]) > 0
    assert "r = " in window.whole.metrics_label.text()
    assert "original.png" in window.source.title_text() and "its original" in window.source.title_text()


def test_bad_feature_file_keeps_previous_image(qtbot, window, tmp_path):
    before = window.session.image.copy()
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"PK not really")
    with qtbot.waitSignal(window.load_failed, timeout=5000):
        drop_file(window, bad)
    assert "bad.npz" in window.message_box.text()
    np.testing.assert_array_equal(window.session.image, before)
