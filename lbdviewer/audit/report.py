"""The audit report: rows read back, a summary per descriptor, plots, ``index.html`` and Parquet.

Everything here is rebuilt from ``REPORT_DIR/results.csv`` alone (and the
thumbnails beside it), so a report can be regenerated at any time, also
after an interrupted run. ``index.html`` is static (no script, no server):
open it from the folder. Every text that comes from a file name, an error
message or OCR is HTML-escaped.

A row **leaks legible text** when the original has some text (OCR reads a
word of at least :data:`MIN_WORD` letters or digits in it) and OCR reads the same text
back from the reconstruction with a similarity of at least
:data:`LEGIBLE_SIMILARITY` (:func:`lbdviewer.evaluation.ocr.text_similarity`).
The rows are listed worst leak first: legible text first, then by
decreasing correlation.
"""

from __future__ import annotations

import csv
import datetime
import html
import io
import os
import statistics
from pathlib import Path

from lbdviewer.audit.runner import RESULTS
from lbdviewer.audit.tasks import COLUMNS
from lbdviewer.evaluation.ocr import normalise_text
from lbdviewer.io.files import atomic_write

INDEX = "index.html"
PARQUET = "results.parquet"
PLOT_CORRELATION = "correlation_by_descriptor.svg"
PLOT_KEYPOINTS = "correlation_vs_keypoints.svg"
#: OCR similarity from which a reconstruction counts as leaking the original's text.
LEGIBLE_SIMILARITY = 0.5
#: Letters or digits of the longest word OCR must read in the original for it to count as holding text
#: (OCR reads stray letters in photos).
MIN_WORD = 3
_INTEGERS = ("keypoints", "iterations")
_FLOATS = ("coverage", "correlation", "rank_correlation", "ssim", "ocr_similarity", "seconds")
#: One colour per descriptor, in order of first appearance (colour-blind safe, Okabe-Ito).
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#000000")


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


def is_ok(row):
    """True for a row whose task succeeded."""
    return row["status"] == "ok"


def has_text(row):
    """True if OCR read a word of at least :data:`MIN_WORD` letters or digits in the original.

    Examples
    --------
    >>> has_text({"ocr_original": "— ; A ~e : —? 7 —S"}), has_text({"ocr_original": "Moby Dick"})
    (False, True)
    """
    words = normalise_text(row.get("ocr_original") or "").split()
    return max(map(len, words), default=0) >= MIN_WORD


