"""Drive the real main window: drop, patch selector, parameters, live solver, export, close."""

import json
from pathlib import Path

import numpy as np
import pytest
from PyQt6.QtCore import QMimeData, QPoint, QPointF, Qt, QThreadPool, QUrl
from PyQt6.QtGui import QDragEnterEvent, QDropEvent

from lbdviewer import io
from lbdviewer.gui.export import read_png, sidecar_path, to_rgb, upscale


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


def wait_live_done(qtbot, window, timeout=10000):
    qtbot.waitUntil(lambda: window.live_update is not None and window.live_update.finished
                    and not window.live_runner.running, timeout=timeout)


def test_drop_loads_image(qtbot, window, tmp_path, make_image):
    new = make_image(phase=1.0)[:80, :90]
    path = tmp_path / "dropped.png"
    io.save_png(path, new)
    with qtbot.waitSignal(window.image_loaded, timeout=5000):
        event = drop_file(window, path)
    assert event.isAccepted()
    assert window.image.shape == (80, 90)
    np.testing.assert_allclose(window.image, np.round(new * 255) / 255, atol=1e-9)
    assert window.recent_files()[0] == str(path)
    assert window.last_folder() == str(tmp_path)


def test_bad_file_keeps_previous_image(qtbot, window, tmp_path):
    before = window.image.copy()
    bad = tmp_path / "broken.png"
    bad.write_text("not an image")
    drop_file(window, bad)
    assert window.message_box is not None and window.message_box.isVisible()
    assert "broken.png" in window.message_box.text()
    assert "could not be decoded" in window.message_box.text()
    np.testing.assert_array_equal(window.image, before)
    window.message_box.close()


def test_moving_the_patch_selector_updates_the_patch_view(qtbot, window):
    wait_live_done(qtbot, window)
    patch_before = window.pattern_panel.patch.array.copy()
    live_before = window.live_update.estimate
    window.source.roi.setPos((3.4, 70.6))  # what a drag does; the view snaps to pixels
    assert window.source.patch_position() == (3, 71) or window.source.patch_position() == (3, 80)
    x, y = window.source.patch_position()
    np.testing.assert_array_equal(window.pattern_panel.patch.array, window.image[y : y + 16, x : x + 16])
    assert not np.array_equal(window.pattern_panel.patch.array, patch_before)
    qtbot.waitUntil(lambda: window.live_update is not None and window.live_update.finished
                    and not np.array_equal(window.live_update.estimate, live_before), timeout=10000)


def test_patch_selector_stays_inside_the_image(qtbot, window):
    window.source.set_patch_position(500, -20)
    assert window.source.patch_position() == (96 - 16, 0)


def test_changing_m_and_k_changes_operator_and_reconstruction(qtbot, window):
    wait_live_done(qtbot, window)
    first = window.live_update.estimate
    window.controls.set_value("m", 64)
    qtbot.waitUntil(lambda: window.operator.m == 64, timeout=3000)
    assert window.pattern_panel.spin.maximum() == 63
    wait_live_done(qtbot, window)
    second = window.live_update.estimate
    assert not np.allclose(first, second)
    window.controls.set_value("sparsity", 0.1)
    assert window.parameters.sparsity == pytest.approx(0.1)
    qtbot.waitUntil(lambda: window.live_update is None or window.live_update.iteration == 1
                    or not np.array_equal(window.live_update.estimate, second), timeout=3000)
    wait_live_done(qtbot, window)
    assert not np.allclose(window.live_update.estimate, second)


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
    qtbot.waitUntil(lambda: window.operator.m == 903, timeout=3000)
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
    qtbot.waitUntil(lambda: window.live_update is not None and window.live_update.bit_consistency is None
                    and window.live_update.finished, timeout=60000)


