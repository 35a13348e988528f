"""Inversion of feature files against the grid solve, in one process: seconds, ratios and peak memory.

The reference is the joint grid solve of the same image (BRIEF, 32x32
patches, offset 8, defaults: :func:`lbdviewer.reconstruction.image.reconstruct_image`). Each
feature file is written first by the real library (``lbdviewer extract``:
the library's detector, ``--keypoints`` of them), then inverted with
:func:`lbdviewer.features.invert.invert_features` (joint, defaults). The machine's
speed drifts (by 30 % and far more when it is shared), so everything runs in
one process, after a warm-up round, as ``grid, row 1, grid, row 2, ..., grid``,
``--rounds`` times: each inversion is divided by the mean of the grid solves
just before and just after it, and the median of these ratios is reported. Peak
memory (maximum resident set) is measured separately, one fresh subprocess
per row (``--row``): its ``VmHWM`` at the end (``/proc/self/status``; a new
program's own peak, whereas ``ru_maxrss`` keeps the peak of the process it
was forked from).

``--rev REV`` adds, after each row, the same feature file inverted by
``lbdviewer`` as of the git revision ``REV`` (``NAME@REV``, exported as
``scripts/bench_joint_ab.py`` does) in the same rounds: its ratio to the
grid, the working tree's time over REV's (median of the rounds) and how far
apart the two images are (largest and mean absolute difference over the
covered pixels). The solves run 200 L-BFGS iterations, which carry a
difference of float rounding in the objective's gradient (1e-7 relative)
to about 1e-2 in a few pixels: the yardstick is REV against itself, its
solve run once more on one thread (the solver then sums its dot products
in one range instead of two), and the correlation and the bits explained
are the figures that must agree.

Usage: ``python scripts/bench_invert.py [--image astronaut] [--keypoints 500 5000]
[--descriptors orb] [--rounds 3] [--rev REV] [--json OUT.json]``
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


def grid_solve(image):
    import lbdviewer as lbd

    pattern = lbd.patterns.make_pattern("brief")
    sites = lbd.reconstruction.grid_sites(image.shape, patch_size=32, offset=8)
    descriptors = lbd.reconstruction.describe_sites(image, sites, pattern)
    started = time.perf_counter()
    lbd.reconstruction.reconstruct_image(descriptors, sites, pattern, shape=image.shape)
    return time.perf_counter() - started


def feature_library(rev=None):
    """``(load_features, invert_features)`` of the working tree, or of ``lbdviewer`` as of the git revision ``rev``."""
    if rev is None:
        from lbdviewer.features.files import load_features
        from lbdviewer.features.invert import invert_features

        return load_features, invert_features
    import importlib

    from bench_joint_ab import RENAMED, load_revision

    load_revision(rev)
    return (importlib.import_module(f"{RENAMED}.features.files").load_features,
            importlib.import_module(f"{RENAMED}.features.invert").invert_features)


def invert(path, rev=None):
    load_features, invert_features = feature_library(rev)
    started = time.perf_counter()
    result = invert_features(load_features(path, max_keypoints=10**6))  # 5000 asked: above the default limit
    return time.perf_counter() - started, result


def split_row(row):
    """``(file name, revision or None)`` of a row name ``NAME`` or ``NAME@REV``."""
    name, _, rev = row.partition("@")
    return name, rev or None


def run_row(row, image_name, folder):
    """One row, alone in this process; prints this program's peak resident memory in kB."""
    from lbdviewer.io.samples import sample_image

    if row == "grid":
        grid_solve(sample_image(image_name))
    else:
        name, rev = split_row(row)
        invert(Path(folder) / f"{name}.npz", rev)
    status = Path("/proc/self/status")
    if status.exists():
        peak = next(int(line.split()[1]) for line in status.read_text().splitlines() if line.startswith("VmHWM"))
    else:  # not Linux: the rusage figure
        import resource

        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(f"PEAK_KB {peak}")


