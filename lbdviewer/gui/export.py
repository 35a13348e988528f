"""Pixel-exact export of a panel, with its run record beside it.

A panel is exported from the ARRAY it shows, never from the screen: the array
is mapped to 8-bit colour with the panel's levels and colormap and enlarged by
an integer factor with nearest neighbour (``np.repeat``), so every array
element becomes a ``factor x factor`` block of one colour. A JSON file with
the same stem holds the run record (:mod:`lbdviewer.evaluation.records`) of what the
panel shows, with the export's own details under ``extra["export"]``.
Figures for papers (several panels, captions, vector text) are made by the
figure engine instead (:mod:`lbdviewer.figures`, see
:mod:`lbdviewer.gui.export_actions`).
"""

from __future__ import annotations

import lbdviewer.gui.qt  # noqa: F401  (PyQt6 and row-major images, before any Qt library)

import os
from dataclasses import dataclass, field

import numpy as np
from PyQt6.QtGui import QImage

from lbdviewer.io.images import save_png, upscale
from lbdviewer.evaluation.records import write_sidecar

@dataclass
class PanelArray:
    """What a panel shows: its array, display levels and colormap.

    ``colormap`` is a ``pyqtgraph.ColorMap`` or None for gray; ``array`` is
    (H, W) float or (H, W, 3) uint8 (already RGB).
    """

    name: str
    array: np.ndarray
    levels: tuple = (0.0, 1.0)
    colormap: object = None
    colormap_name: str = "gray"
    metadata: dict = field(default_factory=dict)


def to_rgb(panel):
    """Map a panel's array to uint8 RGB (H, W, 3) with its levels and colormap.

    Gray panels give ``round(255 * clip((a - lo) / (hi - lo), 0, 1))`` in all
    three channels.
    """
    array = np.asarray(panel.array)
    if array.ndim == 3:
        return np.ascontiguousarray(array[..., :3], dtype=np.uint8)
    low, high = (float(v) for v in panel.levels)
    span = high - low if high > low else 1.0
    unit = np.clip((np.nan_to_num(array.astype(np.float64), nan=low) - low) / span, 0.0, 1.0)
    if panel.colormap is None:
        gray = np.round(unit * 255.0).astype(np.uint8)
        return np.repeat(gray[..., None], 3, axis=2)
    colours = panel.colormap.map(unit.ravel(), mode="byte")
    return np.ascontiguousarray(colours[:, :3].reshape(*unit.shape, 3), dtype=np.uint8)


def default_factor(shape, *, target=512):
    """Largest integer factor that keeps the longest side at most ``target`` (>= 1)."""
    return max(1, int(target) // max(int(shape[0]), int(shape[1])))


def read_png(path):
    """Read a PNG back as uint8 RGB (H, W, 3) (used to check exports)."""
    image = QImage(os.fspath(path)).convertToFormat(QImage.Format.Format_RGB888)
    if image.isNull():
        raise ValueError(f"path is not a readable image: {path!r}")
    width, height, stride = image.width(), image.height(), image.bytesPerLine()
    buffer = np.frombuffer(image.constBits().asstring(stride * height), dtype=np.uint8)
    return buffer.reshape(height, stride)[:, : 3 * width].reshape(height, width, 3).copy()


def sidecar_path(png_path):
    """The JSON path written beside ``png_path``."""
    return os.path.splitext(os.fspath(png_path))[0] + ".json"


def export_panel(path, panel, *, record, factor=None):
    """Export a panel as a pixel-exact PNG with its run record beside it.

    Parameters
    ----------
    path : str
        Output PNG path.
    panel : PanelArray
    record : dict
        The run record of what the panel shows (:func:`lbdviewer.evaluation.records.run_record`);
        the PNG's name, the enlargement and the panel's levels and colormap
        are added under ``extra["export"]``.
    factor : int, optional
        Integer upscaling (default: :func:`default_factor` of the panel).

    Returns
    -------
    tuple of str
        The PNG and JSON paths.
    """
    if factor is None:
        factor = default_factor(panel.array.shape[:2])
    export = {
        "png": os.path.basename(path),
        "upscale_factor": int(factor),
        "interpolation": "nearest (integer pixel replication)",
        "panel": {"name": panel.name, "shape": list(panel.array.shape), "levels": [float(v) for v in panel.levels],
                  "colormap": panel.colormap_name, **panel.metadata},
    }
    extra = dict(record.get("extra") or {})
    extra["export"] = {**extra.get("export", {}), **export}
    save_png(path, upscale(to_rgb(panel), factor))
    json_path = sidecar_path(path)
    write_sidecar(json_path, {**record, "extra": extra})
    return path, json_path
