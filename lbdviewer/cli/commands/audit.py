"""``lbdviewer audit INPUT... -o REPORT_DIR``: what descriptors give away, over many inputs.

INPUTs are images, feature files (``.npz`` or OpenCV FileStorage), folders
(recursed) or globs. For an image each named descriptor is extracted with the
real library, inverted from the features alone and compared with the image;
a feature file is
inverted and compared with an image of the same stem beside it, if any. One
row per input and descriptor goes to ``REPORT_DIR/results.csv`` as it
finishes (and to ``results.parquet`` at the end, with pyarrow); a second run
over the same folder does only what is missing. ``REPORT_DIR/index.html`` is
the report. Tasks run in a local process pool, or on a Dask cluster with
``--scheduler tcp://HOST:PORT`` (see :mod:`lbdviewer.audit`).
"""

from __future__ import annotations

import sys

from lbdviewer.io import limits
from lbdviewer.cli.commands._args import add_command, add_limit_options, add_output, positive_float, positive_int
from lbdviewer.libraries.registry import DESCRIPTORS
from lbdviewer.features.invert import MODES
from lbdviewer._runtime.progress import progress_bar


def _descriptors(text):
    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in DESCRIPTORS]
    if not names or unknown:
        raise ValueError(f"--descriptor must be a comma-separated list of {', '.join(DESCRIPTORS)}, got {text!r}")
    return list(dict.fromkeys(names))


def add_parser(subparsers):
    """Register the ``audit`` subcommand."""
    parser = add_command(subparsers, "audit", __doc__, "invert the descriptors of many images or feature files; "
                         "a report of what they give away")
    parser.add_argument("inputs", nargs="+", metavar="INPUT", help="image, feature file (.npz, .yml, .xml, .json), folder or glob")
    add_output(parser, "REPORT_DIR", "report folder (created; an existing one is resumed)")
    parser.add_argument("--descriptor", default="orb", metavar="NAMES",
                        help=f"comma-separated descriptors to extract from images ({', '.join(DESCRIPTORS)}; "
                             "default orb)")
    parser.add_argument("--keypoints", type=positive_int, default=500, metavar="N",
                        help="keypoints to detect per image (at most --max-keypoints)")
    parser.add_argument("--mode", choices=MODES, default="joint", help="inversion mode")
    parser.add_argument("--iterations", type=positive_int, default=None, metavar="N",
                        help="solver iterations (default: the mode's)")
    parser.add_argument("--scheduler", metavar="ADDRESS", default=None,
                        help="run on the Dask cluster of this scheduler (tcp://HOST:PORT) instead of locally")
    parser.add_argument("--workers", type=positive_int, default=None, metavar="N",
                        help="processes of the local pool (default: the number of cores)")
    parser.add_argument("--threads", type=positive_int, default=None, metavar="N",
                        help="solver threads per task (default: cores / workers locally; the worker's cores on Dask)")
    parser.add_argument("--limit-seconds", type=positive_float, default=None, metavar="S",
                        help="give up on a task (an error row) after S seconds of inversion (default: no limit)")
    parser.add_argument("--no-ocr", action="store_true", help="skip OCR even if tesseract is installed")
    add_limit_options(parser)
    parser.add_argument("--quiet", action="store_true", help="no progress bar, no line per row, no summary")
    parser.set_defaults(func=run)
    return parser


def run(args):
    """Run ``lbdviewer audit``; return the exit status."""
    from lbdviewer.audit import ResultsLog, collect_inputs, default_workers, iter_audit, plan_tasks, write_report

    if args.scheduler is not None and args.workers is not None:
        raise ValueError("--workers sizes the local pool; with --scheduler the cluster's workers run the tasks")
    descriptors = _descriptors(args.descriptor)
    # The limits are resolved here, so that every worker (of any machine) applies the same ones.
    max_keypoints = limits.max_keypoints(args.max_keypoints)
    limits.check_keypoints(args.keypoints, "--keypoints", limit=max_keypoints)
    workers = args.workers or default_workers()
    threads = args.threads
    if threads is None and args.scheduler is None:
        threads = max(1, default_workers() // workers)
    tasks = plan_tasks(collect_inputs(args.inputs), descriptors, keypoints=args.keypoints, mode=args.mode,
                       iterations=args.iterations, limit_seconds=args.limit_seconds, ocr=not args.no_ocr,
                       threads=threads, max_pixels=limits.max_pixels(args.max_pixels),
                       max_keypoints=max_keypoints)
    with ResultsLog(args.output) as log:
        pending = sum(task.key not in log.done for task in tasks)
    where = args.scheduler or f"{workers} local processes"
    if not args.quiet:
        print(f"{args.output}: {pending} of {len(tasks)} tasks to run on {where}")
    done = failed = 0
    try:
        with progress_bar(pending, desc="audit", unit="task", quiet=args.quiet) as bar:
            for row in iter_audit(tasks, args.output, workers=workers, scheduler=args.scheduler):
                done += 1
                failed += row["status"] != "ok"
                bar.update(1)
                quality = row["status"]
                if row["status"] == "ok":
                    quality = f"{row['keypoints']} keypoints" + (f", correlation {row['correlation']:.3f}"
                                                                 if row["correlation"] is not None else "")
                if not args.quiet:  # above the bar, which stays at the bottom of a terminal
                    bar.write(f"[{done}/{pending}] {row['input']} {row['descriptor']}: {quality} "
                              f"({row['seconds']:.1f} s, {row['worker']})", file=sys.stdout)
    finally:
        report = write_report(args.output)
    if not args.quiet:
        print(f"{report}: {done} new rows ({failed} errors), {len(tasks) - pending} already done")
    return 0
