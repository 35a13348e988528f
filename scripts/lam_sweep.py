"""Print the primal-dual trade-off sweep: reconstruction quality against lambda.

    .venv/bin/python scripts/lam_sweep.py                       # the README's table (~10 min on 2 cores)
    .venv/bin/python scripts/lam_sweep.py --patches 32 --lams 0.1 1 10 --images camera

Alg. 1 solves :math:`\\min_{x \\in S} \\lambda \\|Lx - b\\|_1 + \\|Wx\\|_1`. With
unit-l1 fields and an orthonormal Haar the flat patch beats the true one on
their ray whenever :math:`\\lambda < \\|W(p - \\bar p)\\|_1 / \\|Lp\\|_1`, so the
scale of a good lambda is ours, not the paper's. For every image, family
(BRIEF, FREAK; 32x32, M = 512), kind (real values ``b = Lp``, bits
``b = sign(Lp)``) and lambda the script prints

* patchwise: the median per-patch correlation of the solved patch with the
  true one over up to ``--patches`` FAST patches (a constant patch counts as
  0), and the share of patches that come out constant (peak-to-peak < 1e-3);
* joint (``--joint-crop``, default 128): the correlation of the whole-image
  solve (``--mode joint --method primal-dual``) of the central crop over the
  covered pixels, its patches on the grid with offset 8 (``--joint-sites
  grid``, where every patch overlaps others) or at its FAST keypoints
  (``fast``, where some overlap none).

Images: the held-out :mod:`skimage.data` photos coffee, chelsea, rocket (grey)
and the shipped camera and astronaut. Iterations are the defaults (1000).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

LAMS = (0.1, 0.3, 1.0, 3.0, 10.0, 30.0)
IMAGES = ("coffee", "chelsea", "rocket", "camera", "astronaut")
FAMILIES = ("brief", "freak")
KINDS = ("real", "bits")


def load(name):
    """A grey [0, 1] image: shipped sample or :mod:`skimage.data` photo."""
    from lbdviewer.io.samples import sample_image, sample_images

    if name in sample_images():
        return sample_image(name)
    import skimage.color
    import skimage.data

    pixels = getattr(skimage.data, name)()
    grey = skimage.color.rgb2gray(pixels) if pixels.ndim == 3 else pixels / 255.0
    return np.clip(np.asarray(grey, dtype=np.float64), 0.0, 1.0)


def fast_patches(image, count, rng):
    """Up to ``count`` 32x32 patches at FAST keypoints, chosen at random."""
    from lbdviewer.reconstruction.sites import site_patches
    from lbdviewer.reconstruction.sites import fast_sites

    sites, _ = fast_sites(image, patch_size=32)
    if len(sites) > count:
        sites = sites[np.sort(rng.choice(len(sites), size=count, replace=False))]
    return site_patches(image, sites, 32)


def print_header(columns):
    """The markdown table's head: image, family, case and ``columns``."""
    print("| image | family | case | " + " | ".join(columns) + " |")
    print("|---|---|---|" + "---|" * len(columns), flush=True)


def patch_problems(images, families, count):
    """``(name, image, truth, family, pattern, operator)``: up to ``count`` FAST patches of every image, every family."""
    from lbdviewer.operators.descriptor import DescriptorOperator
    from lbdviewer.patterns.families import make_pattern

    for name in images:
        image = load(name)
        truth = fast_patches(image, count, np.random.default_rng(0))
        for family in families:
            pattern = make_pattern(family, patch_size=32, m=512)
            yield name, image, truth, family, pattern, DescriptorOperator(pattern)


def patch_scores(truth, solved):
    """(median per-patch correlation, share of constant patches)."""
    t = truth.reshape(len(truth), -1) - truth.reshape(len(truth), -1).mean(axis=1, keepdims=True)
    x = solved.reshape(len(solved), -1).astype(np.float64)
    constant = np.ptp(x, axis=1) < 1e-3
    x = x - x.mean(axis=1, keepdims=True)
    norms = np.sqrt((t * t).sum(axis=1) * (x * x).sum(axis=1))
    r = np.where(norms > 1e-24, (t * x).sum(axis=1) / np.maximum(norms, 1e-300), 0.0)
    return float(np.median(r)), float(constant.mean())


def joint_score(image, pattern, kind, lam, crop, site_kind):
    """Correlation of the joint primal-dual solve of the central ``crop`` x ``crop``."""
    from lbdviewer.evaluation.metrics import correlation
    from lbdviewer.reconstruction.image import describe_sites, reconstruct_image
    from lbdviewer.reconstruction.sites import fast_sites, grid_sites

    crop = min(crop, *image.shape)
    top, left = (image.shape[0] - crop) // 2, (image.shape[1] - crop) // 2
    part = image[top:top + crop, left:left + crop]
    if site_kind == "grid":
        sites = grid_sites(part.shape, patch_size=32, offset=8)
    else:
        sites, _ = fast_sites(part, patch_size=32)
    descriptors = describe_sites(part, sites, pattern, binary=kind == "bits")
    result = reconstruct_image(descriptors, sites, pattern, shape=part.shape, mode="joint",
                               method="primal-dual", lam=lam)
    return correlation(part, result.image, mask=result.covered)


def main():
    from lbdviewer.solvers.patch.primal_dual import PrimalDualL1

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--images", nargs="+", default=list(IMAGES))
    parser.add_argument("--families", nargs="+", default=list(FAMILIES), choices=FAMILIES)
    parser.add_argument("--kinds", nargs="+", default=list(KINDS), choices=KINDS)
    parser.add_argument("--lams", nargs="+", type=float, default=list(LAMS))
    parser.add_argument("--patches", type=int, default=128, help="FAST patches per image (default 128; 0: none)")
    parser.add_argument("--joint-crop", type=int, default=128,
                        help="side of the joint crop (at most the image's; 0: no joint run)")
    parser.add_argument("--joint-sites", choices=("grid", "fast"), default="grid", help="the joint run's sites")
    args = parser.parse_args()
    started = time.perf_counter()
    print(f"cells: patchwise median r / constant share; joint r ({args.joint_sites} sites)\n")
    print_header([f"lambda {lam:g}" for lam in args.lams])
    for name, image, truth, family, pattern, operator in patch_problems(args.images, args.families, args.patches):
        for kind in args.kinds:
            cells = []
            for lam in args.lams:
                cell = ""
                if args.patches:
                    data = operator.forward(truth) if kind == "real" else operator.describe(truth)
                    median, constant = patch_scores(truth, PrimalDualL1(operator, data, lam=lam).run().x)
                    cell = f"{median:.2f} / {constant:.0%}"
                if args.joint_crop:
                    joint = joint_score(image, pattern, kind, lam, args.joint_crop, args.joint_sites)
                    cell += f"; {joint:.2f}"
                cells.append(cell)
            print(f"| {name} | {family.upper()} | {kind} | " + " | ".join(cells) + " |", flush=True)
    print(f"({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
