"""The app asks what a feature file leaves open (image, descriptor, size) in a dialog, not through flags."""

import numpy as np
from PyQt6.QtWidgets import QDialog

from lbdviewer.features.files import entry_summaries, save_features
from lbdviewer.features.keypoints import FeatureSet, Keypoints
from lbdviewer.gui.feature_choice import FeatureChoiceDialog, feature_options


def _bare_file(path):
    """Two images, no descriptor named, no image size: everything open."""
    rows = "\n".join(f"      - [ {20.0 + i}, {30.0 + i}, 31., 0., 0., 0, -1 ]" for i in range(3))
    data = ", ".join(["7"] * 96)
    node = f"   keypoints:\n{rows}\n   descriptors: !!opencv-matrix\n      rows: 3\n      cols: 32\n      dt: u\n" \
           f"      data: [ {data} ]\n"
    path.write_text(node.replace("      - [", "      - [").join(["%YAML:1.0\n---\nleft:\n", "right:\n", ""]))
    return path


def test_the_dialog_offers_the_entries_and_the_inferred_descriptor(qtbot, tmp_path):
    path = _bare_file(tmp_path / "two.yml")
    dialog = FeatureChoiceDialog(str(path), entry_summaries(path))
    qtbot.addWidget(dialog)
    assert [dialog.entry_box.itemData(i) for i in range(dialog.entry_box.count())] == ["left", "right"]
    assert "3 keypoints, 32 bytes each" in dialog.entry_box.itemText(0)
    assert dialog.descriptor_box.currentData() == "auto" and "orb" in dialog.descriptor_box.currentText()
    assert (dialog.width_box.value(), dialog.height_box.value()) == (22 + 20 + 1, 32 + 30 + 1)  # keypoint extent
    dialog.entry_box.setCurrentIndex(1)
    dialog.descriptor_box.setCurrentIndex(dialog.descriptor_box.findData("beblid"))
    dialog.width_box.setValue(200)
    assert dialog.options() == {"entry": "right", "descriptor": "beblid", "image_shape": (63, 200)}


def test_a_file_that_says_everything_opens_without_asking(qtbot, tmp_path):
    path = tmp_path / "named.yml"
    save_features(path, FeatureSet("orb", {}, (64, 64), Keypoints([32.0], [32.0]), np.zeros((1, 32), np.uint8),
                                   256, "little"))
    asked = []
    assert feature_options(None, path, dialog_factory=lambda *a: asked.append(a)) == {} and not asked


def test_cancel_means_do_not_open(qtbot, tmp_path):
    path = _bare_file(tmp_path / "two.yml")

    class Cancelled(FeatureChoiceDialog):
        def exec(self):
            return QDialog.DialogCode.Rejected

    assert feature_options(None, path, dialog_factory=Cancelled) is None


def test_the_main_window_asks_before_it_loads(qtbot, tmp_path, monkeypatch):
    from lbdviewer.gui import feature_choice, jobs
    from lbdviewer.gui.main_window import MainWindow

    path = _bare_file(tmp_path / "two.yml")
    started = []
    monkeypatch.setattr(feature_choice, "feature_options", lambda parent, p: {"entry": "left", "descriptor": "orb"})
    monkeypatch.setattr(jobs, "load_file", lambda *a, **k: started.append((a, k)) or iter(()))
    window = MainWindow.__new__(MainWindow)  # only load_path's own steps are exercised
    window.loader = type("Loader", (), {"start": lambda self, job: None})()
    window.parameters = type("P", (), {"patch_size": 32})()
    window.show_status = lambda *a: None
    window.load_path(str(path))
    assert started[0][1]["feature_options"] == {"entry": "left", "descriptor": "orb"}
