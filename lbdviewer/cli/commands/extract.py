"""``lbdviewer extract IMAGE -o FEATURES --descriptor NAME``: describe an image with the real library.

Keypoints come from OpenCV's ORB detector (FAST + Harris over the pyramid);
the chosen library describes them and the result is written as a feature file
(:mod:`lbdviewer.features.keypoints`), with the SHA-256 of the image file in its
``params["image_sha256"]`` (the app pairs the file with that image only).
"""

from __future__ import annotations

from lbdviewer.cli.commands._args import add_command, add_limit_options, add_output, check_outputs, positive_int
from lbdviewer.features.extract import extract_features
from lbdviewer.features.filestorage.parser import FORMATS
from lbdviewer.features.files import save_features
from lbdviewer.io.files import file_sha256
from lbdviewer.io.images import load_image
from lbdviewer.io.limits import check_keypoints, max_keypoints
from lbdviewer.libraries.registry import DESCRIPTORS

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
    features = extract_features(image, args.descriptor, n_keypoints=args.keypoints, name=f"image {args.image!r}",
                                image_sha256=file_sha256(args.image))  # lets a viewer tell the image they came from
    save_features(args.output, features, fmt=args.format)
    print(f"{args.output}: {len(features.keypoints)} {args.descriptor} descriptors of {features.n_bits} bits")
    return 0
