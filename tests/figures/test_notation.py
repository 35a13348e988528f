"""The paper's notation: names, pair numbers from 1, and one caption text that is mathtext, LaTeX and HTML."""

import pytest

from lbdviewer.figures.captions import latex_figure, latex_label
from lbdviewer.figures.notation import (html_text, latex_text, letter, letter_span, run_title, solver_name,
                                        split_math)
from lbdviewer.patterns.base import pair_label, pair_number
from lbdviewer.reconstruction.image import METHODS


def test_solvers_are_named_as_the_paper_names_them():
    assert solver_name("biht") == "BIHT" and solver_name("primal-dual") == "primal\u2013dual"  # en dash
    assert all(solver_name(method) != method or method in ("likelihood", "coherent") for method in METHODS)
    assert run_title(descriptor="ra-freak", m=512, patch_size=32, offset=8, solver="biht", mode="patches") == (
        "RA-FREAK, $M = 512$, $32 \\times 32$ patches, $N_{\\mathrm{off}} = 8$, BIHT (patchwise)")


def test_pairs_are_numbered_from_one_everywhere():
    assert [pair_number(row) for row in (0, 1, 511)] == [1, 2, 512]
    assert pair_label(0) == "L\u2081" and pair_label(511) == "L\u2085\u2081\u2082" and pair_label(9, math=True) == "$L_{10}$"
    for bad in (-1, 1.5, True):
        with pytest.raises(ValueError, match="row must be an integer from 0"):
            pair_number(bad)


def test_letters_run_past_z():
    assert [letter(k) for k in (0, 25, 26, 27)] == ["(a)", "(z)", "(aa)", "(ab)"]
    assert letter_span(4, 7) == "(e)\u2013(h)" and letter_span(2, 2) == "(c)"


def test_latex_escapes_what_latex_reads_otherwise_and_leaves_math_alone():
    text = "41 % & #3 of a_b {x} ~ ^ \\ ±0.5, 32×32, λ = 0.1, $\\lambda = 0.5$, $L_{12}$, $41\\%$, \\$5"
    assert latex_text(text) == ("41 \\% \\& \\#3 of a\\_b \\{x\\} \\textasciitilde{} \\textasciicircum{} "
                                "\\textbackslash{} $\\pm$0.5, 32$\\times$32, $\\lambda$ = 0.1, $\\lambda = 0.5$, "
                                "$L_{12}$, $41\\%$, \\$5")
    assert latex_text("in math: $32×32$") == "in math: $32\\times 32$"
    assert split_math("a \\$ b $c$") == [(False, "a \\$ b "), (True, "c")]
    with pytest.raises(ValueError, match=r"\$ left open"):
        latex_text("an open $x")


def test_html_sets_the_math_subset_figures_use():
    latex = latex_text("$N_{\\mathrm{off}} = 8$, $L_{509}$, $\\pm 0.012$, $32 \\times 32$, 41 %, a_b, "
                       "$\\lambda = 0.5$, $\\ell_1$, <b>")
    assert html_text(latex) == ("<i>N</i><sub>off</sub> = 8, <i>L</i><sub>509</sub>, ±0.012, 32 × 32, 41 %, a_b, "
                                "λ = 0.5, ℓ<sub>1</sub>, &lt;b&gt;")
    with pytest.raises(ValueError, match="has no HTML form"):
        html_text("$\\frac{1}{2}$")


def test_the_latex_figure_takes_one_or_both_columns_and_its_own_width_when_narrower():
    wide = latex_figure("offsets", "C.", width_in=7.16, fills_column=True)
    assert "\\begin{figure*}" in wide and "\\includegraphics[width=\\linewidth]{offsets}" in wide
    narrow = latex_figure("lone", "C.", width_in=1.75, fills_column=False)
    assert "\\begin{figure}" in narrow and "\\includegraphics[width=1.75in]{lone}" in narrow
    assert latex_label("my figure #2") == "fig:my-figure--2"
