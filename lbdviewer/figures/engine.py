"""The figure engine: plain arrays and a small spec in, a matplotlib figure (PNG, PDF, SVG) out.

A :class:`FigureSpec` is rows of :class:`Panel` s (an image, a short title,
an optional colour bar and overlays) and a caption. :func:`render_figure`
lays them out in **output pixels** (:mod:`lbdviewer.figures.layout`) and
builds a :class:`matplotlib.figure.Figure` with the object-oriented API only
(no pyplot state), in the package's one style (:mod:`lbdviewer.figures.style`);
:func:`save_figure` writes ``stem.png``, ``stem.pdf``, ``stem.svg``, the run
record ``stem.json`` and, beside the artwork, the caption: ``stem.caption.txt``
and ``stem.tex`` (:mod:`lbdviewer.figures.captions`).

Captions beside the artwork
    By default a figure holds panels, panel letters, short titles and colour
    bars only: journals set captions in the manuscript. The caption (written
    in mathtext, :mod:`lbdviewer.figures.notation`) goes, as LaTeX, into
    ``stem.caption.txt``, the record (``extra.figure.caption``) and the
    ``\\caption{}`` of ``stem.tex``. ``caption="inside"`` draws it under the
    panels instead (slides, posters).
Pixel-exact insets
    Every image is enlarged by an integer factor ``s`` with ``np.repeat``
    (nearest neighbour) and its axes is placed on whole output pixels, exactly
    ``s`` times the image's size: matplotlib then draws the array one array
    pixel to one output pixel (``interpolation="nearest"``), so nothing is
    resampled at the output dpi. Panels of one source shape get one ``s``
    across the figure, so they are comparable.
Vector everything else
    Titles, colour bars, ticks and overlays are vector in PDF and SVG; PDF
    fonts are embedded as TrueType (``pdf.fonttype = 42``, mathtext too) so
    the text can be searched and edited, SVG keeps text as text.
Nothing clipped, nothing overlapping
    Text is measured with the renderer before anything is placed: a title
    sets its cell's width, so titles stay on one line; the space for each
    colour bar's ticks and label is measured from the very strings it draws.

Extending
    A new figure is a function returning a :class:`FigureSpec` (and, for
    ``lbdviewer figures``, a run record: :mod:`lbdviewer.figures.paper`).
    Everything here is stable API: :class:`FigureSpec`, :class:`Panel`,
    :class:`Segments`, :class:`Circles`, :func:`render_figure`,
    :func:`save_figure`, :func:`run_title`, :data:`WIDTHS`, :data:`FORMATS`,
    :data:`CAPTION_PLACEMENTS`; a plot drawn beside the engine takes the
    same look from :func:`lbdviewer.figures.style.style_context`.

Examples
--------
>>> spec = FigureSpec(kind="demo", rows=((Panel(np.eye(4), title="identity"), Panel(np.eye(4), title="again")),),
...                   caption="Two $4 \\times 4$ identities.")
>>> figure, layout = render_figure(spec, width="single", dpi=100)
>>> layout["panels"][1]["letter"], layout["panels"][0]["scale"] >= 1, layout["caption"]
('(b)', True, 'Two $4 \\times 4$ identities.')
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

from lbdviewer.evaluation.records import check_record, run_record, write_sidecar
from lbdviewer.figures.captions import write_caption_files
from lbdviewer.figures.layout import (BAR_GAP, BAR_WIDTH, CAPTION_PT, LABEL_PAD_PT, LABEL_PT, LINE_SPACING,
                                      LINE_WIDTH_PT, PAD, TICK_LENGTH_PT, TICK_PAD_PT, TICK_PT, TICK_WIDTH_PT, Measure,
                                      bar_label, place, shape_of, tick_label, ticks)
from lbdviewer.figures.notation import latex_text, run_title  # noqa: F401  (run_title: part of the engine's API)
from lbdviewer.figures.style import DIVERGING, OKABE_ITO, SEQUENTIAL, style_context  # noqa: F401  (colour maps too)
from lbdviewer.io.files import atomic_write
from lbdviewer.io.images import to_uint8, upscale

#: Figure widths by name, in inches (a two-column paper's single and double column).
WIDTHS = {"single": 3.5, "double": 7.16}
#: Formats :func:`save_figure` writes.
FORMATS = ("png", "pdf", "svg")
DEFAULT_FORMATS = ("png", "pdf")
DEFAULT_DPI = 300
DPI_RANGE = (72, 1200)
#: A figure taller than this (inches) does not fit a journal page with its caption (``layout["taller_than_page"]``).
PAGE_HEIGHT = 9.0
#: Where the caption goes: beside the artwork (``stem.caption.txt``, ``stem.tex``; the default) or drawn inside.
CAPTION_PLACEMENTS = ("beside", "inside")
FRAME_COLOR = "0.35"


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
    color: object = OKABE_ITO["orange"]
    width: float = 0.5
    alpha: float = 1.0


@dataclass(frozen=True)
class Circles:
    """Circles drawn over an image (receptive fields): centres ``(x, y)`` and radii in pixels."""

    centers: np.ndarray
    radii: np.ndarray
    color: object = OKABE_ITO["sky"]
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
        A short title, shown after the panel letter ("(a) BRIEF"); mathtext
        allowed (``"$N_{\\mathrm{off}} = 8$"``). It stays on one line (its cell
        is as wide as it): the run's parameters belong in the caption.
    cmap : str
        A matplotlib colour map name (``"gray"``, :data:`SEQUENTIAL`, :data:`DIVERGING`).
    vmin, vmax : float
    colorbar : str or None
        The quantity the colour bar shows ("weight", "occurrences", "$L_i$",
        "grey level"); None: no colour bar.
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
        Mathtext (:mod:`lbdviewer.figures.notation`): written beside the
        figure as LaTeX, or drawn under it with ``caption="inside"``.
    letters : bool
        Prefix titles with (a), (b), ... in reading order (a figure of one
        panel has no letter).
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


@dataclass(frozen=True)
class FigureProgress:
    """How far the making of figure ``name`` is: ``done`` of ``total`` runs (panels solved).

    A function that makes a figure and its run record may be a generator
    yielding these after each run (:mod:`lbdviewer.figures.paper`); ``label``
    names the run just finished; the last step of
    :func:`lbdviewer.figures.paper.iter_figure` carries the ``spec`` and the
    ``record``.
    """

    name: str
    done: int
    total: int
    label: str = ""
    spec: object = None
    record: dict | None = None


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


def check_caption(caption):
    """``caption`` if it is one of :data:`CAPTION_PLACEMENTS`, else a ``ValueError`` naming it."""
    if caption not in CAPTION_PLACEMENTS:
        raise ValueError(f"caption must be one of {CAPTION_PLACEMENTS}, got {caption!r}")
    return caption


def render_figure(spec, *, width="double", dpi=DEFAULT_DPI, caption="beside"):
    """Build the matplotlib figure of ``spec``.

    Parameters
    ----------
    spec : FigureSpec
    width : {"single", "double"} or float
        The width asked for (:data:`WIDTHS`, or inches). A figure whose
        content fills less than :data:`lbdviewer.figures.layout.FILL_SHARE`
        of it is as wide as its content.
    dpi : int
        Output resolution; the layout is computed in pixels at this dpi.
    caption : {"beside", "inside"}
        Leave the caption out of the artwork (default), or draw it under the panels.

    Returns
    -------
    figure : matplotlib.figure.Figure
    layout : dict
        ``width_in``, ``height_in``, ``dpi``, ``pixels`` ``[W, H]``,
        ``column_in`` (the width asked for), ``fills_column`` (the figure
        has that width), ``taller_than_page`` (taller than :data:`PAGE_HEIGHT`:
        a higher dpi sets its images smaller, or a wider figure holds more a row),
        ``caption`` (LaTeX, :func:`~lbdviewer.figures.notation.latex_text`),
        ``caption_placement``, and per panel ``letter``, ``title``, ``x``,
        ``y`` (top-left of the inset in the PNG, pixels), ``width``,
        ``height``, ``scale``, ``source_shape``, ``cmap``, ``vmin``,
        ``vmax``, ``colorbar``.

    Raises
    ------
    ValueError
        Bad width, dpi or caption, an empty spec, or an image that cannot fit.
    """
    width_in, dpi, caption = check_width(width), check_dpi(dpi), check_caption(caption)
    rows = [tuple(row) for row in spec.rows if len(row)]
    if not rows:
        raise ValueError(f"spec {spec.kind!r} has no panels")
    latex = latex_text(spec.caption)  # refuses an unbalanced $ before anything is drawn
    with style_context():
        figure, layout = _render(spec, rows, width_in, dpi, spec.caption if caption == "inside" else "")
    layout.update(column_in=width_in, fills_column=layout["pixels"][0] == Measure(dpi).px(width_in),
                  taller_than_page=layout["height_in"] > PAGE_HEIGHT, caption=latex, caption_placement=caption)
    return figure, layout


def _render(spec, rows, width_in, dpi, caption):
    measure = Measure(dpi)
    placement = place(spec, rows, measure.px(width_in), measure, caption)
    width_px, height_px = placement.width, placement.height
    figure = Figure(figsize=(width_px / dpi, height_px / dpi), dpi=dpi, facecolor="white")
    for item in placement.cells:
        _draw_panel(figure, item, width_px, height_px, measure)
    if placement.caption:
        figure.text(measure.px(PAD) / width_px, 1 - placement.caption_y / height_px, placement.caption, ha="left",
                    va="top", fontsize=CAPTION_PT, linespacing=LINE_SPACING)
    layout = {"width_in": width_px / dpi, "height_in": height_px / dpi, "dpi": dpi, "pixels": [width_px, height_px],
              "panels": [{"letter": item["letter"], "title": item["panel"].title, "x": item["x"], "y": item["y"],
                          "width": item["width"], "height": item["height"], "scale": item["scale"],
                          "source_shape": list(np.asarray(item["panel"].image).shape),
                          "cmap": None if np.asarray(item["panel"].image).ndim == 3 else item["panel"].cmap,
                          "vmin": item["panel"].vmin, "vmax": item["panel"].vmax,
                          "colorbar": item["panel"].colorbar} for item in placement.cells]}
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
        figure.text((item["x"] + item["width"] / 2) / width_px, 1 - item["title_y"] / height_px, item["title"],
                    ha="center", va="top", multialignment="center", fontsize=item["title_size"],
                    linespacing=LINE_SPACING)
    if panel.colorbar is not None:
        left = item["x"] + item["width"] + measure.px(BAR_GAP)
        bar_axes = figure.add_axes(_fraction(left, item["y"], measure.px(BAR_WIDTH), item["height"],
                                             width_px, height_px))
        mappable = ScalarMappable(norm=Normalize(panel.vmin, panel.vmax), cmap=panel.cmap)
        bar = figure.colorbar(mappable, cax=bar_axes)
        values = ticks(panel, measure, item["height"])
        bar.set_ticks(values, labels=[tick_label(t) for t in values])
        bar.ax.tick_params(labelsize=TICK_PT, length=TICK_LENGTH_PT, width=TICK_WIDTH_PT, pad=TICK_PAD_PT)
        bar.outline.set_linewidth(LINE_WIDTH_PT)
        bar.set_label(bar_label(panel, measure, item["height"]), fontsize=LABEL_PT, labelpad=LABEL_PAD_PT,
                      linespacing=LINE_SPACING)


def _draw_frame(figure, item, width_px, height_px, measure):
    """A thin grey frame just outside the inset (one free pixel between), so no inset pixel is covered."""
    line = measure.pt(LINE_WIDTH_PT)
    out = line / 2 + 1.0
    x, y = item["x"] - out, item["y"] - out
    w, h = item["width"] + 2 * out, item["height"] + 2 * out
    figure.add_artist(Rectangle((x / width_px, 1 - (y + h) / height_px), w / width_px, h / height_px,
                                transform=figure.transFigure, fill=False, edgecolor=FRAME_COLOR,
                                linewidth=LINE_WIDTH_PT, snap=False))


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
    with style_context():
        figure.savefig(buffer, format=fmt, dpi=dpi, facecolor="white", metadata=metadata)
    return buffer.getvalue()


def save_figure(spec, stem, *, formats=DEFAULT_FORMATS, dpi=DEFAULT_DPI, width="double", record=None,
                caption="beside"):
    """Render ``spec`` and write ``stem.png`` / ``stem.pdf`` / ``stem.svg``, the run record ``stem.json`` and the caption.

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
        The layout (with the caption, as LaTeX), formats and files are added
        under ``extra["figure"]`` and ``spec.display`` under ``display``
        when the record has none.
    caption : {"beside", "inside"}
        ``"beside"`` (default): the artwork holds no caption; it is written
        to ``stem.caption.txt`` and into ``stem.tex``, a LaTeX ``figure``
        environment (:func:`lbdviewer.figures.captions.latex_figure`).
        ``"inside"``: drawn under the panels, no ``.caption.txt`` or ``.tex``.

    Returns
    -------
    dict
        ``{format: path}`` for each file written, ``"json"``, and with the
        caption beside: ``"caption"`` and ``"tex"``.

    Raises
    ------
    ValueError
        Bad formats, width, dpi or caption (before anything is written), or a missing folder.
    """
    formats, width_in, dpi = check_formats(formats), check_width(width), check_dpi(dpi)
    caption = check_caption(caption)
    stem = Path(stem)
    if not stem.parent.is_dir():
        raise ValueError(f"output folder {str(stem.parent)!r} does not exist")
    record = dict(record) if record is not None else run_record(f"figure:{spec.kind}")
    check_record(record)
    figure, layout = render_figure(spec, width=width_in, dpi=dpi, caption=caption)
    written = {}
    for fmt in formats:
        written[fmt] = atomic_write(stem.with_name(f"{stem.name}.{fmt}"), figure_bytes(figure, fmt, dpi))
    if caption == "beside":
        written.update(write_caption_files(stem, layout))
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
