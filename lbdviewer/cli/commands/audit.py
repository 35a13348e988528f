"""``lbdviewer audit INPUT... -o REPORT_DIR``: what descriptors give away, over many inputs.

INPUTs are images, feature files (``.npz`` or OpenCV FileStorage), folders
(recursed) or globs; a path that does not exist stops the command before any
work. For an image each named descriptor is extracted with the real library,
inverted from the features alone and compared with the image; a feature file is
inverted and compared with an image of the same stem beside it, if any. One
row per input and descriptor goes to ``REPORT_DIR/results.csv`` as it
finishes (and to ``results.parquet`` at the end, with pyarrow); a second run
over the same folder does only what is missing. ``REPORT_DIR/index.html`` is
the report: a summary first (each descriptor's risk level and the rule behind
it, which descriptor leaks most, what to do), then the rows worst first, the
run settings and library versions; it prints on A4, and ``--pdf FILE`` writes
it as a PDF handout. With ``--defence`` (as ``lbdviewer defend`` takes it) the
images' defences are measured too (``REPORT_DIR/defences.csv``) and the
summary recommends one per descriptor with its cost in matching. Tasks run in
a local process pool, or on a Dask cluster with ``--scheduler tcp://HOST:PORT``
(see :mod:`lbdviewer.audit`).
"""

from __future__ import annotations

import datetime
import shutil
import subprocess

from lbdviewer.cli.commands._args import add_command, add_limit_options, add_output, check_outputs, positive_float
from lbdviewer.cli.commands._args import positive_int
from lbdviewer.cli.commands._batch import add_run_options, descriptor_list, resolve_run_options, run_tasks
from lbdviewer.cli.commands.defend import add_defence_options, defence_list, defend_options, describe_row
from lbdviewer.features.invert import MODES
from lbdviewer.io import limits
from lbdviewer.libraries.registry import DESCRIPTORS


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
    add_run_options(parser)
    parser.add_argument("--limit-seconds", type=positive_float, default=None, metavar="S",
                        help="give up on a task (an error row) after S seconds of inversion (default: no limit)")
    parser.add_argument("--no-ocr", action="store_true", help="skip OCR even if tesseract is installed")
    parser.add_argument("--title", default=None, help="title of the report (default: 'Privacy audit: <folder>')")
    parser.add_argument("--pdf", metavar="FILE", default=None, help="also write the report as a PDF handout")
    add_defence_options(parser, required=False)
    add_limit_options(parser)
    parser.add_argument("--quiet", action="store_true", help="no progress bar, no line per row, no summary")
    parser.set_defaults(func=run)
    return parser


def _describe(row):
    quality = f"{row['keypoints']} keypoints" + (f", correlation {row['correlation']:.3f}"
                                                 if row["correlation"] is not None else "")
    return f"{row['input']} {row['descriptor']}: {quality}"


def _tesseract_version():
    if shutil.which("tesseract") is None:
        return None
    try:
        result = subprocess.run(["tesseract", "--version"], capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    first = (result.stdout or result.stderr).splitlines()
    return first[0].strip() if first else None


def run(args):
    """Run ``lbdviewer audit``; return the exit status."""
    from lbdviewer._runtime.versions import library_versions
    from lbdviewer.audit import collect_inputs, plan_tasks, write_report
    from lbdviewer.audit.results import record_settings
    from lbdviewer.audit.results_log import AUDIT
    from lbdviewer.audit.tasks import is_feature_file
    from lbdviewer.defences.tasks import AUDIT_DEFENCES, plan_defend_tasks

    descriptors = descriptor_list(args.descriptor)
    defences = defence_list(args.defence)
    check_outputs({"--pdf": args.pdf})
    workers, threads = resolve_run_options(args)
    # The limits are resolved here, so that every worker (of any machine) applies the same ones.
    max_keypoints = limits.max_keypoints(args.max_keypoints)
    limits.check_keypoints(args.keypoints, "--keypoints", limit=max_keypoints)
    inputs = collect_inputs(args.inputs)  # a missing path is refused here, before any work
    tasks = plan_tasks(inputs, descriptors, keypoints=args.keypoints, mode=args.mode,
                       iterations=args.iterations, limit_seconds=args.limit_seconds, ocr=not args.no_ocr,
                       threads=threads, max_pixels=limits.max_pixels(args.max_pixels),
                       max_keypoints=max_keypoints)
    defend = plan_defend_tasks([path for path in inputs if not is_feature_file(path)], descriptors, defences,
                               **defend_options(args, threads)) if defences else []
    ocr = "off (--no-ocr)" if args.no_ocr else (_tesseract_version() or "tesseract not installed")
    record_settings(args.output, {
        "started": datetime.datetime.now().isoformat(timespec="seconds"), "title": args.title,
        "descriptors": descriptors, "keypoints": args.keypoints, "mode": args.mode, "iterations": args.iterations,
        "ocr": ocr, "defences": [defence.label for defence in defences],
        "ran_on": args.scheduler or f"{workers} local processes", "versions": library_versions()})
    done = failed = before = 0
    try:
        done, failed, before = run_tasks(tasks, args, kind=AUDIT, desc="audit", describe=_describe,
                                         workers=workers)
        if defend:
            added = run_tasks(defend, args, kind=AUDIT_DEFENCES, desc="defences", describe=describe_row,
                              workers=workers)
            done, failed, before = done + added[0], failed + added[1], before + added[2]
    finally:
        report = write_report(args.output, title=args.title, pdf=args.pdf)
    if not args.quiet:
        print(f"{report}: {done} new rows ({failed} errors), {before} already done"
              + (f"; handout {args.pdf}" if args.pdf else ""))
    return 0
