"""Which descriptor leaks most? Each library descriptor's feature file of one image, inverted and scored.

For every descriptor, the real library describes the image at its default
settings (``lbdviewer extract``: ORB's detector, 500 keypoints), the feature
file is written and read back (what an eavesdropper holds), and
:func:`lbdviewer.features.invert.invert_features` rebuilds the image from it alone
(joint, defaults). A row scores the reconstruction over the pixels some
keypoint's patch covers:

``correlation``
    Pearson correlation with the original (free of gain and offset, which
    bits do not carry);
``coverage``
    share of the image some keypoint's patch covers;
``lines_read``
    legibility: of the title lines of a text sample (``book-titles``), how
    many ``tesseract`` reads back from the reconstruction of that sample's
    own feature file, shown as a person sees it
    (:func:`lbdviewer.evaluation.display.display_stretch`, uncovered pixels at
    the covered median), as it is or inverted, whichever reads more
    (:func:`lbdviewer.evaluation.ocr.read_lines`) (a line counts when an OCR line matches it with a
    :class:`difflib.SequenceMatcher` ratio of at least :data:`MATCH_RATIO`,
    upper case, letters and single spaces only); None without tesseract.

:func:`compare_descriptors` returns the rows and the reconstructions, for a
table (``scripts/leakage.py``) or a figure.
"""

from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from lbdviewer.evaluation.display import display_stretch
from lbdviewer.evaluation.ocr import read_lines
from lbdviewer.features.files import load_features, save_features
from lbdviewer.libraries.registry import DESCRIPTORS

#: The title lines printed in the ``book-titles`` sample (``scripts/make_samples.py``).
BOOK_TITLES = ("MOBY DICK", "DRACULA", "THE HOBBIT", "ULYSSES")


@dataclass(frozen=True)
class LeakRow:
    """What one descriptor's feature file gives away (see the module notes).

    ``reconstruction`` (the image rebuilt from the features, ``[0, 1]``, the
    covered median where uncovered) and ``covered`` are kept for figures, and
    ``solver`` (:func:`lbdviewer.evaluation.records.solver_record` of the
    inversion) for their records; :meth:`as_dict` leaves them out.
    """

    descriptor: str
    keypoints: int
    n_bits: int
    file_bytes: int
    correlation: float
    coverage: float
    bit_consistency: float
    lines_read: int | None
    lines_total: int
    seconds: float
    reconstruction: np.ndarray
    covered: np.ndarray
    error: str | None = None
    solver: dict | None = None

    def as_dict(self):
        """The scores as a JSON-ready dict (no arrays)."""
        return {name: getattr(self, name) for name in ("descriptor", "keypoints", "n_bits", "file_bytes",
                                                        "correlation", "coverage", "bit_consistency",
                                                        "lines_read", "lines_total", "seconds", "error")}


def _invert_through_file(image, descriptor, n_keypoints, folder, iterations=None):
    """Extract, write, read back and invert: ``(features, result, file size)``."""
    from lbdviewer.features.extract import extract_features
    from lbdviewer.features.invert import invert_features

    path = Path(folder) / f"{descriptor}.npz"
    save_features(path, extract_features(image, descriptor, n_keypoints=n_keypoints))
    features = load_features(path)
    return features, invert_features(features, iterations=iterations), path.stat().st_size


