"""Exports and the records beside them: pixel-exact PNGs, and sidecars that say what ran."""

import numpy as np
import pytest

import re
from pathlib import Path

from lbdviewer.gui.export import read_png, sidecar_path, to_rgb
from lbdviewer.io.images import upscale
from lbdviewer.gui.export_actions import ExportDialog, ExportOptions
from lbdviewer.evaluation.records import read_sidecar


def strict_json(path):
    """Read a sidecar: strict JSON (NaN / Infinity refused) following the run-record schema."""
    return read_sidecar(path)


def wait_live_done(qtbot, window, timeout=10000):
    qtbot.waitUntil(lambda: window.session.live is not None and window.session.live.status == "completed",
                    timeout=timeout)


def export_figure(qtbot, window, key, stem, options=None):
    """Export figure ``key`` as the menu does and wait for the worker to write it; return ``{format: path}``."""
    with qtbot.waitSignal(window.exports.exported, timeout=60000):
        window.exports.export_figure(key, str(stem), options)
    return window.exports.last_written


def reconstruct(qtbot, window, **parameters):
    for name, value in parameters.items():
        setattr(window.parameters, name, value)
    window.rebuild()
    with qtbot.waitSignal(window.whole_finished, timeout=30000) as blocker:
        window.run_whole()
    assert blocker.args == [True]


def test_panel_export_is_pixel_exact(qtbot, window, tmp_path):
    wait_live_done(qtbot, window)
    png, sidecar = window.exports.export_panel("patch", str(tmp_path / "patch.png"), factor=4)
    patch = window.pattern_panel.patch.array
    expected = np.repeat(np.repeat(np.round(patch * 255).astype(np.uint8), 4, 0), 4, 1)
    np.testing.assert_array_equal(read_png(png), np.repeat(expected[..., None], 3, axis=2))
    record = strict_json(sidecar)
    assert sidecar == sidecar_path(png) and record["extra"]["export"]["upscale_factor"] == 4
    assert record["kind"] == "panel:patch" and record["solver"] is None
    assert record["parameters"]["pattern"]["name"] == "brief" and record["versions"]["numpy"]
    assert record["source"]["sha256"] == "0" * 64 and record["source"]["shape"] == [96, 96]
    png, sidecar = window.exports.export_panel("frame-vector", str(tmp_path / "frame.png"), factor=3)
    np.testing.assert_array_equal(read_png(png), upscale(to_rgb(window.pattern_panel.frame.panel_array()), 3))


def svg_text(path):
    """The words of an SVG written with its text kept as text (caption lines joined by spaces)."""
    lines = re.findall(r"<text[^>]*>([^<]*)", Path(path).read_text(encoding="utf-8"))
    return " ".join(lines)


def test_the_maps_figure_names_the_frame_vector_shown(qtbot, window, tmp_path):
    window.pattern_panel.spin.setValue(77)  # pair 77 as the paper numbers pairs: row 76 of L
    assert window.pattern_panel.frame_index() == 76
    np.testing.assert_array_equal(window.pattern_panel.frame.array, window.session.operator.frame_vector(76))
    written = export_figure(qtbot, window, "maps", tmp_path / "maps", ExportOptions(("png", "svg"), "single"))
    assert sorted(written) == ["caption", "json", "png", "svg", "tex"]  # the caption beside the artwork
    record = strict_json(written["json"])
    assert record["kind"] == "figure:maps" and record["extra"]["pair"] == 77
    titles = [panel["title"] for panel in record["extra"]["figure"]["panels"]]
    assert titles[-1] == "BRIEF, $M = 128$, $L_{77}$" and "L₇₇" in window.pattern_panel.frame.title_text()
    assert "BRIEF, $M = 128$, weights" in titles and "FREAK, $M = 128$, weights" in titles  # two descriptors
    caption = Path(written["caption"]).read_text(encoding="utf-8").strip()
    assert caption == record["extra"]["figure"]["caption"] and "maxima" not in svg_text(written["svg"])
    assert record["extra"]["figure"]["formats"] == ["png", "svg"]


def test_the_frame_vector_numbers_its_fields_from_one_as_its_pair(qtbot, window):
    window.pattern_panel.spin.setValue(5)  # pair 5: row 4 of L
    first, second = window.session.pattern.pairs[4]
    assert f"L₅  (fields {first + 1} − {second + 1})" in window.pattern_panel.frame.title_text()
    assert window.pattern_panel.frame.metadata["fields"] == [first + 1, second + 1]


