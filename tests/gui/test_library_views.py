"""Library descriptors as first-class families: the menu, each one's real geometry, its keypoints, its solves."""

import numpy as np
import pytest
from PyQt6.QtCore import QPointF, Qt
from PyQt6.QtTest import QTest
from skimage import data

from lbdviewer.evaluation.records import read_sidecar
from lbdviewer.gui.controls import descriptor_menu_groups
from lbdviewer.libraries.registry import DESCRIPTORS, get_model
from lbdviewer.operators.descriptor import DescriptorOperator
from lbdviewer.patterns.families import FAMILIES

#: Library descriptors driven through the app here (BEBLID/TEBLID's 512-bit calibration takes ~30 s on a fresh
#: cache: they are shown through a 256-bit feature file in test_feature_view.py).
SHOWN = ("orb", "brisk", "akaze", "opencv-freak", "skimage-brief")


@pytest.fixture(scope="module")
def photo():
    """A 256x256 crop of the camera photo: textured enough for every detector."""
    return data.camera()[96:352, 128:384] / 255.0


@pytest.fixture(scope="module", autouse=True)
def calibrated(photo):
    """The models' one-off calibrations (cached for the session) before any test waits for a worker."""
    for name in SHOWN:
        model = get_model(name)
        found = model.run_library(photo, model.detect(photo, n_keypoints=100)).keypoints
        if name != "akaze":
            model.keypoint_patterns(found.take([0]))


def show_library(qtbot, window, photo, descriptor, *, timeout=30000):
    """Open ``photo``, choose ``descriptor`` and wait for its selected keypoint's view; return the view."""
    window.session.set_image(photo, "camera-crop", sha256="0" * 64)
    window.controls.set_value("family", descriptor)
    window.rebuild()
    qtbot.waitUntil(lambda: window.session.keypoint_view is not None, timeout=timeout)
    return window.session.keypoint_view


def select(qtbot, window, index, *, timeout=10000):
    window.select_keypoint(index)
    qtbot.waitUntil(lambda: window.session.keypoint_view is not None and window.session.keypoint_view.index == index,
                    timeout=timeout)
    return window.session.keypoint_view


def test_the_descriptor_menu_lists_the_papers_patterns_then_the_eight_library_descriptors(window):
    combo = window.controls.widgets["family"]
    assert descriptor_menu_groups(combo) == [("Paper patterns", list(FAMILIES)),
                                             ("Library descriptors (bit-exact)", list(DESCRIPTORS))]
    assert len(DESCRIPTORS) == 8
    headers = [i for i in range(combo.count()) if combo.itemData(i) is None]
    assert all(not combo.model().item(i).isSelectable() for i in headers)  # a header is not a choice
    combo.setCurrentIndex(combo.findData("brisk"))
    assert window.parameters.family == "brisk" and window.parameters.m == 512
    assert not window.controls.widgets["m"].isEnabled() and "512 bits" in window.controls.widgets["m"].toolTip()
    assert not window.controls.widgets["patch_size"].isEnabled()  # BRISK places its own patch at each keypoint


def test_an_orb_patch_view_draws_its_256_pairs_turned_by_the_keypoints_angle(qtbot, window, photo):
    show_library(qtbot, window, photo, "orb")
    keypoints = window.session.library.features.keypoints
    turned = np.flatnonzero(np.abs(((keypoints.angle + 45) % 90) - 45) > 20)  # far from a multiple of 90 degrees
    view = select(qtbot, window, int(turned[0]))
    x, y = window.pattern_panel.patch.pairs_item.getData()
    drawn = np.stack([x, y], axis=1).reshape(256, 2, 2)
    # ORB's equation (lbdviewer.libraries.orb): offset round(R_theta q) in float32, round half to even
    theta = np.float32(view.keypoint["angle"]) * np.float32(np.pi / 180.0)
    cos, sin = np.cos(theta).astype(np.float32), np.sin(theta).astype(np.float32)
    table = get_model("orb").point_pairs.astype(np.float32)  # (256, 2, 2): [[xq, yq], [xp, yp]]
    ends = np.stack([np.rint(table[..., 0] * cos - table[..., 1] * sin),
                     np.rint(table[..., 0] * sin + table[..., 1] * cos)], axis=-1)
    half = (view.patch_size - 1) / 2
    np.testing.assert_array_equal(drawn, ends + half + 0.5)  # the keypoint sits at the patch centre
    assert not np.array_equal(drawn, table + half + 0.5)  # turned, not the upright table
    assert view.pattern.m == 256 and window.pattern_panel.spin.maximum() == 256  # pairs numbered from 1
    np.testing.assert_allclose(window.pattern_panel.weights.array, DescriptorOperator(view.pattern).weight_map())
    assert window.pattern_panel.patch.title_text().startswith("ORB keypoint")
    frame_x, frame_y, side = view.footprint()  # the red square frames the patch where ORB read it
    assert window.source.roi.size()[0] == pytest.approx(side) and window.source.roi.pos()[0] == pytest.approx(frame_x)