def test_live_solver_play_pause_step_stop(qtbot, window):
    window.parameters.solver = "primal-dual"  # runs its whole budget (BIHT may stop at a fixed point)
    window.parameters.iterations = 400
    window.live.delay.setValue(20)
    window.rebuild()
    qtbot.waitUntil(lambda: window.live_update is not None and window.live_update.iteration >= 3, timeout=5000)
    window.play_pause()  # pause
    assert window.live_runner.paused
    qtbot.wait(150)
    paused_at = window.live_update.iteration
    qtbot.wait(150)
    assert window.live_update.iteration == paused_at
    assert window.live.iteration_label.text() == f"iteration {paused_at}"
    window.step()
    qtbot.waitUntil(lambda: window.live_update.iteration == paused_at + 1, timeout=3000)
    qtbot.wait(100)
    assert window.live_update.iteration == paused_at + 1
    window.play_pause()  # resume
    qtbot.waitUntil(lambda: window.live_update.iteration > paused_at + 3, timeout=5000)
    with qtbot.waitSignal(window.live_finished, timeout=3000) as blocker:
        window.stop()
    assert blocker.args == [False]
    stopped_at = window.live_update.iteration
    qtbot.wait(150)
    assert window.live_update.iteration == stopped_at and not window.live_runner.running


def test_parameter_change_mid_run_restarts_cleanly(qtbot, window):
    window.live.delay.setValue(20)
    window.parameters.solver = "primal-dual"
    window.parameters.iterations = 300
    window.rebuild()
    qtbot.waitUntil(lambda: window.live_update is not None and window.live_update.iteration >= 5, timeout=5000)
    window.controls.set_value("seed", 3)
    qtbot.waitUntil(lambda: window.pattern.params and dict(window.pattern.params).get("rng") == 3, timeout=3000)
    qtbot.waitUntil(lambda: window.live_update is not None and window.live_update.iteration < 5, timeout=3000)
    window.stop()


def test_export_panel_is_pixel_exact(qtbot, window, tmp_path):
    wait_live_done(qtbot, window)
    png, sidecar = window.export_panel("patch", str(tmp_path / "patch.png"), factor=4)
    pixels = read_png(png)
    patch = window.pattern_panel.patch.array
    assert pixels.shape == (64, 64, 3)
    expected = np.repeat(np.repeat(np.round(patch * 255).astype(np.uint8), 4, 0), 4, 1)
    for channel in range(3):
        np.testing.assert_array_equal(pixels[..., channel], expected)
    meta = json.loads(Path(sidecar).read_text())
    assert meta["parameters"]["patch_size"] == 16 and meta["upscale_factor"] == 4
    assert meta["versions"]["numpy"] and meta["pattern"]["name"] == "brief"
    assert sidecar == sidecar_path(png)

    png, _ = window.export_panel("frame-vector", str(tmp_path / "frame.png"), factor=3)
    frame = window.pattern_panel.frame.panel_array()
    np.testing.assert_array_equal(read_png(png), upscale(to_rgb(frame), 3))
    assert window.settings.value("paths/last_folder") == str(tmp_path)


def test_composed_figure(qtbot, window, tmp_path):
    wait_live_done(qtbot, window)
    png, _ = window.export_figure("maps", str(tmp_path / "maps.png"), factor=2)
    assert read_png(png).shape == (32, 3 * 32 + 2 * 4, 3)
    with qtbot.waitSignal(window.exported, timeout=20000):
        window.export_families(str(tmp_path / "families.png"), factor=2)
    assert read_png(str(tmp_path / "families.png")).shape == (32, 5 * 32 + 4 * 4, 3)


def test_close_mid_run_stops_and_waits_for_workers(qtbot, window, capfd):
    window.live.delay.setValue(50)
    window.parameters.solver = "primal-dual"
    window.parameters.iterations = 1000
    window.rebuild()
    qtbot.waitUntil(lambda: window.live_update is not None, timeout=5000)
    assert window.live_runner.running
    window.close()
    assert not window.busy()
    assert QThreadPool.globalInstance().activeThreadCount() == 0
    assert "QThread: Destroyed" not in capfd.readouterr().err


def test_layout_and_folder_are_remembered(qtbot, settings, small_parameters, tmp_path, make_image):
    from lbdviewer.gui.main_window import MainWindow

    path = tmp_path / "remember.png"
    io.save_png(path, make_image())
    first = MainWindow(settings, load_sample=False, parameters=small_parameters)
    qtbot.addWidget(first)
    first.show()
    assert first.load_path(str(path))
    first.docks["whole"].hide()
    first.close()
    second = MainWindow(settings, load_sample=False)
    qtbot.addWidget(second)
    second.show()
    assert second.last_folder() == str(tmp_path)
    assert second.recent_files() == [str(path)]
    assert not second.docks["whole"].isVisible()
    second.close()


