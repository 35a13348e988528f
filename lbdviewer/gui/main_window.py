"""The main window: docks, dialogs and the slots between the models, the workers and the panels.

Layout (QMainWindow docks): parameters on the left, the image with the patch
selector in the centre, the pattern panel and the live solver on the right,
the whole-image reconstruction at the bottom. The parameters, the overlays,
the layout, the folders and the last image are remembered in QSettings and
read back checked (:mod:`lbdviewer.gui.preferences`).

The document (image, pattern, operator, sites, runs) is the Qt-free
:class:`~lbdviewer.gui.session.Session`; the parameters are
:class:`~lbdviewer.gui.model.Parameters`. The window subscribes to both and
copies what changed into the panels. Files load and solvers run on worker
threads (:class:`~lbdviewer.gui.workers.JobRunner`); menus are built by
:mod:`lbdviewer.gui.menus`, exports by :mod:`lbdviewer.gui.export_actions`.
"""

from __future__ import annotations

import lbdviewer.gui.qt  # noqa: F401  (PyQt6 and row-major images, before any Qt library)

import os

from PyQt6.QtCore import QByteArray, QSettings, Qt, QTimer, pyqtSignal
from PyQt6.QtWidgets import QDockWidget, QFileDialog, QLabel, QMainWindow, QMessageBox

from lbdviewer.features.files import FEATURE_SUFFIXES
from lbdviewer.gui import jobs, preferences
from lbdviewer.gui.controls import ParametersPanel
from lbdviewer.gui.export_actions import Exporter
from lbdviewer.gui.menus import WindowKeys, build_menus, fill_recent_menu
from lbdviewer.gui.panels import LivePanel, PatternPanel, SourceView, WholeImagePanel
from lbdviewer.gui.presenter import SessionPresenter
from lbdviewer.gui.session import Session
from lbdviewer.gui.workers import JobRunner, stop_all

DEFAULT_SAMPLE = "camera"
DEBOUNCE_MS = 250
PATCH_DEBOUNCE_MS = 60
MAX_RECENT = 8
IMAGE_FILTER = "Images (*.png *.jpg *.jpeg *.tif *.tiff *.bmp);;All files (*)"
#: Share of the window's width the right-hand docks take, and of its height the bottom dock takes.
RIGHT_SHARE, BOTTOM_SHARE = 0.47, 0.36
PARAMETERS_WIDTH = 250
#: The view choices' defaults: pairs overlay, receptive fields, edges over the reconstruction, contrast stretch.
VIEW_DEFAULTS = {"view/pairs": "all", "view/fields": True, "view/edges": False, "view/stretch": True}


