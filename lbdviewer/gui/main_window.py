"""The main window: docks, dialogs and the slots between the models, the workers and the panels.

Layout (QMainWindow docks): parameters on the left, the image with the patch
selector (or a library's keypoints) in the centre, the pattern panel and the
live solver on the right, the whole-image reconstruction at the bottom. The
parameters, the overlays, the layout, the folders and the last image are
remembered in QSettings and read back checked (:mod:`lbdviewer.gui.preferences`).

The document (image or feature file, pattern, operator, sites, keypoints,
runs) is the Qt-free :class:`~lbdviewer.gui.session.Session`; the parameters
are :class:`~lbdviewer.gui.model.Parameters`. The window subscribes to both
and the :class:`~lbdviewer.gui.presenter.SessionPresenter` copies what
changed into the panels. The slots live in mixins by concept: geometry
(:mod:`lbdviewer.gui.window_layout`), documents and keypoints
(:mod:`lbdviewer.gui.documents`), runs (:mod:`lbdviewer.gui.run_control`).
Every job runs on a worker thread of the window's own pools
(:class:`~lbdviewer.gui.workers.WorkerPools`).
"""

from __future__ import annotations

import lbdviewer.gui.qt  # noqa: F401  (PyQt6 and row-major images, before any Qt library)

from PyQt6.QtCore import QSettings, Qt, QTimer, pyqtSignal
from PyQt6.QtWidgets import QLabel, QMainWindow, QMessageBox

from lbdviewer.gui import preferences
from lbdviewer.gui.controls import ParametersPanel
from lbdviewer.gui.defence_actions import DefenceActions
from lbdviewer.gui.defence_panel import DefencePanel
from lbdviewer.gui.documents import DEFAULT_SAMPLE, DocumentActions
from lbdviewer.gui.export_actions import Exporter
from lbdviewer.gui.help import about_html, shortcuts_html, show_text_dialog
from lbdviewer.gui.menus import WindowKeys, build_menus
from lbdviewer.gui.panels import PatternPanel, SourceView
from lbdviewer.gui.presenter import SessionPresenter
from lbdviewer.gui.run_control import RunActions
from lbdviewer.gui.run_panels import LivePanel, WholeImagePanel
from lbdviewer.gui.session import Session
from lbdviewer.gui.window_layout import WindowLayout
from lbdviewer.gui.workers import JobRunner, WorkerPools, stop_all

__all__ = ["DEFAULT_SAMPLE", "MainWindow"]

DEBOUNCE_MS = 250
PATCH_DEBOUNCE_MS = 60


