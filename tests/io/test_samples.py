"""The shipped text samples: drawn by scripts/make_samples.py, and legible to OCR as shipped."""

import importlib.util
import shutil
from pathlib import Path

import cv2
import numpy as np
import pytest

from lbdviewer.evaluation.ocr import read_lines
from lbdviewer.io.samples import RESOURCES, sample_image

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"


def _make_samples():
    spec = importlib.util.spec_from_file_location("make_samples", SCRIPTS / "make_samples.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


MAKE_SAMPLES = _make_samples()
#: Each text sample of the generalisation set and its printed lines, in reading order.
TEXT_SAMPLES = {"whiteboard": MAKE_SAMPLES.WHITEBOARD_LINES, "dark-screen": MAKE_SAMPLES.DARK_SCREEN_LINES,
                "receipt": MAKE_SAMPLES.RECEIPT_LINES}


@pytest.mark.parametrize("name", sorted(TEXT_SAMPLES))
def test_the_shipped_text_samples_are_what_the_generator_draws(name):
    shipped = cv2.imread(str(RESOURCES / f"{name}.png"), cv2.IMREAD_UNCHANGED)
    drawn = MAKE_SAMPLES.GENERALISATION[name]()
    assert shipped.shape == drawn.shape and shipped.dtype == drawn.dtype
    # equal here; another OpenCV may anti-alias a few glyph edges differently, not redraw the scene
    assert np.mean(shipped != drawn) < 1e-3, f"{name}: run scripts/make_samples.py again"


@pytest.mark.skipif(shutil.which("tesseract") is None, reason="tesseract is not installed")
@pytest.mark.parametrize("name", sorted(TEXT_SAMPLES))
def test_ocr_reads_every_line_of_each_original_text_sample(name):
    # a sample whose original OCR cannot read measures nothing about a reconstruction
    lines = [text for text, _ in TEXT_SAMPLES[name]]
    reading = read_lines(sample_image(name), lines)
    assert reading.count == len(lines), list(zip(lines, reading.ratios))


def test_the_dark_screen_has_a_screenshots_text_size():
    # half a 1080-pixel-wide phone screenshot: capitals 14-22 pixels, light on dark
    image = sample_image("dark-screen")
    caps = [cap for _, cap in MAKE_SAMPLES.DARK_SCREEN_LINES]
    assert image.shape[1] == 540 and min(caps) >= 14 and max(caps) <= 24
    assert np.median(image) < 0.1 and image.max() > 0.9
