"""The audit report: a summary a manager can act on, plots, ``index.html``, Parquet and a PDF.

Everything here is rebuilt from ``REPORT_DIR/results.csv`` (and the
thumbnails, ``settings.json`` and, after ``audit --defence``,
``defences.csv`` beside it), so a report can be regenerated at any time, also
after an interrupted run. ``index.html`` is static (no script, no server):
open it from the folder, or print it (a print stylesheet lays it out on A4).
It opens with the summary: each descriptor's risk level with the rule that
sets it (:mod:`lbdviewer.audit.risk`), which descriptor leaks most, and, when
defences were measured, the recommendation for each descriptor with its cost
in matching (:func:`lbdviewer.defences.summary.recommend`). Text leaks are
counted as :mod:`lbdviewer.audit.results` says. Every text that comes from a
file name, an error message or OCR is HTML-escaped.
"""

from __future__ import annotations

import datetime
import os
from pathlib import Path

from lbdviewer.audit.defences_report import defence_section, write_defence_figures
from lbdviewer.audit.handout import write_handout
from lbdviewer.audit.html import bar, colours, escape, number, page, share
from lbdviewer.audit.plots import PLOT_CORRELATION, PLOT_KEYPOINTS, plot_correlation_by_descriptor, plot_leak_vs_keypoints
from lbdviewer.audit.results import (has_text, is_legible, is_ok, leak_order, lines_read_back, read_results,
                                     read_settings, summarise, text_lines, write_parquet)
from lbdviewer.audit.risk import RULE, leak_ranking
from lbdviewer.defences.rows import read_defend_rows
from lbdviewer.defences.summary import recommend, summarise_defences
from lbdviewer.io.files import atomic_write

__all__ = ["DEFENCES", "INDEX", "leak_order", "render_html", "summarise", "write_report"]

INDEX = "index.html"
PARQUET = "results.parquet"
DEFENCES = "defences.csv"


def write_report(folder, *, title=None, pdf=None):
    """Rebuild ``index.html``, its plots and (with pyarrow) ``results.parquet`` from the folder's tables.

    Parameters
    ----------
    folder : str or os.PathLike
        The report folder.
    title : str, optional
        The report's title (default: the last run's ``--title``, else
        ``"Privacy audit: <folder name>"``).
    pdf : str or os.PathLike, optional
        Also write the handout PDF here (:func:`lbdviewer.audit.handout.write_handout`).

    Returns
    -------
    pathlib.Path
        The ``index.html`` written.
    """
    folder = Path(folder)
    rows = read_results(folder)
    settings = read_settings(folder)
    title = title or next((run["title"] for run in reversed(settings) if run.get("title")), None) \
        or f"Privacy audit: {folder.name}"
    plot_correlation_by_descriptor(rows, folder / PLOT_CORRELATION)
    plot_leak_vs_keypoints(rows, folder / PLOT_KEYPOINTS)
    write_parquet(rows, folder / PARQUET)
    defend_rows = read_defend_rows(folder / DEFENCES)
    points = summarise_defences(defend_rows)
    figures = write_defence_figures(folder, points) if points else {}
    index = atomic_write(folder / INDEX, render_html(rows, title=title, settings=settings, points=points,
                                                     defend_rows=defend_rows, figures=figures).encode("utf-8"))
    if pdf is not None:
        write_handout(pdf, rows, folder=folder, title=title, settings=settings, points=points)
    return index


def _thumb(row, kind):
    name = row.get(f"thumbnail_{kind}")
    if not name:
        return f'<div class="thumb empty">no {escape(kind)}</div>'
    return f'<img class="thumb" src="{escape(name)}" alt="{escape(kind)}" loading="lazy">'


def _ocr_cell(row):
    if not has_text(row):
        guessed = row.get("ocr_confidence")
        text = "no text read" if guessed is None else \
            f"no legible text in the original (OCR's guesses at confidence {guessed:.0f})"
        return f'<td class="ocr muted">{text}</td>'
    badge = '<span class="badge leak">legible</span>' if is_legible(row) else ""
    confidence = "" if row.get("ocr_confidence") is None else f" (confidence {row['ocr_confidence']:.0f})"
    read, total = lines_read_back(row)
    return (f'<td class="ocr">{badge}<div><b>original</b> {escape(_clip(" / ".join(text_lines(row["ocr_original"]))))}'
            f'<span class="muted">{confidence}</span></div>'
            f'<div><b>rebuilt</b> {escape(_clip(" / ".join(text_lines(row.get("ocr_reconstruction")))))}</div>'
            f'<div class="muted">{read} of {total} lines read back, similarity '
            f'{number(row.get("ocr_similarity"))}</div></td>')


