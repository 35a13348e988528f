"""What the static report pages share: one stylesheet (screen and print), escaping, and small cells.

Every text that comes from a file name, an error message or OCR goes through
:func:`escape`. The print stylesheet sets A4 pages with margins, drops the
screen's shadows and backgrounds, keeps each table row, card and figure on
one page, and repeats table headers on every page.
"""

from __future__ import annotations

import html

from lbdviewer.io.tables import printable

__all__ = ["CSS", "PALETTE", "bar", "colours", "escape", "number", "page", "share"]

#: One colour per descriptor, in order of first appearance (colour-blind safe, Okabe-Ito).
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#000000")


def escape(value):
    """HTML text of ``value`` (None: empty; the bytes of a name that is not UTF-8 shown as U+FFFD).

    Examples
    --------
    >>> escape("<b> & 'x'"), escape(None)
    ('&lt;b&gt; &amp; &#x27;x&#x27;', '')
    """
    return html.escape("" if value is None else printable(value), quote=True)  # names that are not UTF-8: U+FFFD


def number(value, digits=2):
    """``value`` with ``digits`` decimals, or an en dash for None.

    Examples
    --------
    >>> number(0.8712), number(None), number(3.0, 0)
    ('0.87', '–', '3')
    """
    return "–" if value is None else f"{value:.{digits}f}"


def share(value):
    """A share as a whole percentage, or an en dash for None.

    Examples
    --------
    >>> share(0.5), share(None)
    ('50 %', '–')
    """
    return "–" if value is None else f"{100 * value:.0f} %"


def bar(value):
    """A number with a small bar of its size in ``[0, 1]``."""
    width = 0.0 if value is None else max(0.0, min(1.0, value)) * 100
    return (f'<span class="metric"><span class="bar"><span style="width:{width:.0f}%"></span></span>'
            f"{number(value)}</span>")


def colours(names):
    """``{name: colour}`` of :data:`PALETTE`, in order of first appearance."""
    names = list(dict.fromkeys(names))
    return {name: PALETTE[i % len(PALETTE)] for i, name in enumerate(names)}


def page(title, body):
    """A whole static page: ``body`` (HTML) under ``title``, with :data:`CSS`."""
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">\n'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            f"<title>{escape(title)}</title>\n<style>{CSS}</style></head><body>\n{body}\n</body></html>\n")


