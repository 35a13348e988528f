"""The privacy–utility figure of one descriptor: what each defence leaves to an attacker against what it costs.

From the points of :func:`lbdviewer.defences.summary.summarise_defences`
(means over the inputs; leakage the higher of the aware and the naive
attacker's), :func:`tradeoff_figure` draws, against the mean matching
accuracy at 3 px (x, HPatches' MMA on the synthetic pairs):

(a) the correlation of the reconstruction with the original over the pixels
    the undefended features describe;
(b) when some input holds legible text, the share of its lines tesseract
    reads back.

One curve per defence, its points joined from the weakest to the strongest
and labelled with their strength; the undefended baseline is a black star.
The best place is the lower right: matching kept, nothing leaked. Built with
matplotlib's object-oriented API in the figures' one style
(:func:`lbdviewer.figures.style.style_context`, Okabe-Ito colours), saved by
:func:`lbdviewer.figures.engine.figure_bytes` (PNG at its dpi, PDF with
TrueType text, SVG with text as text) with the run record beside it.
"""

from __future__ import annotations

from pathlib import Path

from matplotlib.figure import Figure

from lbdviewer.evaluation.records import run_record, write_sidecar
from lbdviewer.figures.engine import DEFAULT_DPI, check_dpi, check_formats, check_width, figure_bytes
from lbdviewer.figures.layout import TICK_PT
from lbdviewer.figures.style import OKABE_ITO, style_context
from lbdviewer.io.files import atomic_write

__all__ = ["COLOURS", "draw_tradeoff", "tradeoff_figure", "write_tradeoff_figure"]

#: One colour per defence (Okabe-Ito, colour-blind safe).
COLOURS = {"rr": OKABE_ITO["blue"], "keep-bits": OKABE_ITO["vermillion"], "keep-keypoints": OKABE_ITO["green"],
           "keep-keypoints-aware": OKABE_ITO["purple"], "quantize": OKABE_ITO["orange"], "jitter": OKABE_ITO["sky"]}
#: Height of the figure, inches.
HEIGHT = 2.9


def _curves(points):
    curves = {}
    for point in points:
        if point["defence"] != "none":
            curves.setdefault(point["defence"], []).append(point)
    return curves


#: Smallest distance (axes fraction) between two strength labels; a label closer to one already drawn is left out.
LABEL_SPACING = 0.035


def draw_tradeoff(axes, points, value, ylabel):
    """Draw one panel of :func:`tradeoff_figure` into ``axes``: ``value`` of each point against MMA at 3 px."""
    baseline = next((p for p in points if p["defence"] == "none"), None)
    placed = [] if baseline is None or baseline[value] is None else [(baseline["matching_accuracy_3px"],
                                                                      baseline[value])]
    for kind, curve in _curves(points).items():
        shown = [p for p in curve if p[value] is not None and p["matching_accuracy_3px"] is not None]
        if not shown:
            continue
        colour = COLOURS.get(kind, "0.3")
        x = [p["matching_accuracy_3px"] for p in shown]
        y = [p[value] for p in shown]
        axes.plot(x, y, "-o", color=colour, label=kind)
        for p, xi, yi in zip(shown, x, y):
            if any(abs(xi - px) < LABEL_SPACING * 1.5 and abs(yi - py) < LABEL_SPACING for px, py in placed):
                continue  # the table beside the figure gives every number
            placed.append((xi, yi))
            axes.annotate(f"{p['strength']:g}", (xi, yi), textcoords="offset points", xytext=(3, 3),
                          fontsize=TICK_PT - 1, color=colour)
    if baseline is not None and baseline[value] is not None and baseline["matching_accuracy_3px"] is not None:
        axes.plot([baseline["matching_accuracy_3px"]], [baseline[value]], "*", color="black", markersize=9,
                  label="no defence", zorder=5)
    axes.set_xlim(-0.03, 1.03)
    axes.set_ylim(-0.03, 1.03)
    axes.set_xlabel("matching accuracy at 3 px (MMA, synthetic pairs)")
    axes.set_ylabel(ylabel)
    axes.grid(True, color="0.9", linewidth=0.5)
    axes.set_axisbelow(True)
    for side in ("top", "right"):
        axes.spines[side].set_visible(False)


def tradeoff_figure(points, *, descriptor, width="double"):
    """The figure of one descriptor's points (see the module notes).

    Parameters
    ----------
    points : list of dict
        :func:`~lbdviewer.defences.summary.summarise_defences` rows of ``descriptor``.
    descriptor : str
    width : {"single", "double"} or float

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> base = {"defence": "none", "strength": None, "matching_accuracy_3px": 0.9, "correlation": 0.9,
    ...         "text_share": None}
    >>> rr = {**base, "defence": "rr", "strength": 1.0, "matching_accuracy_3px": 0.4, "correlation": 0.8}
    >>> figure = tradeoff_figure([base, rr], descriptor="orb", width="single")
    >>> len(figure.axes), figure.axes[0].get_legend_handles_labels()[1]
    (1, ['rr', 'no defence'])
    """
    points = [p for p in points if p.get("descriptor", descriptor) == descriptor]
    text = any(p.get("text_share") is not None for p in points)
    inches = check_width(width)
    with style_context():
        figure = Figure(figsize=(inches, HEIGHT), layout="constrained")
        panels = figure.subplots(1, 2 if text else 1, squeeze=False)[0]
        draw_tradeoff(panels[0], points, "correlation", "leakage: correlation over described pixels")
        panels[0].set_title(f"(a) {descriptor.upper()}: what the better attacker rebuilds", loc="left")
        if text:
            draw_tradeoff(panels[1], points, "text_share", "leakage: share of text lines read back")
            panels[1].set_title("(b) text read back (inputs with legible text)", loc="left")
        handles, labels = panels[0].get_legend_handles_labels()
        figure.legend(handles, labels, loc="outside lower center", ncols=min(len(labels), 7))
    return figure


def write_tradeoff_figure(points, stem, *, descriptor, formats=("png", "pdf"), dpi=DEFAULT_DPI, width="double",
                          parameters=None):
    """Write ``stem.{png,pdf,...}`` of :func:`tradeoff_figure` and its run record ``stem.json``.

    Returns
    -------
    dict
        ``{format: path}`` of the files written, and ``"json"``.
    """
    formats, dpi = check_formats(formats), check_dpi(dpi)
    stem = Path(stem)
    if not stem.parent.is_dir():
        raise ValueError(f"output folder {str(stem.parent)!r} does not exist")
    figure = tradeoff_figure(points, descriptor=descriptor, width=width)
    written = {fmt: atomic_write(stem.with_name(f"{stem.name}.{fmt}"), figure_bytes(figure, fmt, dpi))
               for fmt in formats}
    shown = [p for p in points if p.get("descriptor", descriptor) == descriptor]
    record = run_record("figure:privacy-utility", parameters={"descriptor": descriptor, **(parameters or {})},
                        extra={"points": shown, "files": {fmt: path.name for fmt, path in written.items()}})
    written["json"] = write_sidecar(stem.with_name(f"{stem.name}.json"), record)
    return written