def _clip(text, length=90):
    text = text or ""
    return text if len(text) <= length else text[:length - 1] + "…"


def _text_share(item):
    if not item["with_text"]:
        return '<span class="muted">no text in originals</span>'
    return f'<b>{item["legible"]} of {item["with_text"]}</b> <span class="muted">documents</span>'


def _summary_box(summary, points):
    ranking = leak_ranking(summary)
    parts = ['<section class="summary-box"><h2>Summary</h2>']
    if ranking:
        worst = ranking[0]
        parts.append(f'<p><b>{escape(worst["descriptor"])} leaks most</b>: <span class="risk {worst["risk"]}">'
                     f'{worst["risk"]}</span> risk, {escape(worst["risk_reason"])}.</p>')
    parts.append('<table><thead><tr><th>descriptor</th><th>risk</th><th>why</th><th>text read back</th>'
                 "<th>median correlation</th><th>recommendation</th></tr></thead><tbody>")
    for item in ranking:
        mine = [p for p in points if p["descriptor"] == item["descriptor"]]
        advice = recommend(mine) if mine else None
        if advice is None:
            text = '<span class="muted">no defence measured (audit --defence ...)</span>'
        else:
            text = escape(advice["text"]) if advice["point"] is not None else \
                f'<span class="muted">{escape(advice["text"])}</span>'
        parts.append(f'<tr><td><b>{escape(item["descriptor"])}</b></td><td><span class="risk {item["risk"]}">'
                     f'{item["risk"]}</span></td><td>{escape(item["risk_reason"])}</td><td>{_text_share(item)}</td>'
                     f'<td>{bar(item["median_correlation"])}</td><td>{text}</td></tr>')
    parts.append(f'</tbody></table><p class="rule">Risk rule: {escape(RULE)} Correlation is Pearson\'s, between '
                 "the rebuilt and the original image over the pixels the keypoints cover (1: the same picture up "
                 "to brightness and contrast). Text is counted only over inputs whose original has legible text "
                 "(confident OCR).</p>")
    if not points:
        parts.append('<p class="rule">Defences were not measured. Run <code>lbdviewer audit INPUT... -o DIR '
                     "--defence keep-keypoints-aware:0.5 --defence rr:eps=1,2</code> to measure what each costs "
                     "in matching and hides from an attacker who knows it.</p>")
    parts.append("</section>")
    return "\n".join(parts)


def _settings_section(rows, settings):
    from lbdviewer._runtime.versions import library_versions

    last = settings[-1] if settings else {}
    versions = last.get("versions") or library_versions()
    modes = ", ".join(sorted({str(row["mode"]) for row in rows if row.get("mode")})) or "–"
    items = [("runs", f"{len(settings)} (the last started {last.get('started', '–')})" if settings else "–"),
             ("descriptors", ", ".join(last.get("descriptors", [])) or ", ".join(dict.fromkeys(
                 row["descriptor"] for row in rows))),
             ("keypoints per image", last.get("keypoints", "–")), ("inversion", f"mode {modes}, iterations "
                                                                               f"{last.get('iterations') or 'default'}"),
             ("OCR", last.get("ocr", "–")), ("defences", ", ".join(last.get("defences", [])) or "none"),
             ("ran on", last.get("ran_on", "–")),
             ("versions", ", ".join(f"{name} {version}" for name, version in versions.items() if version))]
    body = "".join(f"<dt>{escape(name)}</dt><dd>{escape(value)}</dd>" for name, value in items)
    return f'<section><h2>Run settings and versions</h2><dl class="settings">{body}</dl></section>'


