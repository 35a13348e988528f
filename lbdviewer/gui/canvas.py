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
from PyQt6.QtCore import QRectF, Qt
from PyQt6.QtWidgets import QLabel, QSizePolicy, QVBoxLayout, QWidget

from lbdviewer.gui.export import PanelArray
from lbdviewer.gui.overlay import pattern_overlay

GRAY = None
DIVERGING = "CET-D1A"
SEQUENTIAL = "viridis"
TITLE_POINTS = 10.5


def colormap(name):
    """A pyqtgraph ColorMap by name, or None for gray."""
    return None if name is None else pg.colormap.get(name)


def adopt_menus(plot_item, owner):
    """Give a pyqtgraph PlotItem's parentless context menus an owner, so they are deleted with it.

    pyqtgraph makes a PlotItem's "Plot Options" menu and its ViewBox menu
    without a parent; left alone they outlive the window as top-level widgets.
    """
    for menu in (plot_item.ctrlMenu, plot_item.getViewBox().menu):
        if menu is not None:
            menu.setParent(owner, menu.windowFlags())


class ElidedLabel(QLabel):
    """A one-line label that elides (in the middle, by default) when its panel is narrow.

    Its minimum width is small, so a long title can never widen its panel or
    push the image beside it out of view; the full text is in the tooltip.
    """

    def __init__(self, text="", parent=None, *, elide=Qt.TextElideMode.ElideMiddle,
                 align=Qt.AlignmentFlag.AlignCenter):
        super().__init__(parent)
        self._full = ""
        self._elide_mode = elide
        self.setAlignment(align)
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)
        self.setMinimumWidth(20)
        self.set_full_text(text)

    def setText(self, text):  # noqa: N802  (Qt's name: callers treat it as a QLabel)
        self.set_full_text(text)

    def set_full_text(self, text):
        self._full = str(text)
        self.setToolTip(self._full)
        self._elide()

    def full_text(self):
        return self._full

    def is_elided(self):
        return self.text() != self._full

    def resizeEvent(self, event):
        super().resizeEvent(event)
        self._elide()

    def _elide(self):
        width = max(self.width() - 4, 10)
        super().setText(self.fontMetrics().elidedText(self._full, self._elide_mode, width))


class ImageCanvas(QWidget):
    """A titled, aspect-locked view of one 2-D array.

    The title is an :class:`ElidedLabel` above a pyqtgraph view (so it never
    takes width from the image); the optional colour bar sits at the right
    of the view with room for its tick labels.

    Parameters
    ----------
    title : str
        Shown above the image.
    colormap_name : str or None
        pyqtgraph colormap name; None shows gray levels.
    colorbar : bool
        Add a colour bar (with a label) on the right.
    colorbar_label : str
        The quantity the colour bar measures.
    interactive : bool
        Allow pan and zoom with the mouse.
    """

    def __init__(self, title, *, colormap_name=GRAY, colorbar=False, colorbar_label="",
                 interactive=False, parent=None):
        super().__init__(parent)
        self.setAcceptDrops(False)
        self.name = title
        self.title = ElidedLabel(title, elide=Qt.TextElideMode.ElideRight)  # the start says what it is
        font = self.title.font()
        font.setPointSizeF(TITLE_POINTS)
        self.title.setFont(font)
        self.title.setStyleSheet("color: #ddd; background: black; padding: 2px;")
        self.graphics = pg.GraphicsLayoutWidget()
        self.graphics.setAcceptDrops(False)
        self.graphics.ci.setContentsMargins(2, 2, 2, 2)
        self.graphics.ci.setSpacing(2)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        layout.addWidget(self.title)
        layout.addWidget(self.graphics, 1)
        self.view = self.graphics.addViewBox(row=0, col=0, lockAspect=True, invertY=True, enableMenu=False)
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
                interactive=False, width=12, rounding=1e-9, label=colorbar_label or None, colorMapMenu=False,
            )
            self.colorbar.setImageItem(self.image_item)
            adopt_menus(self.colorbar, self)
            # Room above and below for the end tick labels, which are drawn centred on the bar's ends.
            self.colorbar.layout.setContentsMargins(0, 8, 0, 8)
            self.graphics.addItem(self.colorbar, row=0, col=1)
        elif self.colormap is not None:
            self.image_item.setColorMap(self.colormap)
        self.array = None
        self.levels = (0.0, 1.0)
        self.metadata = {}

    def set_title(self, text):
        self.title.set_full_text(text)

    def title_text(self):
        """The full title (the label may show it elided)."""
        return self.title.full_text()

    def set_dimmed(self, dimmed, *, opacity=0.35):
        """Show the image faded (an outdated or unfinished result) or normally."""
        self.image_item.setOpacity(opacity if dimmed else 1.0)

    def is_dimmed(self):
        return self.image_item.opacity() < 1.0

    def show_array(self, array, *, levels=(0.0, 1.0), metadata=None, autorange=None, preview=None):
        """Show ``array`` with fixed ``levels``; re-frame the view if its shape changed.

        ``preview`` (a :class:`~lbdviewer.gui.jobs.Preview` of ``array``,
        made on a worker thread) is drawn instead of a large array, scaled to
        cover the array's pixels; ``array`` is still what the canvas holds and
        exports.
        """
        array = np.asarray(array)
        reshaped = self.array is None or self.array.shape[:2] != array.shape[:2]
        self.array = array
        self.levels = (float(levels[0]), float(levels[1]))
        if self.levels[1] <= self.levels[0]:
            self.levels = (self.levels[0], self.levels[0] + 1.0)
        self.metadata = dict(metadata or {})
        drawn, scale = (array, 1) if preview is None else (preview.image, preview.scale)
        self.image_item.setImage(drawn, levels=self.levels, autoLevels=False)
        self.image_item.setRect(QRectF(0, 0, drawn.shape[1] * scale, drawn.shape[0] * scale))
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


