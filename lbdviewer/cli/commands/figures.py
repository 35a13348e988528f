"""``lbdviewer figures OUTDIR``: make the paper's figures again on the shipped sample images.

Each figure is written as ``OUTDIR/NAME.png`` (its dpi recorded), ``NAME.pdf``
(TrueType text: searchable and editable) and/or ``NAME.svg``, beside
``NAME.json``, the run record of what was computed (solvers actually run,
iterations, stop reasons, metrics, seconds, image sources with their SHA-256,
versions). The artwork holds panels, letters, short titles and colour bars;
the caption goes beside it, as LaTeX, into ``NAME.caption.txt`` and
``NAME.tex`` (a ready ``figure`` environment); ``--caption inside`` draws it
under the panels instead (slides, posters). ``--sheet`` also writes
``OUTDIR/index.html``, every figure at its print size with its caption.
``--list`` says what each figure shows; see :mod:`lbdviewer.figures.paper`
(``leakage`` also writes ``NAME.csv``, its table). ``--quick`` uses small
crops and few iterations (seconds instead of minutes; the record says so).
On a terminal a bar shows the figures done and the panels of the current one.
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
CAPTION_PLACEMENTS = ("beside", "inside")


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
    parser = add_command(subparsers, "figures", __doc__,
                         "make the paper's figures (PNG/PDF/SVG + JSON record + caption and LaTeX)")
    parser.add_argument("outdir", nargs="?",
                        help="folder for NAME.png, NAME.pdf, ..., NAME.json, NAME.tex (created if missing)")
    parser.add_argument("--list", action="store_true", help="print each figure's name and what it shows, then exit")
    parser.add_argument("--quick", action="store_true", help="small crops and few iterations")
    parser.add_argument("--only", nargs="+", choices=FIGURE_NAMES, metavar="NAME",
                        help=f"make only these figures (of: {', '.join(FIGURE_NAMES)})")
    parser.add_argument("--format", type=_formats, default=("png", "pdf"), metavar="LIST",
                        help=f"comma-separated formats among {','.join(FORMATS)} (default: png,pdf)")
    parser.add_argument("--width", type=_width, default="double", metavar="single|double|INCHES",
                        help=f"figure width: single ({WIDTHS['single']} in), double ({WIDTHS['double']} in) "
                             "or inches; a figure whose content is much narrower is as wide as its content "
                             "(default: double)")
    parser.add_argument("--dpi", type=_dpi, default=DEFAULT_DPI, help=f"PNG resolution (default {DEFAULT_DPI})")
    parser.add_argument("--caption", choices=CAPTION_PLACEMENTS, default="beside",
                        help="beside: the caption goes to NAME.caption.txt and NAME.tex, not into the artwork; "
                             "inside: drawn under the panels (slides, posters)")
    parser.add_argument("--shared-scale", action="store_true",
                        help="weight-maps: one colour scale for all weight maps and one for all occurrence maps "
                             "(default: each map on its own scale)")
    parser.add_argument("--sheet", action="store_true",
                        help="also write OUTDIR/index.html: every figure made at its print size with its caption")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.set_defaults(func=run)
    return parser


def _list():
    from lbdviewer.figures.paper import figure_summaries

    summaries = figure_summaries()
    width = max(len(name) for name in summaries)
    for name, summary in summaries.items():
        print(f"{name:<{width}}  {summary}")
    return 0


def run(args):
    """Run ``lbdviewer figures``; return the exit status."""
    if args.list:
        return _list()
    if args.outdir is None:
        print("lbdviewer figures: error: outdir is required (or --list)", file=sys.stderr)
        return 2
    from tqdm import tqdm

    from lbdviewer._runtime.progress import advance, progress_bar
    from lbdviewer.evaluation.records import read_sidecar
    from lbdviewer.figures.captions import write_sheet
    from lbdviewer.figures.paper import iter_figure, write_figure

    folder = Path(args.outdir)
    if folder.exists() and not folder.is_dir():
        print(f"lbdviewer figures: error: outdir {str(folder)!r} is not a folder", file=sys.stderr)
        return 2
    folder.mkdir(parents=True, exist_ok=True)
    names = args.only or FIGURE_NAMES
    with progress_bar(len(names), desc="figures", unit="figure", quiet=args.quiet) as figures_bar:
        for name in names:
            started = time.perf_counter()
            figures_bar.set_postfix_str(name)
            options = {"shared_scale": True} if args.shared_scale and name == "weight-maps" else {}
            with progress_bar(desc=f"{name} panels", unit="panel", quiet=args.quiet) as panels_bar:
                for step in iter_figure(name, quick=args.quick, **options):
                    advance(panels_bar, step.done, step.total)
            written = write_figure(folder, name, formats=args.format, dpi=args.dpi, width=args.width,
                                   caption=args.caption, made=(step.spec, step.record))
            figures_bar.update(1)
            files = ", ".join(path.name for path in written.values())
            tqdm.write(f"{folder / name}: {files}  ({time.perf_counter() - started:.1f} s)", file=sys.stdout)
            layout = read_sidecar(written["json"])["extra"]["figure"]
            if layout["taller_than_page"]:
                tqdm.write(f"  note: {name} is {layout['height_in']:.1f} in tall at {layout['width_in']:.2f} in wide, "
                           f"taller than a journal page: --dpi {2 * args.dpi} sets its images at half the size, "
                           f"--width double puts more a row", file=sys.stdout)
    if args.sheet:
        print(f"{write_sheet(folder, names)}: every figure at its print size, with its caption", flush=True)
    return 0
