"""The audit report browser: rows worst leak first, the selected row's images and metrics, bad folders."""

import cv2
import numpy as np
import pytest

from lbdviewer.audit import COLUMNS, ResultsLog
from lbdviewer.gui.report_browser import VIEW_SIDE, ReportBrowser, ReportBrowserDialog


def _png(height, width, value):
    pixels = np.full((height, width), value, dtype=np.uint8)
    pixels[: height // 2] = 255 - value
    return cv2.imencode(".png", pixels)[1].tobytes()


@pytest.fixture
def report(tmp_path):
    def row(name, correlation, status="ok", ocr=(None, None, None)):
        return {**dict.fromkeys(COLUMNS), "input": f"/data/{name}", "descriptor": "orb", "status": status,
                "correlation": correlation, "keypoints": 120, "coverage": 0.5, "worker": "local:1",
                "ocr_original": ocr[0], "ocr_reconstruction": ocr[1], "ocr_similarity": ocr[2]}

    with ResultsLog(tmp_path) as log:
        log.append(row("calm.png", 0.41), {"original": _png(48, 64, 10), "reconstruction": _png(48, 64, 90)})
        log.append(row("broken.png", None, status="error: image file could not be decoded"))
        log.append(row("<b>page&amp;.png", 0.30, ocr=("TOP SECRET", "TOP SECRET", 1.0)),
                   {"original": _png(48, 64, 20), "reconstruction": _png(48, 64, 70)})
        log.append(row("sharp.png", 0.88), {"original": _png(100, 100, 30), "reconstruction": _png(100, 100, 60)})
    return tmp_path


def _column(browser, column):
    return [browser.table.item(i, column).text() for i in range(browser.table.rowCount())]


def test_rows_are_listed_worst_leak_first_with_failures_last(qtbot, report):
    browser = ReportBrowser(report)
    qtbot.addWidget(browser)
    assert _column(browser, 0) == ["<b>page&amp;.png", "sharp.png", "calm.png", "broken.png"]
    assert _column(browser, 2) == ["legible text", "ok", "ok", "error: image file could not be decoded"]
    assert _column(browser, 3) == ["0.300", "0.880", "0.410", ""]
    assert "4 rows, 1 errors" in browser.header.text()


def test_selecting_a_row_shows_its_images_enlarged_without_resampling_and_its_metrics(qtbot, report):
    browser = ReportBrowser(report)
    qtbot.addWidget(browser)
    browser.show()
    browser.table.selectRow(0)  # 64x48 thumbnails: enlarged 4x
    assert browser.metrics["ocr_original"].text() == "TOP SECRET"
    assert browser.metrics["input"].text() == "/data/<b>page&amp;.png"
    assert browser.metrics["input"].textFormat().name == "PlainText"
    pixmap = browser.reconstruction.pixmap()
    assert (pixmap.width(), pixmap.height()) == (VIEW_SIDE, 192)
    image = pixmap.toImage()
    assert image.pixelColor(0, 0).red() == 255 - 70 and image.pixelColor(0, 191).red() == 70
    browser.table.selectRow(1)  # 100x100: enlarged 2x
    assert browser.metrics["correlation"].text() == "0.880" and browser.metrics["coverage"].text() == "50%"
    assert browser.original.pixmap().width() == 200
    browser.table.selectRow(3)
    assert browser.metrics["status"].text().startswith("error: ") and browser.metrics["correlation"].text() == "–"
    assert browser.original.text() == "no image" and browser.original.pixmap().isNull()
    browser.resize(1000, 620)
    browser.table.selectRow(0)
    assert not browser.grab().isNull()


def test_a_folder_without_a_report_is_refused_and_the_shown_rows_stay(qtbot, report, tmp_path_factory):
    browser = ReportBrowser(report)
    qtbot.addWidget(browser)
    empty = tmp_path_factory.mktemp("empty")
    assert browser.open_folder(empty) is False
    assert "Cannot open this report" in browser.header.text() and "results.csv" in browser.header.text()
    assert browser.table.rowCount() == 4 and browser.folder == report


def test_dialog_opens_a_chosen_folder(qtbot, report, monkeypatch):
    from PyQt6.QtWidgets import QFileDialog

    dialog = ReportBrowserDialog()
    qtbot.addWidget(dialog)
    assert dialog.browser.table.rowCount() == 0
    monkeypatch.setattr(QFileDialog, "getExistingDirectory", staticmethod(lambda *args: str(report)))
    assert dialog.choose_folder() is True
    assert dialog.browser.table.rowCount() == 4
    monkeypatch.setattr(QFileDialog, "getExistingDirectory", staticmethod(lambda *args: ""))
    assert dialog.choose_folder() is False and dialog.browser.table.rowCount() == 4


def test_open_report_browser_shows_a_dialog_or_nothing_when_cancelled(qtbot, report, monkeypatch):
    from PyQt6.QtWidgets import QFileDialog

    from lbdviewer.gui.report_browser import open_report_browser

    dialog = open_report_browser(folder=report)
    qtbot.addWidget(dialog)
    assert dialog.isVisible() and dialog.browser.table.rowCount() == 4
    dialog.close()
    monkeypatch.setattr(QFileDialog, "getExistingDirectory", staticmethod(lambda *args: ""))
    assert open_report_browser() is None


def test_file_menu_opens_a_report_folder_in_the_browser(qtbot, window, report, monkeypatch):
    from PyQt6.QtWidgets import QFileDialog

    monkeypatch.setattr(QFileDialog, "getExistingDirectory", lambda *args, **kwargs: str(report))
    action = next(a for a in window.actions() if a.text() == "Open audit &report…")
    action.trigger()
    dialog = next(w for w in window.findChildren(ReportBrowserDialog))
    assert dialog.isVisible()
    assert _column(dialog.browser, 0)[0] == "<b>page&amp;.png"
    dialog.close()
