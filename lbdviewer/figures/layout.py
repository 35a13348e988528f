"""Where everything of a figure goes, in output pixels: text measured, images scaled, rows placed.

The engine (:mod:`lbdviewer.figures.engine`) draws what :func:`place`
decides, in the sizes the style sets (:mod:`lbdviewer.figures.style`).

Titles on one line
    A title ("(a) BRIEF") is centred over its image, and a panel's cell is
    wide enough for both the image (with its colour bar) and the title, so a
    title neither wraps nor runs into its neighbour; only a title wider than
    the whole figure is wrapped.
Balanced rows
    A row too wide even at scale 1 is cut into the fewest rows that fit, of
    near-equal counts (five panels: three and two, never four and one).
Integer scales
    Every image gets the largest integer enlargement with which its row
    still fits and its height stays within
    :attr:`~lbdviewer.figures.engine.FigureSpec.max_inset_height`; images of
    one shape share the smallest of their scales, so they are comparable.
Sized to the content
    A figure whose content fills less than :data:`FILL_SHARE` of the width
    asked for is as wide as its content (no lone panel centred in an empty
    canvas); otherwise it has the width asked for, its rows centred.
Measured text
    Text is measured as Agg sets it (hinted) and as PDF and SVG set it
    (unhinted outlines), the larger of the two plus :data:`TEXT_MARGIN`;
    mathtext (``$L_i$``) by matplotlib's own parser, so what is measured
    here fits in every format.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from matplotlib.backends.backend_agg import RendererAgg
from matplotlib.cbook import is_math_text
from matplotlib.font_manager import FontProperties, findfont, get_font
from matplotlib.ft2font import LoadFlags
from matplotlib.ticker import MaxNLocator

from lbdviewer.figures.notation import letter
from lbdviewer.figures.style import style_value

FONT = style_value("font.family")[0]
TITLE_PT = float(style_value("axes.titlesize"))
CAPTION_PT = float(style_value("font.size"))
TICK_PT = float(style_value("ytick.labelsize"))
LABEL_PT = float(style_value("axes.labelsize"))
TICK_LENGTH_PT = float(style_value("ytick.major.size"))
TICK_WIDTH_PT = float(style_value("ytick.major.width"))
TICK_PAD_PT = float(style_value("ytick.major.pad"))
TITLE_GAP_PT = float(style_value("axes.titlepad"))
LABEL_PAD_PT = float(style_value("axes.labelpad"))
LINE_WIDTH_PT = float(style_value("axes.linewidth"))
# lengths in inches: the margin round the figure, the gaps between panels (across, down)
PAD = float(style_value("savefig.pad_inches"))
GAP_ACROSS = float(style_value("figure.constrained_layout.w_pad"))
GAP_DOWN = float(style_value("figure.constrained_layout.h_pad"))
CAPTION_GAP, BAR_GAP, BAR_WIDTH = 0.06, 0.04, 0.07
LINE_SPACING = 1.2
TEXT_MARGIN = 0.02  # share of a text's width kept free (renderers differ by ~1 %)
#: A figure whose content is narrower than this share of the width asked for is as wide as its content.
FILL_SHARE = 0.9


class Measure:
    """Text sizes in output pixels, measured by the Agg renderer (call inside the style's context)."""

    def __init__(self, dpi):
        self.renderer = RendererAgg(8, 8, dpi)
        self.face = get_font(findfont(FontProperties(family=FONT)))
        self.dpi = dpi

    def px(self, inches):
        return int(round(inches * self.dpi))

    def pt(self, points):
        return points * self.dpi / 72.0

    def width(self, text, size):
        """Widest line of ``text`` in pixels, plus :data:`TEXT_MARGIN`.

        Plain text: the larger of Agg's (hinted) and the outline's
        (unhinted, as PDF and SVG set it) advance; mathtext: matplotlib's
        mathtext layout.
        """
        font = FontProperties(family=FONT, size=size)
        widest = 0.0
        for line in text.split("\n"):
            if not line.strip():
                continue
            if is_math_text(line):
                widest = max(widest, self.renderer.get_text_width_height_descent(line, font, ismath=True)[0])
                continue
            hinted = self.renderer.get_text_width_height_descent(line, font, ismath=False)[0]
            self.face.set_size(size, self.dpi)
            self.face.set_text(line, 0.0, flags=LoadFlags.NO_HINTING)
            outline = self.face.get_width_height()[0] / 64.0
            widest = max(widest, hinted, outline)
        return widest * (1.0 + TEXT_MARGIN)

    def line_height(self, size):
        return self.pt(size) * LINE_SPACING

    def wrap(self, text, size, limit):
        """Greedy word wrap to ``limit`` pixels (a ``$...$`` span is one word); a word wider than that gets a
        line of its own."""
        lines = []
        for paragraph in text.split("\n"):
            current = ""
            for word in words(paragraph):
                trial = word if not current else f"{current} {word}"
                if current and self.width(trial, size) > limit:
                    lines.append(current)
                    current = word
                else:
                    current = trial
            lines.append(current)
        return "\n".join(lines)


def words(line):
    """The words of ``line``: split at spaces outside ``$...$`` (a formula is never cut).

    Examples
    --------
    >>> words("(a) $M = 512$, joint")
    ['(a)', '$M = 512$,', 'joint']
    """
    out, current, inside, k = [], "", False, 0
    while k < len(line):
        if line.startswith("\\$", k):
            current, k = current + "\\$", k + 2
            continue
        char = line[k]
        inside = not inside if char == "$" else inside
        if char == " " and not inside:
            out.append(current)
            current = ""
        else:
            current += char
        k += 1
    out.append(current)
    return [word for word in out if word]


def ticks(panel, measure=None, height=None):
    """A colour bar's ticks: the panel's own, or up to five round values, as many as its ``height`` (pixels)
    holds with a line between labels."""
    if panel.ticks is not None:
        return [float(t) for t in panel.ticks]
    if np.isclose(panel.vmin, -panel.vmax):
        return [panel.vmin, 0.0, panel.vmax]
    bins = 4 if height is None else int(np.clip(height // (2 * measure.line_height(TICK_PT)), 1, 4))
    values = MaxNLocator(nbins=bins).tick_values(panel.vmin, panel.vmax)
    span = panel.vmax - panel.vmin
    return [float(v) for v in values if panel.vmin - 1e-9 * span <= v <= panel.vmax + 1e-9 * span]


def tick_label(value):
    text = f"{value:.3g}"
    return "0" if text in ("-0", "0") else text.replace("-", "\u2212")


def bar_label(panel, measure, height=None):
    """The colour bar's label, on one line or wrapped to the bar's ``height`` (pixels) when longer."""
    text = panel.colorbar
    if height is None or measure.width(text, LABEL_PT) <= height:
        return text
    return measure.wrap(text, LABEL_PT, height)


def bar_space(panel, measure, height=None):
    """Pixels a panel's colour bar takes to the right of its image (0 without one)."""
    if panel.colorbar is None:
        return 0
    labels = [tick_label(t) for t in ticks(panel, measure, height)]
    widest = max((measure.width(label, TICK_PT) for label in labels), default=0.0)
    lines = bar_label(panel, measure, height).count("\n") + 1
    return int(np.ceil(measure.px(BAR_GAP) + measure.px(BAR_WIDTH) + measure.pt(TICK_LENGTH_PT + TICK_PAD_PT)
                       + widest + measure.pt(LABEL_PAD_PT) + lines * measure.line_height(LABEL_PT) + 2))


def bar_overhang(cell, measure):
    """Pixels a colour bar's text stands beyond each end of its bar: half a tick label, or half of what a
    label longer than the bar sticks out (a label of one long word cannot be wrapped)."""
    if cell.panel.colorbar is None:
        return 0
    height = cell.height * cell.scale
    label = max(measure.width(line, LABEL_PT) for line in bar_label(cell.panel, measure, height).split("\n"))
    return int(np.ceil(max(0.6 * measure.pt(TICK_PT), (label - height) / 2)))


def shape_of(panel):
    return tuple(int(s) for s in np.asarray(panel.image).shape[:2])


@dataclass
class Cell:
    """One panel's place: its title (with its letter), sizes in pixels, scale and colour bar space."""

    panel: object
    letter: str
    title: str
    title_width: int
    height: int
    width: int
    bar: int = 0
    scale: int = 1

    def indent(self, scale=None):
        """Pixels from the cell's left edge to its image's: room for the half of a wide title left of its centre."""
        scale = self.scale if scale is None else scale
        return max(0, (self.title_width - self.width * scale + 1) // 2)

    def span(self, scale=None):
        """Pixels the cell takes across at ``scale``: its image and colour bar, and its title centred over the image."""
        scale = self.scale if scale is None else scale
        indent, image = self.indent(scale), self.width * scale
        return max(indent + image + self.bar, indent + (image + self.title_width + 1) // 2)


def _cells(spec, rows, measure, usable):
    count = sum(len(row) for row in rows)
    cells, index = [], 0
    for row in rows:
        cells.append([])
        for panel in row:
            name = letter(index) if spec.letters and count > 1 else ""
            title = " ".join(part for part in (name, panel.title) if part)
            width = min(int(np.ceil(measure.width(title, TITLE_PT))), usable) if title else 0
            height, across = shape_of(panel)
            cell = Cell(panel, name, title, width, height, across)
            cell.bar = bar_space(panel, measure, height)
            if across + cell.bar > usable:
                raise ValueError(f"panel {panel.title!r}: an image {across} pixels wide does not fit a figure "
                                 f"{usable} pixels wide at scale 1; use a wider figure or a higher dpi")
            cells[-1].append(cell)
            index += 1
    return cells


def _row_span(cells, gap, scales=None):
    scales = scales or [cell.scale for cell in cells]
    return sum(cell.span(scale) for cell, scale in zip(cells, scales)) + gap * (len(cells) - 1)


def _balanced(cells, count):
    size, extra = divmod(len(cells), count)
    groups, start = [], 0
    for k in range(count):
        stop = start + size + (1 if k < extra else 0)
        groups.append(cells[start:stop])
        start = stop
    return groups


def flow(rows, usable, gap):
    """Each row of cells cut into the fewest rows, of near-equal counts, that fit ``usable`` pixels at scale 1."""
    flowed = []
    for row in rows:
        for count in range(1, len(row) + 1):
            groups = _balanced(row, count)
            if all(_row_span(group, gap, [1] * len(group)) <= usable for group in groups):
                break
        flowed.extend(groups)
    return flowed


def _row_scales(row, usable, gap, max_height):
    """The largest integer scales with which ``row`` fits.

    The widest image gets ``share // width``, ``share`` the most that fits;
    every other image the largest scale that keeps it no wider than that one
    (a smaller image is not shown larger than its neighbours).
    """
    widest = max(row, key=lambda cell: cell.width)

    def scales_for(share):
        target = widest.width * max(1, min(share // widest.width, max_height // widest.height))
        return [max(1, min(target // cell.width, max_height // cell.height)) for cell in row]

    low, high = 1, usable
    while low < high:
        share = (low + high + 1) // 2
        if _row_span(row, gap, scales_for(share)) <= usable:
            low = share
        else:
            high = share - 1
    return scales_for(low)


def _scale(flowed, measure, usable, gap, max_height):
    """Set every cell's scale (one per image shape: the smallest any row allows) and colour bar space.

    A colour bar's label longer than its bar is wrapped, which widens the
    bar's space and may lower the scale: repeated until nothing changes.
    """
    for _ in range(8):
        by_shape = {}
        for row in flowed:
            for cell, scale in zip(row, _row_scales(row, usable, gap, max_height)):
                key = (cell.height, cell.width)
                by_shape[key] = min(scale, by_shape.get(key, scale))
        changed = False
        for row in flowed:
            for cell in row:
                cell.scale = by_shape[(cell.height, cell.width)]
                bar = bar_space(cell.panel, measure, cell.height * cell.scale)
                changed |= bar > cell.bar
                cell.bar = max(cell.bar, bar)
        if not changed:
            return


@dataclass
class Placement:
    """What :func:`place` decided: cells with their positions, the figure's size and the caption drawn inside."""

    cells: list
    width: int
    height: int
    caption: str = ""
    caption_y: int = 0


def place(spec, rows, width_px, measure, caption=""):
    """Place every panel, title, colour bar (and ``caption``, drawn inside) of ``spec`` on at most ``width_px``.

    Returns
    -------
    Placement
        ``cells``: one dict per panel, in reading order: ``panel``,
        ``letter``, ``title`` (with its letter; wrapped only if wider than
        the figure), ``x``, ``y`` (top-left of the inset), ``title_y``,
        ``width``, ``height``, ``scale``, ``bar`` (pixels the colour bar
        takes); ``width``, ``height`` of the figure (pixels); ``caption``
        (wrapped) and ``caption_y``.
    """
    pad, gap, gap_down = measure.px(PAD), measure.px(GAP_ACROSS), measure.px(GAP_DOWN)
    usable = width_px - 2 * pad
    flowed = flow(_cells(spec, rows, measure, usable), usable, gap)
    _scale(flowed, measure, usable, gap, measure.px(spec.max_inset_height))
    content = max(_row_span(row, gap) for row in flowed)
    figure_width = width_px if content >= FILL_SHARE * usable else content + 2 * pad
    line = measure.line_height(TITLE_PT)
    placed, y = [], pad
    for row in flowed:
        x = (figure_width - _row_span(row, gap)) // 2
        titles = [measure.wrap(cell.title, TITLE_PT, cell.span()) if cell.title else "" for cell in row]
        lines = max((title.count("\n") + 1 for title in titles if title), default=0)
        title_band = int(np.ceil(lines * line + measure.pt(TITLE_GAP_PT))) if lines else 0
        overhang = max((bar_overhang(cell, measure) for cell in row), default=0)
        title_band += overhang
        for cell, title in zip(row, titles):
            placed.append({"panel": cell.panel, "letter": cell.letter, "title": title, "title_size": TITLE_PT,
                           "x": x + cell.indent(), "title_y": y, "y": y + title_band, "width": cell.width * cell.scale,
                           "height": cell.height * cell.scale, "scale": cell.scale, "bar": cell.bar})
            x += cell.span() + gap
        y += title_band + max(cell.height * cell.scale for cell in row) + overhang + gap_down
    y -= gap_down
    wrapped = measure.wrap(caption, CAPTION_PT, figure_width - 2 * pad) if caption else ""
    caption_y = y + measure.px(CAPTION_GAP)
    if wrapped:
        y = caption_y + int(np.ceil((wrapped.count("\n") + 1) * measure.line_height(CAPTION_PT) + measure.pt(2)))
    return Placement(placed, int(figure_width), int(y + pad), wrapped, int(caption_y))
