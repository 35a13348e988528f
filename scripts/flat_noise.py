"""Does a solver draw faint noise on a flat image as speckle? The flat-noise row of the README's #11 table.

A 64x64 image at grey 0.5 with Gaussian noise of standard deviation 0.3/255
(below one grey level; fixed seed, as ``tests/test_likelihood.py``) is
described at a grid of 32x32 patches with offset 8 (M = 256) and
reconstructed jointly from the bits by each method. Bits are scale-free:
these are exactly the bits of strong noise, so a solver that reproduces them
draws full-contrast speckle. Printed: the reconstruction's standard deviation
as a multiple of the noise's (the test asks for less than 0.25).

Usage: ``python scripts/flat_noise.py [--methods consistency likelihood coherent] [--families brief freak]``
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from lbdviewer.patterns.families import make_pattern
from lbdviewer.reconstruction.image import describe_sites, reconstruct_image
from lbdviewer.reconstruction.sites import grid_sites

NOISE = 0.3 / 255


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--methods", nargs="+", default=["consistency", "likelihood", "coherent"])
    parser.add_argument("--families", nargs="+", default=["brief", "freak"])
    args = parser.parse_args(argv)
    image = 0.5 + np.random.default_rng(5).normal(0.0, NOISE, (64, 64))
    sites = grid_sites(image.shape, patch_size=32, offset=8)
    print(f"{'method':12} {'descriptor':10} {'std / noise std':>15}")
    for method in args.methods:
        for family in args.families:
            pattern = make_pattern(family, patch_size=32, m=256)
            x = reconstruct_image(describe_sites(image, sites, pattern), sites, pattern, shape=image.shape,
                                  method=method).image
            print(f"{method:12} {family:10} {x.std() / image.std():>15.3g}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
