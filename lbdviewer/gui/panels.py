"""The panels of the main window that show the document: the source image and the pattern.

Panels only display and forward user intent as signals; the main window
(the controller) calls the core and feeds the panels. The runs' panels (live
solver, whole image) are in :mod:`lbdviewer.gui.run_panels`.
"""

from __future__ import annotations

import lbdviewer.gui.qt  # noqa: F401  (PyQt6 and row-major images, before any Qt library)

import numpy as np
import pyqtgraph as pg
from PyQt6.QtCore import QRectF, Qt, pyqtSignal
from PyQt6.QtWidgets import QCheckBox, QComboBox, QGridLayout, QHBoxLayout, QLabel, QSlider, QSpinBox, QWidget

from lbdviewer.gui.canvas import DIVERGING, SEQUENTIAL, ImageCanvas, PatchCanvas
from lbdviewer.patterns.base import pair_label

MAX_SITES_DRAWN = 4000
ROI_COLOUR = (255, 60, 60)
SITE_COLOUR = (80, 200, 255, 170)
KEYPOINT_COLOUR = (255, 200, 0, 110)
SELECTED_KEYPOINT_COLOUR = (255, 60, 60)
#: Points on a keypoint's circle (plus one to close it).
KEYPOINT_CIRCLE_POINTS = 24
#: A click selects the nearest keypoint when it lies within this many screen pixels (or within the keypoint).
CLICK_REACH_PX = 12


def keypoint_marks(x, y, size, angle, *, points=KEYPOINT_CIRCLE_POINTS):
    """Circles of diameter ``size`` and orientation ticks (centre to rim along ``angle``), in view coordinates.

    Returns ``(xy, connect)`` for one ``PlotDataItem``: each keypoint's
    circle, then its tick when it has an angle (``angle >= 0``, degrees,
    y pointing down as OpenCV measures it).

    Examples
    --------
    >>> xy, connect = keypoint_marks([10.0], [20.0], [4.0], [0.0], points=4)
    >>> xy[0].tolist(), xy[-1].tolist(), int(connect.sum())
    ([12.5, 20.5], [12.5, 20.5], 5)
    """
    x, y = np.asarray(x, dtype=float) + 0.5, np.asarray(y, dtype=float) + 0.5
    radius = np.maximum(np.asarray(size, dtype=float), 2.0) / 2.0
    angles = np.linspace(0.0, 2.0 * np.pi, points + 1)
    circles = np.stack([x[:, None] + radius[:, None] * np.cos(angles), y[:, None] + radius[:, None] * np.sin(angles)],
                       axis=-1)
    connect = np.ones(circles.shape[:2], dtype=bool)
    connect[:, -1] = False
    theta = np.deg2rad(np.asarray(angle, dtype=float))
    oriented = np.asarray(angle) >= 0
    ticks = np.stack([np.stack([x, y], 1), np.stack([x + radius * np.cos(theta), y + radius * np.sin(theta)], 1)],
                     axis=1)[oriented]
    tick_connect = np.tile([True, False], (len(ticks), 1))
    xy = np.concatenate([circles.reshape(-1, 2), ticks.reshape(-1, 2)])
    return xy, np.concatenate([connect.ravel(), tick_connect.ravel()])


