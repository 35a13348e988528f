"""The ``leakage`` figure: which descriptor's feature file gives away most of one image.

For each descriptor of :data:`lbdviewer.libraries.registry.DESCRIPTORS`, the library
describes the image at its default settings, the feature file is written,
read back and inverted (:func:`lbdviewer.evaluation.leakage.compare_descriptors`). The
figure shows the original first, then one panel per descriptor, most
correlated first: the reconstruction from its feature file alone, shown by the
one display rule (:func:`lbdviewer.evaluation.display.display_stretch`, mean and spread
matched to the original over the covered pixels; uncovered pixels at the covered median, as the
inversion of a feature file holds them),
titled with the descriptor and the correlation :math:`r` over the covered
pixels; the caption gives each one's keypoints kept, coverage and the title
lines tesseract read from the reconstruction of the ``book-titles`` sample's
own feature file. A descriptor lbdviewer cannot invert is a black panel that
says so. The table of every row (:func:`table_rows`) goes into the record's
``extra["table"]`` and into ``leakage.csv`` beside the figure
(:func:`leakage_csv`); each panel's inversion (solver, iterations, stop
reason, bit consistency, seconds) into ``extra["panels"]``.

:func:`leakage_spec` assembles the figure from rows alone (no inversion), so
it is tested on synthetic rows; :func:`leakage_figure` runs the comparison
(:func:`lbdviewer.evaluation.leakage.leak_rows`, one descriptor at a time).
"""

from __future__ import annotations

import csv
import io

import numpy as np

from lbdviewer.evaluation.display import display_original, display_stretch
from lbdviewer.evaluation.leakage import BOOK_TITLES, leak_rows, most_leaking_first
from lbdviewer.evaluation.records import image_source, panel_record, run_record
from lbdviewer.figures.engine import FigureProgress, FigureSpec, Panel
from lbdviewer.figures.notation import descriptor_name, letter
from lbdviewer.io.samples import sample_image
from lbdviewer.libraries.registry import DESCRIPTORS

#: The photo of the full figure, and ORB's detector's default keypoint count.
IMAGE = "astronaut"
KEYPOINTS = 500
#: ``--quick``: a crop of the camera photo, few keypoints, few iterations, no OCR.
QUICK_CROP = ("camera", 96, 176, 160)
QUICK_KEYPOINTS = 60
QUICK_ITERATIONS = 20
#: The columns of the table, in order (:meth:`lbdviewer.evaluation.leakage.LeakRow.as_dict`).
COLUMNS = ("descriptor", "keypoints", "n_bits", "file_bytes", "correlation", "coverage", "bit_consistency",
           "lines_read", "lines_total", "seconds", "error")


def panel_title(row):
    """The short title of one descriptor's panel: the descriptor, and the correlation :math:`r` under it.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> row = SimpleNamespace(descriptor="orb", keypoints=500, correlation=0.7234, error=None)
    >>> panel_title(row)
    'ORB\\n$r = 0.72$'
    """
    if row.error:
        return f"{descriptor_name(row.descriptor)}\nnot inverted"
    if row.keypoints == 0:
        return f"{descriptor_name(row.descriptor)}\nno keypoint"
    correlation = "$r$ undefined" if not np.isfinite(row.correlation) else f"$r = {row.correlation:.2f}$"
    return f"{descriptor_name(row.descriptor)}\n{correlation}"


def panel_facts(row):
    """What the caption says of one descriptor's panel.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> row = SimpleNamespace(descriptor="orb", keypoints=500, correlation=0.7234, coverage=0.412,
    ...                       lines_read=3, lines_total=4, error=None)
    >>> panel_facts(row)
    'ORB: 500 keypoints, $r = 0.72$, coverage 41 %, OCR 3/4 lines'
    """
    name = descriptor_name(row.descriptor)
    if row.error:
        return f"{name}: not inverted ({row.error})"
    if row.keypoints == 0:
        return f"{name}: no keypoint kept"
    ocr = "" if row.lines_read is None else f", OCR {row.lines_read}/{row.lines_total} lines"
    correlation = "$r$ undefined" if not np.isfinite(row.correlation) else f"$r = {row.correlation:.2f}$"
    return f"{name}: {row.keypoints} keypoints, {correlation}, coverage {100 * row.coverage:.0f} %{ocr}"


def table_rows(rows):
    """The scores of ``rows`` as plain dicts, in :data:`COLUMNS` order (no arrays)."""
    return [{name: row.as_dict()[name] for name in COLUMNS} for row in rows]


def leakage_csv(entries):
    """The table (:func:`table_rows`, or a record's ``extra["table"]``) as CSV text (NaN and None as empty cells).

    Examples
    --------
    >>> print(leakage_csv([]).strip())
    descriptor,keypoints,n_bits,file_bytes,correlation,coverage,bit_consistency,lines_read,lines_total,seconds,error
    """
    def cell(value):
        if value is None or (isinstance(value, float) and not np.isfinite(value)):
            return ""
        return f"{value:.4f}" if isinstance(value, float) else value

    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(COLUMNS)
    for entry in entries:
        writer.writerow([cell(entry.get(name)) for name in COLUMNS])
    return buffer.getvalue()


