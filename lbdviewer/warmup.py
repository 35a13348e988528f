"""Compile the numba kernels ahead of their first use: ``python -m lbdviewer.warmup``.

numba compiles a kernel the first time it runs and caches the machine code on
disk beside the source; on a fresh install the app's first reconstructions
would otherwise wait about 40 s for it (5 s once cached). ``scripts/install``
runs this once; the GUI tests call it before any timed wait.
"""

from __future__ import annotations

import numpy as np

from lbdviewer.metrics import image_metrics, packed_bit_consistency
from lbdviewer.operators import DescriptorOperator
from lbdviewer.patches import reconstruct_patches
from lbdviewer.patterns import make_pattern
from lbdviewer.reconstruct import describe_sites, reconstruct_image
from lbdviewer.sites import grid_sites


def compile_kernels():
    """Run every solver path once on tiny problems (BRIEF and FREAK), so numba compiles and caches it.

    Patch BIHT and primal-dual, the whole image patchwise and jointly from
    bits (sign consistency and the noisy-bit likelihood), the joint
    primal-dual from real values, describing and the metrics.

    Examples
    --------
    >>> compile_kernels()  # seconds on a fresh install, well under one once cached
    """
    rows, cols = np.mgrid[0:48, 0:48] / 48.0
    image = np.clip(0.5 + 0.3 * np.sin(2 * np.pi * (3 * cols + 2 * rows)) * np.cos(5 * rows), 0.0, 1.0)
    sites = grid_sites(image.shape, patch_size=16, offset=8)
    for family in ("brief", "freak"):
        pattern = make_pattern(family, patch_size=16, m=64)
        operator = DescriptorOperator(pattern)
        patch = image[None, :16, :16]
        reconstruct_patches(operator.describe(patch), operator, method="biht", iterations=2)
        reconstruct_patches(operator.describe(patch, binary=False), operator, method="primal-dual", iterations=2)
        bits = describe_sites(image, sites, pattern)
        reconstruct_image(bits, sites, pattern, shape=image.shape, method="likelihood", iterations=2)
        for mode in ("patches", "joint"):
            result = reconstruct_image(bits, sites, pattern, shape=image.shape, mode=mode, iterations=2)
        values = describe_sites(image, sites, pattern, binary=False)
        reconstruct_image(values, sites, pattern, shape=image.shape, mode="joint", iterations=2)
        packed_bit_consistency(describe_sites(result.image, sites, pattern), bits, pattern.m)
        image_metrics(image, result.image, corners=sites, patch_size=16)


if __name__ == "__main__":
    compile_kernels()
