"""Measure the README's quality table with the command line's own metrics, and write or check it.

    .venv/bin/python scripts/readme_quality.py           # rewrite the table in README.md
    .venv/bin/python scripts/readme_quality.py --check   # exit 1 if README.md differs from a fresh run

The table sits between ``<!-- quality-table -->`` and ``<!-- /quality-table -->``
in README.md: 512x512 samples, 32x32 patches, offset 8, M = 512, binary
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
README = HERE / "README.md"
START, END = "<!-- quality-table -->", "<!-- /quality-table -->"
ROWS = [("astronaut", "brief"), ("astronaut", "freak"), ("camera", "brief"), ("camera", "freak")]


def measure(image, descriptor, mode, folder):
    from lbdviewer.cli.main import main

    metrics = Path(folder) / f"{image}-{descriptor}-{mode}.json"
    status = main(["reconstruct", str(HERE / "resources" / f"{image}.png"), "-o", str(metrics.with_suffix(".png")),
                   "--descriptor", descriptor, "--mode", mode, "--metrics", str(metrics), "--quiet"])
    if status != 0:
        raise SystemExit(f"reconstruct {image} {descriptor} {mode} failed with status {status}")
    return json.loads(metrics.read_text())


def table():
    """The Markdown table, measured now."""
    lines = ["| image, descriptor | joint: correlation / PSNR / bits | patchwise (paper): correlation / PSNR / solver bits |",
             "|---|---|---|"]
    with tempfile.TemporaryDirectory() as folder:
        for image, descriptor in ROWS:
            joint = measure(image, descriptor, "joint", folder)
            patches = measure(image, descriptor, "patches", folder)
            lines.append(f"| {image}, {descriptor.upper()} | {joint['correlation']:.3f} / {joint['psnr']:.1f} dB / "
                         f"{joint['bit_consistency']:.3f} | {patches['correlation']:.3f} / {patches['psnr']:.1f} dB / "
                         f"{patches['solver_bit_consistency']:.3f} |")
            print(lines[-1], flush=True)
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="compare with README.md instead of writing it")
    args = parser.parse_args()
    text = README.read_text()
    match = re.search(re.escape(START) + r"\n(.*?)\n" + re.escape(END), text, flags=re.S)
    if match is None:
        raise SystemExit(f"README.md has no {START} ... {END} block")
    fresh = table()
    if args.check:
        if fresh.strip() != match.group(1).strip():
            print("README.md's quality table differs from a fresh run:\n" + fresh)
            return 1
        print("README.md's quality table matches a fresh run")
        return 0
    README.write_text(text[:match.start(1)] + fresh + text[match.end(1):])
    print("README.md updated")
    return 0


if __name__ == "__main__":
    sys.exit(main())
