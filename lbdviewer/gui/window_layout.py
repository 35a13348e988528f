"""The main window's geometry: docks, their shares, the first size on the screen, the remembered layout.

:class:`WindowLayout` is a mixin of :class:`~lbdviewer.gui.main_window.MainWindow`.
The first window (nothing remembered, or ``--no-restore``) fits the screen's
available area (:func:`first_size`), and a remembered geometry larger than
the screen it opens on is shrunk to it, so every control is on screen at
1280x720. The right-hand docks and the bottom dock keep their shares of the
window as it is resized.
"""

from __future__ import annotations

import lbdviewer.gui.qt  # noqa: F401  (PyQt6 and row-major images, before any Qt library)

from PyQt6.QtCore import QByteArray, QRect, Qt
from PyQt6.QtWidgets import QDockWidget

from lbdviewer.gui import preferences

#: Share of the window's width the right-hand docks take, and of its height the bottom dock takes.
RIGHT_SHARE, BOTTOM_SHARE = 0.47, 0.36
PARAMETERS_WIDTH = 250
#: The size the window asks for when the screen has room.
PREFERRED_SIZE = (1600, 1000)
#: Room left around the first window (window frame and desktop panels the available area may not count).
SCREEN_MARGIN = 16
#: The view choices' defaults: pairs overlay, receptive fields, edges over the reconstruction, contrast stretch.
VIEW_DEFAULTS = {"view/pairs": "all", "view/fields": True, "view/edges": False, "view/stretch": True}


def first_size(available, preferred=PREFERRED_SIZE, margin=SCREEN_MARGIN):
    """``(width, height)`` of a first window on a screen whose available area is ``available`` (width, height).

    The preferred size when it fits, else as much of the screen as there is
    (less a margin for the frame).

    Examples
    --------
    >>> first_size((1920, 1080)), first_size((1280, 720))
    ((1600, 1000), (1264, 704))
    """
    width, height = available
    return min(preferred[0], width - margin), min(preferred[1], height - margin)


class WindowLayout:
    """Docks, sizes and the remembered layout (mixed into the main window)."""

    def _add_dock(self, key, title, widget, area):
        dock = QDockWidget(title, self)
        dock.setObjectName(f"dock-{key}")
        dock.setWidget(widget)
        dock.setFeatures(QDockWidget.DockWidgetFeature.DockWidgetMovable
                         | QDockWidget.DockWidgetFeature.DockWidgetFloatable
                         | QDockWidget.DockWidgetFeature.DockWidgetClosable)
        self.addDockWidget(area, dock)
        self.docks[key] = dock

    def available_area(self):
        """The available geometry (QRect) of the screen the window is on, or will open on."""
        screen = self.screen()
        return screen.availableGeometry() if screen is not None else QRect(0, 0, *PREFERRED_SIZE)

    def _restore_layout(self):
        """Geometry and dock state as saved (fitted to the screen); anything else stored there (corrupted) is left alone."""
        geometry = self.settings.value("window/geometry")
        state = self.settings.value("window/state")
        area = self.available_area()
        if isinstance(geometry, QByteArray) and self.restoreGeometry(geometry):
            if self.width() > area.width() or self.height() > area.height():  # saved on a larger screen
                self.resize(min(self.width(), area.width()), min(self.height(), area.height()))
        else:
            self.resize(*first_size((area.width(), area.height())))
            self.move(area.topLeft())
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

    def showEvent(self, event):  # noqa: N802  (Qt's name)
        super().showEvent(event)
        if self._needs_default_sizes:  # dock sizes only take once the window has its size
            self._needs_default_sizes = False
            self._default_sizes()

    def resizeEvent(self, event):  # noqa: N802  (Qt's name)
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
