"""The app's figure kinds: pure functions of arrays and metadata (no Qt)."""

import re

import numpy as np
import pytest

from lbdviewer.evaluation.display import display_stretch
from lbdviewer.figures import (families_figure, live_figure, maps_figure, patch_pattern_figure, render_figure,
                               save_figure, whole_image_figure)
from lbdviewer.figures.kinds import EDGE_COLOR
from lbdviewer.figures.engine import Circles, Segments
from lbdviewer.operators.descriptor import DescriptorOperator
from lbdviewer.patterns.families import make_pattern
from lbdviewer.evaluation.records import read_sidecar, run_record


def _segments(panel):
    return [overlay for overlay in panel.overlays if isinstance(overlay, Segments)]


def test_patch_pattern_draws_all_selected_or_no_pairs_and_the_selected_frame_vector():
    pattern = make_pattern("brief", patch_size=32, m=512)
    patch = np.random.default_rng(0).random((32, 32))
    spec = patch_pattern_figure(patch, pattern, pairs="all", selected=511)
    first, vector = spec.rows[0]
    assert np.array_equal(first.image, patch)                                  # the patch as stored
    faint, prominent = _segments(first)
    assert len(faint.lines) == 512 and faint.alpha < 0.2                       # 512 pairs do not hide the patch
    np.testing.assert_array_equal(prominent.lines[0], pattern.centers[pattern.pairs[511]])
    assert prominent.width > faint.width and prominent.alpha == 1.0
    fields = [o for o in first.overlays if isinstance(o, Circles)][0]
    np.testing.assert_array_equal(fields.radii, pattern.sigmas)
    # the frame vector shown is the one named: row 511 of L, pair 512 as the paper numbers pairs
    np.testing.assert_array_equal(vector.image, DescriptorOperator(pattern).frame_vector(511))
    assert vector.title == "$L_{512}$" and vector.vmin == -vector.vmax and vector.colorbar == "$L_i$"
    assert "(row 512 of $L$, pairs numbered from 1 as in the paper)" in spec.caption
    assert len(_segments(patch_pattern_figure(patch, pattern, pairs="selected", selected=3).rows[0][0])) == 1
    bare = patch_pattern_figure(patch, pattern, pairs="none")
    assert _segments(bare.rows[0][0]) == [] and len(bare.rows[0]) == 1 and "no pairs" in bare.caption


@pytest.mark.parametrize("kwargs, message", [
    ({"pairs": "some"}, "pairs must be one of"),
    ({"selected": 512}, "selected must be a row of L from 0 to 511"),
    ({"pairs": "selected"}, "needs a selected pair"),
])
def test_patch_pattern_bad_choices_name_the_parameter(kwargs, message):
    with pytest.raises(ValueError, match=message):
        patch_pattern_figure(np.zeros((32, 32)), make_pattern("brief", m=512), **kwargs)


def test_live_figure_fits_the_estimate_and_says_when_it_stopped():
    rng = np.random.default_rng(1)
    original = rng.random((16, 16))
    estimate = 5 * original - 2 + 0.1 * rng.random((16, 16))
    spec = live_figure(original, estimate, iteration=14, iterations=200, bit_consistency=1.0,
                       stop_reason="all bits consistent", title="BRIEF M=512")
    shown_original, shown, difference = spec.rows[0]
    np.testing.assert_array_equal(shown.image, display_stretch(estimate, reference=original).image)
    np.testing.assert_allclose(difference.image, shown.image - original)
    assert difference.vmin == -difference.vmax == -np.abs(difference.image).max()
    assert "stopped at iteration 14: all bits consistent" in spec.caption and "bit consistency 100.0 %" in spec.caption
    assert [p.title for p in spec.rows[0]] == ["original", "estimate", "difference"]
    assert spec.caption.startswith("BRIEF M=512: iteration 14 of 200") and spec.display["estimate"]["rule"] == "fit"
    real = live_figure(original, estimate, iteration=30, bit_consistency=None)
    assert "real-valued" in real.caption and "bit consistency" not in real.caption


