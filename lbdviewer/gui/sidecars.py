"""The run records written beside the app's exports, built from what ran.

Every export carries a :mod:`lbdviewer.evaluation.records` run record of what it shows:
the image it came from (with the SHA-256 of the bytes that were loaded), and
for reconstructions the run as the worker reported it
(:class:`~lbdviewer.gui.session.LiveRun`,
:class:`~lbdviewer.gui.session.WholeRun`): the solver the core actually ran,
the iterations it did, whether it stopped early at a fixed point, whether it
completed or was cancelled, its seconds and metrics. Nothing here reads the
parameter form: a run's parameters are the ones it started with, and where
the core reports what it used (``ImageResult.params``) those win. A run of a
library descriptor or a feature file records only what its inversion used
(the core's parameters, the descriptor's own, the keypoint): none of the
form's pattern parameters (family, M, patch size, offset, seed), which played
no part in it.

Qt-free; :func:`lbdviewer.evaluation.records.write_sidecar` writes the records as strict JSON.

Examples
--------
>>> import numpy as np
>>> from lbdviewer.gui.session import Session
>>> from lbdviewer.gui.model import Parameters
>>> session = Session()
>>> session.set_image(np.full((24, 24), 0.5), "sample:flat", sha256="ab" * 32)
>>> session.rebuild(Parameters(patch_size=16, m=32).as_dict())
>>> record = panel_record(session, "weight-map", {"display": None})
>>> record["kind"], record["solver"], record["source"]["sha256"] == "ab" * 32
('panel:weight-map', None, True)
>>> whole_record("figure:whole", session)
Traceback (most recent call last):
...
ValueError: the whole-image run must have completed or been cancelled to be exported
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np

from lbdviewer.evaluation import metrics, records

#: Panels that show the live run, and those that show the whole-image run.
LIVE_PANELS = ("live-original", "live-reconstruction")
WHOLE_PANELS = ("reconstruction",)


@dataclass(frozen=True)
class RanResult:
    """What a whole-image run did, in the attributes :func:`lbdviewer.evaluation.records.solver_record` reads.

    Completed whole-image runs take everything from the core's
    ``ImageResult`` and add the iterations the whole-image solver ran;
    cancelled runs have the solver, mode and budget they started with and
    the iterations done before the cancel. A live run has its solver and
    budget here, its iterations in its final ``SolverState``.
    """

    method: str
    mode: str
    iterations: int | None
    iterations_run: int | None
    solver_bit_consistency: float | None
    seconds: float | None
    params: dict = field(default_factory=dict)


def source_record(session, *, crop=None, array=None):
    """Where the document's pixels came from: the file's SHA-256 as loaded, and the pixels' own.

    Same keys as :func:`lbdviewer.evaluation.records.image_source`; the file hash is the
    one taken when the file was read (a file changed on disk since is not
    re-read). ``array`` (default: the whole image) and ``crop`` describe the
    part used. With a feature file open: ``feature_file`` (its path, SHA-256
    and the image SHA-256 it records) and ``pairing`` (``"original"``,
    ``"compared"``, or None when only the file is open: then no pixels).
    """
    if session.image is None:
        return None
    source = session.source
    if source.startswith("sample:"):
        name = source.split(":", 1)[1]
        record = {"kind": "sample", "name": name, "path": None, "sha256": session.sha256}
    else:
        record = {"kind": "file", "name": os.path.basename(source), "path": source, "sha256": session.sha256}
    pixels = session.image if array is None else array
    record["shape"] = [int(s) for s in np.shape(pixels)]
    record["pixels_sha256"] = records.pixels_sha256(pixels)
    record["crop"] = None if crop is None else [int(c) for c in crop]
    if session.mode == "features":
        record["feature_file"] = {"path": session.features_source, "sha256": session.features_sha256,
                                  "image_sha256_recorded": session.features.image_sha256}
        record["pairing"] = session.pairing
        if not session.has_pixels:
            record["kind"], record["pixels_sha256"] = "feature file (no pixels)", None
    return record


def _app_parameters(parameters, exclude=()):
    """The app's parameters the core does not report itself (family, seed, site rule, ...).

    The form's solver choices (``solver``, ``joint_solver``) are left out:
    the record's ``method`` is the solver that ran; so are the keypoints
    asked of a library's detector (the paper's patterns detect none).
    """
    renamed = {("site_rule" if key == "sites" else key): value for key, value in parameters.items()}
    return {key: value for key, value in renamed.items()
            if key not in exclude and key not in ("solver", "joint_solver", "keypoints")}


def _features_of(session):
    """The features a library or feature-file run inverted (the file's, or the library's description)."""
    return session.keypoint_features


def _descriptor_parameters(session, kind):
    """What a library or feature-file run used beyond the core's parameters: the descriptor's own."""
    features = _features_of(session)
    used = {"descriptor_params": features.model_params(), "library": features.params.get("library")}
    if kind == "library":
        used["keypoints_requested"] = session.library.keypoints_requested
    return used


def _solver_choice(parameters, method):
    """The solver's own setting the run used: K for BIHT, lambda for primal-dual."""
    key = "sparsity" if method == "biht" else "lam"
    return {key: parameters[key]}


