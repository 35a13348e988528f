"""The audit report: rows read back, a summary a manager can act on, plots, ``index.html``, Parquet and a PDF.

Everything here is rebuilt from ``REPORT_DIR/results.csv`` (and the
thumbnails, ``settings.json`` and, after ``audit --defence``,
``defences.csv`` beside it), so a report can be regenerated at any time, also
after an interrupted run. ``index.html`` is static (no script, no server):
open it from the folder, or print it (a print stylesheet lays it out on A4).
It opens with the summary: each descriptor's risk level with the rule that
sets it (:mod:`lbdviewer.audit.risk`), which descriptor leaks most, and, when
defences were measured, the recommendation for each descriptor with its cost
in matching (:func:`lbdviewer.defences.summary.recommend`). Every text that
comes from a file name, an error message or OCR is HTML-escaped.

**Text** is counted only over the inputs whose original holds legible text
(:func:`has_text`: OCR reads lines of confident words in it, the
``ocr_original`` of :mod:`lbdviewer.audit.tasks`); such a row **leaks legible
text** when OCR reads back from the reconstruction a line of it
(:func:`lbdviewer.evaluation.ocr.lines_read`: a ratio of at least
:data:`lbdviewer.evaluation.ocr.MATCH_RATIO`), or the whole text with a
similarity of at least :data:`LEGIBLE_SIMILARITY`. What OCR guesses in a
photo is neither counted nor shown. The rows are listed worst leak first:
legible text first, then by decreasing correlation.
"""

from __future__ import annotations

import csv
import datetime
import io
import json
import os
import statistics
from pathlib import Path

from lbdviewer.audit.defences_report import defence_section, write_defence_figures
from lbdviewer.audit.html import bar, colours, escape, number, page, share
from lbdviewer.audit.risk import RULE, leak_ranking, risk
from lbdviewer.audit.runner import RESULTS
from lbdviewer.audit.tasks import COLUMNS, LINE_SEPARATOR
from lbdviewer.defences.rows import read_defend_rows
from lbdviewer.defences.summary import recommend, summarise_defences
from lbdviewer.evaluation.ocr import lines_read
from lbdviewer.io.files import atomic_write
from lbdviewer.io.strict_json import save_json

__all__ = ["INDEX", "LEGIBLE_SIMILARITY", "SETTINGS", "has_text", "is_legible", "leak_order", "lines_read_back",
           "read_results", "read_settings", "record_settings", "render_html", "summarise", "text_lines",
           "write_report"]

INDEX = "index.html"
PARQUET = "results.parquet"
SETTINGS = "settings.json"
DEFENCES = "defences.csv"
PLOT_CORRELATION = "correlation_by_descriptor.svg"
PLOT_KEYPOINTS = "correlation_vs_keypoints.svg"
#: OCR similarity from which a reconstruction counts as leaking the original's text.
LEGIBLE_SIMILARITY = 0.5
_INTEGERS = ("keypoints", "iterations")
_FLOATS = ("coverage", "correlation", "rank_correlation", "ssim", "ocr_similarity", "ocr_confidence", "seconds")


def read_results(folder):
    """The rows of ``folder/results.csv``, typed: ints, floats, None for empty cells.

    Returns
    -------
    list of dict

    Raises
    ------
    ValueError
        If the file is missing or has other columns.
    """
    path = Path(folder) / RESULTS
    if not path.is_file():
        raise ValueError(f"{str(path)!r} does not exist: not an audit report folder")
    with open(path, newline="", encoding="utf-8") as file:
        reader = csv.reader(file)
        columns = tuple(next(reader, ()))
        if columns != COLUMNS:
            raise ValueError(f"{str(path)!r} has columns {list(columns)}, expected {list(COLUMNS)}")
        return [_typed(dict(zip(COLUMNS, values))) for values in reader if len(values) == len(COLUMNS)]


def _typed(row):
    for column in COLUMNS:
        value = row[column]
        if value == "":
            row[column] = None
        elif column in _INTEGERS:
            row[column] = int(value)
        elif column in _FLOATS:
            row[column] = float(value)
    return row


def record_settings(folder, settings):
    """Append one run's settings (a JSON-ready dict) to ``folder/settings.json``; return its path.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     _ = record_settings(folder, {"keypoints": 500})
    ...     _ = record_settings(folder, {"keypoints": 300})
    ...     [run["keypoints"] for run in read_settings(folder)]
    [500, 300]
    """
    runs = read_settings(folder)
    Path(folder).mkdir(parents=True, exist_ok=True)
    return save_json(Path(folder) / SETTINGS, {"runs": runs + [settings]})


