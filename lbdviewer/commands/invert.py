"""``lbdviewer invert FEATURES -o OUT.png``: reconstruct an image from a feature file alone.

The work is :func:`lbdviewer.inversion.invert_features` (see that module for
the two modes, ``joint`` by default and ``patches``). The image is written
contrast-stretched over the covered pixels (black elsewhere), as the paper
shows reconstructions; ``--metrics`` compares the unstretched estimate with
``--reference`` over the covered pixels.
"""

from __future__ import annotations

from lbdviewer.features import load_features
from lbdviewer.figures import stretch
from lbdviewer.inversion import MODES, invert_features
from lbdviewer.io import load_image, save_json, save_png
from lbdviewer.reconstruct import DEFAULT_ITERATIONS


def add_parser(subparsers):
    parser = subparsers.add_parser("invert", help="reconstruct an image from a feature file")
    parser.add_argument("features", help="feature file (.npz) written by 'lbdviewer extract'")
    parser.add_argument("-o", "--output", required=True, metavar="OUT.png")
    parser.add_argument("--mode", choices=MODES, default="joint",
                        help="joint (default): one image explains all bits; patches: each keypoint alone, "
                             "then averaging")
    parser.add_argument("--iterations", type=int, default=None,
                        help=f"solver iterations (default {DEFAULT_ITERATIONS[('joint', 'consistency')]} joint, "
                             f"{DEFAULT_ITERATIONS[('patches', 'biht')]} BIHT per keypoint)")
    parser.add_argument("--reference", metavar="ORIGINAL", help="original image, for --metrics")
    parser.add_argument("--metrics", metavar="OUT.json", help="write metrics against --reference")
    parser.set_defaults(func=run)


def run(args):
    if args.iterations is not None and args.iterations < 1:
        raise ValueError(f"--iterations must be positive, got {args.iterations}")
    if bool(args.reference) != bool(args.metrics):
        raise ValueError("--reference and --metrics go together")
    features = load_features(args.features)
    reference = None
    if args.reference:
        reference = load_image(args.reference)
        if reference.shape != features.image_shape:
            raise ValueError(f"--reference has shape {reference.shape}, the features describe "
                             f"{features.image_shape}")
    result = invert_features(features, mode=args.mode, iterations=args.iterations)
    save_png(args.output, stretch(result.image, mask=result.covered))
    if reference is not None:
        from lbdviewer.metrics import image_metrics

        save_json(args.metrics, {**result.params, "seconds": round(result.seconds, 3),
                                 "solver_bit_consistency": result.solver_bit_consistency,
                                 **image_metrics(reference, result.image, mask=result.covered)})
    print(f"{args.output}: {features.descriptor}, {len(features.keypoints)} keypoints, mode {args.mode}, "
          f"{result.seconds:.1f} s")
    return 0