CSS = """
:root { --ink: #1f2933; --muted: #6b7785; --line: #e4e7eb; --accent: #c2410c; --bg: #f7f8fa;
        --high: #b91c1c; --medium: #b45309; --low: #15803d; }
* { box-sizing: border-box; }
body { margin: 0; padding: 32px 40px 48px; background: var(--bg); color: var(--ink);
       font: 14px/1.45 "DejaVu Sans", "Segoe UI", Helvetica, Arial, sans-serif; }
header { max-width: 1100px; }
h1 { font-size: 26px; margin: 0 0 6px; letter-spacing: -0.01em; }
h2 { font-size: 16px; margin: 28px 0 10px; text-transform: uppercase; letter-spacing: 0.06em; color: var(--muted); }
h3 { font-size: 15px; margin: 18px 0 8px; }
.lede { margin: 0 0 6px; max-width: 820px; }
.meta, .muted { color: var(--muted); font-size: 12px; }
table { border-collapse: collapse; background: #fff; border: 1px solid var(--line); border-radius: 8px;
        overflow: hidden; box-shadow: 0 1px 2px rgba(31, 41, 51, 0.06); }
th { text-align: left; font-weight: 600; font-size: 12px; color: var(--muted); background: #fbfcfd;
     padding: 8px 12px; border-bottom: 1px solid var(--line); }
td { padding: 8px 12px; border-bottom: 1px solid var(--line); vertical-align: middle; }
tr:last-child td { border-bottom: 0; }
td.num { font-variant-numeric: tabular-nums; }
.dot { display: inline-block; width: 9px; height: 9px; border-radius: 50%; margin-right: 6px; }
.metric { display: inline-flex; align-items: center; gap: 8px; font-variant-numeric: tabular-nums; }
.bar { display: inline-block; width: 70px; height: 6px; background: var(--line); border-radius: 3px; }
.bar span { display: block; height: 100%; background: var(--accent); border-radius: 3px; }
.plots { display: flex; flex-wrap: wrap; gap: 16px; margin-top: 24px; }
.plots figure { margin: 0; background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 8px; }
.plots img { display: block; width: 440px; height: auto; }
.plots figure.wide img { width: 860px; max-width: 100%; }
.pair { white-space: nowrap; }
.thumb { width: 128px; height: 128px; object-fit: contain; background: #111; border-radius: 4px;
         image-rendering: pixelated; margin-right: 4px; vertical-align: middle; }
.thumb.small { width: 88px; height: 88px; }
.thumb.empty { display: inline-flex; align-items: center; justify-content: center; color: #aaa; font-size: 11px; }
.strip { display: flex; flex-wrap: wrap; gap: 6px; align-items: flex-start; }
.strip figure { margin: 0; width: 92px; font-size: 10px; color: var(--muted); text-align: center; }
.input .name { font-weight: 600; max-width: 220px; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
.ocr { max-width: 320px; font-size: 12px; }
.ocr b { color: var(--muted); font-weight: 600; margin-right: 4px; }
.badge { display: inline-block; padding: 1px 8px; border-radius: 10px; font-size: 11px; font-weight: 600; }
.badge.leak { background: #fde8dc; color: var(--accent); }
.risk { display: inline-block; padding: 2px 10px; border-radius: 10px; font-size: 12px; font-weight: 700;
        text-transform: uppercase; letter-spacing: 0.04em; color: #fff; }
.risk.high { background: var(--high); } .risk.medium { background: var(--medium); } .risk.low { background: var(--low); }
.status { color: #b91c1c; font-family: "DejaVu Sans Mono", monospace; font-size: 12px; }
.cards { display: flex; gap: 16px; margin-top: 20px; flex-wrap: wrap; }
.card { background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 14px 20px; min-width: 190px;
        box-shadow: 0 1px 2px rgba(31, 41, 51, 0.06); }
.card .value { font-size: 28px; font-weight: 700; font-variant-numeric: tabular-nums; }
.card .value small { font-size: 14px; font-weight: 400; color: var(--muted); }
.card.accent .value { color: var(--accent); }
.card .label { color: var(--muted); font-size: 12px; }
.summary-box { background: #fff; border: 1px solid var(--line); border-left: 4px solid var(--accent);
               border-radius: 8px; padding: 14px 20px; max-width: 1100px; margin-top: 18px; }
.summary-box ul { margin: 6px 0 0; padding-left: 20px; }
.summary-box li { margin: 4px 0; }
.rule { color: var(--muted); font-size: 12px; margin-top: 8px; }
dl.settings { display: grid; grid-template-columns: max-content auto; gap: 4px 16px; font-size: 12px;
              background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 12px 16px;
              max-width: 1100px; }
dl.settings dt { color: var(--muted); } dl.settings dd { margin: 0; }
footer { margin-top: 32px; color: var(--muted); font-size: 12px; }
a { color: #0b5cad; }
@media print {
  @page { size: A4; margin: 14mm 12mm; }
  body { background: #fff; padding: 0; font-size: 10pt; }
  table, .card, .summary-box, dl.settings, .plots figure { box-shadow: none; border-radius: 0; }
  table { width: 100%; }
  thead { display: table-header-group; }
  tr, .card, .summary-box, figure, .strip figure, dl.settings { break-inside: avoid; page-break-inside: avoid; }
  h2 { break-after: avoid; page-break-after: avoid; margin-top: 16px; }
  section.rows, section.defences { break-before: page; page-break-before: always; }
  .thumb { width: 72px; height: 72px; margin-right: 2px; }
  td, th { padding: 5px 6px; }
  .plots img { width: 80mm; }
  .plots figure.wide img { width: 170mm; }
  .input .name { max-width: 32mm; }
  .input .muted { display: none; }
  td.ocr { min-width: 62mm; max-width: 70mm; font-size: 8pt; }
  a { color: inherit; text-decoration: none; }
  .risk, .badge, .bar span, .dot { -webkit-print-color-adjust: exact; print-color-adjust: exact; }
}
"""
