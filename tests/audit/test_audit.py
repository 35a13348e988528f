"""``lbdviewer audit``: tasks, the local pool, a Dask cluster, resumption and the report."""

import csv
import json
import shutil
import subprocess
import sys

import cv2
import numpy as np
import pytest

from lbdviewer.audit import (COLUMNS, AuditTask, ResultsLog, collect_inputs, iter_audit, plan_tasks, read_results,
                             run_task, write_report)
from lbdviewer.audit.report import leak_order, render_html, summarise
from lbdviewer.audit.results_log import RESULTS
from lbdviewer.audit.tasks import FROM_FILE, reference_beside
from lbdviewer.evaluation.ocr import text_similarity
from lbdviewer.cli.main import main
from lbdviewer.features.extract import extract_features
from lbdviewer.features.keypoints import Keypoints
from lbdviewer.features.files import save_features
from lbdviewer.io.images import save_png
from lbdviewer.io.samples import sample_image
from lbdviewer.libraries.registry import get_model

#: Small crops (128 px) with texture and, for book-titles, text.
CROPS = {"camera": (60, 200), "astronaut": (40, 180), "book-titles": (20, 100), "shapes": (60, 60)}
#: Few keypoints and iterations: the tests check the plumbing, not the quality.
OPTIONS = {"keypoints": 150, "iterations": 5, "ocr": False, "threads": 1}
@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    """Four image crops and one broken PNG; the ORB calibration done once, before any worker needs it."""
    folder = tmp_path_factory.mktemp("inputs")
    for name, (row, col) in CROPS.items():
        save_png(folder / f"{name}.png", sample_image(name)[row:row + 128, col:col + 128])
    (folder / "broken.png").write_bytes(b"\x89PNG\r\n\x1a\n cut short")
    get_model("orb").keypoint_patterns(Keypoints([64.0], [64.0]))
    return folder


def _tasks(folder):
    return plan_tasks(collect_inputs([folder]), ["orb"], **OPTIONS)


def _csv_rows(report):
    with open(report / RESULTS, newline="") as file:
        rows = list(csv.DictReader(file))
    return rows


def _check_five_rows(rows):
    assert len(rows) == 5
    statuses = {row["input"].rsplit("/", 1)[-1]: row["status"] for row in rows}
    assert statuses.pop("broken.png").startswith("error: ")
    assert set(statuses.values()) == {"ok"} and len(statuses) == 4
    for row in rows:
        if row["status"] == "ok":
            assert int(row["keypoints"]) > 0 and 0 < float(row["coverage"]) <= 1
            assert -1 <= float(row["correlation"]) <= 1 and -1 <= float(row["rank_correlation"]) <= 1


def test_dask_cluster_audits_five_inputs_and_resumes(inputs, tmp_path, dask_client):
    report = tmp_path / "report"
    addresses = set(dask_client.scheduler_info()["workers"])
    assert len(addresses) == 2
    new = list(iter_audit(_tasks(inputs), report, scheduler=dask_client))
    assert len(new) == 5
    _check_five_rows(_csv_rows(report))
    assert {row["worker"] for row in new} <= addresses
    assert list(iter_audit(_tasks(inputs), report, scheduler=dask_client)) == []
    assert len(_csv_rows(report)) == 5
    index = write_report(report)
    assert index.name == "index.html" and "broken.png" in index.read_text()


def test_local_pool_through_the_command_line(inputs, tmp_path, capsys):
    report = tmp_path / "report"
    argv = ["audit", str(inputs), "-o", str(report), "--keypoints", "150", "--iterations", "5", "--no-ocr",
            "--workers", "2"]
    assert main(argv) == 0
    rows = _csv_rows(report)
    _check_five_rows(rows)
    assert all(row["worker"].startswith("local:") for row in rows)
    assert len({row["worker"] for row in rows}) <= 2
    assert (report / "index.html").is_file() and (report / "correlation_by_descriptor.svg").is_file()
    for row in rows:
        if row["status"] == "ok":
            assert (report / row["thumbnail_original"]).is_file()
            assert (report / row["thumbnail_reconstruction"]).is_file()
    capsys.readouterr()
    assert main(argv) == 0
    assert "0 new rows" in capsys.readouterr().out and len(_csv_rows(report)) == 5


