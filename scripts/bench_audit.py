"""Audit throughput: images per minute, local process pool against Dask, in one run.

Usage: ``python scripts/bench_audit.py [--images 8] [--side 256] [--rounds 2] [--descriptor orb] [--iterations N]
[--no-ocr]``

The inputs are ``--images`` crops of ``--side`` pixels from the shipped
samples (written to a temporary folder). Each engine audits all of them into
a fresh report folder with the library's default settings (500 keypoints,
joint inversion, default iterations, OCR when tesseract is installed) and one
solver thread per task:

- ``local x1``: the local process pool with one worker (the scaling baseline);
- ``local x2``: the local pool with two workers;
- ``dask x2``: a ``distributed.LocalCluster`` of two worker processes of one
  thread each (what ``dask scheduler`` and two ``dask worker --nthreads 1``
  on this machine give), the same tasks through ``Client.map``.

Before them, every task runs once in this process, one at a time, and its
CPU time is measured (``time.process_time``): the cost of an image whatever
else the machine is doing, hence what one free core would deliver.

The engines run in rounds, in the order above and then reversed (A B C,
C B A), so that the machine's drift weighs on each alike; each round audits
every image into a fresh report folder, and the times of the rounds add up.
The time runs from the first task submitted to the last row written, so it
includes starting the local pool's processes and each worker's first-call
costs (imports, loading numba's cached kernels) in every round; the Dask
cluster is started once, before the clock, so only its first round pays them. The machine's speed drifts (up to 30 %): compare the
engines of one run, not numbers of different runs.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

from lbdviewer.audit import collect_inputs, iter_audit, plan_tasks, run_task
from lbdviewer.io.images import save_png
from lbdviewer.io.samples import sample_image

ORIGINS = ((0, 0), (256, 256), (128, 0), (0, 256))


def make_inputs(folder, count, side):
    """``count`` crops of ``side`` pixels, cycling over the samples and a few origins."""
    names = ("astronaut", "camera", "book-titles", "shapes")
    for index in range(count):
        image = sample_image(names[index % len(names)])
        row, col = ORIGINS[(index // len(names)) % len(ORIGINS)]
        row, col = min(row, image.shape[0] - side), min(col, image.shape[1] - side)
        save_png(Path(folder) / f"{index:03d}-{names[index % len(names)]}.png",
                 image[max(row, 0):max(row, 0) + side, max(col, 0):max(col, 0) + side])
    return collect_inputs([folder])


def timed(tasks, report, **engine):
    started = time.perf_counter()
    rows = list(iter_audit(tasks, report, **engine))
    seconds = time.perf_counter() - started
    failed = [row for row in rows if row["status"] != "ok"]
    return seconds, rows, failed


def run_engines(tasks, folder, rounds, **options):
    """``{engine: [seconds, rows, failed rows]}`` of the three engines (see the module notes), ``rounds`` rounds.

    ``options`` go to :func:`lbdviewer.audit.runner.iter_audit` (``kind`` for other tasks than the audit's).
    """
    from distributed import Client, LocalCluster

    engines = {"local x1": {"workers": 1}, "local x2": {"workers": 2}, "dask x2": None}
    results = {name: [0.0, [], []] for name in engines}
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address=None) as cluster, Client(cluster) as client:
        engines["dask x2"] = {"scheduler": client}
        for round_ in range(rounds):  # A B C, then C B A: the machine's drift cancels
            order = list(engines) if round_ % 2 == 0 else list(reversed(engines))
            for name in order:
                seconds, rows, failed = timed(tasks, Path(folder) / f"{name}-{round_}", **engines[name], **options)
                results[name][0] += seconds
                results[name][1].extend(rows)
                results[name][2].extend(failed)
    return results


def print_engines(results, cpu, unit):
    """The table of :func:`run_engines`, the load, one free core's rate from the serial ``cpu`` seconds of each task."""
    print(f"{'engine':10} {'seconds':>8} {unit + '/min':>11} {'median task s':>14} {'errors':>7}")
    for name, (seconds, rows, failed) in results.items():
        median = sorted(row["seconds"] for row in rows)[len(rows) // 2]
        print(f"{name:10} {seconds:8.1f} {60 * len(rows) / seconds:11.1f} {median:14.1f} {len(failed):7d}")
    print("load average (1, 5, 15 min) at the end: " + ", ".join(f"{v:.1f}" for v in os.getloadavg()))
    cpu_median = sorted(cpu)[len(cpu) // 2]
    print(f"CPU seconds per task (serial, in-process, kernels loaded): median {cpu_median:.1f}, "
          f"total {sum(cpu):.1f}: one free core would do {60 * len(cpu) / sum(cpu):.1f} {unit}/min")
    base = results["local x1"][0]
    print(f"speed-up over one worker: local x2 {base / results['local x2'][0]:.2f}, "
          f"dask x2 {base / results['dask x2'][0]:.2f}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--images", type=int, default=8)
    parser.add_argument("--side", type=int, default=256)
    parser.add_argument("--descriptor", default="orb")
    parser.add_argument("--iterations", type=int, default=None, help="solver iterations (default: the mode's)")
    parser.add_argument("--no-ocr", action="store_true")
    parser.add_argument("--rounds", type=int, default=2, help="rounds of the three engines, order reversed "
                                                                   "every other round (default 2)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="lbdviewer-bench-audit-") as folder:
        folder = Path(folder)
        (folder / "inputs").mkdir()
        inputs = make_inputs(folder / "inputs", args.images, args.side)
        tasks = plan_tasks(inputs, [args.descriptor], iterations=args.iterations, ocr=not args.no_ocr, threads=1)
        run_task(tasks[0])  # loads the kernels: not counted
        cpu = []
        for task in tasks:  # one at a time in this process: CPU seconds an image costs, whatever the load
            started = time.process_time()
            row, _ = run_task(task)
            cpu.append(time.process_time() - started)
        results = run_engines(tasks, folder, args.rounds)
    print(f"{len(tasks)} images of {args.side}x{args.side}, {args.descriptor}, default settings "
          f"(iterations {args.iterations or 'default'}, OCR {'off' if args.no_ocr else 'on'}), 1 thread a task")
    print_engines(results, cpu, "images")
    return 0


if __name__ == "__main__":
    sys.exit(main())