class SourceView(ImageCanvas):
    """The loaded image with the square patch selector, the patch sites or the keypoints.

    For the paper's patterns the red square is the patch selector (drag it).
    For a library descriptor or a feature file it frames the selected
    keypoint's patch (where the library reads it, at its level), the
    keypoints are thin circles with an orientation tick, and a click selects
    the nearest one.

    Signals
    -------
    patch_moved(int, int)
        Top-left ``(x, y)`` = (column, row) of the patch, integer pixels.
    clicked(float, float)
        A click on the image at ``(x, y)`` (level-0 pixels, centres at integers),
        with the distance in image pixels a click may miss a keypoint by.
    """

    patch_moved = pyqtSignal(int, int)
    clicked = pyqtSignal(float, float, float)

    def __init__(self, parent=None):
        super().__init__("Image", interactive=True, parent=parent)
        self.roi = pg.RectROI((0, 0), (32, 32), pen=pg.mkPen(ROI_COLOUR, width=2),
                              hoverPen=pg.mkPen((255, 200, 0), width=3), movable=True,
                              resizable=False, rotatable=False, removable=False,
                              translateSnap=True, snapSize=1.0)
        self.roi.setZValue(20)
        self.roi.setToolTip("Drag the patch; the pattern, the patch view and the live reconstruction follow")
        self.view.addItem(self.roi)
        for handle in list(self.roi.getHandles()):  # fixed size: remove the scale handle (once in a scene)
            self.roi.removeHandle(handle)
        self.sites_item = pg.ScatterPlotItem(size=4, pen=None, brush=pg.mkBrush(SITE_COLOUR), pxMode=True)
        self.sites_item.setZValue(5)
        self.view.addItem(self.sites_item)
        pen = pg.mkPen(KEYPOINT_COLOUR, width=1)
        pen.setCosmetic(True)  # one screen pixel thin whatever the zoom
        self.keypoints_item = pg.PlotDataItem(pen=pen)
        self.keypoints_item.setZValue(6)
        self.view.addItem(self.keypoints_item)
        selected_pen = pg.mkPen(SELECTED_KEYPOINT_COLOUR, width=2)
        selected_pen.setCosmetic(True)
        self.selected_keypoint_item = pg.PlotDataItem(pen=selected_pen)
        self.selected_keypoint_item.setZValue(21)
        self.view.addItem(self.selected_keypoint_item)
        self.keypoints = None  # (x, y) of the keypoints drawn
        self.roi.sigRegionChanged.connect(self._on_roi_changed)
        self.graphics.scene().sigMouseClicked.connect(self._on_scene_clicked)
        self._keypoint_frame = False
        self._last = None

    def set_keypoints(self, keypoints):
        """Draw ``keypoints`` (:class:`~lbdviewer.features.keypoints.Keypoints`, None clears) as thin marks."""
        self.selected_keypoint_item.setData([], [])
        if keypoints is None or len(keypoints) == 0:
            self.keypoints = None
            self.keypoints_item.setData([], [])
            return
        self.keypoints = (np.asarray(keypoints.x), np.asarray(keypoints.y))
        xy, connect = keypoint_marks(keypoints.x, keypoints.y, keypoints.size, keypoints.angle)
        self.keypoints_item.setData(xy[:, 0], xy[:, 1], connect=connect)

    def select_keypoint(self, x, y, size, angle):
        """Mark the selected keypoint (a thicker red circle and tick); ``x`` None clears."""
        if x is None:
            self.selected_keypoint_item.setData([], [])
            return
        xy, connect = keypoint_marks([x], [y], [size], [angle])
        self.selected_keypoint_item.setData(xy[:, 0], xy[:, 1], connect=connect)

    def show_keypoint_frame(self, footprint):
        """Frame a keypoint's patch ``(x, y, side)`` (view coordinates) with the fixed square; None: the selector again."""
        if footprint is None:
            if self._keypoint_frame:
                self._keypoint_frame = False
                self.roi.translatable = True
                self.roi.setToolTip("Drag the patch; the pattern, the patch view and the live reconstruction follow")
                if self.array is not None:
                    self.roi.maxBounds = QRectF(0, 0, self.array.shape[1], self.array.shape[0])
            return
        x, y, side = footprint
        self._keypoint_frame = True
        self.roi.translatable = False
        self.roi.maxBounds = None  # a keypoint's patch may reach past the border (read with reflection)
        self.roi.setToolTip("The selected keypoint's patch, where the library reads it; click a keypoint to select it")
        self.roi.setPos((x, y), update=False)
        self.roi.setSize((side, side), update=False)
        self.roi.stateChanged(finish=True)

    def _on_scene_clicked(self, event):
        if event.button() != Qt.MouseButton.LeftButton or self.array is None:
            return
        point = self.view.mapSceneToView(event.scenePos())
        reach = CLICK_REACH_PX * self.view.viewPixelSize()[0]
        self.clicked.emit(point.x() - 0.5, point.y() - 0.5, reach)

    def set_image(self, image, title, *, preview=None):
        """Show ``image`` (drawn from ``preview`` when given) and keep the patch selector inside it."""
        self.show_array(image, autorange=True, preview=preview)
        self.set_title(title)
        height, width = image.shape
        if not self._keypoint_frame:
            self.roi.maxBounds = QRectF(0, 0, width, height)

    def set_patch_size(self, size):
        if self._keypoint_frame:
            return
        x, y = self.patch_position()
        self.roi.setSize((size, size), update=False)
        self.set_patch_position(x, y)

    def patch_size(self):
        return int(round(self.roi.size()[0]))

    def patch_position(self):
        pos = self.roi.pos()
        return int(round(pos[0])), int(round(pos[1]))

    def set_patch_position(self, x, y):
        """Move the patch selector (clamped to the image, snapped to pixels)."""
        if self._keypoint_frame:
            return
        x, y = self._clamped(x, y)
        self.roi.setPos((x, y))
        self._on_roi_changed()

    def set_sites(self, sites, *, patch_size=0):
        """Draw patch sites as dots at their centres; ``sites`` is (S, 2) top-left (x, y)."""
        sites = np.asarray(sites, dtype=float).reshape(-1, 2)
        if len(sites) == 0 or len(sites) > MAX_SITES_DRAWN:
            self.sites_item.setData([], [])
            return
        centres = sites + patch_size / 2.0
        # A dense grid would hide the picture under its dots: draw them smaller.
        self.sites_item.setData(centres[:, 0], centres[:, 1], size=4 if len(sites) < 1000 else 2)

    def _clamped(self, x, y):
        size = self.patch_size()
        if self.array is None:
            return int(x), int(y)
        height, width = self.array.shape[:2]
        return (int(min(max(round(x), 0), max(width - size, 0))),
                int(min(max(round(y), 0), max(height - size, 0))))

    def _on_roi_changed(self):
        if self._keypoint_frame:
            return
        x, y = self._clamped(*self.roi.pos())
        if (x, y) != tuple(int(v) for v in self.roi.pos()):
            self.roi.setPos((x, y), update=False)
            self.roi.stateChanged(finish=False)
        if (x, y) != self._last:
            self._last = (x, y)
            self.patch_moved.emit(x, y)


