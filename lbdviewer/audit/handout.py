"""The audit report as a PDF handout (A4), drawn with matplotlib in the figures' one style.

Page 1 holds what a manager acts on: the title, which descriptor leaks most,
each descriptor's risk level with its reason and the recommendation (its cost
in matching), the risk rule, and the run settings with library versions.
Then the privacy–utility panels of the measured defences
(:func:`lbdviewer.figures.tradeoff.draw_tradeoff`), then the rows worst leak
first, :data:`ROWS_PER_PAGE` a page: original and reconstruction (the
thumbnails, pixel for pixel), metrics and, for documents only, the text read.
Text is TrueType in the PDF (searchable); nothing is cut across pages.
"""

from __future__ import annotations

import datetime
import os
from pathlib import Path

import matplotlib
from matplotlib.backends.backend_pdf import PdfPages
from matplotlib.figure import Figure
from matplotlib.font_manager import FontProperties
from matplotlib.patches import FancyBboxPatch
from matplotlib.textpath import TextToPath

from lbdviewer.audit.plots import draw_correlation_by_descriptor
from lbdviewer.audit.results import has_text, is_legible, leak_order, lines_read_back, summarise, text_lines
from lbdviewer.audit.risk import RULE, leak_ranking
from lbdviewer.defences.summary import recommend
from lbdviewer.figures.style import style_context
from lbdviewer.figures.tradeoff import COLOURS, draw_tradeoff
from lbdviewer.io.files import atomic_write

__all__ = ["A4", "ROWS_PER_PAGE", "write_handout"]

#: Page size, inches (portrait).
A4 = (8.27, 11.69)
ROWS_PER_PAGE = 5
RISK_COLOURS = {"high": "#b91c1c", "medium": "#b45309", "low": "#15803d"}
MARGIN = 0.07  # of the page width, each side
_MEASURE = TextToPath()


def _page():
    return Figure(figsize=A4, facecolor="white")


def _wrap(paragraph, font, width):
    """``paragraph`` cut at spaces into lines at most ``width`` points wide in ``font`` (a longer word alone)."""
    def fits(line):
        return _MEASURE.get_text_width_height_descent(line, font, ismath=False)[0] <= width

    lines = []
    for word in paragraph.split():
        if lines and fits(f"{lines[-1]} {word}"):
            lines[-1] = f"{lines[-1]} {word}"
        else:
            lines.append(word)
    return lines or [""]


def _text(figure, y, text, *, size=8, weight="normal", colour="#1f2933", x=MARGIN, gap=1.45):
    """Text from the top at ``y`` (figure fraction), wrapped at the right margin; returns the ``y`` below it.

    Lines are measured in the font they are drawn in (capitals are wider
    than a count of characters allows: OCR text in capitals ran past the page).
    """
    font = FontProperties(size=size, weight=weight)
    width = (1.0 - MARGIN - x) * A4[0] * 72.0  # points
    lines = []
    for paragraph in str(text).split("\n"):
        lines.extend(_wrap(paragraph, font, width))
    figure.text(x, y, "\n".join(lines), fontsize=size, weight=weight, color=colour, va="top", ha="left",
                linespacing=gap)
    return y - len(lines) * size * gap / 72.0 / A4[1] - 0.006


def _badge(figure, x, y, level):
    figure.patches.append(FancyBboxPatch((x, y - 0.011), 0.062, 0.014, boxstyle="round,pad=0.002",
                                         transform=figure.transFigure, facecolor=RISK_COLOURS[level],
                                         edgecolor="none"))
    figure.text(x + 0.031, y - 0.004, level.upper(), fontsize=7, weight="bold", color="white", ha="center",
                va="center")


