"""Browse an audit report folder (``lbdviewer audit -o REPORT_DIR``): its rows, images and metrics.

:class:`ReportBrowser` is a self-contained widget: a table of the rows, worst
leak first (:func:`lbdviewer.audit.report.leak_order`, failed inputs last),
and for the selected row the original and the reconstruction side by side
(the report's thumbnails, enlarged by an integer factor with nearest
neighbour, never resampled) with the row's metrics. It reads the report's
files and computes nothing. :func:`open_report_browser` is what a menu action
calls: it asks for a folder when none is given and shows the browser in a
non-modal dialog.

Every text from the report (file names, OCR, error messages) is shown as
plain text, never interpreted as markup.
"""

from __future__ import annotations

import lbdviewer.gui.qt  # noqa: F401  (PyQt6 and row-major images, before any Qt library)

import os
from pathlib import Path

from PyQt6.QtCore import Qt
from PyQt6.QtGui import QPixmap
from PyQt6.QtWidgets import (QAbstractItemView, QDialog, QFileDialog, QFormLayout, QHBoxLayout, QHeaderView,
                             QLabel, QPushButton, QSplitter, QTableWidget, QTableWidgetItem, QVBoxLayout, QWidget)

from lbdviewer.audit.results import is_legible, is_ok, leak_order, read_results

#: Side (pixels) the thumbnails are enlarged towards, by an integer factor.
VIEW_SIDE = 256
TABLE_COLUMNS = ("input", "descriptor", "status", "correlation")
#: The metrics shown for the selected row: (label, column, format).
METRICS = (("descriptor", "descriptor", "{}"), ("status", "status", "{}"), ("keypoints", "keypoints", "{}"),
           ("coverage", "coverage", "{:.0%}"), ("correlation", "correlation", "{:.3f}"),
           ("rank correlation", "rank_correlation", "{:.3f}"), ("SSIM", "ssim", "{:.3f}"),
           ("OCR, original", "ocr_original", "{}"), ("OCR, rebuilt", "ocr_reconstruction", "{}"),
           ("OCR similarity", "ocr_similarity", "{:.2f}"), ("seconds", "seconds", "{:.1f}"),
           ("worker", "worker", "{}"), ("input", "input", "{}"))


def _plain_label(text="", *, wrap=False):
    label = QLabel(text)
    label.setTextFormat(Qt.TextFormat.PlainText)
    label.setWordWrap(wrap)
    label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    return label


