"""The panels of the runs: the live solver and the whole image, with states that look different.

A run is running, paused, stopped (or cancelled), done, outdated or failed;
each state has its own label and bar colour (:data:`STATE_LOOKS`), so a
paused solve never passes for a running one and a cancelled estimate never
for a result. Panels only display and forward user intent as signals.
"""

from __future__ import annotations

import lbdviewer.gui.qt  # noqa: F401  (PyQt6 and row-major images, before any Qt library)

import numpy as np
import pyqtgraph as pg
from PyQt6.QtCore import Qt, pyqtSignal
from PyQt6.QtGui import QColor, QPalette
from PyQt6.QtWidgets import (
    QCheckBox,
    QHBoxLayout,
    QLabel,
    QProgressBar,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from lbdviewer.gui.canvas import ElidedLabel, ImageCanvas, adopt_menus

#: The live plots show at least this many iterations on their x axis.
MIN_ITERATIONS_SHOWN = 10
#: State -> (label, colour): the badge beside a run's bar and the bar's colour.
STATE_LOOKS = {
    "idle": ("Idle", "#7a7a7a"),
    "running": ("Running", "#2f80ed"),
    "paused": ("Paused", "#c98a00"),
    "stopped": ("Stopped", "#b0413e"),
    "cancelled": ("Cancelled", "#b0413e"),
    "finished": ("Done", "#2e8b57"),
    "completed": ("Done", "#2e8b57"),
    "outdated": ("Outdated", "#8a8a8a"),
    "failed": ("Failed", "#c0392b"),
}


#: The live plots show at least this many iterations on their x axis.
MIN_ITERATIONS_SHOWN = 10


def _recolour(widget, roles):
    """Set palette colours (``{role: "#rrggbb"}``) of ``widget``: no style sheet, so no re-polish on every change."""
    palette = widget.palette()
    for role, colour in roles.items():
        palette.setColor(role, QColor(colour))
    widget.setPalette(palette)


class StateBadge(QLabel):
    """A small coloured label naming a run's state (:data:`STATE_LOOKS`)."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.setAutoFillBackground(True)
        self.setMargin(2)
        width = max(self.fontMetrics().horizontalAdvance(text) for text, _ in STATE_LOOKS.values())
        self.setMinimumWidth(width + 14)
        self.state = None
        self.set_state("idle")

    def colour(self):
        """The badge's background colour (``#rrggbb``)."""
        return self.palette().color(QPalette.ColorRole.Window).name()

    def set_state(self, state):
        if state == self.state:
            return
        text, colour = STATE_LOOKS[state]
        self.state = state
        self.setText(text)
        _recolour(self, {QPalette.ColorRole.Window: colour, QPalette.ColorRole.WindowText: "#ffffff"})


def style_bar(bar, state):
    """Colour a progress bar's filled part by ``state`` (:data:`STATE_LOOKS`)."""
    if bar.property("state") != state:
        bar.setProperty("state", state)
        _recolour(bar, {QPalette.ColorRole.Highlight: STATE_LOOKS[state][1]})


def bar_colour(bar):
    """The colour (``#rrggbb``) a progress bar fills with."""
    return bar.palette().color(QPalette.ColorRole.Highlight).name()


def nice_span(count, *, least=MIN_ITERATIONS_SHOWN):
    """The x extent of a live plot for ``count`` iterations: at least ``least``, else the next of 1, 2, 5 x 10^k.

    The axis then moves only now and then, not with every iteration.

    Examples
    --------
    >>> nice_span(3), nice_span(12), nice_span(200), nice_span(201)
    (10, 20, 200, 500)
    """
    count = max(int(count), least)
    scale = 10 ** int(np.floor(np.log10(count)))
    return next(step * scale for step in (1, 2, 5, 10) if step * scale >= count)


class IntegerAxis(pg.AxisItem):
    """An axis whose ticks fall on integers only (iteration counts): never 0.5 or 2.5."""

    def tickSpacing(self, minVal, maxVal, size):  # noqa: N802, N803  (pyqtgraph's names)
        levels = [(spacing, offset) for spacing, offset in super().tickSpacing(minVal, maxVal, size)
                  if spacing >= 1 and float(spacing).is_integer()]
        return levels or [(1.0, 0.0)]


class LivePanel(QWidget):
    """The true patch beside the live estimate, the curves, the state and the transport buttons."""

    play_clicked = pyqtSignal()
    step_clicked = pyqtSignal()
    stop_clicked = pyqtSignal()
    delay_changed = pyqtSignal(int)

    REAL_VALUED_NOTE = "Real-valued run: no bits, so no bit consistency (the objective is the l1 misfit)"
    NOT_STARTED = "Live estimate: not started (Space plays, S steps)"

    def __init__(self, parent=None):
        super().__init__(parent)
        self.original = ImageCanvas("True patch")
        self.estimate = ImageCanvas(self.NOT_STARTED)
        self.objective_plot = pg.PlotWidget(axisItems={"bottom": IntegerAxis("bottom")})
        self.consistency_plot = pg.PlotWidget(axisItems={"bottom": IntegerAxis("bottom")})
        for plot, title, label in ((self.objective_plot, "Objective", "objective"),
                                   (self.consistency_plot, "Bit consistency", "consistent bits (%)")):
            plot.setTitle(title, size="10pt")
            plot.setLabel("bottom", "iteration")
            plot.setLabel("left", label)
            plot.showGrid(x=True, y=True, alpha=0.25)
            plot.setMouseEnabled(False, False)
            plot.setAcceptDrops(False)
            plot.setMenuEnabled(False)
            plot.hideButtons()
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
        self.badge = StateBadge()
        self.badge.setToolTip("State of the live solver")
        self.progress = QProgressBar()
        self.progress.setRange(0, 1)
        self.progress.setValue(0)
        self.progress.setFormat("%v / %m")
        self.progress.setMinimumWidth(60)
        self.progress.setToolTip("Iterations done of the solver's budget")
        style_bar(self.progress, "idle")
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
            buttons.addWidget(widget)
        buttons.addWidget(self.delay)
        buttons.addWidget(self.badge)
        buttons.addWidget(self.progress, 1)
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
        layout.setSpacing(3)
        layout.addLayout(top, 1)
        layout.addLayout(buttons)
        layout.addWidget(self.iteration_label)
        self.set_budget(1)

    def set_state_text(self, state):
        """The solver's state (:class:`~lbdviewer.gui.workers.JobRunner` ``state_changed``): button, badge, bar."""
        self.play_button.setText("Pause" if state == "running" else "Play")
        self.badge.set_state(state)
        style_bar(self.progress, state)

    def set_binary(self, binary):
        """Bit consistency exists for bits only: hide its plot (and say why) for real values."""
        self.consistency_plot.setVisible(binary)
        self.consistency_note.setVisible(not binary)

    def set_budget(self, iterations):
        """The iteration budget (the bar's end); the plots start on iterations 1 to 10, never an empty -5..5."""
        self.progress.setRange(0, max(int(iterations), 1))
        self._frame_plots(0)

    def _frame_plots(self, count, top=1.0, lowest=50.0):
        """x: iterations 1 to ``count`` (at least 10); y: 0 to ``top`` and ``lowest`` to 100 % (set on a change only)."""
        frame = (nice_span(count), top if top > 0 else 1.0, lowest)
        if frame == getattr(self, "_frame", None):
            return
        self._frame = frame
        for plot in (self.objective_plot, self.consistency_plot):
            plot.setXRange(1, frame[0], padding=0.02)
        self.objective_plot.setYRange(0, frame[1], padding=0.05)
        self.consistency_plot.setYRange(frame[2], 100, padding=0.02)

    def show_progress(self, text, objective, consistency):
        self.iteration_label.setText(text)
        iterations = np.arange(1, len(objective) + 1)
        objective = np.asarray(objective, dtype=float)
        self.objective_curve.setData(iterations, objective)
        self.progress.setValue(min(len(objective), self.progress.maximum()))
        lowest = 50.0
        if consistency is not None and len(consistency):
            percent = 100.0 * np.asarray(consistency, dtype=float)
            self.consistency_curve.setData(iterations[: len(consistency)], percent)
            lowest = min(lowest, float(np.floor(percent.min())))
        else:
            self.consistency_curve.setData([], [])
        self._frame_plots(len(objective), float(np.max(objective)) if objective.size else 1.0, lowest)

    def reset(self, title=None):
        """Nothing solved yet: no estimate (never the previous run's shown as current), empty curves."""
        self.iteration_label.setText("iteration 0")
        self.objective_curve.setData([], [])
        self.consistency_curve.setData([], [])
        self.progress.setValue(0)
        self._frame_plots(0)
        self.estimate.clear_array(title or self.NOT_STARTED)


class WholeImagePanel(QWidget):
    """Original and whole-image reconstruction side by side, with progress, state, coverage and cancel."""

    run_clicked = pyqtSignal()
    cancel_clicked = pyqtSignal()
    edges_toggled = pyqtSignal(bool)
    coverage_toggled = pyqtSignal(bool)

    EDGE_COLOUR = (255, 40, 40, 230)
    UNCOVERED_COLOUR = (40, 90, 255, 110)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.original = ImageCanvas("Original", interactive=True)
        self.result = ImageCanvas("Reconstruction", interactive=True)
        self.result.view.setXLink(self.original.view)
        self.result.view.setYLink(self.original.view)
        self.edges_item = pg.ImageItem(axisOrder="row-major")
        self.edges_item.setZValue(10)
        self.result.view.addItem(self.edges_item)
        self.coverage_item = pg.ImageItem(axisOrder="row-major")
        self.coverage_item.setZValue(9)
        self.result.view.addItem(self.coverage_item)
        self.run_button = QPushButton("Reconstruct image")
        self.run_button.setToolTip("Reconstruct the whole image with the current parameters (Ctrl+R)")
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setToolTip("Cancel the whole-image reconstruction (Esc)")
        self.cancel_button.setEnabled(False)
        self.badge = StateBadge()
        self.badge.setToolTip("State of the whole-image reconstruction")
        self.progress = QProgressBar()
        self.progress.setRange(0, 100)
        self.progress.setValue(0)
        self.progress.setFormat("%p%")
        style_bar(self.progress, "idle")
        self.edges_box = QCheckBox("edges")
        self.edges_box.setToolTip("Overlay the edges of the original on the reconstruction (as in the paper's Fig. 7)")
        self.coverage_box = QCheckBox("uncovered")
        self.coverage_box.setToolTip("Tint the pixels no patch or keypoint reaches (they are not reconstructed)")
        self.state_label = ElidedLabel("", elide=Qt.TextElideMode.ElideRight,
                                       align=Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter)
        self.state_label.setToolTip("State of the reconstruction shown")
        font = self.state_label.font()
        font.setBold(True)
        self.state_label.setFont(font)
        self.run_label = ElidedLabel("", elide=Qt.TextElideMode.ElideRight,
                                     align=Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter)
        self.run_label.setToolTip("What ran")
        self.metrics_label = ElidedLabel("", elide=Qt.TextElideMode.ElideRight,
                                         align=Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter)
        self.run_button.clicked.connect(self.run_clicked)
        self.cancel_button.clicked.connect(self.cancel_clicked)
        self.edges_box.toggled.connect(self.edges_toggled)
        self.coverage_box.toggled.connect(self.coverage_toggled)

        controls = QHBoxLayout()
        controls.addWidget(self.run_button)
        controls.addWidget(self.cancel_button)
        controls.addWidget(self.badge)
        controls.addWidget(self.progress, 1)
        details = QHBoxLayout()
        details.addWidget(self.edges_box)
        details.addWidget(self.coverage_box)
        details.addWidget(self.run_label, 1)
        views = QHBoxLayout()
        views.addWidget(self.original)
        views.addWidget(self.result)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(2, 2, 2, 2)
        layout.setSpacing(3)
        layout.addLayout(views, 1)
        layout.addWidget(self.state_label)  # across the panel: a state is read in full
        layout.addLayout(controls)
        layout.addLayout(details)
        layout.addWidget(self.metrics_label)

    def set_running(self, running):
        self.run_button.setEnabled(not running)
        self.cancel_button.setEnabled(running)

    def set_state(self, state, text=""):
        """Badge, bar colour and state line (``text``, in the state's colour) of the run's state (:data:`STATE_LOOKS`)."""
        if state != self.badge.state:
            _recolour(self.state_label, {QPalette.ColorRole.WindowText: STATE_LOOKS[state][1]})
        self.badge.set_state(state)
        style_bar(self.progress, state)
        self.state_label.setText(text)

    def set_edges(self, edges):
        """Overlay a boolean edge map (None hides it)."""
        self._set_mask(self.edges_item, edges, self.EDGE_COLOUR)

    def set_uncovered(self, uncovered):
        """Tint a boolean map of the pixels no patch reaches (None hides it)."""
        self._set_mask(self.coverage_item, uncovered, self.UNCOVERED_COLOUR)

    @staticmethod
    def _set_mask(item, mask, colour):
        if mask is None:
            item.clear()
            return
        rgba = np.zeros(mask.shape + (4,), dtype=np.uint8)
        rgba[mask] = colour
        item.setImage(rgba, autoLevels=False, levels=(0, 255))
