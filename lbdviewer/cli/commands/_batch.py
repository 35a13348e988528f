"""What ``audit`` and ``defend`` share: their common options and the loop that runs tasks and reports each row."""

from __future__ import annotations

import sys

from lbdviewer._runtime.progress import progress_bar
from lbdviewer.cli.commands._args import positive_int
from lbdviewer.libraries.registry import DESCRIPTORS


def descriptor_list(text):
    """The descriptors of a ``--descriptor`` value (comma-separated), or a ValueError naming the value.

    Examples
    --------
    >>> descriptor_list("orb, beblid,orb")
    ['orb', 'beblid']
    """
    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in DESCRIPTORS]
    if not names or unknown:
        raise ValueError(f"--descriptor must be a comma-separated list of {', '.join(DESCRIPTORS)}, got {text!r}")
    return list(dict.fromkeys(names))


def add_run_options(parser):
    """``--scheduler``, ``--workers`` and ``--threads``: where the tasks run."""
    parser.add_argument("--scheduler", metavar="ADDRESS", default=None,
                        help="run on the Dask cluster of this scheduler (tcp://HOST:PORT) instead of locally")
    parser.add_argument("--workers", type=positive_int, default=None, metavar="N",
                        help="processes of the local pool (default: the number of cores)")
    parser.add_argument("--threads", type=positive_int, default=None, metavar="N",
                        help="solver threads per task (default: cores / workers locally; the worker's cores on Dask)")


def resolve_run_options(args):
    """``(workers, threads)`` of the local pool, after checking ``--workers`` against ``--scheduler``."""
    from lbdviewer.audit.runner import default_workers

    if args.scheduler is not None and args.workers is not None:
        raise ValueError("--workers sizes the local pool; with --scheduler the cluster's workers run the tasks")
    workers = args.workers or default_workers()
    threads = args.threads
    if threads is None and args.scheduler is None:
        threads = max(1, default_workers() // workers)
    return workers, threads


def run_tasks(tasks, args, *, kind, desc, describe, workers):
    """Run the tasks not yet in ``args.output`` (the audit runner), one line per row above a progress bar.

    Parameters
    ----------
    tasks : list
    args : argparse.Namespace
        ``output``, ``scheduler``, ``quiet``.
    kind : lbdviewer.audit.results_log.TaskKind
    desc : str
        The bar's label.
    describe : callable
        ``row -> str``: what a finished row says.
    workers : int
        Processes of the local pool.

    Returns
    -------
    (int, int, int)
        Rows added, of them errors, and tasks already done before.
    """
    from lbdviewer.audit.results_log import ResultsLog
    from lbdviewer.io.tables import printable
    from lbdviewer.audit.runner import iter_audit

    with ResultsLog(args.output, kind=kind) as log:  # one open, one lock: counted and run as one
        pending = sum(task.key not in log.done for task in tasks)
        damaged = log.damaged
        if damaged:  # skipped: their tasks run again
            lines = ", ".join(f"line {line}: {reason}" for line, reason in damaged[:5])
            print(f"{printable(log.path)}: {len(damaged)} damaged rows skipped, their tasks run again "
                  f"({printable(lines)}{', ...' if len(damaged) > 5 else ''})", file=sys.stderr)
        where = args.scheduler or f"{workers} local processes"
        if not args.quiet:
            print(f"{args.output}: {pending} of {len(tasks)} {desc} tasks to run on {where}")
        done = failed = 0
        with progress_bar(pending, desc=desc, unit="task", quiet=args.quiet) as bar:
            for row in iter_audit(tasks, args.output, workers=workers, scheduler=args.scheduler, log=log):
                done += 1
                failed += row["status"] != "ok"
                bar.update(1)
                if not args.quiet:  # above the bar, which stays at the bottom of a terminal
                    what = describe(row) if row["status"] == "ok" else row["status"]
                    bar.write(f"[{done}/{pending}] {printable(what)} ({row['seconds'] or 0:.1f} s, "
                              f"{row['worker']})", file=sys.stdout)
    return done, failed, len(tasks) - pending
