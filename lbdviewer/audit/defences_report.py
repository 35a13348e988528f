"""The pages of measured defences: ``lbdviewer defend``'s ``index.html``, and the section an audit with ``--defence`` shows.

Rebuilt from the defend table alone (``results.csv`` of ``defend``,
``defences.csv`` beside an audit's results; :func:`lbdviewer.defences.rows.read_defend_rows`):
per descriptor its privacy–utility figure
(:func:`lbdviewer.figures.tradeoff.write_tradeoff_figure`,
``privacy_utility_<descriptor>.png`` and ``.pdf``), the recommendation
(:func:`lbdviewer.defences.summary.recommend`, with its rule), the table of
every strength, and per input a strip of what the better attacker rebuilt at
each strength.
"""

from __future__ import annotations

import datetime
import os
import re
from pathlib import Path

from lbdviewer._runtime.versions import library_versions
from lbdviewer.audit.html import escape, number, page
from lbdviewer.audit.results_log import RESULTS
from lbdviewer.defences.rows import NONE, read_defend_rows, strength_text
from lbdviewer.defences.summary import MAX_MATCHING_COST, MIN_GAIN, recommend, summarise_defences
from lbdviewer.figures.tradeoff import write_tradeoff_figure
from lbdviewer.io.files import atomic_write

__all__ = ["INDEX", "defence_section", "figure_stem", "write_defence_figures", "write_defend_report"]

INDEX = "index.html"


def figure_stem(descriptor):
    """The file stem of a descriptor's privacy–utility figure.

    Examples
    --------
    >>> figure_stem("opencv-brief")
    'privacy_utility_opencv-brief'
    """
    return "privacy_utility_" + re.sub(r"[^A-Za-z0-9_.-]+", "_", descriptor)


def write_defence_figures(folder, points, *, formats=("png", "pdf")):
    """One privacy–utility figure per descriptor of ``points``, in ``folder``; ``{descriptor: {format: path}}``."""
    written = {}
    for descriptor in dict.fromkeys(p["descriptor"] for p in points):
        mine = [p for p in points if p["descriptor"] == descriptor]
        if any(p["defence"] != NONE for p in mine):
            written[descriptor] = write_tradeoff_figure(mine, Path(folder) / figure_stem(descriptor),
                                                        descriptor=descriptor, formats=formats, dpi=200)
    return written


def _points_table(points, baseline):
    head = ("<table><thead><tr><th>defence</th><th>keypoints</th><th>MMA@1</th><th>MMA@3</th><th>MMA@5</th>"
            "<th>homography</th><th>r aware</th><th>r naive</th><th>leakage r</th><th>text read</th>"
            "</tr></thead><tbody>")
    rows = []
    for p in points:
        cost = ("" if baseline is None or p is baseline or p["matching_accuracy_3px"] is None
                else f' <span class="muted">({p["matching_accuracy_3px"] - baseline["matching_accuracy_3px"]:+.2f})</span>')
        text = "–" if p["lines_total"] is None else f'{p["lines_read"]} of {p["lines_total"]} lines'
        rows.append(f'<tr><td>{escape(p["label"])}</td><td class="num">{number(p["keypoints"], 0)}</td>'
                    f'<td class="num">{number(p["matching_accuracy_1px"])}</td>'
                    f'<td class="num">{number(p["matching_accuracy_3px"])}{cost}</td>'
                    f'<td class="num">{number(p["matching_accuracy_5px"])}</td>'
                    f'<td class="num">{number(p["homography_accuracy"])}</td>'
                    f'<td class="num">{number(p["correlation_aware"])}</td>'
                    f'<td class="num">{number(p["correlation_naive"])}</td>'
                    f'<td class="num"><b>{number(p["correlation"])}</b></td><td>{text}</td></tr>')
    return head + "".join(rows) + "</tbody></table>"


def _strips(rows, descriptor):
    """Per input, the better attacker's reconstruction at every strength (thumbnails)."""
    ok = [r for r in rows if r["descriptor"] == descriptor and r["status"] == "ok"]
    parts = []
    for path in dict.fromkeys(r["input"] for r in ok):
        mine = [r for r in ok if r["input"] == path]
        best = {}
        for r in mine:
            key = (r["defence"], strength_text(r["strength"]))
            if key not in best or (r["correlation"] or 0.0) > (best[key]["correlation"] or 0.0):
                best[key] = r
        cells = []
        original = next((r.get("thumbnail_original") for r in mine if r.get("thumbnail_original")), None)
        if original:
            cells.append(f'<figure><img class="thumb small" src="{escape(original)}" alt="original">'
                         f"<figcaption>original</figcaption></figure>")
        for (defence, strength), r in best.items():
            label = "no defence" if defence == NONE else f"{defence} {strength}"
            cells.append(f'<figure><img class="thumb small" src="{escape(r["thumbnail_reconstruction"])}" '
                         f'alt="{escape(label)}" loading="lazy"><figcaption>{escape(label)}<br>'
                         f'r {number(r["correlation"])} ({escape(r["attacker"])})</figcaption></figure>')
        parts.append(f'<h3>{escape(os.path.basename(path))}</h3><div class="strip">{"".join(cells)}</div>')
    return "".join(parts)


