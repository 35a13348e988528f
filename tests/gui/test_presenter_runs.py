"""How the whole-image panel shows a run: its grey levels, its covered pixels, and how current it is.

Outdated results are faint, unfinished ones half, current ones as they are.
"""

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
    assert window.whole.result.levels == (0.0, 1.0)                # the display rule's grey levels, unchanged
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


def test_a_running_patchwise_run_is_stretched_over_the_patches_solved_so_far(window):
    from lbdviewer.evaluation.display import display_stretch

    window.parameters.mode = "patches"
    window.rebuild()
    session = window.session
    session.start_whole()
    estimate = np.zeros((96, 96))
    estimate[:40] = 0.3 + 0.4 * window.session.image[:40]             # the first rows of patches are solved
    session.whole_progress(WholeUpdate(0.4, estimate))
    shown = window.whole.result.array
    assert np.all(shown[40:] == 0.0) and shown[:40].std() > 0.1       # the unsolved rows black, the others stretched
    expected = display_stretch(estimate, mask=estimate != 0, reference=window.session.image)
    np.testing.assert_allclose(shown, expected.image)
    assert window.whole.result.levels == (0.0, 1.0)


def test_the_pattern_maps_carry_the_pattern_they_show(window):
    """What an export of the weight or occurrence map writes beside it: the pattern's parameters."""
    described = window.session.pattern.describe_params()
    for panel in (window.pattern_panel.weights, window.pattern_panel.occurrences):
        assert panel.metadata["pattern"] == described
    assert window.pattern_panel.weights.levels[1] == float(window.session.operator.weight_map().max())
