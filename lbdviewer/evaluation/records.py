"""The run record: the JSON written beside every figure and export, built from what ran.

A record is made from the objects a run leaves behind — the solver's final
:class:`~lbdviewer.solvers.state.SolverState`, the
:class:`~lbdviewer.reconstruction.image.ImageResult` (or any object with the same
attributes), the parameters the run actually used — never from a form's
pending values. One versioned schema serves the app's exports and
``lbdviewer figures``; it is written as strict JSON (NaN and infinities become
``null`` with their reason under ``"undefined"``, :func:`lbdviewer.io.strict_json.save_json`).

Schema ``lbdviewer.run-record`` version 1 (keys of the top-level object):

================  ==========================================================
``schema``        ``"lbdviewer.run-record"``
``version``       ``1``
``kind``          what was exported (``"figure:offsets"``, ``"panel:live"``, ...)
``status``        ``"completed"`` or ``"cancelled"``
``solver``        ``method`` and ``mode`` actually run, ``iterations_requested``,
                  ``iterations_run``, ``stopped_early`` (fewer iterations than
                  requested: a fixed point or convergence), ``stop_reason``,
                  ``rows``/``rows_stopped_early`` for a batch of patches,
                  ``bit_consistency`` (None for real-valued runs); ``null``
                  when nothing was solved (a pattern or a map). A figure of
                  several runs has one :func:`panel_record` per panel in
                  ``extra.panels`` (its solver, metrics, seconds); its
                  ``solver`` reads them as the rows of one batch when they
                  ran one method and mode (:func:`batch_solver_record`), and
                  is ``null`` when they did not
``seconds``       wall-clock time of the run (None if not timed)
``metrics``       quality metrics against the original (may be empty)
``source``        the image: ``name``, ``path``, ``sha256`` of the file,
                  ``pixels_sha256`` of the array used, ``shape``, ``crop``
``parameters``    the parameters the run used (a joint solve's ``solver_settings``:
                  what its solver ran with beyond the method's name)
``display``       the display stretch (:meth:`lbdviewer.evaluation.display.Stretched.record`),
                  or a dict of them per panel
``versions``      :func:`lbdviewer._runtime.versions.library_versions` plus matplotlib
``created``       UTC time the record was made (ISO 8601)
``extra``         anything else the caller adds (panel layout, notes)
================  ==========================================================
"""

from __future__ import annotations

import hashlib
import json
import os
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path

import numpy as np

from lbdviewer._runtime.versions import library_versions
from lbdviewer.io.files import file_sha256
from lbdviewer.io.samples import sample_images
from lbdviewer.io.strict_json import save_json

SCHEMA = "lbdviewer.run-record"
SCHEMA_VERSION = 1
STATUSES = ("completed", "cancelled")
#: Top-level keys every record has, in the order :func:`run_record` writes them.
KEYS = ("schema", "version", "kind", "status", "solver", "seconds", "metrics", "source", "parameters",
        "display", "versions", "created", "extra")


def pixels_sha256(array):
    """SHA-256 (hex) of an array's values as C-ordered float64, with its shape.

    Two arrays with the same shape and values give the same hash whatever
    their dtype or memory layout.

    Examples
    --------
    >>> pixels_sha256(np.zeros((2, 2), np.float32)) == pixels_sha256(np.zeros((2, 2)))
    True
    """
    values = np.ascontiguousarray(np.asarray(array, dtype=np.float64))
    digest = hashlib.sha256(repr(values.shape).encode("ascii"))
    digest.update(values.tobytes())
    return digest.hexdigest()


