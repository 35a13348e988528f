"""Defend throughput: tasks per minute, local process pool against Dask, in one run.

Usage: ``python scripts/bench_defend.py [--images 4] [--side 256] [--defence rr:eps=2] [--rounds 2]
[--descriptor orb] [--iterations N] [--no-ocr]``

The inputs are ``--images`` crops of ``--side`` pixels from the shipped
samples (``scripts/bench_audit.py``'s :func:`make_inputs`); the tasks are
every image x (no defence and each ``--defence``) x attacker (aware, naive),
with the library's default settings (500 keypoints, default iterations, 4 + 4
synthetic pairs, OCR when tesseract is installed) and one solver thread per
task. The engines, timed as ``bench_audit.py`` times them (rounds A B C, then
C B A; from the first task submitted to the last row written):

- ``local x1``: the local process pool with one worker (the scaling baseline);
- ``local x2``: the local pool with two workers;
- ``dask x2``: ``distributed.LocalCluster(n_workers=2, threads_per_worker=1,
  dashboard_address=None)``, the same tasks through ``Client.map``.

Before them, every task runs once in this process and its CPU time is
measured: what one free core would deliver, whatever else the machine does.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_audit import make_inputs, print_engines, run_engines  # noqa: E402  (the audit bench's)

from lbdviewer.defences.tasks import DEFEND, plan_defend_tasks, run_defend_task  # noqa: E402
from lbdviewer.defences.transforms import parse_defences  # noqa: E402


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--images", type=int, default=4)
    parser.add_argument("--side", type=int, default=256)
    parser.add_argument("--descriptor", default="orb")
    parser.add_argument("--defence", action="append", default=None, help="as defend takes it (default rr:eps=2)")
    parser.add_argument("--iterations", type=int, default=None, help="solver iterations (default: the solver's)")
    parser.add_argument("--no-ocr", action="store_true")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args(argv)
    defences = [d for spec in (args.defence or ["rr:eps=2"]) for d in parse_defences(spec)]
    with tempfile.TemporaryDirectory(prefix="lbdviewer-bench-defend-") as folder:
        folder = Path(folder)
        (folder / "inputs").mkdir()
        inputs = make_inputs(folder / "inputs", args.images, args.side)
        tasks = plan_defend_tasks(inputs, [args.descriptor], defences, iterations=args.iterations,
                                  ocr=not args.no_ocr, threads=1)
        run_defend_task(tasks[0])  # loads the kernels: not counted
        cpu = []
        for task in tasks:
            started = time.process_time()
            run_defend_task(task)
            cpu.append(time.process_time() - started)
        results = run_engines(tasks, folder, args.rounds, kind=DEFEND)
    print(f"{len(tasks)} defend tasks ({args.images} images of {args.side}x{args.side}, {args.descriptor}, "
          f"{', '.join(d.label for d in defences)} and none, aware and naive), iterations "
          f"{args.iterations or 'default'}, OCR {'off' if args.no_ocr else 'on'}, 1 thread a task")
    print_engines(results, cpu, "tasks")
    return 0


if __name__ == "__main__":
    sys.exit(main())