@pytest.mark.parametrize("mode", ["patches", "joint"])
def test_whole_image_reconstruction_runs_to_completion(qtbot, window, mode):
    window.parameters.offset = 8
    window.parameters.mode = mode
    window.rebuild()
    with qtbot.waitSignal(window.whole_finished, timeout=20000) as blocker:
        window.run_whole()
    assert blocker.args == [True]
    result = window.whole_result
    assert result.image.shape == (96, 96) and result.mode == mode
    np.testing.assert_array_equal(window.whole.result.array, result.image)
    assert window.whole.progress.value() == 100
    assert "PSNR" in window.whole.metrics_label.text()
    window.whole.edges_box.setChecked(True)
    assert window.whole.edges_item.image is not None and window.whole.edges_item.image.shape[:2] == (96, 96)
    png, _ = window.export_figure("whole", str(window.settings.fileName()) + ".png", factor=1)
    assert read_png(png).shape == (96, 2 * 96 + 4, 3)


def test_whole_image_reconstruction_can_be_cancelled(qtbot, window):
    window.parameters.offset = 1
    window.parameters.iterations = 400
    window.rebuild()
    window.run_whole()
    assert window.whole.cancel_button.isEnabled()
    qtbot.wait(200)
    with qtbot.waitSignal(window.whole_finished, timeout=5000) as blocker:
        window.whole.cancel_button.click()
    assert blocker.args == [False]
    assert window.whole_result is None and window.whole.run_button.isEnabled()
    assert "cancelled" in window.statusBar().currentMessage()
    qtbot.waitUntil(lambda: QThreadPool.globalInstance().activeThreadCount() == 0, timeout=5000)


def test_feature_file_shows_keypoints_and_inverts_them(qtbot, window, tmp_path, make_image):
    from lbdviewer.commands.extract import extract_features
    from lbdviewer.features import save_features

    image = np.tile(make_image(), (2, 2))
    path = tmp_path / "orb.npz"
    save_features(path, extract_features(image, "orb", n_keypoints=20))
    window.parameters.iterations = 20
    with qtbot.waitSignal(window.whole_finished, timeout=20000) as blocker:
        assert window.load_features_path(str(path))
    assert blocker.args == [True]
    assert window.image.shape == image.shape and not window.image.any()  # an empty canvas
    assert len(window.source.keypoints_item.data) > 0
    assert window.whole.result.array.shape == image.shape and window.whole.result.array.any()


def test_opening_the_original_after_features_shows_them_side_by_side(qtbot, window, tmp_path, make_image):
    from lbdviewer.commands.extract import extract_features
    from lbdviewer.features import save_features
    from lbdviewer.io import save_png

    image = np.tile(make_image(), (2, 2))
    features, original = tmp_path / "orb.npz", tmp_path / "original.png"
    save_features(features, extract_features(image, "orb", n_keypoints=20))
    save_png(original, image)
    window.parameters.iterations = 20
    with qtbot.waitSignal(window.whole_finished, timeout=20000):
        assert window.load_features_path(str(features))
    inverted = window.whole.result.array.copy()
    assert window.whole.metrics_label.text() == ""  # nothing to compare with yet
    assert window.load_path(str(original))
    np.testing.assert_array_equal(window.whole.result.array, inverted)  # the inversion stays
    np.testing.assert_allclose(window.whole.original.array, window.image)
    assert window.image.any() and len(window.source.keypoints_item.data) > 0
    assert "r = " in window.whole.metrics_label.text()
    assert "original.png" in window.whole.original.title.text


def test_bad_feature_file_keeps_previous_image(qtbot, window, tmp_path):
    before = window.image.copy()
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"PK not really")
    drop_file(window, bad)
    assert "bad.npz" in window.message_box.text()
    np.testing.assert_array_equal(window.image, before)