def image_source(source, array=None, *, crop=None):
    """Describe where an image came from, with its SHA-256.

    Parameters
    ----------
    source : str or os.PathLike or None
        An image file, the name of a shipped sample (:func:`lbdviewer.io.samples.sample_images`),
        or any other name (e.g. ``"synthetic"``); None for unknown.
    array : array_like, optional
        The pixels actually used (after any crop): their shape and
        :func:`pixels_sha256` are recorded.
    crop : sequence of int, optional
        ``(top, left, height, width)`` (or ``(top, left, side)``) of the region
        of the source that ``array`` is.

    Returns
    -------
    dict
        ``kind`` (``"file"``, ``"sample"``, ``"name"`` or ``"unknown"``),
        ``name``, ``path``, ``sha256`` (of the file, None when there is no
        file), ``pixels_sha256``, ``shape``, ``crop``.

    Examples
    --------
    >>> source = image_source("shapes", np.zeros((4, 4)), crop=(0, 0, 4))
    >>> source["kind"], source["name"], len(source["sha256"]), source["shape"], source["crop"]
    ('sample', 'shapes', 64, [4, 4], [0, 0, 4])
    """
    record = {"kind": "unknown", "name": None, "path": None, "sha256": None}
    if source is not None:
        text = os.fspath(source)
        samples = sample_images()
        if os.path.isfile(text):
            path = Path(text).resolve()
            record = {"kind": "file", "name": path.name, "path": str(path), "sha256": file_sha256(path)}
        elif text in samples:
            record = {"kind": "sample", "name": text, "path": str(samples[text]),
                      "sha256": file_sha256(samples[text])}
        else:
            record = {"kind": "name", "name": text, "path": None, "sha256": None}
    if array is not None:
        array = np.asarray(array)
        record["shape"] = [int(s) for s in array.shape]
        record["pixels_sha256"] = pixels_sha256(array)
    else:
        record["shape"], record["pixels_sha256"] = None, None
    record["crop"] = None if crop is None else [int(c) for c in crop]
    return record


def _versions():
    versions = library_versions()
    if "matplotlib" not in versions:
        try:
            versions["matplotlib"] = metadata.version("matplotlib")
        except metadata.PackageNotFoundError:
            versions["matplotlib"] = None
    return versions


def _stop_reason(stopped_early, consistency):
    if not stopped_early:
        return None
    if consistency is not None and float(np.min(consistency)) >= 1.0:
        return "all bits consistent"
    return "fixed point: the estimate stopped changing"


def solver_record(*, state=None, result=None, iterations_requested=None):
    """The ``solver`` part of a record, from the final state and/or the result.

    Parameters
    ----------
    state : SolverState, optional
        The last snapshot the solver yielded (for a cancelled run: the last
        one seen). Gives ``iterations_run`` (per row; the largest is
        recorded, with how many rows stopped early) and ``bit_consistency``.
    result : ImageResult-like, optional
        Gives ``method``, ``mode``, ``iterations`` (requested), the solver's
        bit consistency and, when it has them, ``iterations_run`` and
        ``stopped_early``.
    iterations_requested : int, optional
        The iteration budget, when neither ``result`` gives it.

    Returns
    -------
    dict or None
        None when both ``state`` and ``result`` are None.

    Notes
    -----
    ``stopped_early`` is ``iterations_run < iterations_requested``: the
    solver ended before its budget (BIHT at an exact fixed point, the
    consistency solver on convergence). Unknown (None) when the budget is.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> state = SimpleNamespace(iteration=14, iterations_run=np.array([14]), active=np.array([False]),
    ...                         bit_consistency=np.array([1.0]), finished=True)
    >>> record = solver_record(state=state, iterations_requested=200)
    >>> record["iterations_run"], record["stopped_early"], record["stop_reason"]
    (14, True, 'all bits consistent')
    """
    if state is None and result is None:
        return None
    record = {"method": None, "mode": None, "iterations_requested": iterations_requested,
              "iterations_run": None, "rows": None, "rows_stopped_early": None, "bit_consistency": None}
    consistency = None
    if result is not None:
        params = getattr(result, "params", None) or {}
        record["method"] = getattr(result, "method", None) or params.get("method")
        record["mode"] = getattr(result, "mode", None) or params.get("mode")
        if record["iterations_requested"] is None:
            requested = params.get("iterations", getattr(result, "iterations", None))
            record["iterations_requested"] = None if requested is None else int(requested)
        run = getattr(result, "iterations_run", None)
        record["iterations_run"] = None if run is None else int(np.max(run))
        consistency = getattr(result, "solver_bit_consistency", None)
    if state is not None:
        run = np.atleast_1d(np.asarray(state.iterations_run))
        record["iterations_run"] = int(run.max()) if run.size else int(state.iteration)
        record["rows"] = int(run.size)
        if state.bit_consistency is not None:
            per_row = np.atleast_1d(np.asarray(state.bit_consistency, dtype=np.float64))
            consistency = float(per_row.mean()) if consistency is None else consistency
        else:
            per_row = None
        if record["iterations_requested"] is not None:
            record["rows_stopped_early"] = int(np.count_nonzero(run < record["iterations_requested"]))
    else:
        per_row = None if consistency is None else np.array([consistency])
    requested, ran = record["iterations_requested"], record["iterations_run"]
    explicit = getattr(result, "stopped_early", None) if result is not None else None
    if explicit is not None:
        stopped = bool(explicit)
    elif requested is not None and ran is not None:
        stopped = ran < requested
    else:
        stopped = None
    record["stopped_early"] = stopped
    record["stop_reason"] = _stop_reason(stopped, per_row)
    record["bit_consistency"] = None if consistency is None else float(consistency)
    return record


