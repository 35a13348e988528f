"""Compile the numba kernels ahead of their first use: ``python -m lbdviewer._runtime.warmup``.

numba compiles a kernel the first time it runs and caches the machine code on
disk beside the source; on a fresh install the app's first reconstructions
would otherwise wait about 40 s for it (5 s once cached). ``scripts/install``
runs this once; the GUI tests call it before any timed wait.
"""

from __future__ import annotations

import numpy as np

from lbdviewer.evaluation.metrics import image_metrics, packed_bit_consistency
from lbdviewer.operators.descriptor import DescriptorOperator
from lbdviewer.reconstruction.patches import reconstruct_patches
from lbdviewer.patterns.families import make_pattern
from lbdviewer.reconstruction.image import describe_sites, reconstruct_image
from lbdviewer.reconstruction.sites import grid_sites


#: Steps of :func:`iter_compile_kernels`, per family.
STEPS = ("patch BIHT", "patch primal-dual", "describe", "patches", "joint", "joint likelihood", "joint primal-dual",
         "metrics")
FAMILIES = ("brief", "freak")


def iter_compile_kernels():
    """Run every solver path once on tiny problems, yielding ``(done, total, name)`` after each step.

    Patch BIHT and primal-dual, the whole image patchwise and jointly from
    bits (sign consistency and the noisy-bit likelihood), the joint primal-dual
    from real values, describing and the metrics, for BRIEF and FREAK: numba
    compiles and caches each kernel on its first run.

    Examples
    --------
    >>> steps = list(iter_compile_kernels())  # seconds on a fresh install, well under one once cached
    >>> steps[-1]
    (16, 16, 'freak metrics')
    """
    rows, cols = np.mgrid[0:48, 0:48] / 48.0
    image = np.clip(0.5 + 0.3 * np.sin(2 * np.pi * (3 * cols + 2 * rows)) * np.cos(5 * rows), 0.0, 1.0)
    sites = grid_sites(image.shape, patch_size=16, offset=8)
    total, done = len(FAMILIES) * len(STEPS), 0
    for family in FAMILIES:
        pattern = make_pattern(family, patch_size=16, m=64)
        operator = DescriptorOperator(pattern)
        patch = image[None, :16, :16]
        bits = describe_sites(image, sites, pattern, packed=True)
        values = describe_sites(image, sites, pattern, binary=False)
        results = {}
        work = {
            "patch BIHT": lambda: reconstruct_patches(operator.describe(patch), operator, method="biht", iterations=2),
            "patch primal-dual": lambda: reconstruct_patches(operator.describe(patch, binary=False), operator,
                                                             method="primal-dual", iterations=2),
            "describe": lambda: describe_sites(image, sites, pattern, packed=True),
            "patches": lambda: reconstruct_image(bits, sites, pattern, shape=image.shape, mode="patches", iterations=2),
            "joint": lambda: results.setdefault("joint", reconstruct_image(bits, sites, pattern, shape=image.shape,
                                                                            mode="joint", iterations=2)),
            "joint likelihood": lambda: reconstruct_image(bits, sites, pattern, shape=image.shape, method="likelihood",
                                                          iterations=2),
            "joint primal-dual": lambda: reconstruct_image(values, sites, pattern, shape=image.shape, mode="joint",
                                                           iterations=2),
            "metrics": lambda: (packed_bit_consistency(
                                    describe_sites(results["joint"].image, sites, pattern, packed=True), bits, pattern.m),
                                image_metrics(image, results["joint"].image, corners=sites, patch_size=16)),
        }
        for step in STEPS:
            work[step]()
            done += 1
            yield done, total, f"{family} {step}"


def compile_kernels(*, quiet=True):
    """Run :func:`iter_compile_kernels` to the end; a progress bar on a terminal unless ``quiet``.

    Examples
    --------
    >>> compile_kernels()
    """
    from lbdviewer._runtime.progress import progress_bar

    with progress_bar(len(FAMILIES) * len(STEPS), desc="compiling kernels", unit="step", quiet=quiet) as bar:
        for _, _, name in iter_compile_kernels():
            bar.set_postfix_str(name)
            bar.update()


if __name__ == "__main__":
    compile_kernels(quiet=False)
