"""The joint solver choice: the form, the whole-image run it starts, its record, progress and cancel."""

import numpy as np
from PyQt6.QtCore import Qt
from PyQt6.QtTest import QTest

from lbdviewer.gui.model import Parameters
from lbdviewer.reconstruction.image import DEFAULT_ITERATIONS
from lbdviewer.evaluation.records import read_sidecar


def flat_noise_image(size=64):
    """Flat grey paper with noise of 0.3 grey levels: bits of pure noise."""
    return 0.5 + np.random.default_rng(5).normal(0.0, 0.3 / 255, (size, size))


def run_whole(qtbot, window, timeout=20000):
    with qtbot.waitSignal(window.whole_finished, timeout=timeout) as blocker:
        window.run_whole()
    assert blocker.args == [True]
    return window.session.whole


def test_the_choice_sets_the_parameter_and_is_enabled_only_for_a_joint_solve_of_bits(qtbot, window):
    controls, combo = window.controls, window.controls.widgets["joint_solver"]
    assert combo.isEnabled() and window.parameters.joint_solver == "consistency"
    tips = [combo.itemData(index, Qt.ItemDataRole.ToolTipRole) for index in range(combo.count())]
    assert [combo.itemData(index) for index in range(combo.count())] == ["consistency", "coherent", "likelihood"]
    assert "flat" in tips[1] and "3000 iterations" in tips[1] and "160 iterations" in tips[2]
    controls.set_value("joint_solver", "coherent")
    assert window.parameters.joint_solver == "coherent"
    assert "coherent, at most 3000 iterations" in controls.note.text()

    controls.set_value("mode", "patches")
    assert not combo.isEnabled() and "solved jointly" in combo.toolTip()
    assert "The joint solver is used only when the whole image is solved jointly" in controls.note.text()
    controls.set_value("mode", "joint")
    assert combo.isEnabled() and combo.currentData() == "coherent"  # the choice was kept while unused
    controls.set_value("solver", "primal-dual")
    controls.set_value("binary", False)
    assert not combo.isEnabled() and "real values are solved jointly by primal-dual" in controls.note.text()
    controls.set_value("binary", True)
    assert combo.isEnabled()


def test_a_coherent_run_says_coherent_and_draws_flat_noise_flat(qtbot, make_window, tmp_path):
    window = make_window(Parameters(family="freak", patch_size=32, m=256, offset=8, iterations=40))
    image = flat_noise_image()
    window.session.set_image(image, "flat-noise", sha256="0" * 64)
    window.rebuild()
    default = run_whole(qtbot, window)
    assert default.method == "consistency"
    window.controls.set_value("joint_solver", "coherent")
    window.rebuild()
    assert window.session.whole.stale  # the shown result came from the other solver
    run = run_whole(qtbot, window)
    assert run.method == run.result.method == "coherent"
    assert run.result.iterations == DEFAULT_ITERATIONS[("joint", "coherent")]  # its own budget, not the form's 40
    assert "joint coherent" in window.whole.run_label.full_text()
    assert default.result.image.std() < 0.25 * image.std()  # the default's gated margins draw the noise flat ...
    assert run.result.image.std() < 0.25 * image.std()  # ... and so does coherent's rule
    _, sidecar = window.exports.export_panel("reconstruction", str(tmp_path / "coherent.png"))
    record = read_sidecar(sidecar)  # strict JSON, the run-record schema
    assert record["status"] == "completed" and record["solver"]["method"] == "coherent"
    assert record["solver"]["iterations_requested"] == DEFAULT_ITERATIONS[("joint", "coherent")]
    assert "joint_solver" not in record["parameters"]  # the method that ran says it


def test_esc_during_a_coherent_run_leaves_a_partial_estimate_marked_cancelled(qtbot, make_window, make_image,
                                                                             tmp_path):
    window = make_window(Parameters())  # 32x32 patches, M = 512, offset 8
    window.session.set_image(make_image(256), "test-image", sha256="0" * 64)
    window.controls.set_value("joint_solver", "coherent")
    window.rebuild()
    window.run_whole()  # ~1300 iterations, ~20x the wait below
    qtbot.waitUntil(lambda: window.session.whole.estimate is not None and (window.session.whole.iterations_run or 0) >= 15,
                    timeout=10000)  # the solver has run a while
    with qtbot.waitSignal(window.whole_finished, timeout=5000) as blocker:
        QTest.keyClick(window, Qt.Key.Key_Escape)
    assert blocker.args == [False]
    run = window.session.whole
    assert run.status == "cancelled" and run.result is None and run.estimate is not None
    assert run.method == "coherent" and 15 <= run.iterations_run < DEFAULT_ITERATIONS[("joint", "coherent")]
    assert window.whole.state_label.full_text().startswith("Cancelled at") and window.whole.result.is_dimmed()
    _, sidecar = window.exports.export_panel("reconstruction", str(tmp_path / "partial.png"))
    record = read_sidecar(sidecar)  # strict JSON, the run-record schema
    assert record["status"] == "cancelled" and record["solver"]["method"] == "coherent"
    assert record["solver"]["iterations_requested"] == DEFAULT_ITERATIONS[("joint", "coherent")]


def test_a_feature_file_keeps_its_own_solver(qtbot, window, make_image, open_extracted_features):
    combo = window.controls.widgets["joint_solver"]
    assert open_extracted_features(np.tile(make_image(), (2, 2)), "orb", n_keypoints=20, timeout=20000) == [True]
    assert not combo.isEnabled() and "feature file is inverted by sign consistency" in window.controls.note.text()
    window.session.set_image(make_image(), "test-image", sha256="0" * 64)  # an image again: the choice applies
    assert combo.isEnabled()
