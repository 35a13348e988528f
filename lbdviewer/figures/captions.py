r"""Captions beside the artwork: ``NAME.caption.txt``, ``NAME.tex``, and the contact sheet of a folder of figures.

A journal sets a figure's caption in the manuscript, not in the artwork. So
:func:`lbdviewer.figures.engine.save_figure` writes, beside ``NAME.pdf``:

``NAME.caption.txt``
    The caption as LaTeX (:func:`lbdviewer.figures.notation.latex_text`:
    numbers and symbols in math mode), the very text of the record's
    ``extra.figure.caption`` and of the ``\caption{}`` in ``NAME.tex``.
``NAME.tex``
    A ready ``figure`` environment (:func:`latex_figure`):
    ``\includegraphics[width=\linewidth]{NAME}``, the caption and
    ``\label{fig:NAME}``; ``figure*`` (both columns) when wider than one
    column. ``\input{NAME}`` it in a document that loads ``graphicx``.

:func:`write_sheet` writes ``index.html`` for a folder of figures: each at
its print size (CSS inches) with its caption, so an author checks the whole
set by eye in one place.

Examples
--------
>>> print(latex_figure("offsets", "FREAK at $N_{\\mathrm{off}} = 8$.", width_in=7.16, fills_column=True))
% offsets.tex (lbdviewer): \input{offsets} in a document that loads graphicx; the artwork is offsets.pdf (or .png).
% 7.16 in wide: the full width of the column it was made for.
\begin{figure*}[tbp]
  \centering
  \includegraphics[width=\linewidth]{offsets}
  \caption{FREAK at $N_{\mathrm{off}} = 8$.}
  \label{fig:offsets}
\end{figure*}
"""

from __future__ import annotations

import html
import re
from pathlib import Path

from lbdviewer.evaluation.records import read_sidecar
from lbdviewer.figures.notation import html_text
from lbdviewer.io.files import atomic_write

#: A figure wider than this (inches: one column of a two-column paper) spans both columns (``figure*``).
SINGLE_COLUMN = 3.5
#: File name of the contact sheet.
SHEET = "index.html"


def latex_label(name):
    """``fig:NAME`` with every character a label should not hold replaced by ``-``.

    Examples
    --------
    >>> latex_label("weight maps (shared)")
    'fig:weight-maps--shared-'
    """
    return "fig:" + re.sub(r"[^A-Za-z0-9.:_-]", "-", name)


def latex_figure(name, caption, *, width_in, fills_column):
    r"""The LaTeX ``figure`` environment of the figure ``name`` with its ``caption`` (LaTeX).

    Parameters
    ----------
    name : str
        The file name without extension (what ``\includegraphics`` reads).
    caption : str
        LaTeX (:func:`lbdviewer.figures.notation.latex_text`).
    width_in : float
        The figure's width, inches.
    fills_column : bool
        The figure is as wide as the column it was made for: it is included
        at ``\linewidth``. A figure sized to a narrower content is included
        at its own width instead, so its 7 pt text stays 7 pt.

    Returns
    -------
    str
    """
    environment = "figure*" if width_in > SINGLE_COLUMN + 1e-6 else "figure"
    size = r"\linewidth" if fills_column else f"{width_in:.2f}in"
    why = ("the full width of the column it was made for" if fills_column else
           "as wide as its content, narrower than the column: included at its own width, so its text stays 7 pt")
    return "\n".join([
        rf"% {name}.tex (lbdviewer): \input{{{name}}} in a document that loads graphicx; "
        f"the artwork is {name}.pdf (or .png).",
        f"% {width_in:.2f} in wide: {why}.",
        rf"\begin{{{environment}}}[tbp]",
        r"  \centering",
        rf"  \includegraphics[width={size}]{{{name}}}",
        rf"  \caption{{{caption}}}",
        rf"  \label{{{latex_label(name)}}}",
        rf"\end{{{environment}}}",
    ])


def write_caption_files(stem, layout):
    """Write ``stem.caption.txt`` and ``stem.tex`` from a layout of :func:`~lbdviewer.figures.engine.render_figure`.

    Returns
    -------
    dict
        ``{"caption": path, "tex": path}``.
    """
    stem = Path(stem)
    caption = layout["caption"]
    tex = latex_figure(stem.name, caption, width_in=layout["width_in"], fills_column=layout["fills_column"])
    return {"caption": atomic_write(stem.with_name(f"{stem.name}.caption.txt"), (caption + "\n").encode("utf-8")),
            "tex": atomic_write(stem.with_name(f"{stem.name}.tex"), (tex + "\n").encode("utf-8"))}