def test_the_patch_figure_draws_the_chosen_pairs(qtbot, window, tmp_path):
    window.pattern_panel.pairs_mode.setCurrentIndex(window.pattern_panel.pairs_mode.findData("selected"))
    window.pattern_panel.spin.setValue(5)
    written = export_figure(qtbot, window, "patch", tmp_path / "patch", ExportOptions(("svg",), 3.0, 150))
    caption = Path(written["caption"]).read_text(encoding="utf-8")
    assert "the selected pair only" in caption and "$L_{5}$ (row 5 of $L$" in caption
    assert strict_json(written["json"])["extra"]["patch_xy"] == list(window.source.patch_position())


@pytest.mark.parametrize("mode", ["joint", "patches"])
def test_a_whole_image_export_records_what_ran(qtbot, window, tmp_path, mode):
    reconstruct(qtbot, window, mode=mode, offset=8)
    window.controls.set_value("iterations", 55)  # an edit after the run must not leak into its record
    window.rebuild()
    written = export_figure(qtbot, window, "whole", str(tmp_path / f"whole-{mode}"), ExportOptions(("png", "svg")))
    record = strict_json(written["json"])
    solver = record["solver"]
    assert record["status"] == "completed" and solver["mode"] == mode and record["extra"]["current"] is False
    assert solver["method"] == ("consistency" if mode == "joint" else "biht")  # not the form's "biht" for joint
    assert record["parameters"]["iterations"] == solver["iterations_requested"] != 55 and record["seconds"] > 0
    assert record["metrics"]["psnr"] > 0 and 0 < record["metrics"]["correlation"] <= 1
    assert record["parameters"]["sites"] == len(window.session.sites) and record["parameters"]["site_rule"] == "grid"
    assert record["display"]["reconstruction"]["rule"] == "fit"  # shown fitted to the original
    solver_words = "sign consistency (joint)" if mode == "joint" else "BIHT (patchwise)"
    assert solver_words in Path(written["caption"]).read_text(encoding="utf-8")  # the caption names what ran
    if mode == "joint":
        assert 1 <= solver["iterations_run"] <= solver["iterations_requested"]
        assert solver["stopped_early"] == (solver["iterations_run"] < solver["iterations_requested"])
        (stage,) = record["parameters"]["solver_settings"]["stages"]  # what the sign consistency ran with
        assert stage["iterations"] == solver["iterations_requested"] and stage["gated_after"] is not None
    else:  # the most iterations any patch ran
        assert 1 <= solver["iterations_run"] <= solver["iterations_requested"] == 40


def test_a_cancelled_run_is_exported_as_cancelled(qtbot, window, tmp_path):
    reconstruct(qtbot, window, offset=8)
    window.parameters.offset = 1
    window.parameters.iterations = 400
    window.parameters.mode = "patches"  # 6561 patches x 400 iterations: cancelled long before the end
    window.rebuild()
    window.run_whole()
    qtbot.waitUntil(lambda: window.session.whole.estimate is not None, timeout=10000)
    with qtbot.waitSignal(window.whole_finished, timeout=5000):
        window.cancel_whole()
    assert window.whole.metrics_label.text() == ""  # no metrics under "cancelled"
    assert window.whole.state_label.full_text().startswith("Cancelled at")
    assert window.whole.result.is_dimmed()
    with pytest.raises(ValueError, match="nothing to show"):
        window.exports.export_figure("whole", str(tmp_path / "whole"))
    _, sidecar = window.exports.export_panel("reconstruction", str(tmp_path / "partial.png"))
    record = strict_json(sidecar)
    assert record["status"] == "cancelled" and record["metrics"] == {} and record["extra"]["fraction_done"] < 1
    assert record["parameters"]["offset"] == 1 and record["solver"]["method"] == "biht"
    assert record["solver"]["mode"] == "patches"


