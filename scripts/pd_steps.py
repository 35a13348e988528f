"""Print how the primal-dual step ratio tau / sigma changes convergence at the default lambda.

    .venv/bin/python scripts/pd_steps.py                  # default_step_ratio's table at lambda 10 (~6 min on 2 cores)
    .venv/bin/python scripts/pd_steps.py --images coffee --ratios 1 0.001
    .venv/bin/python scripts/pd_steps.py --lam 0.1 --images astronaut camera --ratios 1 0.1 0.01 0.001

Chambolle-Pock needs only :math:`\\tau\\sigma\\Gamma^2 \\le 1`; the split between
the primal step :math:`\\tau` and the dual step :math:`\\sigma` is free. For
every image, family (BRIEF, FREAK; 32x32, M = 512), kind (real values
``b = Lp``, bits ``b = sign(Lp)``) and ratio :math:`\\rho = \\tau/\\sigma`, the
script prints, after ``--short`` and ``--long`` iterations:

* patchwise, over ``--patches`` FAST patches: the median *excess* of the
  objective over the lowest any run reached (the ratios' runs and two of
  ``--reference`` iterations, with the smallest and the largest ratio), relative, and the median per-patch correlation
  with the true patch;
* joint (``--joint-crop``, default 128; real values only, grid offset 8): the
  same excess and the correlation of the whole-crop solve.

Images: the held-out :mod:`skimage.data` photos coffee, chelsea, rocket and
the shipped camera. Lambda is :data:`lbdviewer.solvers.patch.primal_dual.DEFAULT_LAM` unless ``--lam`` says.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from lam_sweep import patch_problems, patch_scores, print_header

RATIOS = (1.0, 1e-2, 1e-3, 1e-4)
IMAGES = ("coffee", "chelsea", "rocket", "camera")


def runs(operator, data, ratios, lengths, reference, **options):
    """Final objectives and images: ``{(ratio, iterations): state}`` and the lowest objective per row."""
    from lbdviewer.solvers.patch.primal_dual import PrimalDualL1

    states = {(ratio, its): PrimalDualL1(operator, data, iterations=its, step_ratio=ratio, **options).run()
              for ratio in ratios for its in lengths}
    best = np.min([PrimalDualL1(operator, data, iterations=reference, step_ratio=ratio, **options).run().objective
                   for ratio in (min(ratios), max(ratios))], axis=0)
    for state in states.values():
        best = np.minimum(best, state.objective)
    return states, best


def excess(state, best):
    """Median relative excess of the objective over ``best``."""
    return float(np.median((state.objective - best) / np.maximum(best, 1e-12)))


def joint_problem(image, pattern, crop):
    """The central crop, its joint operator on the offset-8 grid, and its real descriptors (one flat row)."""
    from lbdviewer.operators.joint.operator import JointOperator
    from lbdviewer.reconstruction.sites import grid_sites
    from lbdviewer.solvers.image.joint import FlatRange

    crop = min(crop, *image.shape)
    top, left = (image.shape[0] - crop) // 2, (image.shape[1] - crop) // 2
    part = image[top:top + crop, left:left + crop]
    operator = JointOperator(part.shape, grid_sites(part.shape, patch_size=32, offset=8), pattern)
    return part, FlatRange(operator), operator.forward(part).reshape(1, -1).astype(np.float32)


def main():
    from lbdviewer.evaluation.metrics import correlation
    from lbdviewer.solvers.patch.primal_dual import DEFAULT_LAM

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--images", nargs="+", default=list(IMAGES))
    parser.add_argument("--families", nargs="+", default=["brief", "freak"], choices=("brief", "freak"))
    parser.add_argument("--ratios", nargs="+", type=float, default=list(RATIOS))
    parser.add_argument("--lam", type=float, default=None, help="data weight (default DEFAULT_LAM)")
    parser.add_argument("--patches", type=int, default=64, help="FAST patches per image (default 64)")
    parser.add_argument("--short", type=int, default=300)
    parser.add_argument("--long", type=int, default=1000)
    parser.add_argument("--reference", type=int, default=20000, help="iterations of the reference run")
    parser.add_argument("--joint-crop", type=int, default=128, help="0: no joint run")
    args = parser.parse_args()
    started, lengths = time.perf_counter(), (args.short, args.long)
    lam = DEFAULT_LAM if args.lam is None else args.lam
    print(f"lambda {lam:g}; cells: objective excess over the lowest reached / median correlation, after {args.short} and "
          f"{args.long} iterations\n")
    print_header([f"tau/sigma {r:g}" for r in args.ratios])
    for name, image, truth, family, pattern, operator in patch_problems(args.images, args.families, args.patches):
        for kind, data in [("real", operator.forward(truth)), ("bits", operator.describe(truth))]:
            states, best = runs(operator, data, args.ratios, lengths, args.reference, lam=lam)
            cells = [", ".join(f"{excess(states[r, n], best):.1%} / {patch_scores(truth, states[r, n].x)[0]:.3f}"
                               for n in lengths) for r in args.ratios]
            print(f"| {name} | {family.upper()} | {kind} | " + " | ".join(cells) + " |", flush=True)
        if args.joint_crop:
            part, flat, data = joint_problem(image, pattern, args.joint_crop)
            states, best = runs(flat, data, args.ratios, lengths, args.reference // 4, lam=lam,
                                constraint="box", backend="batched")
            cells = [", ".join(f"{excess(states[r, n], best):.1%} / {correlation(part, states[r, n].x[0]):.3f}"
                               for n in lengths) for r in args.ratios]
            print(f"| {name} | {family.upper()} | joint real | " + " | ".join(cells) + " |", flush=True)
    print(f"({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