class MainWindow(WindowLayout, DocumentActions, RunActions, DefenceActions, QMainWindow):
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
    metrics_finished(bool)
        Metrics computed after a run (a feature file's image paired later) are in (True) or were dropped.
    """

    image_loaded = pyqtSignal(str)
    load_failed = pyqtSignal(str)
    live_finished = pyqtSignal(bool)
    whole_finished = pyqtSignal(bool)
    metrics_finished = pyqtSignal(bool)

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
        self.message_box = self.pairing_box = None
        self.dialogs = {}
        self._live_hold = False
        self._reopening = None  # the last image being re-opened on launch (its failure is quiet)
        self._load_purpose = "open"
        self._metrics_for = None

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
        self.defence_panel = DefencePanel()
        self._defence_image = None
        self._add_dock("defence", "Defence", self.defence_panel, Qt.DockWidgetArea.BottomDockWidgetArea)
        self.tabifyDockWidget(self.docks["whole"], self.docks["defence"])
        self.docks["defence"].hide()  # View > Defence shows it, tabbed with the whole image
        self.docks["whole"].raise_()
        self.setCorner(Qt.Corner.BottomLeftCorner, Qt.DockWidgetArea.LeftDockWidgetArea)
        self.setCorner(Qt.Corner.BottomRightCorner, Qt.DockWidgetArea.RightDockWidgetArea)

        self.pools = WorkerPools.create(self)
        self.live_runner = JobRunner(self, pool=self.pools["live"])
        self.whole_runner = JobRunner(self, pool=self.pools["whole"], interval=0.1)
        self.loader = JobRunner(self, pool=self.pools["load"], interval=0.0)
        self.describer = JobRunner(self, pool=self.pools["tasks"], interval=0.0)
        self.keypoint_runner = JobRunner(self, pool=self.pools["tasks"], interval=0.0)
        self.metrics_runner = JobRunner(self, pool=self.pools["tasks"], interval=0.0)
        self.defence_runner = JobRunner(self, pool=self.pools["defence"], interval=0.1)
        self.exports = Exporter(self)
        self.parameter_timer = self._single_shot(DEBOUNCE_MS, self.rebuild)
        self.patch_timer = self._single_shot(PATCH_DEBOUNCE_MS, self.restart_live)

        self.status_label = QLabel()
        self.statusBar().addPermanentWidget(self.status_label)
        self.menu_actions = build_menus(self)
        self.presenter = SessionPresenter(self.session, source=self.source, pattern_panel=self.pattern_panel,
                                          live=self.live, whole=self.whole, controls=self.controls,
                                          status_label=self.status_label, stretch=self.menu_actions.stretch)
        actions = self.menu_actions
        self.keys = WindowKeys(self, {Qt.Key.Key_Space: actions.play, Qt.Key.Key_S: actions.step,
                                      Qt.Key.Key_Escape: actions.stop,
                                      Qt.Key.Key_BracketRight: actions.keypoint_actions[0],
                                      Qt.Key.Key_BracketLeft: actions.keypoint_actions[1]})
        self._update_recent_menu()
        self._connect()
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
    def _single_shot(self, msecs, slot):
        timer = QTimer(self)
        timer.setSingleShot(True)
        timer.setInterval(msecs)
        timer.timeout.connect(slot)
        return timer

    def _connect(self):
        self.parameters.subscribe(self._on_parameter_changed)
        self.parameters.subscribe(lambda name, value: self._remember_parameters())
        for key, signal in self._view_signals().items():
            signal.connect(lambda *_, key=key: preferences.write(self.settings, key, self._view_values()[key]))
        self.session.subscribe(self._on_session_changed)
        self.controls.refused.connect(self.show_status)
        self.source.patch_moved.connect(self._on_patch_moved)
        self.source.clicked.connect(self._on_image_clicked)
        self.pattern_panel.frame_index_changed.connect(self.presenter.show_frame_vector)
        self.pattern_panel.keypoint_chosen.connect(self.select_keypoint)
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
        self.whole.coverage_toggled.connect(self.presenter.show_coverage)
        self.whole_runner.progressed.connect(self.session.whole_progress)
        self.whole_runner.finished.connect(self._on_whole_finished)
        self.whole_runner.failed.connect(self._on_whole_failed)
        self.loader.progressed.connect(self._on_loaded)
        self.loader.failed.connect(self._on_load_failed)
        self.describer.progressed.connect(self._on_described)
        self.describer.failed.connect(self._on_describe_failed)
        self.keypoint_runner.progressed.connect(self.session.set_keypoint_view)
        self.keypoint_runner.failed.connect(lambda message: self.show_error("Could not show the keypoint", message))
        self.metrics_runner.progressed.connect(self._on_metrics)
        self.metrics_runner.finished.connect(self._on_metrics_finished)
        self.metrics_runner.failed.connect(lambda message: self.show_error("Could not compute the metrics", message))
        self._connect_defence()

    def _update_actions(self):
        """Offer an action only when it applies (an export only when there is something to export)."""
        for key, action in self.menu_actions.figures.items():
            action.setEnabled(self.exports.figure_available(key))
        self.menu_actions.export_panel.setEnabled(bool(self.exports.available_panels()))
        features_open = self.session.mode == "features"
        self.menu_actions.compare.setEnabled(features_open)
        self.menu_actions.close_features.setEnabled(features_open)
        for action in self.menu_actions.keypoint_actions:
            action.setEnabled(self.session.keypoint_features is not None)

    # -- status, errors, help ------------------------------------------------------
    def show_status(self, text, msecs=8000):
        self.statusBar().showMessage(text, msecs)

    def show_error(self, title, text):
        """A non-blocking warning box (kept in ``message_box`` so tests can read it)."""
        if self.message_box is not None:
            self.message_box.close()
        self.message_box = QMessageBox(QMessageBox.Icon.Warning, title, text, QMessageBox.StandardButton.Ok, self)
        self.message_box.open()
        self.show_status(f"{title}: {text}")

    def show_about(self):
        """Help > About: version, the paper, licences."""
        self.dialogs["about"] = show_text_dialog(self, "About lbdviewer", about_html())

    def show_shortcuts(self):
        """Help > Keyboard shortcuts."""
        self.dialogs["shortcuts"] = show_text_dialog(self, "Keyboard shortcuts", shortcuts_html())

    # -- the session -> the panels ------------------------------------------------------
    def _on_session_changed(self, name, value):
        if name == "image":
            self._defence_document_changed()
            self.presenter.show_image()
            title = self.session.name if self.session.mode != "features" else \
                self.session.short_name(self.session.features_source)
            self.setWindowTitle(f"lbdviewer — {title}")
            self.rebuild()
        elif name == "pattern":
            self.presenter.show_pattern()
        elif name == "sites":
            self.presenter.show_sites(value)
        elif name == "keypoints":
            self.presenter.show_keypoints(value)
            self._select_default_keypoint()
        elif name == "keypoint":
            self.presenter.show_keypoint(value)
            if value is None:
                self._build_keypoint_view()
            else:
                self.restart_live()
        elif name == "live":
            self.presenter.show_live(value)
        elif name == "whole":
            self.presenter.show_whole(value)
        self._update_actions()

    # -- export ---------------------------------------------------------------------
    def panels(self):
        """Exportable canvases by name."""
        return self.presenter.panels()

    # -- closing ---------------------------------------------------------------------
    def busy(self):
        return any(runner.running for runner in self._runners())

    def _runners(self):
        return (self.live_runner, self.whole_runner, self.loader, self.describer, self.keypoint_runner,
                self.metrics_runner, self.defence_runner, *self.exports.runners())

    def shutdown(self):
        """Stop every job and wait for the worker threads."""
        self.parameter_timer.stop()
        self.patch_timer.stop()
        return stop_all(self._runners(), self.pools)

    def closeEvent(self, event):  # noqa: N802  (Qt's name)
        self.settings.setValue("window/geometry", self.saveGeometry())
        self.settings.setValue("window/state", self.saveState())
        self.settings.sync()
        self.shutdown()
        for box in (self.message_box, self.pairing_box, *self.dialogs.values()):
            if box is not None:
                box.close()
        self.keys.uninstall()
        super().closeEvent(event)