def panel_record(*, state=None, result=None, method=None, mode=None, iterations_requested=None, seconds=None,
                 metrics=None, parameters=None, display=None):
    """The record of one panel of a figure that shows several runs (``extra["panels"][name]`` of its record).

    Each panel says what its solver ran (``solver``, :func:`solver_record`:
    method, mode, iterations requested and run, stop reason, bit
    consistency), how well (``metrics``), how long (``seconds``), with what
    (``parameters``) and how it is shown (``display``).

    Parameters
    ----------
    state, result, iterations_requested
        See :func:`solver_record`.
    method, mode : str, optional
        Name the solver when ``result`` does not (a patch solved alone
        leaves only its final ``state``).
    seconds : float, optional
        Wall-clock time; default ``result.seconds``.
    metrics, parameters, display : dict, optional

    Returns
    -------
    dict
        ``solver``, ``metrics``, ``seconds``, ``parameters``, ``display``.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> state = SimpleNamespace(iteration=9, iterations_run=np.array([9]), bit_consistency=np.array([1.0]))
    >>> panel = panel_record(state=state, method="biht", iterations_requested=40, seconds=0.02)
    >>> panel["solver"]["method"], panel["solver"]["iterations_run"], panel["solver"]["stop_reason"]
    ('biht', 9, 'all bits consistent')
    """
    solver = solver_record(state=state, result=result, iterations_requested=iterations_requested)
    if solver is not None:
        solver["method"] = solver["method"] or method
        solver["mode"] = solver["mode"] or mode
    if seconds is None and result is not None:
        seconds = getattr(result, "seconds", None)
    return {"solver": solver, "metrics": dict(metrics or {}), "seconds": None if seconds is None else float(seconds),
            "parameters": dict(parameters or {}), "display": display}


def batch_solver_record(solvers):
    """One ``solver`` record for several solves of one method and mode, read as the rows of a batch.

    As :func:`solver_record` does for a batch of patches: ``rows`` solves,
    ``iterations_run`` the most any ran, ``rows_stopped_early``, and
    ``stopped_early`` when every one did; ``bit_consistency`` their mean.

    Parameters
    ----------
    solvers : sequence of dict or None
        :func:`solver_record` s (None: nothing ran there; left out).

    Returns
    -------
    dict or None
        None when none ran, or they ran different methods or modes.

    Examples
    --------
    >>> one = {"method": "biht", "mode": "patches", "iterations_requested": 40, "iterations_run": 12,
    ...        "stopped_early": True, "bit_consistency": 1.0}
    >>> batch = batch_solver_record([one, {**one, "iterations_run": 40, "stopped_early": False,
    ...                                    "bit_consistency": 0.9}])
    >>> batch["rows"], batch["iterations_run"], batch["rows_stopped_early"], batch["stopped_early"]
    (2, 40, 1, False)
    """
    solvers = [solver for solver in solvers if solver is not None]
    if not solvers or len({(solver["method"], solver["mode"]) for solver in solvers}) != 1:
        return None
    requested = {solver["iterations_requested"] for solver in solvers}
    runs = [solver["iterations_run"] for solver in solvers]
    stopped = [solver["stopped_early"] for solver in solvers]
    consistency = [solver["bit_consistency"] for solver in solvers]
    record = {"method": solvers[0]["method"], "mode": solvers[0]["mode"],
              "iterations_requested": requested.pop() if len(requested) == 1 else None,
              "iterations_run": None if None in runs else max(runs), "rows": len(solvers),
              "rows_stopped_early": None if None in stopped else sum(bool(flag) for flag in stopped),
              "bit_consistency": None if None in consistency else float(np.mean(consistency))}
    record["stopped_early"] = None if None in stopped else all(stopped)
    record["stop_reason"] = _stop_reason(record["stopped_early"], None if None in consistency else consistency)
    return record


def _merge_parameters(result, parameters):
    merged = dict(getattr(result, "params", None) or {}) if result is not None else {}
    for key, value in (parameters or {}).items():
        if key in merged and _plain(merged[key]) != _plain(value):
            raise ValueError(f"parameters[{key!r}] = {value!r} contradicts what the run used ({merged[key]!r})")
        merged[key] = value
    return merged


def _plain(value):
    return json.loads(json.dumps(value, default=lambda v: v.tolist() if hasattr(v, "tolist") else str(v)))


