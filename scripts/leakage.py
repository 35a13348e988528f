"""Which descriptor leaks most? Every library descriptor's feature file of one image, inverted and scored.

For each descriptor lbdviewer models (``lbdviewer.libraries.registry.DESCRIPTORS``),
the real library describes ``--image`` at its default settings (ORB's
detector, ``--keypoints`` 500), the feature file is written and read back, and
the image is rebuilt from it alone (joint, defaults):
:func:`lbdviewer.evaluation.leakage.compare_descriptors`. Legibility is the number of
title lines tesseract reads back from the reconstruction of the
``book-titles`` sample's own feature file. Prints a Markdown table, most
correlated first, and writes ``OUTDIR/leakage.json`` (every row),
``OUTDIR/leakage.csv`` and one PNG per descriptor (the reconstruction, by the
display rule of :func:`lbdviewer.evaluation.display.display_stretch`).

``--record PATH`` prints the table of a ``leakage`` figure already made
(``lbdviewer figures OUTDIR --only leakage``, or the README gallery's
``resources/docs/gallery/leakage.json``) from its run record, computing nothing.

Usage: ``python scripts/leakage.py [OUTDIR] [--image astronaut] [--keypoints 500] [--descriptors ...] [--no-ocr]``
       ``python scripts/leakage.py --record resources/docs/gallery/leakage.json``
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from types import SimpleNamespace

from lbdviewer.evaluation.display import display_stretch
from lbdviewer.libraries.registry import DESCRIPTORS
from lbdviewer.figures.leakage import leakage_csv, table_rows
from lbdviewer.io.images import save_png
from lbdviewer._runtime.versions import library_versions
from lbdviewer.io.samples import sample_image
from lbdviewer.io.strict_json import save_json
from lbdviewer.io.files import atomic_write
from lbdviewer.evaluation.leakage import BOOK_TITLES, compare_descriptors, table
from lbdviewer.evaluation.records import read_sidecar


def print_record(path):
    """Print the table of a ``leakage`` figure's run record (null scores shown as NaN)."""
    record = read_sidecar(path)
    parameters = record["parameters"]
    print(f"{record['source']['name']}, {parameters['keypoints']} keypoints (each library's detector), "
          f"quick {parameters['quick']}, from {path}\n")
    rows = [SimpleNamespace(**{key: float("nan") if value is None and key in ("correlation", "bit_consistency")
                               else value for key, value in entry.items()}) for entry in record["extra"]["table"]]
    print(table(rows))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("outdir", nargs="?", default="leakage-out")
    parser.add_argument("--image", default="astronaut", help="sample image name (default astronaut)")
    parser.add_argument("--keypoints", type=int, default=500)
    parser.add_argument("--descriptors", nargs="+", default=list(DESCRIPTORS), choices=DESCRIPTORS)
    parser.add_argument("--no-ocr", action="store_true", help="skip the legibility column")
    parser.add_argument("--record", type=Path, help="print the table of this leakage figure's record instead")
    args = parser.parse_args(argv)
    if args.record is not None:
        print_record(args.record)
        return 0
    outdir = Path(args.outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    rows = compare_descriptors(sample_image(args.image), args.descriptors, n_keypoints=args.keypoints,
                               text_image=None if args.no_ocr else sample_image("book-titles"),
                               titles=BOOK_TITLES, ocr=not args.no_ocr)
    print(f"{args.image}, {args.keypoints} keypoints (each library's detector), joint inversion of each feature file\n")
    print(table(rows))
    for row in rows:
        save_png(outdir / f"{row.descriptor}.png", display_stretch(row.reconstruction, mask=row.covered).image)
    save_json(outdir / "leakage.json", {"image": args.image, "keypoints": args.keypoints, "titles": BOOK_TITLES,
                                        "rows": [row.as_dict() for row in rows], "versions": library_versions()})
    atomic_write(outdir / "leakage.csv", leakage_csv(table_rows(rows)).encode("utf-8"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