class PatternPanel(QWidget):
    """Patch with the pattern overlay, frame-vector browser, weight and occurrence maps, keypoint chooser.

    Signals
    -------
    frame_index_changed(int)
        The frame vector to show: its row of ``L`` (from 0; the spin box
        numbers pairs from 1, as the paper).
    keypoint_chosen(int)
        The keypoint to show (library descriptors and feature files).
    """

    frame_index_changed = pyqtSignal(int)
    keypoint_chosen = pyqtSignal(int)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.patch = PatchCanvas("Patch & pattern")
        self.frame = ImageCanvas(f"Frame vector {pair_label(0)}", colormap_name=DIVERGING, colorbar=True,
                                 colorbar_label="L_i value")
        self.weights = ImageCanvas("Weight map", colormap_name=SEQUENTIAL, colorbar=True, colorbar_label="weight")
        self.occurrences = ImageCanvas("Occurrence map", colormap_name=SEQUENTIAL, colorbar=True,
                                       colorbar_label="occurrences")
        self.pairs_mode = QComboBox()
        for mode, text in (("all", "all pairs"), ("selected", "selected pair"), ("none", "no pairs")):
            self.pairs_mode.addItem(text, mode)
        self.pairs_mode.setToolTip("Pairs drawn over the patch: every pair (faint), the selected pair L_i, or none")
        self.show_fields = QCheckBox("fields")
        self.show_fields.setChecked(True)
        self.show_fields.setToolTip("Draw each receptive field as a faint circle of radius sigma")
        self.pairs_mode.currentIndexChanged.connect(self._on_overlay_changed)
        self.show_fields.toggled.connect(self._on_overlay_changed)
        self.slider = QSlider(Qt.Orientation.Horizontal)
        self.spin = QSpinBox()
        for widget in (self.slider, self.spin):
            widget.setRange(1, 1)
            widget.setToolTip("Pair i of the frame vector L_i, numbered from 1 as in the paper; it is drawn in red")
        self.slider.valueChanged.connect(self.spin.setValue)
        self.spin.valueChanged.connect(self.slider.setValue)
        self.spin.valueChanged.connect(lambda number: self.frame_index_changed.emit(number - 1))
        self.keypoint_label = QLabel("keypoint")
        self.keypoint_spin = QSpinBox()
        self.keypoint_spin.setRange(0, 0)
        self.keypoint_spin.setKeyboardTracking(False)
        self.keypoint_spin.setToolTip("The keypoint shown and solved (click one on the image; [ and ] step through)")
        self.keypoint_spin.valueChanged.connect(self.keypoint_chosen)
        self.show_keypoint_chooser(0)

        layout = QGridLayout(self)
        layout.setContentsMargins(2, 2, 2, 2)
        layout.addWidget(self.patch, 0, 0)
        layout.addWidget(self.frame, 0, 1)
        layout.addWidget(self.weights, 2, 0)
        layout.addWidget(self.occurrences, 2, 1)
        for column in (0, 1):
            layout.setColumnStretch(column, 1)
        for row in (0, 2):
            layout.setRowStretch(row, 1)
        overlay = QHBoxLayout()
        overlay.addWidget(QLabel("Overlay:"))
        overlay.addWidget(self.pairs_mode)
        overlay.addWidget(self.show_fields)
        overlay.addStretch(1)
        overlay.addWidget(self.keypoint_label)
        overlay.addWidget(self.keypoint_spin)
        layout.addLayout(overlay, 1, 0)
        browser = QHBoxLayout()
        browser.addWidget(QLabel("i ="))
        browser.addWidget(self.spin)
        browser.addWidget(self.slider, 1)
        layout.addLayout(browser, 1, 1)

    def set_measurements(self, m):
        """Range of the pair number (from 1) for ``m`` measurements."""
        for widget in (self.slider, self.spin):
            widget.setMaximum(max(m, 1))

    def frame_index(self):
        """The row of ``L`` of the pair shown (from 0: the spin box shows it numbered from 1)."""
        return self.spin.value() - 1

    def show_keypoint_chooser(self, count, index=None):
        """Offer keypoints ``0 .. count - 1`` (hidden when ``count`` is 0), showing ``index``, without signalling."""
        for widget in (self.keypoint_label, self.keypoint_spin):
            widget.setVisible(count > 0)
        self.keypoint_spin.blockSignals(True)
        self.keypoint_spin.setRange(0, max(count - 1, 0))
        if index is not None:
            self.keypoint_spin.setValue(int(index))
        self.keypoint_spin.setSuffix(f" of {count}" if count else "")
        self.keypoint_spin.blockSignals(False)

    def _on_overlay_changed(self):
        self.patch.set_overlay(self.pairs_mode.currentData(), self.show_fields.isChecked())