def _summary_page(title, summary, points, settings, rows):

    figure = _page()
    y = _text(figure, 0.95, title, size=17, weight="bold")
    ok = [row for row in rows if row["status"] == "ok"]
    y = _text(figure, y, f"{len({row['input'] for row in rows})} inputs, {len(summary)} descriptors, "
                         f"{sum(row['status'] != 'ok' for row in rows)} errors; legible text read back in "
                         f"{sum(map(is_legible, ok))} of {sum(map(has_text, ok))} rows whose original holds text. "
                         f"Generated {datetime.datetime.now().strftime('%Y-%m-%d %H:%M')}.", colour="#6b7785")
    ranking = leak_ranking(summary)
    if ranking:
        worst = ranking[0]
        y = _text(figure, y - 0.01, f"{worst['descriptor']} leaks most: {worst['risk']} risk, "
                                    f"{worst['risk_reason']}.", size=11, weight="bold")
    y -= 0.01
    for item in ranking:
        _badge(figure, MARGIN, y, item["risk"])
        figure.text(MARGIN + 0.075, y - 0.004, item["descriptor"], fontsize=10, weight="bold", va="center")
        mine = [p for p in points if p["descriptor"] == item["descriptor"]]
        advice = recommend(mine) if mine else None
        correlation = item["median_correlation"]
        text = (f"median correlation {'–' if correlation is None else f'{correlation:.2f}'} over "
                f"{item['ok']} inputs; text read back from "
                + (f"{item['legible']} of {item['with_text']} documents" if item["with_text"] else
                   "none (no text in the originals)")
                + "\nRecommendation: " + ("no defence measured" if advice is None else advice["text"]) + ".")
        y = _text(figure, y - 0.016, text, x=MARGIN + 0.075) - 0.008
    if any(row["correlation"] is not None for row in ok):
        axes = figure.add_axes([MARGIN + 0.05, y - 0.25, 0.45, 0.22])
        draw_correlation_by_descriptor(axes, rows)
        for side in ("top", "right"):
            axes.spines[side].set_visible(False)
        y -= 0.29
    y = _text(figure, y - 0.005, f"Risk rule. {RULE} Correlation is Pearson's, between the rebuilt and the "
                                 f"original image over the pixels the keypoints cover.", size=7, colour="#6b7785")
    if not points:
        y = _text(figure, y, "Defences were not measured: lbdviewer audit INPUT... -o DIR --defence "
                             "keep-keypoints-aware:0.5 --defence rr:eps=1,2 measures what each costs in matching.",
                  size=7, colour="#6b7785")
    last = settings[-1] if settings else {}
    lines = [f"Descriptors: {', '.join(last.get('descriptors', [])) or '–'}; keypoints per image: "
             f"{last.get('keypoints', '–')}; mode {last.get('mode', '–')}, iterations "
             f"{last.get('iterations') or 'default'}; OCR: {last.get('ocr', '–')}; defences: "
             f"{', '.join(last.get('defences', [])) or 'none'}; ran on {last.get('ran_on', '–')}.",
             "Versions: " + ", ".join(f"{k} {v}" for k, v in (last.get("versions") or {}).items() if v)]
    _text(figure, max(y - 0.02, 0.16), "Run settings\n" + "\n".join(lines), size=7, colour="#6b7785")
    return figure


def _defence_page(points):
    descriptors = [d for d in dict.fromkeys(p["descriptor"] for p in points)
                   if any(p["defence"] != "none" for p in points if p["descriptor"] == d)]
    figure = _page()
    figure.text(MARGIN, 0.95, "Defences measured: leakage against matching", fontsize=13, weight="bold", va="top")
    grid = figure.add_gridspec(max(len(descriptors), 1), 2, left=0.1, right=0.95, top=0.88, bottom=0.1, hspace=0.45,
                               wspace=0.3)
    for row, descriptor in enumerate(descriptors[:3]):
        mine = [p for p in points if p["descriptor"] == descriptor]
        axes = figure.add_subplot(grid[row, 0])
        draw_tradeoff(axes, mine, "correlation", "correlation")
        axes.set_title(f"{descriptor}: what the better attacker rebuilds", fontsize=8, loc="left")
        if any(p.get("text_share") is not None for p in mine):
            text_axes = figure.add_subplot(grid[row, 1])
            draw_tradeoff(text_axes, mine, "text_share", "lines of text read")
            text_axes.set_title(f"{descriptor}: text read back", fontsize=8, loc="left")
    handles = [matplotlib.lines.Line2D([], [], color=colour, marker="o", markersize=3, label=kind)
               for kind, colour in COLOURS.items() if any(p["defence"] == kind for p in points)]
    handles.append(matplotlib.lines.Line2D([], [], color="black", marker="*", linestyle="none", markersize=8,
                                           label="no defence"))
    figure.legend(handles=handles, loc="lower center", ncols=len(handles), frameon=False, fontsize=7)
    return figure


