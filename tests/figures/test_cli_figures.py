"""``lbdviewer figures``: the paper's figures as PNG (dpi recorded), PDF (text), SVG, a strict record and the caption
beside them (LaTeX), with progress, a list and a contact sheet."""

import re
import shutil
import subprocess

import numpy as np
import pytest
from PIL import Image

from lbdviewer._runtime import progress
from lbdviewer.cli.commands import figures as command
from lbdviewer.cli.main import main
from lbdviewer.evaluation.records import read_sidecar
from lbdviewer.figures import engine
from lbdviewer.figures.notation import html_text, solver_name


def _pdf_text(path):
    assert shutil.which("pdftotext"), "pdftotext (poppler-utils, scripts/install) is needed"
    return subprocess.run(["pdftotext", str(path), "-"], capture_output=True, text=True, check=True).stdout


def test_quick_weight_maps_and_offsets_in_three_formats(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["figures", str(out), "--quick", "--only", "weight-maps", "offsets", "--format", "png,pdf,svg"]) == 0
    for name, titles in (("weight-maps", ("(a) BRIEF, weights", "(d) FREAK, occurrences")),
                         ("offsets", ("(a) Noff = 32", "(h) Noff = 1"))):
        record = read_sidecar(out / f"{name}.json")                        # strict JSON, run-record schema
        with Image.open(out / f"{name}.png") as image:
            assert min(image.info["dpi"]) >= 299.99 and image.size[0] <= round(7.16 * 300)
            assert record["extra"]["figure"]["pixels"] == list(image.size)
        text = _pdf_text(out / f"{name}.pdf")
        # the artwork holds letters and short titles, mathtext set (no $ or _ printed), and not the caption
        assert all(title in text for title in titles), text
        assert "$" not in text and "_" not in text and "\\" not in text
        caption = (out / f"{name}.caption.txt").read_text(encoding="utf-8").strip()
        assert caption == record["extra"]["figure"]["caption"] and f"\\caption{{{caption}}}" in (
            out / f"{name}.tex").read_text(encoding="utf-8")
        assert not any(sentence.strip() and sentence.strip()[:40] in text for sentence in caption.split(". "))
        assert "<svg" in (out / f"{name}.svg").read_text()[:400]
        assert record["kind"] == f"figure:{name}" and record["parameters"]["quick"] is True
    with Image.open(out / "offsets.png") as image:
        assert image.size[0] == round(7.16 * 300)                      # eight panels fill the double column
    offsets = read_sidecar(out / "offsets.json")
    panels = offsets["extra"]["panels"]
    caption = offsets["extra"]["figure"]["caption"]
    for offset in (32, 16, 8, 1):
        joint = panels[f"joint offset {offset}"]
        assert joint["solver"]["mode"] == "joint" and joint["solver"]["iterations_requested"] == 30
        assert panels[f"patches offset {offset}"]["solver"]["method"] == "biht"
        assert joint["display"]["rule"] == "fit" and 0 < joint["metrics"]["correlation"] <= 1
    # the caption names the solvers that ran, as the runs recorded them, as the paper names them
    assert "(a)–(d): each patch solved alone by BIHT, overlaps averaged" in caption
    assert f"(e)–(h): the whole image solved at once by {solver_name(joint['solver']['method'])}." in caption
    assert offsets["source"]["name"] == "camera" and len(offsets["source"]["sha256"]) == 64
    assert "offsets.png" in capsys.readouterr().out


