"""The main window's menus and actions, and the window-level keys Space / S / Esc.

:func:`build_menus` makes every menu entry from the window's slots and
returns the actions the window enables and disables (an export is offered
only when there is something to export). :class:`WindowKeys` makes Space
(play / pause), S (step) and Esc (stop) work wherever the focus is in the
window, a spin box or a check box included, and keeps the key out of the
focused field. :data:`SHORTCUTS` lists every key for Help > Keyboard shortcuts.
"""

from __future__ import annotations

import lbdviewer.gui.qt  # noqa: F401  (PyQt6 and row-major images, before any Qt library)

import os
from dataclasses import dataclass

from PyQt6.QtCore import QEvent, QObject, Qt
from PyQt6.QtGui import QAction, QKeySequence
from PyQt6.QtWidgets import QApplication, QPushButton, QToolButton

from lbdviewer import io

#: Composed figures offered under File > Export figure: key -> menu text.
FIGURES = {
    "patch": "Patch with its pattern",
    "maps": "Pattern: weight | occurrence | frame vector",
    "live": "Patch: true patch | live estimate",
    "whole": "Image: original | reconstruction",
    "families": "Patch: original | BRIEF | FREAK | RA-FREAK | EX-FREAK",
}

#: Every keyboard shortcut of the window: (keys, what they do), as Help > Keyboard shortcuts lists them.
SHORTCUTS = (
    ("Ctrl+O", "Open an image"),
    ("Ctrl+Shift+O", "Open a feature file"),
    ("Ctrl+E", "Export a panel as a pixel-exact PNG"),
    ("Space", "Play / pause the live solver (wherever the focus is)"),
    ("S", "Pause and do one iteration of the live solver"),
    ("Esc", "Stop the live solver and the whole-image job"),
    ("Ctrl+R", "Reconstruct the whole image (or invert the features)"),
    ("] / [", "Next / previous keypoint (library descriptors, feature files)"),
    ("Ctrl+W", "Close the feature file"),
    ("F1", "Keyboard shortcuts"),
    ("Ctrl+Q", "Quit"),
)


@dataclass
class MenuActions:
    """The actions the window keeps a hand on."""

    export_panel: QAction
    figures: dict
    play: QAction
    step: QAction
    stop: QAction
    stretch: QAction
    recent_menu: object
    compare: QAction
    close_features: QAction
    keypoint_actions: tuple


def _action(window, menu, text, slot, shortcut=None, tip=None):
    action = QAction(text, window)
    if shortcut:
        action.setShortcut(QKeySequence(shortcut))
        action.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
    if tip:
        action.setStatusTip(tip)
        action.setToolTip(tip)
    action.triggered.connect(slot)
    menu.addAction(action)
    window.addAction(action)
    return action


