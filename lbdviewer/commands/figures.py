"""``lbdviewer figures OUTDIR``: make the paper's figures again on the shipped sample images.

Each figure is written as ``OUTDIR/NAME.png`` (its dpi recorded), ``NAME.pdf``
(TrueType text: searchable and editable) and/or ``NAME.svg``, beside
``NAME.json``, the run record of what was computed (solvers actually run,
iterations, metrics, seconds, image sources with their SHA-256, versions);
see :mod:`lbdviewer.figures.paper` for the list. ``--quick`` uses small
crops and few iterations (seconds instead of minutes; the record says so).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from lbdviewer.figures import DEFAULT_DPI, FIGURES, FORMATS, WIDTHS, write_figure
from lbdviewer.figures.engine import check_dpi, check_formats, check_width


def _formats(text):
    try:
        return check_formats(text)
    except ValueError as error:
        raise _argument_error(error) from None


def _width(text):
    try:
        check_width(text)
    except ValueError as error:
        raise _argument_error(error) from None
    return text if text in WIDTHS else float(text)


def _dpi(text):
    try:
        return check_dpi(int(text))
    except ValueError as error:
        raise _argument_error(error) from None


def _argument_error(error):
    return argparse.ArgumentTypeError(str(error))


def add_parser(subparsers):
    """Register the ``figures`` subcommand."""
    parser = subparsers.add_parser("figures", help="make the paper's figures (PNG/PDF/SVG + JSON record)",
                                   description=__doc__.split("\n\n")[0])
    parser.add_argument("outdir", help="folder for NAME.png, NAME.pdf, ... and NAME.json (created if missing)")
    parser.add_argument("--quick", action="store_true", help="small crops and few iterations")
    parser.add_argument("--only", nargs="+", choices=tuple(FIGURES), metavar="NAME",
                        help=f"make only these figures (of: {', '.join(FIGURES)})")
    parser.add_argument("--format", type=_formats, default=("png", "pdf"), metavar="LIST",
                        help=f"comma-separated formats among {','.join(FORMATS)} (default: png,pdf)")
    parser.add_argument("--width", type=_width, default="double", metavar="single|double|INCHES",
                        help=f"figure width: single ({WIDTHS['single']} in), double ({WIDTHS['double']} in) "
                             "or inches (default: double)")
    parser.add_argument("--dpi", type=_dpi, default=DEFAULT_DPI, help=f"PNG resolution (default {DEFAULT_DPI})")
    parser.set_defaults(func=run)
    return parser


def run(args):
    """Run ``lbdviewer figures``; return the exit status."""
    folder = Path(args.outdir)
    if folder.exists() and not folder.is_dir():
        print(f"lbdviewer figures: error: outdir {str(folder)!r} is not a folder", file=sys.stderr)
        return 2
    folder.mkdir(parents=True, exist_ok=True)
    for name in args.only or FIGURES:
        started = time.perf_counter()
        written = write_figure(folder, name, quick=args.quick, formats=args.format, dpi=args.dpi, width=args.width)
        files = ", ".join(path.name for path in written.values())
        print(f"{folder / name}: {files}  ({time.perf_counter() - started:.1f} s)", flush=True)
    return 0
