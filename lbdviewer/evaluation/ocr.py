"""Reading text back: tesseract's OCR of an image, and how much of an expected text it reads.

Text is compared after :func:`normalise_text` (upper case, letters and digits,
single spaces). A line of an expected text is *read* when some OCR line matches
it with a :class:`difflib.SequenceMatcher` ratio of at least :data:`MATCH_RATIO`
(:func:`lines_read`); a whole text's similarity is the same ratio over all of it
(:func:`text_similarity`). Bits carry no sign of contrast a reader could not
flip, and tesseract reads dark text on light: :func:`read_lines` reads an
image and its negative and keeps the better (light text on a dark screen,
rebuilt from its keypoints, read 0 of 6 lines as written).

Whether an image holds text at all is read from tesseract's word confidences
(its TSV output, :func:`ocr_words`): :func:`legible_lines` keeps the words read
with a confidence of at least :data:`MIN_CONFIDENCE` (of 100), and the lines
holding a word of at least :data:`MIN_LETTERS` letters or digits. On the
shipped samples every word of ``document`` and ``book-titles`` is read at
91-96; what tesseract reads in ``camera``, ``astronaut`` and ``shapes``
(``"rasa"``, ``"E>»"``, ``"@A"``) at 0-67, but for single signs such as
``"|"`` (83) and ``")"`` (91), which hold no letter.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from lbdviewer.io.images import save_png

__all__ = ["MATCH_RATIO", "MIN_CONFIDENCE", "MIN_LETTERS", "OCR_TIMEOUT", "LinesRead", "legible_lines", "lines_read",
           "normalise_text", "ocr_available", "ocr_text", "ocr_words", "read_lines", "text_similarity"]

#: Seconds tesseract may spend on one image.
OCR_TIMEOUT = 60
#: Smallest :class:`difflib.SequenceMatcher` ratio at which an OCR line reads an expected line.
MATCH_RATIO = 0.8
#: Smallest word confidence (tesseract's, 0 to 100) of legible text.
MIN_CONFIDENCE = 80
#: Letters or digits of the longest word of a line of legible text.
MIN_LETTERS = 3


def ocr_available():
    """Whether the ``tesseract`` command is installed."""
    return shutil.which("tesseract") is not None


def _tesseract(image, psm, *configs):
    """tesseract's standard output for a gray image in ``[0, 1]`` (English), or None when it is not installed."""
    if not ocr_available():
        return None
    with tempfile.TemporaryDirectory(prefix="lbdviewer-ocr-") as folder:
        path = save_png(Path(folder) / "page.png", np.clip(image, 0.0, 1.0))
        try:
            result = subprocess.run(["tesseract", str(path), "stdout", "--psm", str(psm), "-l", "eng", *configs],
                                    capture_output=True, text=True, timeout=OCR_TIMEOUT, check=False)
        except subprocess.TimeoutExpired:
            raise RuntimeError(f"tesseract took longer than {OCR_TIMEOUT} s") from None
    if result.returncode != 0:
        raise RuntimeError(f"tesseract failed: {result.stderr.strip()[:200]}")
    return result.stdout


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
    return _tesseract(image, psm)


def ocr_words(image, *, psm=6):
    """The words tesseract reads in a gray image in ``[0, 1]``, with its confidence in each (its TSV output).

    Returns
    -------
    list of dict or None
        ``text``, ``confidence`` (0 to 100) and ``line`` (block, paragraph,
        line numbers) of each word, in reading order; None when tesseract is
        not installed.

    Raises
    ------
    RuntimeError
        If tesseract fails or runs past :data:`OCR_TIMEOUT` seconds.
    """
    output = _tesseract(image, psm, "tsv")
    if output is None:
        return None
    rows = [line.split("\t") for line in output.splitlines()]
    header = rows[0] if rows else []
    if "text" not in header or "conf" not in header:
        raise RuntimeError(f"tesseract's TSV output has no text and conf columns: {header[:12]}")
    column = {name: i for i, name in enumerate(header)}
    words = []
    for row in rows[1:]:
        if len(row) != len(header) or not row[column["text"]].strip():
            continue
        words.append({"text": row[column["text"]].strip(), "confidence": float(row[column["conf"]]),
                      "line": tuple(int(row[column[name]]) for name in ("block_num", "par_num", "line_num"))})
    return words


def legible_lines(words, *, min_confidence=MIN_CONFIDENCE):
    """The lines of legible text among OCR ``words`` (see the module notes) and their words' mean confidence.

    Parameters
    ----------
    words : list of dict
        From :func:`ocr_words`.
    min_confidence : float
        Words read with less confidence are dropped.

    Returns
    -------
    lines : list of str
        Each line's confident words, in reading order.
    confidence : float or None
        Mean confidence of the words kept (None when no line is kept).

    Examples
    --------
    >>> words = [{"text": "TOP", "confidence": 95.0, "line": (1, 1, 1)},
    ...          {"text": "SECRET", "confidence": 93.0, "line": (1, 1, 1)},
    ...          {"text": "rasa", "confidence": 15.0, "line": (1, 1, 2)},
    ...          {"text": ")", "confidence": 91.0, "line": (1, 1, 3)}]
    >>> legible_lines(words)
    (['TOP SECRET'], 94.0)
    """
    lines = {}
    for word in words:
        if word["confidence"] >= min_confidence and normalise_text(word["text"]):
            lines.setdefault(word["line"], []).append(word)
    kept = [line for line in lines.values()
            if max(len(normalise_text(w["text"]).replace(" ", "")) for w in line) >= MIN_LETTERS]
    if not kept:
        return [], None
    confidences = [w["confidence"] for line in kept for w in line]
    return [" ".join(w["text"] for w in line) for line in kept], float(np.mean(confidences))


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


@dataclass(frozen=True)
class LinesRead:
    """What OCR read of an image's expected lines, in the better of its two polarities (:func:`read_lines`).

    Attributes
    ----------
    count : int
        Lines read (:func:`lines_read`).
    ratios : list of float
        Best match ratio of each expected line.
    text : str
        What tesseract printed for that polarity.
    inverted : bool
        Whether the negative (``1 - image``) was the better read.
    """

    count: int
    ratios: list
    text: str
    inverted: bool


def read_lines(image, lines, *, psm=6):
    """OCR of ``image`` (``[0, 1]``) and of its negative: the :class:`LinesRead` with more ``lines`` read.

    Ties go to the image as it is; then to the higher sum of ratios. None
    when tesseract is not installed.

    Raises
    ------
    RuntimeError
        As :func:`ocr_text`.
    """
    image = np.clip(np.asarray(image, dtype=np.float64), 0.0, 1.0)
    best = None
    for inverted in (False, True):
        text = ocr_text(1.0 - image if inverted else image, psm=psm)
        if text is None:
            return None
        count, ratios = lines_read(text, lines)
        candidate = LinesRead(count=count, ratios=[float(r) for r in ratios], text=text, inverted=inverted)
        if best is None or (count, sum(ratios)) > (best.count, sum(best.ratios)):
            best = candidate
    return best
