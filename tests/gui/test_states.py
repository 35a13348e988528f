"""States that never mislead: no stale live estimate, distinct running/paused/cancelled looks, keys, plots, help."""

import numpy as np
from PyQt6.QtCore import Qt
from PyQt6.QtTest import QTest

from lbdviewer import io
from lbdviewer.gui.run_panels import STATE_LOOKS, bar_colour


def live_done(qtbot, window, timeout=20000):
    qtbot.waitUntil(lambda: window.session.live is not None and window.session.live.status == "completed",
                    timeout=timeout)


def focus(qtbot, window, widget):
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow, timeout=3000)
    widget.setFocus()
    qtbot.waitUntil(widget.hasFocus, timeout=3000)


def test_after_stop_and_an_edit_the_live_panel_shows_no_earlier_estimate(qtbot, window, tmp_path, make_image):
    live_done(qtbot, window)
    old = window.live.estimate.array.copy()
    window.step()  # hold: later runs wait for Space or S
    window.stop()
    window.controls.set_value("m", 64)
    window.rebuild()  # an edit after the stop: a new run, paused before its first iteration
    assert window.session.live.update is None and window.live_runner.paused
    assert window.live.estimate.array is None and "none yet" in window.live.estimate.title_text()
    assert window.live.iteration_label.text() == "iteration 0" and window.live.badge.text() == "Paused"
    qtbot.wait(300)
    assert window.live.estimate.array is None  # still nothing: the earlier estimate never comes back as current
    window.step()
    qtbot.waitUntil(lambda: window.live.estimate.array is not None, timeout=5000)
    assert window.session.live.update.iteration == 1 and not np.array_equal(window.live.estimate.array, old)

    path = tmp_path / "other.png"
    io.save_png(path, make_image(phase=2.0))
    with qtbot.waitSignal(window.image_loaded, timeout=10000):
        window.load_path(str(path))
    # a new image: its patch beside no estimate until the new run's first iteration (held: none comes)
    assert window.live.estimate.array is None
    np.testing.assert_array_equal(window.live.original.array, window.session.live.patch)


def test_running_paused_stopped_and_cancelled_look_different(qtbot, window):
    window.parameters.solver = "primal-dual"
    window.parameters.iterations = 2000
    window.live.delay.setValue(20)
    window.rebuild()
    qtbot.waitUntil(lambda: window.session.live.update is not None, timeout=10000)
    looks = {}
    looks["running"] = (window.live.badge.text(), bar_colour(window.live.progress), window.live.badge.colour())
    window.play_pause()
    looks["paused"] = (window.live.badge.text(), bar_colour(window.live.progress), window.live.badge.colour())
    window.live_runner.stop()
    looks["stopped"] = (window.live.badge.text(), bar_colour(window.live.progress), window.live.badge.colour())
    assert [text for text, _, _ in looks.values()] == ["Running", "Paused", "Stopped"]
    assert len({bar for _, bar, _ in looks.values()}) == 3  # three bar colours
    for state, (_, bar, badge) in looks.items():
        assert bar == badge == STATE_LOOKS[state][1]

    window.parameters.offset = 1
    window.parameters.mode = "patches"
    window.rebuild()
    window.run_whole()
    assert window.whole.badge.text() == "Running" and bar_colour(window.whole.progress) == STATE_LOOKS["running"][1]
    qtbot.waitUntil(lambda: window.session.whole.fraction > 0.11, timeout=20000)
    with qtbot.waitSignal(window.whole_finished, timeout=10000):
        window.cancel_whole()
    assert window.whole.badge.text() == "Cancelled"
    assert bar_colour(window.whole.progress) == STATE_LOOKS["cancelled"][1]
    title = window.whole.state_label.full_text()
    assert title.startswith("Cancelled at") and title.endswith("%: partial estimate")


def test_space_s_and_esc_never_toggle_a_focused_check_box(qtbot, window):
    window.parameters.solver = "primal-dual"
    window.parameters.iterations = 2000
    window.live.delay.setValue(20)
    window.rebuild()
    box = window.pattern_panel.show_fields
    checked = box.isChecked()
    focus(qtbot, window, box)
    qtbot.waitUntil(lambda: window.session.live.update is not None, timeout=10000)
    QTest.keyClick(box, Qt.Key.Key_Space)
    assert window.live_runner.paused and box.isChecked() == checked
    qtbot.wait(300)  # the worker shows the last iteration computed before the pause
    iteration = window.session.live.update.iteration
    QTest.keyClick(box, Qt.Key.Key_S)
    qtbot.waitUntil(lambda: window.session.live.update.iteration == iteration + 1, timeout=5000)
    with qtbot.waitSignal(window.live_finished, timeout=5000):
        QTest.keyClick(box, Qt.Key.Key_Escape)
    assert box.isChecked() == checked and box.hasFocus()


def test_live_plots_have_integer_ticks_and_never_an_empty_minus_five_to_five_axis(qtbot, window):
    plots = (window.live.objective_plot, window.live.consistency_plot)
    window.live.reset()
    for plot in plots:
        low, high = plot.getViewBox().viewRange()[0]
        assert low > 0 and high >= 10  # iterations 1 to 10 before any
    window.parameters.iterations = 7
    window.rebuild()
    live_done(qtbot, window)
    for plot in plots:
        axis = plot.getAxis("bottom")
        low, high = plot.getViewBox().viewRange()[0]
        ticks = [value for level in axis.tickValues(low, high, axis.width()) for value in level[1]]
        assert ticks and all(float(value).is_integer() for value in ticks)


def test_help_says_the_version_the_paper_the_licences_and_every_shortcut(qtbot, window):
    from importlib import metadata

    from PyQt6.QtWidgets import QTextBrowser

    help_menu = next(action.menu() for action in window.menuBar().actions() if action.text() == "&Help")
    entries = {action.text(): action for action in help_menu.actions()}
    entries["&About lbdviewer"].trigger()
    text = window.dialogs["about"].findChild(QTextBrowser).toPlainText()
    assert metadata.version("lbdviewer") in text and "From Bits to Images" in text and "d'Angelo" in text
    assert "BSD-3-Clause" in text and "pyqtgraph" in text and "LGPL" in text
    entries["&Keyboard shortcuts"].trigger()
    keys = window.dialogs["shortcuts"].findChild(QTextBrowser).toPlainText()
    for key in ("Space", "Esc", "Ctrl+R", "Ctrl+O", "] / ["):
        assert key in keys
