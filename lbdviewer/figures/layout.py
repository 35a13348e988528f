"""Where everything of a figure goes, in output pixels: text measured, images scaled, rows placed.

The engine (:mod:`lbdviewer.figures.engine`) draws what :func:`place` decides.
Text is measured as the Agg renderer sets it (hinted) and as PDF and SVG set
it (unhinted outlines), the larger of the two plus :data:`TEXT_MARGIN`, so a
title wrapped here fits in every format. Images get the largest integer
scale that fits their share of the row; a row too wide for scale 1 is cut
into more rows.
"""

from __future__ import annotations

import numpy as np
from matplotlib.backends.backend_agg import RendererAgg
from matplotlib.font_manager import FontProperties, findfont, get_font
from matplotlib.ft2font import LoadFlags
from matplotlib.ticker import MaxNLocator

FONT = "DejaVu Sans"
TITLE_PT = 7.0
MIN_TITLE_PT = 5.0
CAPTION_PT = 7.0
TICK_PT = 6.0
LABEL_PT = 6.5
MIN_LABEL_PT = 4.5
LINE_SPACING = 1.2
TEXT_MARGIN = 0.02  # share of a text's width kept free (renderers differ by ~1 %)
# lengths in inches
PAD, GAP, TITLE_GAP, CAPTION_GAP = 0.04, 0.08, 0.025, 0.06
BAR_GAP, BAR_WIDTH, TICK_LENGTH_PT, TICK_PAD_PT, LABEL_PAD_PT = 0.04, 0.07, 2.0, 1.5, 2.0


class Measure:
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
        as PDF and SVG set it) advance, plus :data:`TEXT_MARGIN`."""
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
        return widest * (1.0 + TEXT_MARGIN)

    def line_height(self, size):
        return self.pt(size) * LINE_SPACING

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


def ticks(panel):
    if panel.ticks is not None:
        return [float(t) for t in panel.ticks]
    if np.isclose(panel.vmin, -panel.vmax):
        return [panel.vmin, 0.0, panel.vmax]
    values = MaxNLocator(nbins=4).tick_values(panel.vmin, panel.vmax)
    span = panel.vmax - panel.vmin
    return [float(v) for v in values if panel.vmin - 1e-9 * span <= v <= panel.vmax + 1e-9 * span]


def tick_label(value):
    text = f"{value:.3g}"
    return "0" if text in ("-0", "0") else text.replace("-", "\u2212")


def bar_label(panel, measure, height=None):
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


def bar_space(panel, measure, height=None):
    """Pixels a panel's colour bar takes to the right of its image (0 without one)."""
    if panel.colorbar is None:
        return 0
    labels = [tick_label(t) for t in ticks(panel)]
    widest = max((measure.width(label, TICK_PT) for label in labels), default=0.0)
    text, size = bar_label(panel, measure, height)
    lines = text.count("\n") + 1
    return int(np.ceil(measure.px(BAR_GAP) + measure.px(BAR_WIDTH) + measure.pt(TICK_LENGTH_PT + TICK_PAD_PT)
                       + widest + measure.pt(LABEL_PAD_PT) + lines * measure.line_height(size) + 2))


def shape_of(panel):
    return tuple(int(s) for s in np.asarray(panel.image).shape[:2])


def flow(rows, width_px, measure):
    """The rows, each cut into as few rows as let every image fit at scale 1."""
    pad, gap = measure.px(PAD), measure.px(GAP)
    flowed = []
    for row in rows:
        row = list(row)
        while row:
            count = len(row)
            while count > 1:
                part = row[:count]
                used = 2 * pad + gap * (count - 1) + sum(bar_space(p, measure) for p in part)
                if all(shape_of(p)[1] <= (width_px - used) / count for p in part):
                    break
                count -= 1
            flowed.append(row[:count])
            row = row[count:]
    return flowed


