"""``lbdviewer audit INPUT... -o REPORT_DIR``: what descriptors give away, over many inputs.

INPUTs are images, feature files (``.npz``), folders (recursed) or globs. For
an image each named descriptor is extracted with the real library, inverted
from the features alone and compared with the image; a feature file is
inverted and compared with an image of the same stem beside it, if any. One
row per input and descriptor goes to ``REPORT_DIR/results.csv`` as it
finishes (and to ``results.parquet`` at the end, with pyarrow); a second run
over the same folder does only what is missing. ``REPORT_DIR/index.html`` is
the report. Tasks run in a local process pool, or on a Dask cluster with
``--scheduler tcp://HOST:PORT`` (see :mod:`lbdviewer.audit`).
"""

from __future__ import annotations

from lbdviewer.features import DESCRIPTORS
from lbdviewer.inversion import MODES


def _descriptors(text):
    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in DESCRIPTORS]
    if not names or unknown:
        raise ValueError(f"--descriptor must be a comma-separated list of {', '.join(DESCRIPTORS)}, got {text!r}")
    return list(dict.fromkeys(names))


def add_parser(subparsers):
    parser = subparsers.add_parser("audit", help="invert the descriptors of many images or feature files; "
                                                 "a report of what they give away")
    parser.add_argument("inputs", nargs="+", metavar="INPUT", help="image, feature file (.npz), folder or glob")
    parser.add_argument("-o", "--output", required=True, metavar="REPORT_DIR",
                        help="report folder (created; an existing one is resumed)")
    parser.add_argument("--descriptor", default="orb", metavar="NAMES",
                        help=f"comma-separated descriptors to extract from images ({', '.join(DESCRIPTORS)}; "
                             "default orb)")
    parser.add_argument("--keypoints", type=int, default=500, help="keypoints to detect per image (default 500)")
    parser.add_argument("--mode", choices=MODES, default="joint", help="inversion mode (default joint)")
    parser.add_argument("--iterations", type=int, default=None, help="solver iterations (default: the mode's)")
    parser.add_argument("--scheduler", metavar="ADDRESS",
                        help="run on the Dask cluster of this scheduler (tcp://HOST:PORT) instead of locally")
    parser.add_argument("--workers", type=int, default=None,
                        help="processes of the local pool (default: the number of cores)")
    parser.add_argument("--threads", type=int, default=None,
                        help="solver threads per task (default: cores / workers locally; the worker's cores on Dask)")
    parser.add_argument("--limit-seconds", type=float, default=None, metavar="S",
                        help="give up on a task (an error row) after S seconds of inversion")
    parser.add_argument("--no-ocr", action="store_true", help="skip OCR even if tesseract is installed")
    parser.set_defaults(func=run)


def _check(args):
    for name in ("keypoints", "iterations", "workers", "threads"):
        value = getattr(args, name)
        if value is not None and value < 1:
            raise ValueError(f"--{name} must be at least 1, got {value}")
    if args.limit_seconds is not None and not args.limit_seconds > 0:
        raise ValueError(f"--limit-seconds must be positive, got {args.limit_seconds}")
    if args.scheduler is not None and args.workers is not None:
        raise ValueError("--workers sizes the local pool; with --scheduler the cluster's workers run the tasks")


def run(args):
    from lbdviewer.audit import ResultsLog, collect_inputs, default_workers, iter_audit, plan_tasks, write_report

    _check(args)
    descriptors = _descriptors(args.descriptor)
    workers = args.workers or default_workers()
    threads = args.threads
    if threads is None and args.scheduler is None:
        threads = max(1, default_workers() // workers)
    tasks = plan_tasks(collect_inputs(args.inputs), descriptors, keypoints=args.keypoints, mode=args.mode,
                       iterations=args.iterations, limit_seconds=args.limit_seconds, ocr=not args.no_ocr,
                       threads=threads)
    with ResultsLog(args.output) as log:
        pending = sum(task.key not in log.done for task in tasks)
    where = args.scheduler or f"{workers} local processes"
    print(f"{args.output}: {pending} of {len(tasks)} tasks to run on {where}", flush=True)
    done = failed = 0
    try:
        for row in iter_audit(tasks, args.output, workers=workers, scheduler=args.scheduler):
            done += 1
            failed += row["status"] != "ok"
            quality = row["status"]
            if row["status"] == "ok":
                quality = f"{row['keypoints']} keypoints" + (f", correlation {row['correlation']:.3f}"
                                                             if row["correlation"] is not None else "")
            print(f"[{done}/{pending}] {row['input']} {row['descriptor']}: {quality} ({row['seconds']:.1f} s, "
                  f"{row['worker']})", flush=True)
    finally:
        report = write_report(args.output)
    print(f"{report}: {done} new rows ({failed} errors), {len(tasks) - pending} already done")
    return 0
