"""CSV tables read back tolerantly: bytes that are not UTF-8 kept, a damaged row reported and skipped.

The report folders of ``lbdviewer audit`` and ``lbdviewer defend`` hold such
tables (:mod:`lbdviewer.audit.results_log` writes them); a file name in a
cell may hold any bytes (``surrogateescape``), and :func:`printable` shows it
on a terminal or a page.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

__all__ = ["MAX_RECORD_LINES", "cells_row", "printable", "read_table", "typed_cells"]

#: Lines one record may span (a quoted cell may hold a newline: a file name); an unclosed quote spans no more.
MAX_RECORD_LINES = 4


def cells_row(cells, columns):
    """The cells of a row of ``columns`` as text by column; ValueError if their number differs.

    Examples
    --------
    >>> cells_row(["/a.png", "orb"], ("input", "descriptor"))
    {'input': '/a.png', 'descriptor': 'orb'}
    """
    if len(cells) != len(columns):
        raise ValueError(f"has {len(cells)} cells, not {len(columns)}")
    return dict(zip(columns, cells))


def typed_cells(cells, columns, *, required, text, integers):
    """The cells of a row of ``columns`` typed; a ValueError saying why if the row is damaged.

    Empty cells become None; the ``text`` columns stay text, the
    ``integers`` become ints and the other columns floats. A row is damaged
    when its number of cells differs (:func:`cells_row`), a ``required``
    column is empty, or a number column holds something else than a number
    (NaN included: an undefined value is written as an empty cell).

    Examples
    --------
    >>> typed_cells(["a.png", "12", "0.5", ""], ("input", "keypoints", "coverage", "ssim"),
    ...             required=("input",), text=("input",), integers=("keypoints",))
    {'input': 'a.png', 'keypoints': 12, 'coverage': 0.5, 'ssim': None}
    """
    row = cells_row(cells, columns)
    for column in required:
        if not row[column]:
            raise ValueError(f"has no {column}")
    for column, value in row.items():
        if value == "":
            row[column] = None
        elif column not in text:
            try:
                number = int(value) if column in integers else float(value)
            except ValueError:
                raise ValueError(f"{column} is not a number: {value[:40]!r}") from None
            if math.isnan(number):
                raise ValueError(f"{column} is not a number: {value[:40]!r}")
            row[column] = number
    return row


def read_table(path, *, columns, key, typed):
    """The rows of a CSV table, typed, and its damaged rows skipped: ``(rows, damaged)``.

    Bytes that are not UTF-8 are kept (``surrogateescape``): a file name
    may hold any bytes. A row is damaged, reported and skipped, when it is
    not CSV (an unclosed quote spans at most :data:`MAX_RECORD_LINES` lines),
    is refused by ``typed`` (another number of cells than ``columns``, a
    number column that is not a number...), or repeats the ``key`` of an
    earlier row.

    Parameters
    ----------
    path : str or os.PathLike
    columns : tuple of str
        The header the table must have.
    key : callable
        ``row -> tuple``: the task a row answers.
    typed : callable
        ``cells -> row``, a ValueError for a damaged row (an audit's:
        :func:`lbdviewer.audit.results_log.typed_row`; ``lbdviewer defend``'s:
        :func:`lbdviewer.defences.rows.typed_defend_row`).

    Returns
    -------
    rows : list of dict
        As ``typed`` makes them.
    damaged : list of (int, str)
        The line each damaged row starts on, and why it was skipped.

    Raises
    ------
    ValueError
        If the header is not ``columns``.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = Path(folder) / "t.csv"
    ...     _ = path.write_bytes(b'name,n\\na,1\\n"b,2\\na,3\\n')
    ...     rows, damaged = read_table(path, columns=("name", "n"), key=lambda row: (row["name"],),
    ...                                typed=lambda cells: cells_row(cells, ("name", "n")))
    >>> rows, damaged
    ([{'name': 'a', 'n': '1'}], [(3, 'not a CSV row (a quote is not closed)'), (4, "repeats the row of 'a'")])
    """
    path = Path(path)
    with open(path, newline="", encoding="utf-8", errors="surrogateescape") as file:
        lines = file.readlines()
    header = _parse_record(lines[0]) if lines else None
    if header is None or tuple(header) != tuple(columns):
        raise ValueError(f"{str(path)!r} has columns {header}, this lbdviewer writes {list(columns)}: "
                         "use another REPORT_DIR")
    rows, damaged, seen = [], [], set()
    index = 1
    while index < len(lines):
        start, cells = index + 1, None
        for end in range(index + 1, min(index + MAX_RECORD_LINES, len(lines)) + 1):
            cells = _parse_record("".join(lines[index:end]))
            if cells is not None:
                break
        index = end if cells is not None else index + 1
        if cells is None:
            damaged.append((start, "not a CSV row (a quote is not closed)"))
            continue
        try:
            row = typed(cells)
        except ValueError as error:
            damaged.append((start, str(error)))
            continue
        task = key(row)
        if task in seen:
            damaged.append((start, "repeats the row of " + ", ".join(repr(printable(part)) for part in task)))
            continue
        seen.add(task)
        rows.append(row)
    return rows, damaged


def _parse_record(text):
    """The cells of one CSV record, or None when it is not one (an unclosed quote, a stray character)."""
    try:
        records = list(csv.reader([text], strict=True))
    except csv.Error:
        return None
    return records[0] if len(records) == 1 else None


def printable(text):
    """``text`` with the bytes of a name that is not UTF-8 shown as U+FFFD, for a terminal or a page.

    Examples
    --------
    >>> import os
    >>> printable(os.fsdecode(b"caf\\xe9.png"))
    'caf\ufffd.png'
    """
    return str(text).encode("utf-8", "surrogateescape").decode("utf-8", "replace")