def test_a_bar_over_figures_and_panels_on_a_terminal(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(progress, "stderr_is_terminal", lambda: True)
    assert main(["figures", str(tmp_path), "--quick", "--only", "frame-vectors", "offsets", "--format", "png"]) == 0
    drawn = capsys.readouterr()
    assert "offsets panels:" in drawn.err and "2/2" in drawn.err.split("figures:")[-1]  # panels, then figures
    assert "offsets.png" in drawn.out
    assert main(["figures", str(tmp_path), "--quick", "--only", "frame-vectors", "--format", "png", "--quiet"]) == 0
    assert "figures:" not in capsys.readouterr().err


def test_a_figure_taller_than_a_page_says_how_to_fit_one(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(engine, "PAGE_HEIGHT", 1.0)  # frame-vectors is 1.9 in tall at one column
    assert main(["figures", str(tmp_path), "--quick", "--only", "frame-vectors", "--format", "png", "--width",
                 "single"]) == 0
    assert "note: frame-vectors is 1.9 in tall at 3.50 in wide, taller than a journal page: --dpi 600" in \
        capsys.readouterr().out
    assert read_sidecar(tmp_path / "frame-vectors.json")["extra"]["figure"]["taller_than_page"] is True


def test_list_says_what_each_figure_shows(capsys):
    assert main(["figures", "--list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines] == list(command.FIGURE_NAMES)
    assert all(len(line.split(None, 1)[1]) > 30 for line in lines)
    assert any(re.match(r"offsets\s+FREAK at grid offsets 32, 16, 8 and 1", line) for line in lines)
    assert main(["figures"]) == 2 and "outdir is required" in capsys.readouterr().err


def test_the_sheet_shows_every_figure_at_print_size_with_its_caption(tmp_path):
    assert main(["figures", str(tmp_path), "--quick", "--only", "frame-vectors", "weight-maps", "--format", "png",
                 "--sheet", "--shared-scale", "--quiet"]) == 0
    page = (tmp_path / "index.html").read_text(encoding="utf-8")
    for number, name in enumerate(("frame-vectors", "weight-maps"), start=1):
        figure = read_sidecar(tmp_path / f"{name}.json")["extra"]["figure"]
        assert f'<img src="{name}.png"' in page and f'width: {figure["width_in"]:.3f}in' in page
        assert f"<b>Figure {number}.</b> {html_text(figure['caption'])}" in page
    assert "<i>L</i><sub>512</sub>" in page and "$" not in page and "\\mathrm" not in page
    assert "each row on one colour scale" in page                          # --shared-scale reached weight-maps


def test_caption_inside_keeps_the_caption_in_the_artwork(tmp_path):
    assert main(["figures", str(tmp_path), "--quick", "--only", "frame-vectors", "--format", "pdf",
                 "--caption", "inside", "--quiet"]) == 0
    text = " ".join(_pdf_text(tmp_path / "frame-vectors.pdf").split())
    assert "The first and last four frame vectors Li of FREAK (M = 512" in text
    assert not (tmp_path / "frame-vectors.tex").exists() and not (tmp_path / "frame-vectors.caption.txt").exists()


def test_single_width_and_dpi(tmp_path):
    assert main(["figures", str(tmp_path), "--quick", "--only", "frame-vectors", "--width", "single",
                 "--dpi", "150", "--format", "png"]) == 0
    with Image.open(tmp_path / "frame-vectors.png") as image:
        assert image.size[0] == round(3.5 * 150) and round(image.info["dpi"][0]) == 150  # fills one column
        pixels = np.asarray(image.convert("RGB"))
    record = read_sidecar(tmp_path / "frame-vectors.json")
    assert record["extra"]["figure"]["pixels"] == [pixels.shape[1], pixels.shape[0]]
    assert not (tmp_path / "frame-vectors.pdf").exists()


@pytest.mark.parametrize("argv, message", [
    (["--format", "png,gif"], "formats must be some of"),
    (["--width", "triple"], "width must be 'single', 'double' or inches"),
    (["--dpi", "20"], "dpi must be an integer from 72 to 1200"),
])
def test_bad_options_are_refused_by_name(tmp_path, capsys, argv, message):
    assert main(["figures", str(tmp_path / "x"), "--quick", *argv]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "x").exists()


def test_the_command_lists_what_the_engine_makes_and_starts_without_matplotlib(tmp_path):
    import os
    import sys

    from lbdviewer.figures import CAPTION_PLACEMENTS, DEFAULT_DPI, FIGURES, FORMATS, WIDTHS

    assert command.FIGURE_NAMES == tuple(FIGURES) and command.FORMATS == FORMATS
    assert command.CAPTION_PLACEMENTS == CAPTION_PLACEMENTS
    assert command.WIDTHS == WIDTHS and command.DEFAULT_DPI == DEFAULT_DPI
    code = "import sys; from lbdviewer.cli.main import build_parser; build_parser(); print('matplotlib' in sys.modules)"
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "config"), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    assert done.stdout.strip() == "False" and not (tmp_path / "config").exists()
