"""A defend table read back as an audit's is: names that are not UTF-8 kept, damaged rows skipped."""

import os

import pytest

from lbdviewer.defences.rows import COLUMNS, read_defend_rows, typed_defend_row

NOT_UTF8 = os.fsdecode(b"caf\xe9.png")  # a name of bytes that are not UTF-8, as Linux allows


def _line(**cells):
    row = dict.fromkeys(COLUMNS, "")
    row.update(descriptor="orb", defence="none", attacker="aware", status="ok", **cells)
    return ",".join(row[column] for column in COLUMNS) + "\n"


def test_a_defend_table_keeps_odd_names_and_skips_damaged_rows(tmp_path):
    path = tmp_path / "defences.csv"
    text = (",".join(COLUMNS) + "\n" + _line(input="/x/" + NOT_UTF8, keypoints="12", coverage="0.5")
            + _line(input="/x/b.png", keypoints="many") + _line(input="/x/c.png", seed="3"))
    path.write_bytes(text.encode("utf-8", "surrogateescape"))
    rows = read_defend_rows(path)                         # read strictly as UTF-8, this raised UnicodeDecodeError
    assert [row["input"] for row in rows] == ["/x/" + NOT_UTF8, "/x/c.png"]
    assert rows[0]["keypoints"] == 12 and rows[0]["coverage"] == 0.5 and rows[1]["seed"] == 3
    assert rows[0]["strength"] is None and rows[0]["defence"] == "none"


def test_a_defend_row_without_its_defence_or_with_a_word_for_a_number_is_damaged():
    cells = _line(input="/a.png").rstrip("\n").split(",")
    assert typed_defend_row(cells)["input"] == "/a.png"
    for column, value, message in (("defence", "", "has no defence"), ("matches", "x", "matches is not a number"),
                                   ("coverage", "nan", "coverage is not a number")):
        damaged = list(cells)
        damaged[COLUMNS.index(column)] = value
        with pytest.raises(ValueError, match=message):
            typed_defend_row(damaged)
    with pytest.raises(ValueError, match=f"has {len(cells) - 1} cells"):
        typed_defend_row(cells[:-1])