def leak_row(image, descriptor, *, n_keypoints=500, text_image=None, titles=BOOK_TITLES, ocr=True, iterations=None):
    """Score what ``descriptor``'s feature file of ``image`` gives away.

    Parameters
    ----------
    image : ndarray, shape (H, W)
        Gray image in ``[0, 1]``.
    descriptor : str
        One of :data:`lbdviewer.libraries.registry.DESCRIPTORS`.
    n_keypoints : int
        Keypoints ORB's detector may return (the libraries' default: 500).
    text_image : ndarray, optional
        The text sample for legibility (default: none, ``lines_read`` None).
    titles : sequence of str
        Its lines.
    ocr : bool
        Read text (when tesseract is installed).
    iterations : int, optional
        Solver iterations (default: the solver's; fewer for previews).

    Returns
    -------
    LeakRow
    """
    from lbdviewer.evaluation.metrics import image_metrics
    from lbdviewer.evaluation.records import solver_record

    if descriptor not in DESCRIPTORS:
        raise ValueError(f"descriptor must be one of {DESCRIPTORS}, got {descriptor!r}")
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as folder:
        features, result, size = _invert_through_file(image, descriptor, n_keypoints, folder, iterations)
        read = None
        if ocr and text_image is not None:
            _, text_result, _ = _invert_through_file(text_image, descriptor, n_keypoints, folder, iterations)
            shown = display_stretch(text_result.image, mask=text_result.covered, uncovered="neutral").image
            reading = read_lines(shown, titles)
            read = None if reading is None else reading.count
    metrics = image_metrics(image, result.image, mask=result.covered) if result.covered.any() else {}
    return LeakRow(descriptor=descriptor, keypoints=len(features.keypoints), n_bits=int(features.n_bits),
                   file_bytes=int(size), correlation=float(metrics.get("correlation", np.nan)),
                   coverage=float(result.covered.mean()),
                   bit_consistency=float(np.nan if result.solver_bit_consistency is None
                                         else result.solver_bit_consistency),
                   lines_read=read, lines_total=len(titles), seconds=time.perf_counter() - started,
                   reconstruction=result.image, covered=result.covered, solver=solver_record(result=result))


def leak_rows(image, descriptors=DESCRIPTORS, **options):
    """:func:`leak_row` for each of ``descriptors``, one at a time, in their order (a generator, for progress).

    A descriptor lbdviewer cannot invert yet gives a row that says why (``error``).
    """
    for descriptor in descriptors:
        try:
            yield leak_row(image, descriptor, **options)
        except ValueError as error:  # a descriptor lbdviewer cannot invert yet: a row that says why
            empty = np.zeros(np.shape(image))
            yield LeakRow(descriptor, 0, 0, 0, np.nan, 0.0, np.nan, None, len(options.get("titles", BOOK_TITLES)),
                          0.0, empty, empty > 0, error=str(error))


def most_leaking_first(rows):
    """``rows`` sorted by correlation, highest first (rows without one last)."""
    return sorted(rows, key=lambda row: -np.nan_to_num(row.correlation, nan=-2.0))


def compare_descriptors(image, descriptors=DESCRIPTORS, **options):
    """:func:`leak_row` for each of ``descriptors``, most correlated first (:func:`leak_rows`).

    Examples
    --------
    >>> from lbdviewer.io.samples import sample_image
    >>> rows = compare_descriptors(sample_image("camera")[100:300, 150:350], ("orb",), n_keypoints=40)
    >>> [row.descriptor for row in rows], 0 < rows[0].coverage <= 1, rows[0].correlation > 0.3
    (['orb'], True, True)
    """
    return most_leaking_first(leak_rows(image, descriptors, **options))


def table(rows):
    """The rows as a Markdown table.

    Examples
    --------
    >>> print(table([]).splitlines()[0])
    | descriptor | keypoints | bits | file | correlation | coverage | bits reproduced | title lines read | seconds |
    """
    lines = ["| descriptor | keypoints | bits | file | correlation | coverage | bits reproduced | title lines read "
             "| seconds |", "|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        if row.error:
            lines.append(f"| {row.descriptor} | not inverted: {row.error} |||||||| ")
            continue
        read = "-" if row.lines_read is None else f"{row.lines_read}/{row.lines_total}"
        lines.append(f"| {row.descriptor} | {row.keypoints} | {row.n_bits} | {row.file_bytes / 1024:.0f} kB | "
                     f"{row.correlation:.3f} | {row.coverage:.2f} | {row.bit_consistency:.3f} | {read} | "
                     f"{row.seconds:.1f} |")
    return "\n".join(lines)
