"""``lbdviewer reconstruct IMAGE -o OUT.png``: describe an image's patches, invert them, measure.

The image is described at grid sites (``--sites grid``, spacing ``--offset``)
or at FAST keypoints (``--sites fast``) with the chosen descriptor, the whole
image is reconstructed from the descriptors alone, and the result is written
(PNG, JPEG, TIFF or BMP by the name's suffix; atomically, together with
``--metrics`` if given: both land or neither). ``--metrics`` adds a JSON file
with the quality metrics and every parameter used.
"""

from __future__ import annotations

import sys
from pathlib import Path

from lbdviewer.cli.commands._args import (add_command, add_limit_options, add_output, check_outputs, fraction, non_negative_int, positive_float, positive_int)
from lbdviewer.evaluation.display import display_stretch
from lbdviewer.io.images import encode_image, load_image
from lbdviewer._runtime.versions import library_versions
from lbdviewer.io.strict_json import json_bytes
from lbdviewer.io.files import atomic_write_all
from lbdviewer.evaluation.metrics import image_metrics, packed_bit_consistency
from lbdviewer.patterns.families import FAMILIES, make_pattern
from lbdviewer._runtime.progress import advance, progress_bar
from lbdviewer.reconstruction.image import METHODS, MODES, describe_sites, iter_reconstruct_image
from lbdviewer.evaluation.records import solver_record
from lbdviewer.reconstruction.sites import fast_sites, grid_sites
from lbdviewer.solvers.patch.primal_dual import DEFAULT_LAM


#: Differences of field means within this of zero count as ties when the
#: output image's bits are measured (far below one grey level, 1/255).
METRIC_TIE_ATOL = 1e-4
SITES = ("grid", "fast")
DEFAULT_OFFSET = 8


def _keypoints_alias(text):
    if text != "fast":
        raise ValueError(text)
    return text


_keypoints_alias.__name__ = "'fast' (deprecated alias of --sites fast)"


def add_parser(subparsers):
    """Register the ``reconstruct`` subcommand."""
    parser = add_command(subparsers, "reconstruct", __doc__, "reconstruct an image from its patch descriptors")
    parser.add_argument("image", help="PNG, JPEG, TIFF, BMP or PNM image (colour is converted to gray)")
    add_output(parser, "OUT.png", "reconstruction to write (.png, .jpg, .tif or .bmp)")
    parser.add_argument("--descriptor", choices=FAMILIES, default="brief", help="descriptor family")
    parser.add_argument("--patch-size", type=positive_int, default=32, metavar="P", help="patch side in pixels")
    parser.add_argument("--m", type=positive_int, default=512, help="measurements (bits) per descriptor")
    parser.add_argument("--sites", choices=SITES, default="grid",
                        help="where patches sit: a grid with spacing --offset, or FAST keypoints")
    parser.add_argument("--offset", type=positive_int, default=None, metavar="N_OFF",
                        help=f"grid spacing in pixels (default {DEFAULT_OFFSET}; --sites grid only)")
    parser.add_argument("--keypoints", type=_keypoints_alias, default=None, metavar="fast",
                        help="deprecated: '--keypoints fast' means '--sites fast'")
    parser.add_argument("--mode", choices=MODES, default=None,
                        help="joint (default where patches overlap) or patches (the paper's averaging)")
    parser.add_argument("--method", choices=METHODS, default=None,
                        help="solver (default: consistency for a joint solve of bits, biht for patches, "
                             "primal-dual with --real)")
    parser.add_argument("--real", action="store_true", help="real-valued descriptors instead of bits")
    parser.add_argument("--iterations", type=positive_int, default=None,
                        help="solver iterations (default: the method's, e.g. 200 for consistency)")
    parser.add_argument("--sparsity", type=fraction, default=0.4, help="share of Haar coefficients BIHT keeps")
    parser.add_argument("--lam", type=positive_float, default=DEFAULT_LAM,
                        help=f"primal-dual data weight (default {DEFAULT_LAM:g}; the paper's 0.1 leaves most "
                             f"patches constant with unit-l1 fields)")
    parser.add_argument("--seed", type=non_negative_int, default=0, help="seed of the random patterns")
    parser.add_argument("--metrics", metavar="OUT.json", default=None, help="write metrics and parameters (JSON)")
    parser.add_argument("--raw", action="store_true",
                        help="write the estimate as solved instead of by the display rule (gain/offset "
                             "fitted to the original; lbdviewer.evaluation.display)")
    add_limit_options(parser, keypoints=False)
    parser.add_argument("--quiet", action="store_true", help="no progress bar and no summary line")
    parser.set_defaults(func=run)
    return parser


