"""The main window: the controller between the parameter model, the core and the panels.

Layout (QMainWindow docks, remembered with QSettings): parameters on the
left, the image with the patch selector in the centre, the pattern panel and
the live solver on the right, the whole-image reconstruction at the bottom.

Work that can take long (the live solver, the whole image, composed figures)
runs on worker threads through :class:`~lbdviewer.gui.workers.JobRunner`;
the slots below only copy results into widgets.
"""

from __future__ import annotations

import lbdviewer.gui.qt  # noqa: F401  (PyQt6 and row-major images, before any Qt library)

import os

import numpy as np
from PyQt6.QtCore import QSettings, Qt, QTimer, pyqtSignal
from PyQt6.QtGui import QAction, QKeySequence
from PyQt6.QtWidgets import (
    QDockWidget,
    QFileDialog,
    QInputDialog,
    QLabel,
    QMainWindow,
    QMessageBox,
)

from lbdviewer import io
from lbdviewer.gui import jobs
from lbdviewer.gui.controls import ParametersPanel
from lbdviewer.gui.export import export_panels
from lbdviewer.gui.model import Parameters
from lbdviewer.gui.panels import LivePanel, PatternPanel, SourceView, WholeImagePanel
from lbdviewer.gui.workers import JobRunner, stop_all
from lbdviewer.operators import DescriptorOperator

DEFAULT_SAMPLE = "camera"
DEBOUNCE_MS = 250
PATCH_DEBOUNCE_MS = 60
MAX_RECENT = 8
IMAGE_FILTER = "Images (*.png *.jpg *.jpeg *.tif *.tiff *.bmp);;All files (*)"
FIGURE_FAMILIES = ("brief", "freak", "ra-freak", "ex-freak")


