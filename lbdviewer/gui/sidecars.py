"""The run records written beside the app's exports, built from what ran.

Every export carries a :mod:`lbdviewer.evaluation.records` run record of what it shows:
the image it came from (with the SHA-256 of the bytes that were loaded), and
for reconstructions the run as the worker reported it
(:class:`~lbdviewer.gui.session.LiveRun`,
:class:`~lbdviewer.gui.session.WholeRun`): the solver the core actually ran,
the iterations it did, whether it stopped early at a fixed point, whether it
completed or was cancelled, its seconds and metrics. Nothing here reads the
parameter form: a run's parameters are the ones it started with, and where
the core reports what it used (``ImageResult.params``) those win.

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
    part used.
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
    record["shape"] = [int(s) for s in pixels.shape]
    record["pixels_sha256"] = records.pixels_sha256(pixels)
    record["crop"] = None if crop is None else [int(c) for c in crop]
    if session.features is not None:
        record["feature_file"] = session.features_source
        if source == session.features_source:
            record["kind"], record["pixels_sha256"] = "feature file (no pixels)", None
    return record


def _app_parameters(parameters, exclude=()):
    """The app's parameters the core does not report itself (family, seed, site rule, ...).

    The form's solver choices (``solver``, ``joint_solver``) are left out:
    the record's ``method`` is the solver that ran.
    """
    renamed = {("site_rule" if key == "sites" else key): value for key, value in parameters.items()}
    return {key: value for key, value in renamed.items()
            if key not in exclude and key not in ("solver", "joint_solver")}


def live_record(kind, session, *, display=None, extra=None):
    """The record of an export showing the live run (ended: completed, or stopped by the user)."""
    run = session.live
    if run is None or run.update is None or run.status == "running":
        raise ValueError("the live run must have ended (completed or stopped) to be exported")
    update = run.update
    p = run.parameters
    x, y = run.patch_xy
    parameters = {key: p[key] for key in ("family", "patch_size", "m", "seed", "binary", "iterations")}
    parameters["method"] = run.method
    parameters["sparsity" if run.method == "biht" else "lam"] = p["sparsity" if run.method == "biht" else "lam"]
    parameters["patch_xy"] = [x, y]
    quality = {"psnr": float(metrics.psnr(run.patch, update.estimate)),
               "correlation": float(metrics.correlation(run.patch, update.estimate))}
    solved = RanResult(run.method, "live patch", int(p["iterations"]), None, None, float(update.seconds))
    return records.run_record(
        kind, state=update.state, result=solved, status="completed" if run.status == "completed" else "cancelled",
        metrics=quality,
        source=source_record(session, crop=(y, x, run.patch.shape[0]), array=run.patch),
        parameters=parameters, display=display, extra={"stop": run.summary(), **(extra or {})})


def ran_result(run):
    """The :class:`RanResult` of a whole-image run that completed or was cancelled."""
    result = run.result
    if result is not None:
        return RanResult(result.method, result.mode, int(result.iterations), run.iterations_run,
                         result.solver_bit_consistency, float(result.seconds), dict(result.params))
    p = run.parameters
    params = {"mode": run.mode, "method": run.method, "iterations": run.iterations, "sites": run.site_count,
              "m": p["m"], "binary": p["binary"], "patch_size": [p["patch_size"]]}
    params["sparsity" if run.method == "biht" else "lam"] = p["sparsity" if run.method == "biht" else "lam"]
    return RanResult(run.method, run.mode, run.iterations, run.iterations_run, None, run.seconds, params)


def whole_record(kind, session, *, display=None, extra=None):
    """The record of an export showing the whole-image run (completed, or cancelled: then partial)."""
    run = session.whole
    if run is None or run.status not in ("completed", "cancelled"):
        raise ValueError("the whole-image run must have completed or been cancelled to be exported")
    ran = ran_result(run)
    return records.run_record(
        kind, result=ran, status=run.status, metrics=run.metrics or {}, source=source_record(session),
        parameters=_app_parameters(run.parameters, exclude=ran.params), display=display,
        extra={"current": not run.stale, "fraction_done": float(run.fraction),
               "what": "feature-file inversion" if run.features else "whole image", **(extra or {})})


def pattern_record(kind, session, *, display=None, extra=None):
    """The record of an export of the image or the pattern's panels (nothing solved)."""
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


def families_record(session, patch_xy, parameters, measurements, displays=None):
    """The record of the families figure: one patch reconstructed with each family's pattern.

    ``measurements`` maps each family to the M its pattern really had (the
    requested M within the family's limits).
    """
    x, y = patch_xy
    size = parameters["patch_size"]
    used = {key: parameters[key] for key in ("patch_size", "seed", "binary", "iterations")}
    used["method"] = parameters["solver"]
    used["m_by_family"] = dict(measurements)
    return records.run_record(
        "figure:families", source=source_record(session, crop=(y, x, size),
                                                array=session.image[y : y + size, x : x + size]),
        parameters=used, display=displays, extra={"families": list(measurements), "patch_xy": [x, y]})