def _fail(message):
    print(f"lbdviewer reconstruct: error: {message}", file=sys.stderr)
    return 2


def run(args):
    """Run ``lbdviewer reconstruct``; return the exit status."""
    if args.keypoints == "fast":
        print("lbdviewer reconstruct: note: --keypoints fast is deprecated; use --sites fast", file=sys.stderr)
        args.sites = "fast"
    if args.sites == "fast" and args.offset is not None:
        return _fail("--offset sets the grid spacing; it does not go with --sites fast")
    try:
        check_outputs({"-o/--output": args.output, "--metrics": args.metrics}, inputs=[args.image],
                      image_outputs=("-o/--output",))
        image = load_image(args.image, max_pixels=args.max_pixels)
        pattern = make_pattern(args.descriptor, patch_size=args.patch_size, m=args.m, rng=args.seed)
        if args.sites == "fast":
            sites, _ = fast_sites(image, patch_size=pattern.patch_size)
            if len(sites) == 0:
                return _fail(f"no FAST keypoint of {args.image!r} has a whole patch inside the image")
        else:
            sites = grid_sites(image.shape, patch_size=pattern.patch_size,
                               offset=DEFAULT_OFFSET if args.offset is None else args.offset)
        descriptors = describe_sites(image, sites, pattern, binary=not args.real, packed=not args.real)
        result = None
        with progress_bar(desc="reconstruct", quiet=args.quiet) as bar:
            for report in iter_reconstruct_image(descriptors, sites, pattern, shape=image.shape, mode=args.mode,
                                                 method=args.method, iterations=args.iterations,
                                                 sparsity=args.sparsity, lam=args.lam):
                advance(bar, report.done, report.total)
                result = report.result
    except ValueError as error:
        return _fail(str(error))
    shown = display_stretch(result.image, mask=result.covered, reference=image)
    estimate = result.image if args.raw else shown.image
    files = {args.output: encode_image(estimate, Path(args.output).suffix)}
    metrics = None
    if args.metrics:
        display = {"rule": "raw", "description": "the estimate as solved (--raw)"} if args.raw else shown.record()
        metrics = {**_metrics(args, image, sites, pattern, descriptors, result), "display": display}
        files[args.metrics] = json_bytes(metrics)
    atomic_write_all(files)
    if not args.quiet:
        consistency = "" if metrics is None else f", bit consistency {metrics['bit_consistency']:.3f}"
        ran = result.iterations if result.iterations_run is None else f"{result.iterations_run} of {result.iterations}"
        print(f"{args.output}: {args.descriptor}, {len(sites)} {args.sites} sites, mode {result.mode}, "
              f"method {result.method}, {ran} iterations, {result.seconds:.1f} s{consistency}")
    return 0


def _metrics(args, image, sites, pattern, descriptors, result):
    original_bits = describe_sites(image, sites, pattern, packed=True) if args.real else descriptors
    estimate_bits = describe_sites(result.image, sites, pattern, packed=True, atol=METRIC_TIE_ATOL)
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
        "solver": solver_record(result=result),  # what ran: iterations requested and run, stopped early
        **quality,
        "seconds": result.seconds,
        "sites": int(len(sites)),
        "uncovered_pixels": int((~result.covered).sum()),
        "parameters": {
            **result.params,
            "descriptor": args.descriptor, "patch_size": int(pattern.patch_size), "m": pattern.m,
            "site_layout": args.sites,
            "offset": None if args.sites == "fast" else (DEFAULT_OFFSET if args.offset is None else args.offset),
            "real": bool(args.real), "seed": args.seed, "pattern": pattern.describe_params(),
        },
        "versions": library_versions(),
    }
