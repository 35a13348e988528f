"""The audit report a manager acts on: summary, text counted over documents only, settings, PDF, bad paths, Ctrl-C."""

import os
import re
import shutil
import signal
import subprocess
import sys

import pytest

from lbdviewer.audit.report import render_html, write_report
from lbdviewer.audit.results import read_results, summarise
from lbdviewer.audit.risk import leak_ranking, risk
from lbdviewer.audit.tasks import COLUMNS
from lbdviewer.cli.main import main
from lbdviewer.evaluation.ocr import normalise_text, ocr_words
from lbdviewer.io.images import save_png
from lbdviewer.io.samples import sample_image

needs_tesseract = pytest.mark.skipif(shutil.which("tesseract") is None, reason="tesseract is not installed")
#: Two documents and two photos, cropped small.
FOLDER = {"titles.png": ("book-titles", 0, 40, 200, 432), "card.png": ("document", 20, 0, 160, 400),
          "camera.png": ("camera", 60, 140, 192, 192), "astronaut.png": ("astronaut", 30, 170, 192, 192)}
PHOTOS = ("camera.png", "astronaut.png")


@pytest.fixture(scope="module")
def mixed(tmp_path_factory):
    folder = tmp_path_factory.mktemp("mixed")
    for name, (sample, row, col, height, width) in FOLDER.items():
        save_png(folder / name, sample_image(sample)[row:row + height, col:col + width])
    return folder


@needs_tesseract
@pytest.mark.slow
def test_text_share_counts_only_documents_and_shows_no_ocr_guess_of_a_photo(mixed, tmp_path):
    report = tmp_path / "report"
    argv = ["audit", str(mixed), "-o", str(report), "--keypoints", "300", "--workers", "2", "--quiet",
            "--title", "Quarterly <audit>"]
    assert main(argv) == 0
    rows = {os.path.basename(row["input"]): row for row in read_results(report)}
    assert {name for name, row in rows.items() if row["ocr_original"]} == {"titles.png", "card.png"}
    for name in PHOTOS:
        assert rows[name]["ocr_reconstruction"] is None and rows[name]["ocr_similarity"] is None
    [orb] = summarise(list(rows.values()))
    assert (orb["legible"], orb["with_text"]) == (2, 2)
    page = (report / "index.html").read_text()
    assert "<b>2 of 2</b>" in page and "Quarterly &lt;audit&gt;" in page and "<title>Quarterly &lt;audit&gt;" in page
    # what tesseract guesses in the photos never reaches the page (a control page without OCR holds the rest)
    control = render_html([{**row, "ocr_original": None, "ocr_reconstruction": None, "ocr_confidence": None}
                           for row in rows.values()])
    for name in PHOTOS:
        from lbdviewer.io.images import load_image

        guesses = {word["text"] for word in ocr_words(load_image(mixed / name)) if len(normalise_text(word["text"])) >= 2}
        for guess in guesses:
            escaped = guess.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            assert escaped not in re.sub(r"<[^>]+>", " ", page) or escaped in control, (name, guess)


def _row(name, descriptor, correlation, text="", similarity=None):
    return {**dict.fromkeys(COLUMNS), "input": f"/d/{name}", "descriptor": descriptor, "status": "ok",
            "correlation": correlation, "keypoints": 500, "ocr_original": text, "ocr_similarity": similarity,
            "ocr_confidence": 95.0 if text else 30.0}


def test_risk_levels_follow_the_stated_rule_and_rank_the_worst_first():
    rows = [_row("a.png", "orb", 0.62, "TOP SECRET", 0.9), _row("b.png", "orb", 0.6),
            _row("a.png", "brisk", 0.85), _row("b.png", "brisk", 0.82),
            _row("a.png", "akaze", 0.55, "TOP SECRET", 0.1), _row("b.png", "akaze", 0.5),
            _row("a.png", "freak", 0.3, "TOP SECRET", 0.2)]
    levels = {item["descriptor"]: item["risk"] for item in summarise(rows)}
    assert levels == {"orb": "high", "brisk": "high", "akaze": "medium", "freak": "low"}
    assert [item["descriptor"] for item in leak_ranking(summarise(rows))] == ["orb", "brisk", "akaze", "freak"]
    assert risk({"legible": 0, "with_text": 0, "median_correlation": 0.8})[0] == "high"  # the bound is inclusive
    page = render_html(rows)
    assert page.index("Summary") < page.index("Per descriptor") < page.index("Worst leaks first")
    assert "<b>orb leaks most</b>" in page and "Risk rule: high" in page
    assert "no legible text in the original" in page


