"""``lbdviewer verify-model IMAGE --descriptor NAME``: our model against the real library.

Runs the library and our model on the same image and keypoints and prints the
share of identical bits: for the exact model (library arithmetic), and for
``sign(L_k patch_k)`` with the smoothing folded into the fields ("linear") or
read from the library's smoothed image ("linear-sampled").
"""

from __future__ import annotations

import json

from lbdviewer.features import DESCRIPTORS
from lbdviewer.io import load_image
from lbdviewer.library_models import agreement, get_model


def add_parser(subparsers):
    parser = subparsers.add_parser("verify-model", help="compare our descriptor models with the real library")
    parser.add_argument("image", help="input image")
    parser.add_argument("--descriptor", choices=DESCRIPTORS + ("all",), default="all")
    parser.add_argument("--keypoints", type=int, default=300, help="keypoints to detect (default 300)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.set_defaults(func=run)


def run(args):
    if args.keypoints < 1:
        raise ValueError(f"--keypoints must be positive, got {args.keypoints}")
    image = load_image(args.image)
    names = DESCRIPTORS if args.descriptor == "all" else (args.descriptor,)
    rows = [agreement(get_model(name), image, n_keypoints=args.keypoints) for name in names]
    total = sum(r["bits"] for r in rows)
    overall = sum(r["exact"] * r["bits"] for r in rows if r["bits"]) / total if total else float("nan")
    if args.json:
        print(json.dumps({"descriptors": rows, "overall_exact": overall}, indent=2))
        return 0
    print(f"{'descriptor':15s} {'keypoints':>9s} {'bits':>8s} {'exact':>8s} {'linear':>8s} {'sampled':>8s}")
    for r in rows:
        print(f"{r['descriptor']:15s} {r['keypoints']:9d} {r['bits']:8d} {100 * r['exact']:7.3f}% "
              f"{100 * r['linear']:7.3f}% {100 * r['linear_sampled']:7.3f}%")
    print(f"{'overall':15s} {'':9s} {total:8d} {100 * overall:7.3f}%")
    return 0
