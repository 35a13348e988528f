"""Export wiring: the export dialogs, the last-export folder, and the records beside each file.

A panel is exported as a pixel-exact PNG of the array it shows
(:mod:`lbdviewer.gui.export`); a composed figure goes through
:func:`write_figure`, the one place that turns panels into a figure file.
Beside every file goes a JSON record of what was computed, taken from the
:class:`~lbdviewer.gui.session.Session` (the run records) and the canvases
(what they show), never from the parameter form.
"""

from __future__ import annotations

import lbdviewer.gui.qt  # noqa: F401  (PyQt6 and row-major images, before any Qt library)

import os
from dataclasses import dataclass

from PyQt6.QtCore import QObject, pyqtSignal
from PyQt6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QDoubleSpinBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QInputDialog,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QWidget,
)

from lbdviewer.gui import jobs, sidecars
from lbdviewer.gui.export import PanelArray, export_panels
from lbdviewer.gui.workers import JobRunner

#: File formats a figure can be written in, and those the writer supports today.
FORMATS = ("png", "pdf", "svg")
WRITABLE_FORMATS = ("png",)
#: Figure widths: a journal column, two columns (inches), or a number of inches.
WIDTHS = {"single": 3.5, "double": 7.16}
DEFAULT_DPI = 300
FAMILIES = ("brief", "freak", "ra-freak", "ex-freak")
#: Panels each composed figure is made of, left to right.
FIGURE_PANELS = {
    "patch": ("patch",),
    "maps": ("weight-map", "occurrence-map", "frame-vector"),
    "live": ("live-original", "live-reconstruction"),
    "whole": ("original", "reconstruction"),
}


@dataclass(frozen=True)
class ExportOptions:
    """How a figure is written: formats, width (``"single"``, ``"double"`` or inches) and dpi."""

    formats: tuple = ("png",)
    width: object = "double"
    dpi: int = DEFAULT_DPI

    def __post_init__(self):
        unknown = [f for f in self.formats if f not in FORMATS]
        if not self.formats or unknown:
            raise ValueError(f"formats must be a non-empty subset of {FORMATS}, got {self.formats!r}")
        if not (self.width in WIDTHS or isinstance(self.width, int | float) and 1.0 <= self.width <= 20.0):
            raise ValueError(f"width must be 'single', 'double' or 1 to 20 inches, got {self.width!r}")
        if not 72 <= int(self.dpi) <= 1200:
            raise ValueError(f"dpi must be between 72 and 1200, got {self.dpi!r}")

    def inches(self):
        return WIDTHS.get(self.width, self.width)


class ExportDialog(QDialog):
    """Where and how to write a figure: file, formats, width, dpi.

    The formats the writer cannot make yet are shown disabled with the
    reason in their tooltip.
    """

    def __init__(self, title, path, parent=None):
        super().__init__(parent)
        self.setWindowTitle(title)
        self.path_edit = QLineEdit(os.path.splitext(path)[0])
        self.path_edit.setToolTip("File name without extension: one file per format, and a .json record")
        browse = QPushButton("Browse…")
        browse.clicked.connect(self._browse)
        where = QHBoxLayout()
        where.addWidget(self.path_edit, 1)
        where.addWidget(browse)
        self.format_boxes = {}
        formats = QHBoxLayout()
        for name in FORMATS:
            box = QCheckBox(name.upper())
            box.setChecked(name == "png")
            writable = name in WRITABLE_FORMATS
            box.setEnabled(writable)
            box.setToolTip(f"Write {name.upper()}" if writable else
                           f"{name.upper()} needs the matplotlib figure engine, not in this build")
            self.format_boxes[name] = box
            formats.addWidget(box)
        self.width_combo = QComboBox()
        for key, text in (("single", "single column (3.5 in)"), ("double", "double column (7.16 in)"),
                          ("inches", "inches:")):
            self.width_combo.addItem(text, key)
        self.width_combo.setCurrentIndex(1)
        self.inches = QDoubleSpinBox()
        self.inches.setRange(1.0, 20.0)
        self.inches.setValue(5.0)
        self.inches.setSuffix(" in")
        self.inches.setEnabled(False)
        self.width_combo.currentIndexChanged.connect(
            lambda _: self.inches.setEnabled(self.width_combo.currentData() == "inches"))
        width = QHBoxLayout()
        width.addWidget(self.width_combo, 1)
        width.addWidget(self.inches)
        self.dpi = QSpinBox()
        self.dpi.setRange(72, 1200)
        self.dpi.setValue(DEFAULT_DPI)
        self.dpi.setToolTip("Resolution of the PNG (recorded in the file)")
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Save | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        form = QFormLayout(self)
        form.addRow("File", _wrap(where))
        form.addRow("Formats", _wrap(formats))
        form.addRow("Width", _wrap(width))
        form.addRow("Resolution (dpi)", self.dpi)
        form.addRow(buttons)

    def _browse(self):
        path, _ = QFileDialog.getSaveFileName(self, "Export figure", self.path_edit.text(), "All files (*)")
        if path:
            self.path_edit.setText(os.path.splitext(path)[0])

    def stem(self):
        return self.path_edit.text().strip()

    def options(self):
        """The chosen :class:`ExportOptions` (ValueError naming a bad choice)."""
        formats = tuple(name for name, box in self.format_boxes.items() if box.isChecked())
        key = self.width_combo.currentData()
        return ExportOptions(formats, self.inches.value() if key == "inches" else key, self.dpi.value())


