"""Time the BEBLID/TEBLID calibration and measure its bit agreement on photos the tests do not use.

Usage: python scripts/blid_calibration.py [--fresh] [--keypoints 300] [DESCRIPTOR-SIZE ...]
  DESCRIPTOR-SIZE: beblid-256, beblid-512, teblid-256, teblid-512 (default: all four).
  --fresh: calibrate in a new temporary cache folder (the time reported is the calibration's).
Images: skimage.data coffee, chelsea, rocket (gray); keypoints from ORB's detector.
Prints one strict-JSON row per descriptor, size and image, with the bits each model gets wrong.
"""

import argparse
import os
import tempfile
import time

from skimage import color, data

from lbdviewer.io.strict_json import dumps_strict
from lbdviewer.libraries.registry import get_model

IMAGES = ("coffee", "chelsea", "rocket")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*", default=["beblid-256", "beblid-512", "teblid-256", "teblid-512"])
    parser.add_argument("--fresh", action="store_true")
    parser.add_argument("--keypoints", type=int, default=300)
    args = parser.parse_args(argv)
    if args.fresh:
        os.environ["LBDVIEWER_CACHE_DIR"] = tempfile.mkdtemp(prefix="lbdviewer-blid-")
    images = {name: color.rgb2gray(getattr(data, name)()) for name in IMAGES}
    rows = []
    for spec in args.models:
        descriptor, n_bits = spec.rsplit("-", 1)
        model = get_model(descriptor, n_bits=int(n_bits))
        start = time.perf_counter()
        model.table  # calibrates, or reads the cache
        seconds = time.perf_counter() - start
        for name, image in images.items():
            result = model.run_library(image, model.detect(image, n_keypoints=args.keypoints))
            wrong = model.model_bits(image, result.keypoints) != result.bits
            row = {"descriptor": descriptor, "n_bits": int(n_bits), "image": name, "keypoints": len(result.keypoints),
                   "exact": float(1.0 - wrong.mean()), "table_seconds": round(seconds, 1),
                   "wrong_bits": {int(k): int(c) for k, c in enumerate(wrong.sum(axis=0)) if c}}
            rows.append(row)
            print(dumps_strict(row, indent=None), flush=True)
    return rows


if __name__ == "__main__":
    main()