def test_resumes_after_a_partial_results_file(inputs, tmp_path, dask_client):
    """Two finished rows and a row cut short by a crash: the run adds the three missing rows, once each."""
    tasks = _tasks(inputs)
    report = tmp_path / "report"
    with ResultsLog(report) as log:
        for task in tasks[:2]:
            log.append(*run_task(task))
    first = (report / RESULTS).read_text()
    with open(report / RESULTS, "a") as file:
        file.write(f"{tasks[2].input},orb,ok,12,0.5")  # no newline: the crash came mid-row
    new = list(iter_audit(tasks, report, scheduler=dask_client))
    assert sorted(row["input"] for row in new) == sorted(task.input for task in tasks[2:])
    text = (report / RESULTS).read_text()
    assert text.startswith(first) and ",0.5\n" not in text
    rows = _csv_rows(report)
    _check_five_rows(rows)
    assert len({(row["input"], row["descriptor"]) for row in rows}) == 5


def test_results_log_refuses_another_table(tmp_path):
    (tmp_path / RESULTS).write_text("name,score\na,1\n")
    with pytest.raises(ValueError, match="has columns"):
        ResultsLog(tmp_path)


def test_feature_file_is_inverted_and_compared_with_the_image_beside_it(inputs, tmp_path):
    image = sample_image("camera")[60:188, 200:328]
    save_png(tmp_path / "scene.png", image)
    save_features(tmp_path / "scene.npz", extract_features(image, "orb", n_keypoints=100))
    assert reference_beside(tmp_path / "scene.npz") == str(tmp_path / "scene.png")
    [task] = plan_tasks(collect_inputs([tmp_path / "scene.npz"]), ["orb"], iterations=5, ocr=False)
    row, thumbnails = run_task(task)
    assert row["status"] == "ok" and row["descriptor"] == "orb" and row["correlation"] > 0.2
    assert set(thumbnails) == {"original", "reconstruction"}
    shown = cv2.imdecode(np.frombuffer(thumbnails["reconstruction"], np.uint8), cv2.IMREAD_GRAYSCALE)
    corners = shown[0, 0], shown[0, -1], shown[-1, 0], shown[-1, -1]  # inside ORB's border: no keypoint covers them
    assert len(set(corners)) == 1 and corners[0] > 0  # drawn at the covered median, as the inversion holds them
    (tmp_path / "scene.png").unlink()
    row, thumbnails = run_task(task)
    assert row["status"] == "ok" and row["correlation"] is None and set(thumbnails) == {"reconstruction"}


def test_hostile_inputs_are_error_rows(tmp_path):
    (tmp_path / "pickle.npz").write_bytes(b"PK\x03\x04 not a zip")
    np.savez(tmp_path / "objects.npz", descriptor=np.array([{"a": 1}], dtype=object))
    (tmp_path / "folder.png").mkdir()
    for path in ("pickle.npz", "objects.npz", "folder.png", "missing.png"):
        row, thumbnails = run_task(AuditTask(str(tmp_path / path), "orb", ocr=False))
        assert row["status"].startswith("error: ") and thumbnails == {}
        assert row["worker"].startswith("local:")


def test_resource_limits_travel_with_the_task(inputs, tmp_path):
    row, _ = run_task(AuditTask(str(inputs / "camera.png"), "orb", max_pixels=100 * 100, ocr=False))
    assert row["status"].startswith("error: ") and "pixels" in row["status"]
    features = tmp_path / "scene.npz"
    save_features(features, extract_features(sample_image("camera")[60:188, 200:328], "orb", n_keypoints=100))
    row, _ = run_task(AuditTask(str(features), FROM_FILE, max_keypoints=10, ocr=False))
    assert row["status"].startswith("error: ") and "keypoints" in row["status"]


def test_image_without_keypoints_leaks_nothing(tmp_path):
    blank = save_png(tmp_path / "blank.png", np.full((64, 64), 0.5))
    row, thumbnails = run_task(AuditTask(str(blank), "orb", ocr=False))
    assert row["status"] == "ok" and row["keypoints"] == 0 and row["coverage"] == 0.0 and row["correlation"] is None
    assert set(thumbnails) == {"original", "reconstruction"}


def test_time_limit_gives_an_error_row(inputs):
    task = AuditTask(str(inputs / "camera.png"), "orb", keypoints=150, iterations=500, limit_seconds=1e-6, ocr=False)
    row, _ = run_task(task)
    assert row["status"] == "error: time limit of 1e-06 s reached (--limit-seconds)"


def test_collect_inputs_globs_and_refusals(inputs):
    names = [path.rsplit("/", 1)[-1] for path in collect_inputs([inputs / "c*.png", inputs / "shapes.png"])]
    assert names == ["camera.png", "shapes.png"]
    with pytest.raises(ValueError, match="matches no file"):
        collect_inputs([inputs / "zz*.png"])


