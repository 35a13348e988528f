"""Measure bit agreement between the libraries and lbdviewer's models on real photos.

Usage: python scripts/verify_models.py [N_KEYPOINTS]
Images: skimage.data astronaut, coffee, chelsea (gray); keypoints from ORB's detector.
"""

import sys

from skimage import color, data

from lbdviewer.libraries.registry import DESCRIPTORS
from lbdviewer.io.strict_json import dumps_strict
from lbdviewer.libraries.base import agreement
from lbdviewer.libraries.registry import get_model


def main(n_keypoints=300):
    rows = []
    for name in ("astronaut", "coffee", "chelsea"):
        image = color.rgb2gray(getattr(data, name)())
        for descriptor in DESCRIPTORS:
            row = {"image": name, **agreement(get_model(descriptor), image, n_keypoints=n_keypoints)}
            rows.append(row)
            print(dumps_strict(row, indent=None), flush=True)
    return rows


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 300)
