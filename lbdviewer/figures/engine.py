"""The figure engine: plain arrays and a small spec in, a matplotlib figure (PNG, PDF, SVG) out.

A :class:`FigureSpec` is rows of :class:`Panel` s (an image, a title, an
optional colour bar and overlays) and a caption. :func:`render_figure` lays
them out in **output pixels** and builds a :class:`matplotlib.figure.Figure`
with the object-oriented API only (no pyplot state); :func:`save_figure`
writes ``stem.png``, ``stem.pdf``, ``stem.svg`` and the run record
``stem.json``.

Pixel-exact insets
    Every image is enlarged by an integer factor ``s`` with ``np.repeat``
    (nearest neighbour) and its axes is placed on whole output pixels, exactly
    ``s`` times the image's size: matplotlib then draws the array one array
    pixel to one output pixel (``interpolation="nearest"``), so nothing is
    resampled at the output dpi. ``s`` is the largest integer that fits the
    panel's share of the width (and :attr:`FigureSpec.max_inset_height`);
    panels of one source shape get one ``s`` across the figure, so they are
    comparable. A row too wide for even ``s = 1`` is wrapped onto more rows.
Vector everything else
    Titles, colour bars, ticks, overlays and the caption are vector in PDF and
    SVG; PDF fonts are embedded as TrueType (``pdf.fonttype = 42``) so the text
    can be searched and edited, SVG keeps text as text.
Nothing clipped
    Titles and the caption are wrapped by measuring the text with the Agg
    renderer; the space for each colour bar's ticks and label is measured
    from the very strings it will draw.

Examples
--------
>>> spec = FigureSpec(kind="demo", rows=((Panel(np.eye(4), title="identity"),),), caption="A test.")
>>> figure, layout = render_figure(spec, width="single", dpi=100)
>>> layout["panels"][0]["letter"], layout["panels"][0]["scale"] >= 1
('(a)', True)
"""

from __future__ import annotations

import io as _io
from dataclasses import dataclass, field
from pathlib import Path

import matplotlib
import numpy as np
from matplotlib.cm import ScalarMappable
from matplotlib.collections import EllipseCollection, LineCollection
from matplotlib.colors import Normalize
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from lbdviewer.figures.layout import (BAR_GAP, BAR_WIDTH, CAPTION_PT, FONT, LABEL_PAD_PT, LINE_SPACING, PAD,
                                      TICK_LENGTH_PT, TICK_PAD_PT, TICK_PT, Measure, bar_label, place, shape_of,
                                      tick_label, ticks)
from lbdviewer.io.images import to_uint8, upscale
from lbdviewer.io.files import atomic_write
from lbdviewer.evaluation.records import check_record, run_record, write_sidecar

#: Figure widths by name, in inches (a two-column paper's single and double column).
WIDTHS = {"single": 3.5, "double": 7.16}
#: Formats :func:`save_figure` writes.
FORMATS = ("png", "pdf", "svg")
DEFAULT_FORMATS = ("png", "pdf")
DEFAULT_DPI = 300
DPI_RANGE = (72, 1200)
#: Diverging colour map for signed quantities (blue below 0, red above).
DIVERGING = "RdBu_r"
FRAME_PT = 0.4
FRAME_COLOR = "0.35"
_RC = {"pdf.fonttype": 42, "ps.fonttype": 42, "svg.fonttype": "none", "font.family": FONT,
       "axes.linewidth": 0.5, "svg.hashsalt": "lbdviewer"}


@dataclass(frozen=True)
class Segments:
    """Line segments drawn over an image, in its pixel coordinates (pixel centres at integers).

    Attributes
    ----------
    lines : ndarray, shape (K, 2, 2)
        ``[[x0, y0], [x1, y1]]`` per segment (``x`` = column, ``y`` = row).
    color : str or tuple
    width : float
        Line width in points.
    alpha : float
    """

    lines: np.ndarray
    color: object = "tab:orange"
    width: float = 0.5
    alpha: float = 1.0


@dataclass(frozen=True)
class Circles:
    """Circles drawn over an image (receptive fields): centres ``(x, y)`` and radii in pixels."""

    centers: np.ndarray
    radii: np.ndarray
    color: object = "tab:cyan"
    width: float = 0.4
    alpha: float = 0.5