def live_record(kind, session, *, display=None, extra=None):
    """The record of an export showing the live run (ended: completed, or stopped by the user)."""
    run = session.live
    if run is None or run.update is None or run.status == "running":
        raise ValueError("the live run must have ended (completed or stopped) to be exported")
    update = run.update
    p = run.parameters
    if run.keypoint is None:
        x, y = run.patch_xy
        parameters = {key: p[key] for key in ("family", "patch_size", "m", "seed", "binary", "iterations")}
        source = source_record(session, crop=(y, x, run.patch.shape[0]), array=run.patch)
        where = {"patch_xy": [x, y]}
    else:  # a library's or a file's keypoint: its own pattern and bits, none of the form's pattern
        view = run.keypoint
        parameters = {"descriptor": view.descriptor, "m": view.m, "binary": True, "iterations": p["iterations"],
                      "keypoint": view.record(), "descriptor_params": _features_of(session).model_params()}
        source = source_record(session, array=run.patch) if run.patch is not None else source_record(session)
        where = {}  # the keypoint's record says where
    parameters["method"] = run.method
    parameters.update(_solver_choice(p, run.method))
    quality = {}
    if run.patch is not None:
        quality = {"psnr": float(metrics.psnr(run.patch, update.estimate)),
                   "correlation": float(metrics.correlation(run.patch, update.estimate))}
    solved = RanResult(run.method, "live patch", int(p["iterations"]), None, None, float(update.seconds))
    return records.run_record(
        kind, state=update.state, result=solved, status="completed" if run.status == "completed" else "cancelled",
        metrics=quality, source=source, parameters={**parameters, **where}, display=display,
        extra={"stop": run.summary(), **(extra or {})})


def ran_result(run):
    """The :class:`RanResult` of a whole-image run that completed or was cancelled."""
    result = run.result
    if result is not None:
        return RanResult(result.method, result.mode, int(result.iterations), run.iterations_run,
                         result.solver_bit_consistency, float(result.seconds), dict(result.params))
    p = run.parameters
    params = {"mode": run.mode, "method": run.method, "iterations": run.iterations}
    if run.features:
        params.update({"descriptor": run.descriptor, "keypoints": run.site_count})
        if run.method == "biht":
            params["sparsity"] = p["sparsity"]
    else:
        params.update({"sites": run.site_count, "m": p["m"], "binary": p["binary"], "patch_size": [p["patch_size"]]})
        params.update(_solver_choice(p, run.method) if run.method in ("biht", "primal-dual") else {})
    return RanResult(run.method, run.mode, run.iterations, run.iterations_run, None, run.seconds, params)


def whole_record(kind, session, *, display=None, extra=None):
    """The record of an export showing the whole-image run (completed, or cancelled: then partial).

    A library's or a feature file's run records only what its inversion
    used; the paper's patterns record the app's parameters too (family,
    seed, sites, ...), which the core does not report itself.
    """
    run = session.whole
    if run is None or run.status not in ("completed", "cancelled"):
        raise ValueError("the whole-image run must have completed or been cancelled to be exported")
    ran = ran_result(run)
    if run.features:
        parameters = _descriptor_parameters(session, run.kind)
    else:
        parameters = _app_parameters(run.parameters, exclude=ran.params)
    what = {"pattern": "whole image", "library": "library features of the image (extract + invert)",
            "features": "feature-file inversion"}[run.kind]
    return records.run_record(
        kind, result=ran, status=run.status, metrics=run.metrics or {}, source=source_record(session),
        parameters=parameters, display=display,
        extra={"current": not run.stale, "fraction_done": float(run.fraction), "what": what,
               "compared_with": run.compared_with, **(extra or {})})


