"""``lbdviewer figures OUTDIR``: make the paper's figures again on the shipped sample images.

Each figure is written as ``OUTDIR/NAME.png`` (its dpi recorded), ``NAME.pdf``
(TrueType text: searchable and editable) and/or ``NAME.svg``, beside
``NAME.json``, the run record of what was computed (solvers actually run,
iterations, metrics, seconds, image sources with their SHA-256, versions);
see :mod:`lbdviewer.figures.paper` for the list (``leakage`` also writes
``NAME.csv``, its table). ``--quick`` uses small
crops and few iterations (seconds instead of minutes; the record says so).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from lbdviewer.cli.commands._args import add_command

# The names, widths and formats are repeated here (a test checks they agree with lbdviewer.figures) so that
# `lbdviewer` starts without importing matplotlib, which also creates its configuration and cache folders:
# lbdviewer.figures is imported only when the figures command runs or its options are parsed.
FIGURE_NAMES = ("frame-vectors", "weight-maps", "measurements-128", "zero-overlap", "offsets", "fast-real",
                "fast-binary", "detail", "leakage")
FORMATS = ("png", "pdf", "svg")
WIDTHS = {"single": 3.5, "double": 7.16}
DEFAULT_DPI = 300


def _checked(check, value):
    from lbdviewer.figures import engine

    try:
        return getattr(engine, check)(value)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _formats(text):
    return _checked("check_formats", text)


def _width(text):
    _checked("check_width", text)
    return text if text in WIDTHS else float(text)


def _dpi(text):
    try:
        dpi = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"dpi must be an integer, got {text!r}") from None
    return _checked("check_dpi", dpi)


def add_parser(subparsers):
    """Register the ``figures`` subcommand."""
    parser = add_command(subparsers, "figures", __doc__, "make the paper's figures (PNG/PDF/SVG + JSON record)")
    parser.add_argument("outdir", help="folder for NAME.png, NAME.pdf, ... and NAME.json (created if missing)")
    parser.add_argument("--quick", action="store_true", help="small crops and few iterations")
    parser.add_argument("--only", nargs="+", choices=FIGURE_NAMES, metavar="NAME",
                        help=f"make only these figures (of: {', '.join(FIGURE_NAMES)})")
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
    from lbdviewer.figures import write_figure

    folder = Path(args.outdir)
    if folder.exists() and not folder.is_dir():
        print(f"lbdviewer figures: error: outdir {str(folder)!r} is not a folder", file=sys.stderr)
        return 2
    folder.mkdir(parents=True, exist_ok=True)
    for name in args.only or FIGURE_NAMES:
        started = time.perf_counter()
        written = write_figure(folder, name, quick=args.quick, formats=args.format, dpi=args.dpi, width=args.width)
        files = ", ".join(path.name for path in written.values())
        print(f"{folder / name}: {files}  ({time.perf_counter() - started:.1f} s)", flush=True)
    return 0