def _thumbnail(folder, name):
    import cv2

    if not name:
        return None
    pixels = cv2.imread(str(Path(folder) / name), cv2.IMREAD_GRAYSCALE)
    return None if pixels is None else pixels


def _rows_page(rows, folder, number, total):

    figure = _page()
    figure.text(MARGIN, 0.965, f"Worst leaks first ({number} of {total})", fontsize=11, weight="bold", va="top")
    band = 0.88 / ROWS_PER_PAGE
    for k, row in enumerate(rows):
        top = 0.93 - k * band
        for column, kind in enumerate(("original", "reconstruction")):
            axes = figure.add_axes([MARGIN + column * 0.2, top - band + 0.012, 0.19, band - 0.02])
            axes.set_axis_off()
            pixels = _thumbnail(folder, row.get(f"thumbnail_{kind}"))
            if pixels is not None:
                axes.imshow(pixels, cmap="gray", vmin=0, vmax=255, interpolation="nearest")
            axes.set_title(kind if kind == "original" else "rebuilt from descriptors", fontsize=7, loc="left")
        lines = [f"{os.path.basename(row['input'])} · {row['descriptor']}",
                 f"keypoints {row['keypoints']}, coverage {_pct(row['coverage'])}, correlation "
                 f"{_num(row['correlation'])}, rank correlation {_num(row['rank_correlation'])}, SSIM "
                 f"{_num(row['ssim'])}"]
        if has_text(row):
            read, total = lines_read_back(row)
            lines += [("LEGIBLE: " if is_legible(row) else "not legible: ") + f"{read} of {total} lines read back, "
                      f"similarity {_num(row['ocr_similarity'])}",
                      f"original: {' / '.join(text_lines(row['ocr_original']))}",
                      f"rebuilt: {' / '.join(text_lines(row.get('ocr_reconstruction')))}"]
        else:
            lines.append("no legible text in the original")
        _text(figure, top - 0.012, "\n".join(lines), size=7.5, x=MARGIN + 0.42)
    return figure


def _num(value):
    return "–" if value is None else f"{value:.2f}"


def _pct(value):
    return "–" if value is None else f"{100 * value:.0f} %"


def write_handout(path, rows, *, folder, title, settings=(), points=()):
    """Write the handout PDF (see the module notes) to ``path``; return the path.

    Parameters
    ----------
    path : str or os.PathLike
    rows : list of dict
        :func:`lbdviewer.audit.results.read_results`.
    folder : str or os.PathLike
        The report folder (thumbnails).
    title : str
    settings : list of dict
        :func:`lbdviewer.audit.results.read_settings`.
    points : list of dict
        :func:`lbdviewer.defences.summary.summarise_defences` of the folder's ``defences.csv``.
    """
    import io


    summary = summarise(rows)
    ordered = leak_order(rows)
    pages = [ordered[start:start + ROWS_PER_PAGE] for start in range(0, len(ordered), ROWS_PER_PAGE)]
    buffer = io.BytesIO()
    with style_context(), PdfPages(buffer, metadata={"Title": title, "Creator": "lbdviewer audit",
                                                                "CreationDate": None}) as pdf:
        pdf.savefig(_summary_page(title, summary, list(points), list(settings), rows))
        if any(p["defence"] != "none" for p in points):
            pdf.savefig(_defence_page(list(points)))
        for number, chunk in enumerate(pages, start=1):
            pdf.savefig(_rows_page(chunk, folder, number, len(pages)))
    return atomic_write(Path(path), buffer.getvalue())

