"""Figures for papers: one matplotlib engine, one style and the paper's notation, for the app's exports and ``lbdviewer figures``.

Public entry points (everything the app, the CLI and the documentation need):

Engine (:mod:`lbdviewer.figures.engine`)
    :class:`FigureSpec`, :class:`Panel`, :class:`Segments`, :class:`Circles` —
    plain arrays and a small spec; :func:`save_figure` (``stem.png`` with its
    dpi, ``stem.pdf`` with TrueType text, ``stem.svg``, the run record
    ``stem.json`` and, beside the artwork, the caption in ``stem.caption.txt``
    and ``stem.tex``); :func:`render_figure` (the matplotlib
    :class:`~matplotlib.figure.Figure` and its pixel layout); :class:`FigureProgress`;
    :data:`WIDTHS` (``single`` 3.5 in, ``double`` 7.16 in), :data:`FORMATS`,
    :data:`DEFAULT_FORMATS`, :data:`DEFAULT_DPI`, :data:`CAPTION_PLACEMENTS`.
Style and notation (:mod:`lbdviewer.figures.style`, :mod:`lbdviewer.figures.notation`)
    :func:`style_context` (the package's ``lbdviewer.mplstyle``),
    :data:`SEQUENTIAL` and :data:`DIVERGING` (colour-blind-safe colour maps);
    :func:`run_title`, :func:`solver_name`, :func:`latex_text`, :func:`html_text`.
Figure kinds of the app (:mod:`lbdviewer.figures.kinds`)
    :func:`patch_pattern_figure`, :func:`live_figure`, :func:`maps_figure`,
    :func:`whole_image_figure`, :func:`families_figure` — pure functions of
    arrays and metadata returning a :class:`FigureSpec`.
The paper's set (:mod:`lbdviewer.figures.paper`)
    :data:`FIGURES`, :func:`figure_summaries`, :func:`iter_figure`,
    :func:`make_figure`, :func:`write_figure`; the ``leakage`` comparison of
    descriptors is in :mod:`lbdviewer.figures.leakage`; the contact sheet of a
    folder of figures, :func:`write_sheet`, in :mod:`lbdviewer.figures.captions`.

Names load on first use: importing this package does not import matplotlib.
The run record written beside each figure is built by :mod:`lbdviewer.evaluation.records`
from what ran; images are shown by the one rule of :mod:`lbdviewer.evaluation.display`.

Examples
--------
A figure of an app view, written as PNG and PDF with its record and caption:

>>> import tempfile, pathlib
>>> import numpy as np
>>> from lbdviewer.figures import save_figure, whole_image_figure
>>> spec = whole_image_figure(np.eye(16), 2 * np.eye(16) + 1, metrics={"correlation": 1.0})
>>> with tempfile.TemporaryDirectory() as folder:
...     written = save_figure(spec, pathlib.Path(folder) / "result", width="single", dpi=150)
...     sorted(path.name for path in written.values())
['result.caption.txt', 'result.json', 'result.pdf', 'result.png', 'result.tex']
"""

from lbdviewer._lazy import lazy_namespace

__getattr__, __dir__, __all__ = lazy_namespace(__name__, {
    "engine": "engine",
    "CAPTION_PLACEMENTS": "engine",
    "DEFAULT_DPI": "engine",
    "DEFAULT_FORMATS": "engine",
    "FORMATS": "engine",
    "WIDTHS": "engine",
    "Circles": "engine",
    "FigureProgress": "engine",
    "FigureSpec": "engine",
    "Panel": "engine",
    "Segments": "engine",
    "render_figure": "engine",
    "save_figure": "engine",
    "DIVERGING": "style",
    "SEQUENTIAL": "style",
    "style_context": "style",
    "html_text": "notation",
    "latex_text": "notation",
    "run_title": "notation",
    "solver_name": "notation",
    "families_figure": "kinds",
    "live_figure": "kinds",
    "maps_figure": "kinds",
    "patch_pattern_figure": "kinds",
    "whole_image_figure": "kinds",
    "FIGURES": "paper",
    "figure_summaries": "paper",
    "iter_figure": "paper",
    "make_figure": "paper",
    "write_figure": "paper",
    "write_sheet": "captions",
})
