"""``lbdviewer reconstruct IMAGE -o OUT.png``: describe an image's patches, invert them, measure.

The image is described at grid sites (``--offset``) or FAST keypoints
(``--keypoints fast``) with the chosen descriptor, the whole image is
reconstructed from the descriptors alone, and the result is written as a PNG
(atomically: a temporary file, then :func:`os.replace`). ``--metrics`` adds a
JSON file with the quality metrics and every parameter used.
"""

from __future__ import annotations

import sys
import time

import numpy as np

from lbdviewer.figures import stretch
from lbdviewer.io import load_image, save_json, save_png
from lbdviewer.metrics import image_metrics, packed_bit_consistency
from lbdviewer.patterns import FAMILIES, make_pattern
from lbdviewer.reconstruct import METHODS, MODES, describe_sites, iter_reconstruct_image
from lbdviewer.sites import fast_sites, grid_sites


#: Differences of field means within this of zero count as ties when the
#: output image's bits are measured (far below one grey level, 1/255).
METRIC_TIE_ATOL = 1e-4


def add_parser(subparsers):
    """Register the ``reconstruct`` subcommand."""
    parser = subparsers.add_parser("reconstruct", help="reconstruct an image from its patch descriptors",
                                   description=__doc__.split("\n\n")[0])
    parser.add_argument("image", help="PNG, JPEG, TIFF or BMP image (colour is converted to gray)")
    parser.add_argument("-o", "--output", required=True, metavar="OUT.png", help="reconstruction to write")
    parser.add_argument("--descriptor", choices=FAMILIES, default="brief")
    parser.add_argument("--patch-size", type=int, default=32)
    parser.add_argument("--m", type=int, default=512, help="measurements (bits) per descriptor")
    sites = parser.add_mutually_exclusive_group()
    sites.add_argument("--offset", type=int, default=None, help="grid spacing N_off (default 8)")
    sites.add_argument("--keypoints", choices=("fast",), default=None, help="patches centred on FAST keypoints")
    parser.add_argument("--mode", choices=MODES, default=None,
                        help="joint (default where patches overlap) or patches (the paper's averaging)")
    parser.add_argument("--method", choices=METHODS, default=None,
                        help="solver (default: consistency for a joint solve of bits, biht for patches, "
                             "primal-dual with --real)")
    parser.add_argument("--real", action="store_true", help="real-valued descriptors instead of bits")
    parser.add_argument("--iterations", type=int, default=None)
    parser.add_argument("--sparsity", type=float, default=0.4, help="share of Haar coefficients BIHT keeps")
    parser.add_argument("--lam", type=float, default=0.1, help="primal-dual data weight")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random patterns")
    parser.add_argument("--metrics", metavar="OUT.json", default=None, help="write metrics and parameters")
    parser.add_argument("--raw", action="store_true",
                        help="write the estimate as solved instead of contrast-stretched (0.5-99.5 percentiles)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.set_defaults(func=run)
    return parser


class _Progress:
    """A one-line progress bar on stderr, redrawn at most every ``interval`` seconds."""

    def __init__(self, label, *, enabled=True, interval=0.25, stream=sys.stderr):
        self.label, self.enabled, self.interval, self.stream = label, enabled, interval, stream
        self.last = 0.0
        self.drawn = False

    def update(self, done, total, *, force=False):
        now = time.monotonic()
        if not self.enabled or (not force and now - self.last < self.interval):
            return
        self.last = now
        width = 30
        filled = int(width * done / max(total, 1))
        self.stream.write(f"\r{self.label} [{'#' * filled}{'.' * (width - filled)}] {done}/{total}")
        self.stream.flush()
        self.drawn = True

    def close(self):
        if self.drawn:
            self.stream.write("\n")
            self.stream.flush()


def _fail(message):
    print(f"lbdviewer reconstruct: error: {message}", file=sys.stderr)
    return 2


def run(args):
    """Run ``lbdviewer reconstruct``; return the exit status."""
    try:
        image = load_image(args.image)
        pattern = make_pattern(args.descriptor, patch_size=args.patch_size, m=args.m, rng=args.seed)
        if args.keypoints == "fast":
            sites, _ = fast_sites(image, patch_size=pattern.patch_size)
            if len(sites) == 0:
                return _fail(f"no FAST keypoint of {args.image!r} has a whole patch inside the image")
        else:
            sites = grid_sites(image.shape, patch_size=pattern.patch_size,
                               offset=8 if args.offset is None else args.offset)
        descriptors = describe_sites(image, sites, pattern, binary=not args.real)
        progress = _Progress("reconstruct", enabled=not args.quiet)
        result = None
        try:
            for report in iter_reconstruct_image(descriptors, sites, pattern, shape=image.shape, mode=args.mode,
                                                 method=args.method, iterations=args.iterations,
                                                 sparsity=args.sparsity, lam=args.lam):
                progress.update(report.done, report.total, force=report.result is not None)
                result = report.result
        finally:
            progress.close()
    except ValueError as error:
        return _fail(str(error))
    save_png(args.output, result.image if args.raw else stretch(result.image, mask=result.covered))
    if args.metrics:
        save_json(args.metrics, _metrics(args, image, sites, pattern, descriptors, result))
    return 0


def _metrics(args, image, sites, pattern, descriptors, result):
    original_bits = describe_sites(image, sites, pattern) if args.real else descriptors
    estimate_bits = describe_sites(result.image, sites, pattern, atol=METRIC_TIE_ATOL)
    per_site, overall = packed_bit_consistency(estimate_bits, original_bits, pattern.m)
    quality = image_metrics(image, result.image, mask=result.covered, corners=sites,
                            patch_size=pattern.patch_size)
    return {
        "image": str(args.image),
        "output": str(args.output),
        "shape": list(image.shape),
        "bit_consistency": overall,
        "bit_tie_atol": METRIC_TIE_ATOL,
        "bit_consistency_min_site": float(per_site.min()),
        "solver_bit_consistency": result.solver_bit_consistency,
        **quality,
        "seconds": result.seconds,
        "sites": int(len(sites)),
        "uncovered_pixels": int((~result.covered).sum()),
        "parameters": {
            "descriptor": args.descriptor, "patch_size": pattern.patch_size, "m": pattern.m,
            "offset": None if args.keypoints else (8 if args.offset is None else args.offset),
            "keypoints": args.keypoints, "real": bool(args.real), "seed": args.seed,
            **result.params, "pattern": pattern.describe_params(),
        },
        "versions": {"numpy": np.__version__},
    }
