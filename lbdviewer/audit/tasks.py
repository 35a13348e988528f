"""One audit task: one input and one descriptor in, one result row out.

A task is a small frozen record (:class:`AuditTask`) that names an input file
by path; :func:`run_task` is a pure function of it (it writes nothing, and
returns the row with its two thumbnails as PNG bytes), so the same function
runs in a local process pool or on a Dask worker (:mod:`lbdviewer.audit.runner`).

For an **image** the task extracts the descriptor with the real library
(:func:`lbdviewer.features.extract.extract_features`), forgets the image,
inverts the feature set alone (:func:`lbdviewer.features.invert.invert_features`)
and compares the reconstruction with the image. For a **feature file**
(``.npz`` or OpenCV FileStorage) it inverts the file and compares with a
reference image found beside it (same stem, an image suffix), if there is
one. A FileStorage file holding several images makes one task, and one row,
per entry: its ``input`` is ``PATH#ENTRY`` (:func:`feature_file_entries`).

Every metric is computed over the pixels some keypoint's patch covers:
Pearson correlation (gain and offset free), Spearman rank correlation
(:func:`lbdviewer.evaluation.metrics.rank_correlation`: invariant to any increasing
brightness map, the natural measure for bits that fix only orderings),
SSIM after the best gain/offset fit, and, when ``tesseract`` is installed,
text: the lines of legible text of the original (words OCR reads with a
confidence of at least :data:`lbdviewer.evaluation.ocr.MIN_CONFIDENCE`,
:func:`lbdviewer.evaluation.ocr.legible_lines`; ``ocr_original``, lines
joined by :data:`LINE_SEPARATOR`, and their mean confidence
``ocr_confidence``; for an original without legible text, the mean
confidence of what OCR guessed in it) and, for an original that has some, the
text OCR reads from the reconstruction (``ocr_reconstruction``, its lines
joined the same way) and its similarity to them (:func:`text_similarity`).
What OCR guesses in a photo is not text and is not kept. OCR reads the
reconstruction as an eavesdropper would see it, stretched without the
original (0.5-99.5 percentiles, :func:`lbdviewer.evaluation.display.display_stretch`);
the thumbnail shows it beside the original on the original's scale (gain and
offset fitted).

An image in which the detector finds no keypoint is an ``ok`` row with 0
keypoints and 0 coverage: its descriptors give nothing away.

Anything that goes wrong inside a task (an unreadable or hostile file, a
solver error, the time limit) becomes the row's ``status``,
``"error: <message>"``; :func:`run_task` never raises for a bad input.
"""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

from lbdviewer._runtime.parallel import numba_threads
from lbdviewer.features.extract import extract_features
from lbdviewer.features.files import FEATURE_SUFFIXES, feature_entries, load_features
from lbdviewer.evaluation.display import display_stretch, uncovered_rule
from lbdviewer.features.invert import iter_invert_features
from lbdviewer.io.images import load_image, to_uint8
from lbdviewer.libraries.registry import get_model
from lbdviewer.evaluation.metrics import correlation, rank_correlation, ssim
from lbdviewer.evaluation.ocr import legible_lines, normalise_text, ocr_text, ocr_words, text_similarity

#: Suffixes read as images (anything else named explicitly is tried as an image too).
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".tif", ".tiff", ".bmp")
#: ``descriptor`` of a task on a feature file: the file names its own descriptor.
FROM_FILE = "*"
#: Between a feature file's path and the entry in a row's ``input``.
ENTRY_MARK = "#"
#: Longest side of the thumbnails a task returns (pixels).
THUMBNAIL_SIDE = 256
#: The columns of a result row, in the order ``results.csv`` stores them.
COLUMNS = ("input", "descriptor", "status", "keypoints", "coverage", "correlation", "rank_correlation",
           "ssim", "ocr_reconstruction", "ocr_original", "ocr_similarity", "ocr_confidence", "seconds", "worker",
           "mode", "iterations", "thumbnail_original", "thumbnail_reconstruction")
#: What separates the lines of legible text of the original in ``ocr_original``.
LINE_SEPARATOR = " | "


