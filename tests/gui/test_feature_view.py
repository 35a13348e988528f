"""The feature-file view says what it holds, pairs only with its own image, and records only what ran."""

import hashlib

import numpy as np
import pytest
from skimage import data

from lbdviewer import io
from lbdviewer.bits import pack_bits
from lbdviewer.evaluation.records import read_sidecar
from lbdviewer.features.extract import extract_features
from lbdviewer.features.files import save_features
from lbdviewer.features.keypoints import FeatureSet
from lbdviewer.gui.export_actions import ExportOptions
from lbdviewer.libraries.registry import get_model

#: Parameters of the form that play no part in a feature file's inversion.
FORM_ONLY = {"family", "m", "patch_size", "offset", "seed", "sites", "site_rule", "joint_solver", "solver", "lam",
             "binary"}


@pytest.fixture(scope="module")
def photo_file(tmp_path_factory):
    """A 192x192 photo as a PNG file (its bytes are what extract hashes)."""
    path = tmp_path_factory.mktemp("photo") / "photo.png"
    io.save_png(path, data.astronaut()[96:288, 160:352].mean(axis=2) / 255.0)
    return path


def orb_file(folder, image_file, *, record_sha=True, n_keypoints=60):
    """An ORB feature file of ``image_file`` as ``lbdviewer extract`` writes it (with or without the image's SHA-256)."""
    image = io.load_image(image_file)
    digest = hashlib.sha256(image_file.read_bytes()).hexdigest() if record_sha else None
    path = folder / ("orb.npz" if record_sha else "orb-no-sha.npz")
    save_features(path, extract_features(image, "orb", n_keypoints=n_keypoints, image_sha256=digest))
    return path


def open_features(qtbot, window, path, *, iterations=20, timeout=60000):
    window.parameters.iterations = iterations
    with qtbot.waitSignal(window.whole_finished, timeout=timeout) as blocker:
        window.load_path(str(path))
    assert blocker.args == [True]
    qtbot.waitUntil(lambda: window.session.keypoint_view is not None, timeout=10000)


def load(qtbot, window, path, *, timeout=10000):
    with qtbot.waitSignal(window.image_loaded, timeout=timeout):
        window.load_path(str(path))


def test_an_orb_file_shows_orb_and_256_bits_in_the_form_and_the_status_bar(qtbot, window, photo_file, tmp_path):
    path = orb_file(tmp_path, photo_file)
    open_features(qtbot, window, path)
    features = window.session.features
    widgets = window.controls.widgets
    summary = f"ORB, {len(features.keypoints)} keypoints, 256 bits, 192x192"
    assert widgets["family"].currentData() == "orb" and not widgets["family"].isEnabled()
    assert widgets["m"].value() == 256 and not widgets["m"].isEnabled()
    assert widgets["keypoints"].value() == len(features.keypoints) and not widgets["keypoints"].isEnabled()
    assert "feature file" in widgets["m"].toolTip()
    assert summary in window.controls.document_line.text() and summary in window.status_label.text()
    assert window.parameters.family == "brief"  # the form's own choice is kept for image mode
    overlay = window.pattern_panel.patch.overlay
    assert overlay.m == 256 and window.pattern_panel.spin.maximum() == 256  # ORB's pattern, not the form's BRIEF
    assert window.session.pattern is None and len(window.session.sites) == 0
    assert window.source.roi.pos() != (0, 0) or window.session.keypoint_view.origin != (0, 0)
    assert "no pixels" in window.pattern_panel.patch.title_text()
    shown = window.pattern_panel.patch                                   # an empty patch, still saying whose it is
    assert not shown.array.any() and shown.metadata["keypoint"] == window.session.keypoint_view.record()
    assert window.session.live is not None  # the file's bits of one keypoint are solved, with no true patch
    qtbot.waitUntil(lambda: window.session.live.status == "completed", timeout=10000)
    assert window.live.original.array is None and window.live.estimate.array is not None


def test_only_the_image_the_features_came_from_is_paired_with_them(qtbot, window, photo_file, tmp_path):
    path = orb_file(tmp_path, photo_file)
    other = tmp_path / "other.png"  # the same size, another picture
    io.save_png(other, data.camera()[:192, :192] / 255.0)
    open_features(qtbot, window, path)
    load(qtbot, window, other)
    assert window.session.mode == "pattern" and window.session.features is None  # a new document, not a pairing
    assert window.session.whole is None and not window.metrics_runner.running
    assert window.whole.metrics_label.text() == ""  # no metrics against the file's inversion
    open_features(qtbot, window, path)
    with qtbot.waitSignal(window.metrics_finished, timeout=30000):
        load(qtbot, window, photo_file)
    assert window.session.pairing == "original" and window.session.has_pixels
    assert "its original" in window.source.title_text()
    assert window.whole.metrics_label.full_text().startswith("PSNR")
    qtbot.waitUntil(lambda: window.session.keypoint_view is not None and window.session.keypoint_view.patch is not None,
                    timeout=10000)  # the keypoints' true patches come from the original


def test_a_different_sample_of_the_same_size_does_not_compute_metrics_against_the_file(qtbot, window, tmp_path):
    astronaut = io.sample_images()["astronaut"]
    path = tmp_path / "astronaut-orb.npz"
    image = io.load_image(astronaut)
    digest = hashlib.sha256(astronaut.read_bytes()).hexdigest()
    save_features(path, extract_features(image, "orb", n_keypoints=40, image_sha256=digest))
    open_features(qtbot, window, path, iterations=10)
    metrics_started = []
    window.metrics_runner.progressed.connect(metrics_started.append)
    with qtbot.waitSignal(window.image_loaded, timeout=10000):
        window.load_sample("camera")  # 512x512 like astronaut: the case that used to pair silently
    assert window.session.source == "sample:camera" and window.session.mode == "pattern"
    assert window.session.whole is None and "keypoints of" not in window.source.title_text()
    qtbot.wait(200)
    assert metrics_started == [] and not window.metrics_runner.running


