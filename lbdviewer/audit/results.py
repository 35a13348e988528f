"""An audit's rows read back and what they mean: typed rows, run settings, text leaked, one summary per descriptor.

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

import json
import statistics
from pathlib import Path

from lbdviewer.audit.risk import risk
from lbdviewer.audit.results_log import FLOAT_COLUMNS, INTEGER_COLUMNS, RESULTS, TEXT_COLUMNS, read_rows
from lbdviewer.io.tables import printable
from lbdviewer.audit.tasks import COLUMNS, LINE_SEPARATOR
from lbdviewer.evaluation.ocr import lines_read
from lbdviewer.io.files import atomic_write
from lbdviewer.io.strict_json import save_json

__all__ = ["LEGIBLE_SIMILARITY", "SETTINGS", "has_text", "is_legible", "is_ok", "leak_order", "lines_read_back",
           "read_results", "read_settings", "record_settings", "summarise", "text_lines", "write_parquet"]

SETTINGS = "settings.json"
#: OCR similarity from which a reconstruction counts as leaking the original's text.
LEGIBLE_SIMILARITY = 0.5


def read_results(folder):
    """The rows of ``folder/results.csv``, typed: ints, floats, None for empty cells; damaged rows skipped.

    See :func:`lbdviewer.audit.results_log.read_rows` for what makes a row
    damaged (the audit reports them and runs their tasks again).

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
    return read_rows(path)[0]


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


def write_parquet(rows, path):
    """Write the rows as Parquet (typed columns) if pyarrow is importable; return the path or None."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        return None
    types = {column: pa.int64() if column in INTEGER_COLUMNS else pa.float64() if column in FLOAT_COLUMNS
             else pa.string() for column in COLUMNS}
    table = pa.table({column: pa.array([printable(row[column]) if column in TEXT_COLUMNS and row[column] is not None
                                        else row[column] for row in rows], type=types[column]) for column in COLUMNS})
    buffer = pa.BufferOutputStream()
    pq.write_table(table, buffer)
    return atomic_write(path, buffer.getvalue().to_pybytes())
