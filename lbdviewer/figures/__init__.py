"""Figures for papers: one matplotlib engine for the app's exports and ``lbdviewer figures``.

Public entry points (everything the app and the CLI need):

Engine (:mod:`lbdviewer.figures.engine`)
    :class:`FigureSpec`, :class:`Panel`, :class:`Segments`, :class:`Circles` —
    plain arrays and a small spec; :func:`save_figure` (``stem.png`` with its
    dpi, ``stem.pdf`` with TrueType text, ``stem.svg``, and the run record
    ``stem.json``); :func:`render_figure` (the matplotlib
    :class:`~matplotlib.figure.Figure` and its pixel layout);
    :func:`run_title`; :data:`WIDTHS` (``single`` 3.5 in, ``double``
    7.16 in), :data:`FORMATS`, :data:`DEFAULT_FORMATS`, :data:`DEFAULT_DPI`,
    :data:`DIVERGING` (the colour map of signed quantities).
Figure kinds of the app (:mod:`lbdviewer.figures.kinds`)
    :func:`patch_pattern_figure`, :func:`live_figure`, :func:`maps_figure`,
    :func:`whole_image_figure`, :func:`families_figure` — pure functions of
    arrays and metadata returning a :class:`FigureSpec`.
The paper's set (:mod:`lbdviewer.figures.paper`)
    :data:`FIGURES`, :func:`make_figure`, :func:`write_figure`; the ``leakage``
    comparison of descriptors is in :mod:`lbdviewer.figures.leakage`.

The run record written beside each figure is built by :mod:`lbdviewer.evaluation.records`
from what ran; images are shown by the one rule of :mod:`lbdviewer.evaluation.display`.

Examples
--------
A figure of an app view, written as PNG and PDF with its record:

>>> import tempfile, pathlib
>>> spec = whole_image_figure(np.eye(16), 2 * np.eye(16) + 1, metrics={"correlation": 1.0})
>>> with tempfile.TemporaryDirectory() as folder:
...     written = save_figure(spec, pathlib.Path(folder) / "result", width="single", dpi=150)
...     sorted(path.name for path in written.values())
['result.json', 'result.pdf', 'result.png']
"""

from __future__ import annotations

from pathlib import Path

import numpy as np  # noqa: F401  (used by the doctest above)

from lbdviewer.figures.engine import (DEFAULT_DPI, DEFAULT_FORMATS, DIVERGING, FORMATS, WIDTHS, Circles, FigureSpec, Panel,
                                      Segments, render_figure, run_title, save_figure)
from lbdviewer.figures.kinds import (families_figure, live_figure, maps_figure, patch_pattern_figure,
                                     whole_image_figure)
from lbdviewer.figures.leakage import leakage_csv
from lbdviewer.figures.paper import FIGURES, make_figure
from lbdviewer.io.files import atomic_write


def write_figure(folder, name, *, quick=False, formats=DEFAULT_FORMATS, dpi=DEFAULT_DPI, width="double"):
    """Make the paper's figure ``name`` and write ``folder/NAME.{png,pdf,svg}`` and ``folder/NAME.json``.

    A figure whose record holds a table (``extra["table"]``, e.g. ``leakage``)
    also gets it as ``folder/NAME.csv``.

    Returns
    -------
    dict
        ``{format: path}`` of the files written, and ``"json"`` (and ``"csv"``).
    """
    spec, record = make_figure(name, quick=quick)
    written = save_figure(spec, Path(folder) / name, formats=formats, dpi=dpi, width=width, record=record)
    table = (record.get("extra") or {}).get("table")
    if table is not None:
        written["csv"] = Path(folder) / f"{name}.csv"
        atomic_write(written["csv"], leakage_csv(table).encode("utf-8"))
    return written


__all__ = ["DEFAULT_DPI", "DEFAULT_FORMATS", "DIVERGING", "FIGURES", "FORMATS", "WIDTHS", "Circles", "FigureSpec", "Panel",
           "Segments", "families_figure", "live_figure", "make_figure", "maps_figure", "patch_pattern_figure",
           "render_figure", "run_title", "save_figure", "whole_image_figure", "write_figure"]
