"""Export wiring: the export dialogs, the last-export folder, and the records beside each file.

A panel is exported as a pixel-exact PNG of the array it shows
(:mod:`lbdviewer.gui.export`). A figure for a paper is made by the figure
engine shared with ``lbdviewer figures`` (:mod:`lbdviewer.figures`):
:func:`figure_spec` turns what the session holds into the engine's spec,
and :func:`lbdviewer.figures.save_figure` writes PNG / PDF / SVG at the
chosen width and dpi. Beside every file goes the run record of what was
computed, taken from the :class:`~lbdviewer.gui.session.Session` (the run
records) and the canvases (what they show), never from the parameter form.
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

from lbdviewer.evaluation.display import uncovered_rule
from lbdviewer.gui import jobs, preferences, sidecars
from lbdviewer.gui.export import export_panel
from lbdviewer.gui.model import descriptor_label
from lbdviewer.gui.workers import JobRunner
from lbdviewer.operators.descriptor import DescriptorOperator
from lbdviewer.patterns.base import pair_number

FAMILIES = ("brief", "freak", "ra-freak", "ex-freak")
#: The maps figure sets each family beside this one (the paper's Fig. 5 compares BRIEF and FREAK).
COMPARED_WITH = {"brief": "freak", "freak": "brief", "ra-freak": "freak", "ex-freak": "freak"}
#: The figures the app makes with the engine.
FIGURE_KEYS = ("patch", "maps", "live", "whole", "families")


def engine():
    """The figure engine, imported when a figure is made (matplotlib sets up its folders on import)."""
    from lbdviewer import figures

    return figures


@dataclass(frozen=True)
class ExportOptions:
    """How a figure is written: formats, width (``"single"``, ``"double"`` or inches), dpi and caption.

    None takes the figure engine's default; everything is checked by the
    engine's own rules (:mod:`lbdviewer.figures.engine`). ``caption``:
    ``"beside"`` (``NAME.caption.txt`` and ``NAME.tex``, not in the artwork)
    or ``"inside"`` (drawn under the panels).
    """

    formats: tuple | None = None
    width: object = "double"
    dpi: int | None = None
    caption: str = "beside"

    def __post_init__(self):
        figures = engine()
        formats = figures.DEFAULT_FORMATS if self.formats is None else self.formats
        object.__setattr__(self, "formats", figures.engine.check_formats(formats))
        object.__setattr__(self, "dpi", figures.engine.check_dpi(figures.DEFAULT_DPI if self.dpi is None
                                                                 else self.dpi))
        figures.engine.check_width(self.width)
        figures.engine.check_caption(self.caption)

    def inches(self):
        return engine().engine.check_width(self.width)


class ExportDialog(QDialog):
    """Where and how to write a figure: file, formats (PNG, PDF, SVG), width (one or two columns, inches), dpi.

    ``options`` (an :class:`ExportOptions`, default the engine's defaults) are the choices it opens with.
    """

    def __init__(self, title, path, parent=None, options=None):
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
        figures = engine()
        tips = {"png": "PNG with its dpi recorded", "pdf": "PDF with TrueType text (searchable, editable)",
                "svg": "SVG with text kept as text"}
        for name in figures.FORMATS:
            box = QCheckBox(name.upper())
            box.setChecked(name in figures.DEFAULT_FORMATS)
            box.setToolTip(tips.get(name, name.upper()))
            self.format_boxes[name] = box
            formats.addWidget(box)
        self.width_combo = QComboBox()
        for key, text in (("single", f"single column ({figures.WIDTHS['single']} in)"),
                          ("double", f"double column ({figures.WIDTHS['double']} in)"), ("inches", "inches:")):
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
        self.dpi.setRange(*figures.engine.DPI_RANGE)
        self.dpi.setValue(figures.DEFAULT_DPI)
        self.dpi.setToolTip("Resolution of the PNG (recorded in the file)")
        self.caption_combo = QComboBox()
        for key, text in (("beside", "beside the figure (NAME.caption.txt, NAME.tex)"),
                          ("inside", "inside the figure (slides, posters)")):
            self.caption_combo.addItem(text, key)
        self.caption_combo.setToolTip("Journals set the caption in the manuscript: beside writes it as LaTeX "
                                      "(NAME.tex holds a ready figure environment); inside draws it under the panels")
        self.set_options(ExportOptions() if options is None else options)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Save | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        form = QFormLayout(self)
        form.addRow("File", _wrap(where))
        form.addRow("Formats", _wrap(formats))
        form.addRow("Width", _wrap(width))
        form.addRow("Resolution (dpi)", self.dpi)
        form.addRow("Caption", self.caption_combo)
        form.addRow(buttons)

    def set_options(self, options):
        """Show ``options`` (an :class:`ExportOptions`) in the controls."""
        for name, box in self.format_boxes.items():
            box.setChecked(name in options.formats)
        key = options.width if options.width in ("single", "double") else "inches"
        self.width_combo.setCurrentIndex(self.width_combo.findData(key))
        if key == "inches":
            self.inches.setValue(float(options.width))
        self.dpi.setValue(options.dpi)
        self.caption_combo.setCurrentIndex(self.caption_combo.findData(options.caption))

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
        return ExportOptions(formats, self.inches.value() if key == "inches" else key, self.dpi.value(),
                             self.caption_combo.currentData())


def _checked_width(width):
    """``"single"``, ``"double"`` or inches (float) from a stored ``width``; ValueError if the engine refuses it."""
    if isinstance(width, bool):
        raise ValueError(f"width must be 'single', 'double' or inches, got {width!r}")
    return width if width in ("single", "double") else engine().engine.check_width(width)


def _wrap(layout):
    widget = QWidget()
    layout.setContentsMargins(0, 0, 0, 0)
    widget.setLayout(layout)
    return widget


def figure_spec(window, key):
    """The engine's :class:`~lbdviewer.figures.FigureSpec` of figure ``key`` from what the window shows.

    Every array comes from the session's records of what ran (the patch the
    live run solved, the whole-image result, the pattern or keypoint the maps
    belong to), and every title from the run's own parameters, not the form's.
    """
    figures = engine()
    session = window.session
    view = session.keypoint_view if session.keypoint_mode else None
    pattern = session.pattern
    if key == "patch":
        mode = window.pattern_panel.pairs_mode.currentData()
        selected = window.pattern_panel.frame_index()
        if view is not None:
            title = figures.run_title(descriptor=descriptor_label(view.descriptor), m=view.m,
                                      patch_size=view.patch_size)
            return figures.patch_pattern_figure(view.patch, view.pattern, pairs=mode, selected=selected, title=title)
        x, y = window.source.patch_position()
        title = figures.run_title(descriptor=pattern.name, m=pattern.m, patch_size=pattern.patch_size)
        return figures.patch_pattern_figure(session.patch_at(x, y), pattern, pairs=mode, selected=selected,
                                            title=title)
    if key == "maps":  # the current descriptor beside the one the paper compares it with (own scales)
        if view is not None:
            index = min(window.pattern_panel.frame_index(), view.m - 1)
            label = figures.run_title(descriptor=descriptor_label(view.descriptor), m=view.m)
            return figures.maps_figure([(label, view.weights, view.occurrences)],
                                       frame_vectors=[(label, index, view.operator.frame_vector(index))])
        operator = session.operator
        index = min(window.pattern_panel.frame_index(), pattern.m - 1)
        other = DescriptorOperator(jobs.pattern_for(session.parameters, family=COMPARED_WITH[pattern.name]))
        entries = [(figures.run_title(descriptor=op.pattern.name, m=op.m), op.weight_map(), op.occurrence_map())
                   for op in (operator, other)]
        return figures.maps_figure(entries, frame_vectors=[(entries[0][0], index, operator.frame_vector(index))])
    if key == "live":
        run = session.live
        update = run.update
        rp = run.parameters
        if run.keypoint is not None:
            title = figures.run_title(descriptor=descriptor_label(run.descriptor), m=run.keypoint.m,
                                      patch_size=run.keypoint.patch_size, solver=run.method)
        else:
            title = figures.run_title(descriptor=rp["family"], m=rp["m"], patch_size=rp["patch_size"],
                                      solver=run.method)
        return figures.live_figure(
            run.patch, update.estimate, iteration=update.iteration, iterations=rp["iterations"],
            bit_consistency=None if update.bit_consistency is None else update.bit_consistency[-1],
            stop_reason=update.stop_reason().split(": ", 1)[1] if update.stopped_early else None, title=title)
    if key == "whole":
        run = session.whole
        rp = run.parameters
        pattern_run = run.kind == "pattern"
        descriptor = rp["family"] if pattern_run else descriptor_label(run.descriptor)
        keypoints = None if pattern_run else run.result.params.get("keypoints")
        title = figures.run_title(descriptor=descriptor, keypoints=keypoints, m=run.result.params.get("m"),
                                  patch_size=rp["patch_size"] if pattern_run else None,
                                  offset=rp["offset"] if pattern_run and rp["sites"] == "grid" else None,
                                  solver=run.method, mode=run.mode)
        original = session.image if session.has_pixels else None
        return figures.whole_image_figure(original, run.result.image, covered=run.result.covered,
                                          edges=original is not None and window.whole.edges_box.isChecked(),
                                          metrics=run.metrics, title=title, keypoints=keypoints,
                                          uncovered=uncovered_rule(run.result))
    raise ValueError(f"key must be one of {FIGURE_KEYS[:-1]} (families: export_families), got {key!r}")


def write_job(spec, stem, options, record):
    """Render and write a figure with the engine (a generator, so a worker thread runs it); yield ``{format: path}``."""
    yield engine().save_figure(spec, stem, formats=options.formats, dpi=options.dpi, width=options.width,
                               record=record, caption=options.caption)


class Exporter(QObject):
    """Exports of the window's panels and figures, with their records and the last-export folder.

    Panels are written at once (a PNG of an array); figures are rendered by
    matplotlib on a worker thread (:attr:`writer`), and the patches of the
    families figure are solved on another (:attr:`figure_runner`).

    Signals
    -------
    exported(str)
        A file was written (its path; for a figure, its first format's).
    """

    exported = pyqtSignal(str)

    def __init__(self, window):
        super().__init__(window)
        self.window = window
        self.figure_runner = JobRunner(self, pool=window.pools["tasks"], interval=0.0)  # every family counts
        self.writer = JobRunner(self, pool=window.pools["tasks"], interval=0.0)
        self.last_written = {}
        for runner in (self.figure_runner, self.writer):
            runner.failed.connect(lambda message: window.show_error("Export failed", message))
        self.writer.progressed.connect(self._on_written)

    def runners(self):
        return (self.figure_runner, self.writer)

    def _on_written(self, written):
        self.last_written = {key: str(path) for key, path in written.items()}
        self._after_export(next(iter(self.last_written.values())))

    # -- folders -------------------------------------------------------------------
    def last_folder(self):
        """Where the last export went (not where the last image came from), if that folder still exists."""
        return preferences.read_folder(self.window.settings, "paths/last_export_folder", self.window.last_folder())

    def remembered_options(self):
        """The formats, width and dpi of the last figure exported (each checked; the engine's default if not valid)."""
        store = self.window.settings
        formats = preferences.read_checked(store, "export/formats", engine().engine.check_formats, None)
        width = preferences.read_checked(store, "export/width", _checked_width, "double")
        dpi = preferences.read_checked(store, "export/dpi", engine().engine.check_dpi, None)
        caption = preferences.read_checked(store, "export/caption", engine().engine.check_caption, "beside")
        return ExportOptions(formats or None, width, dpi, caption)

    def _remember_options(self, options):
        preferences.write(self.window.settings, "export/formats", list(options.formats))
        preferences.write(self.window.settings, "export/width", options.width)
        preferences.write(self.window.settings, "export/dpi", options.dpi)
        preferences.write(self.window.settings, "export/caption", options.caption)

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
        """Is there something to put in figure ``key``?

        The families figure compares the paper's patterns on a patch of the
        image; a figure of a patch needs its pixels (a feature file alone has
        none) and, for the patch figure, a field pattern (AKAZE's cells are not).
        """
        session = self.window.session
        if key == "whole":
            return session.has_whole_result()
        if key == "live":
            return session.live_ended_with_update() and session.live.patch is not None
        if key == "families":
            return session.mode == "pattern" and session.pattern is not None
        if session.keypoint_mode:
            view = session.keypoint_view
            if view is None:
                return False
            return key == "maps" or (view.patch is not None and view.pattern is not None)
        return session.pattern is not None

    # -- panels ---------------------------------------------------------------------
    def export_panel(self, name, path, *, factor=None):
        """Write panel ``name`` as a pixel-exact PNG with its record; return both paths."""
        if name not in self.available_panels():
            raise ValueError(f"panel {name!r} has nothing to export yet (a run must have ended)")
        canvas = self.window.panels()[name]
        record = sidecars.panel_record(self.window.session, name, canvas.metadata)
        result = export_panel(path, canvas.panel_array(), factor=factor, record=record)
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
    def export_figure(self, key, stem, options=None):
        """Write figure ``key`` (not ``"families"``) at ``stem`` with the figure engine, on a worker thread.

        The spec and the record are taken now (what the window shows now);
        ``exported`` follows when the files are written, and
        :attr:`last_written` holds ``{format: path}``. ``options``:
        :class:`ExportOptions` (default: the engine's defaults).

        Raises
        ------
        ValueError
            Unknown ``key``, or nothing to show in that figure yet.
        """
        options = ExportOptions() if options is None else options
        if key not in FIGURE_KEYS[:-1]:
            raise ValueError(f"key must be one of {FIGURE_KEYS[:-1]} or 'families', got {key!r}")
        if not self.figure_available(key):
            raise ValueError(f"figure {key!r} has nothing to show yet")
        spec = figure_spec(self.window, key)
        shown = {}
        if key in ("patch", "maps"):
            shown = {"pair": pair_number(self.window.pattern_panel.frame_index())}  # numbered from 1
            if not self.window.session.keypoint_mode:
                shown["patch_xy"] = list(self.window.source.patch_position())
        record = sidecars.figure_record(self.window.session, key, extra=shown)
        self.writer.start(write_job(spec, stem, options, record))
        self.window.show_status(f"Writing {stem} ({', '.join(options.formats)})…")

    def export_families(self, stem, options=None):
        """Reconstruct the current patch with every family on a worker, then write the figure (on another)."""
        options = ExportOptions() if options is None else options
        figures = engine()
        window = self.window
        session = window.session
        patch_xy = window.source.patch_position()
        patch = session.patch_at(*patch_xy).copy()
        parameters = dict(session.parameters)
        estimates, solves = [], []

        def collect(solve):
            solves.append(solve)
            estimates.append((figures.run_title(descriptor=solve.family, m=solve.m), solve.estimate))

        def write(completed):
            self.figure_runner.progressed.disconnect(collect)
            self.figure_runner.finished.disconnect(write)
            if completed:
                spec = figures.families_figure(patch, estimates, title=figures.run_title(
                    patch_size=parameters["patch_size"], solver=parameters["solver"]))
                record = sidecars.families_record(session, patch_xy, parameters, solves)
                self.writer.start(write_job(spec, stem, options, record))

        self.figure_runner.progressed.connect(collect)
        self.figure_runner.finished.connect(write)
        self.figure_runner.start(jobs.family_patches(patch, parameters, FAMILIES))
        window.show_status("Reconstructing the patch with every family for the figure…")

    def figure_dialog(self, key):
        if not self.figure_available(key):
            self.window.show_status("Nothing to export yet: a run must have ended (Esc stops the live solver)")
            return
        dialog = ExportDialog("Export figure", os.path.join(self.last_folder(), f"figure-{key}"), self.window,
                              self.remembered_options())
        if dialog.exec() != QDialog.DialogCode.Accepted or not dialog.stem():
            return
        try:
            options = dialog.options()
        except ValueError as error:
            self.window.show_error("Export failed", str(error))
            return
        self._remember_options(options)
        if key == "families":
            self.export_families(dialog.stem(), options)
        else:
            self._report(lambda: self.export_figure(key, dialog.stem(), options))

    def _report(self, write):
        try:
            write()
        except (OSError, ValueError) as error:
            self.window.show_error("Export failed", str(error))
