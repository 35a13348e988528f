"""The one look of every figure: the package's ``lbdviewer.mplstyle`` and the colours figures draw with.

The style file (package data, beside this module) sets the text sizes
(7 pt), line widths, ticks, spacing and fonts. The engine
(:mod:`lbdviewer.figures.engine`) draws every figure inside
:func:`style_context` and lays panels out with the very sizes the file sets
(:func:`style_value`), so a change there changes every figure. A plot drawn
beside the engine's figures (a curve in a gallery example, a
privacy-utility plot) gets the same look with ``with style_context(): ...``.

Colours are colour-blind safe: :data:`SEQUENTIAL` (viridis) for maps,
:data:`DIVERGING` (ColorBrewer's RdBu, reversed: blue below 0, red above)
for signed quantities such as a frame vector :math:`L_i`, and the
Okabe-Ito palette (:data:`OKABE_ITO`, also the style's line cycle) for
overlays and curves.

Examples
--------
>>> style_value("font.size"), style_value("pdf.fonttype")
(7.0, 42)
>>> import matplotlib
>>> with style_context():
...     matplotlib.rcParams["mathtext.fontset"]
'dejavusans'
"""

from __future__ import annotations

import functools
from pathlib import Path

import matplotlib

#: The style file every figure is drawn with.
STYLE = Path(__file__).with_name("lbdviewer.mplstyle")
#: Colour map of maps (weights, occurrences): sequential, perceptually uniform, colour-blind safe.
SEQUENTIAL = "viridis"
#: Colour map of signed quantities (:math:`L_i`, differences): diverging, symmetric around 0, colour-blind safe.
DIVERGING = "RdBu_r"
#: Okabe & Ito's colour-blind-safe palette (Color Universal Design, 2008).
OKABE_ITO = {"blue": "#0072B2", "orange": "#E69F00", "green": "#009E73", "vermillion": "#D55E00",
             "purple": "#CC79A7", "sky": "#56B4E9", "yellow": "#F0E442", "black": "#000000"}


@functools.cache
def style_params():
    """The settings of :data:`STYLE` (a :class:`matplotlib.RcParams`, read once)."""
    return matplotlib.rc_params_from_file(STYLE, use_default_template=False)


def style_value(key):
    """One setting of the style, e.g. ``style_value("axes.titlesize")`` (7.0 points)."""
    return style_params()[key]


def style_context():
    """A context in which matplotlib draws with the style (``with style_context(): ...``)."""
    return matplotlib.rc_context(rc=dict(style_params()))