def test_a_file_that_records_no_image_asks_and_compared_images_say_so(qtbot, window, photo_file, tmp_path):
    path = orb_file(tmp_path, photo_file, record_sha=False)
    open_features(qtbot, window, path)
    with qtbot.waitSignal(window.image_loaded, timeout=10000) as loaded:
        window.load_path(str(photo_file))
        qtbot.waitUntil(lambda: window.pairing_box is not None and window.pairing_box.isVisible(), timeout=10000)
        assert "does not record" in window.pairing_box.text()
        compare = next(b for b in window.pairing_box.buttons() if b.text().startswith("No: compare"))
        with qtbot.waitSignal(window.metrics_finished, timeout=30000):
            compare.click()
    assert loaded.args == [str(photo_file)]
    assert window.session.pairing == "compared"
    assert "NOT its original" in window.source.title_text()
    assert "not its original" in window.whole.state_label.full_text()
    assert "(compared" not in window.whole.original.title_text() and "Compared with" in window.whole.original.title_text()
    _, sidecar = window.exports.export_panel("reconstruction", str(tmp_path / "compared.png"))
    record = read_sidecar(sidecar)
    assert record["source"]["pairing"] == "compared" and record["extra"]["compared_with"] == "photo.png"
    assert record["source"]["feature_file"]["image_sha256_recorded"] is None
    assert record["metrics"]["psnr"] > 0


def test_compare_with_image_is_explicit_and_close_features_returns_to_the_image(qtbot, window, photo_file, tmp_path):
    path = orb_file(tmp_path, photo_file)
    other = tmp_path / "other.png"
    io.save_png(other, data.camera()[:192, :192] / 255.0)
    open_features(qtbot, window, path)
    assert window.menu_actions.compare.isEnabled() and window.menu_actions.close_features.isEnabled()
    with qtbot.waitSignal(window.metrics_finished, timeout=30000):
        window.compare_with(str(other))
    assert window.session.pairing == "compared" and window.session.whole.compared_with == "other.png"
    assert "vs other.png" in window.whole.metrics_label.full_text()
    window.close_features()
    assert window.session.mode == "pattern" and window.session.source == str(other)
    assert window.controls.widgets["family"].isEnabled() and window.controls.document_line.text() == ""
    assert not window.menu_actions.close_features.isEnabled()


def test_a_feature_file_export_records_only_what_the_inversion_used(qtbot, window, photo_file, tmp_path):
    path = orb_file(tmp_path, photo_file)
    window.controls.set_value("m", 100)  # form values that must not reach the record
    window.controls.set_value("offset", 4)
    open_features(qtbot, window, path, iterations=30)
    result = window.session.whole.result
    with qtbot.waitSignal(window.exports.exported, timeout=60000):
        window.exports.export_figure("whole", str(tmp_path / "whole"), ExportOptions(("png",)))
    written = window.exports.last_written
    record = read_sidecar(written["json"])
    parameters = record["parameters"]
    assert not FORM_ONLY & set(parameters), sorted(FORM_ONLY & set(parameters))
    assert parameters["descriptor"] == "orb" and parameters["iterations"] == 30 == result.iterations
    assert parameters["keypoints"] == len(window.session.features.keypoints)  # the file's, not the form's 500
    assert parameters["descriptor_params"] == window.session.features.model_params()
    assert record["solver"]["method"] == result.method and record["extra"]["what"] == "feature-file inversion"
    assert record["source"]["kind"] == "feature file (no pixels)" and record["source"]["feature_file"]["path"] == str(path)
    window.stop()
    qtbot.waitUntil(lambda: window.session.live_ended_with_update(), timeout=10000)
    _, sidecar = window.exports.export_panel("live-reconstruction", str(tmp_path / "live.png"))
    live = read_sidecar(sidecar)["parameters"]
    assert not (FORM_ONLY - {"binary", "m"}) & set(live) and live["descriptor"] == "orb" and live["m"] == 256  # not 100
    assert live["keypoint"]["index"] == window.session.keypoint and live["iterations"] == 30


def test_a_beblid_file_draws_its_boxes_and_thresholds(qtbot, window, tmp_path):
    image = data.astronaut()[96:288, 160:352].mean(axis=2) / 255.0
    model = get_model("beblid", n_bits=256)  # 256 bits: the calibration other tests already made
    library = model.run_library(image, model.detect(image, n_keypoints=30))
    path = tmp_path / "beblid.npz"
    save_features(path, FeatureSet("beblid", {**model.params(), "library": model.library_version()}, image.shape,
                                   library.keypoints, pack_bits(library.bits, bitorder=model.bitorder)
                                   .reshape(len(library.keypoints), -1), model.n_bits, model.bitorder))
    open_features(qtbot, window, path)
    view = window.session.keypoint_view
    assert view.pattern.thresholded and view.pattern.kernel == "box" and view.m == 256
    overlay = window.pattern_panel.patch.overlay
    assert overlay.kind == "boxes" and overlay.m == 256 and overlay.outlines.shape == (512, 5, 2)
    corners = overlay.outlines[:, 0]  # each box's top-left edge: centre minus its half-width
    np.testing.assert_allclose(corners, view.pattern.centers - view.pattern.radii[:, None])
    assert window.whole.result.array.any() and "BEBLID" in window.controls.document_line.text()
