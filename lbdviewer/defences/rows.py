"""The table of ``lbdviewer defend``: its columns, how a row names its task, and reading it back."""

from __future__ import annotations

import csv
from pathlib import Path

__all__ = ["COLUMNS", "NONE", "defend_key", "read_defend_rows", "strength_text"]

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


def read_defend_rows(path):
    """The rows of a defend table (``results.csv`` or an audit's ``defences.csv``), typed; ``[]`` if missing.

    Raises
    ------
    ValueError
        If the file has other columns.
    """
    path = Path(path)
    if not path.is_file():
        return []
    with open(path, newline="", encoding="utf-8") as file:
        reader = csv.reader(file)
        columns = tuple(next(reader, ()))
        if columns != COLUMNS:
            raise ValueError(f"{str(path)!r} has columns {list(columns)}, expected {list(COLUMNS)}")
        rows = []
        for values in reader:
            if len(values) != len(COLUMNS):
                continue
            row = {}
            for column, value in zip(COLUMNS, values):
                if value == "":
                    row[column] = None
                elif column in _TEXT:
                    row[column] = value
                elif column in _INTEGERS:
                    row[column] = int(float(value))
                else:
                    row[column] = float(value)
            rows.append(row)
        return rows
