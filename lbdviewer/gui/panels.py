"""The panels of the main window: source image, pattern, live solver, whole image.

Panels only display and forward user intent as signals; the main window
(the controller) calls the core and feeds the panels.
"""

from __future__ import annotations

import lbdviewer.gui.qt  # noqa: F401  (PyQt6 and row-major images, before any Qt library)

import numpy as np
import pyqtgraph as pg
from PyQt6.QtCore import QRectF, Qt, pyqtSignal
from PyQt6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QProgressBar,
    QPushButton,
    QSlider,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from lbdviewer.gui.canvas import DIVERGING, SEQUENTIAL, ElidedLabel, ImageCanvas, PatchCanvas, adopt_menus

MAX_SITES_DRAWN = 4000
ROI_COLOUR = (255, 60, 60)
SITE_COLOUR = (80, 200, 255, 170)


class SourceView(ImageCanvas):
    """The loaded image with the square patch selector and the patch sites.

    Signals
    -------
    patch_moved(int, int)
        Top-left ``(x, y)`` = (column, row) of the patch, integer pixels.
    """

    patch_moved = pyqtSignal(int, int)

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
        self.keypoints_item = pg.ScatterPlotItem(pxMode=False, brush=None, pen=pg.mkPen((255, 200, 0), width=1.5))
        self.keypoints_item.setZValue(6)
        self.view.addItem(self.keypoints_item)
        self.roi.sigRegionChanged.connect(self._on_roi_changed)
        self._last = None

    def set_keypoints(self, x, y=None, size=None):
        """Draw keypoints as circles of their diameter ``size`` (None clears)."""
        if x is None:
            self.keypoints_item.setData([], [])
            return
        self.keypoints_item.setData(np.asarray(x) + 0.5, np.asarray(y) + 0.5, size=np.maximum(np.asarray(size), 2.0))

    def set_image(self, image, title, *, preview=None):
        """Show ``image`` (drawn from ``preview`` when given) and keep the patch selector inside it."""
        self.show_array(image, autorange=True, preview=preview)
        self.set_title(title)
        height, width = image.shape
        self.roi.maxBounds = QRectF(0, 0, width, height)

    def set_patch_size(self, size):
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
        x, y = self._clamped(*self.roi.pos())
        if (x, y) != tuple(int(v) for v in self.roi.pos()):
            self.roi.setPos((x, y), update=False)
            self.roi.stateChanged(finish=False)
        if (x, y) != self._last:
            self._last = (x, y)
            self.patch_moved.emit(x, y)


