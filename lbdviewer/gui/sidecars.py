"""The records written beside the app's exports, built from what ran.

Every export carries a JSON record of what it shows: the image it came from
(with the SHA-256 of the file), the pattern, and for reconstructions the
run as the worker reported it (:class:`~lbdviewer.gui.session.LiveRun`,
:class:`~lbdviewer.gui.session.WholeRun`): the solver the core actually ran,
the iterations it did, whether it stopped early at a fixed point, whether it
completed or was cancelled, its seconds and metrics. Nothing here reads the
parameter form: a run's ``parameters`` are the ones it started with.

Qt-free; :func:`lbdviewer.io.save_json` writes the records as strict JSON.
"""

from __future__ import annotations

#: Version of the records' layout.
SCHEMA = "lbdviewer.app-export/1"
#: Panels that show the live run, and those that show the whole-image run.
LIVE_PANELS = ("live-original", "live-reconstruction")
WHOLE_PANELS = ("reconstruction",)


def image_record(session):
    """Where the document's pixels came from."""
    if session.image is None:
        return None
    return {"source": session.source, "sha256": session.sha256, "shape": list(session.image.shape),
            "feature_file": session.features_source}


def live_record(run):
    """The live solver's run: what it was started with and what it did."""
    if run is None:
        return None
    update = run.update
    return {
        "kind": "live patch",
        "status": run.status,
        "solver": run.method,
        "binary": run.parameters.get("binary"),
        "patch_xy": list(run.patch_xy),
        "iterations_budget": run.parameters.get("iterations"),
        "iterations_run": run.iterations_run,
        "stopped_early": None if update is None else bool(update.stopped_early),
        "stop_reason": None if update is None else update.stop_reason() or None,
        "bit_consistency": (None if update is None or update.bit_consistency is None
                            else float(update.bit_consistency[-1])),
        "objective": None if update is None or not len(update.objective) else float(update.objective[-1]),
        "seconds": None if update is None else float(update.seconds),
        "parameters": dict(run.parameters),
    }


def whole_record(run):
    """The whole-image run: solver and mode the core ran, iterations, status, metrics, seconds."""
    if run is None:
        return None
    result = run.result
    return {
        "kind": "feature-file inversion" if run.features else "whole image",
        "status": run.status,
        "current": not run.stale,
        "solver": run.method,
        "mode": run.mode,
        "sites": None if result is None else result.params.get("sites"),
        "iterations_budget": run.iterations,
        "iterations_run": run.iterations_run,
        "stopped_early": run.stopped_early,
        "fraction_done": float(run.fraction),
        "seconds": None if result is None else float(result.seconds),
        "solver_bit_consistency": None if result is None else result.solver_bit_consistency,
        "metrics": run.metrics,
        "source": run.source,
        "core_parameters": None if result is None else dict(result.params),
        "parameters": dict(run.parameters),
        "error": run.error,
    }


def _base(session, kind):
    return {
        "schema": SCHEMA,
        "export": kind,
        "image": image_record(session),
        "pattern": None if session.pattern is None else session.pattern.describe_params(),
    }


def panel_record(session, name, metadata):
    """The record of panel ``name`` (its canvas ``metadata`` says what it shows)."""
    record = {**_base(session, f"panel {name}"), "shown": dict(metadata)}
    if name in LIVE_PANELS:
        record["run"] = live_record(session.live)
    elif name in WHOLE_PANELS:
        record["run"] = whole_record(session.whole)
    return record


def figure_record(session, key, metadata):
    """The record of composed figure ``key``; ``metadata`` maps each panel to what it shows."""
    record = {**_base(session, f"figure {key}"), "shown": {name: dict(m) for name, m in metadata.items()}}
    if key == "live":
        record["run"] = live_record(session.live)
    elif key == "whole":
        record["run"] = whole_record(session.whole)
    return record


def families_record(session, parameters, families, display):
    """The record of the families figure: one patch reconstructed with each family."""
    return {**_base(session, "figure families"), "families": list(families), "parameters": dict(parameters),
            "display": display}