class ReportBrowser(QWidget):
    """The rows of one audit report, and the selected row's images and metrics.

    Parameters
    ----------
    folder : str or os.PathLike, optional
        A report folder to open at once (see :meth:`open_folder`).
    """

    def __init__(self, folder=None, parent=None):
        super().__init__(parent)
        self.folder = None
        self.rows = []
        self.header = _plain_label(wrap=True)
        self.header.setObjectName("header")
        self.table = QTableWidget(0, len(TABLE_COLUMNS))
        self.table.setHorizontalHeaderLabels(list(TABLE_COLUMNS))
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().setVisible(False)
        self.table.horizontalHeader().setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        self.table.itemSelectionChanged.connect(self._show_selected)
        self.original = self._image_label()
        self.reconstruction = self._image_label()
        self.metrics = {}
        form = QFormLayout()
        for label, column, _ in METRICS:
            self.metrics[column] = _plain_label(wrap=True)
            form.addRow(label, self.metrics[column])
        images = QHBoxLayout()
        for title, view in (("original", self.original), ("rebuilt from the descriptors", self.reconstruction)):
            column = QVBoxLayout()
            column.addWidget(_plain_label(title))
            column.addWidget(view)
            images.addLayout(column)
        detail = QWidget()
        detail_layout = QVBoxLayout(detail)
        detail_layout.addLayout(images)
        detail_layout.addLayout(form)
        detail_layout.addStretch(1)
        splitter = QSplitter()
        splitter.addWidget(self.table)
        splitter.addWidget(detail)
        splitter.setSizes([420, 560])
        layout = QVBoxLayout(self)
        layout.addWidget(self.header)
        layout.addWidget(splitter, 1)
        if folder is not None:
            self.open_folder(folder)

    @staticmethod
    def _image_label():
        label = QLabel()
        label.setFixedSize(VIEW_SIDE, VIEW_SIDE)
        label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        label.setStyleSheet("background: #111; color: #888;")
        return label

    def open_folder(self, folder):
        """Show the report in ``folder``; return True, or False (the message in the header) if unreadable.

        A folder that cannot be read leaves the rows shown so far in place.
        """
        try:
            rows = read_results(folder)
        except (ValueError, OSError) as error:
            self.header.setText(f"Cannot open this report: {error}")
            return False
        self.folder = Path(folder)
        self.rows = leak_order(rows) + [row for row in rows if not is_ok(row)]
        errors = sum(not is_ok(row) for row in rows)
        self.header.setText(f"{self.folder}: {len(rows)} rows, {errors} errors, worst leak first")
        self.table.setRowCount(len(self.rows))
        for index, row in enumerate(self.rows):
            values = (os.path.basename(row["input"]), row["descriptor"],
                      "legible text" if is_ok(row) and is_legible(row) else row["status"],
                      "" if row["correlation"] is None else f"{row['correlation']:.3f}")
            for column, value in enumerate(values):
                item = QTableWidgetItem(value)
                item.setToolTip(row["input"] if column == 0 else value)
                self.table.setItem(index, column, item)
        if self.rows:
            self.table.selectRow(0)
        else:
            self._show(None)
        return True

    def selected_row(self):
        """The report row selected in the table, or None."""
        index = self.table.currentRow()
        return self.rows[index] if 0 <= index < len(self.rows) else None

    def _show_selected(self):
        self._show(self.selected_row())

    def _show(self, row):
        for _, column, form in METRICS:
            value = None if row is None else row.get(column)
            self.metrics[column].setText("–" if value is None else form.format(value))
        for kind, view in (("original", self.original), ("reconstruction", self.reconstruction)):
            name = None if row is None else row.get(f"thumbnail_{kind}")
            pixmap = QPixmap(str(self.folder / name)) if name else QPixmap()
            if pixmap.isNull():
                view.setPixmap(QPixmap())
                view.setText("no image")
                continue
            factor = max(1, VIEW_SIDE // max(pixmap.width(), pixmap.height()))
            view.setPixmap(pixmap.scaled(pixmap.width() * factor, pixmap.height() * factor,
                                         Qt.AspectRatioMode.KeepAspectRatio,
                                         Qt.TransformationMode.FastTransformation))


class ReportBrowserDialog(QDialog):
    """A non-modal window holding a :class:`ReportBrowser` and an "Open report…" button."""

    def __init__(self, folder=None, parent=None):
        super().__init__(parent)
        self.setWindowTitle("Audit report")
        self.browser = ReportBrowser(folder)
        open_button = QPushButton("Open report…")
        open_button.clicked.connect(self.choose_folder)
        buttons = QHBoxLayout()
        buttons.addWidget(open_button)
        buttons.addStretch(1)
        layout = QVBoxLayout(self)
        layout.addWidget(self.browser, 1)
        layout.addLayout(buttons)
        self.resize(1040, 680)

    def choose_folder(self):
        """Ask for a report folder and open it; return whether one was opened."""
        folder = QFileDialog.getExistingDirectory(self, "Open an audit report folder")
        return bool(folder) and self.browser.open_folder(folder)


def open_report_browser(parent=None, folder=None):
    """Show an audit report in a non-modal dialog; ask for the folder when ``folder`` is None.

    Returns
    -------
    ReportBrowserDialog or None
        The dialog shown, or None if the folder question was cancelled.
    """
    dialog = ReportBrowserDialog(folder, parent)
    if folder is None and not dialog.choose_folder():
        dialog.deleteLater()
        return None
    dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    dialog.show()
    return dialog