@dataclass(frozen=True)
class Panel:
    """One image of a figure.

    Attributes
    ----------
    image : ndarray, shape (H, W) or (H, W, 3)
        Values mapped through ``cmap`` from ``vmin`` to ``vmax`` (2-D), or RGB
        in ``[0, 1]`` (3-D). Already display-stretched where that applies
        (:mod:`lbdviewer.evaluation.display`): the engine never changes grey levels.
    title : str
        Shown after the panel letter ("(a) ...").
    cmap : str
        A matplotlib colour map name (``"gray"``, ``"viridis"``, :data:`DIVERGING`).
    vmin, vmax : float
    colorbar : str or None
        The quantity the colour bar shows ("weight", "occurrences",
        "L_i value", "grey level"); None: no colour bar.
    ticks : tuple of float or None
        Colour bar ticks (default: up to 5 round values).
    overlays : tuple of Segments or Circles
    """

    image: np.ndarray
    title: str = ""
    cmap: str = "gray"
    vmin: float = 0.0
    vmax: float = 1.0
    colorbar: str | None = None
    ticks: tuple | None = None
    overlays: tuple = ()


@dataclass(frozen=True)
class FigureSpec:
    """Rows of panels and a caption.

    Attributes
    ----------
    kind : str
        Name of the figure (becomes the record's ``kind``: ``"figure:" + kind``).
    rows : tuple of tuple of Panel
    caption : str
    letters : bool
        Prefix titles with (a), (b), ... in reading order.
    max_inset_height : float
        Largest height of an image, in inches (small patches are not blown
        up to fill a double column).
    display : dict
        What display stretch each panel used (for the record), by title.
    """

    kind: str
    rows: tuple
    caption: str = ""
    letters: bool = True
    max_inset_height: float = 2.4
    display: dict = field(default_factory=dict)


def check_width(width):
    """Width in inches from ``"single"``, ``"double"`` or a number of inches (1 to 20).

    Examples
    --------
    >>> check_width("single"), check_width(5)
    (3.5, 5.0)
    """
    if isinstance(width, str) and width in WIDTHS:
        return WIDTHS[width]
    try:
        inches = float(width)
    except (TypeError, ValueError):
        raise ValueError(f"width must be 'single', 'double' or inches from 1 to 20, got {width!r}") from None
    if not 1.0 <= inches <= 20.0:
        raise ValueError(f"width must be 'single', 'double' or inches from 1 to 20, got {width!r}")
    return inches


def check_dpi(dpi):
    """``dpi`` as an int in :data:`DPI_RANGE` or a ``ValueError`` naming it."""
    if isinstance(dpi, bool) or not isinstance(dpi, (int, np.integer, float)) or int(dpi) != dpi \
            or not DPI_RANGE[0] <= dpi <= DPI_RANGE[1]:
        raise ValueError(f"dpi must be an integer from {DPI_RANGE[0]} to {DPI_RANGE[1]}, got {dpi!r}")
    return int(dpi)


def check_formats(formats):
    """A tuple of formats from :data:`FORMATS` (a comma-separated string or a sequence)."""
    items = formats.split(",") if isinstance(formats, str) else list(formats)
    items = [str(item).strip().lower() for item in items if str(item).strip()]
    bad = [item for item in items if item not in FORMATS]
    if bad or not items:
        raise ValueError(f"formats must be some of {FORMATS}, got {formats!r}")
    return tuple(dict.fromkeys(items))


def inset_rgb(panel):
    """The uint8 RGB ``(H, W, 3)`` a panel's inset shows at scale 1 (what the PNG holds, enlarged).

    Examples
    --------
    >>> inset_rgb(Panel(np.array([[0.0, 1.0]])))[0].tolist()
    [[0, 0, 0], [255, 255, 255]]
    """
    image = np.asarray(panel.image)
    if image.ndim == 3 and image.shape[2] == 3:
        return to_uint8(image)
    if image.ndim != 2 or image.size == 0:
        raise ValueError(f"panel {panel.title!r}: image must have shape (H, W) or (H, W, 3), got {image.shape}")
    if not np.all(np.isfinite(image)):
        raise ValueError(f"panel {panel.title!r}: image must be finite")
    if not panel.vmax > panel.vmin:
        raise ValueError(f"panel {panel.title!r}: vmax must exceed vmin, got {panel.vmin!r} and {panel.vmax!r}")
    colours = matplotlib.colormaps[panel.cmap](Normalize(panel.vmin, panel.vmax, clip=True)(image), bytes=True)
    return np.ascontiguousarray(colours[..., :3])


