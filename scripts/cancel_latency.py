"""How long Esc can wait during a feature file's inversion: the gaps between the core's reports.

The app stops a job between two items of its generator (``gui/workers.py``:
the gate is checked before each ``next``), so the longest gap between two
reports of :func:`lbdviewer.features.invert.iter_invert_features` is the longest
the worker can run on after Esc. For each descriptor and keypoint count the
feature file is written by the real library (astronaut, resized to
``--side``), inverted once briefly (calibration and compiled kernels
loaded), then inverted with ``--iterations``; the script prints the set-up
(until the first iteration) and the gaps of the set-up and of the solve
(median, 95th percentile, maximum). Speeds drift on a shared machine:
compare two trees by running this script on each in turn, more than once.

Usage: ``python scripts/cancel_latency.py [--descriptors orb opencv-freak] [--keypoints 5000]
[--side 1024] [--iterations 200]``
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def report_gaps(features, iterations):
    """Seconds before each report and whether the solve had started: ``(gaps, solving)``."""
    from lbdviewer.features.invert import iter_invert_features

    gaps, solving = [], []
    last = time.perf_counter()
    for progress in iter_invert_features(features, iterations=iterations):
        now = time.perf_counter()
        gaps.append(now - last)
        solving.append(bool(progress.done) and progress.result is None)
        last = now
    return np.array(gaps), np.array(solving)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--descriptors", nargs="+", default=["orb", "opencv-freak"])
    parser.add_argument("--keypoints", nargs="+", type=int, default=[5000])
    parser.add_argument("--side", type=int, default=1024, help="image side in pixels (astronaut, resized)")
    parser.add_argument("--iterations", type=int, default=200, help="the app's default budget")
    args = parser.parse_args()

    import cv2
    from skimage import data

    from lbdviewer.features.extract import extract_features
    from lbdviewer.features.invert import invert_features

    image = cv2.resize(data.astronaut()[..., 1], (args.side, args.side), interpolation=cv2.INTER_CUBIC) / 255.0
    print(f"{'descriptor':14s} {'kp':>6s} {'set-up s':>9s} {'set-up max gap':>15s} "
          f"{'solve gap median':>17s} {'p95':>6s} {'max':>6s} {'total s':>8s}")
    for descriptor in args.descriptors:
        for n in args.keypoints:
            features = extract_features(image, descriptor, n_keypoints=n)
            invert_features(features, iterations=2)  # calibration, kernels
            gaps, solving = report_gaps(features, args.iterations)
            first = int(np.argmax(solving)) if solving.any() else len(gaps)
            setup, solve = gaps[:first + 1], gaps[first + 1:] if solving.any() else gaps[:0]
            print(f"{descriptor:14s} {len(features.keypoints):6d} {setup.sum():9.2f} {setup.max():15.3f} "
                  f"{np.median(solve) if solve.size else 0:17.3f} "
                  f"{np.percentile(solve, 95) if solve.size else 0:6.3f} {solve.max() if solve.size else 0:6.3f} "
                  f"{gaps.sum():8.2f}")


if __name__ == "__main__":
    main()