def render_html(rows, *, title="Privacy audit", settings=(), points=(), defend_rows=(), figures=None):
    """The static report page for ``rows`` (see :func:`write_report`), as a string.

    Examples
    --------
    >>> from lbdviewer.audit.tasks import COLUMNS
    >>> page = render_html([{**dict.fromkeys(COLUMNS), "input": "/x/<b>.png", "descriptor": "orb",
    ...                      "status": "error: bad <file>"}])
    >>> "&lt;b&gt;.png" in page and "<b>.png" not in page and "bad &lt;file&gt;" in page
    True
    """
    summary = summarise(rows)
    palette = colours(row["descriptor"] for row in rows)
    ok, failed = leak_order(rows), [row for row in rows if not is_ok(row)]
    inputs = len({row["input"] for row in rows})
    generated = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    worst = max((row["correlation"] for row in ok if row["correlation"] is not None), default=None)
    with_text = sum(map(has_text, ok))
    legible = sum(map(is_legible, ok))
    parts = [f"""<header><h1>{escape(title)}</h1>
<p class="lede">What the descriptors give away: each input was described, the image forgotten, and rebuilt from
the descriptors alone. Correlation, rank correlation and SSIM compare the rebuilt image with the original over the
pixels the keypoints cover; OCR checks whether text can be read back from the reconstruction as an
eavesdropper sees it (stretched without the original).</p>
<p class="meta">{len(rows)} rows · {inputs} inputs · {len(summary)} descriptors · {len(failed)} errors ·
generated {escape(generated)}</p></header>""", _summary_box(summary, list(points)),
             f"""<section class="cards">
<div class="card"><div class="value">{inputs}</div><div class="label">inputs audited</div></div>
<div class="card accent"><div class="value">{number(worst)}</div><div class="label">highest correlation
(worst leak)</div></div>
<div class="card accent"><div class="value">{legible} <small>of {with_text}</small></div>
<div class="label">rows whose legible text OCR reads back</div></div>
<div class="card"><div class="value">{len(failed)}</div><div class="label">rows that failed</div></div>
</section>
<section><h2>Per descriptor</h2><table class="summary"><thead><tr><th>descriptor</th><th>risk</th><th>ok / rows</th>
<th>median correlation</th><th>median rank corr.</th><th>median SSIM</th><th>median keypoints</th>
<th>legible text</th><th>median seconds</th></tr></thead><tbody>"""]
    for item in summary:
        parts.append(
            f'<tr><td><span class="dot" style="background:{palette[item["descriptor"]]}"></span>'
            f'{escape(item["descriptor"])}</td><td><span class="risk {item["risk"]}">{item["risk"]}</span></td>'
            f'<td>{item["ok"]} / {item["rows"]}</td>'
            f'<td>{bar(item["median_correlation"])}</td><td>{number(item["median_rank_correlation"])}</td>'
            f'<td>{number(item["median_ssim"])}</td><td>{number(item["median_keypoints"], 0)}</td>'
            f'<td>{_text_share(item)}</td><td>{number(item["median_seconds"], 1)}</td></tr>')
    parts.append(f"""</tbody></table></section>
<section class="plots"><figure><img src="{PLOT_CORRELATION}" alt="correlation per descriptor"></figure>
<figure><img src="{PLOT_KEYPOINTS}" alt="correlation against keypoints kept"></figure></section>""")
    if points:
        parts.append('<section class="defences"><h2>Defences measured</h2>'
                     + defence_section(list(points), list(defend_rows), figures or {}, strips=False) + "</section>")
    parts.append("""<section class="rows"><h2>Worst leaks first</h2><table class="rows"><thead><tr>
<th>original | rebuilt from descriptors</th><th>input</th><th>keypoints</th><th>coverage</th><th>correlation</th>
<th>rank corr.</th><th>SSIM</th><th>text</th><th>seconds</th></tr></thead><tbody>""")
    for row in ok:
        parts.append(
            f'<tr><td class="pair">{_thumb(row, "original")}{_thumb(row, "reconstruction")}</td>'
            f'<td class="input"><div class="name" title="{escape(row["input"])}">{escape(os.path.basename(row["input"]))}'
            f'</div><span class="dot" style="background:{palette[row["descriptor"]]}"></span>'
            f'{escape(row["descriptor"])}<div class="muted">{escape(row["worker"])}</div></td>'
            f'<td>{escape(row["keypoints"])}</td><td>{share(row["coverage"])}</td><td>{bar(row["correlation"])}</td>'
            f'<td>{number(row["rank_correlation"])}</td><td>{number(row["ssim"])}</td>{_ocr_cell(row)}'
            f'<td>{number(row["seconds"], 1)}</td></tr>')
    parts.append("</tbody></table></section>")
    if failed:
        parts.append('<section><h2>Inputs that failed</h2><table class="errors"><thead><tr><th>input</th>'
                     "<th>descriptor</th><th>status</th><th>worker</th></tr></thead><tbody>")
        for row in failed:
            parts.append(f'<tr><td title="{escape(row["input"])}">{escape(os.path.basename(row["input"]))}</td>'
                         f'<td>{escape(row["descriptor"])}</td><td class="status">{escape(row["status"])}</td>'
                         f'<td class="muted">{escape(row["worker"])}</td></tr>')
        parts.append("</tbody></table></section>")
    parts.append(_settings_section(rows, list(settings)))
    parts.append('<footer>lbdviewer audit · rows in <a href="results.csv">results.csv</a></footer>')
    return page(title, "\n".join(parts))
