"""Keys, fields and actions as a user meets them: window-level Space/S/Esc, refused values, enabled exports."""

import pytest
from PyQt6.QtCore import Qt
from PyQt6.QtTest import QTest


def focus(qtbot, window, widget):
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow, timeout=3000)
    widget.setFocus()
    qtbot.waitUntil(widget.hasFocus, timeout=3000)


def live_iteration(window):
    live = window.session.live
    return 0 if live is None or live.update is None else live.update.iteration


@pytest.mark.parametrize("field", ["iterations", "delay"])
def test_space_s_and_esc_work_while_a_spin_box_has_focus(qtbot, window, field):
    window.parameters.solver = "primal-dual"  # runs its whole budget
    window.parameters.iterations = 2000
    window.live.delay.setValue(30)
    window.rebuild()
    spin = window.controls.widgets["iterations"] if field == "iterations" else window.live.delay
    before = spin.text()
    focus(qtbot, window, spin)
    qtbot.waitUntil(lambda: live_iteration(window) >= 2, timeout=5000)
    QTest.keyClick(spin, Qt.Key.Key_Space)  # pause
    assert window.live_runner.paused
    qtbot.wait(250)  # the worker shows the last iteration computed before the pause
    paused_at = live_iteration(window)
    QTest.keyClick(spin, Qt.Key.Key_S)  # one step
    qtbot.waitUntil(lambda: live_iteration(window) == paused_at + 1, timeout=3000)
    QTest.keyClick(spin, Qt.Key.Key_Space)  # play again
    assert not window.live_runner.paused
    with qtbot.waitSignal(window.live_finished, timeout=3000) as blocker:
        QTest.keyClick(spin, Qt.Key.Key_Escape)  # stop
    assert blocker.args == [False] and not window.live_runner.running
    assert spin.hasFocus() and spin.text() == before  # the keys never edited the field
    assert window.parameters.iterations == 2000


def test_typing_an_m_beyond_the_familys_maximum_says_why(qtbot, window):
    spin = window.controls.widgets["m"]
    focus(qtbot, window, spin)
    spin.selectAll()
    with qtbot.waitSignal(window.controls.refused, timeout=2000) as blocker:
        QTest.keyClicks(spin, "5000")
    message = blocker.args[0]
    assert "m must be between 1 and" in message and "got 5000" in message
    assert message in window.controls.refusal.text() and message in window.statusBar().currentMessage()
    assert window.parameters.m == 128  # nothing changed yet


def test_figure_exports_are_offered_only_when_there_is_something_to_export(qtbot, window):
    whole = window.menu_actions.figures["whole"]
    assert not whole.isEnabled()
    with qtbot.waitSignal(window.whole_finished, timeout=20000):
        window.run_whole()
    assert whole.isEnabled()
    window.parameters.offset = 8
    window.rebuild()
    assert whole.isEnabled()  # a previous result can still be exported (its record says it is not current)
    window.run_whole()
    assert not whole.isEnabled()  # while running there is no result
    with qtbot.waitSignal(window.whole_finished, timeout=5000):
        window.cancel_whole()
    assert not whole.isEnabled()


def test_changing_the_patch_size_then_stepping_within_the_debounce_does_not_raise(qtbot, window):
    for press in (window.step, window.play_pause):
        size = 24 if window.parameters.patch_size == 16 else 16
        window.controls.set_value("patch_size", size)
        assert window.parameter_timer.isActive()  # the debounce is pending
        press()  # before the change took effect
        qtbot.waitUntil(lambda: live_iteration(window) >= 1, timeout=5000)
        assert window.session.pattern.patch_size == size
        assert window.session.live.patch.shape == (size, size)
        window.stop()


def test_the_lambda_arrows_step_by_a_tenth_of_its_decade(qtbot, window):
    window.parameters.solver = "primal-dual"
    window.rebuild()
    spin = window.controls.widgets["lam"]
    assert spin.isEnabled() and spin.value() == pytest.approx(10.0)
    spin.stepBy(1)
    assert window.parameters.lam == pytest.approx(11.0)
    spin.setValue(0.1)
    spin.stepBy(1)
    assert window.parameters.lam == pytest.approx(0.11)