def defence_section(points, rows, figures, *, strips=True):
    """The HTML of every descriptor's measured defences (see the module notes)."""
    parts = [f'<p class="lede">Each defence is applied to the features of both images of every synthetic pair, '
             f"as each device would send them, and matched with OpenCV's brute-force Hamming matcher (cross "
             f"check); MMA@t is the mean share of matches within t pixels, homography the share of pairs whose "
             f"RANSAC homography puts the corners within 3 px. Leakage r is the correlation of the better "
             f"attacker's reconstruction (aware: knows the defence; naive: ignores it) with the original over "
             f"the pixels the undefended features describe. Recommendation rule: the lowest leakage among the "
             f"defences that cost at most {MAX_MATCHING_COST:.2f} of MMA@3 and of homography accuracy, if it "
             f"lowers the correlation or the share of text lines read by at least {MIN_GAIN:.2f}.</p>"]
    for descriptor in dict.fromkeys(p["descriptor"] for p in points):
        mine = [p for p in points if p["descriptor"] == descriptor]
        baseline = next((p for p in mine if p["defence"] == NONE), None)
        advice = recommend(mine)
        parts.append(f"<h3>{escape(descriptor)}</h3>")
        if advice is not None:
            verdict = "recommended" if advice["point"] is not None else "no recommendation"
            parts.append(f'<p><span class="badge leak">{verdict}</span> {escape(advice["text"])}</p>')
        if descriptor in figures:
            parts.append(f'<div class="plots"><figure class="wide"><img src="{escape(figures[descriptor]["png"].name)}" '
                         f'alt="privacy-utility figure of {escape(descriptor)}"></figure></div>')
        parts.append(_points_table(mine, baseline))
        if strips:
            parts.append(_strips(rows, descriptor))
    return "\n".join(parts)


def write_defend_report(folder, *, title=None):
    """Rebuild ``folder/index.html`` and the figures of a ``defend`` folder from its ``results.csv``.

    Returns
    -------
    pathlib.Path
        The ``index.html`` written.
    """
    folder = Path(folder)
    rows = read_defend_rows(folder / RESULTS)
    points = summarise_defences(rows)
    figures = write_defence_figures(folder, points)
    title = title or f"Defences measured: {folder.name}"
    failed = [r for r in rows if r["status"] != "ok"]
    versions = ", ".join(f"{k} {v}" for k, v in library_versions().items() if v)
    settings = sorted({(r["pairs"], r["seed"], r["iterations"]) for r in rows if r["status"] == "ok"}, key=str)
    body = [f"<header><h1>{escape(title)}</h1>",
            f'<p class="meta">{len(rows)} rows · {len({r["input"] for r in rows})} inputs · '
            f'{len({r["descriptor"] for r in rows})} descriptors · {len(failed)} errors · generated '
            f'{datetime.datetime.now().strftime("%Y-%m-%d %H:%M")}</p></header>',
            '<section class="defences"><h2>Privacy against matching</h2>',
            defence_section(points, rows, figures), "</section>"]
    if failed:
        body.append('<section><h2>Tasks that failed</h2><table><thead><tr><th>input</th><th>descriptor</th>'
                    "<th>defence</th><th>attacker</th><th>status</th></tr></thead><tbody>")
        body.extend(f'<tr><td>{escape(os.path.basename(r["input"]))}</td><td>{escape(r["descriptor"])}</td>'
                    f'<td>{escape(r["defence"])} {escape(strength_text(r["strength"]))}</td>'
                    f'<td>{escape(r["attacker"])}</td><td class="status">{escape(r["status"])}</td></tr>'
                    for r in failed)
        body.append("</tbody></table></section>")
    runs = "; ".join(f"{pairs} pairs of each kind, seed {seed}, {iterations or 'default'} iterations"
                     for pairs, seed, iterations in settings) or "–"
    body.append(f'<section><h2>Run settings</h2><dl class="settings"><dt>pairs, seed, iterations</dt>'
                f"<dd>{escape(runs)}</dd><dt>versions</dt><dd>{escape(versions)}</dd></dl></section>")
    body.append('<footer>lbdviewer defend · rows in <a href="results.csv">results.csv</a></footer>')
    return atomic_write(folder / INDEX, page(title, "\n".join(body)).encode("utf-8"))