def build_menus(window):
    """Fill ``window``'s menu bar; return the :class:`MenuActions`."""
    bar = window.menuBar()
    file_menu = bar.addMenu("&File")
    _action(window, file_menu, "&Open image…", window.open_dialog, "Ctrl+O", "Open an image file")
    recent_menu = file_menu.addMenu("Open &recent")
    _action(window, file_menu, "Open &features…", window.open_features_dialog, "Ctrl+Shift+O",
            "Open a feature file (keypoints and bits) and reconstruct from it")
    compare = _action(window, file_menu, "&Compare with image…", window.compare_dialog, None,
                      "Show and measure the feature file's inversion against any image of its size "
                      "(said to be compared, not its original)")
    close_features = _action(window, file_menu, "&Close features", window.close_features, "Ctrl+W",
                             "Close the feature file and return to the image")
    _action(window, file_menu, "Open audit &report…", window.open_report_dialog, None,
            "Browse the rows of an 'lbdviewer audit' report folder")
    file_menu.addSeparator()
    export_panel = _action(window, file_menu, "&Export panel…", window.exports.panel_dialog, "Ctrl+E",
                           "Export a panel as a pixel-exact PNG with a JSON record of what it shows")
    figure_menu = file_menu.addMenu("Export &figure")
    figures = {key: _action(window, figure_menu, text,
                            lambda checked=False, key=key: window.exports.figure_dialog(key))
               for key, text in FIGURES.items()}
    file_menu.addSeparator()
    _action(window, file_menu, "&Quit", window.close, "Ctrl+Q", "Quit lbdviewer")

    samples_menu = bar.addMenu("&Samples")
    for name in io.sample_images():
        _action(window, samples_menu, name, lambda checked=False, name=name: window.load_sample(name),
                tip=f"Open the sample image {name!r}")

    run_menu = bar.addMenu("&Run")
    play = _action(window, run_menu, "Play / pause", window.play_pause, "Space", "Play or pause the live solver")
    step = _action(window, run_menu, "Step", window.step, "S", "Pause the live solver and do one iteration")
    stop = _action(window, run_menu, "Stop", window.stop, "Esc", "Stop the live solver and the whole-image job")
    run_menu.addSeparator()
    _action(window, run_menu, "Reconstruct whole image", window.run_whole, "Ctrl+R",
            "Reconstruct the whole image with the current parameters")
    _action(window, run_menu, "Cancel whole image", window.cancel_whole, None,
            "Cancel the whole-image reconstruction")
    run_menu.addSeparator()
    keypoint_actions = (
        _action(window, run_menu, "Next keypoint", lambda: window.step_keypoint(1), "]",
                "Show and solve the next keypoint"),
        _action(window, run_menu, "Previous keypoint", lambda: window.step_keypoint(-1), "[",
                "Show and solve the previous keypoint"),
    )

    view_menu = bar.addMenu("&View")
    for dock in window.docks.values():
        view_menu.addAction(dock.toggleViewAction())
    view_menu.addSeparator()
    stretch = _action(window, view_menu, "Stretch reconstruction contrast", window.restretch, None,
                      "Show reconstructions by the display rule (fitted to the original, or percentiles); "
                      "off: as solved, 0 to 1")
    stretch.setCheckable(True)
    stretch.setChecked(True)
    _action(window, view_menu, "Reset layout", window.reset_layout)
    _action(window, view_menu, "Reset settings", window.reset_settings, None,
            "Forget what lbdviewer remembers (parameters, overlays, layout, folders, export choices, last image) "
            "and use the defaults; the recent-files list stays")
    help_menu = bar.addMenu("&Help")
    _action(window, help_menu, "&Keyboard shortcuts", window.show_shortcuts, "F1", "Every keyboard shortcut")
    _action(window, help_menu, "&About lbdviewer", window.show_about, None,
            "Version, the paper it implements, licences")
    return MenuActions(export_panel, figures, play, step, stop, stretch, recent_menu, compare, close_features,
                       keypoint_actions)


def fill_recent_menu(menu, paths, open_path):
    """List ``paths`` in ``menu`` (file name, full path as tooltip); disabled when empty."""
    menu.clear()
    for path in paths:
        action = menu.addAction(os.path.basename(path))
        action.setToolTip(path)
        action.triggered.connect(lambda checked=False, path=path: open_path(path))
    menu.setEnabled(bool(paths))


class WindowKeys(QObject):
    """Window-level single keys that work wherever the focus is and never edit a field.

    Qt gives a focused spin box or line edit the first claim on a plain key
    (a ``ShortcutOverride``), so a QAction's "Space" shortcut does nothing
    while a spin box has focus, and the key edits the field instead; a
    focused check box toggles on Space. This filter, installed on the
    application, claims those keys for every widget of ``window`` and
    triggers the action instead, so they never toggle a check box or edit a
    field (Space on a focused push button still presses it, as everywhere).

    Parameters
    ----------
    window : QWidget
        Only keys pressed in this window (not its dialogs or popups) are taken.
    actions : dict
        ``Qt.Key -> QAction`` for keys pressed without modifiers.
    """

    def __init__(self, window, actions):
        super().__init__(window)
        self.window = window
        self.menu_actions = dict(actions)
        QApplication.instance().installEventFilter(self)
        window.destroyed.connect(self.uninstall)

    def uninstall(self, *_):
        app = QApplication.instance()
        if app is not None:
            app.removeEventFilter(self)

    def eventFilter(self, watched, event):
        kind = event.type()
        if kind not in (QEvent.Type.ShortcutOverride, QEvent.Type.KeyPress):
            return False
        if event.modifiers() not in (Qt.KeyboardModifier.NoModifier, Qt.KeyboardModifier.KeypadModifier):
            return False
        action = self.menu_actions.get(event.key())
        if action is None or not watched.isWidgetType() or watched.window() is not self.window:
            return False
        if event.key() == Qt.Key.Key_Space and isinstance(watched, QPushButton | QToolButton):
            return False  # Space presses a focused push button, as everywhere
        if kind == QEvent.Type.ShortcutOverride:
            event.accept()  # the key is ours: no shortcut lookup, the key press comes to this filter
            return True
        if not event.isAutoRepeat() and action.isEnabled():
            action.trigger()
        return True
