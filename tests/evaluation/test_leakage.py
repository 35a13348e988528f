"""Which descriptor leaks most: the rows' scores, legibility by OCR, the table."""

import shutil

import numpy as np
import pytest

from lbdviewer.io.samples import sample_image
from lbdviewer.evaluation.leakage import BOOK_TITLES, leak_row, table
from lbdviewer.evaluation.ocr import lines_read, ocr_text

needs_tesseract = pytest.mark.skipif(shutil.which("tesseract") is None, reason="tesseract is not installed")


def test_lines_read_counts_titles_matched_by_some_line():
    count, ratios = lines_read("MOBY D1CK\nnoise\nTHE HOBB1T\n", BOOK_TITLES)
    assert count == 2 and ratios[0] >= 0.8 and ratios[1] < 0.8
    assert lines_read("", BOOK_TITLES) == (0, [0.0] * 4)


@needs_tesseract
def test_ocr_reads_every_title_of_the_sample_itself():
    assert lines_read(ocr_text(sample_image("book-titles")), BOOK_TITLES)[0] == len(BOOK_TITLES)


@needs_tesseract
def test_a_row_scores_the_inversion_of_the_descriptors_file():
    image = sample_image("astronaut")[:192, 160:352]
    text = sample_image("book-titles")[:120]
    row = leak_row(image, "opencv-brief", n_keypoints=80, text_image=text, titles=BOOK_TITLES[:1])
    assert row.descriptor == "opencv-brief" and row.n_bits == 256 and 0 < row.keypoints <= 80
    assert row.file_bytes > row.keypoints * 32  # the packed bits at least
    assert row.correlation > 0.3 and 0 < row.coverage < 1 and 0.5 < row.bit_consistency <= 1
    assert row.lines_read in (0, 1) and row.lines_total == 1
    assert row.reconstruction.shape == image.shape  # uncovered pixels: the covered median
    assert np.all(row.reconstruction[~row.covered] == np.median(row.reconstruction[row.covered]))
    assert "| opencv-brief | " in table([row]) and row.as_dict()["lines_read"] == row.lines_read


def test_unknown_descriptor_is_refused():
    with pytest.raises(ValueError, match="descriptor must be one of"):
        leak_row(np.zeros((64, 64)), "surf")


def test_a_descriptor_that_cannot_be_inverted_is_a_row_that_says_why(monkeypatch):
    import lbdviewer.evaluation.leakage as leakage

    def refuse(image, descriptor, **options):
        raise ValueError(f"{descriptor} bits are thresholded")

    monkeypatch.setattr(leakage, "leak_row", refuse)
    rows = leakage.compare_descriptors(np.zeros((32, 32)), ("beblid",))
    assert rows[0].error == "beblid bits are thresholded" and np.isnan(rows[0].correlation)
    assert "not inverted: beblid bits are thresholded" in table(rows)
