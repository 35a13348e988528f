"""Generators the worker threads run: thin adapters from the core to the views.

Nothing here imports Qt or computes maths: each generator builds a core
object (a solver, a whole-image driver) inside the worker thread and turns its
snapshots into small records the main-thread slots can show. The records hold
copies, so they can cross threads safely.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

import numpy as np

from lbdviewer import io
from lbdviewer.evaluation import metrics
from lbdviewer.evaluation.display import display_original, display_stretch, uncovered_rule
from lbdviewer.io.files import file_sha256
from lbdviewer.io.limits import ResourceLimitError
from lbdviewer.operators.descriptor import DescriptorOperator
from lbdviewer.patterns.families import max_measurements, make_pattern
from lbdviewer.reconstruction.image import DEFAULT_ITERATIONS, default_method, describe_sites, iter_reconstruct_image
from lbdviewer.reconstruction.sites import fast_sites, grid_sites
from lbdviewer.solvers.patch.primal_dual import PrimalDualL1
from lbdviewer.solvers.patch.biht import BIHT


@dataclass(frozen=True)
class LoadedFile:
    """A file read on a worker thread: what it holds and where it came from.

    ``kind`` is ``"image"`` (``content``: float image (H, W) in [0, 1]) or
    ``"features"`` (``content``: :class:`lbdviewer.features.keypoints.FeatureSet`);
    ``source`` is the absolute path, or ``"sample:NAME"`` for a shipped
    sample; ``sha256`` is the hex digest of the file's bytes; ``start_xy``
    is where the patch selector starts on an image (:func:`textured_position`);
    ``preview`` is what views draw of a large image (:func:`make_preview`).
    """

    kind: str
    source: str
    content: object
    sha256: str
    start_xy: tuple | None = None
    preview: object = None


#: Images with a longer side than this are drawn from a block-mean preview.
PREVIEW_SIDE = 1024


@dataclass(frozen=True)
class Preview:
    """A smaller image to draw in place of a large one: each pixel the mean of a ``scale x scale`` block."""

    image: np.ndarray
    scale: int


def make_preview(image, max_side=PREVIEW_SIDE):
    """A :class:`Preview` of ``image`` no longer than ``max_side`` on either side, or None if it is small.

    Drawing a 9-Mpixel float image costs the GUI thread about 0.3 s per
    frame; a preview made here, on the worker thread, costs it almost nothing.
    Pixels beyond the last whole block are left out of the preview only.

    Examples
    --------
    >>> preview = make_preview(np.arange(36.0).reshape(6, 6), max_side=3)
    >>> preview.scale, preview.image.tolist()
    (2, [[3.5, 5.5, 7.5], [15.5, 17.5, 19.5], [27.5, 29.5, 31.5]])
    """
    scale = -(-max(image.shape) // max_side)
    if scale <= 1:
        return None
    rows, cols = image.shape[0] // scale, image.shape[1] // scale
    blocks = image[: rows * scale, : cols * scale].reshape(rows, scale, cols, scale)
    return Preview(blocks.mean(axis=(1, 3), dtype=np.float64).astype(np.float32), int(scale))


def textured_position(image, patch_size):
    """Top-left (x, y) of the non-overlapping patch with the widest grey range: a telling first patch.

    Examples
    --------
    >>> image = np.zeros((8, 8)); image[4:, 0:4] = np.eye(4)
    >>> textured_position(image, 4)
    (0, 4)
    """
    rows, cols = image.shape[0] // patch_size, image.shape[1] // patch_size
    blocks = image[: rows * patch_size, : cols * patch_size].reshape(rows, patch_size, cols, patch_size)
    spread = blocks.max(axis=(1, 3)) - blocks.min(axis=(1, 3))
    row, col = np.unravel_index(int(np.argmax(spread)), spread.shape)
    return int(col * patch_size), int(row * patch_size)


def load_file(path, kind="image", *, patch_size=32, feature_options=None):
    """Read an image (``kind="image"``) or a feature file (``"features"``); yield one :class:`LoadedFile`.

    A generator so that the worker layer can run it off the GUI thread; the
    core's loaders check the file (and its declared size) and raise
    ``ValueError`` naming the file and the reason. A size limit refused
    names the environment variable that raises it, the one way the app
    reads (:meth:`lbdviewer.io.limits.ResourceLimitError.app_message`).
    Everything that scales with the image (decoding, hashing, finding the
    first patch) happens here. ``feature_options`` are those of
    :func:`lbdviewer.features.files.load_features` (entry, descriptor,
    image size: what :mod:`lbdviewer.gui.feature_choice` asked).
    """
    try:
        if kind == "image":
            content = io.load_image(path)
            start = textured_position(content, patch_size) if min(content.shape) >= patch_size else (0, 0)
            preview = make_preview(content)
        elif kind == "features":
            from lbdviewer.features.files import load_features

            content, start, preview = load_features(path, **(feature_options or {})), None, None
        else:
            raise ValueError(f"kind must be 'image' or 'features', got {kind!r}")
    except ResourceLimitError as error:
        raise ResourceLimitError(error.app_message()) from None
    yield LoadedFile(kind, os.path.abspath(path), content, file_sha256(path), start, preview)


def load_sample(name, *, patch_size=32):
    """Read the shipped sample ``name``; yield one :class:`LoadedFile` (source ``"sample:NAME"``)."""
    samples = io.sample_images()
    if name not in samples:
        raise ValueError(f"name must be one of {sorted(samples)}, got {name!r}")
    try:
        image = io.load_image(samples[name])
    except ResourceLimitError as error:
        raise ResourceLimitError(error.app_message()) from None
    yield LoadedFile("image", f"sample:{name}", image, file_sha256(samples[name]), textured_position(image, patch_size))


@dataclass(frozen=True)
class LiveUpdate:
    """One snapshot of the live patch solver, with its history so far.

    ``iterations`` is the budget; ``stopped_early`` is True on a last
    snapshot that came before the budget was spent (the estimate reached a
    fixed point); ``seconds`` counts solver time only (not pauses);
    ``state`` is the solver's own snapshot (:class:`~lbdviewer.solvers.state.SolverState`).
    """

    iteration: int
    estimate: np.ndarray
    objective: np.ndarray
    bit_consistency: np.ndarray | None
    finished: bool
    iterations: int = 0
    stopped_early: bool = False
    seconds: float = 0.0
    state: object = None

    def stop_reason(self):
        """Why a finished run ended, in words (empty while it runs).

        Examples
        --------
        >>> u = LiveUpdate(14, np.zeros((2, 2)), np.zeros(14), np.ones(14), True, 200, True)
        >>> u.stop_reason()
        'stopped at iteration 14: all bits consistent'
        """
        if not self.finished:
            return ""
        if not self.stopped_early:
            return f"done: {self.iteration} iterations"
        if self.bit_consistency is not None and self.bit_consistency[-1] == 1.0:
            return f"stopped at iteration {self.iteration}: all bits consistent"
        return f"stopped at iteration {self.iteration}: fixed point (the estimate no longer changes)"


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


def live_updates(operator, patch, parameters):
    """Describe ``patch``, run the solver on its descriptor and yield a :class:`LiveUpdate` per iteration.

    Parameters
    ----------
    operator : DescriptorOperator
    patch : ndarray, shape (P, P)
        The patch, P the operator's patch size.
    parameters : dict
        :meth:`lbdviewer.gui.model.Parameters.as_dict`.
    """
    data = operator.describe(np.asarray(patch)[None], binary=parameters["binary"])
    yield from solver_updates(operator, data, parameters)


def solver_updates(operator, data, parameters):
    """Run the solver the parameters ask for on one descriptor ``data`` (1, M); yield a :class:`LiveUpdate` per iteration."""
    solver = make_solver(operator, data, parameters)
    objective, consistency = [], []
    seconds = 0.0
    steps = solver.steps()
    while True:
        started = time.perf_counter()
        state = next(steps, None)
        seconds += time.perf_counter() - started
        if state is None:
            return
        objective.append(float(state.objective[0]))
        if state.bit_consistency is not None:
            consistency.append(float(state.bit_consistency[0]))
        yield LiveUpdate(
            iteration=int(state.iteration),
            estimate=np.array(state.x[0]),
            objective=np.array(objective),
            bit_consistency=np.array(consistency) if consistency else None,
            finished=bool(state.finished),
            iterations=int(parameters["iterations"]),
            stopped_early=bool(state.finished) and int(state.iteration) < int(parameters["iterations"]),
            seconds=seconds,
            state=state,
        )


@dataclass(frozen=True)
class FamilySolve:
    """One family's solve of the families figure: what it measured and how its solver ended.

    ``m`` is the number of measurements the family's pattern really has
    (EX-FREAK always uses its 903 pairs); ``state`` the solver's final
    :class:`~lbdviewer.solvers.state.SolverState`; ``seconds`` its time.
    """

    family: str
    m: int
    method: str
    iterations: int
    estimate: np.ndarray
    state: object
    seconds: float


def family_patches(patch, parameters, families):
    """Reconstruct one patch with several descriptor families (for the families figure); yield a :class:`FamilySolve` each."""
    for family in families:
        pattern = pattern_for(parameters, family=family)
        operator = DescriptorOperator(pattern)
        data = operator.describe(patch[None], binary=parameters["binary"])
        started = time.perf_counter()
        state = make_solver(operator, data, parameters).run()
        yield FamilySolve(family, int(pattern.m), parameters["solver"], int(parameters["iterations"]),
                          np.array(state.x[0]), state, time.perf_counter() - started)


@dataclass(frozen=True)
class WholeUpdate:
    """Progress of a whole-image reconstruction.

    ``fraction`` of the work is done; ``image`` is the current estimate when
    the core gives one; ``result`` (an :class:`lbdviewer.reconstruction.image.ImageResult`)
    arrives with the last updates only; ``metrics`` (against the original,
    when there is one) come with the very last, after an update that has
    the result and ``metrics_pending`` set (the metrics of a large image take
    seconds; the job can be stopped between); ``iterations_run`` counts the
    whole-image solver's iterations so far (None for patchwise runs, whose
    patches each run their own); ``stage`` names the phase (``"describing"``,
    ``"solving"``, ``"metrics"``); ``shown`` is the latest estimate mapped to
    grey levels by the display rule (:func:`with_display`, on the worker).
    """

    fraction: float
    image: np.ndarray | None
    result: object = None
    metrics: dict | None = None
    iterations_run: int | None = None
    metrics_pending: bool = False
    stage: str = "solving"
    shown: object = None


def metrics_updates(original, result):
    """Compute :func:`result_metrics` on a worker; yield them (the app's metrics never run on the GUI thread)."""
    yield result_metrics(original, result)


def result_metrics(original, result):
    """Quality of a whole-image result against its original (run on a worker thread).

    :func:`lbdviewer.evaluation.metrics.image_metrics` over the covered pixels,
    and the share of input bits the solver reproduces (None for real values).
    """
    covered = None if result.covered.all() else result.covered
    return {**metrics.image_metrics(original, result.image, mask=covered),
            "bit_consistency": result.solver_bit_consistency}


def image_sites(image, parameters):
    """Top-left ``(row, col)`` of the whole-image patches: a grid with offset or FAST keypoints."""
    if parameters["sites"] == "grid":
        return grid_sites(image.shape, patch_size=parameters["patch_size"], offset=parameters["offset"])
    sites, _ = fast_sites(image, patch_size=parameters["patch_size"])
    return sites


def whole_image_method(parameters):
    """The whole image's solver: the live solver, but the chosen joint solver for a joint solve of bits.

    Examples
    --------
    >>> p = {"mode": "joint", "binary": True, "solver": "biht", "joint_solver": "coherent"}
    >>> whole_image_method(p), whole_image_method({**p, "mode": "patches"})
    ('coherent', 'biht')
    """
    if parameters["mode"] == "joint" and parameters["binary"]:
        return parameters.get("joint_solver", default_method("joint", True))
    return parameters["solver"]


def whole_image_iterations(parameters):
    """The live solver's iteration count, or None (the whole-image solver's own default) when that differs.

    Examples
    --------
    >>> p = {"mode": "joint", "binary": True, "solver": "biht", "joint_solver": "coherent", "iterations": 40}
    >>> whole_image_iterations(p), whole_image_iterations({**p, "mode": "patches"})
    (None, 40)
    """
    if whole_image_method(parameters) != parameters["solver"]:
        return None
    return parameters["iterations"]


def whole_image_budget(parameters):
    """The iterations the whole-image solver is given: :func:`whole_image_iterations`, or its method's default.

    Examples
    --------
    >>> whole_image_budget({"mode": "joint", "binary": True, "solver": "biht", "joint_solver": "coherent",
    ...                     "iterations": 40})
    3000
    """
    iterations = whole_image_iterations(parameters)
    if iterations is None:
        return DEFAULT_ITERATIONS[(parameters["mode"], whole_image_method(parameters))]
    return iterations


#: Sites described between two progress reports of the describing phase (a point where the job can stop).
DESCRIBE_CHUNK = 2048
#: Share of a whole-image run's progress bar the describing phase takes.
DESCRIBE_SHARE = 0.1


def whole_image_updates(image, pattern, sites, parameters, *, chunk=64):
    """Describe ``image`` at ``sites`` and invert it with the core, yielding :class:`WholeUpdate`.

    The sites are described :data:`DESCRIBE_CHUNK` at a time and ``chunk``
    patches are solved between two updates in patchwise mode: each update is
    a point where the job can be cancelled. The metrics against ``image``
    come last (see :class:`WholeUpdate`).
    """
    sites = np.asarray(sites)
    parts = []
    for start in range(0, len(sites), DESCRIBE_CHUNK):
        parts.append(describe_sites(image, sites[start:start + DESCRIBE_CHUNK], pattern, binary=parameters["binary"],
                                    packed=parameters["binary"]))
        yield WholeUpdate(DESCRIBE_SHARE * min(start + DESCRIBE_CHUNK, len(sites)) / len(sites), None,
                          stage="describing")
    descriptors = np.concatenate(parts)
    iterations_run = None
    for progress in iter_reconstruct_image(
        descriptors, sites, pattern, shape=image.shape, mode=parameters["mode"],
        method=whole_image_method(parameters), iterations=whole_image_iterations(parameters),
        sparsity=parameters["sparsity"], lam=parameters["lam"], chunk=chunk,
    ):
        estimate = None if progress.estimate is None else np.array(progress.estimate)
        if progress.result is None:
            if parameters["mode"] == "joint":  # the joint solver reports iterations done
                iterations_run = progress.done
            fraction = DESCRIBE_SHARE + (1 - DESCRIBE_SHARE) * progress.done / max(progress.total, 1)
            yield WholeUpdate(fraction, estimate, iterations_run=iterations_run)
        else:
            yield from _with_metrics(image, progress.result, iterations_run)


def _with_metrics(original, result, iterations_run):
    """The result, then the result with its metrics against ``original`` (two points where a job can stop)."""
    yield WholeUpdate(1.0, result.image, result, None, iterations_run, metrics_pending=True, stage="metrics")
    yield WholeUpdate(1.0, result.image, result, result_metrics(original, result), iterations_run)


def feature_updates(features, parameters, *, original=None):
    """Invert a feature file's bits with the core, yielding :class:`WholeUpdate`.

    Uses :func:`lbdviewer.features.invert.iter_invert_features` in the
    parameters' whole-image ``mode`` with their ``iterations`` and
    ``sparsity``: it reports every iteration and every stage of its set-up,
    so each update is a point where the job can be cancelled, but hands out
    an estimate only now and then. Every update carries the latest estimate
    (the same array until a new one comes), so whichever update the throttle
    lets through shows it. With ``original`` (the image the features were
    extracted from) the metrics come last, as for an image.
    """
    from lbdviewer.features.invert import iter_invert_features

    image = None
    for progress in iter_invert_features(features, mode=parameters["mode"], iterations=parameters["iterations"],
                                         sparsity=parameters["sparsity"]):
        if progress.image is not None:
            image = np.array(progress.image)
        if progress.result is None:
            yield WholeUpdate(progress.done / max(progress.total, 1), image, None, None, progress.iterations_run)
        elif original is None:
            yield WholeUpdate(1.0, image, progress.result, None, progress.iterations_run)
        else:
            yield from _with_metrics(original, progress.result, progress.iterations_run)


#: A running whole-image estimate is mapped for display at most this often (seconds): the fitted stretch of a
#: 512x512 estimate costs 35-60 ms, done on the worker so the window only draws it.
DISPLAY_SECONDS = 0.5


@dataclass
class DisplayChoice:
    """The views' display rule (View > Stretch), read by the workers that prepare what is drawn.

    ``stretch`` True maps an estimate by :func:`lbdviewer.evaluation.display.display_stretch`
    (fitted to the original when there is one, else percentiles); False shows it as solved.
    A result that records what its uncovered pixels hold (a feature file's
    inversion: ``params["uncovered"]``) shows them at the covered median,
    as it holds them (:func:`lbdviewer.evaluation.display.uncovered_rule`); View's "uncovered" tints them.
    """

    stretch: bool = True

    def apply(self, estimate, *, reference=None, mask=None, uncovered="black"):
        """The :class:`~lbdviewer.evaluation.display.Stretched` of ``estimate`` by this rule."""
        if self.stretch:
            return display_stretch(estimate, mask=mask, reference=reference, uncovered=uncovered)
        return display_original(estimate)


def with_display(items, choice, *, reference=None, mode="joint", every=DISPLAY_SECONDS, clock=time.monotonic):
    """Attach to whole-image updates their estimate mapped for display, computed here, on the worker.

    An estimate is mapped at most every ``every`` seconds while the run goes
    on, and always the result's (over its covered pixels); every update
    carries the latest mapping, so whichever one a throttle lets through
    shows it. A patchwise estimate's pixels no solved patch has reached yet
    are exactly 0 and left out of the fit.

    Examples
    --------
    >>> items = [WholeUpdate(0.5, np.eye(4)), WholeUpdate(0.6, np.eye(4) * 2)]
    >>> shown = [u.shown for u in with_display(iter(items), DisplayChoice(stretch=False), every=60.0)]
    >>> shown[0] is shown[1], shown[0].record()["rule"]
    (True, 'none')
    """
    shown, mapped, at = None, None, -np.inf
    for update in items:
        result = update.result
        image = result.image if result is not None else update.image
        due = result is not None or clock() - at >= every
        if image is not None and image is not mapped and due:
            if result is not None:
                mask = result.covered
            else:
                mask = image != 0 if mode == "patches" else None
            shown = choice.apply(image, reference=reference, mask=mask, uncovered=uncovered_rule(result))
            mapped, at = image, clock()
        yield WholeUpdate(update.fraction, update.image, result, update.metrics, update.iterations_run,
                          update.metrics_pending, update.stage, shown)