class MainWindow(QMainWindow):
    """The lbdviewer main window.

    Parameters
    ----------
    settings : QSettings, optional
        Where the parameters, overlays, layout, folders, export choices, last
        image and recent files are remembered (tests and ``--no-restore`` pass
        a temporary INI file); default: the user's lbdviewer settings.
    load_sample : bool
        Open a first image at once (on a worker thread): the last image, if
        it still loads, else the default sample (without an error box).
    parameters : Parameters, optional
        Start with these instead of the remembered parameters.

    Signals
    -------
    image_loaded(str)
        A new image or feature file is shown (its source).
    load_failed(str)
        A file could not be opened (the reason).
    live_finished(bool), whole_finished(bool)
        A live / whole-image job ended (True: ran to completion).
    """

    image_loaded = pyqtSignal(str)
    load_failed = pyqtSignal(str)
    live_finished = pyqtSignal(bool)
    whole_finished = pyqtSignal(bool)

    def __init__(self, settings=None, *, load_sample=True, parameters=None):
        super().__init__()
        self.setWindowTitle("lbdviewer — from bits to images")
        self.setAcceptDrops(True)
        self.settings = settings if settings is not None else QSettings("lbdviewer", "lbdviewer")
        ignored = []
        if parameters is None:
            parameters, ignored = preferences.restore_parameters(self.settings)
        self.parameters = parameters
        self.session = Session()
        self.message_box = None
        self._live_hold = False
        self._reopening = None  # the last image being re-opened on launch (its failure is quiet)

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
        self.loader = JobRunner(self, interval=0.0)
        self.exports = Exporter(self)
        self.parameter_timer = self._single_shot(DEBOUNCE_MS, self.rebuild)
        self.patch_timer = self._single_shot(PATCH_DEBOUNCE_MS, self.restart_live)

        self.status_label = QLabel()
        self.statusBar().addPermanentWidget(self.status_label)
        self.menu_actions = build_menus(self)
        self.presenter = SessionPresenter(self.session, source=self.source, pattern_panel=self.pattern_panel,
                                          live=self.live, whole=self.whole, status_label=self.status_label,
                                          stretch=self.menu_actions.stretch)
        self.keys = WindowKeys(self, {Qt.Key.Key_Space: self.menu_actions.play, Qt.Key.Key_S: self.menu_actions.step,
                                      Qt.Key.Key_Escape: self.menu_actions.stop})
        self._update_recent_menu()
        self._connect()
        self.resize(1600, 1000)
        self._default_layout = self.saveState()
        self._restore_layout()
        self._apply_patch_size()
        self._update_actions()
        ignored += self._restore_views()
        preferences.save_parameters(self.settings, self.parameters)
        if ignored:
            self.show_status(f"Saved settings not valid, defaults used: {', '.join(ignored)}", 15000)
        if load_sample:
            self._reopen_last_image()

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

    def _connect(self):
        self.parameters.subscribe(self._on_parameter_changed)
        self.parameters.subscribe(lambda name, value: preferences.save_parameters(self.settings, self.parameters))
        for key, signal in self._view_signals().items():
            signal.connect(lambda *_, key=key: preferences.write(self.settings, key, self._view_values()[key]))
        self.session.subscribe(self._on_session_changed)
        self.controls.refused.connect(self.show_status)
        self.source.patch_moved.connect(self._on_patch_moved)
        self.pattern_panel.frame_index_changed.connect(self.presenter.show_frame_vector)
        self.live.play_clicked.connect(self.play_pause)
        self.live.step_clicked.connect(self.step)
        self.live.stop_clicked.connect(self.stop)
        self.live.delay_changed.connect(lambda ms: self.live_runner.set_delay(ms / 1000.0))
        self.live_runner.progressed.connect(self.session.live_progress)
        self.live_runner.finished.connect(self._on_live_finished)
        self.live_runner.failed.connect(lambda message: self.show_status(f"Live solver failed: {message}"))
        self.live_runner.state_changed.connect(self.live.set_state_text)
        self.whole.run_clicked.connect(self.run_whole)
        self.whole.cancel_clicked.connect(self.cancel_whole)
        self.whole.edges_toggled.connect(self.presenter.show_edges)
        self.whole_runner.progressed.connect(self.session.whole_progress)
        self.whole_runner.finished.connect(self._on_whole_finished)
        self.whole_runner.failed.connect(self._on_whole_failed)
        self.loader.progressed.connect(self._on_loaded)
        self.loader.failed.connect(self._on_load_failed)

    # -- layout and settings -------------------------------------------------------
    def _restore_layout(self):
        """Geometry and dock state as saved; anything else stored there (corrupted) is left alone."""
        geometry = self.settings.value("window/geometry")
        state = self.settings.value("window/state")
        if isinstance(geometry, QByteArray):
            self.restoreGeometry(geometry)
        restored = isinstance(state, QByteArray) and self.restoreState(state)
        self._needs_default_sizes = not restored

    def _view_values(self):
        """The remembered view choices by key: the patch overlay, the edges overlay, the stretch."""
        return {"view/pairs": self.pattern_panel.pairs_mode.currentData(),
                "view/fields": self.pattern_panel.show_fields.isChecked(),
                "view/edges": self.whole.edges_box.isChecked(),
                "view/stretch": self.menu_actions.stretch.isChecked()}

    def _view_signals(self):
        return {"view/pairs": self.pattern_panel.pairs_mode.currentIndexChanged,
                "view/fields": self.pattern_panel.show_fields.toggled,
                "view/edges": self.whole.edges_box.toggled,
                "view/stretch": self.menu_actions.stretch.toggled}

    def _restore_views(self, values=None):
        """Set the view choices to ``values`` (default: the remembered ones, checked); return the keys ignored."""
        ignored, panel = [], self.pattern_panel
        if values is None:
            pairs = tuple(panel.pairs_mode.itemData(i) for i in range(panel.pairs_mode.count()))
            values = {key: preferences.read_choice(self.settings, key, pairs if key == "view/pairs" else (True, False),
                                                   default, ignored)
                      for key, default in VIEW_DEFAULTS.items()}
        panel.pairs_mode.setCurrentIndex(panel.pairs_mode.findData(values["view/pairs"]))
        panel.show_fields.setChecked(values["view/fields"])
        self.whole.edges_box.setChecked(values["view/edges"])
        if self.menu_actions.stretch.isChecked() != values["view/stretch"]:
            self.menu_actions.stretch.setChecked(values["view/stretch"])
            self.restretch()
        return ignored

    def reset_settings(self):
        """Forget every remembered setting (the recent files stay); parameters, views and layout go back to defaults."""
        preferences.reset(self.settings)
        self.parameters.reset()
        self._restore_views(VIEW_DEFAULTS)
        self.reset_layout()
        preferences.save_parameters(self.settings, self.parameters)
        self.show_status("Settings reset to the defaults")

    def showEvent(self, event):
        super().showEvent(event)
        if self._needs_default_sizes:  # dock sizes only take once the window has its size
            self._needs_default_sizes = False
            self._default_sizes()

    def resizeEvent(self, event):
        """Keep the docks' shares of the window: the right-hand panels grow with it, not only the image."""
        super().resizeEvent(event)
        old, new = event.oldSize(), event.size()
        if not self.isVisible() or old.width() <= 0 or old.height() <= 0 or self._needs_default_sizes:
            return
        right = [self.docks[key] for key in ("pattern", "live") if self.dockWidgetArea(self.docks[key])
                 == Qt.DockWidgetArea.RightDockWidgetArea and self.docks[key].isVisible()]
        if right and new.width() != old.width():
            width = int(round(right[0].width() * new.width() / old.width()))
            self.resizeDocks(right[:1], [width], Qt.Orientation.Horizontal)
        bottom = self.docks["whole"]
        if bottom.isVisible() and new.height() != old.height():
            height = int(round(bottom.height() * new.height() / old.height()))
            self.resizeDocks([bottom], [height], Qt.Orientation.Vertical)

    def _default_sizes(self):
        width, height = self.width(), self.height()
        self.resizeDocks([self.docks["parameters"]], [PARAMETERS_WIDTH], Qt.Orientation.Horizontal)
        self.resizeDocks([self.docks["pattern"]], [int(RIGHT_SHARE * width)], Qt.Orientation.Horizontal)
        self.resizeDocks([self.docks["pattern"], self.docks["live"]], [int(0.55 * height), int(0.45 * height)],
                         Qt.Orientation.Vertical)
        self.resizeDocks([self.docks["whole"]], [int(BOTTOM_SHARE * height)], Qt.Orientation.Vertical)

    def reset_layout(self):
        self.restoreState(self._default_layout)
        for dock in self.docks.values():
            dock.show()
        self._default_sizes()

    def last_folder(self):
        """Where the last image or feature file was opened from (the home folder if it is gone)."""
        return preferences.read_folder(self.settings, "paths/last_folder", os.path.expanduser("~"))

    def recent_files(self):
        """The files opened last, newest first (stored by Qt as a list; a one-item list reads back as a string)."""
        value = self.settings.value("paths/recent", [])
        value = [value] if isinstance(value, str) else value if isinstance(value, list) else []
        return [v for v in value if isinstance(v, str) and os.path.isabs(v)]

    def _remember_opened(self, path):
        self.settings.setValue("paths/last_folder", os.path.dirname(os.path.abspath(path)))
        recent = [path] + [p for p in self.recent_files() if p != path]
        self.settings.setValue("paths/recent", recent[:MAX_RECENT])
        self._update_recent_menu()

    def _update_recent_menu(self):
        fill_recent_menu(self.menu_actions.recent_menu, self.recent_files(), self.load_path)

    def _update_actions(self):
        """Offer an export only when there is something to export."""
        for key, action in self.menu_actions.figures.items():
            action.setEnabled(self.exports.figure_available(key))
        self.menu_actions.export_panel.setEnabled(bool(self.exports.available_panels()))

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

    # -- loading (on a worker thread) ----------------------------------------------
    def dragEnterEvent(self, event):
        if self._dropped_path(event.mimeData()) is not None:
            event.setDropAction(Qt.DropAction.CopyAction)  # never a move: the source keeps its file
            event.accept()
        else:
            event.ignore()

    def dragMoveEvent(self, event):
        self.dragEnterEvent(event)

    def dropEvent(self, event):
        path = self._dropped_path(event.mimeData())
        if path is None:
            event.ignore()
            return
        event.setDropAction(Qt.DropAction.CopyAction)
        event.accept()
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

    def open_features_dialog(self):
        patterns = " ".join(f"*{suffix}" for suffix in FEATURE_SUFFIXES)
        path, _ = QFileDialog.getOpenFileName(self, "Open features", self.last_folder(),
                                              f"Feature files ({patterns});;All files (*)")
        if path:
            self.load_path(path)

    def open_report_dialog(self):
        """Browse an ``lbdviewer audit`` report folder (asked for) in a dialog beside the window."""
        from lbdviewer.gui.report_browser import open_report_browser

        return open_report_browser(self)

    def load_path(self, path):
        """Open an image or a feature file (``.npz`` or OpenCV FileStorage) on a worker thread.

        ``image_loaded`` follows when it is shown; on failure a message box
        says why (``load_failed``) and the current document stays.
        """
        kind = "features" if str(path).lower().endswith(FEATURE_SUFFIXES) else "image"
        options = None
        if kind == "features":  # what the file leaves open (image, descriptor, size) is asked, not flagged
            from lbdviewer.gui.feature_choice import feature_options

            try:
                options = feature_options(self, path)
            except ValueError as error:
                return self._on_load_failed(str(error))
            if options is None:
                return None
        self._reopening = None
        self.show_status(f"Opening {path}…", 0)
        self.loader.start(jobs.load_file(path, kind, patch_size=self.parameters.patch_size,
                                         feature_options=options))

    def load_sample(self, name):
        self._reopening = None
        self.loader.start(jobs.load_sample(name, patch_size=self.parameters.patch_size))

    def _reopen_last_image(self):
        """Open the last image again, or the default sample when there is none or it is gone."""
        last = preferences.read_last_image(self.settings)
        if last is None:
            self.load_sample(DEFAULT_SAMPLE)
        elif last.startswith("sample:"):
            self.load_sample(last.removeprefix("sample:"))
        else:
            self.load_path(last)
        self._reopening = last

    def _refuse_load(self, title, message):
        """Say why a file was not opened; a failed re-opening of the last image quietly opens the sample instead."""
        if self._reopening is not None:
            self.show_status(f"Could not reopen {self._reopening} ({message}): showing the sample {DEFAULT_SAMPLE}",
                             15000)
            self.load_sample(DEFAULT_SAMPLE)
            return
        self.show_error(title, message)
        self.load_failed.emit(message)

    def _on_loaded(self, loaded):
        self.statusBar().clearMessage()
        reopened, self._reopening = self._reopening, None
        if loaded.kind == "features":
            self._open_features(loaded)
        elif self._fits_patch(loaded.content.shape):
            if self.session.is_original_of_features(loaded.content):
                self.session.set_features_original(loaded.content, loaded.source, sha256=loaded.sha256,
                                                   preview=loaded.preview)
            else:
                self.whole_runner.stop()
                self.session.set_image(loaded.content, loaded.source, sha256=loaded.sha256,
                                       start_xy=loaded.start_xy, preview=loaded.preview)
                preferences.write(self.settings, preferences.LAST_IMAGE_KEY, loaded.source)
        else:
            self._reopening = reopened  # too small for the patch: a re-opening falls back quietly
            self._refuse_load("Image too small", self._too_small_message(loaded.content.shape, loaded.source))
            return
        if not loaded.source.startswith("sample:"):
            self._remember_opened(loaded.source)
        self.show_status(f"Loaded {loaded.source}")
        self.image_loaded.emit(loaded.source)

    def _on_load_failed(self, message):
        self.statusBar().clearMessage()
        self._refuse_load("Could not open the file", message)

    def _fits_patch(self, shape):
        return min(shape) >= self.parameters.patch_size

    def _too_small_message(self, shape, label):
        size = self.parameters.patch_size
        return (f"{os.path.basename(label)} is {shape[1]}x{shape[0]} pixels, smaller than the "
                f"{size}x{size} patch: choose a smaller patch size first")

    def _open_features(self, loaded):
        features = loaded.content
        if not self._fits_patch(tuple(features.image_shape)):
            self._refuse_load("Image too small", self._too_small_message(tuple(features.image_shape), loaded.source))
            return
        self.whole_runner.stop()
        self.session.set_features(features, loaded.source, sha256=loaded.sha256)
        self.presenter.show_features()
        self.whole_runner.start(self.session.start_features())

    # -- the session -> the panels ------------------------------------------------------
    def _on_session_changed(self, name, value):
        if name == "image":
            self.presenter.show_image()
            self.controls.set_feature_file(self.session.features is not None)
            self.setWindowTitle(f"lbdviewer — {self.session.name}")
            self.rebuild()
        elif name == "pattern":
            self.presenter.show_pattern()
        elif name == "sites":
            self.presenter.show_sites(value)
        elif name == "live":
            self.presenter.show_live(value)
        elif name == "whole":
            self.presenter.show_whole(value)
        self._update_actions()

    # -- parameters -> pattern, operator, views ------------------------------------
    def _on_parameter_changed(self, name, value):
        if name == "patch_size":
            self._apply_patch_size()
        self.show_status(f"{name} = {value}", 3000)
        self.parameter_timer.start()

    def _apply_patch_size(self):
        self.source.set_patch_size(self.parameters.patch_size)

    def _apply_pending_parameters(self):
        """An edit still waiting for its debounce takes effect now (before Step, Play or a run)."""
        if self.parameter_timer.isActive():
            self.rebuild()

    def rebuild(self):
        """Make the pattern and operator of the current parameters, refresh the views, restart the live solver."""
        self.parameter_timer.stop()
        if self.session.image is None:
            return
        try:
            self.session.rebuild(self.parameters.as_dict())
        except ValueError as error:
            self.show_error("Invalid parameters", str(error))
            return
        self.restart_live()

    def _on_patch_moved(self, x, y):
        if self.session.operator is None or self.session.pattern.patch_size != self.source.patch_size():
            return
        self.presenter.show_patch()
        self.patch_timer.start()

    def restretch(self):
        """View > Stretch was switched: draw the runs again by the chosen rule."""
        self.presenter.redraw_runs()

    # -- live solver -------------------------------------------------------------
    def restart_live(self, *, paused=None):
        """(Re)start the live solver on the current patch."""
        self.patch_timer.stop()
        if self.session.operator is None:
            return
        paused = self._live_hold if paused is None else paused
        self.live_runner.stop()
        self.live.reset()
        try:
            items = self.session.start_live(self.source.patch_position())
        except ValueError as error:  # nothing to solve
            self.live.original.clear_array()
            self.live.estimate.clear_array()
            self.live.iteration_label.setText(str(error))
            return
        self.live_runner.start(items, paused=paused, delay=self.live.delay.value() / 1000.0)

    def play_pause(self):
        self._apply_pending_parameters()
        if self.live_runner.running:
            self._live_hold = not self.live_runner.paused
            self.live_runner.toggle()
        else:
            self._live_hold = False
            self.restart_live(paused=False)

    def step(self):
        self._apply_pending_parameters()
        self._live_hold = True
        if not self.live_runner.running:
            self.restart_live(paused=True)
        self.live_runner.step()

    def stop(self):
        self.live_runner.stop()
        self.cancel_whole()

    def _on_live_finished(self, completed):
        self.session.live_ended(completed)
        run = self.session.live
        if completed and run is not None and run.update is not None:
            self.show_status(f"Live solver {run.summary()}")
        self.live_finished.emit(completed)

    # -- whole image ----------------------------------------------------------------
    def run_whole(self):
        """Reconstruct the whole image on a worker thread (progress, cancel)."""
        self._apply_pending_parameters()
        if self.session.operator is None:
            return
        if self.session.features is not None:
            self.show_status("The feature file's bits were inverted as it opened; open an image to reconstruct it")
            return
        self.whole_runner.stop()
        try:
            items = self.session.start_whole()
        except ValueError as error:
            self.show_error("Nothing to reconstruct", str(error))
            return
        self.whole_runner.start(items)
        self.show_status("Reconstructing the whole image…")

    def cancel_whole(self):
        self.whole_runner.stop()

    def _on_whole_finished(self, completed):
        self.session.whole_ended(completed)
        run = self.session.whole
        if run is not None and run.status == "completed":
            self.show_status("Feature file inverted: open the original image to compare" if run.features
                             else "Whole image reconstructed")
        elif run is not None:
            self.show_status("Whole-image reconstruction cancelled")
        self.whole_finished.emit(completed)

    def _on_whole_failed(self, message):
        self.session.whole_failed(message)
        self.show_error("Whole-image reconstruction failed", message)

    # -- export ---------------------------------------------------------------------
    def panels(self):
        """Exportable canvases by name."""
        return self.presenter.panels()

    # -- closing ---------------------------------------------------------------------
    def busy(self):
        return any(runner.running for runner in self._runners())

    def _runners(self):
        return (self.live_runner, self.whole_runner, self.loader, *self.exports.runners())

    def shutdown(self):
        """Stop every job and wait for the worker threads."""
        self.parameter_timer.stop()
        self.patch_timer.stop()
        return stop_all(self._runners())

    def closeEvent(self, event):
        self.settings.setValue("window/geometry", self.saveGeometry())
        self.settings.setValue("window/state", self.saveState())
        self.settings.sync()
        self.shutdown()
        if self.message_box is not None:
            self.message_box.close()
        self.keys.uninstall()
        super().closeEvent(event)