def test_text_similarity():
    assert text_similarity("Moby Dick\n", "MOBY  DICK") == 1.0
    assert text_similarity("MOBY DICK", "") == 0.0
    assert text_similarity("  ", "anything") is None


@pytest.mark.skipif(shutil.which("tesseract") is None, reason="tesseract is not installed")
def test_ocr_reads_the_original_text(tmp_path):
    page = save_png(tmp_path / "page.png", sample_image("book-titles")[:128, :256])
    row, _ = run_task(AuditTask(str(page), "orb", keypoints=200, iterations=5))
    assert row["status"] == "ok" and "MOBY" in row["ocr_original"].upper()
    assert 0.0 <= row["ocr_similarity"] <= 1.0


def test_report_orders_worst_leak_first_and_escapes_text(tmp_path):
    def row(name, descriptor, correlation, status="ok", ocr=(None, None, None)):
        return {**dict.fromkeys(COLUMNS), "input": f"/data/{name}", "descriptor": descriptor, "status": status,
                "correlation": correlation, "keypoints": 100, "ocr_original": ocr[0], "ocr_reconstruction": ocr[1],
                "ocr_similarity": ocr[2]}

    rows = [row("a.png", "orb", 0.5), row("b.png", "orb", 0.9), row("<i>c</i>.png", "orb", 0.2,
                                                                     ocr=("TOP SECRET", "TOP SECRET", 1.0)),
            row("d.png", "opencv-brief", None, status="error: <bad> & broken")]
    assert [r["input"][6:] for r in leak_order(rows)] == ["<i>c</i>.png", "b.png", "a.png"]
    summary = {s["descriptor"]: s for s in summarise(rows)}
    assert summary["orb"]["median_correlation"] == 0.5 and summary["orb"]["legible_share"] == 1.0
    assert summary["opencv-brief"]["errors"] == 1 and summary["opencv-brief"]["median_correlation"] is None
    page = render_html(rows)
    assert "&lt;i&gt;c&lt;/i&gt;.png" in page and "<i>c</i>" not in page
    assert "error: &lt;bad&gt; &amp; broken" in page


def test_report_round_trips_through_csv_and_parquet(tmp_path):
    rows = [{**dict.fromkeys(COLUMNS), "input": "/x/a,\"b\"\n.png", "descriptor": "orb", "status": "ok",
             "keypoints": 7, "correlation": 0.25, "ocr_original": "line one\nline two", "seconds": float("nan")}]
    with ResultsLog(tmp_path) as log:
        log.append(rows[0])
    [back] = read_results(tmp_path)
    assert back["input"] == "/x/a,\"b\"\n.png" and back["keypoints"] == 7 and back["correlation"] == 0.25
    with ResultsLog(tmp_path) as log:
        assert log.done == {("/x/a,\"b\"\n.png", "orb")}
    assert back["ocr_original"] == "line one line two" and back["seconds"] is None and back["ssim"] is None
    index = write_report(tmp_path)
    assert index.is_file()
    pyarrow_parquet = pytest.importorskip("pyarrow.parquet")
    table = pyarrow_parquet.read_table(tmp_path / "results.parquet")
    assert table.column_names == list(COLUMNS) and table.column("keypoints").to_pylist() == [7]


def test_audit_and_its_report_load_no_qt(tmp_path):
    code = f"""
import json, sys
from lbdviewer.audit import ResultsLog, write_report
ResultsLog({str(tmp_path)!r}).close()
write_report({str(tmp_path)!r})
print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in ('PyQt6', 'PyQt5', 'PySide6', 'qtpy'))))
"""
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(result.stdout.strip().splitlines()[-1]) == []
    assert (tmp_path / "index.html").is_file()


def _dies_on_crash_inputs(task):
    """A task function whose process dies on inputs named crash*: a segfault or the OOM killer, simulated."""
    import os

    if os.path.basename(task.input).startswith("crash"):
        os._exit(9)
    return {**dict.fromkeys(COLUMNS), "input": task.input, "descriptor": task.descriptor, "status": "ok",
            "worker": f"local:{os.getpid()}"}, {}


def test_a_task_that_kills_its_process_is_an_error_row_and_the_others_finish():
    from lbdviewer.audit.runner import DIED, _on_local_pool

    names = ["a.png", "crash.png", "b.png", "c.png", "d.png", "e.png"]
    tasks = [AuditTask(f"/in/{name}", "orb") for name in names]
    results = {row["input"]: row["status"] for row, _ in _on_local_pool(tasks, 2, function=_dies_on_crash_inputs)}
    assert sorted(results) == sorted(task.input for task in tasks)
    assert results.pop("/in/crash.png") == DIED and set(results.values()) == {"ok"}
