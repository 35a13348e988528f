"""Generators the worker threads run: thin adapters from the core to the views.

Nothing here imports Qt or computes maths: each generator builds a core
object (a solver, a whole-image driver) inside the worker thread and turns its
snapshots into small records the main-thread slots can show. The records hold
copies, so they can cross threads safely.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lbdviewer.operators import DescriptorOperator
from lbdviewer.patterns import max_measurements, make_pattern
from lbdviewer.reconstruct import default_method, describe_sites, iter_reconstruct_image
from lbdviewer.sites import fast_sites, grid_sites
from lbdviewer.solvers import BIHT, PrimalDualL1


@dataclass(frozen=True)
class LiveUpdate:
    """One snapshot of the live patch solver, with its history so far."""

    iteration: int
    estimate: np.ndarray
    objective: np.ndarray
    bit_consistency: np.ndarray | None
    finished: bool


def pattern_for(parameters, *, family=None):
    """The pattern of ``family`` (default: the parameters' own) at the parameters' P, M and seed.

    ``m`` is clamped to the family's maximum, so a figure comparing families
    can use one M for all of them.
    """
    family = parameters["family"] if family is None else family
    m = min(parameters["m"], max_measurements(family, parameters["patch_size"]))
    return make_pattern(family, patch_size=parameters["patch_size"], m=m, rng=parameters["seed"])


def make_solver(operator, data, parameters):
    """The solver the parameters ask for, on a batch of descriptors ``data`` (B, M)."""
    if parameters["solver"] == "biht":
        return BIHT(operator, data, sparsity=parameters["sparsity"], iterations=parameters["iterations"])
    return PrimalDualL1(operator, data, lam=parameters["lam"], iterations=parameters["iterations"])


def live_updates(operator, data, parameters):
    """Run the solver on one descriptor and yield a :class:`LiveUpdate` per iteration.

    Parameters
    ----------
    operator : DescriptorOperator
    data : ndarray, shape (1, M)
        Bits in {-1, +1} or real measurements.
    parameters : dict
        :meth:`lbdviewer.gui.model.Parameters.as_dict`.
    """
    solver = make_solver(operator, data, parameters)
    objective, consistency = [], []
    for state in solver.steps():
        objective.append(float(state.objective[0]))
        if state.bit_consistency is not None:
            consistency.append(float(state.bit_consistency[0]))
        yield LiveUpdate(
            iteration=int(state.iteration),
            estimate=np.array(state.x[0]),
            objective=np.array(objective),
            bit_consistency=np.array(consistency) if consistency else None,
            finished=bool(state.finished),
        )


def family_patches(patch, parameters, families):
    """Reconstruct one patch with several descriptor families (for a composed figure).

    Yields ``(family, estimate)`` pairs, one per family, in order.
    """
    for family in families:
        operator = DescriptorOperator(pattern_for(parameters, family=family))
        data = operator.describe(patch[None], binary=parameters["binary"])
        state = make_solver(operator, data, parameters).run()
        yield family, np.array(state.x[0])


@dataclass(frozen=True)
class WholeUpdate:
    """Progress of a whole-image reconstruction.

    ``fraction`` of the work is done; ``image`` is the current estimate when
    the core gives one; ``result`` (an :class:`lbdviewer.reconstruct.ImageResult`)
    arrives with the last update only.
    """

    fraction: float
    image: np.ndarray | None
    result: object = None


def image_sites(image, parameters):
    """Top-left ``(row, col)`` of the whole-image patches: a grid with offset or FAST keypoints."""
    if parameters["sites"] == "grid":
        return grid_sites(image.shape, patch_size=parameters["patch_size"], offset=parameters["offset"])
    sites, _ = fast_sites(image, patch_size=parameters["patch_size"])
    return sites


def whole_image_method(parameters):
    """The whole image's solver: the live solver, but sign consistency for a joint solve of bits."""
    if parameters["mode"] == "joint" and parameters["binary"]:
        return default_method("joint", True)
    return parameters["solver"]


def whole_image_iterations(parameters):
    """The live solver's iteration count, or the joint solver's own default when that differs."""
    if whole_image_method(parameters) != parameters["solver"]:
        return None
    return parameters["iterations"]


def whole_image_updates(image, pattern, sites, parameters, *, chunk=64):
    """Describe ``image`` at ``sites`` and invert it with the core, yielding :class:`WholeUpdate`.

    ``chunk`` patches are solved between two updates in patchwise mode (each
    update is also a point where the job can be cancelled).
    """
    descriptors = describe_sites(image, sites, pattern, binary=parameters["binary"])
    for progress in iter_reconstruct_image(
        descriptors, sites, pattern, shape=image.shape, mode=parameters["mode"],
        method=whole_image_method(parameters), iterations=whole_image_iterations(parameters),
        sparsity=parameters["sparsity"], lam=parameters["lam"], chunk=chunk,
    ):
        yield WholeUpdate(progress.done / max(progress.total, 1),
                          None if progress.estimate is None else np.array(progress.estimate),
                          progress.result)


def feature_updates(features, parameters):
    """Invert a feature file's bits with the core, yielding :class:`WholeUpdate`.

    Uses :func:`lbdviewer.inversion.iter_invert_features` (progress and the
    estimate so far; each update is a point where the job can be cancelled).
    """
    from lbdviewer.inversion import iter_invert_features

    for progress in iter_invert_features(features, iterations=parameters["iterations"],
                                         sparsity=parameters["sparsity"]):
        yield WholeUpdate(progress.done / max(progress.total, 1),
                          None if progress.image is None else np.array(progress.image), progress.result)