def test_maps_each_get_their_own_scale_or_one_shared_and_the_caption_says_which():
    entries = []
    for name in ("brief", "freak"):
        operator = DescriptorOperator(make_pattern(name, patch_size=32, m=512))
        entries.append((name.upper(), operator.weight_map(), operator.occurrence_map()))
    vector = DescriptorOperator(make_pattern("freak", patch_size=32, m=512)).frame_vector(7)
    spec = maps_figure(entries, frame_vectors=[("FREAK", 7, vector)])
    weights, occurrences, vectors = spec.rows
    for row, column, quantity in ((weights, 1, "weight"), (occurrences, 2, "occurrences")):
        # BRIEF's map spans its own colour bar, not a sliver of FREAK's
        assert [p.vmax for p in row] == [float(e[column].max()) for e in entries]
        assert [p.colorbar for p in row] == [quantity, quantity]
        ratio = float(entries[1][column].max()) / float(entries[0][column].max())
        assert f"{quantity} maxima BRIEF {entries[0][column].max():{'.3g' if column == 1 else '.0f'}}" in spec.caption
        assert f"(largest/smallest {ratio:.3g})" in spec.caption
    assert weights[1].vmax / weights[0].vmax > 5  # FREAK's weights dwarf BRIEF's: why one shared scale hid BRIEF
    assert "each map on its own colour scale" in spec.caption and [p.title for p in weights] == [
        "BRIEF, weights", "FREAK, weights"]
    assert vectors[0].title == "FREAK, $L_{8}$" and np.array_equal(vectors[0].image, vector)  # row 7: pair 8
    shared = maps_figure(entries, shared_scale=True)
    for row, column in ((shared.rows[0], 1), (shared.rows[1], 2)):
        assert [p.vmax for p in row] == [float(max(e[column].max() for e in entries))] * 2
        assert [p.colorbar is not None for p in row] == [False, True]             # one bar for the shared scale
    assert "each row on one colour scale" in shared.caption
    with pytest.raises(ValueError, match="entries must hold"):
        maps_figure([])


def test_whole_image_figure_draws_a_feature_files_uncovered_pixels_at_the_covered_median():
    original = np.zeros((32, 32))
    original[:, 16:] = 1.0
    reconstruction = 0.2 + 0.3 * original
    reconstruction[:4] = 0.9                                             # covered: only rows 4..31
    covered = np.zeros((32, 32), bool)
    covered[4:] = True
    spec = whole_image_figure(original, reconstruction, covered=covered, uncovered="neutral")
    shown = spec.rows[0][1].image
    black = whole_image_figure(original, reconstruction, covered=covered).rows[0][1].image
    assert np.array_equal(shown[4:], black[4:]) and not black[:4].any()
    assert np.all(shown[:4] == np.median(black[4:])) and np.median(black[4:]) == 0.5
    assert "median grey of the covered ones" in spec.caption and "black" not in spec.caption
    assert spec.display["reconstruction"]["uncovered"] == "neutral"


def test_whole_image_figure_captions_metrics_and_blacks_out_uncovered(tmp_path):
    original = np.zeros((32, 32))
    original[:, 16:] = 1.0
    reconstruction = 0.2 + 0.3 * original
    covered = np.ones((32, 32), bool)
    covered[:, :4] = False
    spec = whole_image_figure(original, reconstruction, covered=covered, edges=True,
                              metrics={"correlation": 0.91234, "psnr": float("inf"), "ssim": 0.5},
                              title="BRIEF M=512 32\u00d732 N_off=8, consistency (joint)")
    first, second, third = spec.rows[0]
    assert np.all(second.image[:, :4] == 0) and np.allclose(second.image[:, 16:], 1.0)
    assert third.image.shape == (32, 32, 3) and np.any(np.all(third.image == EDGE_COLOR, axis=2))
    assert "correlation 0.912" in spec.caption and "SSIM 0.500" in spec.caption and not re.search(r"PSNR \d", spec.caption)
    assert "black" in spec.caption and "fitted to the original" in spec.caption and "vermillion" in spec.caption
    assert [p.title for p in spec.rows[0]] == ["original", "reconstruction", "with edges"]
    written = save_figure(spec, tmp_path / "whole", formats=("png",), width="single",
                          record=run_record("panel:whole-image", metrics={"psnr": float("inf")}))
    record = read_sidecar(written["json"])
    assert record["display"]["reconstruction"]["rule"] == "fit" and record["metrics"]["psnr"] is None
    only = whole_image_figure(None, reconstruction, keypoints=500, title="ORB, 500 keypoints")
    assert len(only.rows[0]) == 1 and only.display["reconstruction"]["rule"] == "percentile"
    assert only.rows[0][0].title == "reconstruction, 500 keypoints" and "from the 500 keypoints" in only.caption
    # a lone panel has no letter, and its figure is as wide as its content, not a double column
    _, layout = render_figure(only, width="double", dpi=300)
    (panel,) = layout["panels"]
    assert panel["letter"] == "" and not layout["fills_column"] and layout["width_in"] < 7.16 / 2
    assert panel["x"] + panel["width"] / 2 == layout["pixels"][0] / 2                # no empty canvas beside it


def test_families_figure_fits_each_estimate_to_the_patch():
    patch = np.random.default_rng(2).random((16, 16))
    spec = families_figure(patch, [("BRIEF", 2 * patch + 1), ("FREAK", 1 - patch)])
    assert [p.title for p in spec.rows[0]] == ["original", "BRIEF", "FREAK"]
    assert "(b)–(c) the same patch reconstructed" in spec.caption
    np.testing.assert_allclose(spec.rows[0][1].image, patch, atol=1e-12)
    assert spec.display["FREAK"]["rule"] == "percentile"                      # inverted: not turned upright