#: Pair overlays of the patch view: every pair, only the selected pair, none.
PAIR_MODES = ("all", "selected", "none")


def pair_alpha(m):
    """Opacity (0-255) of one pair segment when all ``m`` pairs are drawn.

    Many pairs overlap: the opacity falls as ``m`` grows so that the patch
    under 512 BRIEF pairs stays visible (``~6000 / m``, between 25 and 170).

    Examples
    --------
    >>> pair_alpha(32), pair_alpha(512), pair_alpha(4096)
    (170, 25, 25)
    """
    return int(np.clip(round(6000 / max(int(m), 1)), 25, 170))


class PatchCanvas(ImageCanvas):
    """The patch enlarged, with the descriptor's sampling geometry drawn over it.

    What is drawn is an :class:`~lbdviewer.gui.overlay.Overlay`: a segment a
    measurement, all in one ``PlotDataItem(connect='pairs')``, faint when
    there are many (:func:`pair_alpha`); the fields as faint outlines (circles
    of radius sigma, box rectangles, AKAZE's turned cells). The selected
    measurement (the frame vector shown) is prominent: a thick red segment
    with a dark outline and its two fields' outlines. :meth:`set_overlay`
    chooses all pairs / the selected pair / none, and fields on or off.
    """

    PAIR_RGB = (255, 170, 0)
    FIELD_COLOUR = (0, 230, 255, 45)
    SELECTED_COLOUR = (255, 40, 40)

    def __init__(self, title, parent=None):
        super().__init__(title, parent=parent)
        self.pairs_item = pg.PlotDataItem(connect="pairs", pen=pg.mkPen(self.PAIR_RGB + (170,), width=1))
        self.fields_item = pg.PlotDataItem(pen=pg.mkPen(self.FIELD_COLOUR, width=1))
        shadow = pg.mkPen((0, 0, 0, 200), width=5)
        self.selected_shadow = pg.PlotDataItem(connect="pairs", pen=shadow)
        self.selected_item = pg.PlotDataItem(connect="pairs", pen=pg.mkPen(self.SELECTED_COLOUR, width=2.5))
        self.selected_fields = pg.PlotDataItem(pen=pg.mkPen(self.SELECTED_COLOUR, width=1.5))
        self.centre_item = pg.ScatterPlotItem(size=9, symbol="+", pen=pg.mkPen((255, 255, 255, 220), width=1.5),
                                              brush=None, pxMode=True)
        for z, item in enumerate((self.fields_item, self.pairs_item, self.selected_shadow, self.selected_item,
                                  self.selected_fields, self.centre_item)):
            item.setZValue(10 + z)
            self.view.addItem(item)
        self.overlay = None
        self.pair_mode = "all"
        self.fields_visible = True
        self.selected = None

    def set_pattern(self, pattern):
        """Draw a :class:`~lbdviewer.patterns.base.Pattern` (:func:`~lbdviewer.gui.overlay.pattern_overlay`)."""
        self.set_geometry(pattern_overlay(pattern))

    def set_geometry(self, overlay, *, centre=None):
        """Draw ``overlay`` (None clears); ``centre`` ``(x, y)`` (view coordinates) marks the keypoint."""
        self.overlay = overlay
        if overlay is None:
            for item in (self.pairs_item, self.fields_item):
                item.setData([], [])
            self.centre_item.setData([], [])
            self.highlight_pair(None)
            return
        pairs_xy = overlay.pairs_xy()
        self.pairs_item.setData(pairs_xy[:, 0], pairs_xy[:, 1], connect="pairs")
        self.pairs_item.setPen(pg.mkPen(self.PAIR_RGB + (pair_alpha(overlay.m),), width=1))
        outlines, connect = overlay.outlines_xy()
        self.fields_item.setData(outlines[:, 0], outlines[:, 1], connect=connect)
        self.centre_item.setData([] if centre is None else [centre[0]], [] if centre is None else [centre[1]])
        self.highlight_pair(self.selected if self.selected is not None and self.selected < overlay.m else 0)

    def highlight_pair(self, index):
        """Draw measurement ``index`` (the current frame vector) prominently."""
        self.selected = index
        if self.overlay is None or index is None:
            for item in (self.selected_shadow, self.selected_item, self.selected_fields):
                item.setData([], [])
            return
        ends = self.overlay.segments[index]
        for item in (self.selected_shadow, self.selected_item):
            item.setData(ends[:, 0], ends[:, 1], connect="pairs")
        outlines, connect = self.overlay.outlines_xy(self.overlay.pair_fields[index])
        self.selected_fields.setData(outlines[:, 0], outlines[:, 1], connect=connect)

    def set_overlay(self, pairs, fields):
        """``pairs`` in :data:`PAIR_MODES`; ``fields`` draws the receptive fields (faint)."""
        if pairs not in PAIR_MODES:
            raise ValueError(f"pairs must be one of {PAIR_MODES}, got {pairs!r}")
        self.pair_mode, self.fields_visible = pairs, bool(fields)
        self.pairs_item.setVisible(pairs == "all")
        for item in (self.selected_shadow, self.selected_item, self.selected_fields):
            item.setVisible(pairs != "none")
        self.fields_item.setVisible(self.fields_visible)