def read_settings(folder):
    """The settings of every run recorded in ``folder/settings.json``, oldest first (``[]`` without one)."""
    path = Path(folder) / SETTINGS
    if not path.is_file():
        return []
    try:
        runs = json.loads(path.read_text(encoding="utf-8")).get("runs", [])
    except (ValueError, AttributeError):
        return []
    return [run for run in runs if isinstance(run, dict)]


def is_ok(row):
    """True for a row whose task succeeded."""
    return row["status"] == "ok"


def has_text(row):
    """True if the original holds legible text (OCR read lines of confident words in it).

    Examples
    --------
    >>> has_text({"ocr_original": ""}), has_text({"ocr_original": "MOBY DICK | DRACULA"})
    (False, True)
    """
    return bool((row.get("ocr_original") or "").strip())


def text_lines(text):
    """The lines of an ``ocr_original`` or ``ocr_reconstruction`` cell.

    Examples
    --------
    >>> text_lines("MOBY DICK | DRACULA"), text_lines(None)
    (['MOBY DICK', 'DRACULA'], [])
    """
    return [line.strip() for line in (text or "").split(LINE_SEPARATOR.strip()) if line.strip()]


def lines_read_back(row):
    """``(read, total)``: how many lines of the original's legible text OCR reads in the reconstruction.

    Examples
    --------
    >>> lines_read_back({"ocr_original": "IDENTITY CARD | SURNAME MARTIN", "ocr_reconstruction": "17; | SURNAME MARTlN"})
    (1, 2)
    """
    lines = text_lines(row.get("ocr_original"))
    if not lines:
        return 0, 0
    return lines_read("\n".join(text_lines(row.get("ocr_reconstruction"))), lines)[0], len(lines)


def is_legible(row):
    """True if the reconstruction gives away the original's text (see the module notes).

    Examples
    --------
    >>> is_legible({"ocr_original": "TOP SECRET", "ocr_similarity": 0.8})
    True
    >>> is_legible({"ocr_original": "A LINE | SURNAME MARTIN", "ocr_reconstruction": "SURNAME MARTIN",
    ...             "ocr_similarity": 0.4})
    True
    >>> is_legible({"ocr_original": "", "ocr_similarity": 1.0})
    False
    """
    if not has_text(row):
        return False
    return (row.get("ocr_similarity") or 0.0) >= LEGIBLE_SIMILARITY or lines_read_back(row)[0] > 0


def leak_order(rows):
    """Successful rows, worst leak first: legible text first, then decreasing correlation."""
    ok = [row for row in rows if is_ok(row)]
    return sorted(ok, key=lambda row: (not is_legible(row), -_value(row["correlation"], -2.0)))


def _value(value, missing):
    return missing if value is None else value


def _median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def summarise(rows):
    """One summary per descriptor, in order of first appearance.

    Returns
    -------
    list of dict
        ``descriptor``, ``rows``, ``ok``, ``errors``, ``median_correlation``,
        ``median_rank_correlation``, ``median_ssim``, ``median_keypoints``,
        ``with_text`` (ok rows whose original holds legible text),
        ``legible`` (of those, the ones whose text the reconstruction gives
        away), ``legible_share`` (None when none holds text), ``median_seconds``,
        ``risk`` and ``risk_reason`` (:func:`lbdviewer.audit.risk.risk`).

    Examples
    --------
    >>> rows = [{"descriptor": "orb", "status": "ok", "correlation": 0.5, "rank_correlation": 0.4,
    ...          "ssim": 0.2, "keypoints": 10, "seconds": 1.0, "ocr_original": "HELLO", "ocr_similarity": 0.9},
    ...         {"descriptor": "orb", "status": "error: x", "correlation": None, "rank_correlation": None,
    ...          "ssim": None, "keypoints": None, "seconds": 0.1}]
    >>> s = summarise(rows)[0]
    >>> s["ok"], s["errors"], s["median_correlation"], s["legible"], s["with_text"], s["risk"]
    (1, 1, 0.5, 1, 1, 'high')
    """
    by_descriptor = {}
    for row in rows:
        by_descriptor.setdefault(row["descriptor"], []).append(row)
    summary = []
    for descriptor, group in by_descriptor.items():
        ok = [row for row in group if is_ok(row)]
        text = [row for row in ok if has_text(row)]
        legible = sum(map(is_legible, text))
        item = {
            "descriptor": descriptor, "rows": len(group), "ok": len(ok), "errors": len(group) - len(ok),
            "median_correlation": _median(row["correlation"] for row in ok),
            "median_rank_correlation": _median(row["rank_correlation"] for row in ok),
            "median_ssim": _median(row["ssim"] for row in ok),
            "median_keypoints": _median(row["keypoints"] for row in ok),
            "with_text": len(text), "legible": legible, "legible_share": legible / len(text) if text else None,
            "median_seconds": _median(row["seconds"] for row in ok),
        }
        item["risk"], item["risk_reason"] = risk(item)
        summary.append(item)
    return summary


