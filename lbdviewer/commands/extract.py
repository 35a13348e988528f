"""``lbdviewer extract IMAGE -o FEATURES --descriptor NAME``: describe an image with the real library.

Keypoints come from OpenCV's ORB detector (FAST + Harris over the pyramid);
the chosen library describes them and the result is written as a feature file
(:mod:`lbdviewer.features`).
"""

from __future__ import annotations

from lbdviewer.features import DESCRIPTORS, FeatureSet, save_features
from lbdviewer.io import load_image
from lbdviewer.library_models import get_model
from lbdviewer.operators import pack_bits


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
        descriptors=pack_bits(result.bits, bitorder=model.bitorder).reshape(len(result.keypoints), -1),
        n_bits=model.n_bits, bitorder=model.bitorder,
    )


def add_parser(subparsers):
    parser = subparsers.add_parser("extract", help="write a feature file computed by the real library")
    parser.add_argument("image", help="input image")
    parser.add_argument("-o", "--output", required=True, metavar="FEATURES", help="feature file to write (.npz)")
    parser.add_argument("--descriptor", choices=DESCRIPTORS, default="orb")
    parser.add_argument("--keypoints", type=int, default=500, help="keypoints to detect (default 500)")
    parser.set_defaults(func=run)


def run(args):
    if args.keypoints < 1:
        raise ValueError(f"--keypoints must be positive, got {args.keypoints}")
    features = extract_features(load_image(args.image), args.descriptor, n_keypoints=args.keypoints)
    save_features(args.output, features)
    print(f"{args.output}: {len(features.keypoints)} {args.descriptor} descriptors of {features.n_bits} bits")
    return 0