def _wrap(layout):
    widget = QWidget()
    layout.setContentsMargins(0, 0, 0, 0)
    widget.setLayout(layout)
    return widget


def write_figure(stem, panels, options, record):
    """Write a composed figure ``stem.<format>`` for each format, with its run record ``stem.json``.

    Returns the paths written (figure files first, the record last). Today
    the figure is the panels side by side as one pixel-exact PNG (integer
    enlargement, nearest neighbour); the chosen width and dpi are recorded.
    """
    if set(options.formats) - set(WRITABLE_FORMATS):
        raise ValueError(f"formats must be among {WRITABLE_FORMATS} in this build, got {options.formats!r}")
    extra = {**record.get("extra", {}), "export": {"formats": list(options.formats),
                                                   "width_in": options.inches(), "dpi": int(options.dpi)}}
    png, sidecar = export_panels(stem + ".png", panels, record={**record, "extra": extra})
    return [png, sidecar]


class Exporter(QObject):
    """Exports of the window's panels and figures, with their records and the last-export folder.

    Signals
    -------
    exported(str)
        A file was written (its path).
    """

    exported = pyqtSignal(str)

    def __init__(self, window):
        super().__init__(window)
        self.window = window
        self.figure_runner = JobRunner(self, interval=0.0)  # every family counts
        self.figure_runner.failed.connect(lambda message: window.show_error("Figure failed", message))

    # -- folders -------------------------------------------------------------------
    def last_folder(self):
        """Where the last export went (not where the last image came from)."""
        settings = self.window.settings
        return str(settings.value("paths/last_export_folder", settings.value("paths/last_folder",
                                                                                os.path.expanduser("~"))))

    def _after_export(self, path):
        self.window.settings.setValue("paths/last_export_folder", os.path.dirname(os.path.abspath(path)))
        self.window.show_status(f"Exported {path} (+ JSON)")
        self.exported.emit(path)

    # -- what can be exported ----------------------------------------------------------
    def available_panels(self):
        """Panels showing something that can be exported with a truthful record.

        A run's panels wait until the run has ended: a record says what ran,
        not what is still running.
        """
        session = self.window.session
        names = []
        for name, canvas in self.window.panels().items():
            if canvas.array is None:
                continue
            if name in sidecars.LIVE_PANELS and not session.live_ended_with_update():
                continue
            if name in sidecars.WHOLE_PANELS and not session.whole_estimate_ended():
                continue
            names.append(name)
        return names

    def figure_available(self, key):
        """Is there something to put in figure ``key``?"""
        session = self.window.session
        if key == "whole":
            return session.has_whole_result()
        if key == "live":
            return session.live_ended_with_update()
        if key == "families":
            return session.pattern is not None and session.features is None
        return session.pattern is not None

    # -- panels ---------------------------------------------------------------------
    def export_panel(self, name, path, *, factor=None):
        """Write panel ``name`` as a pixel-exact PNG with its record; return both paths."""
        if name not in self.available_panels():
            raise ValueError(f"panel {name!r} has nothing to export yet (a run must have ended)")
        canvas = self.window.panels()[name]
        record = sidecars.panel_record(self.window.session, name, canvas.metadata)
        result = export_panels(path, [canvas.panel_array()], factor=factor, record=record)
        self._after_export(path)
        return result

    def panel_dialog(self):
        available = self.available_panels()
        if not available:
            self.window.show_status("Nothing to export yet")
            return
        name, ok = QInputDialog.getItem(self.window, "Export panel", "Panel:", available, 0, False)
        if not ok:
            return
        path, _ = QFileDialog.getSaveFileName(self.window, "Export PNG", os.path.join(self.last_folder(),
                                                                                       f"{name}.png"),
                                              "PNG images (*.png)")
        if path:
            if not path.lower().endswith(".png"):
                path += ".png"
            self._report(lambda: self.export_panel(name, path))

    # -- figures --------------------------------------------------------------------
    def export_figure(self, key, stem, options=ExportOptions()):
        """Write composed figure ``key`` (not ``"families"``) at ``stem``; return the paths written."""
        if key not in FIGURE_PANELS:
            raise ValueError(f"key must be one of {tuple(FIGURE_PANELS)} or 'families', got {key!r}")
        if not self.figure_available(key):
            raise ValueError(f"figure {key!r} has nothing to show yet")
        canvases = self.window.panels()
        panels = [canvases[name].panel_array() for name in FIGURE_PANELS[key]]
        record = sidecars.figure_record(self.window.session, key,
                                            {name: canvases[name].metadata for name in FIGURE_PANELS[key]})
        paths = write_figure(stem, panels, options, record)
        self._after_export(paths[0])
        return paths

    def export_families(self, stem, options=ExportOptions()):
        """Reconstruct the current patch with every family on a worker, then write the figure."""
        window = self.window
        session = window.session
        patch_xy = window.source.patch_position()
        patch = session.patch_at(*patch_xy).copy()
        parameters = dict(session.parameters)
        panels = [PanelArray("original", patch)]
        displays, measurements = {}, {}

        def collect(item):
            family, m, estimate = item
            shown, levels, display = window.presenter.display(estimate, reference=patch)
            displays[family], measurements[family] = display, m
            panels.append(PanelArray(family, shown, levels, metadata={"family": family, "m": m}))

        def write(completed):
            self.figure_runner.progressed.disconnect(collect)
            self.figure_runner.finished.disconnect(write)
            if completed:
                record = sidecars.families_record(session, patch_xy, parameters, measurements, displays)
                self._report(lambda: self._after_export(write_figure(stem, panels, options, record)[0]))

        self.figure_runner.progressed.connect(collect)
        self.figure_runner.finished.connect(write)
        self.figure_runner.start(jobs.family_patches(patch, parameters, FAMILIES))
        window.show_status("Reconstructing the patch with every family for the figure…")

    def figure_dialog(self, key):
        if not self.figure_available(key):
            self.window.show_status("Nothing to export yet: a run must have ended (Esc stops the live solver)")
            return
        dialog = ExportDialog("Export figure", os.path.join(self.last_folder(), f"figure-{key}"), self.window)
        if dialog.exec() != QDialog.DialogCode.Accepted or not dialog.stem():
            return
        try:
            options = dialog.options()
        except ValueError as error:
            self.window.show_error("Export failed", str(error))
            return
        if key == "families":
            self.export_families(dialog.stem(), options)
        else:
            self._report(lambda: self.export_figure(key, dialog.stem(), options))

    def _report(self, write):
        try:
            write()
        except (OSError, ValueError) as error:
            self.window.show_error("Export failed", str(error))
