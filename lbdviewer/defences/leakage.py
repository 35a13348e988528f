"""How much of an image a reconstruction from defended features gives away, on one scale for every defence.

A defence that drops keypoints leaves parts of the image unrebuilt; scored
over the pixels its own keypoints cover, it would look as leaky as no
defence. So every reconstruction is scored over one region, the pixels the
**undefended** features describe (:func:`described_region`: each keypoint's
square of side ``size``), with the pixels it does not cover set to the mean
of those it does (a flat guess, which carries nothing):

``correlation``, ``rank_correlation``
    Pearson and Spearman correlation with the original over that region
    (0 when nothing is rebuilt);
``coverage``
    share of the region the reconstruction covers;
``ocr_lines_read``
    of the original's lines of legible text (:func:`lbdviewer.evaluation.ocr.legible_lines`),
    how many tesseract reads back from the reconstruction as an
    eavesdropper sees it (stretched without the original,
    :func:`lbdviewer.evaluation.display.display_stretch`).
"""

from __future__ import annotations

import numpy as np

from lbdviewer.evaluation.display import display_stretch
from lbdviewer.evaluation.metrics import correlation, rank_correlation
from lbdviewer.evaluation.ocr import lines_read, ocr_text

__all__ = ["described_region", "measure_leakage"]


def described_region(features):
    """Pixels inside some keypoint's square of side ``size`` (its diameter in level-0 pixels), centred on it.

    Examples
    --------
    >>> from lbdviewer.features.keypoints import FeatureSet, Keypoints
    >>> fs = FeatureSet("orb", {}, (20, 20), Keypoints([5.0], [5.0], size=[5.0]), np.zeros((1, 32), np.uint8),
    ...                 256, "little")
    >>> region = described_region(fs)
    >>> int(region.sum()), bool(region[3, 3]), bool(region[8, 8])
    (25, True, False)
    """
    height, width = features.image_shape
    kp = features.keypoints
    half = kp.size / 2.0
    counts = np.zeros((height + 1, width + 1), dtype=np.int32)
    top = np.clip(np.ceil(kp.y - half), 0, height).astype(np.int64)
    left = np.clip(np.ceil(kp.x - half), 0, width).astype(np.int64)
    bottom = np.clip(np.floor(kp.y + half) + 1, 0, height).astype(np.int64)
    right = np.clip(np.floor(kp.x + half) + 1, 0, width).astype(np.int64)
    np.add.at(counts, (top, left), 1)
    np.add.at(counts, (top, right), -1)
    np.add.at(counts, (bottom, left), -1)
    np.add.at(counts, (bottom, right), 1)
    return np.cumsum(np.cumsum(counts, axis=0), axis=1)[:height, :width] > 0


def measure_leakage(original, region, reconstruction=None, covered=None, *, lines=(), ocr=True):
    """Score a reconstruction over ``region`` (see the module notes).

    Parameters
    ----------
    original : ndarray, shape (H, W)
    region : ndarray of bool, shape (H, W)
        :func:`described_region` of the undefended features.
    reconstruction, covered : ndarray, shape (H, W), optional
        The rebuilt image and the pixels it covers; None when nothing was
        released (everything scores 0).
    lines : sequence of str
        The original's lines of legible text.
    ocr : bool
        Read the reconstruction with tesseract (when installed and there are
        ``lines``).

    Returns
    -------
    dict
        ``correlation``, ``rank_correlation``, ``coverage``,
        ``ocr_lines_read`` (None without OCR) and ``ocr_lines_total``.

    Examples
    --------
    >>> original = np.add.outer(np.arange(8.0), np.arange(8.0))
    >>> covered = np.zeros((8, 8), bool); covered[:, :4] = True
    >>> scores = measure_leakage(original, np.ones((8, 8), bool), original, covered, ocr=False)
    >>> scores["coverage"], round(scores["correlation"], 2)
    (0.5, 0.56)
    """
    region = np.asarray(region, dtype=bool)
    out = {"ocr_lines_total": len(lines), "ocr_lines_read": 0 if lines else None}
    if reconstruction is None or covered is None or not np.any(covered & region):
        return {**out, "correlation": 0.0, "rank_correlation": 0.0, "coverage": 0.0}
    filled = np.where(covered, reconstruction, float(np.mean(reconstruction[covered])))
    out.update(correlation=correlation(original, filled, mask=region),
               rank_correlation=rank_correlation(original, filled, mask=region),
               coverage=float(np.count_nonzero(covered & region) / max(np.count_nonzero(region), 1)))
    if lines:
        text = ocr_text(display_stretch(reconstruction, mask=covered).image) if ocr else None
        out["ocr_lines_read"] = None if text is None else lines_read(text, list(lines))[0]
    return out
