"""The Defence panel: the controls name a defence; it draws the attacker's reconstruction, the pair's matches, both numbers."""

import numpy as np
import pytest

from lbdviewer.defences.preview import preview_defence
from lbdviewer.defences.transforms import Defence
from lbdviewer.features.extract import extract_features
from lbdviewer.gui.defence_panel import DefencePanel
from lbdviewer.io.samples import sample_image


@pytest.fixture(scope="module")
def previews():
    image = sample_image("camera")[80:208, 180:308]
    features = extract_features(image, "orb", n_keypoints=80)
    return image, preview_defence(features, Defence("rr", 1.0), image=image, iterations=6), \
        preview_defence(features, None, iterations=6)


def test_controls_name_the_defence_and_apply_requests_it(qtbot):
    panel = DefencePanel()
    qtbot.addWidget(panel)
    assert panel.current_kind() == "none" and not panel.strength.isEnabled()
    panel.set_choice("jitter")
    assert panel.strength.isEnabled() and panel.strength.value() == 2.0 and panel.strength_name.text() == "sigma ="
    panel.set_choice("rr", 1.0)
    assert (panel.strength.minimum(), panel.strength.maximum()) == (0.25, 16.0)
    with qtbot.waitSignal(panel.requested) as blocker:
        panel.apply_button.click()
    assert blocker.args == [Defence("rr", 1.0)] and "rebuilding" in panel.numbers.text()
    panel.set_choice("none")
    with qtbot.waitSignal(panel.requested) as blocker:
        panel.apply_button.click()
    assert blocker.args == [None]


def test_a_preview_shows_the_reconstruction_the_matches_and_both_numbers(qtbot, previews):
    image, preview, _ = previews
    panel = DefencePanel()
    qtbot.addWidget(panel)
    panel.show_preview(preview, image)
    assert panel.reconstruction.array.shape == image.shape and not panel.reconstruction.is_dimmed()
    assert panel.pair.array.shape == (128, 2 * 128 + 8)
    green = panel._lines["correct"].getData()[0]
    red = panel._lines["wrong"].getData()[0]
    assert len(green) == 2 * np.count_nonzero(preview.correct) and len(red) == 2 * np.count_nonzero(~preview.correct)
    text = panel.numbers.text()
    assert text.startswith("rr eps=1: ") and f"leakage r = {preview.correlation:.2f}" in text
    assert f"matching at 3 px {preview.matching_accuracy:.2f}" in text


def test_without_the_original_only_the_reconstruction_is_shown(qtbot, previews):
    _, _, alone = previews
    panel = DefencePanel()
    qtbot.addWidget(panel)
    panel.show_preview(alone)
    assert panel.reconstruction.array is not None and panel.pair.array is None
    assert "needs the original" in panel.pair.title_text() and "leakage r = –" in panel.numbers.text()
