"""The privacy–utility table of one or more ``lbdviewer defend`` folders, as Markdown.

Usage: ``python scripts/defence_table.py DIR [DIR ...]``

Reads each folder's ``results.csv`` (an audit's ``defences.csv`` too, when
given as a file), pools the rows and prints one line per descriptor, defence
and strength (:func:`lbdviewer.defences.summary.table_markdown`): mean
matching accuracy at 1, 3 and 5 px and homography accuracy on the synthetic
pairs, the aware and the naive attacker's correlation, the higher of the two
(the leakage), text lines read by the better attacker, keypoints released;
then each descriptor's recommendation with its rule.
"""

from __future__ import annotations

import sys
from pathlib import Path

from lbdviewer.defences.rows import read_defend_rows
from lbdviewer.defences.summary import recommend, summarise_defences, table_markdown


def main(argv=None):
    paths = [Path(arg) for arg in (sys.argv[1:] if argv is None else argv)]
    if not paths:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    rows = [row for path in paths for row in read_defend_rows(path / "results.csv" if path.is_dir() else path)]
    points = summarise_defences(rows)
    print(table_markdown(points))
    for descriptor in dict.fromkeys(p["descriptor"] for p in points):
        advice = recommend([p for p in points if p["descriptor"] == descriptor])
        if advice is not None:
            print(f"\n{descriptor}: {advice['text']} (rule: {advice['rule']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
