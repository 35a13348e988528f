"""The ``leakage`` figure assembled from synthetic rows: panels, titles, display rule, table, CSV and record."""

import csv
import io

import numpy as np
import pytest

import lbdviewer.figures.leakage as leakage_figure
from lbdviewer.evaluation.display import display_stretch
from lbdviewer.figures import FIGURES, iter_figure, render_figure, write_figure
from lbdviewer.evaluation.leakage import LeakRow
from lbdviewer.evaluation.records import read_sidecar


def _row(descriptor, correlation, *, shape=(48, 48), keypoints=30, lines_read=2, error=None, seed=0):
    rng = np.random.default_rng(seed)
    covered = np.zeros(shape, bool)
    if not error:
        covered[8:40, 4:36] = True
    reconstruction = np.where(covered, rng.normal(size=shape), 0.0)
    solver = None if error else {"method": "consistency", "mode": "joint", "iterations_requested": 20,
                                 "iterations_run": 20, "rows": None, "rows_stopped_early": None,
                                 "stopped_early": False, "stop_reason": None, "bit_consistency": 0.97}
    return LeakRow(descriptor=descriptor, keypoints=0 if error else keypoints, n_bits=0 if error else 256,
                   file_bytes=0 if error else 4000, correlation=np.nan if error else correlation,
                   coverage=float(covered.mean()), bit_consistency=np.nan if error else 0.97,
                   lines_read=None if error else lines_read, lines_total=4, seconds=1.5, reconstruction=reconstruction,
                   covered=covered, error=error, solver=solver)


@pytest.fixture
def rows():
    return [_row("orb", 0.71, seed=1), _row("brisk", 0.64, lines_read=0, seed=2),
            _row("beblid", np.nan, error="thresholded bits are not supported yet")]


def test_the_original_comes_first_then_one_panel_per_descriptor_by_the_display_rule(rows):
    image = np.linspace(0, 1, 48 * 48).reshape(48, 48)
    spec, display = leakage_figure.leakage_spec(image, rows, source_name="ramp", n_keypoints=500)
    panels = [panel for row in spec.rows for panel in row]
    assert spec.kind == "leakage" and len(panels) == 1 + len(rows)
    assert len(spec.rows) == 1  # one row: the engine cuts it evenly for the width
    assert panels[0].title == "original" and np.allclose(panels[0].image, image)
    assert panels[1].title == "ORB\n$r = 0.71$" and panels[2].title == "BRISK\n$r = 0.64$"  # short titles
    assert "(b) ORB: 30 keypoints, $r = 0.71$, coverage 44 %, OCR 2/4 lines" in spec.caption  # the facts: caption
    assert "(c) BRISK: 30 keypoints, $r = 0.64$" in spec.caption and "ramp" in spec.caption
    covered = rows[0].covered
    shown = display_stretch(rows[0].reconstruction, mask=covered, reference=image, uncovered="neutral")
    assert np.array_equal(panels[1].image, shown.image) and display["orb"] == shown.record()
    black = display_stretch(rows[0].reconstruction, mask=covered, reference=image).image
    assert np.array_equal(panels[1].image[covered], black[covered])
    assert np.all(panels[1].image[~covered] == np.median(black[covered]))  # uncovered: the covered median
    assert "(the rest drawn at the covered median)" in spec.caption
    assert panels[3].title == "BEBLID\nnot inverted" and not panels[3].image.any() and "beblid" not in display
    assert "(d) BEBLID: not inverted (thresholded bits are not supported yet)" in spec.caption
    assert "tesseract" in spec.caption
    layout = render_figure(spec, width="double", dpi=100)[1]
    assert [p["letter"] for p in layout["panels"]] == ["(a)", "(b)", "(c)", "(d)"]
    nine = leakage_figure.leakage_spec(np.zeros((512, 512)), [_row(f"d{k}", 0.5, shape=(512, 512)) for k in range(8)],
                                       source_name="zeros", n_keypoints=500)[0]
    for width, dpi, rows in (("double", 300, [3, 3, 3]), ("single", 600, [3, 3, 3]), ("single", 300, [2, 2, 2, 2, 1])):
        panels = render_figure(nine, width=width, dpi=dpi)[1]["panels"]
        assert [sum(p["y"] == y for p in panels) for y in sorted({p["y"] for p in panels})] == rows