def pattern_record(kind, session, *, display=None, extra=None):
    """The record of an export of the image or the pattern's panels (nothing solved)."""
    view = session.keypoint_view if session.keypoint_mode else None
    if view is not None:
        parameters = {"descriptor": view.descriptor, "m": view.m, "keypoint": view.record(),
                      "descriptor_params": _features_of(session).model_params(),
                      "pattern": None if view.pattern is None else view.pattern.describe_params()}
    else:
        parameters = {"pattern": None if session.pattern is None else session.pattern.describe_params()}
    return records.run_record(kind, source=source_record(session), parameters=parameters, display=display,
                              extra=extra)


def panel_record(session, name, metadata):
    """The record of panel ``name``; ``metadata`` (what its canvas shows) goes under ``extra["shown"]``."""
    display = metadata.get("display")
    extra = {"shown": {key: value for key, value in metadata.items() if key != "display"}}
    if name in LIVE_PANELS:
        return live_record(f"panel:{name}", session, display=display, extra=extra)
    if name in WHOLE_PANELS:
        return whole_record(f"panel:{name}", session, display=display, extra=extra)
    return pattern_record(f"panel:{name}", session, display=display, extra=extra)


def figure_record(session, key, *, extra=None):
    """The record of figure ``key`` made by the figure engine (which adds how it displays each panel)."""
    if key == "live":
        return live_record(f"figure:{key}", session, extra=extra)
    if key == "whole":
        return whole_record(f"figure:{key}", session, extra=extra)
    return pattern_record(f"figure:{key}", session, extra=extra)


@dataclass(frozen=True)
class _Solves:
    """The families' final states as one batch (the rows :func:`lbdviewer.evaluation.records.solver_record` counts)."""

    iteration: int
    iterations_run: np.ndarray
    bit_consistency: np.ndarray | None


def families_record(session, patch_xy, parameters, solves, displays=None):
    """The record of the families figure: one patch reconstructed with each family's pattern.

    ``solves`` are the :class:`~lbdviewer.gui.jobs.FamilySolve` of each
    family, in order: the record's ``solver`` counts them as a batch (rows,
    how many stopped early, mean bit consistency) and ``extra["solves"]``
    gives each one's solver, iterations run, stop reason, bit consistency
    and seconds.
    """
    x, y = patch_xy
    size = parameters["patch_size"]
    used = {key: parameters[key] for key in ("patch_size", "seed", "binary", "iterations")}
    used["method"] = parameters["solver"]
    used.update(_solver_choice(parameters, parameters["solver"]))
    used["m_by_family"] = {solve.family: solve.m for solve in solves}
    each = {}
    for solve in solves:
        solver = records.solver_record(state=solve.state, iterations_requested=solve.iterations)
        each[solve.family] = {"method": solve.method, "m": solve.m, "iterations_requested": solve.iterations,
                              "iterations_run": solver["iterations_run"], "stopped_early": solver["stopped_early"],
                              "stop_reason": solver["stop_reason"], "bit_consistency": solver["bit_consistency"],
                              "seconds": float(solve.seconds)}
    consistency = [solve.state.bit_consistency for solve in solves]
    batch = _Solves(max(int(solve.state.iteration) for solve in solves),
                    np.concatenate([np.atleast_1d(solve.state.iterations_run) for solve in solves]),
                    None if any(c is None for c in consistency) else np.concatenate(
                        [np.atleast_1d(c) for c in consistency]))
    ran = RanResult(parameters["solver"], "live patch (one per family)", int(parameters["iterations"]), None, None,
                    float(sum(solve.seconds for solve in solves)))
    return records.run_record(
        "figure:families", state=batch, result=ran,
        source=source_record(session, crop=(y, x, size), array=session.image[y : y + size, x : x + size]),
        parameters=used, display=displays,
        extra={"families": [solve.family for solve in solves], "patch_xy": [x, y], "solves": each})
