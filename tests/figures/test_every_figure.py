"""Every figure the engine makes (the paper's set, quick, and the app's kinds) at one and two columns.

Measured with the renderer: every text inside the figure, none over another or over an image, every title on
one line in the style's size; the figure no wider than asked and, when narrower, as wide as its content. Then
the captions (LaTeX and HTML forms of the paper's notation) and the records (each panel's run).
"""

import re
import shutil
import subprocess

import numpy as np
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.text import Text

from lbdviewer.evaluation.leakage import LeakRow
from lbdviewer.figures import (FIGURES, families_figure, live_figure, make_figure, maps_figure, patch_pattern_figure,
                               render_figure, whole_image_figure)
from lbdviewer.figures.captions import latex_figure
from lbdviewer.figures.layout import FILL_SHARE
from lbdviewer.figures.leakage import leakage_spec
from lbdviewer.figures.notation import html_text, latex_text, run_title
from lbdviewer.figures.style import style_value
from lbdviewer.operators.descriptor import DescriptorOperator
from lbdviewer.patterns.families import make_pattern

WIDTHS = {"single": 3.5, "double": 7.16}


def _leakage():
    """The leakage figure from synthetic rows (its inversions are tested in tests/evaluation)."""
    rng = np.random.default_rng(3)
    image = rng.random((160, 160))
    covered = np.zeros((160, 160), bool)
    covered[20:140, 30:130] = True
    rows = [LeakRow(name, 0 if name == "opencv-freak" else 60, 256, 4000, np.nan if name == "opencv-freak" else r,
                    0.4, 0.97, None, 4, 1.0, np.where(covered, rng.random((160, 160)), 0.0),
                    covered if name != "opencv-freak" else ~covered & False)
            for name, r in (("opencv-brief", 0.83), ("brisk", 0.78), ("teblid", 0.76), ("beblid", 0.76),
                            ("skimage-brief", 0.76), ("akaze", 0.75), ("orb", 0.72), ("opencv-freak", 0.0))]
    return leakage_spec(image, rows, source_name="a 160 x 160 crop of camera", n_keypoints=60, quick=True)[0]


def _app_kinds():
    rng = np.random.default_rng(4)
    brief, freak = (make_pattern(name, patch_size=32, m=128) for name in ("brief", "freak"))
    patch = rng.random((32, 32))
    operator = DescriptorOperator(brief)
    maps = [(run_title(descriptor=p.name, m=p.m), DescriptorOperator(p).weight_map(),
             DescriptorOperator(p).occurrence_map()) for p in (brief, freak)]
    image = rng.random((96, 96))
    return {
        "app patch": patch_pattern_figure(patch, brief, selected=76, title=run_title(descriptor="brief", m=128)),
        "app live": live_figure(patch, patch + 0.1 * rng.random((32, 32)), iteration=40, iterations=40,
                                bit_consistency=0.98, title=run_title(descriptor="brief", m=128, solver="biht")),
        "app maps": maps_figure(maps, frame_vectors=[(maps[0][0], 76, operator.frame_vector(76))]),
        "app maps shared": maps_figure(maps, shared_scale=True),
        "app whole": whole_image_figure(image, image ** 2, edges=True, metrics={"correlation": 0.9, "psnr": 20.0},
                                        title=run_title(descriptor="brief", m=128, patch_size=32, offset=8,
                                                        solver="consistency", mode="joint")),
        "app feature file": whole_image_figure(None, rng.random((512, 512)), keypoints=500,
                                               title=run_title(descriptor="orb", keypoints=500,
                                                               solver="consistency", mode="joint")),
        "app families": families_figure(patch, [(run_title(descriptor=f, m=m), rng.random((32, 32)))
                                                for f, m in (("brief", 128), ("freak", 128), ("ra-freak", 128),
                                                             ("ex-freak", 903))],
                                        title=run_title(patch_size=32, solver="biht")),
    }


@pytest.fixture(scope="module")
def made():
    """``{name: (spec, record or None)}`` of every figure."""
    figures = {name: make_figure(name, quick=True) for name in FIGURES if name != "leakage"}
    figures["leakage"] = (_leakage(), None)
    figures.update({name: (spec, None) for name, spec in _app_kinds().items()})
    return figures


def _texts(figure):
    canvas = FigureCanvasAgg(figure)
    canvas.draw()
    renderer = canvas.get_renderer()
    texts = [t for t in figure.findobj(Text) if t.get_visible() and t.get_text().strip()]
    return renderer, texts