_STYLE = """
body { font-family: "DejaVu Sans", "Helvetica", sans-serif; margin: 0.4in; background: #e9e9e9; color: #111; }
h1 { font-size: 14pt; margin: 0 0 0.05in 0; }
p.note { font-size: 9pt; color: #444; margin: 0 0 0.3in 0; }
figure { background: white; margin: 0 0 0.35in 0; padding: 0.25in; width: fit-content;
         box-shadow: 0 1px 4px rgba(0, 0, 0, 0.25); }
figure img { display: block; outline: 1px dashed #bbb; }
figcaption { font-size: 9pt; line-height: 1.35; margin-top: 0.12in; }
figcaption .facts { display: block; color: #666; font-size: 8pt; margin-top: 0.05in; }
@media print { body { background: white; margin: 0; } figure { box-shadow: none; break-inside: avoid; } }
"""


def _sheet_entry(folder, name, number):
    record = read_sidecar(folder / f"{name}.json")
    figure = record["extra"]["figure"]
    files = figure.get("files", {})
    artwork = next((files[fmt] for fmt in ("png", "svg") if fmt in files), None)
    width, height = figure["width_in"], figure["height_in"]
    column = figure.get("column_in", width)
    if artwork is None:
        picture = (f'<p>No PNG or SVG of {html.escape(name)} was written (formats: '
                   f'{html.escape(", ".join(figure.get("formats", [])))}); make it with --format png.</p>')
    else:
        picture = (f'<img src="{html.escape(artwork)}" alt="{html.escape(name)}" '
                   f'style="width: {width:.3f}in; height: {height:.3f}in">')
    quick = " Quick preview (small crops, few iterations)." if record["parameters"].get("quick") else ""
    facts = (f"{name}: {width:.2f} \u00d7 {height:.2f} in ({'fills' if figure.get('fills_column') else 'within'} "
             f"a {column:.2f} in column), {figure['dpi']} dpi; files: {', '.join(sorted(files.values()))}, "
             f"{name}.json.{quick}")
    caption = figure.get("caption", "")
    return (f'<figure id="{html.escape(name)}">\n{picture}\n'
            f'<figcaption style="max-width: {max(column, width):.3f}in"><b>Figure {number}.</b> '
            f'{html_text(caption)}<span class="facts">{html.escape(facts)}</span></figcaption>\n</figure>')


def write_sheet(folder, names):
    """Write ``folder/index.html``: each figure ``names`` at its print size, with its caption, in order.

    Sizes are CSS inches (exact when printed; 96 pixels an inch on a screen,
    so a browser at 100 % shows the figures as large as they print on a
    96 dpi display). Captions come from each figure's record, math set in
    HTML (:func:`lbdviewer.figures.notation.html_text`).

    Parameters
    ----------
    folder : str or os.PathLike
        Holds ``NAME.json`` and ``NAME.png`` (or ``.svg``) of each name.
    names : sequence of str

    Returns
    -------
    pathlib.Path
        The sheet.

    Raises
    ------
    ValueError
        If a figure's record is missing or not a run record.
    """
    folder = Path(folder)
    missing = [name for name in names if not (folder / f"{name}.json").is_file()]
    if missing:
        raise ValueError(f"names must be figures in {str(folder)!r} (NAME.json), missing {missing}")
    entries = "\n".join(_sheet_entry(folder, name, number) for number, name in enumerate(names, start=1))
    page = (f'<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
            f'<title>lbdviewer figures: {html.escape(folder.name)}</title>\n<style>{_STYLE}</style>\n</head>\n'
            f'<body>\n<h1>lbdviewer figures in {html.escape(folder.name)}</h1>\n'
            f'<p class="note">Each figure at its print size (dashed: its edge) with the caption the manuscript '
            f'sets beside it (NAME.tex, NAME.caption.txt).</p>\n{entries}\n</body>\n</html>\n')
    return atomic_write(folder / SHEET, page.encode("utf-8"))
