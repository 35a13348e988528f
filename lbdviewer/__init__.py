"""lbdviewer: invert local binary descriptors (BRIEF, FREAK, ORB, BRISK, ...) back into images.

The public API is namespaced by concept; each namespace loads on first use, so
``import lbdviewer`` is instant and the numeric core never imports Qt (the
desktop app lives in :mod:`lbdviewer.gui`).

================  ==============================================================
``bits``          the sign with its tie rule; packing bits into bytes
``patterns``      the paper's sampling geometry: BRIEF, FREAK, RA-FREAK, EX-FREAK
``operators``     linear maps: ``L`` of a patch, the joint and pyramid operators
``solvers``       BIHT, primal-dual, and the whole-image solvers
``reconstruction`` sites, patches and whole images from their descriptors
``libraries``     bit-exact models of OpenCV's and scikit-image's descriptors
``features``      keypoints, feature files, extraction and inversion
``evaluation``    metrics, the display rule, run records, leakage
``io``            images, JSON and files in and out; the shipped samples
``audit``         many inputs x descriptors on a local pool or Dask; the reports
``defences``      defences of released features, what they cost in matching and leave to an attacker
``figures``       the figure engine and the paper's figures
``testing``       the dot test and a matrix operator, for operator tests
================  ==============================================================

Examples
--------
>>> import numpy as np
>>> import lbdviewer as lbd
>>> op = lbd.operators.DescriptorOperator(lbd.patterns.make_pattern("brief", patch_size=16, m=128))
>>> bits = op.describe(np.random.default_rng(0).random((4, 16, 16)))
>>> lbd.reconstruction.reconstruct_patches(bits, op, iterations=20).shape
(4, 16, 16)
"""

from importlib import metadata

from lbdviewer._lazy import lazy_namespace

try:
    __version__ = metadata.version("lbdviewer")
except metadata.PackageNotFoundError:  # a source tree that was never installed
    __version__ = "0+unknown"

__getattr__, __dir__, __all__ = lazy_namespace(__name__, {
    name: name for name in ("bits", "patterns", "operators", "solvers", "reconstruction", "libraries", "features",
                            "evaluation", "io", "audit", "defences", "figures", "testing")
})
__all__ = [*__all__, "__version__"]