def leakage_spec(image, rows, *, source_name, n_keypoints, quick=False):
    """Assemble the figure from the original and the rows of :func:`~lbdviewer.evaluation.leakage.compare_descriptors`.

    Parameters
    ----------
    image : ndarray, shape (H, W)
        The original, ``[0, 1]``.
    rows : sequence of LeakRow
        In the order to show (most correlated first).
    source_name : str
        What ``image`` is (for the original's title and the caption).
    n_keypoints : int
        Keypoints the detector was asked for.
    quick : bool
        Say in the caption that it is a preview.

    Returns
    -------
    (FigureSpec, dict)
        The spec, and ``{descriptor: display record}`` of each reconstruction shown.
    """
    panels = [Panel(display_original(image).image, title="original")]
    display = {}
    for row in rows:
        if row.error or not row.covered.any():
            panels.append(Panel(np.zeros(np.shape(image)), title=panel_title(row)))
            continue
        shown = display_stretch(row.reconstruction, mask=row.covered, reference=image, uncovered="neutral")
        display[row.descriptor] = shown.record()
        panels.append(Panel(shown.image, title=panel_title(row)))
    legibility = ("legibility not measured (quick)" if quick else
                  f"OCR: of the {len(BOOK_TITLES)} title lines of the book-titles sample, how many tesseract reads "
                  f"from the reconstruction of that sample's own feature file (shown by the same rule)")
    facts = "; ".join(f"{letter(k + 1)} {panel_facts(row)}" for k, row in enumerate(rows))
    caption = (f"Which descriptor leaks most? (a) {source_name}: each library detects and describes it at its default "
               f"settings (AKAZE and BRISK with their own detectors, the others with ORB's; up to {n_keypoints} "
               f"keypoints), the feature file is written, read back and inverted alone (joint solve); most "
               f"correlated first: {facts}. $r$: Pearson correlation with the original over the covered pixels; "
               f"coverage: share of pixels some keypoint's patch covers (the rest drawn at the covered median); "
               f"{legibility}. Reconstructions shown with the gain and offset fitted "
               f"to the original, mean and spread matched."
               + (" Quick preview: a crop, few keypoints and iterations." if quick else ""))
    # one row: the engine cuts it into even rows for the width (three of three at two columns, 300 dpi)
    return FigureSpec(kind="leakage", rows=(tuple(panels),), caption=caption), display


def _panel(row, display):
    """The record of one descriptor's panel (:func:`~lbdviewer.evaluation.records.panel_record`)."""
    return panel_record(seconds=row.seconds, display=display,
                        metrics={"correlation": row.correlation, "coverage": row.coverage,
                                 "bit_consistency": row.bit_consistency},
                        parameters={"keypoints": row.keypoints, "n_bits": row.n_bits, "file_bytes": row.file_bytes,
                                    "error": row.error}) | {"solver": row.solver}


def leakage_figure(*, quick=False):
    """Each library descriptor's feature file of one photo, inverted and scored, most revealing first.

    A generator (:mod:`lbdviewer.figures.paper`): yields a
    :class:`~lbdviewer.figures.engine.FigureProgress` per descriptor and
    returns ``(spec, record)``.
    """
    if quick:
        name, top, left, side = QUICK_CROP
        image = sample_image(name)[top:top + side, left:left + side]
        source = image_source(name, image, crop=(top, left, side, side))
        n_keypoints, iterations, text = QUICK_KEYPOINTS, QUICK_ITERATIONS, None
    else:
        name, image = IMAGE, sample_image(IMAGE)
        source = image_source(name, image)
        n_keypoints, iterations, text = KEYPOINTS, None, sample_image("book-titles")
    rows = []
    for row in leak_rows(image, DESCRIPTORS, n_keypoints=n_keypoints, text_image=text, titles=BOOK_TITLES,
                         ocr=text is not None, iterations=iterations):
        rows.append(row)
        yield FigureProgress("leakage", len(rows), len(DESCRIPTORS), row.descriptor)
    rows = most_leaking_first(rows)
    spec, display = leakage_spec(image, rows, source_name=source["name"], n_keypoints=n_keypoints, quick=quick)
    record = run_record("figure:leakage", source=source, display=display,
                        parameters={"quick": bool(quick), "keypoints": n_keypoints, "iterations": iterations,
                                    "descriptors": list(DESCRIPTORS), "titles": list(BOOK_TITLES),
                                    "mode": "joint"},
                        extra={"table": table_rows(rows)},
                        panels={row.descriptor: _panel(row, display.get(row.descriptor)) for row in rows})
    return spec, record