def scales_of(rows, width_px, measure, max_height_px):
    """Integer scale per panel shape, colour bar space per panel, and the rows re-flowed.

    A colour bar's label longer than its bar is wrapped, which widens the bar's
    space and may lower the scale; this is repeated until nothing changes.
    """
    pad, gap = measure.px(PAD), measure.px(GAP)
    flowed = flow(rows, width_px, measure)
    bars = {id(p): bar_space(p, measure) for row in flowed for p in row}
    for _ in range(8):
        scales = {}
        for row in flowed:
            used = 2 * pad + gap * (len(row) - 1) + sum(bars[id(p)] for p in row)
            share = (width_px - used) / len(row)
            for panel in row:
                height, width = shape_of(panel)
                if width > width_px - 2 * pad - bars[id(panel)]:
                    raise ValueError(f"panel {panel.title!r}: an image {width} pixels wide does not fit a figure "
                                     f"{width_px} pixels wide at scale 1; use a wider figure or a higher dpi")
                scale = max(1, min(int(share // width), int(max_height_px // height)))
                scales[(height, width)] = min(scale, scales.get((height, width), scale))
        wrapped = {id(p): bar_space(p, measure, shape_of(p)[0] * scales[shape_of(p)]) for row in flowed for p in row}
        if all(wrapped[key] <= bars[key] for key in bars):
            break
        bars = {key: max(bars[key], wrapped[key]) for key in bars}
    return flowed, scales, bars


def title_size(measure, titles):
    """The titles' size in points for one row: :data:`TITLE_PT`, smaller (down to :data:`MIN_TITLE_PT`) until
    every word fits the width its title may use."""
    size = TITLE_PT
    while size > MIN_TITLE_PT and any(measure.width(word, size) > limit
                                      for text, limit in titles for word in text.split()):
        size = max(MIN_TITLE_PT, size - 0.5)
    return size


def place(spec, rows, width_px, measure):
    """Place every panel, title, colour bar and the caption of ``spec`` on a figure ``width_px`` wide.

    Returns
    -------
    placed : list of dict
        Per panel: ``panel``, ``letter``, ``title`` (wrapped), ``title_size``, ``x``, ``y`` (top-left of
        the inset), ``title_y``, ``width``, ``height``, ``scale``, ``bar`` (pixels the colour bar takes).
    caption : str
        Wrapped.
    caption_y, height_px : int
    """
    pad, gap = measure.px(PAD), measure.px(GAP)
    flowed, scales, bars = scales_of(rows, width_px, measure, measure.px(spec.max_inset_height))
    letters = iter("abcdefghijklmnopqrstuvwxyz")
    placed, y = [], pad
    for row in flowed:
        cells = []
        for panel in row:
            scale = scales[shape_of(panel)]
            height, width = shape_of(panel)
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
        size = title_size(measure, [(text, limit) for _, text, limit in texts])
        titles = [(letter, measure.wrap(text, size, limit)) for letter, text, limit in texts]
        lines = max((t.count("\n") + 1 for _, t in titles if t), default=0)
        title_band = int(np.ceil(lines * measure.line_height(size))) + (measure.px(TITLE_GAP) if lines else 0)
        image_band = max(c[3] for c in cells)
        for (panel, scale, w, h, bar), (letter, title) in zip(cells, titles):
            placed.append({"panel": panel, "letter": letter, "title": title, "title_size": size,
                           "x": x + extra // 2, "title_y": y, "y": y + title_band, "width": w, "height": h,
                           "scale": scale, "bar": bar})
            x += w + bar + extra + gap
        y += title_band + image_band + gap
    caption = measure.wrap(spec.caption, CAPTION_PT, width_px - 2 * pad) if spec.caption else ""
    caption_y = y - gap + measure.px(CAPTION_GAP)
    if caption:
        y = caption_y + int(np.ceil((caption.count("\n") + 1) * measure.line_height(CAPTION_PT) + measure.pt(2)))
    height_px = y - gap + pad if not caption else y + pad
    return placed, caption, caption_y, height_px