class PatternPanel(QWidget):
    """Patch with the pattern overlay, frame-vector browser, weight and occurrence maps.

    Signals
    -------
    frame_index_changed(int)
        The frame vector ``L_i`` to show.
    """

    frame_index_changed = pyqtSignal(int)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.patch = PatchCanvas("Patch & pattern")
        self.frame = ImageCanvas("Frame vector L_0", colormap_name=DIVERGING, colorbar=True,
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
            widget.setRange(0, 0)
            widget.setToolTip("Index i of the frame vector L_i (row i of the operator); its pair is drawn in red")
        self.slider.valueChanged.connect(self.spin.setValue)
        self.spin.valueChanged.connect(self.slider.setValue)
        self.spin.valueChanged.connect(self.frame_index_changed)

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
        layout.addLayout(overlay, 1, 0)
        browser = QHBoxLayout()
        browser.addWidget(QLabel("i ="))
        browser.addWidget(self.spin)
        browser.addWidget(self.slider, 1)
        layout.addLayout(browser, 1, 1)

    def set_measurements(self, m):
        """Range of the frame-vector index for ``m`` measurements."""
        for widget in (self.slider, self.spin):
            widget.setMaximum(max(m - 1, 0))

    def frame_index(self):
        return self.spin.value()

    def _on_overlay_changed(self):
        self.patch.set_overlay(self.pairs_mode.currentData(), self.show_fields.isChecked())


class LivePanel(QWidget):
    """The true patch beside the live estimate, the curves, the state line and transport buttons."""

    play_clicked = pyqtSignal()
    step_clicked = pyqtSignal()
    stop_clicked = pyqtSignal()
    delay_changed = pyqtSignal(int)

    REAL_VALUED_NOTE = "Real-valued run: no bits, so no bit consistency (the objective is the l1 misfit)"

    def __init__(self, parent=None):
        super().__init__(parent)
        self.original = ImageCanvas("True patch")
        self.estimate = ImageCanvas("Live estimate")
        self.objective_plot = pg.PlotWidget()
        self.consistency_plot = pg.PlotWidget()
        for plot, title, label in ((self.objective_plot, "Objective", "objective"),
                                   (self.consistency_plot, "Bit consistency", "consistent bits (%)")):
            plot.setTitle(title, size="10pt")
            plot.setLabel("bottom", "iteration")
            plot.setLabel("left", label)
            plot.showGrid(x=True, y=True, alpha=0.25)
            plot.setMouseEnabled(False, False)
            plot.setAcceptDrops(False)
            plot.setMenuEnabled(False)
            adopt_menus(plot.getPlotItem(), self)
        self.objective_curve = self.objective_plot.plot(pen=pg.mkPen((255, 170, 0), width=2))
        self.consistency_curve = self.consistency_plot.plot(pen=pg.mkPen((0, 200, 255), width=2))
        self.consistency_note = QLabel(self.REAL_VALUED_NOTE)
        self.consistency_note.setWordWrap(True)
        self.consistency_note.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.consistency_note.setVisible(False)
        self.iteration_label = ElidedLabel("iteration 0", elide=Qt.TextElideMode.ElideRight,
                                           align=Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter)
        self.iteration_label.setToolTip("Iterations the live solver has done for this patch, and why it stopped")
        self.play_button = QPushButton("Play")
        self.play_button.setToolTip("Play / pause the live solver (Space)")
        self.step_button = QPushButton("Step")
        self.step_button.setToolTip("Pause and do one iteration (S)")
        self.stop_button = QPushButton("Stop")
        self.stop_button.setToolTip("Stop the live solver (Esc)")
        self.delay = QSpinBox()
        self.delay.setRange(0, 500)
        self.delay.setSuffix(" ms/it")
        self.delay.setPrefix("delay ")
        self.delay.setToolTip("Slow motion: wait this long between iterations while playing")
        self.play_button.clicked.connect(self.play_clicked)
        self.step_button.clicked.connect(self.step_clicked)
        self.stop_button.clicked.connect(self.stop_clicked)
        self.delay.valueChanged.connect(self.delay_changed)

        buttons = QHBoxLayout()
        for widget in (self.play_button, self.step_button, self.stop_button):
            widget.setMaximumWidth(widget.fontMetrics().horizontalAdvance("Pause") + 28)
            buttons.addWidget(widget)
        buttons.addWidget(self.delay)
        buttons.addWidget(self.iteration_label, 1)
        plots = QVBoxLayout()
        plots.addWidget(self.objective_plot)
        plots.addWidget(self.consistency_plot)
        plots.addWidget(self.consistency_note)
        top = QHBoxLayout()
        top.addWidget(self.original, 1)
        top.addWidget(self.estimate, 1)
        top.addLayout(plots, 1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(2, 2, 2, 2)
        layout.addLayout(top, 1)
        layout.addLayout(buttons)

    def set_state_text(self, state):
        self.play_button.setText("Pause" if state == "running" else "Play")

    def set_binary(self, binary):
        """Bit consistency exists for bits only: hide its plot (and say why) for real values."""
        self.consistency_plot.setVisible(binary)
        self.consistency_note.setVisible(not binary)

    def show_progress(self, text, objective, consistency):
        self.iteration_label.setText(text)
        iterations = np.arange(1, len(objective) + 1)
        self.objective_curve.setData(iterations, np.asarray(objective, dtype=float))
        if consistency is not None and len(consistency):
            self.consistency_curve.setData(iterations[: len(consistency)], 100.0 * np.asarray(consistency, dtype=float))
        else:
            self.consistency_curve.setData([], [])

    def reset(self):
        self.iteration_label.setText("iteration 0")
        self.objective_curve.setData([], [])
        self.consistency_curve.setData([], [])


class WholeImagePanel(QWidget):
    """Original and whole-image reconstruction side by side, with progress and cancel."""

    run_clicked = pyqtSignal()
    cancel_clicked = pyqtSignal()
    edges_toggled = pyqtSignal(bool)

    EDGE_COLOUR = (255, 40, 40, 230)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.original = ImageCanvas("Original", interactive=True)
        self.result = ImageCanvas("Reconstruction", interactive=True)
        self.result.view.setXLink(self.original.view)
        self.result.view.setYLink(self.original.view)
        self.edges_item = pg.ImageItem(axisOrder="row-major")
        self.edges_item.setZValue(10)
        self.result.view.addItem(self.edges_item)
        self.run_button = QPushButton("Reconstruct image")
        self.run_button.setToolTip("Reconstruct the whole image with the current parameters (Ctrl+R)")
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setToolTip("Cancel the whole-image reconstruction")
        self.cancel_button.setEnabled(False)
        self.progress = QProgressBar()
        self.progress.setRange(0, 100)
        self.progress.setValue(0)
        self.progress.setFormat("%p%")
        self.edges_box = QCheckBox("edges")
        self.edges_box.setToolTip("Overlay the edges of the original on the reconstruction (as in the paper's Fig. 7)")
        self.metrics_label = ElidedLabel("", elide=Qt.TextElideMode.ElideRight,
                                         align=Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter)
        self.run_button.clicked.connect(self.run_clicked)
        self.cancel_button.clicked.connect(self.cancel_clicked)
        self.edges_box.toggled.connect(self.edges_toggled)

        controls = QHBoxLayout()
        controls.addWidget(self.run_button)
        controls.addWidget(self.cancel_button)
        controls.addWidget(self.progress, 1)
        controls.addWidget(self.edges_box)
        details = QHBoxLayout()
        details.addWidget(self.metrics_label, 1)
        views = QHBoxLayout()
        views.addWidget(self.original)
        views.addWidget(self.result)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(2, 2, 2, 2)
        layout.addLayout(views, 1)
        layout.addLayout(controls)
        layout.addLayout(details)

    def set_running(self, running):
        self.run_button.setEnabled(not running)
        self.cancel_button.setEnabled(running)

    def set_edges(self, edges):
        """Overlay a boolean edge map (None hides it)."""
        if edges is None:
            self.edges_item.clear()
            return
        rgba = np.zeros(edges.shape + (4,), dtype=np.uint8)
        rgba[edges] = self.EDGE_COLOUR
        self.edges_item.setImage(rgba, autoLevels=False, levels=(0, 255))
