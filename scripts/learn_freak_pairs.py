"""Learn the order of FREAK's 903 field pairs, as the FREAK paper did.

Training data: 32x32 patches at FAST keypoints of the gray images that ship with
scikit-image (camera, astronaut, coffee, chelsea, brick, grass, gravel, moon,
page, text). The result, ``lbdviewer/patterns/data/freak_pair_order.npy``, is the pair
list of the ``"freak"`` pattern (its first ``m`` rows).

Run: python scripts/learn_freak_pairs.py [--check]
"""

import argparse
import sys
from pathlib import Path

import cv2
import numpy as np
from skimage import color, data

from lbdviewer.operators.descriptor import field_kernels
from lbdviewer.patterns.freak import ex_freak_pattern, learn_pair_order

IMAGES = ("camera", "astronaut", "coffee", "chelsea", "brick", "grass", "gravel", "moon", "page", "text")
OUTPUT = Path(__file__).resolve().parent.parent / "lbdviewer" / "data" / "freak_pair_order.npy"
PATCH = 32


def training_patches():
    patches = []
    detector = cv2.FastFeatureDetector_create()
    half = PATCH // 2
    for name in IMAGES:
        image = getattr(data, name)()
        if image.ndim == 3:
            image = color.rgb2gray(image[..., :3])
        image = np.asarray(image, dtype=np.float64)
        if image.max() > 1:
            image = image / 255.0
        keypoints = detector.detect((image * 255).astype(np.uint8))
        for kp in keypoints:
            x, y = int(round(kp.pt[0])), int(round(kp.pt[1]))
            top, left = y - half, x - half
            if 0 <= top and 0 <= left and top + PATCH <= image.shape[0] and left + PATCH <= image.shape[1]:
                patches.append(image[top : top + PATCH, left : left + PATCH])
    return np.array(patches)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true", help="compare with the shipped file instead of writing it")
    args = parser.parse_args()
    patches = training_patches()
    kernels = field_kernels(ex_freak_pattern(PATCH), "box")
    means = (kernels @ patches.reshape(len(patches), -1).T).T
    order = learn_pair_order(means).astype(np.int16)
    print(f"{len(patches)} training patches; first pairs: {order[:5].tolist()}")
    if args.check:
        same = np.array_equal(np.load(OUTPUT, allow_pickle=False), order)
        print("shipped file is up to date" if same else "shipped file differs")
        return 0 if same else 1
    np.save(OUTPUT, order)
    print(f"wrote {OUTPUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
