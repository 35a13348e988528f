"""Image canvases: a titled view of one array, with an optional colour bar.

Every canvas remembers the array it shows, its levels and colormap, so that
export writes that array (see :mod:`lbdviewer.gui.export`), not the screen.
Pixel ``(r, c)`` of an array covers ``[c, c+1] x [r, r+1]`` in view
coordinates (y pointing down); a pattern point ``(x, y)`` in the core's
convention (pixel centres at integers) is drawn at ``(x + 0.5, y + 0.5)``.
"""

from __future__ import annotations

import lbdviewer.gui.qt  # noqa: F401  (PyQt6 and row-major images, before any Qt library)

import numpy as np
import pyqtgraph as pg
from PyQt6.QtCore import Qt

from lbdviewer.gui.export import PanelArray

GRAY = None
DIVERGING = "CET-D1A"
SEQUENTIAL = "viridis"
TITLE_SIZE = "11pt"


def colormap(name):
    """A pyqtgraph ColorMap by name, or None for gray."""
    return None if name is None else pg.colormap.get(name)


class ImageCanvas(pg.GraphicsLayoutWidget):
    """A titled, aspect-locked view of one 2-D array.

    Parameters
    ----------
    title : str
        Shown above the image.
    colormap_name : str or None
        pyqtgraph colormap name; None shows gray levels.
    colorbar : bool
        Add a colour bar (with a label) on the right.
    interactive : bool
        Allow pan and zoom with the mouse.
    """

    def __init__(self, title, *, colormap_name=GRAY, colorbar=False, colorbar_label="",
                 interactive=False, parent=None):
        super().__init__(parent=parent)
        self.setAcceptDrops(False)
        self.ci.setContentsMargins(2, 2, 2, 2)
        self.ci.setSpacing(2)
        self.name = title
        self.title = self.addLabel(title, row=0, col=0, colspan=2, size=TITLE_SIZE)
        self.view = self.addViewBox(row=1, col=0, lockAspect=True, invertY=True, enableMenu=False)
        self.view.setMouseEnabled(interactive, interactive)
        self.view.setDefaultPadding(0.01)
        self.image_item = pg.ImageItem(axisOrder="row-major")
        self.view.addItem(self.image_item)
        self.colormap_name = colormap_name
        self.colormap = colormap(colormap_name)
        self.colorbar = None
        if colorbar:
            self.colorbar = pg.ColorBarItem(
                colorMap=self.colormap if self.colormap is not None else pg.colormap.get("CET-L1"),
                interactive=False, width=14, rounding=1e-9, label=colorbar_label, colorMapMenu=False,
            )
            self.colorbar.setImageItem(self.image_item)
            self.addItem(self.colorbar, row=1, col=1)
        elif self.colormap is not None:
            self.image_item.setColorMap(self.colormap)
        self.array = None
        self.levels = (0.0, 1.0)
        self.metadata = {}

    def set_title(self, text):
        self.title.setText(text, size=TITLE_SIZE)

    def show_array(self, array, *, levels=(0.0, 1.0), metadata=None, autorange=None):
        """Show ``array`` with fixed ``levels``; re-frame the view if its shape changed."""
        array = np.asarray(array)
        reshaped = self.array is None or self.array.shape[:2] != array.shape[:2]
        self.array = array
        self.levels = (float(levels[0]), float(levels[1]))
        if self.levels[1] <= self.levels[0]:
            self.levels = (self.levels[0], self.levels[0] + 1.0)
        self.metadata = dict(metadata or {})
        self.image_item.setImage(array, levels=self.levels, autoLevels=False)
        if self.colorbar is not None:
            self.colorbar.setLevels(self.levels)
        if reshaped if autorange is None else autorange:
            self.view.setRange(xRange=(0, array.shape[1]), yRange=(0, array.shape[0]), padding=0.01)

    def clear_array(self, message=None):
        self.array = None
        self.image_item.clear()
        if message:
            self.set_title(message)

    def panel_array(self):
        """The shown array with its levels and colormap, for export."""
        if self.array is None:
            raise ValueError(f"panel {self.name!r} shows nothing yet")
        return PanelArray(self.name, self.array, self.levels, self.colormap, self.colormap_name or "gray",
                          dict(self.metadata))