@dataclass(frozen=True)
class AuditTask:
    """One input and one descriptor: the unit of work of an audit.

    Parameters
    ----------
    input : str
        Path of an image or a feature file (as the workers will see it).
    descriptor : str
        Library descriptor to extract from an image (``orb``,
        ``opencv-brief``, ...), or :data:`FROM_FILE` for a feature file.
    keypoints : int
        Keypoints to detect in an image.
    mode : {"joint", "patches"}
        Inversion mode (see :mod:`lbdviewer.features.invert`).
    iterations : int or None
        Solver iterations (None: the mode's default).
    limit_seconds : float or None
        Give up (an error row) once the inversion has run this long.
    ocr : bool
        Read text with tesseract (if installed).
    threads : int or None
        Solver threads for this task (None: leave numba's setting).
    max_pixels, max_keypoints : int or None
        Resource limits of image and feature-file loading (None: the worker's
        :mod:`lbdviewer.io.limits` defaults).
    entry : str or None
        The image of a feature file that holds several (None: the file's only one).
    """

    input: str
    descriptor: str
    keypoints: int = 500
    mode: str = "joint"
    iterations: int | None = None
    limit_seconds: float | None = None
    ocr: bool = True
    threads: int | None = None
    max_pixels: int | None = None
    max_keypoints: int | None = None
    entry: str | None = None

    @property
    def label(self):
        """The row's ``input``: the path, with ``#ENTRY`` for one image of a feature file of several."""
        return self.input if self.entry is None else f"{self.input}{ENTRY_MARK}{self.entry}"

    @property
    def key(self):
        """``(input, descriptor)``: what identifies the task's row in a report."""
        return (self.label, self.descriptor)


def is_feature_file(path):
    """True if ``path`` names a feature file (by its suffix: ``.npz``, or OpenCV FileStorage ``.yml``, ...).

    Examples
    --------
    >>> is_feature_file("a/b.NPZ"), is_feature_file("b.png")
    (True, False)
    """
    return Path(path).suffix.lower() in FEATURE_SUFFIXES


def feature_file_entries(path, *, max_keypoints=None):
    """The entries a feature file makes tasks of: its image names, or ``[None]`` for a file of one image.

    A file that cannot be read makes one task (its row says why).

    Examples
    --------
    >>> feature_file_entries("/nonexistent.yml")
    [None]
    """
    try:
        entries = feature_entries(path, max_keypoints=max_keypoints)
    except ValueError:
        return [None]
    return entries if len(entries) > 1 else [None]


def input_path(label):
    """The file of a row's ``input`` (``PATH#ENTRY`` for one image of a feature file).

    Examples
    --------
    >>> input_path("/x/a.yml#frame_1"), input_path("/x/b#c.png")
    ('/x/a.yml', '/x/b#c.png')
    """
    path, mark, _ = label.rpartition(ENTRY_MARK)
    return path if mark and not is_feature_file(label) and is_feature_file(path) else label


def row_key(row):
    """The task key ``(input, descriptor)`` a result row answers.

    A feature file's row names the descriptor read from the file, but its
    task was planned as :data:`FROM_FILE`.

    Examples
    --------
    >>> row_key({"input": "/x/a.npz", "descriptor": "orb"}), row_key({"input": "/x/a.png", "descriptor": "orb"})
    (('/x/a.npz', '*'), ('/x/a.png', 'orb'))
    """
    return (row["input"], FROM_FILE if is_feature_file(input_path(row["input"])) else row["descriptor"])


def error_row(task, status):
    """``(row, thumbnails)`` of a task that gave no row of its own (its process died): ``status`` and the task's fields.

    Examples
    --------
    >>> row, thumbnails = error_row(AuditTask("/a.png", "orb"), "error: died")
    >>> row["input"], row["status"], row["keypoints"], thumbnails
    ('/a.png', 'error: died', None, {})
    """
    row = dict.fromkeys(COLUMNS)
    row.update(input=task.label, descriptor=task.descriptor, status=status, mode=task.mode,
               iterations=task.iterations)
    return row, {}


def worker_name():
    """The Dask worker's address when running on one, else ``local:<pid>``."""
    try:
        from distributed import get_worker

        return get_worker().address
    except (ImportError, ValueError):
        return f"local:{os.getpid()}"


class TimeLimit(Exception):
    """A task ran past its ``limit_seconds``."""


def run_task(task):
    """Run one audit task and return its row and thumbnails; never raises for a bad input.

    Parameters
    ----------
    task : AuditTask

    Returns
    -------
    row : dict
        The :data:`COLUMNS` (thumbnail names are filled in by the runner);
        ``status`` is ``"ok"`` or ``"error: <message>"``; metrics that do not
        apply are None.
    thumbnails : dict
        ``{"original": bytes, "reconstruction": bytes}``, PNG files of at most
        :data:`THUMBNAIL_SIDE` pixels a side (either may be absent).

    Examples
    --------
    >>> row, thumbnails = run_task(AuditTask("/nonexistent.png", "orb"))
    >>> row["status"].startswith("error: "), "nonexistent.png" in row["status"], thumbnails
    (True, True, {})
    """
    started = time.perf_counter()
    row = dict.fromkeys(COLUMNS)
    row.update(input=task.label, descriptor=task.descriptor, mode=task.mode, iterations=task.iterations,
               worker=worker_name())
    thumbnails = {}
    try:
        with numba_threads(task.threads):  # this task's count, the worker's own restored after
            _audit(task, row, thumbnails, started)
        row["status"] = "ok"
    except TimeLimit as error:
        row["status"] = f"error: {error}"
    except MemoryError:
        row["status"] = "error: out of memory"
    except Exception as error:  # noqa: BLE001 - a bad input is a row, never the end of the run
        message = " ".join(str(error).split()) or type(error).__name__
        row["status"] = f"error: {message}"
    row["seconds"] = round(time.perf_counter() - started, 3)
    return row, thumbnails


