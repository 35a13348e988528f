"""The table of ``lbdviewer defend``: its columns, how a row names its task, and reading it back."""

from __future__ import annotations

from pathlib import Path

from lbdviewer.io.tables import read_table, typed_cells

__all__ = ["COLUMNS", "NONE", "defend_key", "read_defend_rows", "strength_text", "typed_defend_row"]

#: ``defence`` of the baseline rows.
NONE = "none"
#: The columns of a defend row, in the order ``results.csv`` stores them.
COLUMNS = ("input", "descriptor", "defence", "strength", "attacker", "status", "keypoints", "bits",
           "matching_accuracy_1px", "matching_accuracy_3px", "matching_accuracy_5px", "homography_accuracy",
           "matches", "correct_matches", "coverage", "correlation", "rank_correlation", "ocr_lines_read",
           "ocr_lines_total", "seconds", "worker", "iterations", "pairs", "seed", "thumbnail_original",
           "thumbnail_reconstruction")


def strength_text(value):
    """A strength as the key of a row holds it: ``""`` for none, else the shortest form of the number.

    Examples
    --------
    >>> strength_text(None), strength_text(0.5), strength_text("2.0")
    ('', '0.5', '2')
    """
    return "" if value is None or value == "" else f"{float(value):g}"


def defend_key(row):
    """``(input, descriptor, defence, strength, attacker)`` of a row (values or their CSV text).

    Examples
    --------
    >>> defend_key({"input": "/a.png", "descriptor": "orb", "defence": "rr", "strength": "2", "attacker": "aware"})
    ('/a.png', 'orb', 'rr', '2', 'aware')
    """
    return (row["input"], row["descriptor"], row["defence"], strength_text(row["strength"]), row["attacker"])


_INTEGERS = ("keypoints", "bits", "ocr_lines_read", "ocr_lines_total", "iterations", "pairs", "seed")
_TEXT = ("input", "descriptor", "defence", "attacker", "status", "worker", "thumbnail_original",
         "thumbnail_reconstruction")


def typed_defend_row(cells):
    """A defend row from its cells: integers, floats, text, None for empty cells; a ValueError if damaged.

    Examples
    --------
    >>> row = typed_defend_row(["/a.png", "orb", "none", "", "aware", "ok", "12"] + [""] * (len(COLUMNS) - 7))
    >>> row["keypoints"], row["strength"], row["coverage"]
    (12, None, None)
    """
    return typed_cells(cells, COLUMNS, required=("input", "descriptor", "defence", "attacker", "status"),
                       text=_TEXT, integers=_INTEGERS)


def read_defend_rows(path):
    """The rows of a defend table (``results.csv`` or an audit's ``defences.csv``), typed; ``[]`` if missing.

    Read as an audit's table is (:func:`lbdviewer.io.tables.read_table`):
    names that are not UTF-8 kept, damaged rows skipped (``lbdviewer defend``
    runs their tasks again).

    Raises
    ------
    ValueError
        If the file has other columns.
    """
    path = Path(path)
    if not path.is_file():
        return []
    return read_table(path, columns=COLUMNS, key=defend_key, typed=typed_defend_row)[0]