class MainWindow(QMainWindow):
    """The lbdviewer main window.

    Parameters
    ----------
    settings : QSettings, optional
        Where the layout, the last folder and the recent files live (tests
        pass a temporary INI file); default: the user's lbdviewer settings.
    load_sample : bool
        Open the default sample image at once.

    Signals
    -------
    image_loaded(str)
        A new image is shown (its source).
    live_finished(bool), whole_finished(bool)
        A live / whole-image job ended (True: ran to completion).
    """

    image_loaded = pyqtSignal(str)
    live_finished = pyqtSignal(bool)
    whole_finished = pyqtSignal(bool)
    exported = pyqtSignal(str)

    def __init__(self, settings=None, *, load_sample=True, parameters=None):
        super().__init__()
        self.setWindowTitle("lbdviewer — from bits to images")
        self.setAcceptDrops(True)
        self.settings = settings if settings is not None else QSettings("lbdviewer", "lbdviewer")
        self.parameters = parameters if parameters is not None else Parameters()
        self.image = None
        self.image_source = None
        self.pattern = None
        self.operator = None
        self.whole_result = None
        self.whole_parameters = None
        self.features = None
        self.sites = np.empty((0, 2), dtype=np.int64)
        self.live_update = None
        self.message_box = None
        self._live_hold = False

        self.source = SourceView()
        self.pattern_panel = PatternPanel()
        self.live = LivePanel()
        self.whole = WholeImagePanel()
        self.controls = ParametersPanel(self.parameters)
        self.setCentralWidget(self.source)
        self.docks = {}
        self._add_dock("parameters", "Parameters", self.controls, Qt.DockWidgetArea.LeftDockWidgetArea)
        self._add_dock("pattern", "Patch and pattern", self.pattern_panel, Qt.DockWidgetArea.RightDockWidgetArea)
        self._add_dock("live", "Live reconstruction", self.live, Qt.DockWidgetArea.RightDockWidgetArea)
        self._add_dock("whole", "Whole image", self.whole, Qt.DockWidgetArea.BottomDockWidgetArea)
        self.setCorner(Qt.Corner.BottomLeftCorner, Qt.DockWidgetArea.LeftDockWidgetArea)
        self.setCorner(Qt.Corner.BottomRightCorner, Qt.DockWidgetArea.RightDockWidgetArea)

        self.live_runner = JobRunner(self)
        self.whole_runner = JobRunner(self, interval=0.1)
        self.figure_runner = JobRunner(self, interval=0.0)  # every family counts
        self.parameter_timer = self._single_shot(DEBOUNCE_MS, self.rebuild)
        self.patch_timer = self._single_shot(PATCH_DEBOUNCE_MS, self.restart_live)

        self.status_label = QLabel()
        self.statusBar().addPermanentWidget(self.status_label)
        self._build_menus()
        self._connect()
        self.resize(1600, 1000)
        self._default_layout = self.saveState()
        self._restore_layout()
        self._apply_patch_size()
        if load_sample:
            self.load_sample(DEFAULT_SAMPLE)

    # -- construction ------------------------------------------------------------
    def _add_dock(self, key, title, widget, area):
        dock = QDockWidget(title, self)
        dock.setObjectName(f"dock-{key}")
        dock.setWidget(widget)
        dock.setFeatures(QDockWidget.DockWidgetFeature.DockWidgetMovable
                         | QDockWidget.DockWidgetFeature.DockWidgetFloatable
                         | QDockWidget.DockWidgetFeature.DockWidgetClosable)
        self.addDockWidget(area, dock)
        self.docks[key] = dock

    def _single_shot(self, msecs, slot):
        timer = QTimer(self)
        timer.setSingleShot(True)
        timer.setInterval(msecs)
        timer.timeout.connect(slot)
        return timer

    def _action(self, menu, text, slot, shortcut=None, tip=None):
        action = QAction(text, self)
        if shortcut:
            action.setShortcut(QKeySequence(shortcut))
            action.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
        if tip:
            action.setStatusTip(tip)
            action.setToolTip(tip)
        action.triggered.connect(slot)
        menu.addAction(action)
        self.addAction(action)
        return action

    def _build_menus(self):
        bar = self.menuBar()
        file_menu = bar.addMenu("&File")
        self._action(file_menu, "&Open image…", self.open_dialog, "Ctrl+O", "Open an image file")
        self.recent_menu = file_menu.addMenu("Open &recent")
        self._action(file_menu, "Open &features…", self.open_features_dialog, None,
                     "Open a feature file (keypoints and bits) and reconstruct from it")
        file_menu.addSeparator()
        self._action(file_menu, "&Export panel…", self.export_dialog, "Ctrl+E",
                     "Export a panel as a pixel-exact PNG with a JSON of its parameters")
        figure_menu = file_menu.addMenu("Export &figure")
        for key, text in (("families", "Patch: original | BRIEF | FREAK | RA-FREAK | EX-FREAK"),
                          ("maps", "Pattern: weight | occurrence | frame vector"),
                          ("live", "Patch: original | live reconstruction"),
                          ("whole", "Image: original | reconstruction")):
            self._action(figure_menu, text, lambda checked=False, key=key: self.export_figure_dialog(key))
        file_menu.addSeparator()
        self._action(file_menu, "&Quit", self.close, "Ctrl+Q", "Quit lbdviewer")

        samples_menu = bar.addMenu("&Samples")
        for name in io.sample_images():
            self._action(samples_menu, name, lambda checked=False, name=name: self.load_sample(name),
                         tip=f"Open the sample image {name!r}")

        run_menu = bar.addMenu("&Run")
        self._action(run_menu, "Play / pause", self.play_pause, "Space", "Play or pause the live solver")
        self._action(run_menu, "Step", self.step, "S", "Pause the live solver and do one iteration")
        self._action(run_menu, "Stop", self.stop, "Esc", "Stop the live solver and the whole-image job")
        run_menu.addSeparator()
        self._action(run_menu, "Reconstruct whole image", self.run_whole, "Ctrl+R",
                     "Reconstruct the whole image with the current parameters")
        self._action(run_menu, "Cancel whole image", self.whole_runner.stop, None,
                     "Cancel the whole-image reconstruction")

        view_menu = bar.addMenu("&View")
        for dock in self.docks.values():
            view_menu.addAction(dock.toggleViewAction())
        view_menu.addSeparator()
        self.stretch_action = self._action(
            view_menu, "Stretch reconstruction contrast", self._restretch, None,
            "Show reconstructions from their minimum to their maximum (they are known up to gain and offset)")
        self.stretch_action.setCheckable(True)
        self.stretch_action.setChecked(True)
        self._action(view_menu, "Reset layout", self.reset_layout)
        self._update_recent_menu()

    def _connect(self):
        self.parameters.subscribe(self._on_parameter_changed)
        self.controls.refused.connect(self.show_status)
        self.source.patch_moved.connect(self._on_patch_moved)
        self.pattern_panel.frame_index_changed.connect(self._show_frame_vector)
        self.live.play_clicked.connect(self.play_pause)
        self.live.step_clicked.connect(self.step)
        self.live.stop_clicked.connect(self.stop)
        self.live.delay_changed.connect(lambda ms: self.live_runner.set_delay(ms / 1000.0))
        self.live_runner.progressed.connect(self._on_live_update)
        self.live_runner.finished.connect(self._on_live_finished)
        self.live_runner.failed.connect(lambda message: self.show_status(f"Live solver failed: {message}"))
        self.live_runner.state_changed.connect(self.live.set_state_text)
        self.whole.run_clicked.connect(self.run_whole)
        self.whole.cancel_clicked.connect(self.whole_runner.stop)
        self.whole.edges_toggled.connect(self._show_edges)
        self.whole_runner.progressed.connect(self._on_whole_progress)
        self.whole_runner.finished.connect(self._on_whole_finished)
        self.whole_runner.failed.connect(self._on_whole_failed)
        self.figure_runner.failed.connect(lambda message: self.show_status(f"Figure failed: {message}"))

    # -- settings ---------------------------------------------------------------
    def _restore_layout(self):
        geometry = self.settings.value("window/geometry")
        state = self.settings.value("window/state")
        if geometry is not None:
            self.restoreGeometry(geometry)
        if state is not None:
            self.restoreState(state)
        self._needs_default_sizes = state is None

    def showEvent(self, event):
        super().showEvent(event)
        if self._needs_default_sizes:  # dock sizes only take once the window has its size
            self._needs_default_sizes = False
            self._default_sizes()

    def _default_sizes(self):
        width, height = self.width(), self.height()
        self.resizeDocks([self.docks["parameters"]], [250], Qt.Orientation.Horizontal)
        self.resizeDocks([self.docks["pattern"]], [int(0.47 * width)], Qt.Orientation.Horizontal)
        self.resizeDocks([self.docks["pattern"], self.docks["live"]], [int(0.55 * height), int(0.45 * height)],
                         Qt.Orientation.Vertical)
        self.resizeDocks([self.docks["whole"]], [int(0.36 * height)], Qt.Orientation.Vertical)

    def reset_layout(self):
        self.restoreState(self._default_layout)
        for dock in self.docks.values():
            dock.show()
        self._default_sizes()

    def last_folder(self):
        return str(self.settings.value("paths/last_folder", os.path.expanduser("~")))

    def _remember_folder(self, path):
        self.settings.setValue("paths/last_folder", os.path.dirname(os.path.abspath(path)))

    def recent_files(self):
        value = self.settings.value("paths/recent", [])
        if isinstance(value, str):
            value = [value]
        return [str(v) for v in (value or [])]

    def _add_recent(self, path):
        path = os.path.abspath(path)
        recent = [path] + [p for p in self.recent_files() if p != path]
        self.settings.setValue("paths/recent", recent[:MAX_RECENT])
        self._update_recent_menu()

    def _update_recent_menu(self):
        self.recent_menu.clear()
        for path in self.recent_files():
            action = self.recent_menu.addAction(os.path.basename(path))
            action.setToolTip(path)
            action.triggered.connect(lambda checked=False, path=path: self.load_path(path))
        self.recent_menu.setEnabled(bool(self.recent_files()))

    # -- status and errors ------------------------------------------------------
    def show_status(self, text, msecs=8000):
        self.statusBar().showMessage(text, msecs)

    def show_error(self, title, text):
        """A non-blocking warning box (kept in ``message_box`` so tests can read it)."""
        if self.message_box is not None:
            self.message_box.close()
        self.message_box = QMessageBox(QMessageBox.Icon.Warning, title, text, QMessageBox.StandardButton.Ok, self)
        self.message_box.open()
        self.show_status(f"{title}: {text}")

    # -- loading ----------------------------------------------------------------
    def dragEnterEvent(self, event):
        if self._dropped_path(event.mimeData()) is not None:
            event.acceptProposedAction()
        else:
            event.ignore()

    def dragMoveEvent(self, event):
        self.dragEnterEvent(event)

    def dropEvent(self, event):
        path = self._dropped_path(event.mimeData())
        if path is None:
            event.ignore()
            return
        event.acceptProposedAction()
        if path.lower().endswith(".npz"):
            self.load_features_path(path)
        else:
            self.load_path(path)

    @staticmethod
    def _dropped_path(mime):
        if mime is None or not mime.hasUrls():
            return None
        for url in mime.urls():
            if url.isLocalFile():
                return url.toLocalFile()
        return None

    def open_dialog(self):
        path, _ = QFileDialog.getOpenFileName(self, "Open image", self.last_folder(), IMAGE_FILTER)
        if path:
            self.load_path(path)

    def load_path(self, path):
        """Load an image file; on failure show why and keep the current image."""
        try:
            image = io.load_image(path)
        except ValueError as error:
            self.show_error("Could not open image", str(error))
            return False
        if not self._accept_image(image, os.path.basename(path)):
            return False
        self._remember_folder(path)
        self._add_recent(path)
        self.set_image(image, os.path.abspath(path))
        return True

    def load_sample(self, name):
        image = io.sample_image(name)
        if self._accept_image(image, name):
            self.set_image(image, f"sample:{name}")

    def _accept_image(self, image, label):
        size = self.parameters.patch_size
        if min(image.shape) < size:
            self.show_error("Image too small",
                            f"{label} is {image.shape[1]}x{image.shape[0]} pixels, smaller than the "
                            f"{size}x{size} patch: choose a smaller patch size first")
            return False
        return True

    def set_image(self, image, source):
        """Show a float image in [0, 1] (H, W) and restart the views on it.

        After a feature file, an image of the described size is taken for its
        original: it is shown beside the inversion, which goes on undisturbed.
        """
        if self.features is not None and image.shape == tuple(self.features.image_shape):
            self._show_features_original(image, source)
            return
        self.whole_runner.stop()
        self.features = None
        self.source.set_keypoints(None)
        self.image = np.ascontiguousarray(image)
        self.image_source = source
        height, width = image.shape
        self.source.set_image(self.image, f"{os.path.basename(source)}  ({width}x{height})")
        self.whole.original.show_array(self.image, autorange=True, metadata={"source": source})
        self.whole.result.clear_array("Reconstruction (Ctrl+R)")
        self.whole_result = None
        self.whole.set_edges(None)
        self.whole.edges_box.setChecked(False)
        self.whole.progress.setValue(0)
        self.whole.metrics_label.setText("")
        self.source.set_patch_position(*self._textured_position())
        self.setWindowTitle(f"lbdviewer — {os.path.basename(source)}")
        self.rebuild()
        self.show_status(f"Loaded {source} ({width}x{height})")
        self.image_loaded.emit(source)

    def _show_features_original(self, image, source):
        self.image = np.ascontiguousarray(image)
        self.image_source = source
        name = os.path.basename(source)
        self.source.set_image(self.image, f"{name} with the {len(self.features.keypoints.x)} "
                                          f"{self.features.descriptor} keypoints of the feature file")
        self.whole.original.show_array(self.image, autorange=True, metadata={"source": source})
        self.whole.original.set_title(f"Original: {name}")
        if self.whole_result is not None:
            self._show_whole_metrics()
        self.rebuild()
        self.show_status(f"Loaded {source} as the original of the feature file")
        self.image_loaded.emit(source)

    def _original_of_features_loaded(self):
        return self.features is not None and self.image_source != self.whole_parameters.get("features")

    def _textured_position(self):
        """Top-left (x, y) of the grid patch with the most contrast: a telling first patch."""
        size = self.parameters.patch_size
        sites = jobs.image_sites(self.image, {**self.parameters.as_dict(), "sites": "grid", "offset": size})
        spread = [np.ptp(self.image[r : r + size, c : c + size]) for r, c in sites]
        row, col = sites[int(np.argmax(spread))]
        return int(col), int(row)

    def open_features_dialog(self):
        path, _ = QFileDialog.getOpenFileName(self, "Open features", self.last_folder(),
                                              "Feature files (*.npz);;All files (*)")
        if path:
            self.load_features_path(path)

    def load_features_path(self, path):
        """Open a feature file: its keypoints on an empty canvas, then invert its bits progressively."""
        from lbdviewer.features import load_features

        try:
            features = load_features(path)
        except ValueError as error:
            self.show_error("Could not open features", str(error))
            return False
        height, width = features.image_shape
        if not self._accept_image(np.zeros((height, width)), os.path.basename(path)):
            return False
        self._remember_folder(path)
        self.set_image(np.zeros((height, width)), os.path.abspath(path))
        self.features = features
        kp = features.keypoints
        self.source.set_keypoints(np.asarray(kp.x), np.asarray(kp.y), np.asarray(kp.size))
        self.source.set_title(f"{os.path.basename(path)}: {len(kp.x)} {features.descriptor} keypoints "
                              f"({width}x{height}, no pixels)")
        self.whole.original.set_title("Original (not in the feature file)")
        self.whole_parameters = {**self.parameters.as_dict(), "features": os.path.abspath(path),
                                 "descriptor": features.descriptor}
        self.whole.set_running(True)
        self.whole.result.set_title(f"Inverting {len(kp.x)} {features.descriptor} descriptors…")
        self.whole_runner.start(jobs.feature_updates(features, self.parameters.as_dict()))
        return True

    # -- parameters -> pattern, operator, views ------------------------------------
    def _on_parameter_changed(self, name, value):
        if name == "patch_size":
            self._apply_patch_size()
        self.show_status(f"{name} = {value}", 3000)
        self.parameter_timer.start()

    def _apply_patch_size(self):
        self.source.set_patch_size(self.parameters.patch_size)

    def rebuild(self):
        """Make the pattern and operator for the current parameters and refresh every view."""
        self.parameter_timer.stop()
        p = self.parameters.as_dict()
        try:
            self.pattern = jobs.pattern_for(p)
            self.operator = DescriptorOperator(self.pattern)
        except ValueError as error:
            self.show_error("Invalid parameters", str(error))
            return
        self.pattern_panel.patch.set_pattern(self.pattern)
        self.pattern_panel.set_measurements(self.pattern.m)
        self.pattern_panel.weights.show_array(self.operator.weight_map(), levels=_levels(self.operator.weight_map()),
                                              metadata={"pattern": self.pattern.describe_params()})
        occurrences = self.operator.occurrence_map()
        self.pattern_panel.occurrences.show_array(occurrences, levels=(0.0, max(1.0, float(occurrences.max()))),
                                                  metadata={"pattern": self.pattern.describe_params()})
        self._show_frame_vector(self.pattern_panel.frame_index())
        self._update_sites()
        self._update_patch_view()
        self.status_label.setText(f"{self.pattern.name.upper()}  P={self.pattern.patch_size}  M={self.pattern.m}  "
                                  f"{self.parameters.solver}  {'bits' if self.parameters.binary else 'real'}")
        if self.whole_result is not None and self.whole_parameters != p:
            self.whole.result.set_title("Reconstruction (parameters changed: Ctrl+R to update)")
        self.restart_live()

    def _show_frame_vector(self, index):
        if self.operator is None:
            return
        index = min(int(index), self.operator.m - 1)
        vector = self.operator.frame_vector(index)
        bound = max(float(np.abs(vector).max()), 1e-12)
        i, j = self.pattern.pairs[index]
        self.pattern_panel.frame.show_array(vector, levels=(-bound, bound),
                                            metadata={"frame_index": index, "pattern": self.pattern.describe_params()})
        self.pattern_panel.frame.set_title(f"Frame vector L_{index}  (fields {i} − {j})")
        self.pattern_panel.patch.highlight_pair(index)

    def _update_sites(self):
        """Draw the whole-image patch sites (grid or FAST keypoints) on the image."""
        if self.image is None:
            return
        self.sites = jobs.image_sites(self.image, self.parameters.as_dict())
        self.source.set_sites(self.sites[:, ::-1], patch_size=self.parameters.patch_size)

    def current_patch(self):
        x, y = self.source.patch_position()
        size = self.parameters.patch_size
        return self.image[y : y + size, x : x + size]

    def _update_patch_view(self):
        if self.image is None or self.operator is None:
            return
        x, y = self.source.patch_position()
        self.pattern_panel.patch.show_array(self.current_patch(), metadata={"patch_xy": [x, y]})
        self.pattern_panel.patch.set_title(f"Patch ({x}, {y}) + {self.pattern.name.upper()} pattern")

    def _on_patch_moved(self, x, y):
        if self.operator is None or self.pattern.patch_size != self.source.patch_size():
            return
        self._update_patch_view()
        self.patch_timer.start()

    # -- live solver -------------------------------------------------------------
    def restart_live(self, *, paused=None):
        """(Re)start the live solver on the current patch."""
        self.patch_timer.stop()
        if self.image is None or self.operator is None:
            return
        paused = self._live_hold if paused is None else paused
        data = self.operator.describe(self.current_patch()[None], binary=self.parameters.binary)
        self.live.reset()
        self.live_update = None
        self.live_runner.start(jobs.live_updates(self.operator, data, self.parameters.as_dict()),
                               paused=paused, delay=self.live.delay.value() / 1000.0)

    def play_pause(self):
        if self.live_runner.running:
            self._live_hold = not self.live_runner.paused
            self.live_runner.toggle()
        else:
            self._live_hold = False
            self.restart_live(paused=False)

    def step(self):
        self._live_hold = True
        if not self.live_runner.running:
            self.restart_live(paused=True)
        self.live_runner.step()

    def stop(self):
        self.live_runner.stop()
        self.whole_runner.stop()

    def _on_live_update(self, update):
        self.live_update = update
        x, y = self.source.patch_position()
        self.live.estimate.show_array(update.estimate, levels=self._display_levels(update.estimate), metadata={"patch_xy": [x, y], "iteration": update.iteration})
        self.live.show_progress(update.iteration, update.objective, update.bit_consistency)

    def _restretch(self):
        for canvas in (self.live.estimate, self.whole.result):
            if canvas.array is not None:
                canvas.show_array(canvas.array, levels=self._display_levels(canvas.array), metadata=canvas.metadata)

    def _on_live_finished(self, completed):
        if completed and self.live_update is not None:
            u = self.live_update
            consistency = "" if u.bit_consistency is None else f", {100 * u.bit_consistency[-1]:.1f} % bits consistent"
            self.show_status(f"Live solver done: {u.iteration} iterations{consistency}")
        self.live_finished.emit(completed)

    def _display_levels(self, array):
        """Display levels of a reconstruction: [0, 1], or its own range when stretching."""
        if not self.stretch_action.isChecked():
            return (0.0, 1.0)
        return _levels(array)

    # -- whole image ----------------------------------------------------------------
    def run_whole(self):
        """Reconstruct the whole image on a worker thread (progress, cancel)."""
        if self.image is None or self.operator is None:
            return
        self.whole_parameters = self.parameters.as_dict()
        self.whole_result = None
        self.whole.set_running(True)
        self.whole.progress.setValue(0)
        self.whole.result.set_title("Reconstruction — running…")
        if len(self.sites) == 0:
            self.show_error("Nothing to reconstruct", "no patch site fits in the image with these parameters")
            self.whole.set_running(False)
            return
        self.whole_runner.start(jobs.whole_image_updates(self.image, self.pattern, self.sites,
                                                         self.whole_parameters))
        self.show_status("Reconstructing the whole image…")

    def _on_whole_progress(self, update):
        self.whole.progress.setValue(int(round(100 * update.fraction)))
        if update.image is not None:
            self.whole.result.show_array(update.image, levels=self._display_levels(update.image),
                                         metadata={"parameters": self.whole_parameters})
        if update.result is not None:
            self.whole_result = update.result

    def _on_whole_finished(self, completed):
        self.whole.set_running(False)
        if completed and self.features is not None:
            self.whole.result.set_title(f"Inverted from {self.features.descriptor} bits alone")
            if self._original_of_features_loaded():
                self._show_whole_metrics()
            self.show_status("Feature file inverted: open the original image to compare")
        elif completed and self.whole_result is not None:
            self.whole.result.set_title(self._whole_title())
            self._show_whole_metrics()
            self._show_edges(self.whole.edges_box.isChecked())
            self.show_status("Whole image reconstructed")
        else:
            self.whole.result.set_title("Reconstruction — cancelled")
            self.show_status("Whole-image reconstruction cancelled")
        self.whole_finished.emit(completed)

    def _on_whole_failed(self, message):
        self.whole.set_running(False)
        self.show_error("Whole-image reconstruction failed", message)

    def _whole_title(self):
        p = self.whole_parameters
        where = f"N_off {p['offset']}" if p["sites"] == "grid" else "FAST"
        return f"{p['family'].upper()}: {p['mode']} {jobs.whole_image_method(p)}, {where}"

    def _show_whole_metrics(self):
        from lbdviewer import metrics

        if self.whole_result is None:
            return
        result = self.whole_result
        covered = result.covered if not result.covered.all() else None
        consistency = ("" if result.solver_bit_consistency is None
                       else f"   bits {100 * result.solver_bit_consistency:.1f} %")
        self.whole.metrics_label.setText(
            f"PSNR {metrics.psnr(self.image, result.image, mask=covered):.2f} dB   "
            f"r = {metrics.correlation(self.image, result.image, mask=covered):.3f}{consistency}   "
            f"{result.seconds:.1f} s")

    def _show_edges(self, visible):
        if not visible or self.image is None:
            self.whole.set_edges(None)
            return
        from skimage.feature import canny

        self.whole.set_edges(canny(self.image, sigma=2.0))

    # -- export ---------------------------------------------------------------------
    def panels(self):
        """Exportable canvases by name."""
        return {
            "image": self.source,
            "patch": self.pattern_panel.patch,
            "frame-vector": self.pattern_panel.frame,
            "weight-map": self.pattern_panel.weights,
            "occurrence-map": self.pattern_panel.occurrences,
            "live-reconstruction": self.live.estimate,
            "original": self.whole.original,
            "reconstruction": self.whole.result,
        }

    def export_context(self):
        x, y = self.source.patch_position()
        return {
            "parameters": self.parameters.as_dict(),
            "pattern": None if self.pattern is None else self.pattern.describe_params(),
            "image_source": self.image_source,
            "image_shape": None if self.image is None else list(self.image.shape),
            "patch_xy": [x, y],
            "live_iteration": None if self.live_update is None else self.live_update.iteration,
            "whole_image_parameters": self.whole_parameters,
        }

    def export_panel(self, name, path, *, factor=None):
        """Write panel ``name`` as a pixel-exact PNG (+ JSON); return both paths."""
        panel = self.panels()[name].panel_array()
        result = export_panels(path, [panel], factor=factor, context=self.export_context())
        self._after_export(path)
        return result

    def export_dialog(self):
        available = [name for name, canvas in self.panels().items() if canvas.array is not None]
        name, ok = QInputDialog.getItem(self, "Export panel", "Panel:", available, 0, False)
        if not ok:
            return
        path = self._ask_png(name)
        if path:
            self._report_export(lambda: self.export_panel(name, path))

    def export_figure(self, key, path, *, factor=None):
        """Write a composed figure synchronously (families are reconstructed on a worker)."""
        if key == "maps":
            names = ("weight-map", "occurrence-map", "frame-vector")
        elif key == "live":
            names = ("patch", "live-reconstruction")
        elif key == "whole":
            names = ("original", "reconstruction")
        else:
            raise ValueError(f"key must be 'maps', 'live', 'whole' or 'families', got {key!r}")
        panels = [self.panels()[name].panel_array() for name in names]
        result = export_panels(path, panels, factor=factor, context={**self.export_context(), "figure": key})
        self._after_export(path)
        return result

    def export_families(self, path, *, factor=None):
        """Reconstruct the current patch with every family on a worker, then write the figure."""
        from lbdviewer.gui.export import PanelArray

        patch = self.current_patch().copy()
        p = self.parameters.as_dict()
        panels = [PanelArray("original", patch)]

        def collect(item):
            family, estimate = item
            levels = self._display_levels(estimate)
            panels.append(PanelArray(family, estimate, levels,
                                     metadata={"family": family, "stretched": self.stretch_action.isChecked()}))

        def write(completed):
            self.figure_runner.progressed.disconnect(collect)
            self.figure_runner.finished.disconnect(write)
            if completed:
                self._report_export(lambda: export_panels(
                    path, panels, factor=factor, context={**self.export_context(), "figure": "families"}))
                self._after_export(path)

        self.figure_runner.progressed.connect(collect)
        self.figure_runner.finished.connect(write)
        self.figure_runner.start(jobs.family_patches(patch, p, FIGURE_FAMILIES))
        self.show_status("Reconstructing the patch with every family for the figure…")

    def export_figure_dialog(self, key):
        path = self._ask_png(f"figure-{key}")
        if not path:
            return
        if key == "families":
            self.export_families(path)
        else:
            self._report_export(lambda: self.export_figure(key, path))

    def _ask_png(self, stem):
        path, _ = QFileDialog.getSaveFileName(self, "Export PNG", os.path.join(self.last_folder(), f"{stem}.png"),
                                              "PNG images (*.png)")
        if path and not path.lower().endswith(".png"):
            path += ".png"
        return path

    def _report_export(self, write):
        try:
            write()
        except (OSError, ValueError) as error:
            self.show_error("Export failed", str(error))

    def _after_export(self, path):
        self._remember_folder(path)
        self.show_status(f"Exported {path} (+ JSON)")
        self.exported.emit(path)

    # -- closing ---------------------------------------------------------------------
    def busy(self):
        return self.live_runner.running or self.whole_runner.running or self.figure_runner.running

    def shutdown(self):
        """Stop every job and wait for the worker threads."""
        self.parameter_timer.stop()
        self.patch_timer.stop()
        return stop_all((self.live_runner, self.whole_runner, self.figure_runner))

    def closeEvent(self, event):
        self.settings.setValue("window/geometry", self.saveGeometry())
        self.settings.setValue("window/state", self.saveState())
        self.settings.sync()
        self.shutdown()
        if self.message_box is not None:
            self.message_box.close()
        super().closeEvent(event)


def _levels(array):
    low, high = float(np.min(array)), float(np.max(array))
    return (low, high if high > low else low + 1.0)