def run_record(kind, *, state=None, result=None, status="completed", iterations_requested=None, seconds=None,
               metrics=None, source=None, parameters=None, display=None, extra=None, panels=None):
    """Build a run record (see the module notes for the schema).

    Parameters
    ----------
    kind : str
        What is recorded, e.g. ``"figure:offsets"`` or ``"panel:whole-image"``.
    state, result, iterations_requested
        See :func:`solver_record`.
    status : {"completed", "cancelled"}
    seconds : float, optional
        Wall-clock time; default ``result.seconds`` when there is a result.
    metrics : dict, optional
        Quality metrics (NaN and infinities are written as null, with why).
    source : dict, optional
        From :func:`image_source`.
    parameters : dict, optional
        Parameters the run used beyond ``result.params`` (which are always
        included). A key that both give with different values is an error:
        the record must not say one thing and the result another.
    display : dict, optional
        :meth:`lbdviewer.evaluation.display.Stretched.record`, or ``{panel: record}``.
    extra : dict, optional
    panels : dict, optional
        ``{panel: panel_record(...)}`` of a figure of several runs: written
        to ``extra["panels"]``; the ``solver`` is then
        :func:`batch_solver_record` of theirs (without ``state`` or
        ``result``) and ``seconds`` defaults to their sum.

    Returns
    -------
    dict

    Raises
    ------
    ValueError
        If ``kind`` is empty, ``status`` is unknown, or ``parameters``
        contradict ``result.params``.

    Examples
    --------
    >>> record = run_record("figure:weight-maps", parameters={"m": 512})
    >>> record["schema"], record["version"], record["status"], record["solver"], record["parameters"]
    ('lbdviewer.run-record', 1, 'completed', None, {'m': 512})
    """
    if not isinstance(kind, str) or not kind.strip():
        raise ValueError(f"kind must be a non-empty string, got {kind!r}")
    if status not in STATUSES:
        raise ValueError(f"status must be one of {STATUSES}, got {status!r}")
    if seconds is None and result is not None:
        seconds = getattr(result, "seconds", None)
    solver = solver_record(state=state, result=result, iterations_requested=iterations_requested)
    if panels is not None:
        extra = {**(extra or {}), "panels": dict(panels)}
        solver = solver or batch_solver_record(panel["solver"] for panel in panels.values())
        if seconds is None and panels:
            seconds = sum(panel["seconds"] or 0.0 for panel in panels.values())
    return {
        "schema": SCHEMA,
        "version": SCHEMA_VERSION,
        "kind": kind,
        "status": status,
        "solver": solver,
        "seconds": None if seconds is None else float(seconds),
        "metrics": dict(metrics or {}),
        "source": source,
        "parameters": _merge_parameters(result, parameters),
        "display": display,
        "versions": _versions(),
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "extra": dict(extra or {}),
    }


def check_record(record):
    """Raise ``ValueError`` unless ``record`` follows the run-record schema; return it.

    Examples
    --------
    >>> check_record(run_record("panel:patch"))["kind"]
    'panel:patch'
    """
    if not isinstance(record, dict):
        raise ValueError(f"record must be a dict, got {type(record).__name__}")
    missing = [key for key in KEYS if key not in record]
    if missing:
        raise ValueError(f"record lacks the keys {missing}")
    if record["schema"] != SCHEMA or record["version"] != SCHEMA_VERSION:
        raise ValueError(f"record schema must be {SCHEMA!r} version {SCHEMA_VERSION}, "
                         f"got {record['schema']!r} version {record['version']!r}")
    if record["status"] not in STATUSES:
        raise ValueError(f"record status must be one of {STATUSES}, got {record['status']!r}")
    return record


def write_sidecar(path, record):
    """Write a checked record as strict JSON, atomically (:func:`lbdviewer.io.strict_json.save_json`).

    Returns
    -------
    pathlib.Path
    """
    return save_json(path, check_record(record))


def _refuse_constant(name):
    raise ValueError(f"not strict JSON: {name}")


def read_sidecar(path):
    """Read a sidecar written by :func:`write_sidecar`: strict JSON only, schema checked.

    Raises
    ------
    ValueError
        If the file is not strict JSON (NaN, Infinity) or not a run record.
    """
    text = Path(path).read_text(encoding="utf-8")
    try:
        data = json.loads(text, parse_constant=_refuse_constant)
    except ValueError as error:  # json.JSONDecodeError included
        raise ValueError(f"sidecar {str(path)!r} is not strict JSON: {error}") from None
    return check_record(data)
