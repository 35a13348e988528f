"""``lbdviewer verify-model IMAGE --descriptor NAME``: our model against the real library.

Runs the library and our model on the same image and keypoints and prints the
share of identical bits: for the exact model (library arithmetic), and for
``sign(L_k patch_k)`` with the smoothing folded into the fields ("linear") or
read from the library's smoothed image ("linear-sampled"). With BRISK, it says
where the model's single-precision ``logf`` comes from: numpy's ``log`` in
place of the C library's means the model may not be bit-exact.
"""

from __future__ import annotations

import math

from lbdviewer.cli.commands._args import add_command, add_limit_options, positive_int
from lbdviewer.libraries.registry import DESCRIPTORS
from lbdviewer.io.images import load_image
from lbdviewer.io.strict_json import dumps_strict
from lbdviewer.libraries.base import agreement
from lbdviewer.libraries.brisk import logf_source
from lbdviewer.libraries.registry import get_model
from lbdviewer.io.limits import check_keypoints, max_keypoints
from lbdviewer._runtime.progress import progress_bar


def add_parser(subparsers):
    """Register the ``verify-model`` subcommand."""
    parser = add_command(subparsers, "verify-model", __doc__, "compare our descriptor models with the real library")
    parser.add_argument("image", help="input image (PNG, JPEG, TIFF, BMP or PNM)")
    parser.add_argument("--descriptor", choices=DESCRIPTORS + ("all",), default="all",
                        help="library descriptor, or all of them")
    parser.add_argument("--keypoints", type=positive_int, default=300, metavar="N",
                        help="keypoints to detect (at most --max-keypoints)")
    parser.add_argument("--json", action="store_true", help="print strict JSON instead of a table")
    add_limit_options(parser)
    parser.add_argument("--quiet", action="store_true",
                        help="no progress bar (the first use of a model calibrates it: seconds)")
    parser.set_defaults(func=run)
    return parser


def run(args):
    """Run ``lbdviewer verify-model``; return the exit status."""
    check_keypoints(args.keypoints, "--keypoints", limit=max_keypoints(args.max_keypoints))
    image = load_image(args.image, max_pixels=args.max_pixels)
    names = DESCRIPTORS if args.descriptor == "all" else (args.descriptor,)
    rows = []
    with progress_bar(len(names), desc="verify-model", unit="descriptor", quiet=args.quiet) as bar:
        for name in names:
            bar.set_postfix_str(f"{name} (calibrates on first use)")
            rows.append(agreement(get_model(name), image, n_keypoints=args.keypoints))
            bar.update()
    total = sum(r["bits"] for r in rows)
    overall = sum(r["exact"] * r["bits"] for r in rows if r["bits"]) / total if total else float("nan")
    notes = {"brisk_logf": logf_source()} if "brisk" in names else {}
    if args.json:
        print(dumps_strict({"descriptors": rows, "overall_exact": overall, **notes}))
        return 0
    print(f"{'descriptor':15s} {'keypoints':>9s} {'bits':>8s} {'exact':>8s} {'linear':>8s} {'sampled':>8s}")
    for r in rows:
        print(f"{r['descriptor']:15s} {r['keypoints']:9d} {r['bits']:8d} {_percent(r['exact'])} "
              f"{_percent(r['linear'])} {_percent(r['linear_sampled'])}")
    print(f"{'overall':15s} {'':9s} {total:8d} {_percent(overall)}")
    if "brisk_logf" in notes:
        print(f"brisk logf: {notes['brisk_logf']}" if notes["brisk_logf"] else
              "brisk logf: numpy's log (no C library logf found): BRISK's model may not be bit-exact here")
    return 0


def _percent(share):
    return f"{'n/a':>8s}" if math.isnan(share) else f"{100 * share:7.3f}%"
