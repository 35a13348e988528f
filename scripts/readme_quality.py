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

A second table, between ``.. generalisation-table`` and
``.. /generalisation-table``, scores the generalisation set of
``scripts/make_samples.py``: scenes no solver setting was chosen on
(whiteboard, dark-mode screen, receipt, face mosaic, licence plate). Same
protocol (offset 8, BRIEF and FREAK): correlation over the covered pixels
and, for the images with text, the lines tesseract reads from the joint
solve (``scripts/legibility.py``'s rule: as written or cleaned up, either
polarity, the better); then the same images from a feature file of 500 ORB
keypoints (``lbdviewer extract``, then ``invert``; uncovered pixels at the
covered median). ``--only quality`` or ``--only generalisation`` measures
one table.
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
GENERAL_START, GENERAL_END = ".. generalisation-table", ".. /generalisation-table"
GENERAL_HEADER = ("image, descriptor", "joint: correlation / lines read", "patchwise (paper): correlation")
GENERAL_IMAGES = ("whiteboard", "dark-screen", "receipt", "faces", "plate")
TEXT_IMAGES = ("whiteboard", "dark-screen", "receipt")
FEATURE_FILE = ("orb", 500)
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


def _lines(sample, estimate):
    """Lines tesseract reads of a text sample's reconstruction, as ``scripts/legibility.py`` counts them."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("legibility", HERE / "scripts" / "legibility.py")
    legibility = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(legibility)
    from lbdviewer.evaluation.ocr import read_lines

    lines = legibility.expected_lines(sample)
    readings = [read_lines(pixels, lines) for pixels in (estimate, legibility.clean_up(estimate))]
    if any(reading is None for reading in readings):
        return "-"
    return f"{max(reading.count for reading in readings)}/{len(lines)}"


def generalisation_table():
    """The generalisation table, measured now."""
    from lbdviewer.evaluation.display import display_stretch
    from lbdviewer.evaluation.metrics import correlation
    from lbdviewer.features.extract import extract_features
    from lbdviewer.features.invert import invert_features
    from lbdviewer.io.samples import sample_image
    from lbdviewer.patterns.families import make_pattern
    from lbdviewer.reconstruction.image import describe_sites, reconstruct_image
    from lbdviewer.reconstruction.sites import grid_sites

    rows = [GENERAL_HEADER]
    for name in GENERAL_IMAGES:
        image = sample_image(name)
        sites = grid_sites(image.shape, patch_size=32, offset=8)
        for family in ("brief", "freak"):
            pattern = make_pattern(family, patch_size=32, m=512)
            bits = describe_sites(image, sites, pattern)
            joint = reconstruct_image(bits, sites, pattern, shape=image.shape, mode="joint")
            patches = reconstruct_image(bits, sites, pattern, shape=image.shape, mode="patches")
            read = f" / {_lines(name, joint.image)} lines" if name in TEXT_IMAGES else ""
            rows.append((f"{name}, {family.upper()}", f"{correlation(image, joint.image):.3f}{read}",
                         f"{correlation(image, patches.image):.3f}"))
            print(" | ".join(rows[-1]), flush=True)
    descriptor, count = FEATURE_FILE
    for name in GENERAL_IMAGES:
        image = sample_image(name)
        features = extract_features(image, descriptor, n_keypoints=count)
        result = invert_features(features)
        shown = display_stretch(result.image, mask=result.covered, uncovered="neutral").image
        read = f" / {_lines(name, shown)} lines" if name in TEXT_IMAGES else ""
        rows.append((f"{name}, {descriptor.upper()} file ({len(features.keypoints)} keypoints, "
                     f"{result.covered.mean():.0%} covered)",
                     f"{correlation(image, result.image, mask=result.covered):.3f}{read}", "-"))
        print(" | ".join(rows[-1]), flush=True)
    return list_table(rows)


def _block(text, start, end):
    match = re.search("^" + re.escape(start) + r"\n(.*?)\n" + re.escape(end) + "$", text, flags=re.S | re.M)
    if match is None:
        raise SystemExit(f"{PAGE.relative_to(HERE)} has no {start} ... {end} block")
    return match


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="compare with the page instead of writing it")
    parser.add_argument("--only", choices=("quality", "generalisation"), default=None, help="measure one table")
    args = parser.parse_args()
    text = PAGE.read_text(encoding="utf-8")
    tables = [(START, END, table), (GENERAL_START, GENERAL_END, generalisation_table)]
    differ = False
    for start, end, measure_table in tables:
        if args.only and not start.startswith(f".. {args.only}"):
            continue
        match = _block(text, start, end)
        fresh = measure_table()
        if args.check:
            if fresh.strip() != match.group(1).strip():
                print(f"{PAGE.relative_to(HERE)}'s {start[3:]} differs from a fresh run:\n" + fresh)
                differ = True
            continue
        text = text[:match.start(1)] + "\n" + fresh + "\n" + text[match.end(1):]
    if args.check:
        print(f"{PAGE.relative_to(HERE)}'s tables {'differ from' if differ else 'match'} a fresh run")
        return 1 if differ else 0
    PAGE.write_text(text, encoding="utf-8")
    print(f"{PAGE.relative_to(HERE)} updated")
    return 0


if __name__ == "__main__":
    sys.exit(main())
