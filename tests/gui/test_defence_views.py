"""The Defence panel in the library-descriptor and feature-file views: the window previews what is shown."""

import numpy as np
import pytest
from skimage import data

from lbdviewer.io.images import save_png
from lbdviewer.libraries.registry import get_model


@pytest.fixture(scope="module")
def photo():
    return data.camera()[96:352, 128:384] / 255.0


@pytest.fixture(scope="module", autouse=True)
def calibrated(photo):
    model = get_model("orb")
    model.keypoint_patterns(model.run_library(photo, model.detect(photo, n_keypoints=50)).keypoints.take([0]))


def apply(qtbot, window, kind, strength=None, *, timeout=60000):
    """Choose a defence in the window's panel, press Apply and wait for its preview."""
    panel = window.defence_panel
    panel.preview = None
    panel.set_choice(kind, strength)
    panel.apply_button.click()
    qtbot.waitUntil(lambda: panel.preview is not None, timeout=timeout)
    return panel.preview


def test_library_view_previews_a_defence_of_the_librarys_own_features(qtbot, window, photo):
    window.session.set_image(photo, "camera-crop", sha256="0" * 64)
    window.controls.set_value("family", "orb")
    window.rebuild()
    qtbot.waitUntil(lambda: window.session.library is not None, timeout=30000)
    preview = apply(qtbot, window, "rr", 2.0)
    features = window.session.library.features
    assert preview.label == "rr eps=2" and len(preview.first_points) == len(features.keypoints)
    np.testing.assert_array_equal(preview.first_points, np.c_[features.keypoints.x, features.keypoints.y])
    panel = window.defence_panel
    assert panel.reconstruction.array.shape == photo.shape and panel.pair.array.shape == (256, 520)
    shown, covered = panel.reconstruction.array, preview.covered
    assert covered.any() and not covered.all()
    assert np.all(shown[~covered] == np.median(shown[covered]))  # uncovered drawn neutral, as the inversion holds them
    text = panel.numbers.text()
    assert f"leakage r = {preview.correlation:.2f}" in text and f"matching at 3 px {preview.matching_accuracy:.2f}" in text
    assert preview.correlation > 0.5 and 0.0 < preview.matching_accuracy <= 1.0
    stronger = apply(qtbot, window, "rr", 0.5)
    assert stronger.matching_accuracy < preview.matching_accuracy  # ε = 0.5 flips 38 % of the bits
    window.session.set_image(photo[::-1].copy(), "flipped", sha256="1" * 64)  # another document
    assert panel.reconstruction.is_dimmed() and panel.numbers.text().startswith("Outdated")


def test_feature_file_view_previews_with_its_original_only_when_paired(qtbot, window, photo, tmp_path,
                                                                      open_extracted_features):
    original = save_png(tmp_path / "camera.png", photo)
    assert open_extracted_features(photo, "orb", n_keypoints=120, timeout=60000, image_file=original) == [True]
    alone = apply(qtbot, window, "jitter", 2.0)
    assert alone.correlation is None and alone.second is None
    assert "needs the original" in window.defence_panel.numbers.text()
    assert window.defence_panel.reconstruction.array is not None and window.defence_panel.pair.array is None
    with qtbot.waitSignal(window.image_loaded, timeout=30000):
        window.load_path(str(original))  # its SHA-256 is the one the file records: paired as the original
    assert window.session.pairing == "original"
    paired = apply(qtbot, window, "keep-keypoints", 0.5)
    assert paired.correlation is not None and paired.matching_accuracy is not None
    assert len(paired.first_points) == round(len(window.session.features.keypoints) / 2)


def test_view_menu_shows_the_defence_dock_tabbed_with_the_whole_image(qtbot, window):
    dock = window.docks["defence"]
    assert not dock.isVisible()  # the first window keeps every other control on view
    action = dock.toggleViewAction()
    [view] = [a.menu() for a in window.menuBar().actions() if a.text().replace("&", "") == "View"]
    assert action in view.actions() and action.text() == "Defence"
    action.trigger()
    assert dock.isVisible() and dock in window.tabifiedDockWidgets(window.docks["whole"])


def test_the_papers_patterns_have_nothing_to_defend(qtbot, window):
    assert window.session.mode == "pattern"
    window.defence_panel.set_choice("rr", 1.0)
    window.defence_panel.apply_button.click()
    assert window.defence_panel.numbers.text().startswith("Nothing to defend: defences apply to a library")
    assert not window.defence_runner.running