def is_legible(row):
    """True if the reconstruction gives away the original's text (see the module notes).

    Examples
    --------
    >>> is_legible({"ocr_original": "TOP SECRET", "ocr_similarity": 0.8})
    True
    >>> is_legible({"ocr_original": "ab", "ocr_similarity": 1.0})
    False
    """
    return has_text(row) and (row.get("ocr_similarity") or 0.0) >= LEGIBLE_SIMILARITY


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
        ``with_text`` (ok rows whose original holds text), ``legible_share``
        (share of those whose text the reconstruction gives away; None when
        none holds text), ``median_seconds``.

    Examples
    --------
    >>> rows = [{"descriptor": "orb", "status": "ok", "correlation": 0.5, "rank_correlation": 0.4,
    ...          "ssim": 0.2, "keypoints": 10, "seconds": 1.0, "ocr_original": "HELLO", "ocr_similarity": 0.9},
    ...         {"descriptor": "orb", "status": "error: x", "correlation": None, "rank_correlation": None,
    ...          "ssim": None, "keypoints": None, "seconds": 0.1}]
    >>> s = summarise(rows)[0]
    >>> s["ok"], s["errors"], s["median_correlation"], s["legible_share"]
    (1, 1, 0.5, 1.0)
    """
    by_descriptor = {}
    for row in rows:
        by_descriptor.setdefault(row["descriptor"], []).append(row)
    summary = []
    for descriptor, group in by_descriptor.items():
        ok = [row for row in group if is_ok(row)]
        text = [row for row in ok if has_text(row)]
        summary.append({
            "descriptor": descriptor, "rows": len(group), "ok": len(ok), "errors": len(group) - len(ok),
            "median_correlation": _median(row["correlation"] for row in ok),
            "median_rank_correlation": _median(row["rank_correlation"] for row in ok),
            "median_ssim": _median(row["ssim"] for row in ok),
            "median_keypoints": _median(row["keypoints"] for row in ok),
            "with_text": len(text),
            "legible_share": sum(map(is_legible, text)) / len(text) if text else None,
            "median_seconds": _median(row["seconds"] for row in ok),
        })
    return summary


def _colours(rows):
    descriptors = list(dict.fromkeys(row["descriptor"] for row in rows))
    return {name: PALETTE[i % len(PALETTE)] for i, name in enumerate(descriptors)}


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
    colours = _colours(rows)
    ok = [row for row in rows if is_ok(row) and row["correlation"] is not None]
    names = list(dict.fromkeys(row["descriptor"] for row in ok))
    figure, axes = _figure(4.6, 3.0)
    for i, name in enumerate(names):
        values = [row["correlation"] for row in ok if row["descriptor"] == name]
        offsets = [(k % 7 - 3) * 0.04 for k in range(len(values))]  # a deterministic jitter
        axes.scatter([i + o for o in offsets], values, s=22, color=colours[name], alpha=0.75, linewidths=0)
        median = statistics.median(values)
        axes.plot([i - 0.28, i + 0.28], [median, median], color="#1f2933", linewidth=2)
    axes.set_xticks(range(len(names)), names)
    axes.set_xlim(-0.6, max(len(names), 1) - 0.4)
    axes.set_ylim(min([-0.05] + [row["correlation"] for row in ok]) - 0.05, 1.0)
    axes.set_ylabel("correlation over covered pixels")
    axes.set_title("Leak per descriptor (bar: median)", fontsize=10, loc="left")
    _save_svg(figure, path)


def plot_leak_vs_keypoints(rows, path):
    """Correlation against the number of keypoints kept, one colour per descriptor (SVG)."""
    colours = _colours(rows)
    ok = [row for row in rows if is_ok(row) and row["correlation"] is not None and row["keypoints"] is not None]
    figure, axes = _figure(4.6, 3.0)
    for name in dict.fromkeys(row["descriptor"] for row in ok):
        group = [row for row in ok if row["descriptor"] == name]
        axes.scatter([row["keypoints"] for row in group], [row["correlation"] for row in group], s=24,
                     color=colours[name], alpha=0.8, linewidths=0, label=name)
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


def write_report(folder):
    """Rebuild ``index.html``, its two plots and (with pyarrow) ``results.parquet`` from ``results.csv``.

    Returns
    -------
    pathlib.Path
        The ``index.html`` written.
    """
    folder = Path(folder)
    rows = read_results(folder)
    plot_correlation_by_descriptor(rows, folder / PLOT_CORRELATION)
    plot_leak_vs_keypoints(rows, folder / PLOT_KEYPOINTS)
    write_parquet(rows, folder / PARQUET)
    return atomic_write(folder / INDEX, render_html(rows, title=f"Privacy audit: {folder.name}").encode("utf-8"))


def _e(value):
    return html.escape("" if value is None else str(value), quote=True)


def _number(value, digits=2):
    return "–" if value is None else f"{value:.{digits}f}"


def _share(value):
    return "–" if value is None else f"{100 * value:.0f} %"


def _bar(value):
    width = 0.0 if value is None else max(0.0, min(1.0, value)) * 100
    return (f'<span class="metric"><span class="bar"><span style="width:{width:.0f}%"></span></span>'
            f"{_number(value)}</span>")


def _thumb(row, kind):
    name = row.get(f"thumbnail_{kind}")
    if not name:
        return f'<div class="thumb empty">no {_e(kind)}</div>'
    return f'<img class="thumb" src="{_e(name)}" alt="{_e(kind)}" loading="lazy">'


def _ocr_cell(row):
    if row.get("ocr_original") is None and row.get("ocr_reconstruction") is None:
        return '<td class="ocr muted">no text read</td>'
    badge = '<span class="badge leak">legible</span>' if is_legible(row) else ""
    return (f'<td class="ocr">{badge}<div><b>original</b> {_e(_clip(row["ocr_original"]))}</div>'
            f'<div><b>rebuilt</b> {_e(_clip(row["ocr_reconstruction"]))}</div>'
            f'<div class="muted">similarity {_number(row["ocr_similarity"])}</div></td>')


def _clip(text, length=90):
    text = text or ""
    return text if len(text) <= length else text[:length - 1] + "…"


def render_html(rows, *, title="Privacy audit"):
    """The static report page for ``rows`` (see :func:`write_report`), as a string.

    Examples
    --------
    >>> page = render_html([{**dict.fromkeys(COLUMNS), "input": "/x/<b>.png", "descriptor": "orb",
    ...                      "status": "error: bad <file>"}])
    >>> "&lt;b&gt;.png" in page and "<b>.png" not in page and "bad &lt;file&gt;" in page
    True
    """
    summary = summarise(rows)
    colours = _colours(rows)
    ok, failed = leak_order(rows), [row for row in rows if not is_ok(row)]
    inputs = len({row["input"] for row in rows})
    generated = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    modes = ", ".join(sorted({str(row["mode"]) for row in rows if row.get("mode")})) or "–"
    worst = max((row["correlation"] for row in ok if row["correlation"] is not None), default=None)
    with_text = sum(map(has_text, ok))
    legible = sum(map(is_legible, ok))
    parts = [f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{_e(title)}</title>
<style>{_CSS}</style></head><body>
<header><h1>{_e(title)}</h1>
<p class="lede">What the descriptors give away: each input was described, the image forgotten, and rebuilt from
the descriptors alone. Correlation, rank correlation and SSIM compare the rebuilt image with the original over the
pixels the keypoints cover; OCR checks whether text can be read back from the reconstruction as an
eavesdropper sees it (stretched without the original). Thumbnails show each reconstruction on its original's scale
(mean and spread matched to the original over the covered pixels); black: pixels no keypoint covers.</p>
<p class="meta">{len(rows)} rows · {inputs} inputs · {len(summary)} descriptors · {len(failed)} errors ·
mode {_e(modes)} · generated {_e(generated)}</p></header>
<section class="cards">
<div class="card"><div class="value">{inputs}</div><div class="label">inputs audited</div></div>
<div class="card accent"><div class="value">{_number(worst)}</div><div class="label">highest correlation
(worst leak)</div></div>
<div class="card accent"><div class="value">{legible} <small>of {with_text}</small></div>
<div class="label">rows whose text OCR reads back</div></div>
<div class="card"><div class="value">{len(failed)}</div><div class="label">rows that failed</div></div>
</section>
<section><h2>Per descriptor</h2><table class="summary"><thead><tr><th>descriptor</th><th>ok / rows</th>
<th>median correlation</th><th>median rank corr.</th><th>median SSIM</th><th>median keypoints</th>
<th>legible text</th><th>median seconds</th></tr></thead><tbody>"""]
    for item in summary:
        legible = ("no text in originals" if item["legible_share"] is None
                   else f'{_share(item["legible_share"])} <span class="muted">of {item["with_text"]}</span>')
        parts.append(
            f'<tr><td><span class="dot" style="background:{colours[item["descriptor"]]}"></span>'
            f'{_e(item["descriptor"])}</td><td>{item["ok"]} / {item["rows"]}</td>'
            f'<td>{_bar(item["median_correlation"])}</td><td>{_number(item["median_rank_correlation"])}</td>'
            f'<td>{_number(item["median_ssim"])}</td><td>{_number(item["median_keypoints"], 0)}</td>'
            f'<td>{legible}</td><td>{_number(item["median_seconds"], 1)}</td></tr>')
    parts.append(f"""</tbody></table></section>
<section class="plots"><figure><img src="{PLOT_CORRELATION}" alt="correlation per descriptor"></figure>
<figure><img src="{PLOT_KEYPOINTS}" alt="correlation against keypoints kept"></figure></section>
<section><h2>Worst leaks first</h2><table class="rows"><thead><tr><th>original | rebuilt from descriptors</th>
<th>input</th><th>keypoints</th><th>coverage</th><th>correlation</th><th>rank corr.</th><th>SSIM</th>
<th>OCR</th><th>seconds</th></tr></thead><tbody>""")
    for row in ok:
        parts.append(
            f'<tr><td class="pair">{_thumb(row, "original")}{_thumb(row, "reconstruction")}</td>'
            f'<td class="input"><div class="name" title="{_e(row["input"])}">{_e(os.path.basename(row["input"]))}'
            f'</div><span class="dot" style="background:{colours[row["descriptor"]]}"></span>'
            f'{_e(row["descriptor"])}<div class="muted">{_e(row["worker"])}</div></td>'
            f'<td>{_e(row["keypoints"])}</td><td>{_share(row["coverage"])}</td><td>{_bar(row["correlation"])}</td>'
            f'<td>{_number(row["rank_correlation"])}</td><td>{_number(row["ssim"])}</td>{_ocr_cell(row)}'
            f'<td>{_number(row["seconds"], 1)}</td></tr>')
    parts.append("</tbody></table></section>")
    if failed:
        parts.append('<section><h2>Inputs that failed</h2><table class="errors"><thead><tr><th>input</th>'
                     "<th>descriptor</th><th>status</th><th>worker</th></tr></thead><tbody>")
        for row in failed:
            parts.append(f'<tr><td title="{_e(row["input"])}">{_e(os.path.basename(row["input"]))}</td>'
                         f'<td>{_e(row["descriptor"])}</td><td class="status">{_e(row["status"])}</td>'
                         f'<td class="muted">{_e(row["worker"])}</td></tr>')
        parts.append("</tbody></table></section>")
    parts.append('<footer>lbdviewer audit · rows in <a href="results.csv">results.csv</a></footer></body></html>\n')
    return "\n".join(parts)