def render_figure(spec, *, width="double", dpi=DEFAULT_DPI):
    """Build the matplotlib figure of ``spec``.

    Parameters
    ----------
    spec : FigureSpec
    width : {"single", "double"} or float
        Figure width (:data:`WIDTHS`, or inches).
    dpi : int
        Output resolution; the layout is computed in pixels at this dpi.

    Returns
    -------
    figure : matplotlib.figure.Figure
    layout : dict
        ``width_in``, ``height_in``, ``dpi``, ``pixels`` ``[W, H]`` and per
        panel ``letter``, ``title``, ``x``, ``y`` (top-left of the inset in
        the PNG, pixels), ``width``, ``height``, ``scale``, ``source_shape``,
        ``cmap``, ``vmin``, ``vmax``, ``colorbar``.

    Raises
    ------
    ValueError
        Bad width or dpi, an empty spec, or an image that cannot fit.
    """
    width_in, dpi = check_width(width), check_dpi(dpi)
    rows = [tuple(row) for row in spec.rows if len(row)]
    if not rows:
        raise ValueError(f"spec {spec.kind!r} has no panels")
    with matplotlib.rc_context(_RC):
        return _render(spec, rows, width_in, dpi)


def _render(spec, rows, width_in, dpi):
    measure = Measure(dpi)
    width_px = measure.px(width_in)
    pad = measure.px(PAD)
    placed, caption, caption_y, height_px = place(spec, rows, width_px, measure)

    figure = Figure(figsize=(width_px / dpi, height_px / dpi), dpi=dpi, facecolor="white")
    for item in placed:
        _draw_panel(figure, item, width_px, height_px, measure)
    if caption:
        figure.text(pad / width_px, 1 - caption_y / height_px, caption, ha="left", va="top", fontsize=CAPTION_PT,
                    linespacing=LINE_SPACING)
    layout = {"width_in": width_px / dpi, "height_in": height_px / dpi, "dpi": dpi, "pixels": [width_px, height_px],
              "caption": spec.caption,
              "panels": [{"letter": item["letter"], "title": item["panel"].title, "x": item["x"], "y": item["y"],
                          "width": item["width"], "height": item["height"], "scale": item["scale"],
                          "source_shape": list(np.asarray(item["panel"].image).shape),
                          "cmap": None if np.asarray(item["panel"].image).ndim == 3 else item["panel"].cmap,
                          "vmin": item["panel"].vmin, "vmax": item["panel"].vmax,
                          "colorbar": item["panel"].colorbar} for item in placed]}
    return figure, layout


def _fraction(x, y, w, h, width_px, height_px):
    return [x / width_px, 1 - (y + h) / height_px, w / width_px, h / height_px]


def _draw_panel(figure, item, width_px, height_px, measure):
    panel, scale = item["panel"], item["scale"]
    height, width = shape_of(panel)
    axes = figure.add_axes(_fraction(item["x"], item["y"], item["width"], item["height"], width_px, height_px))
    axes.set_axis_off()
    axes.imshow(upscale(inset_rgb(panel), scale), interpolation="nearest", resample=False,
                extent=(-0.5, width - 0.5, height - 0.5, -0.5), aspect="auto")
    axes.set_xlim(-0.5, width - 0.5)
    axes.set_ylim(height - 0.5, -0.5)
    for overlay in panel.overlays:
        _draw_overlay(axes, overlay)
    _draw_frame(figure, item, width_px, height_px, measure)
    if item["title"]:
        figure.text(item["x"] / width_px, 1 - item["title_y"] / height_px, item["title"], ha="left", va="top",
                    fontsize=item["title_size"], linespacing=LINE_SPACING)
    if panel.colorbar is not None:
        left = item["x"] + item["width"] + measure.px(BAR_GAP)
        bar_axes = figure.add_axes(_fraction(left, item["y"], measure.px(BAR_WIDTH), item["height"],
                                             width_px, height_px))
        mappable = ScalarMappable(norm=Normalize(panel.vmin, panel.vmax), cmap=panel.cmap)
        bar = figure.colorbar(mappable, cax=bar_axes)
        values = ticks(panel)
        bar.set_ticks(values, labels=[tick_label(t) for t in values])
        bar.ax.tick_params(labelsize=TICK_PT, length=TICK_LENGTH_PT, width=0.5, pad=TICK_PAD_PT)
        bar.outline.set_linewidth(0.5)
        label, size = bar_label(panel, measure, item["height"])
        bar.set_label(label, fontsize=size, labelpad=LABEL_PAD_PT, linespacing=LINE_SPACING)


def _draw_frame(figure, item, width_px, height_px, measure):
    """A thin grey frame just outside the inset (one free pixel between), so no inset pixel is covered."""
    line = measure.pt(FRAME_PT)
    out = line / 2 + 1.0
    x, y = item["x"] - out, item["y"] - out
    w, h = item["width"] + 2 * out, item["height"] + 2 * out
    figure.add_artist(Rectangle((x / width_px, 1 - (y + h) / height_px), w / width_px, h / height_px,
                                transform=figure.transFigure, fill=False, edgecolor=FRAME_COLOR,
                                linewidth=FRAME_PT, snap=False))