def test_a_real_valued_run_records_no_bit_consistency(qtbot, window, tmp_path):
    window.parameters.solver = "primal-dual"
    window.parameters.binary = False
    window.parameters.iterations = 15
    window.rebuild()
    wait_live_done(qtbot, window, timeout=60000)
    assert not window.live.consistency_plot.isVisible() and window.live.consistency_note.isVisible()
    written = export_figure(qtbot, window, "live", str(tmp_path / "live"), ExportOptions(("svg",), caption="inside"))
    caption = strict_json(written["json"])["extra"]["figure"]["caption"]
    assert "real-valued" in caption and "caption" not in written and "tex" not in written  # no bits, it says
    assert "on a scale symmetric around 0." in svg_text(written["svg"])  # the caption drawn inside the artwork
    record = strict_json(written["json"])
    solver = record["solver"]
    assert (solver["method"], record["parameters"]["binary"], solver["bit_consistency"]) == ("primal-dual", False,
                                                                                             None)
    assert solver["iterations_run"] == 15 and solver["stopped_early"] is False and record["status"] == "completed"
    reconstruct(qtbot, window, mode="joint", offset=8)
    _, sidecar = window.exports.export_panel("reconstruction", str(tmp_path / "real.png"))
    whole = strict_json(sidecar)["solver"]
    assert whole["method"] == "primal-dual" and whole["bit_consistency"] is None


def test_exports_remember_their_own_folder(qtbot, window, tmp_path):
    (tmp_path / "images").mkdir()  # a remembered folder that is gone is not offered
    window.settings.setValue("paths/last_folder", str(tmp_path / "images"))
    out = tmp_path / "figures"
    out.mkdir()
    window.exports.export_panel("image", str(out / "image.png"))
    assert window.exports.last_folder() == str(out)
    assert window.last_folder() == str(tmp_path / "images")  # opening images still starts there


def test_the_export_dialog_offers_formats_widths_and_dpi(qtbot, window, tmp_path):
    dialog = ExportDialog("Export figure", str(tmp_path / "fig.png"), window)
    qtbot.addWidget(dialog)
    assert dialog.stem() == str(tmp_path / "fig")
    assert dialog.options() == ExportOptions(("png", "pdf"), "double", 300)
    dialog.width_combo.setCurrentIndex(dialog.width_combo.findData("inches"))
    dialog.inches.setValue(4.5)
    dialog.dpi.setValue(600)
    dialog.format_boxes["svg"].setChecked(True)
    assert dialog.options() == ExportOptions(("png", "pdf", "svg"), 4.5, 600) and dialog.options().inches() == 4.5
    assert dialog.options().caption == "beside" and dialog.caption_combo.count() == 2
    dialog.caption_combo.setCurrentIndex(dialog.caption_combo.findData("inside"))
    assert dialog.options() == ExportOptions(("png", "pdf", "svg"), 4.5, 600, "inside")
    dialog.set_options(ExportOptions(caption="beside"))
    assert dialog.caption_combo.currentData() == "beside"
    with pytest.raises(ValueError, match="caption must be one of"):
        ExportOptions(caption="above")
    for box in dialog.format_boxes.values():
        box.setChecked(False)
    with pytest.raises(ValueError, match="formats must be"):
        dialog.options()


def test_the_families_figure_is_made_on_a_worker(qtbot, window, tmp_path):
    with qtbot.waitSignal(window.exports.exported, timeout=60000) as blocker:
        window.exports.export_families(str(tmp_path / "families"), ExportOptions(("png",), "single", 150))
    assert blocker.args == [str(tmp_path / "families.png")]
    record = strict_json(tmp_path / "families.json")
    families = ["brief", "freak", "ra-freak", "ex-freak"]
    assert record["extra"]["families"] == families
    solver = record["solver"]  # the four solves, not null
    assert solver["method"] == "biht" and solver["rows"] == 4 and solver["iterations_requested"] == 40
    solves = record["extra"]["solves"]
    assert set(solves) == set(families)
    for family, solve in solves.items():
        assert solve["method"] == "biht" and 1 <= solve["iterations_run"] <= 40 and solve["seconds"] > 0
        assert solve["stopped_early"] == (solve["iterations_run"] < 40) and 0.5 < solve["bit_consistency"] <= 1
        assert (solve["stop_reason"] is None) == (not solve["stopped_early"])
    assert solver["iterations_run"] == max(solve["iterations_run"] for solve in solves.values())
    assert solves["ex-freak"]["m"] == 903 and record["parameters"]["m_by_family"]["brief"] == 128
    assert set(record["display"]) == {"original", "BRIEF, $M = 128$", "FREAK, $M = 128$", "RA-FREAK, $M = 128$",
                                      "EX-FREAK, $M = 903$"}