_CSS = """
:root { --ink: #1f2933; --muted: #6b7785; --line: #e4e7eb; --accent: #c2410c; --bg: #f7f8fa; }
* { box-sizing: border-box; }
body { margin: 0; padding: 32px 40px 48px; background: var(--bg); color: var(--ink);
       font: 14px/1.45 "DejaVu Sans", "Segoe UI", Helvetica, Arial, sans-serif; }
header { max-width: 1100px; }
h1 { font-size: 26px; margin: 0 0 6px; letter-spacing: -0.01em; }
h2 { font-size: 16px; margin: 28px 0 10px; text-transform: uppercase; letter-spacing: 0.06em; color: var(--muted); }
.lede { margin: 0 0 6px; max-width: 820px; }
.meta, .muted { color: var(--muted); font-size: 12px; }
table { border-collapse: collapse; background: #fff; border: 1px solid var(--line); border-radius: 8px;
        overflow: hidden; box-shadow: 0 1px 2px rgba(31, 41, 51, 0.06); }
th { text-align: left; font-weight: 600; font-size: 12px; color: var(--muted); background: #fbfcfd;
     padding: 8px 12px; border-bottom: 1px solid var(--line); }
td { padding: 8px 12px; border-bottom: 1px solid var(--line); vertical-align: middle; }
tr:last-child td { border-bottom: 0; }
.dot { display: inline-block; width: 9px; height: 9px; border-radius: 50%; margin-right: 6px; }
.metric { display: inline-flex; align-items: center; gap: 8px; font-variant-numeric: tabular-nums; }
.bar { display: inline-block; width: 70px; height: 6px; background: var(--line); border-radius: 3px; }
.bar span { display: block; height: 100%; background: var(--accent); border-radius: 3px; }
.plots { display: flex; flex-wrap: wrap; gap: 16px; margin-top: 24px; }
.plots figure { margin: 0; background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 8px; }
.plots img { display: block; width: 440px; height: auto; }
.pair { white-space: nowrap; }
.thumb { width: 128px; height: 128px; object-fit: contain; background: #111; border-radius: 4px;
         image-rendering: pixelated; margin-right: 4px; vertical-align: middle; }
.thumb.empty { display: inline-flex; align-items: center; justify-content: center; color: #aaa; font-size: 11px; }
.input .name { font-weight: 600; max-width: 220px; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
.ocr { max-width: 320px; font-size: 12px; }
.ocr b { color: var(--muted); font-weight: 600; margin-right: 4px; }
.badge { display: inline-block; padding: 1px 8px; border-radius: 10px; font-size: 11px; font-weight: 600; }
.badge.leak { background: #fde8dc; color: var(--accent); }
.status { color: #b91c1c; font-family: "DejaVu Sans Mono", monospace; font-size: 12px; }
.cards { display: flex; gap: 16px; margin-top: 20px; flex-wrap: wrap; }
.card { background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 14px 20px; min-width: 190px;
        box-shadow: 0 1px 2px rgba(31, 41, 51, 0.06); }
.card .value { font-size: 28px; font-weight: 700; font-variant-numeric: tabular-nums; }
.card .value small { font-size: 14px; font-weight: 400; color: var(--muted); }
.card.accent .value { color: var(--accent); }
.card .label { color: var(--muted); font-size: 12px; }
footer { margin-top: 32px; color: var(--muted); font-size: 12px; }
a { color: #0b5cad; }
"""