def test_a_descriptor_without_keypoints_says_so():
    row = _row("opencv-freak", 0.0)
    row = LeakRow(**{**row.__dict__, "keypoints": 0, "correlation": np.nan})
    assert leakage_figure.panel_title(row) == "OPENCV-FREAK\nno keypoint"
    assert leakage_figure.panel_facts(row) == "OPENCV-FREAK: no keypoint kept"


def test_the_table_and_csv_hold_every_row_with_nan_and_none_as_empty_cells(rows):
    entries = leakage_figure.table_rows(rows)
    assert [entry["descriptor"] for entry in entries] == ["orb", "brisk", "beblid"]
    assert tuple(entries[0]) == leakage_figure.COLUMNS and not any(isinstance(v, np.ndarray)
                                                                    for e in entries for v in e.values())
    read = list(csv.DictReader(io.StringIO(leakage_figure.leakage_csv(entries))))
    assert float(read[0]["correlation"]) == pytest.approx(0.71) and read[0]["lines_read"] == "2"
    assert read[2]["correlation"] == "" and read[2]["lines_read"] == "" and "not supported" in read[2]["error"]


def test_write_figure_writes_the_figure_its_record_with_the_table_and_the_csv(rows, tmp_path, monkeypatch):
    seen = {}

    def leak_rows(image, descriptors, **options):  # the inversions themselves are tested in tests/evaluation
        seen.update(options, descriptors=descriptors, shape=image.shape)
        for row in rows[::-1]:  # the figure orders them, most correlated first
            yield LeakRow(**{**row.__dict__, "reconstruction": np.resize(row.reconstruction, image.shape),
                             "covered": np.resize(row.covered, image.shape)})

    monkeypatch.setattr(leakage_figure, "leak_rows", leak_rows)
    assert "leakage" in FIGURES
    steps = list(iter_figure("leakage", quick=True))
    assert [(step.done, step.label) for step in steps[:-1]] == [(1, "beblid"), (2, "brisk"), (3, "orb")]
    assert {step.total for step in steps} == {len(seen["descriptors"])}
    written = write_figure(tmp_path, "leakage", quick=True, formats=("png",), dpi=72)
    assert sorted(path.name for path in written.values()) == ["leakage.caption.txt", "leakage.csv", "leakage.json",
                                                              "leakage.png", "leakage.tex"]
    assert seen["n_keypoints"] == leakage_figure.QUICK_KEYPOINTS
    assert seen["iterations"] == leakage_figure.QUICK_ITERATIONS
    assert seen["ocr"] is False and seen["shape"] == (leakage_figure.QUICK_CROP[3],) * 2
    record = read_sidecar(written["json"])
    assert record["kind"] == "figure:leakage" and record["parameters"]["quick"] is True
    assert [entry["descriptor"] for entry in record["extra"]["table"]] == ["orb", "brisk", "beblid"]
    assert record["extra"]["table"][2]["correlation"] is None  # NaN written as null
    orb = record["extra"]["panels"]["orb"]  # each panel's inversion: solver, iterations, stop reason, seconds
    assert orb["solver"]["method"] == "consistency" and orb["solver"]["iterations_run"] == 20
    assert "stop_reason" in orb["solver"] and orb["solver"]["bit_consistency"] == 0.97 and orb["seconds"] == 1.5
    assert record["extra"]["panels"]["beblid"]["solver"] is None  # not inverted: nothing ran
    assert written["csv"].read_text().splitlines()[1].startswith("orb,30,256,4000,0.7100")
