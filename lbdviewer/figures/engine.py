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
from matplotlib.backends.backend_agg import RendererAgg
from matplotlib.cm import ScalarMappable
from matplotlib.collections import EllipseCollection, LineCollection
from matplotlib.colors import Normalize
from matplotlib.figure import Figure
from matplotlib.font_manager import FontProperties, findfont, get_font
from matplotlib.ft2font import LoadFlags
from matplotlib.patches import Rectangle
from matplotlib.ticker import MaxNLocator

from lbdviewer.io import atomic_write, to_uint8
from lbdviewer.records import check_record, run_record, write_sidecar

#: Figure widths by name, in inches (a two-column paper's single and double column).
WIDTHS = {"single": 3.5, "double": 7.16}
#: Formats :func:`save_figure` writes.
FORMATS = ("png", "pdf", "svg")
DEFAULT_FORMATS = ("png", "pdf")
DEFAULT_DPI = 300
DPI_RANGE = (72, 1200)
#: Diverging colour map for signed quantities (blue below 0, red above).
DIVERGING = "RdBu_r"
FONT = "DejaVu Sans"
TITLE_PT = 7.0
MIN_TITLE_PT = 5.0
CAPTION_PT = 7.0
TICK_PT = 6.0
LABEL_PT = 6.5
MIN_LABEL_PT = 4.5
FRAME_PT = 0.4
FRAME_COLOR = "0.35"
_RC = {"pdf.fonttype": 42, "ps.fonttype": 42, "svg.fonttype": "none", "font.family": FONT,
       "axes.linewidth": 0.5, "svg.hashsalt": "lbdviewer"}
_LINE_SPACING = 1.2
_TEXT_MARGIN = 0.02  # share of a text's width kept free (renderers differ by ~1 %)
# lengths in inches
_PAD, _GAP, _TITLE_GAP, _CAPTION_GAP = 0.04, 0.08, 0.025, 0.06
_BAR_GAP, _BAR_WIDTH, _TICK_LENGTH_PT, _TICK_PAD_PT, _LABEL_PAD_PT = 0.04, 0.07, 2.0, 1.5, 2.0


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
        (:mod:`lbdviewer.display`): the engine never changes grey levels.
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


def upscale(image, factor):
    """Enlarge ``image`` by an integer factor, nearest neighbour.

    Examples
    --------
    >>> upscale(np.array([[0, 1]]), 2).tolist()
    [[0, 0, 1, 1], [0, 0, 1, 1]]
    """
    if isinstance(factor, bool) or int(factor) != factor or factor < 1:
        raise ValueError(f"factor must be a positive integer, got {factor!r}")
    factor = int(factor)
    return np.repeat(np.repeat(np.asarray(image), factor, axis=0), factor, axis=1)


class _Measure:
    """Text sizes in output pixels, measured by the Agg renderer."""

    def __init__(self, dpi):
        self.renderer = RendererAgg(8, 8, dpi)
        self.face = get_font(findfont(FontProperties(family=FONT)))
        self.dpi = dpi

    def px(self, inches):
        return int(round(inches * self.dpi))

    def pt(self, points):
        return points * self.dpi / 72.0

    def width(self, text, size):
        """Widest line of ``text`` in pixels: the larger of Agg's (hinted) and the outline's (unhinted,
        as PDF and SVG set it) advance, plus :data:`_TEXT_MARGIN`."""
        font = FontProperties(family=FONT, size=size)
        widest = 0.0
        for line in text.split("\n"):
            if not line.strip():
                continue
            hinted = self.renderer.get_text_width_height_descent(line, font, ismath=False)[0]
            self.face.set_size(size, self.dpi)
            self.face.set_text(line, 0.0, flags=LoadFlags.NO_HINTING)
            outline = self.face.get_width_height()[0] / 64.0
            widest = max(widest, hinted, outline)
        return widest * (1.0 + _TEXT_MARGIN)

    def line_height(self, size):
        return self.pt(size) * _LINE_SPACING

    def wrap(self, text, size, limit):
        """Greedy word wrap to ``limit`` pixels; a single word wider than that gets a line of its own."""
        lines = []
        for paragraph in text.split("\n"):
            current = ""
            for word in paragraph.split(" "):
                trial = word if not current else f"{current} {word}"
                if current and self.width(trial, size) > limit:
                    lines.append(current)
                    current = word
                else:
                    current = trial
            lines.append(current)
        return "\n".join(lines)


