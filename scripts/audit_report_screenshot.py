"""Render an audit report's ``index.html`` in headless Chromium and save a screenshot.

Usage: ``python scripts/audit_report_screenshot.py OUT.png [--report REPORT_DIR] [--size 1400x2200]``

Without ``--report`` a small audit is run first (crops of the shipped
samples, two descriptors, a broken file, a hostile file name, 30 iterations)
into a temporary folder. Needs Debian's ``chromium``
(``apt-get install chromium``). Prints the report folder and the PNG path.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from lbdviewer.audit import collect_inputs, iter_audit, plan_tasks, write_report
from lbdviewer.io.images import save_png
from lbdviewer.io.samples import sample_image

CROPS = {"camera": (60, 180, 192), "astronaut": (40, 150, 192), "book-titles": (0, 0, 256),
         "shapes": (0, 0, 256)}


def make_report(folder):
    """A small audit of sample crops (and two bad inputs) into ``folder``."""
    inputs = Path(folder) / "inputs"
    inputs.mkdir(parents=True, exist_ok=True)
    for name, (row, col, side) in CROPS.items():
        save_png(inputs / f"{name}.png", sample_image(name)[row:row + side, col:col + side])
    (inputs / "broken.png").write_bytes(b"\x89PNG\r\n\x1a\n truncated")
    (inputs / "<img src=x onerror=alert(1)>.png").write_bytes(b"not an image")
    tasks = plan_tasks(collect_inputs([inputs]), ["orb", "opencv-brief"], keypoints=300, iterations=30)
    for row in iter_audit(tasks, Path(folder) / "report", workers=2):
        print(row["input"], row["descriptor"], row["status"], flush=True)
    return write_report(Path(folder) / "report").parent


def screenshot(index, out, size):
    """Chromium's screenshot of ``index`` (a file path) at ``size`` (``WxH``)."""
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        raise SystemExit("chromium is not installed (apt-get install chromium)")
    width, height = size.split("x")
    subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                    f"--screenshot={Path(out).resolve()}", f"--window-size={width},{height}",
                    Path(index).resolve().as_uri()], check=True, capture_output=True, timeout=120)
    return Path(out)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", help="PNG to write")
    parser.add_argument("--report", help="an existing report folder (default: run a small audit)")
    parser.add_argument("--size", default="1400x2200", help="window size WxH (default 1400x2200)")
    args = parser.parse_args(argv)
    folder = Path(args.report) if args.report else make_report(tempfile.mkdtemp(prefix="lbdviewer-audit-"))
    if args.report:
        write_report(folder)
    print(folder)
    print(screenshot(folder / "index.html", args.out, args.size))
    return 0


if __name__ == "__main__":
    sys.exit(main())
