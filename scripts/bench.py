"""Benchmark the patch solvers: production path vs. the dense per-patch reference.

Real 32x32 patches of ``skimage.data.camera()``, M = 512, the defaults (BIHT
200 iterations with K = 40 %, primal-dual 1000 iterations with lambda =
``DEFAULT_LAM``, not the paper's 0.1 that leaves most patches constant),
for BRIEF (1024 tiny Gaussian fields) and FREAK (43 box fields); BIHT inverts
bits, primal-dual real-valued descriptors. Prints
patches/s of both paths, their ratio, the mean iterations a patch ran before
its early stop, the mean bit consistency of the result and its mean
correlation with the original patches.

Run: ``/work/venv/bin/python scripts/bench.py [--quick]``.
"""

from __future__ import annotations

import argparse
import os
import time

# One BLAS thread: the per-patch reference gains nothing from more, and idle
# BLAS threads spinning beside the solver threads distort both timings.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
from skimage import data  # noqa: E402

from lbdviewer.evaluation.metrics import correlation  # noqa: E402
from lbdviewer.operators.descriptor import DescriptorOperator  # noqa: E402
from lbdviewer.patterns.families import make_pattern
from lbdviewer.solvers.patch.primal_dual import PrimalDualL1
from lbdviewer.solvers.patch.biht import BIHT

PATCH = 32


def camera_patches(count, *, rng=0):
    """``count`` random 32x32 patches of the camera image, float in [0, 1]."""
    image = data.camera().astype(np.float64) / 255.0
    rows, cols = np.random.default_rng(rng).integers(0, image.shape[0] - PATCH, (2, count))
    return np.stack([image[r:r + PATCH, c:c + PATCH] for r, c in zip(rows, cols)])


def timed(solver_class, operator, descriptors, **options):
    start = time.perf_counter()
    state = solver_class(operator, descriptors, **options).run()
    return time.perf_counter() - start, state


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="few patches (about a minute)")
    parser.add_argument("--patches", type=int, default=None, help="patches for the fast path")
    args = parser.parse_args(argv)
    n_fast = args.patches or (256 if args.quick else 1024)
    n_reference = {"biht": 2 if args.quick else 8, "primal-dual": 1 if args.quick else 3}
    patches = camera_patches(n_fast)
    header = (f"{'descriptor':<10} {'method':<12} {'reference/s':>12} {'fast/s':>10} "
              f"{'ratio':>8} {'mean iters':>11} {'bit cons.':>10} {'corr':>6}")
    print(f"{n_fast} patches {PATCH}x{PATCH}, M=512, float32 fast path")
    print(header)
    print("-" * len(header))
    for family in ("brief", "freak"):
        operator = DescriptorOperator(make_pattern(family, patch_size=PATCH, m=512))
        inputs = {"biht": operator.describe(patches),
                  "primal-dual": operator.describe(patches, binary=False)}
        for method, solver_class in (("biht", BIHT), ("primal-dual", PrimalDualL1)):
            descriptors = inputs[method]
            timed(solver_class, operator, descriptors[:16], iterations=2)  # load kernels
            fast_time, state = timed(solver_class, operator, descriptors)
            n_ref = n_reference[method]
            ref_time, _ = timed(solver_class, operator, descriptors[:n_ref], backend="reference")
            consistency = ("-" if state.bit_consistency is None
                           else f"{state.bit_consistency.mean():.3f}")
            fast_rate, ref_rate = n_fast / fast_time, n_ref / ref_time
            similarity = np.mean([correlation(p, x) for p, x in zip(patches, state.x)])
            print(f"{family:<10} {method:<12} {ref_rate:>12.1f} {fast_rate:>10.1f} "
                  f"{fast_rate / ref_rate:>8.1f} {state.iterations_run.mean():>11.1f} "
                  f"{consistency:>10} {similarity:>6.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
