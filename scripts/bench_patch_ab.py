"""The patch solvers' fused paths against another git revision, interleaved in one process.

This machine's speed drifts by up to 30 % over minutes, so runs one after the
other can disagree by more than the change being measured. As
``scripts/bench_joint_ab.py`` does, this script loads ``lbdviewer`` as of
``REV`` (renamed ``lbdviewer_rev``) beside the working tree's, builds the same
problems for both (``--patches`` random 32x32 patches of ``camera``, M = 512;
BIHT from bits with its paper defaults, primal-dual from real descriptors with
``--pd-iterations``), compiles and warms both, then runs whole solves in the
order A B B A, ``--rounds`` times, so drift weighs on both alike. It prints
each solver's seconds a solve, the ratio ``working tree / REV`` (the figure
to quote; below 1 is faster) and whether both gave bit-for-bit the same estimates.

Usage: ``python scripts/bench_patch_ab.py REV [--patches 256] [--rounds 4] [--pd-iterations 300]
[--methods biht primal-dual]``
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from bench_joint_ab import RENAMED, export_revision  # noqa: E402


def camera_patches(count, *, rng=0, size=32):
    """``count`` random ``size x size`` patches of the camera sample, float in [0, 1]."""
    from lbdviewer.io.samples import sample_image

    image = sample_image("camera")
    rows, cols = np.random.default_rng(rng).integers(0, image.shape[0] - size, (2, count))
    return np.stack([image[r:r + size, c:c + size] for r, c in zip(rows, cols)])


def make_solve(package, patches, family, method, pd_iterations):
    """A function running one fused solve of ``package`` and returning its final estimates."""
    patterns = importlib.import_module(f"{package}.patterns")
    operators = importlib.import_module(f"{package}.operators")
    solvers = importlib.import_module(f"{package}.solvers")
    operator = operators.DescriptorOperator(patterns.make_pattern(family, patch_size=32, m=512))
    if method == "biht":
        bits = operator.describe(patches)
        return lambda: solvers.BIHT(operator, bits, backend="fused").run().x
    values = operator.describe(patches, binary=False)
    return lambda: solvers.PrimalDualL1(operator, values, iterations=pd_iterations, backend="fused").run().x


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("rev", help="git revision to compare the working tree with")
    parser.add_argument("--patches", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=4, help="A B B A rounds (default 4)")
    parser.add_argument("--pd-iterations", type=int, default=300, help="primal-dual iterations (default 300)")
    parser.add_argument("--methods", nargs="+", default=["biht", "primal-dual"], choices=("biht", "primal-dual"))
    args = parser.parse_args(argv)
    patches = camera_patches(args.patches)
    sys.path.insert(0, str(export_revision(args.rev)))
    print(f"{args.patches} patches 32x32, M = 512, fused path; working tree / {args.rev}, A B B A x {args.rounds}")
    for family in ("brief", "freak"):
        for method in args.methods:
            old = make_solve(RENAMED, patches, family, method, args.pd_iterations)
            new = make_solve("lbdviewer", patches, family, method, args.pd_iterations)
            identical = np.array_equal(old(), new())  # also compiles and warms both
            seconds = {"old": 0.0, "new": 0.0}
            for _ in range(args.rounds):
                for name in ("old", "new", "new", "old"):
                    started = time.perf_counter()
                    (old if name == "old" else new)()
                    seconds[name] += time.perf_counter() - started
            runs = 2 * args.rounds
            print(f"{family:<6} {method:<12} {args.rev}: {seconds['old'] / runs:.3f} s  "
                  f"working tree: {seconds['new'] / runs:.3f} s  ratio {seconds['new'] / seconds['old']:.3f}  "
                  f"bit-for-bit identical: {identical}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
