"""``lbdviewer defend``: tasks on the audit runner (local pool, Dask), resumable, a figure and a page; audit --defence."""

import csv

import pytest

from lbdviewer.audit.runner import iter_audit
from lbdviewer.cli.main import main
from lbdviewer.defences.rows import COLUMNS, read_defend_rows
from lbdviewer.defences.tasks import DEFEND, plan_defend_tasks
from lbdviewer.defences.transforms import parse_defences
from lbdviewer.features.extract import extract_features
from lbdviewer.features.files import save_features
from lbdviewer.io.images import save_png
from lbdviewer.io.samples import sample_image

#: The columns the issue asks for, at least.
REQUIRED = ("input", "descriptor", "defence", "strength", "attacker", "matching_accuracy_3px", "homography_accuracy",
            "correlation", "rank_correlation", "ocr_lines_read", "ocr_lines_total", "seconds", "status")
FAST = ["--keypoints", "60", "--iterations", "5", "--pairs", "1", "--no-ocr", "--quiet"]


@pytest.fixture(scope="module")
def image(tmp_path_factory):
    return save_png(tmp_path_factory.mktemp("in") / "camera.png", sample_image("camera")[80:208, 180:308])


def _rows(folder):
    with open(folder / "results.csv", newline="") as file:
        return list(csv.DictReader(file))


def test_defend_runs_on_the_local_pool_resumes_and_writes_a_figure_and_a_page(image, tmp_path):
    out = tmp_path / "out"
    argv = ["defend", str(image), "-o", str(out), "--defence", "rr:eps=2", "--defence", "keep-keypoints:0.5",
            "--workers", "2", *FAST]
    assert main(argv) == 0
    rows = _rows(out)
    assert set(REQUIRED) <= set(rows[0]) and tuple(rows[0]) == COLUMNS
    assert sorted((r["defence"], r["strength"], r["attacker"]) for r in rows) == [
        ("keep-keypoints", "0.5", "aware"), ("keep-keypoints", "0.5", "naive"), ("none", "", "aware"),
        ("none", "", "naive"), ("rr", "2", "aware"), ("rr", "2", "naive")]
    assert {r["status"] for r in rows} == {"ok"} and all(r["worker"].startswith("local:") for r in rows)
    typed = read_defend_rows(out / "results.csv")
    for row in typed:
        assert 0.0 <= row["matching_accuracy_3px"] <= 1.0 and -1.0 <= row["correlation"] <= 1.0
        assert (out / row["thumbnail_reconstruction"]).is_file()
    assert {r["keypoints"] for r in typed if r["defence"] == "keep-keypoints"} == {
        round(next(r["keypoints"] for r in typed if r["defence"] == "none") / 2)}
    for suffix in ("png", "pdf", "json"):
        assert (out / f"privacy_utility_orb.{suffix}").is_file()
    page = (out / "index.html").read_text()
    assert "privacy_utility_orb.png" in page and "rr eps=2" in page and "Recommendation rule" in page
    assert main(argv) == 0 and len(_rows(out)) == 6  # resumed: nothing to do
    kept = _rows(out)[:-1]
    with open(out / "results.csv", "w", newline="") as file:
        writer = csv.DictWriter(file, fieldnames=COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(kept)
    assert main(argv) == 0
    again = _rows(out)
    assert len(again) == 6 and again[:5] == kept


def test_defend_runs_on_a_dask_cluster(image, tmp_path, dask_client):
    """On the conftest's cluster: free ports only, while another process holds Dask's default 8787."""
    tasks = plan_defend_tasks([str(image)], ["orb"], parse_defences("jitter:2"), keypoints=60, iterations=5,
                              viewpoints=1, illuminations=1, ocr=False, threads=1)
    rows = list(iter_audit(tasks, tmp_path, scheduler=dask_client, kind=DEFEND))
    addresses = set(dask_client.scheduler_info()["workers"])
    assert len(rows) == 4 and {row["status"] for row in rows} == {"ok"}
    assert {row["worker"] for row in rows} <= addresses
    assert list(iter_audit(tasks, tmp_path, scheduler="unused: nothing to run", kind=DEFEND)) == []


def test_defend_refuses_bad_input_before_any_work(image, tmp_path, capsys):
    features = tmp_path / "scene.npz"
    save_features(features, extract_features(sample_image("camera")[:128, :128], "orb", n_keypoints=50))
    cases = [(["defend", str(features), "-o", str(tmp_path / "a"), "--defence", "rr:eps=1"], "feature file"),
             (["defend", str(tmp_path / "nope.png"), "-o", str(tmp_path / "b"), "--defence", "rr:eps=1"],
              "does not exist"),
             (["defend", str(image), "-o", str(tmp_path / "c"), "--defence", "blur:1"], "KIND one of"),
             (["defend", str(image), "-o", str(tmp_path / "d")], "--defence")]
    for argv, message in cases:
        assert main(argv) == 2, argv
        assert message in capsys.readouterr().err
        assert not (tmp_path / argv[3]).exists()  # refused before the report folder is made


def test_audit_with_defences_recommends_one_with_its_cost(image, tmp_path):
    out = tmp_path / "audit"
    argv = ["audit", str(image), "-o", str(out), "--defence", "keep-bits:0.5", "--workers", "1", *FAST]
    assert main(argv) == 0
    defended = read_defend_rows(out / "defences.csv")
    assert {(r["defence"], r["attacker"]) for r in defended} == {("none", "aware"), ("none", "naive"),
                                                                  ("keep-bits", "aware"), ("keep-bits", "naive")}
    page = (out / "index.html").read_text()
    assert "Defences measured" in page and "privacy_utility_orb.png" in page
    summary = page[page.index("Summary"):page.index("Per descriptor")]
    assert "keep-bits" in summary or "no measured defence" in summary