def _draw_overlay(axes, overlay):
    if isinstance(overlay, Segments):
        lines = np.asarray(overlay.lines, dtype=np.float64).reshape(-1, 2, 2)
        axes.add_collection(LineCollection(lines, colors=[overlay.color], linewidths=overlay.width,
                                           alpha=overlay.alpha, capstyle="round"))
    elif isinstance(overlay, Circles):
        centers = np.asarray(overlay.centers, dtype=np.float64).reshape(-1, 2)
        diameters = 2 * np.broadcast_to(np.asarray(overlay.radii, dtype=np.float64), len(centers))
        axes.add_collection(EllipseCollection(diameters, diameters, np.zeros(len(centers)), units="xy",
                                              offsets=centers, offset_transform=axes.transData,
                                              facecolors="none", edgecolors=[overlay.color],
                                              linewidths=overlay.width, alpha=overlay.alpha))
    else:
        raise ValueError(f"overlay must be Segments or Circles, got {type(overlay).__name__}")


def figure_bytes(figure, fmt, dpi):
    """The encoded file of ``figure`` in ``fmt`` (PNG with its dpi recorded; PDF/SVG without dates)."""
    metadata = {"png": {"Software": "lbdviewer (matplotlib)"}, "pdf": {"CreationDate": None, "Creator": "lbdviewer"},
                "svg": {"Date": None, "Creator": "lbdviewer"}}[fmt]
    buffer = _io.BytesIO()
    with matplotlib.rc_context(_RC):
        figure.savefig(buffer, format=fmt, dpi=dpi, facecolor="white", metadata=metadata)
    return buffer.getvalue()


def save_figure(spec, stem, *, formats=DEFAULT_FORMATS, dpi=DEFAULT_DPI, width="double", record=None):
    """Render ``spec`` and write ``stem.png`` / ``stem.pdf`` / ``stem.svg`` and the run record ``stem.json``.

    Parameters
    ----------
    spec : FigureSpec
    stem : str or os.PathLike
        Output path without extension; its folder must exist.
    formats : sequence of str or str
        Some of :data:`FORMATS` (or ``"png,pdf"``).
    dpi : int
        Output resolution (recorded in the PNG).
    width : {"single", "double"} or float
    record : dict, optional
        A run record (:func:`lbdviewer.evaluation.records.run_record`) of what was
        computed; default: an empty one of kind ``"figure:" + spec.kind``.
        The layout, formats and files are added under ``extra["figure"]``
        and ``spec.display`` under ``display`` when the record has none.

    Returns
    -------
    dict
        ``{format: path}`` for each file written, and ``"json"``.

    Raises
    ------
    ValueError
        Bad formats, width or dpi (before anything is written), or a missing folder.
    """
    formats, width_in, dpi = check_formats(formats), check_width(width), check_dpi(dpi)
    stem = Path(stem)
    if not stem.parent.is_dir():
        raise ValueError(f"output folder {str(stem.parent)!r} does not exist")
    record = dict(record) if record is not None else run_record(f"figure:{spec.kind}")
    check_record(record)
    figure, layout = render_figure(spec, width=width_in, dpi=dpi)
    written = {}
    for fmt in formats:
        written[fmt] = atomic_write(stem.with_name(f"{stem.name}.{fmt}"), figure_bytes(figure, fmt, dpi))
    if record.get("display") is None and spec.display:
        record["display"] = dict(spec.display)
    record["extra"] = {**record.get("extra", {}),
                       "figure": {**layout, "formats": list(formats),
                                  "files": {fmt: path.name for fmt, path in written.items()},
                                  "insets": "integer nearest-neighbour enlargement, one array pixel to "
                                            "scale x scale output pixels; no resampling",
                                  "fonts": "TrueType embedded (pdf.fonttype 42); SVG text kept as text"}}
    written["json"] = write_sidecar(stem.with_name(f"{stem.name}.json"), record)
    return written


def run_title(*, descriptor=None, m=None, patch_size=None, offset=None, solver=None, mode=None, extra=None):
    """A title naming descriptor, M, patch size, offset, solver and mode (whichever are given).

    Examples
    --------
    >>> run_title(descriptor="brief", m=512, patch_size=32, offset=8, solver="consistency", mode="joint")
    'BRIEF M=512 32\u00d732 N_off=8, consistency (joint)'
    """
    parts = []
    if descriptor:
        parts.append(str(descriptor).upper())
    if m is not None:
        parts.append(f"M={int(m)}")
    if patch_size is not None:
        parts.append(f"{int(patch_size)}\u00d7{int(patch_size)}")
    if offset is not None:
        parts.append(f"N_off={offset}")
    text = " ".join(parts)
    run = solver or ""
    if mode:
        run = f"{run} ({mode})" if run else str(mode)
    text = ", ".join(part for part in (text, run, extra) if part)
    return text
