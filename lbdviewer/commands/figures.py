"""``lbdviewer figures OUTDIR``: make the paper's figures again on the shipped sample images.

Each figure is written as ``OUTDIR/NAME.png`` and ``OUTDIR/NAME.json`` (every
parameter, the panel layout and the library versions); see
:mod:`lbdviewer.figures` for the list. ``--quick`` uses small crops and few
iterations (seconds instead of minutes; the JSON records it).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from lbdviewer.figures import FIGURES, write_figure


def add_parser(subparsers):
    """Register the ``figures`` subcommand."""
    parser = subparsers.add_parser("figures", help="make the paper's figures (PNG + JSON)",
                                   description=__doc__.split("\n\n")[0])
    parser.add_argument("outdir", help="folder for NAME.png and NAME.json (created if missing)")
    parser.add_argument("--quick", action="store_true", help="small crops and few iterations")
    parser.add_argument("--only", nargs="+", choices=tuple(FIGURES), metavar="NAME",
                        help=f"make only these figures (of: {', '.join(FIGURES)})")
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
        png, _ = write_figure(folder, name, quick=args.quick)
        print(f"{png}  ({time.perf_counter() - started:.1f} s)", flush=True)
    return 0
