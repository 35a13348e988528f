"""The ``leakage`` figure assembled from synthetic rows: panels, titles, display rule, table, CSV and record."""

import csv
import io

import numpy as np
import pytest

import lbdviewer.figures.leakage as leakage_figure
from lbdviewer.evaluation.display import display_stretch
from lbdviewer.figures import FIGURES, Panel, render_figure, write_figure
from lbdviewer.evaluation.leakage import LeakRow
from lbdviewer.evaluation.records import read_sidecar


def _row(descriptor, correlation, *, shape=(48, 48), keypoints=30, lines_read=2, error=None, seed=0):
    rng = np.random.default_rng(seed)
    covered = np.zeros(shape, bool)
    if not error:
        covered[8:40, 4:36] = True
    reconstruction = np.where(covered, rng.normal(size=shape), 0.0)
    return LeakRow(descriptor=descriptor, keypoints=0 if error else keypoints, n_bits=0 if error else 256,
                   file_bytes=0 if error else 4000, correlation=np.nan if error else correlation,
                   coverage=float(covered.mean()), bit_consistency=np.nan if error else 0.97,
                   lines_read=None if error else lines_read, lines_total=4, seconds=1.5, reconstruction=reconstruction,
                   covered=covered, error=error)


@pytest.fixture
def rows():
    return [_row("orb", 0.71, seed=1), _row("brisk", 0.64, lines_read=0, seed=2),
            _row("beblid", np.nan, error="thresholded bits are not supported yet")]


def test_the_original_comes_first_then_one_panel_per_descriptor_by_the_display_rule(rows):
    image = np.linspace(0, 1, 48 * 48).reshape(48, 48)
    spec, display = leakage_figure.leakage_spec(image, rows, source_name="ramp", n_keypoints=500)
    panels = [Panel(panel.image, title=panel.title.replace("\u00a0", " ")) for row in spec.rows for panel in row]
    assert spec.kind == "leakage" and len(panels) == 1 + len(rows)
    assert all(len(row) <= leakage_figure.PER_ROW for row in spec.rows)
    assert panels[0].title == "original: ramp" and np.allclose(panels[0].image, image)
    assert panels[1].title == "ORB, 30 kp: r = 0.71, coverage 44 %, OCR 2/4 lines"
    assert panels[2].title.startswith("BRISK, 30 kp: r = 0.64") and panels[2].title.endswith("OCR 0/4 lines")
    shown = display_stretch(rows[0].reconstruction, mask=rows[0].covered, reference=image)
    assert np.array_equal(panels[1].image, shown.image) and display["orb"] == shown.record()
    assert not panels[1].image[~rows[0].covered].any()  # uncovered pixels black
    assert panels[3].title == "BEBLID: not inverted" and not panels[3].image.any() and "beblid" not in display
    assert "Not inverted yet: BEBLID." in spec.caption and "tesseract" in spec.caption
    layout = render_figure(spec, width="double", dpi=100)[1]
    assert [p["letter"] for p in layout["panels"]] == ["(a)", "(b)", "(c)", "(d)"]


def test_a_descriptor_without_keypoints_says_so():
    row = _row("opencv-freak", 0.0)
    row = LeakRow(**{**row.__dict__, "keypoints": 0, "correlation": np.nan})
    assert leakage_figure.panel_title(row) == "OPENCV-FREAK: no keypoint kept"


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

    def compare(image, descriptors, **options):  # the inversions themselves are tested in tests/test_leakage.py
        seen.update(options, descriptors=descriptors, shape=image.shape)
        return [LeakRow(**{**row.__dict__, "reconstruction": np.resize(row.reconstruction, image.shape),
                           "covered": np.resize(row.covered, image.shape)}) for row in rows]

    monkeypatch.setattr(leakage_figure, "compare_descriptors", compare)
    assert "leakage" in FIGURES
    written = write_figure(tmp_path, "leakage", quick=True, formats=("png",), dpi=72)
    assert sorted(path.name for path in written.values()) == ["leakage.csv", "leakage.json", "leakage.png"]
    assert seen["n_keypoints"] == leakage_figure.QUICK_KEYPOINTS
    assert seen["iterations"] == leakage_figure.QUICK_ITERATIONS
    assert seen["ocr"] is False and seen["shape"] == (leakage_figure.QUICK_CROP[3],) * 2
    record = read_sidecar(written["json"])
    assert record["kind"] == "figure:leakage" and record["parameters"]["quick"] is True
    assert [entry["descriptor"] for entry in record["extra"]["table"]] == ["orb", "brisk", "beblid"]
    assert record["extra"]["table"][2]["correlation"] is None  # NaN written as null
    assert written["csv"].read_text().splitlines()[1].startswith("orb,30,256,4000,0.7100")