def pattern_overlay_data(pattern, *, circle_points=32):
    """Line segments of the pairs and circle outlines of the fields, in view coordinates.

    Returns ``(pairs_xy, circles_xy, circles_connect)``: ``pairs_xy`` (2M, 2)
    for ``connect='pairs'``; ``circles_xy`` (F * (k+1), 2) with a break after
    each circle given by ``circles_connect``.
    """
    centres = np.asarray(pattern.centers, dtype=float) + 0.5
    pairs_xy = centres[np.asarray(pattern.pairs).ravel()]
    angles = np.linspace(0.0, 2.0 * np.pi, circle_points + 1)
    ring = np.stack([np.cos(angles), np.sin(angles)], axis=1)
    circles = centres[:, None, :] + np.asarray(pattern.sigmas)[:, None, None] * ring[None]
    connect = np.ones(circles.shape[:2], dtype=bool)
    connect[:, -1] = False
    return pairs_xy, circles.reshape(-1, 2), connect.ravel()


class PatchCanvas(ImageCanvas):
    """The patch enlarged, with the pattern drawn over it.

    Pairs are line segments in one ``PlotDataItem(connect='pairs')``;
    receptive fields are circles of radius sigma. Both use saturated colours
    with a dark outline so they read on bright and dark patches alike.
    """

    PAIR_COLOUR = (255, 170, 0, 170)
    FIELD_COLOUR = (0, 230, 255, 120)

    def __init__(self, title, parent=None):
        super().__init__(title, parent=parent)
        shadow = pg.mkPen((0, 0, 0, 90), width=2.5)
        shadow.setCosmetic(True)
        self.pairs_shadow = pg.PlotDataItem(connect="pairs", pen=shadow)
        self.pairs_item = pg.PlotDataItem(connect="pairs", pen=pg.mkPen(self.PAIR_COLOUR, width=1.2))
        self.fields_shadow = pg.PlotDataItem(pen=shadow)
        self.fields_item = pg.PlotDataItem(pen=pg.mkPen(self.FIELD_COLOUR, width=1.2))
        for item in (self.pairs_shadow, self.pairs_item, self.fields_shadow, self.fields_item):
            item.setZValue(10)
            self.view.addItem(item)
        self.highlight = pg.PlotDataItem(connect="pairs", pen=pg.mkPen((255, 40, 40), width=3, style=Qt.PenStyle.SolidLine))
        self.highlight.setZValue(11)
        self.view.addItem(self.highlight)
        self.pattern = None

    def set_pattern(self, pattern):
        self.pattern = pattern
        pairs_xy, circles_xy, connect = pattern_overlay_data(pattern)
        for item in (self.pairs_shadow, self.pairs_item):
            item.setData(pairs_xy[:, 0], pairs_xy[:, 1], connect="pairs")
        for item in (self.fields_shadow, self.fields_item):
            item.setData(circles_xy[:, 0], circles_xy[:, 1], connect=connect)

    def highlight_pair(self, index):
        """Draw measurement ``index`` (the current frame vector) in red."""
        if self.pattern is None or index is None:
            self.highlight.setData([], [])
            return
        centres = np.asarray(self.pattern.centers, dtype=float)[self.pattern.pairs[index]] + 0.5
        self.highlight.setData(centres[:, 0], centres[:, 1], connect="pairs")

    def set_overlay_visible(self, pairs, fields):
        self.pairs_item.setVisible(pairs)
        self.pairs_shadow.setVisible(pairs)
        self.fields_item.setVisible(fields)
        self.fields_shadow.setVisible(fields)
