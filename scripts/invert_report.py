"""Extract real library features from photos, invert them, and measure the result.

Usage: python scripts/invert_report.py [--out DIR] [--images NAME ...] [--cases CASE ...]
                                        [--modes MODE ...] [--iterations N]

A case is ``DESCRIPTOR:KEYPOINTS`` (default: orb:500 orb:5000 opencv-freak:500
opencv-brief:500 skimage-brief:500); images are files under ``resources/``
(default astronaut.png camera.png). For every image, case and mode the script
writes ``IMAGE-DESCRIPTOR-K-MODE.png`` (the estimate, shown by the display rule:
gain/offset fitted to the original over the covered pixels), a side-by-side ``IMAGE-DESCRIPTOR-K.png`` (original |
patches | joint) and one JSON line per run on stdout and in ``report.jsonl``:
correlation with the original over the covered pixels (gain/offset
invariant, :func:`lbdviewer.evaluation.metrics.correlation`), covered fraction and
seconds (extraction and inversion).
"""

import argparse
import time
from pathlib import Path

import numpy as np

from lbdviewer.features.extract import extract_features
from lbdviewer.evaluation.display import display_stretch
from lbdviewer.features.invert import MODES, invert_features
from lbdviewer.io.images import load_image, save_png
from lbdviewer.io.strict_json import dumps_strict
from lbdviewer.evaluation.metrics import correlation

RESOURCES = Path(__file__).resolve().parent.parent / "resources"
CASES = ("orb:500", "orb:5000", "opencv-freak:500", "opencv-brief:500", "skimage-brief:500")


def run_case(image, name, descriptor, n_keypoints, modes, iterations, out):
    started = time.perf_counter()
    features = extract_features(image, descriptor, n_keypoints=n_keypoints)
    extract_seconds = time.perf_counter() - started
    panels = [image]
    for mode in modes:
        result = invert_features(features, mode=mode, iterations=iterations)
        shown = display_stretch(result.image, mask=result.covered, reference=image).image
        save_png(out / f"{name}-{descriptor}-{n_keypoints}-{mode}.png", shown)
        panels.append(shown)
        row = {"image": name, "descriptor": descriptor, "detected": n_keypoints,
               "keypoints": len(features.keypoints), "mode": mode, "iterations": result.iterations,
               "correlation": round(correlation(image, result.image, mask=result.covered), 4),
               "covered_fraction": round(float(result.covered.mean()), 4),
               "bit_consistency": None if result.solver_bit_consistency is None
               else round(result.solver_bit_consistency, 4),
               "extract_seconds": round(extract_seconds, 2), "invert_seconds": round(result.seconds, 2)}
        print(dumps_strict(row, indent=None), flush=True)
        with open(out / "report.jsonl", "a") as handle:
            handle.write(dumps_strict(row, indent=None) + "\n")
    gap = np.ones((image.shape[0], 4))
    save_png(out / f"{name}-{descriptor}-{n_keypoints}.png",
             np.hstack([part for panel in panels for part in (panel, gap)][:-1]))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("/tmp/invert_report"))
    parser.add_argument("--images", nargs="+", default=["astronaut.png", "camera.png"])
    parser.add_argument("--cases", nargs="+", default=list(CASES))
    parser.add_argument("--modes", nargs="+", choices=MODES, default=["patches", "joint"])
    parser.add_argument("--iterations", type=int, default=None, help="default: each mode's own")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    for filename in args.images:
        image = load_image(RESOURCES / filename)
        for case in args.cases:
            descriptor, n_keypoints = case.split(":")
            run_case(image, Path(filename).stem, descriptor, int(n_keypoints), args.modes, args.iterations,
                     args.out)


if __name__ == "__main__":
    main()
