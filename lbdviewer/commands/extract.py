"""``lbdviewer extract IMAGE -o FEATURES --descriptor NAME``: describe an image with the real library.

Keypoints come from OpenCV's ORB detector (FAST + Harris over the pyramid);
the chosen library describes them and the result is written as a feature file
(:mod:`lbdviewer.features`).
"""

from __future__ import annotations

from lbdviewer.commands._args import add_command, add_limit_options, add_output, check_outputs, positive_int
from lbdviewer.features import DESCRIPTORS, FeatureSet, save_features
from lbdviewer.filestorage import FORMATS
from lbdviewer.io import load_image
from lbdviewer.library_models import get_model
from lbdviewer.limits import check_keypoints, max_keypoints
from lbdviewer.operators import pack_bits

#: Smallest image side the detector works on (ORB's border of 31 pixels on each side, and one more).
MIN_SIDE = 2 * 31 + 1


def extract_features(image, descriptor, *, n_keypoints=500):
    """Detect keypoints and describe them with the library of ``descriptor``.

    Returns
    -------
    FeatureSet
    """
    model = get_model(descriptor)
    result = model.run_library(image, model.detect(image, n_keypoints=n_keypoints))
    return FeatureSet(
        descriptor=descriptor, params={**model.params(), "library": model.library_version()},
        image_shape=image.shape, keypoints=result.keypoints,
        descriptors=pack_bits(result.bits, bitorder=model.bitorder).reshape(len(result.keypoints),
                                                                            (model.n_bits + 7) // 8),
        n_bits=model.n_bits, bitorder=model.bitorder,
    )


def add_parser(subparsers):
    """Register the ``extract`` subcommand."""
    parser = add_command(subparsers, "extract", __doc__, "write a feature file computed by the real library")
    parser.add_argument("image", help="input image (PNG, JPEG, TIFF, BMP or PNM)")
    add_output(parser, "FEATURES", "feature file to write (.npz, or OpenCV FileStorage .yml/.yaml/.xml/.json)")
    parser.add_argument("--format", choices=("npz",) + FORMATS, default=None,
                        help="file format (default: from the output suffix; npz otherwise)")
    parser.add_argument("--descriptor", choices=DESCRIPTORS, default="orb", help="library descriptor")
    parser.add_argument("--keypoints", type=positive_int, default=500, metavar="N",
                        help="keypoints to detect (at most --max-keypoints)")
    add_limit_options(parser)
    parser.set_defaults(func=run)
    return parser


def run(args):
    """Run ``lbdviewer extract``; return the exit status."""
    check_keypoints(args.keypoints, "--keypoints", limit=max_keypoints(args.max_keypoints))
    check_outputs({"-o/--output": args.output}, inputs=[args.image])
    image = load_image(args.image, max_pixels=args.max_pixels)
    if min(image.shape) < MIN_SIDE:
        raise ValueError(f"image {args.image!r} is {image.shape[1]} x {image.shape[0]} pixels; the detector "
                         f"needs at least {MIN_SIDE} x {MIN_SIDE}")
    features = extract_features(image, args.descriptor, n_keypoints=args.keypoints)
    save_features(args.output, features, fmt=args.format)
    print(f"{args.output}: {len(features.keypoints)} {args.descriptor} descriptors of {features.n_bits} bits")
    return 0
