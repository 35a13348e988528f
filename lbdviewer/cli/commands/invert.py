"""``lbdviewer invert FEATURES -o OUT.png``: reconstruct an image from a feature file alone.

The work is :func:`lbdviewer.features.invert.invert_features` (see that module for
the two modes, ``joint`` by default and ``patches``). The image is written
by the display rule (:mod:`lbdviewer.evaluation.display`: gain/offset fitted to
``--reference`` when given, else 0.5-99.5 percentiles of the covered pixels;
the covered pixels' median elsewhere, so a page reads as a page whatever its
polarity; the metrics record which pixels no keypoint covers). ``--metrics`` writes the same JSON schema as
``lbdviewer reconstruct``: the bit consistency (the library's bits of the
written image against the file's), the quality against ``--reference`` over
the covered pixels (null without one) and every parameter.

A FileStorage file need not name its descriptor or image size: they are taken
from the file, else inferred (``--descriptor auto``, the default; see
:mod:`lbdviewer.features.infer`), with a note. A file of several images needs
``--entry NAME`` (``--list`` shows them). When the real library reproduces
less than 60 % of the file's bits on the reconstruction (chance is 50 %), a
warning names the likelier descriptors and ``--metrics`` records it.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from lbdviewer.cli.commands._args import add_command, add_limit_options, check_outputs, positive_int
from lbdviewer.evaluation.display import display_stretch
from lbdviewer.features.files import entry_summaries, load_features
from lbdviewer.features.infer import AUTO, agreement_check
from lbdviewer.libraries.registry import DESCRIPTORS
from lbdviewer.features.invert import FEATURE_ITERATIONS, MODES, iter_invert_features
from lbdviewer.io.images import encode_image, load_image
from lbdviewer._runtime.versions import library_versions
from lbdviewer.io.strict_json import json_bytes
from lbdviewer.io.files import atomic_write_all
from lbdviewer._runtime.progress import advance, progress_bar
from lbdviewer.evaluation.records import solver_record

#: Quality metrics of ``lbdviewer reconstruct``'s JSON; null here without --reference.
QUALITY_KEYS = ("correlation", "psnr", "ssim", "covered_fraction")


def image_size(text):
    """``(height, width)`` from ``WIDTHxHEIGHT`` (argparse type of ``--image-size``).

    Examples
    --------
    >>> image_size("640x480")
    (480, 640)
    """
    parts = text.lower().split("x")
    if len(parts) != 2 or not all(part.isdigit() and int(part) > 0 for part in parts):
        raise argparse.ArgumentTypeError(f"--image-size must be WIDTHxHEIGHT in pixels, e.g. 640x480; got {text!r}")
    return int(parts[1]), int(parts[0])


def add_parser(subparsers):
    """Register the ``invert`` subcommand."""
    parser = add_command(subparsers, "invert", __doc__, "reconstruct an image from a feature file")
    parser.add_argument("features", help="feature file: .npz written by 'lbdviewer extract', or OpenCV "
                                         "FileStorage (.yml, .yaml, .xml, .json) with keypoints and descriptors")
    parser.add_argument("--descriptor", choices=(AUTO,) + DESCRIPTORS, default=AUTO,
                        help="descriptor of a FileStorage file that does not name it (auto: inferred from the "
                             "file, choice and margin in the --metrics record)")
    parser.add_argument("--image-size", type=image_size, default=None, metavar="WIDTHxHEIGHT",
                        help="image size of a FileStorage file that does not give it (default: the keypoints' "
                             "extent, with a note)")
    parser.add_argument("--entry", default=None, metavar="NAME",
                        help="which image of a FileStorage file that holds several (see --list)")
    parser.add_argument("--list", action="store_true",
                        help="list the entries (images) of the feature file and exit; no -o needed")
    parser.add_argument("-o", "--output", metavar="OUT.png", default=None,
                        help="reconstruction to write (.png, .jpg, .tif or .bmp); required unless --list")
    parser.add_argument("--mode", choices=MODES, default="joint",
                        help="joint: one image explains all bits; patches: each keypoint alone, then averaging")
    parser.add_argument("--iterations", type=positive_int, default=None,
                        help=f"solver iterations (default {FEATURE_ITERATIONS[('joint', 'consistency')]} joint, "
                             f"{FEATURE_ITERATIONS[('patches', 'biht')]} BIHT per keypoint)")
    parser.add_argument("--reference", metavar="ORIGINAL", default=None,
                        help="the original image, for the quality metrics of --metrics")
    parser.add_argument("--metrics", metavar="OUT.json", default=None,
                        help="write metrics and parameters (JSON, the schema of reconstruct --metrics)")
    add_limit_options(parser)
    parser.add_argument("--quiet", action="store_true", help="no progress bar and no summary line")
    parser.set_defaults(func=run)
    return parser


def _list(args):
    for summary in entry_summaries(args.features, max_pixels=args.max_pixels, max_keypoints=args.max_keypoints):
        size = summary["image_size"]
        print(f"{summary['entry'] or '(whole file)'}\t{summary['keypoints']} keypoints\t{summary['bytes']} bytes a "
              f"descriptor\t{summary['descriptor'] or 'descriptor not named'}\t"
              f"{f'{size[1]}x{size[0]}' if size else 'image size not given'}")
    return 0


def run(args):
    """Run ``lbdviewer invert``; return the exit status."""
    if args.list:
        for option, value in (("-o/--output", args.output), ("--metrics", args.metrics),
                              ("--reference", args.reference)):
            if value is not None:
                raise ValueError(f"--list only lists the entries of the file; {option} does not apply")
        return _list(args)
    if args.output is None:
        raise ValueError("-o/--output OUT.png is required (or --list to list the file's entries)")
    if args.reference and not args.metrics:
        raise ValueError("--reference is only used by --metrics; give --metrics OUT.json too")
    check_outputs({"-o/--output": args.output, "--metrics": args.metrics},
                  inputs=[args.features, args.reference], image_outputs=("-o/--output",))
    features = load_features(args.features, max_pixels=args.max_pixels, max_keypoints=args.max_keypoints,
                             descriptor=args.descriptor, image_shape=args.image_size, entry=args.entry)
    for note in features.provenance.get("notes", []):
        if not args.quiet:
            print(f"lbdviewer invert: note: {note}", file=sys.stderr)
    reference = None
    if args.reference:
        reference = load_image(args.reference, max_pixels=args.max_pixels)
        if reference.shape != features.image_shape:
            raise ValueError(f"--reference has shape {reference.shape}, the features describe "
                             f"{features.image_shape}")
    result = None
    with progress_bar(desc=f"invert ({args.mode})", quiet=args.quiet) as bar:
        for report in iter_invert_features(features, mode=args.mode, iterations=args.iterations):
            advance(bar, report.done, report.total)
            result = report.result
    shown = display_stretch(result.image, mask=result.covered, reference=reference, uncovered="neutral")
    written = shown.image
    check = agreement_check(features, written)
    if check["warning"]:
        print(f"lbdviewer invert: warning: {check['warning']}", file=sys.stderr)
    files = {args.output: encode_image(written, Path(args.output).suffix)}
    if args.metrics:
        files[args.metrics] = json_bytes({**_metrics(args, features, reference, result, check),
                                          "display": shown.record()})
    atomic_write_all(files)
    if not args.quiet:
        print(f"{args.output}: {features.descriptor}, {len(features.keypoints)} keypoints, mode {args.mode}, "
              f"method {result.method}, {result.iterations} iterations, {result.seconds:.1f} s")
    return 0


def _metrics(args, features, reference, result, check):
    overall, worst = check["bit_agreement"], check["bit_agreement_min_site"]
    if reference is not None:
        from lbdviewer.evaluation.metrics import image_metrics

        quality = image_metrics(reference, result.image, mask=result.covered)
    else:
        quality = {key: None for key in QUALITY_KEYS}
    params = {k: (int(v) if k == "patch_size" and float(v).is_integer() else v)
              for k, v in features.model_params().items()}
    out = {
        "features": str(args.features),
        "reference": None if reference is None else str(args.reference),
        "output": str(args.output),
        "shape": list(features.image_shape),
        "bit_consistency": overall,
        "bit_consistency_min_site": worst,
        "solver_bit_consistency": result.solver_bit_consistency,
        "solver": solver_record(result=result),  # what ran: iterations requested and run, stopped early
        **quality,
        "seconds": result.seconds,
        "sites": len(features.keypoints),
        "uncovered_pixels": int((~result.covered).sum()),
        "parameters": {**result.params, "descriptor_params": params,
                       "library": features.params.get("library")},
        "feature_file": {**features.provenance, "agreement_check": check},
        "versions": library_versions(),
    }
    if reference is None:
        out["undefined"] = {key: "no --reference image to compare with" for key in QUALITY_KEYS}
    return out
