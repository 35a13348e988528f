"""The whole-image panel shows how current its result is: outdated faint, unfinished half, current as it is."""

import numpy as np

from lbdviewer.gui.jobs import WholeUpdate

#: Opacities of the reconstruction panel (lbdviewer.gui.presenter.SessionPresenter.show_whole).
OUTDATED, UNFINISHED, CURRENT = 0.35, 0.6, 1.0


def _opacity(window):
    return window.whole.result.image_item.opacity()


def test_an_outdated_result_is_dimmed_until_the_parameters_it_was_made_with_return(qtbot, window):
    window.parameters.offset = 8
    window.parameters.mode = "joint"
    window.rebuild()
    with qtbot.waitSignal(window.whole_finished, timeout=30000) as blocker:
        window.run_whole()
    assert blocker.args == [True]
    assert _opacity(window) == CURRENT and not window.whole.result.is_dimmed()
    shown = window.whole.result.array.copy()
    window.parameters.offset = 16                              # the result no longer matches the parameters
    window.rebuild()
    assert window.session.whole.stale and window.session.whole.status == "completed"
    assert _opacity(window) == OUTDATED and window.whole.result.is_dimmed()
    assert window.whole.result.metadata["stale"] is True
    np.testing.assert_array_equal(window.whole.result.array, shown)   # still shown, only faint
    window.parameters.offset = 8                               # back to what it was made with: current again
    window.rebuild()
    assert not window.session.whole.stale and _opacity(window) == CURRENT


def test_a_running_or_cancelled_run_is_half_dimmed(window):
    session = window.session
    session.start_whole()                                      # recorded as running; updates fed by hand
    session.whole_progress(WholeUpdate(0.25, np.tri(96)))
    assert _opacity(window) == UNFINISHED
    session.whole_ended(False)
    assert session.whole.status == "cancelled" and _opacity(window) == UNFINISHED