def _figure(width, height):
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width, height), layout="constrained")
    axes = figure.add_subplot()
    axes.spines[["top", "right"]].set_visible(False)
    axes.grid(True, color="#e4e7eb", linewidth=0.8)
    axes.set_axisbelow(True)
    return figure, axes


def _save_svg(figure, path):
    buffer = io.BytesIO()
    figure.savefig(buffer, format="svg", metadata={"Date": None})
    atomic_write(path, buffer.getvalue())


def plot_correlation_by_descriptor(rows, path):
    """Correlation of every ok row, one column of dots and its median per descriptor (SVG)."""
    figure, axes = _figure(4.6, 3.0)
    draw_correlation_by_descriptor(axes, rows)
    _save_svg(figure, path)


def draw_correlation_by_descriptor(axes, rows):
    """Draw :func:`plot_correlation_by_descriptor` into ``axes``."""
    palette = colours(row["descriptor"] for row in rows)
    ok = [row for row in rows if is_ok(row) and row["correlation"] is not None]
    names = list(dict.fromkeys(row["descriptor"] for row in ok))
    for i, name in enumerate(names):
        values = [row["correlation"] for row in ok if row["descriptor"] == name]
        offsets = [(k % 7 - 3) * 0.04 for k in range(len(values))]  # a deterministic jitter
        axes.scatter([i + o for o in offsets], values, s=22, color=palette[name], alpha=0.75, linewidths=0)
        median = statistics.median(values)
        axes.plot([i - 0.28, i + 0.28], [median, median], color="#1f2933", linewidth=2)
    axes.set_xticks(range(len(names)), names)
    axes.set_xlim(-0.6, max(len(names), 1) - 0.4)
    axes.set_ylim(min([-0.05] + [row["correlation"] for row in ok]) - 0.05, 1.0)
    axes.set_ylabel("correlation over covered pixels")
    axes.set_title("Leak per descriptor (bar: median)", fontsize=10, loc="left")


def plot_leak_vs_keypoints(rows, path):
    """Correlation against the number of keypoints kept, one colour per descriptor (SVG)."""
    palette = colours(row["descriptor"] for row in rows)
    ok = [row for row in rows if is_ok(row) and row["correlation"] is not None and row["keypoints"] is not None]
    figure, axes = _figure(4.6, 3.0)
    for name in dict.fromkeys(row["descriptor"] for row in ok):
        group = [row for row in ok if row["descriptor"] == name]
        axes.scatter([row["keypoints"] for row in group], [row["correlation"] for row in group], s=24,
                     color=palette[name], alpha=0.8, linewidths=0, label=name)
    axes.set_xlabel("keypoints kept")
    axes.set_ylabel("correlation over covered pixels")
    axes.set_title("Leak vs keypoint count", fontsize=10, loc="left")
    if ok:
        axes.legend(frameon=False, fontsize=8)
    _save_svg(figure, path)


def write_parquet(rows, path):
    """Write the rows as Parquet (typed columns) if pyarrow is importable; return the path or None."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        return None
    types = {column: pa.int64() if column in _INTEGERS else pa.float64() if column in _FLOATS else pa.string()
             for column in COLUMNS}
    table = pa.table({column: pa.array([row[column] for row in rows], type=types[column]) for column in COLUMNS})
    buffer = pa.BufferOutputStream()
    pq.write_table(table, buffer)
    return atomic_write(path, buffer.getvalue().to_pybytes())


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
        from lbdviewer.audit.handout import write_handout

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
