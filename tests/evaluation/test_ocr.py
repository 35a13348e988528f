import shutil

import cv2
import numpy as np
import pytest

from lbdviewer.evaluation import ocr
from lbdviewer.evaluation.ocr import read_lines

LINES = ("WIFI KEY", "PASSWORD")


def _screen(light_on_dark):
    page = np.zeros((120, 360), dtype=np.uint8)
    for row, text in enumerate(LINES):
        cv2.putText(page, text, (12, 45 + 50 * row), cv2.FONT_HERSHEY_SIMPLEX, 1.2, 255, 2)
    return page / 255.0 if light_on_dark else 1.0 - page / 255.0


def test_read_lines_keeps_the_polarity_a_dark_on_light_reader_reads(monkeypatch):
    def dark_on_light_reader(image, *, psm=6):  # reads only when the page is light: tesseract's habit
        return "\n".join(LINES) if np.mean(image) > 0.5 else ""

    monkeypatch.setattr(ocr, "ocr_text", dark_on_light_reader)
    dark = read_lines(_screen(light_on_dark=True), LINES)
    light = read_lines(_screen(light_on_dark=False), LINES)
    assert (dark.count, dark.inverted) == (2, True)  # read from the negative
    assert (light.count, light.inverted) == (2, False)  # a tie goes to the image as it is
    assert dark.ratios == [1.0, 1.0]


@pytest.mark.skipif(shutil.which("tesseract") is None, reason="tesseract is not installed")
def test_tesseract_reads_light_text_on_a_dark_screen():
    reading = read_lines(_screen(light_on_dark=True), LINES)
    assert reading.count == len(LINES)