def _ticks(panel):
    if panel.ticks is not None:
        return [float(t) for t in panel.ticks]
    if np.isclose(panel.vmin, -panel.vmax):
        return [panel.vmin, 0.0, panel.vmax]
    values = MaxNLocator(nbins=4).tick_values(panel.vmin, panel.vmax)
    span = panel.vmax - panel.vmin
    return [float(v) for v in values if panel.vmin - 1e-9 * span <= v <= panel.vmax + 1e-9 * span]


def _tick_label(value):
    text = f"{value:.3g}"
    return "0" if text in ("-0", "0") else text.replace("-", "\u2212")


def _bar_label(panel, measure, height=None):
    """The colour bar's label and its size in points, fitted to the bar's ``height`` (pixels).

    One line, set smaller (down to :data:`MIN_LABEL_PT`) when longer than the
    bar; wrapped onto more lines only when even that is too long.
    """
    text = panel.colorbar
    if height is None:
        return text, LABEL_PT
    longest = measure.width(text, LABEL_PT)
    if longest <= height:
        return text, LABEL_PT
    size = max(MIN_LABEL_PT, LABEL_PT * height / longest)
    return (text if measure.width(text, size) <= height else measure.wrap(text, size, height)), size


def _bar_space(panel, measure, height=None):
    """Pixels a panel's colour bar takes to the right of its image (0 without one)."""
    if panel.colorbar is None:
        return 0
    labels = [_tick_label(t) for t in _ticks(panel)]
    widest = max((measure.width(label, TICK_PT) for label in labels), default=0.0)
    text, size = _bar_label(panel, measure, height)
    lines = text.count("\n") + 1
    return int(np.ceil(measure.px(_BAR_GAP) + measure.px(_BAR_WIDTH) + measure.pt(_TICK_LENGTH_PT + _TICK_PAD_PT)
                       + widest + measure.pt(_LABEL_PAD_PT) + lines * measure.line_height(size) + 2))


def _shape(panel):
    return tuple(int(s) for s in np.asarray(panel.image).shape[:2])


def _flow(rows, width_px, measure):
    """The rows, each cut into as few rows as let every image fit at scale 1."""
    pad, gap = measure.px(_PAD), measure.px(_GAP)
    flowed = []
    for row in rows:
        row = list(row)
        while row:
            count = len(row)
            while count > 1:
                part = row[:count]
                used = 2 * pad + gap * (count - 1) + sum(_bar_space(p, measure) for p in part)
                if all(_shape(p)[1] <= (width_px - used) / count for p in part):
                    break
                count -= 1
            flowed.append(row[:count])
            row = row[count:]
    return flowed


