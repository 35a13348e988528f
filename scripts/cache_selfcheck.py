"""Damage real calibration cache entries and check that verify-model detects, recomputes and is exact again.

    .venv/bin/python scripts/cache_selfcheck.py

In a fresh temporary cache: calibrate ORB and OpenCV BRIEF (``verify-model``),
then truncate the BRIEF entry and permute the ORB entry's pairs (with a valid
checksum, so only the probe can tell), run ``verify-model`` again and print
its warnings and agreement. Exact agreement must be 100 % again and the
entries must be rewritten.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent.parent
IMAGE = HERE / "resources" / "camera.png"


def verify(cache):
    done = subprocess.run([sys.executable, "-m", "lbdviewer", "verify-model", str(IMAGE), "--keypoints", "100",
                           "--json", "--quiet", "--descriptor", "all"], cwd=HERE, capture_output=True, text=True,
                          env={**os.environ, "LBDVIEWER_CACHE_DIR": str(cache)}, check=True)
    rows = {row["descriptor"]: row["exact"] for row in json.loads(done.stdout)["descriptors"]}
    return rows, [line for line in done.stderr.splitlines() if "warning" in line]


def main():
    from lbdviewer.libraries.calibration.cache import CHECKSUM_KEY, arrays_checksum
    from lbdviewer.features.npz import save_npz

    with tempfile.TemporaryDirectory() as cache:
        cache = Path(cache)
        rows, warnings = verify(cache)
        print("fresh cache:", rows, warnings)
        brief = next(cache.glob("opencv-brief-*.npz"))
        brief.write_bytes(brief.read_bytes()[: brief.stat().st_size // 2])
        orb = next(cache.glob("orb-*.npz"))
        with np.load(orb) as data:
            entry = {name: data[name] for name in data.files if name != CHECKSUM_KEY}
        entry["pairs"] = entry["pairs"][np.random.default_rng(0).permutation(len(entry["pairs"]))]
        entry[CHECKSUM_KEY] = arrays_checksum(entry)
        save_npz(orb, entry)
        rows, warnings = verify(cache)
        print("after truncating BRIEF and permuting ORB:", rows)
        for line in warnings:
            print("  ", line)
        ok = len(warnings) == 2 and all(value == 1.0 for value in rows.values() if value is not None)
        rows, warnings = verify(cache)
        print("third run:", rows, warnings)
        ok = ok and not warnings
    print("OK" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