def test_settings_versions_and_title_of_a_run_reach_the_report(tmp_path, mixed):
    folder = tmp_path / "report"
    image = mixed / "camera.png"
    argv = ["audit", str(image), "-o", str(folder), "--keypoints", "80", "--iterations", "3", "--no-ocr",
            "--workers", "1", "--quiet", "--title", "Camera check", "--pdf", str(tmp_path / "handout.pdf")]
    assert main(argv) == 0
    page = (folder / "index.html").read_text()
    assert "<h1>Camera check</h1>" in page and "keypoints per image</dt><dd>80" in page
    assert "opencv-contrib-python-headless" in page and "off (--no-ocr)" in page
    pdf = (tmp_path / "handout.pdf").read_bytes()
    assert pdf.startswith(b"%PDF") and b"/Title (Camera check)" in pdf
    if shutil.which("pdftotext"):
        text = subprocess.run(["pdftotext", str(tmp_path / "handout.pdf"), "-"], capture_output=True, text=True,
                              check=True).stdout
        assert "orb leaks most" in text and "Risk rule" in text and "Versions:" in text
    write_report(folder)  # rebuilt later from the folder alone: the run's title is kept
    assert "<h1>Camera check</h1>" in (folder / "index.html").read_text()


def test_audit_of_a_missing_path_exits_2_before_any_work(tmp_path, capsys):
    report = tmp_path / "report"
    assert main(["audit", str(tmp_path / "typo_dir"), "-o", str(report)]) == 2
    err = capsys.readouterr().err
    assert "typo_dir" in err and "does not exist" in err and err.startswith("lbdviewer audit: error:")
    assert not report.exists()


@pytest.mark.slow
def test_ctrl_c_prints_interrupted_and_no_worker_traceback(tmp_path, mixed):
    """A terminal's Ctrl-C signals the whole group: the command, its fork server and its workers."""
    command = [sys.executable, "-m", "lbdviewer", "audit", str(mixed), "-o", str(tmp_path / "report"), "--no-ocr",
               "--workers", "2", "--keypoints", "300"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               start_new_session=True,
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    first = process.stdout.readline()  # the pool is starting: its fork server imports its modules now
    assert "tasks to run" in first
    os.killpg(process.pid, signal.SIGINT)
    _, err = process.communicate(timeout=120)
    assert process.returncode == 130
    assert "lbdviewer: interrupted" in err and "Traceback" not in err, err


def test_handout_text_in_capitals_stays_inside_the_right_margin():
    """OCR text in capitals is wider than a count of characters allows: lines are measured in their font."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from lbdviewer.audit.handout import MARGIN, _page, _text
    from lbdviewer.figures.style import style_context

    text = "original: " + " / ".join(["IDENTITY CARD", "SURNAME MARTIN", "GIVEN NAMES CLAIRE ANNE",
                                      "NATIONALITY FRENCH", "PLACE OF BIRTH LYON", "ISSUED BY PREFECTURE DU RHONE"])
    with style_context():
        figure = _page()
        for x in (MARGIN, MARGIN + 0.42):  # the page's full width and the rows' text column
            _text(figure, 0.9, text, size=7.5, x=x)
        renderer = FigureCanvasAgg(figure).get_renderer()
        right = (1.0 - MARGIN) * figure.bbox.width
        for drawn, x in zip(figure.texts, (MARGIN, MARGIN + 0.42)):
            box = drawn.get_window_extent(renderer)
            assert box.x1 <= right + 1.0
            assert box.x1 > right - 0.15 * figure.bbox.width  # wrapped at the margin, not far inside it
            assert drawn.get_text().replace("\n", " ") == text  # every word kept, in order