def _scales(rows, width_px, measure, max_height_px):
    """Integer scale per panel shape, colour bar space per panel, and the rows re-flowed.

    A colour bar's label longer than its bar is wrapped, which widens the bar's
    space and may lower the scale; this is repeated until nothing changes.
    """
    pad, gap = measure.px(_PAD), measure.px(_GAP)
    flowed = _flow(rows, width_px, measure)
    bars = {id(p): _bar_space(p, measure) for row in flowed for p in row}
    for _ in range(8):
        scales = {}
        for row in flowed:
            used = 2 * pad + gap * (len(row) - 1) + sum(bars[id(p)] for p in row)
            share = (width_px - used) / len(row)
            for panel in row:
                height, width = _shape(panel)
                if width > width_px - 2 * pad - bars[id(panel)]:
                    raise ValueError(f"panel {panel.title!r}: an image {width} pixels wide does not fit a figure "
                                     f"{width_px} pixels wide at scale 1; use a wider figure or a higher dpi")
                scale = max(1, min(int(share // width), int(max_height_px // height)))
                scales[(height, width)] = min(scale, scales.get((height, width), scale))
        wrapped = {id(p): _bar_space(p, measure, _shape(p)[0] * scales[_shape(p)]) for row in flowed for p in row}
        if all(wrapped[key] <= bars[key] for key in bars):
            break
        bars = {key: max(bars[key], wrapped[key]) for key in bars}
    return flowed, scales, bars


def _title_size(measure, titles):
    """The titles' size in points for one row: :data:`TITLE_PT`, smaller (down to :data:`MIN_TITLE_PT`) until
    every word fits the width its title may use."""
    size = TITLE_PT
    while size > MIN_TITLE_PT and any(measure.width(word, size) > limit
                                      for text, limit in titles for word in text.split()):
        size = max(MIN_TITLE_PT, size - 0.5)
    return size


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
    measure = _Measure(dpi)
    width_px = measure.px(width_in)
    pad, gap = measure.px(_PAD), measure.px(_GAP)
    flowed, scales, bars = _scales(rows, width_px, measure, measure.px(spec.max_inset_height))
    letters = iter("abcdefghijklmnopqrstuvwxyz")
    placed, y = [], pad
    for row in flowed:
        cells = []
        for panel in row:
            scale = scales[_shape(panel)]
            height, width = _shape(panel)
            cells.append((panel, scale, width * scale, height * scale, bars[id(panel)]))
        # the row's spare width is shared out: each image sits centred in its cell, its title may use the cell
        spare = max(0, width_px - 2 * pad - gap * (len(cells) - 1) - sum(c[2] + c[4] for c in cells))
        extra = spare // len(cells)
        x = pad + (spare - extra * len(cells)) // 2
        texts = []
        for panel, scale, w, h, bar in cells:
            letter = f"({next(letters)})" if spec.letters else ""
            texts.append((letter, " ".join(part for part in (letter, panel.title) if part),
                          w + bar + extra - extra // 2))
        size = _title_size(measure, [(text, limit) for _, text, limit in texts])
        titles = [(letter, measure.wrap(text, size, limit)) for letter, text, limit in texts]
        lines = max((t.count("\n") + 1 for _, t in titles if t), default=0)
        title_band = int(np.ceil(lines * measure.line_height(size))) + (measure.px(_TITLE_GAP) if lines else 0)
        image_band = max(c[3] for c in cells)
        for (panel, scale, w, h, bar), (letter, title) in zip(cells, titles):
            placed.append({"panel": panel, "letter": letter, "title": title, "title_size": size,
                           "x": x + extra // 2, "title_y": y, "y": y + title_band, "width": w, "height": h,
                           "scale": scale, "bar": bar})
            x += w + bar + extra + gap
        y += title_band + image_band + gap
    caption = measure.wrap(spec.caption, CAPTION_PT, width_px - 2 * pad) if spec.caption else ""
    caption_y = y - gap + measure.px(_CAPTION_GAP)
    if caption:
        y = caption_y + int(np.ceil((caption.count("\n") + 1) * measure.line_height(CAPTION_PT) + measure.pt(2)))
    height_px = y - gap + pad if not caption else y + pad

    figure = Figure(figsize=(width_px / dpi, height_px / dpi), dpi=dpi, facecolor="white")
    for item in placed:
        _draw_panel(figure, item, width_px, height_px, measure)
    if caption:
        figure.text(pad / width_px, 1 - caption_y / height_px, caption, ha="left", va="top", fontsize=CAPTION_PT,
                    linespacing=_LINE_SPACING)
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
    height, width = _shape(panel)
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
                    fontsize=item["title_size"], linespacing=_LINE_SPACING)
    if panel.colorbar is not None:
        left = item["x"] + item["width"] + measure.px(_BAR_GAP)
        bar_axes = figure.add_axes(_fraction(left, item["y"], measure.px(_BAR_WIDTH), item["height"],
                                             width_px, height_px))
        mappable = ScalarMappable(norm=Normalize(panel.vmin, panel.vmax), cmap=panel.cmap)
        bar = figure.colorbar(mappable, cax=bar_axes)
        ticks = _ticks(panel)
        bar.set_ticks(ticks, labels=[_tick_label(t) for t in ticks])
        bar.ax.tick_params(labelsize=TICK_PT, length=_TICK_LENGTH_PT, width=0.5, pad=_TICK_PAD_PT)
        bar.outline.set_linewidth(0.5)
        label, size = _bar_label(panel, measure, item["height"])
        bar.set_label(label, fontsize=size, labelpad=_LABEL_PAD_PT, linespacing=_LINE_SPACING)


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
        A run record (:func:`lbdviewer.records.run_record`) of what was
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
