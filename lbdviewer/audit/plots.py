"""The audit report's two plots: correlation per descriptor and against the keypoints kept (SVG, or into axes)."""

from __future__ import annotations

import io
import statistics

from lbdviewer.audit.html import colours
from lbdviewer.audit.results import is_ok
from lbdviewer.io.files import atomic_write

__all__ = ["PLOT_CORRELATION", "PLOT_KEYPOINTS", "draw_correlation_by_descriptor", "plot_correlation_by_descriptor",
           "plot_leak_vs_keypoints"]

PLOT_CORRELATION = "correlation_by_descriptor.svg"
PLOT_KEYPOINTS = "correlation_vs_keypoints.svg"


def _figure(width, height):
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width, height), layout="constrained")
    axes = figure.add_subplot()
    axes.spines[["top", "right"]].set_visible(False)
    axes.grid(True, color="#e4e7eb", linewidth=0.8)
    axes.set_axisbelow(True)
    return figure, axes


def _save_svg(figure, path):
    buffer = io.BytesIO()
    figure.savefig(buffer, format="svg", metadata={"Date": None})
    atomic_write(path, buffer.getvalue())


def plot_correlation_by_descriptor(rows, path):
    """Correlation of every ok row, one column of dots and its median per descriptor (SVG)."""
    figure, axes = _figure(4.6, 3.0)
    draw_correlation_by_descriptor(axes, rows)
    _save_svg(figure, path)


def draw_correlation_by_descriptor(axes, rows):
    """Draw :func:`plot_correlation_by_descriptor` into ``axes``."""
    palette = colours(row["descriptor"] for row in rows)
    ok = [row for row in rows if is_ok(row) and row["correlation"] is not None]
    names = list(dict.fromkeys(row["descriptor"] for row in ok))
    for i, name in enumerate(names):
        values = [row["correlation"] for row in ok if row["descriptor"] == name]
        offsets = [(k % 7 - 3) * 0.04 for k in range(len(values))]  # a deterministic jitter
        axes.scatter([i + o for o in offsets], values, s=22, color=palette[name], alpha=0.75, linewidths=0)
        median = statistics.median(values)
        axes.plot([i - 0.28, i + 0.28], [median, median], color="#1f2933", linewidth=2)
    axes.set_xticks(range(len(names)), names)
    axes.set_xlim(-0.6, max(len(names), 1) - 0.4)
    axes.set_ylim(min([-0.05] + [row["correlation"] for row in ok]) - 0.05, 1.0)
    axes.set_ylabel("correlation over covered pixels")
    axes.set_title("Leak per descriptor (bar: median)", fontsize=10, loc="left")


def plot_leak_vs_keypoints(rows, path):
    """Correlation against the number of keypoints kept, one colour per descriptor (SVG)."""
    palette = colours(row["descriptor"] for row in rows)
    ok = [row for row in rows if is_ok(row) and row["correlation"] is not None and row["keypoints"] is not None]
    figure, axes = _figure(4.6, 3.0)
    for name in dict.fromkeys(row["descriptor"] for row in ok):
        group = [row for row in ok if row["descriptor"] == name]
        axes.scatter([row["keypoints"] for row in group], [row["correlation"] for row in group], s=24,
                     color=palette[name], alpha=0.8, linewidths=0, label=name)
    axes.set_xlabel("keypoints kept")
    axes.set_ylabel("correlation over covered pixels")
    axes.set_title("Leak vs keypoint count", fontsize=10, loc="left")
    if ok:
        axes.legend(frameon=False, fontsize=8)
    _save_svg(figure, path)
