"""Inversion of feature files against the grid solve, in one process: seconds, ratios and peak memory.

The reference is the joint grid solve of the same image (BRIEF, 32x32
patches, offset 8, defaults: :func:`lbdviewer.reconstruction.image.reconstruct_image`). Each
feature file is written first by the real library (``lbdviewer extract``:
ORB's detector, ``--keypoints`` of them), then inverted with
:func:`lbdviewer.features.invert.invert_features` (joint, defaults). The machine's
speed drifts (by 30 % and far more when it is shared), so everything runs in
one process, after a warm-up round, as ``grid, row 1, grid, row 2, ..., grid``,
``--rounds`` times: each inversion is divided by the mean of the grid solves
just before and just after it, and the median of these ratios is reported. Peak
memory (maximum resident set) is measured separately, one fresh subprocess
per row (``--row``): its ``VmHWM`` at the end (``/proc/self/status``; a new
program's own peak, whereas ``ru_maxrss`` keeps the peak of the process it
was forked from).

Usage: ``python scripts/bench_invert.py [--image astronaut] [--keypoints 500 5000]
[--descriptors orb] [--rounds 3] [--json OUT.json]``
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def grid_solve(image):
    import lbdviewer as lbd

    pattern = lbd.patterns.make_pattern("brief")
    sites = lbd.reconstruction.grid_sites(image.shape, patch_size=32, offset=8)
    descriptors = lbd.reconstruction.describe_sites(image, sites, pattern)
    started = time.perf_counter()
    lbd.reconstruction.reconstruct_image(descriptors, sites, pattern, shape=image.shape)
    return time.perf_counter() - started


def invert(path):
    from lbdviewer.features.files import load_features
    from lbdviewer.features.invert import invert_features

    started = time.perf_counter()
    result = invert_features(load_features(path, max_keypoints=10**6))  # 5000 asked: above the default limit
    return time.perf_counter() - started, result


def run_row(row, image_name, folder):
    """One row, alone in this process; prints this program's peak resident memory in kB."""
    from lbdviewer.io.samples import sample_image

    if row == "grid":
        grid_solve(sample_image(image_name))
    else:
        invert(Path(folder) / f"{row}.npz")
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
        seconds = {name: [] for name in ["grid", *rows]}
        ratios = {name: [] for name in ["grid", *rows]}
        quality = {}
        for round_index in range(args.rounds + 1):  # round 0 compiles and warms up
            grids = [grid_solve(image)]
            measured = {}
            for name in rows:
                measured[name], result = invert(Path(folder) / f"{name}.npz")
                grids.append(grid_solve(image))
                metrics = image_metrics(image, result.image, mask=result.covered)
                quality[name] = (metrics["correlation"], float(result.covered.mean()), result.solver_bit_consistency)
                if round_index:
                    ratios[name].append(measured[name] / (0.5 * (grids[-2] + grids[-1])))
                    seconds[name].append(measured[name])
            if round_index:
                seconds["grid"] += grids
                ratios["grid"].append(1.0)
                print(f"round {round_index}: grid " + " / ".join(f"{g:.2f}" for g in grids) + " s, "
                      + ", ".join(f"{k} {v:.2f} s" for k, v in measured.items()), flush=True)
        peaks = {name: peak_mb(name, args, folder) for name in seconds}
    report = []
    for name, values in seconds.items():
        row = {"row": name, "keypoints": rows.get(name), "seconds_median": statistics.median(values),
               "seconds": values, "ratio_to_grid_median": statistics.median(ratios[name]),
               "ratios": ratios[name], "peak_mb": peaks[name]}
        if name in quality:
            row.update(dict(zip(("correlation", "covered", "bit_consistency"), quality[name])))
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
    if args.json:
        save_json(args.json, {"image": args.image, "rounds": args.rounds, "rows": report,
                               "versions": library_versions()})
    return 0


if __name__ == "__main__":
    sys.exit(main())
