"""Measure the quality table of the documentation with the command line's own metrics, and write or check it.

    .venv/bin/python scripts/readme_quality.py           # rewrite the table in docs/performance.rst
    .venv/bin/python scripts/readme_quality.py --check   # exit 1 if the page differs from a fresh run

The table (once the README's, hence the name) sits between the comments
``.. quality-table`` and ``.. /quality-table`` of ``docs/performance.rst``
("Performance and quality"), as a reST list-table: 512x512 samples, 32x32 patches, offset 8, M = 512, binary
descriptors, default parameters otherwise; each cell comes from
``lbdviewer reconstruct --metrics`` (correlation, PSNR, bit consistency of
the joint result; solver bit consistency of the patchwise one). The solvers
are deterministic, so a fresh run on the same machine gives the same digits
unless the code changed (numba compiles for the CPU it runs on: on another, the
joint solve's camera figures can move by rounding, within a few hundredths).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
PAGE = HERE / "docs" / "performance.rst"
START, END = ".. quality-table", ".. /quality-table"
HEADER = ("image, descriptor", "joint: correlation / PSNR / bits", "patchwise (paper): correlation / PSNR / solver bits")
ROWS = [("astronaut", "brief"), ("astronaut", "freak"), ("camera", "brief"), ("camera", "freak")]


def measure(image, descriptor, mode, folder):
    from lbdviewer.cli.main import main

    metrics = Path(folder) / f"{image}-{descriptor}-{mode}.json"
    status = main(["reconstruct", str(HERE / "resources" / f"{image}.png"), "-o", str(metrics.with_suffix(".png")),
                   "--descriptor", descriptor, "--mode", mode, "--metrics", str(metrics), "--quiet"])
    if status != 0:
        raise SystemExit(f"reconstruct {image} {descriptor} {mode} failed with status {status}")
    return json.loads(metrics.read_text())


def list_table(rows):
    """A reST list-table of ``rows`` (tuples of cell texts), the first row its header.

    Examples
    --------
    >>> print(list_table([("a", "b"), ("1", "2")]))
    .. list-table::
       :header-rows: 1
    <BLANKLINE>
       * - a
         - b
       * - 1
         - 2
    """
    lines = [".. list-table::", "   :header-rows: 1", ""]
    for first, *rest in rows:
        lines += [f"   * - {first}", *(f"     - {cell}" for cell in rest)]
    return "\n".join(lines)


def table():
    """The table, measured now."""
    rows = [HEADER]
    with tempfile.TemporaryDirectory() as folder:
        for image, descriptor in ROWS:
            joint = measure(image, descriptor, "joint", folder)
            patches = measure(image, descriptor, "patches", folder)
            rows.append((f"{image}, {descriptor.upper()}",
                         f"{joint['correlation']:.3f} / {joint['psnr']:.1f} dB / {joint['bit_consistency']:.3f}",
                         f"{patches['correlation']:.3f} / {patches['psnr']:.1f} dB / "
                         f"{patches['solver_bit_consistency']:.3f}"))
            print(" | ".join(rows[-1]), flush=True)
    return list_table(rows)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="compare with the page instead of writing it")
    args = parser.parse_args()
    text = PAGE.read_text(encoding="utf-8")
    match = re.search("^" + re.escape(START) + r"\n(.*?)\n" + re.escape(END) + "$", text, flags=re.S | re.M)
    if match is None:
        raise SystemExit(f"{PAGE.relative_to(HERE)} has no {START} ... {END} block")
    fresh = table()
    if args.check:
        if fresh.strip() != match.group(1).strip():
            print(f"{PAGE.relative_to(HERE)}'s quality table differs from a fresh run:\n" + fresh)
            return 1
        print(f"{PAGE.relative_to(HERE)}'s quality table matches a fresh run")
        return 0
    PAGE.write_text(text[:match.start(1)] + "\n" + fresh + "\n" + text[match.end(1):], encoding="utf-8")
    print(f"{PAGE.relative_to(HERE)} updated")
    return 0


if __name__ == "__main__":
    sys.exit(main())
