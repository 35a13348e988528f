"""Reading text back: tesseract's OCR of an image, and how much of an expected text it reads.

Text is compared after :func:`normalise_text` (upper case, letters and digits,
single spaces). A line of an expected text is *read* when some OCR line matches
it with a :class:`difflib.SequenceMatcher` ratio of at least :data:`MATCH_RATIO`
(:func:`lines_read`); a whole text's similarity is the same ratio over all of it
(:func:`text_similarity`).
"""

from __future__ import annotations

import difflib
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from lbdviewer.io.images import save_png

__all__ = ["MATCH_RATIO", "OCR_TIMEOUT", "lines_read", "normalise_text", "ocr_available", "ocr_text",
           "text_similarity"]

#: Seconds tesseract may spend on one image.
OCR_TIMEOUT = 60
#: Smallest :class:`difflib.SequenceMatcher` ratio at which an OCR line reads an expected line.
MATCH_RATIO = 0.8


def ocr_available():
    """Whether the ``tesseract`` command is installed."""
    return shutil.which("tesseract") is not None


def ocr_text(image, *, psm=6):
    """The text tesseract reads in a gray image in ``[0, 1]`` (English, page segmentation ``psm``), line by line.

    Returns
    -------
    str or None
        What tesseract printed (one OCR line a line), or None when tesseract
        is not installed.

    Raises
    ------
    RuntimeError
        If tesseract fails or runs past :data:`OCR_TIMEOUT` seconds.
    """
    if not ocr_available():
        return None
    with tempfile.TemporaryDirectory(prefix="lbdviewer-ocr-") as folder:
        path = save_png(Path(folder) / "page.png", np.clip(image, 0.0, 1.0))
        try:
            result = subprocess.run(["tesseract", str(path), "stdout", "--psm", str(psm), "-l", "eng"],
                                    capture_output=True, text=True, timeout=OCR_TIMEOUT, check=False)
        except subprocess.TimeoutExpired:
            raise RuntimeError(f"tesseract took longer than {OCR_TIMEOUT} s") from None
    if result.returncode != 0:
        raise RuntimeError(f"tesseract failed: {result.stderr.strip()[:200]}")
    return result.stdout


def normalise_text(text, *, digits=True):
    """Upper case, letters (and digits unless ``digits=False``) and single spaces only.

    Examples
    --------
    >>> normalise_text("  Hello,\\n wörld 42! ")
    'HELLO W RLD 42'
    >>> normalise_text("  The hobbit 2!\\n", digits=False)
    'THE HOBBIT'
    """
    kept = r"[^A-Z0-9 ]+" if digits else r"[^A-Z ]+"
    return " ".join(re.sub(kept, " ", str(text).upper()).split())


def lines_read(text, titles):
    """How many ``titles`` some line of ``text`` matches (ratio >= :data:`MATCH_RATIO`), and each best ratio.

    Lines are compared as letters only (an OCR ``0`` for an ``O`` costs one character).

    Examples
    --------
    >>> lines_read("M0BY DICK\\nDRACULA", ("MOBY DICK", "DRACULA", "ULYSSES"))[0]
    2
    """
    found = [normalise_text(line, digits=False) for line in text.splitlines()]
    found = [line for line in found if line]
    best = [max((difflib.SequenceMatcher(None, normalise_text(title, digits=False), line).ratio()
                 for line in found), default=0.0)
            for title in titles]
    return sum(ratio >= MATCH_RATIO for ratio in best), best


def text_similarity(original, reconstruction):
    """How much of the original's text OCR reads back: ``difflib`` ratio of the normalised texts.

    ``2 M / (|a| + |b|)`` with ``M`` the matched characters
    (:class:`difflib.SequenceMatcher`); None when the original has no text.

    Examples
    --------
    >>> text_similarity("SECRET PLAN", "secret plan"), text_similarity("", "x")
    (1.0, None)
    >>> round(text_similarity("ABCD", "ABXY"), 3)
    0.5
    """
    a, b = normalise_text(original), normalise_text(reconstruction)
    if not a:
        return None
    return difflib.SequenceMatcher(None, a, b, autojunk=False).ratio()