@pytest.mark.parametrize("width", list(WIDTHS))
def test_text_lies_inside_overlaps_nothing_and_titles_stay_on_one_line(made, width):
    for name, (spec, _) in made.items():
        figure, layout = render_figure(spec, width=width, dpi=300)
        renderer, texts = _texts(figure)
        frame = figure.bbox
        images = [ax.get_window_extent(renderer) for ax in figure.axes if ax.images]
        boxes = [(t.get_text(), t.get_window_extent(renderer)) for t in texts]
        for text, box in boxes:
            assert frame.x0 <= box.x0 and box.x1 <= frame.x1 and frame.y0 <= box.y0 and box.y1 <= frame.y1, \
                f"{name} at {width}: {text!r} outside the figure"
            assert not any(box.overlaps(image) for image in images), f"{name} at {width}: {text!r} over an image"
        for k, (text, box) in enumerate(boxes):
            for other, other_box in boxes[k + 1:]:
                assert not box.overlaps(other_box), f"{name} at {width}: {text!r} overlaps {other!r}"
        drawn = {t.get_text() for t in texts}
        panels = [panel for row in spec.rows for panel in row]
        for panel, placed in zip(panels, layout["panels"]):
            title = " ".join(part for part in (placed["letter"], panel.title) if part)
            assert title in drawn, f"{name} at {width}: title {title!r} wrapped or missing"
        assert [p["letter"] for p in layout["panels"]] == (
            [f"({chr(97 + k)})" for k in range(len(panels))] if len(panels) > 1 else [""])
        assert {round(t.get_fontsize(), 2) for t in texts} == {style_value("font.size")}, name
        column = WIDTHS[width]
        assert layout["width_in"] <= column + 1e-9 and layout["fills_column"] == (abs(layout["width_in"] - column)
                                                                                 < 1 / 300), name
        if not layout["fills_column"]:  # as wide as its content: the widest row touches the margins
            right = max(p["x"] + p["width"] for p in layout["panels"])
            assert layout["width_in"] < FILL_SHARE * column + 0.1 and right <= layout["pixels"][0], name


def test_figures_are_sized_to_their_content(made):
    # a lone 512-pixel panel is not centred in a double column; eight panels fill it
    lone = render_figure(made["app feature file"][0], width="double", dpi=300)[1]
    assert lone["width_in"] == pytest.approx(512 / 300 + 2 * style_value("savefig.pad_inches"), abs=0.01)
    assert render_figure(made["offsets"][0], width="double", dpi=300)[1]["fills_column"]


def test_captions_are_latex_with_numbers_in_math_and_become_html(made):
    for name, (spec, _) in made.items():
        latex = latex_text(spec.caption)
        outside = re.sub(r"\$[^$]*\$", "", latex)
        assert not re.search(r"(?<!\\)[%&#_^]", outside), f"{name}: {outside!r}"
        assert not re.search(r"[×λσ±−ℓΔ≥≤]", outside), f"{name}: a symbol outside math in {outside!r}"
        assert not re.search(r"N_off|L_i\b|\bM=\d|\blambda\b", outside), f"{name}: plain notation in {outside!r}"
        html = html_text(latex)
        assert not re.search(r"[$\\{}_^]", html), f"{name}: {html!r}"
        assert latex.endswith(".") and len(latex) > 60, name


def test_every_figure_with_runs_records_each_panels_run(made):
    for name, (_, record) in made.items():
        if record is None or name in ("frame-vectors", "weight-maps"):
            continue
        panels = record["extra"]["panels"]
        assert panels, name
        for key, panel in panels.items():
            solver = panel["solver"]
            assert solver["method"] in ("biht", "primal-dual", "consistency") and solver["mode"] in ("patches",
                                                                                                    "joint")
            assert 0 <= solver["iterations_run"] <= solver["iterations_requested"], (name, key)  # 0: consistent at once
            assert solver["stopped_early"] == (solver["iterations_run"] < solver["iterations_requested"])
            assert (solver["stop_reason"] is not None) == solver["stopped_early"], (name, key)
            assert (solver["bit_consistency"] is None) == (name == "fast-real"), (name, key)  # real values: no bits
            assert panel["seconds"] > 0 and -1 <= panel["metrics"]["correlation"] <= 1, (name, key)
        assert record["seconds"] == pytest.approx(sum(p["seconds"] for p in panels.values()))
        methods = {(p["solver"]["method"], p["solver"]["mode"]) for p in panels.values()}
        top = record["solver"]  # the panels read as one batch when they ran one solver, else null
        assert (top is None) == (len(methods) > 1), name
        if top is not None:
            assert top["rows"] == len(panels) and top["iterations_run"] == max(
                p["solver"]["iterations_run"] for p in panels.values()), name


@pytest.mark.skipif(shutil.which("pdflatex") is None, reason="no TeX engine (apt-get install texlive-latex-base)")
def test_the_latex_figures_compile(made, tmp_path):
    body = []
    for k, (name, (spec, _)) in enumerate(made.items()):
        stem = f"figure{k}"
        figure, layout = render_figure(spec, width="single" if k % 2 else "double", dpi=72)
        figure.savefig(tmp_path / f"{stem}.pdf")
        body.append(latex_figure(stem, layout["caption"], width_in=layout["width_in"],
                                 fills_column=layout["fills_column"]))
    document = "\\documentclass[twocolumn]{article}\n\\usepackage{graphicx}\n\\begin{document}\n" + \
        "\n".join(body) + "\n\\end{document}\n"
    (tmp_path / "paper.tex").write_text(document, encoding="utf-8")
    done = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", "paper.tex"], cwd=tmp_path,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-3000:]
    assert "Missing $" not in done.stdout and "Undefined control sequence" not in done.stdout