@pytest.mark.parametrize("descriptor", ["brisk", "opencv-freak", "skimage-brief"])
def test_each_library_draws_its_own_fields_and_pairs(qtbot, window, photo, descriptor):
    view = show_library(qtbot, window, photo, descriptor)
    (placed,) = get_model(descriptor).keypoint_patterns(window.session.library.features.keypoints.take([view.index]))
    pattern = placed.pattern
    overlay = window.pattern_panel.patch.overlay
    assert overlay.m == pattern.m and overlay.outlines.shape[0] == pattern.n_fields
    np.testing.assert_allclose(overlay.segments, pattern.centers[pattern.pairs] + 0.5)  # the model's field pairs
    assert overlay.kind == ("boxes" if pattern.kernel == "box" else "circles")
    if descriptor == "brisk":  # 60 points on rings around the keypoint (and one at it)
        radii = np.hypot(*(pattern.centers - pattern.center).T)
        assert pattern.n_fields == 60 and len(np.unique(np.round(radii, 0))) >= 4 and radii.min() < 1


def test_akaze_draws_its_grid_cells_turned_with_the_keypoint(qtbot, window, photo):
    view = show_library(qtbot, window, photo, "akaze")
    overlay = window.pattern_panel.patch.overlay
    assert overlay.kind == "cells" and overlay.outlines.shape == (29, 5, 2) and overlay.m == 486
    sides = np.linalg.norm(np.diff(overlay.outlines[:4, :2], axis=1), axis=-1).ravel()  # the 2x2 grid's cells
    edge = overlay.outlines[0, 1] - overlay.outlines[0, 0]
    angle = np.degrees(np.arctan2(edge[1], edge[0])) % 360
    assert np.allclose(sides, sides[0]) and angle == pytest.approx(view.keypoint["angle"] % 360, abs=0.01)
    np.testing.assert_allclose(window.pattern_panel.frame.array, view.operator.frame_vector(0))
    assert window.pattern_panel.occurrences.array.max() <= 486 and view.pattern is None


def test_a_click_selects_a_keypoint_and_the_live_panel_solves_the_librarys_bits(qtbot, window, photo):
    show_library(qtbot, window, photo, "orb")
    features = window.session.library.features
    kp = features.keypoints
    apart = np.hypot(kp.x[:, None] - kp.x[None], kp.y[:, None] - kp.y[None]) + np.eye(len(kp)) * 1e9
    alone = [k for k in np.argsort(-kp.size) if apart[k].min() > 3 and k != window.session.keypoint]
    index = int(alone[0])  # a large keypoint (easy to hit) with no other near it
    x, y = features.keypoints.x[index], features.keypoints.y[index]
    graphics = window.source.graphics
    scene = window.source.view.mapViewToScene(QPointF(x + 0.5, y + 0.5))
    QTest.mouseClick(graphics.viewport(), Qt.MouseButton.LeftButton, pos=graphics.mapFromScene(scene))
    qtbot.waitUntil(lambda: window.session.live is not None and window.session.live.keypoint is not None
                    and window.session.live.keypoint.index == index and window.session.live.status == "completed",
                    timeout=20000)
    run = window.session.live
    np.testing.assert_array_equal(run.keypoint.bits, features.bits()[index])  # the library's own bits
    described = DescriptorOperator(run.keypoint.pattern).describe(run.update.estimate[None])[0]
    consistency = run.update.bit_consistency[-1]
    assert np.mean(described == features.bits()[index]) == pytest.approx(consistency, abs=0.01)
    assert window.live.original.array is not None and window.live.estimate.array is not None
    np.testing.assert_array_equal(window.live.original.array, run.keypoint.patch)
    window.step_keypoint(1)  # ] shows the next keypoint
    qtbot.waitUntil(lambda: window.session.keypoint == (index + 1) % len(features.keypoints), timeout=5000)


