"""The joint solve against another git revision, interleaved in one process.

This machine's speed drifts by up to 30 % over minutes, so two runs one after
the other can disagree by more than the change being measured. This script
loads ``lbdviewer`` as of ``REV`` (``git archive``, imports renamed to
``lbdviewer_rev``, under ``lbdviewer``'s cache directory, one per commit, so
numba's compiled kernels are kept) beside the working tree's, builds
the same problem for both (the 512x512 ``camera`` sample, 32x32 patches,
offset 8, M = 512 bits, :class:`lbdviewer.solvers.image.joint.JointSignConsistency`
with its default 200 iterations), runs each once to compile and warm up, then
alternates ``--chunk`` iterations of one and of the other until both finish,
``--rounds`` times. Each solve's seconds are the sum of its chunks; the ratio
``working tree / REV`` is the figure to quote, with whether both
solves ended on bit-for-bit the same image (sign consistency only). ``--method likelihood`` runs
the working tree's :class:`lbdviewer.solvers.image.likelihood.JointLikelihood`
(its default 160 iterations) or ``--method coherent``
:class:`lbdviewer.solvers.image.coherence.JointCoherentContrast` (up to 3000) instead,
against ``REV``'s sign consistency.

Usage: ``python scripts/bench_joint_ab.py REV [--descriptor brief|freak] [--image NAME] [--method consistency|likelihood|coherent]
[--rounds 3] [--chunk 10]``
(the first run for a commit compiles its kernels: about a minute).
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
RENAMED = "lbdviewer_rev"


def export_revision(rev):
    """The directory holding ``lbdviewer/`` as of ``rev`` as the package ``lbdviewer_rev`` (written once a commit)."""
    from lbdviewer.libraries.calibration.cache import cache_dir

    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--verify", f"{rev}^{{commit}}"], check=True,
                            capture_output=True, text=True).stdout.strip()
    directory = cache_dir() / "bench-joint-ab" / commit
    package = directory / RENAMED
    if not package.is_dir():
        directory.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", commit, "lbdviewer"], check=True,
                                 capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(directory)], input=archive, check=True)
        pattern = re.compile(r"\blbdviewer(?=[. ])")
        for path in (directory / "lbdviewer").rglob("*.py"):
            path.write_text(pattern.sub(RENAMED, path.read_text()))
        (directory / "lbdviewer").rename(package)
    return directory


def load_revision(rev):
    """The modules of ``lbdviewer`` as of ``rev`` (:func:`revision_modules` of ``lbdviewer_rev``), importable now."""
    directory = str(export_revision(rev))  # first: exporting may import modules that rebuild sys.path
    if directory not in sys.path:
        sys.path.insert(0, directory)
    importlib.invalidate_caches()
    return revision_modules(RENAMED)


def revision_modules(package):
    """The modules a joint solve needs, in the package layout of ``package`` (before or after the structure move)."""
    def load(name):
        return importlib.import_module(f"{package}.{name}")

    if importlib.util.find_spec(f"{package}.reconstruction") is not None:
        return {"patterns": load("patterns"), "reconstruct": load("reconstruction.image"),
                "sites": load("reconstruction.sites"), "bits": load("bits"), "joint": load("operators.joint.operator"),
                "whole_image": load("solvers.image.joint"), "coherence": "solvers.image.coherence",
                "likelihood": "solvers.image.likelihood"}
    return {"patterns": load("patterns"), "reconstruct": load("reconstruct"), "sites": load("sites"),
            "bits": load("operators"), "joint": load("joint"),
            "whole_image": load("solvers.whole_image") if importlib.util.find_spec(f"{package}.solvers.whole_image")
            else None, "coherence": "solvers.coherence", "likelihood": "solvers.whole_image"}


def make_solve(package, image, descriptor, method="consistency"):
    """A function returning a fresh joint sign-consistency generator of ``package`` on ``image``.

    Revisions before the solvers' ``whole_image`` module ran it as ``reconstruct.joint_consistency_steps``.
    """
    modules = revision_modules(package)
    reconstruct = modules["reconstruct"]
    sites = modules["sites"].grid_sites(image.shape, patch_size=32, offset=8)
    pattern = modules["patterns"].make_pattern(descriptor, patch_size=32, m=512)
    bits = reconstruct.describe_sites(image, sites, pattern)
    if bits.dtype == np.uint8:  # older revisions' describe_sites packed its bits
        bits = modules["bits"].unpack_bits(bits, pattern.m)
    operator = modules["joint"].JointOperator(image.shape, sites, pattern)
    whole_image = modules["whole_image"]
    if whole_image is None:
        return lambda: reconstruct.joint_consistency_steps(operator, bits)
    if method == "likelihood":
        iterations = reconstruct.DEFAULT_ITERATIONS[("joint", "likelihood")]
        likelihood = importlib.import_module(f"{package}.{modules['likelihood']}")
        return lambda: likelihood.JointLikelihood(operator, bits, sites, image.shape, iterations).steps()
    if method == "coherent":
        coherence = importlib.import_module(f"{package}.{modules['coherence']}")
        iterations = reconstruct.DEFAULT_ITERATIONS[("joint", "coherent")]
        return lambda: coherence.JointCoherentContrast(operator, bits, iterations=iterations).steps()

    def solve():  # the solver is built at the first step, so its set-up (orientation, regions) is timed too
        yield from whole_image.JointSignConsistency(operator, bits).steps()

    return solve


def interleave(solves, rounds, chunk):
    """Seconds of a whole solve of each, its iterations run ``chunk`` at a time in turn with the others'."""
    totals = {name: 0.0 for name in solves}
    for _ in range(rounds):
        running = {name: solve() for name, solve in solves.items()}
        while running:
            for name in list(running):
                started = time.perf_counter()
                for _ in range(chunk):
                    if next(running[name], None) is None:
                        del running[name]
                        break
                totals[name] += time.perf_counter() - started
    return {name: total / rounds for name, total in totals.items()}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("rev", help="git revision to compare the working tree with")
    parser.add_argument("--descriptor", default="brief", choices=("brief", "freak"))
    parser.add_argument("--image", default="camera", help="sample image name (default camera)")
    parser.add_argument("--method", default="consistency", choices=("consistency", "likelihood", "coherent"),
                        help="the working tree's joint solver (REV runs sign consistency)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--chunk", type=int, default=10, help="iterations run in a row (default 10)")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    from lbdviewer.io.samples import sample_image

    image = sample_image(args.image)
    sys.path.insert(0, str(export_revision(args.rev)))
    solves = {args.rev: make_solve(RENAMED, image, args.descriptor),
              "working tree": make_solve("lbdviewer", image, args.descriptor, args.method)}
    finals = {}
    for name, solve in solves.items():  # compile (a commit's first run) and warm up
        for state in solve():
            finals[name] = state.x
    identical = args.method == "consistency" and np.array_equal(*finals.values())
    seconds = interleave(solves, args.rounds, args.chunk)
    for name, value in seconds.items():
        method = args.method if name == "working tree" else "consistency"
        print(f"{name:>14}: {value:.3f} s a solve ({args.descriptor}, {args.image}, offset 8, {method})")
    print(f"working tree / {args.rev}: {seconds['working tree'] / seconds[args.rev]:.3f}  "
          f"bit-for-bit identical: {identical}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