def peak_mb(row, args, folder):
    """Peak resident memory (MB) of a fresh process running ``row`` alone."""
    command = [sys.executable, __file__, "--row", row, "--image", args.image, "--folder", folder]
    output = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    return int(output.split("PEAK_KB")[-1]) / 1024.0


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--image", default="astronaut")
    parser.add_argument("--keypoints", type=int, nargs="+", default=[500, 5000])
    parser.add_argument("--descriptors", nargs="+", default=["orb"])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--rev", help="also invert each file with lbdviewer as of this git revision")
    parser.add_argument("--json", metavar="OUT.json")
    parser.add_argument("--row", help=argparse.SUPPRESS)
    parser.add_argument("--folder", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.row:
        run_row(args.row, args.image, args.folder)
        return 0

    from lbdviewer.features.extract import extract_features
    from lbdviewer.features.files import save_features
    from lbdviewer._runtime.versions import library_versions
    from lbdviewer.io.samples import sample_image
    from lbdviewer.io.strict_json import save_json
    from lbdviewer.evaluation.metrics import image_metrics

    image = sample_image(args.image)
    with tempfile.TemporaryDirectory() as folder:
        rows = {}
        for descriptor in args.descriptors:
            for count in args.keypoints:
                features = extract_features(image, descriptor, n_keypoints=count)
                name = f"{descriptor}-{count}"
                save_features(Path(folder) / f"{name}.npz", features)
                rows[name] = len(features.keypoints)
        runs = [f"{name}@{args.rev}" if rev else name for name in rows for rev in ([None, args.rev] if args.rev
                                                                                   else [None])]
        seconds = {name: [] for name in ["grid", *runs]}
        ratios = {name: [] for name in ["grid", *runs]}
        quality, images = {}, {}
        for round_index in range(args.rounds + 1):  # round 0 compiles and warms up
            grids = [grid_solve(image)]
            measured = {}
            for run in runs:
                name, rev = split_row(run)
                measured[run], result = invert(Path(folder) / f"{name}.npz", rev)
                grids.append(grid_solve(image))
                metrics = image_metrics(image, result.image, mask=result.covered)
                quality[run] = (metrics["correlation"], float(result.covered.mean()), result.solver_bit_consistency)
                images[run] = (result.image, result.covered)
                if round_index:
                    ratios[run].append(measured[run] / (0.5 * (grids[-2] + grids[-1])))
                    seconds[run].append(measured[run])
            if round_index:
                seconds["grid"] += grids
                ratios["grid"].append(1.0)
                print(f"round {round_index}: grid " + " / ".join(f"{g:.2f}" for g in grids) + " s, "
                      + ", ".join(f"{k} {v:.2f} s" for k, v in measured.items()), flush=True)
        one_thread = {}
        if args.rev:
            from lbdviewer._runtime.parallel import numba_threads

            with numba_threads(1):
                for name in rows:
                    one_thread[name] = invert(Path(folder) / f"{name}.npz", args.rev)[1]
        peaks = {name: peak_mb(name, args, folder) for name in seconds}
    report = []
    for name, values in seconds.items():
        row = {"row": name, "keypoints": rows.get(split_row(name)[0]), "seconds_median": statistics.median(values),
               "seconds": values, "ratio_to_grid_median": statistics.median(ratios[name]),
               "ratios": ratios[name], "peak_mb": peaks[name]}
        if name in quality:
            row.update(dict(zip(("correlation", "covered", "bit_consistency"), quality[name])))
        if args.rev and name in rows:
            other = f"{name}@{args.rev}"
            (mine, covered), (theirs, covered_then) = images[name], images[other]
            difference = np.abs(mine - theirs)[covered & covered_then]
            itself = np.abs(one_thread[name].image - theirs)[covered_then]
            row.update({"vs_rev": other, "time_to_rev_median": statistics.median(
                            [a / b for a, b in zip(seconds[name], seconds[other])]),
                        "covered_equal": bool(np.array_equal(covered, covered_then)),
                        "max_difference_to_rev": float(difference.max()) if difference.size else 0.0,
                        "mean_difference_to_rev": float(difference.mean()) if difference.size else 0.0,
                        "rev_one_thread_max_difference": float(itself.max()) if itself.size else 0.0,
                        "rev_one_thread_mean_difference": float(itself.mean()) if itself.size else 0.0})
        report.append(row)
    print(f"\n{args.image}, grid = BRIEF offset 8 joint; ratio = row / mean of the grid solves around it, "
          f"median of {args.rounds} rounds")
    print("| row | keypoints | seconds | ratio to grid | peak memory | correlation | covered | bits |")
    print("|---|---|---|---|---|---|---|---|")
    for row in report:
        extra = (f"{row['correlation']:.3f} | {row['covered']:.2f} | {row['bit_consistency']:.3f}"
                 if "correlation" in row else "- | - | -")
        print(f"| {row['row']} | {row['keypoints'] or '-'} | {row['seconds_median']:.2f} | "
              f"{row['ratio_to_grid_median']:.2f} | {row['peak_mb']:.0f} MB | {extra} |")
    for row in report:
        if "vs_rev" in row:
            print(f"{row['row']} / {row['vs_rev']}: time {row['time_to_rev_median']:.2f}x (median of the rounds), "
                  f"image difference max {row['max_difference_to_rev']:.2e}, mean "
                  f"{row['mean_difference_to_rev']:.2e}, same covered pixels: {row['covered_equal']}; "
                  f"{row['vs_rev']} on one thread against itself: max {row['rev_one_thread_max_difference']:.2e}, "
                  f"mean {row['rev_one_thread_mean_difference']:.2e}")
    if args.json:
        save_json(args.json, {"image": args.image, "rounds": args.rounds, "rev": args.rev, "rows": report,
                               "versions": library_versions()})
    return 0


if __name__ == "__main__":
    sys.exit(main())