def test_the_whole_image_panel_extracts_inverts_and_shows_coverage(qtbot, window, photo, tmp_path):
    show_library(qtbot, window, photo, "orb")
    window.parameters.iterations = 40
    with qtbot.waitSignal(window.whole_finished, timeout=60000) as blocker:
        window.run_whole()
    assert blocker.args == [True]
    run = window.session.whole
    assert run.kind == "library" and run.result.params["descriptor"] == "orb"
    assert run.result.params["keypoints"] == len(window.session.library.features.keypoints)
    assert 0 < run.coverage < 1 and f"covers {100 * run.coverage:.0f} %" in window.whole.metrics_label.full_text()
    assert run.metrics["correlation"] > 0  # measured against the image the library described
    shown, covered = window.whole.result.array, run.result.covered  # uncovered: the covered median, not ink
    assert np.allclose(shown[~covered], np.median(shown[covered])) and shown[~covered].min() > 0.1
    assert window.whole.result.metadata["display"]["uncovered"] == "neutral"
    window.whole.coverage_box.setChecked(True)  # the option that shows them
    tint = window.whole.coverage_item.image
    assert tint is not None and np.array_equal(tint[..., 3] > 0, ~run.result.covered)
    _, sidecar = window.exports.export_panel("reconstruction", str(tmp_path / "orb.png"))
    record = read_sidecar(sidecar)
    assert record["parameters"]["descriptor"] == "orb" and record["parameters"]["keypoints_requested"] == 500
    assert not {"family", "m", "patch_size", "offset", "seed", "site_rule"} & set(record["parameters"])


def test_a_keypoint_is_marked_at_its_patch_centre_and_a_pyramid_level_is_named(qtbot, window, photo):
    show_library(qtbot, window, photo, "orb")
    octaves = window.session.library.features.keypoints.octave
    for index in (int(np.flatnonzero(octaves == 0)[0]), int(np.flatnonzero(octaves > 0)[0])):
        view = select(qtbot, window, index)
        x, y = window.pattern_panel.patch.centre_item.getData()
        half = (view.patch_size - 1) / 2                                   # the keypoint is the patch's centre pixel
        assert (x.tolist(), y.tolist()) == ([half + 0.5], [half + 0.5])
        tip = window.pattern_panel.patch.title.toolTip()
        assert ("of the level image" in tip) == (octaves[index] > 0), tip


def test_akazes_keypoint_is_marked_at_the_centre_of_its_grid(qtbot, window, photo):
    view = show_library(qtbot, window, photo, "akaze")
    x, y = window.pattern_panel.patch.centre_item.getData()
    cells = view.overlay.outlines[:4, :4]                                # the 2x2 grid's four cells (4 corners each)
    # the grid's centre is the one corner all four cells share
    shared = [c for c in cells[0] if all(np.abs(other - c).sum(axis=1).min() < 1e-9 for other in cells[1:])]
    assert len(shared) == 1                      # the marker: the mean of every cell's corners, within a pixel of it
    assert np.hypot(x[0] - shared[0][0], y[0] - shared[0][1]) < 1.0


def test_a_frame_vector_past_the_last_shows_the_last(qtbot, window, photo):
    view = show_library(qtbot, window, photo, "orb")
    window.presenter.show_frame_vector(10**6)
    np.testing.assert_allclose(window.pattern_panel.frame.array, view.operator.frame_vector(view.m - 1))
    assert window.pattern_panel.frame.metadata["pair"] == view.m         # pairs numbered from 1