def _audit(task, row, thumbnails, started):
    if is_feature_file(task.input):
        features = load_features(task.input, max_pixels=task.max_pixels, max_keypoints=task.max_keypoints,
                                 entry=task.entry)
        row["descriptor"] = features.descriptor
        reference_path = reference_beside(task.input)
        original = None if reference_path is None else load_image(reference_path, max_pixels=task.max_pixels)
        if original is not None and original.shape != features.image_shape:
            raise ValueError(f"reference image {reference_path!r} has shape {original.shape}, the features "
                             f"describe {features.image_shape}")
    else:
        original = load_image(task.input, max_pixels=task.max_pixels)
        if not len(get_model(task.descriptor).detect(original, n_keypoints=task.keypoints)):
            # Nothing to describe, so nothing leaks (extract_features cannot build an empty set yet).
            row.update(keypoints=0, coverage=0.0)
            thumbnails["original"] = thumbnail_png(original)
            thumbnails["reconstruction"] = thumbnail_png(np.zeros_like(original))
            return
        features = extract_features(original, task.descriptor, n_keypoints=task.keypoints)
    row["keypoints"] = len(features.keypoints)
    result = _invert(features, task, started)
    row["iterations"] = result.iterations
    covered = result.covered
    row["coverage"] = float(covered.mean())
    # What an eavesdropper sees (no original to calibrate against): OCR reads this.
    uncovered = uncovered_rule(result)  # a feature file's inversion: at the covered median, text reads as text
    seen = display_stretch(result.image, mask=covered, uncovered=uncovered).image
    # Beside the original, on its scale (the one display rule of lbdviewer.evaluation.display).
    shown = display_stretch(result.image, mask=covered, reference=original, uncovered=uncovered).image
    thumbnails["reconstruction"] = thumbnail_png(shown)
    if original is not None:
        thumbnails["original"] = thumbnail_png(original)
        if covered.sum() >= 2:
            _compare(original, result.image, covered, row)
    if task.ocr and original is not None and shutil.which("tesseract"):
        words = ocr_words(original)
        lines, confidence = legible_lines(words)
        row["ocr_original"] = LINE_SEPARATOR.join(lines)  # empty for a photo: what OCR guesses there is no text
        guesses = [word["confidence"] for word in words if normalise_text(word["text"])]
        row["ocr_confidence"] = confidence if lines else (float(np.mean(guesses)) if guesses else None)
        if lines:
            read = [" ".join(line.split()) for line in ocr_text(seen).splitlines() if line.strip()]
            row["ocr_reconstruction"] = LINE_SEPARATOR.join(read)
            row["ocr_similarity"] = text_similarity(" ".join(lines), " ".join(read))


def _invert(features, task, started):
    for progress in iter_invert_features(features, mode=task.mode, iterations=task.iterations):
        if progress.result is not None:
            return progress.result
        if task.limit_seconds is not None and time.perf_counter() - started > task.limit_seconds:
            raise TimeLimit(f"time limit of {task.limit_seconds:g} s reached (--limit-seconds)")
    raise AssertionError("iter_invert_features ended without a result")


def _compare(original, estimate, covered, row):
    row["correlation"] = correlation(original, estimate, mask=covered)
    row["rank_correlation"] = rank_correlation(original, estimate, mask=covered)
    if min(original.shape) >= 7:
        row["ssim"] = ssim(original, estimate, mask=covered)


def reference_beside(path):
    """The image beside a feature file with the same stem (``a.npz`` → ``a.png``, ...), or None."""
    path = Path(path)
    for suffix in IMAGE_SUFFIXES:
        for candidate in (path.with_suffix(suffix), path.with_suffix(suffix.upper())):
            if candidate.is_file():
                return str(candidate)
    return None


def thumbnail_png(image):
    """A PNG (bytes) of a gray image in ``[0, 1]``, at most :data:`THUMBNAIL_SIDE` pixels a side."""
    pixels = to_uint8(image)
    scale = THUMBNAIL_SIDE / max(pixels.shape)
    if scale < 1.0:
        size = (max(1, round(pixels.shape[1] * scale)), max(1, round(pixels.shape[0] * scale)))
        pixels = cv2.resize(pixels, size, interpolation=cv2.INTER_AREA)
    ok, encoded = cv2.imencode(".png", pixels)
    if not ok:
        raise ValueError("could not encode a thumbnail PNG")
    return encoded.tobytes()
