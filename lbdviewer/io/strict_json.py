"""Strict JSON out: NaN and infinities written as ``null`` with the reason, files written atomically."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from lbdviewer.io.files import atomic_write

__all__ = ["dumps_strict", "json_bytes", "save_json", "strict_json_data"]


def _json_default(value):
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"cannot write {type(value).__name__} to JSON")


def _undefined_reason(value):
    if np.isnan(value):
        return "not a number (undefined)"
    return "infinite" if value > 0 else "minus infinity"


def strict_json_data(data, *, reasons=None, path=""):
    """``data`` with every non-finite float replaced by ``None`` (strict JSON has no NaN).

    Numpy scalars and arrays become Python values first. Each replaced value's
    location (``"metrics/psnr"``) and why it is undefined are collected in
    ``reasons``; :func:`dumps_strict` writes them under the key ``"undefined"``.

    Examples
    --------
    >>> reasons = {}
    >>> strict_json_data({"psnr": float("inf"), "n": [1.0, float("nan")]}, reasons=reasons)
    {'psnr': None, 'n': [1.0, None]}
    >>> reasons
    {'psnr': 'infinite', 'n/1': 'not a number (undefined)'}
    """
    reasons = {} if reasons is None else reasons
    if isinstance(data, (np.generic, np.ndarray, Path)):
        data = _json_default(data)
    if isinstance(data, dict):
        return {key: strict_json_data(value, reasons=reasons, path=f"{path}/{key}" if path else str(key))
                for key, value in data.items()}
    if isinstance(data, (list, tuple)):
        return [strict_json_data(value, reasons=reasons, path=f"{path}/{i}" if path else str(i))
                for i, value in enumerate(data)]
    if isinstance(data, float) and not np.isfinite(data):
        reasons[path] = _undefined_reason(data)
        return None
    return data


def dumps_strict(data, *, indent=2):
    """JSON text of ``data`` that any strict parser reads: NaN and infinities become ``null``.

    Where values were replaced, a top-level ``"undefined"`` object names each one
    and why (merged with one the caller already gave, which wins).

    Examples
    --------
    >>> print(dumps_strict({"psnr": float("inf")}, indent=None))
    {"psnr": null, "undefined": {"psnr": "infinite"}}
    """
    reasons = {}
    clean = strict_json_data(data, reasons=reasons)
    if reasons and isinstance(clean, dict):
        clean["undefined"] = {**reasons, **(clean.get("undefined") or {})}
    return json.dumps(clean, indent=indent, sort_keys=indent is not None, allow_nan=False)


def json_bytes(data):
    """The bytes :func:`save_json` writes: indented strict JSON and a newline."""
    return (dumps_strict(data) + "\n").encode("utf-8")


def save_json(path, data):
    """Write ``data`` as indented strict JSON, atomically (see :func:`dumps_strict`).

    Returns
    -------
    pathlib.Path
    """
    return atomic_write(path, json_bytes(data))
