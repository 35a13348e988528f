"""The one display rule: how an estimate becomes grey levels on a screen or in a figure.

The app, ``lbdviewer reconstruct`` and the figure engine all call
:func:`display_stretch`, so one reconstruction looks the same everywhere, and
every view and export names the rule it used (:attr:`Stretched.description`,
:meth:`Stretched.record`).

Why a stretch at all: a binary descriptor ``b = sign(L p)`` is unchanged when
the patch is replaced by ``a p + c`` with ``a > 0`` (the frame vectors sum to
zero), so bits carry no gain and no offset, and a reconstruction's grey levels
are only defined up to them. The rule:

* **With the original** (``reference``): the estimate's mean and spread over
  the covered pixels are matched to the original's,
  :math:`a = \\sigma_r / \\sigma_x`, :math:`c = \\bar r - a \\bar x`, then
  clipped to ``[0, 1]`` (:func:`moment_matched_gain_offset`). Original and
  reconstruction are then on the same scale. The least-squares fit the
  metrics use before PSNR and SSIM
  (:func:`lbdviewer.evaluation.metrics.least_squares_gain_offset`, gain
  ``>= 0``) would shrink the contrast by the correlation (a regression
  towards the mean), so a weak reconstruction would look grey rather than
  wrong; matching the spread shows its errors at full contrast. The two fits
  share one test: when the least-squares gain is not positive (an estimate
  no better than flat, or inverted, which the metrics fit as the flat mean)
  no gain is fitted here either: the rule falls back to the percentile
  stretch and says so, so an inverted estimate is never shown the right way
  up.
* **Without the original**: the 0.5 and 99.5 percentiles of the covered
  pixels go to 0 and 1 (clipped), as in the paper.
* **Originals** are shown as they are (:func:`display_original`).

Pixels no patch covers are 0 (black) by default, which shows the coverage;
``uncovered="neutral"`` draws them at the stretched median of the covered
pixels instead, so that a reader (and OCR) sees a keypoint-only reconstruction's
background as background whatever its polarity. The mapping is affine on
the covered pixels: ``clip(gain * x + offset, 0, 1)``; :class:`Stretched`
keeps ``gain``, ``offset`` and the uncovered rule so a sidecar can record
them exactly.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lbdviewer._validation import check_choice
from lbdviewer.evaluation.metrics import least_squares_gain_offset

#: Percentiles of the covered pixels mapped to 0 and 1 when there is no original.
PERCENTILES = (0.5, 99.5)
#: Names of the rules, as :attr:`Stretched.rule` gives them.
RULES = ("fit", "percentile", "none")
#: How pixels no patch covers are drawn: black (the coverage shown) or at the covered pixels' median.
UNCOVERED = ("black", "neutral")

_FIT_DESCRIPTION = "gain/offset fitted to the original (mean and spread matched over covered pixels)"
_PERCENTILE_DESCRIPTION = "percentile stretch 0.5\u201399.5 % of covered pixels"
_FALLBACK_NOTE = " (the gain fitted to the original was not positive, so it was not applied)"
_NONE_DESCRIPTION = "shown as stored (no stretch)"


@dataclass(frozen=True)
class Stretched:
    """An image ready for display and the rule that made it.

    Attributes
    ----------
    image : ndarray of float64, shape (H, W)
        Grey levels in ``[0, 1]``; uncovered pixels are 0, or the covered
        median (``uncovered``).
    rule : {"fit", "percentile", "none"}
        Which branch of the display rule was applied.
    description : str
        The rule in words, for captions and sidecars.
    gain, offset : float
        The affine map applied to the covered pixels before clipping:
        ``clip(gain * x + offset, 0, 1)``.
    clipped_fraction : float
        Share of covered pixels that the clipping changed (0 for ``"none"``).
    uncovered : {"black", "neutral"}
        How pixels no patch covers were drawn.
    """

    image: np.ndarray
    rule: str
    description: str
    gain: float
    offset: float
    clipped_fraction: float
    uncovered: str = "black"

    def record(self):
        """The stretch as a dict for a sidecar (see :mod:`lbdviewer.evaluation.records`).

        Examples
        --------
        >>> display_original(np.zeros((2, 2))).record()["rule"]
        'none'
        """
        return {"rule": self.rule, "description": self.description, "gain": self.gain,
                "offset": self.offset, "clipped_fraction": self.clipped_fraction,
                "percentiles": list(PERCENTILES) if self.rule == "percentile" else None,
                "uncovered": self.uncovered}


def _check_image(name, image, shape=None):
    array = np.asarray(image, dtype=np.float64)
    if array.ndim != 2 or array.size == 0:
        raise ValueError(f"{name} must be a non-empty 2-D array (H, W), got shape {array.shape}")
    if shape is not None and array.shape != shape:
        raise ValueError(f"{name} must have the image's shape {shape}, got {array.shape}")
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{name} must be finite (it holds NaN or infinity)")
    return array


def _apply(image, mask, gain, offset, rule, description, uncovered):
    """``clip(gain * image + offset, 0, 1)`` on ``mask``; elsewhere 0, or the covered median if ``"neutral"``."""
    covered = int(mask.sum())
    mapped = gain * image + offset
    clipped = np.clip(mapped, 0.0, 1.0)
    changed = int(np.count_nonzero((np.abs(clipped - mapped) > 1e-12) & mask))  # not rounding noise
    fill = float(np.median(clipped[mask])) if uncovered == "neutral" and covered else 0.0
    out = np.where(mask, clipped, fill)
    return Stretched(image=out, rule=rule, description=description, gain=float(gain), offset=float(offset),
                     clipped_fraction=changed / covered if covered else 0.0, uncovered=uncovered)


def percentile_gain_offset(image, mask, percentiles=PERCENTILES):
    """Gain and offset that send the ``percentiles`` of ``image[mask]`` to 0 and 1.

    A constant image gets gain 0 and offset 0.5 (mid grey).

    Examples
    --------
    >>> percentile_gain_offset(np.array([[0.25, 0.5, 0.75]]), np.ones((1, 3), bool), (0, 100))
    (2.0, -0.5)
    """
    low, high = np.percentile(np.asarray(image, dtype=np.float64)[mask], percentiles)
    if not high > low:
        return 0.0, 0.5
    return float(1.0 / (high - low)), float(-low / (high - low))


def moment_matched_gain_offset(image, reference, mask):
    """Gain and offset giving ``image[mask]`` the mean and standard deviation of ``reference[mask]`` (moment matching).

    Not a least-squares fit: ``a = std(r) / std(x)`` whatever the correlation
    (see the module notes for why the display matches moments).

    Examples
    --------
    >>> mask = np.ones((1, 3), bool)
    >>> gain, offset = moment_matched_gain_offset(np.array([[1.0, 2.0, 3.0]]), np.array([[0.2, 0.4, 0.6]]), mask)
    >>> round(gain, 12), round(offset, 12)
    (0.2, 0.0)
    """
    x = np.asarray(image, dtype=np.float64)[mask]
    r = np.asarray(reference, dtype=np.float64)[mask]
    gain = float(r.std() / x.std()) if x.std() > 0 else 0.0
    return gain, float(r.mean() - gain * x.mean())


def display_stretch(image, *, mask=None, reference=None, uncovered="black"):
    """Map a reconstruction to grey levels for display, by the one display rule.

    Parameters
    ----------
    image : array_like, shape (H, W)
        The estimate (any real values; NaN and infinity are refused).
    mask : array_like of bool, shape (H, W), optional
        Covered pixels (default: all). The fit or the percentiles use only
        these; the others come out 0.
    reference : array_like, shape (H, W), optional
        The original. When given, the estimate's mean and spread are matched
        to it (rule ``"fit"``); otherwise the 0.5/99.5 percentiles are
        stretched to 0 and 1 (rule ``"percentile"``).
    uncovered : {"black", "neutral"}
        Pixels outside ``mask``: 0, which shows the coverage (default), or
        the median of the stretched covered pixels (a keypoint-only
        reconstruction read as a page: see :mod:`lbdviewer.features.invert`).

    Returns
    -------
    Stretched

    Raises
    ------
    ValueError
        If an array is not 2-D, holds NaN or infinity, or the shapes differ.

    Notes
    -----
    With a reference ``r``, ``a = std(r) / std(x)`` and ``c = mean(r) - a mean(x)``
    over ``mask``, applied when the least-squares gain
    (:func:`lbdviewer.evaluation.metrics.least_squares_gain_offset`) is positive; otherwise the
    percentile rule is used and the description says why. Without, ``a = 1 / (p_hi - p_lo)``
    and ``c = -p_lo a`` with ``p`` the 0.5 and 99.5 percentiles. Output:
    ``clip(a x + c, 0, 1)`` on ``mask``, 0 (or its median) elsewhere. No covered pixel: all 0.

    Examples
    --------
    >>> original = np.array([[0.0, 0.5, 1.0]])
    >>> shown = display_stretch(np.array([[10.0, 20.0, 30.0]]), reference=original)
    >>> shown.rule, shown.image.round(12).tolist(), round(shown.gain, 12)
    ('fit', [[0.0, 0.5, 1.0]], 0.05)
    >>> display_stretch(np.array([[3.0, 1.0, 2.0]])).rule
    'percentile'
    >>> mask = np.array([[True, True, False]])
    >>> display_stretch(np.array([[0.0, 1.0, 5.0]]), mask=mask, uncovered="neutral").image.round(3).tolist()
    [[0.0, 1.0, 0.5]]
    """
    check_choice("uncovered", uncovered, UNCOVERED)
    image = _check_image("image", image)
    mask = np.ones(image.shape, dtype=bool) if mask is None else np.asarray(mask, dtype=bool)
    if mask.shape != image.shape:
        raise ValueError(f"mask must have the image's shape {image.shape}, got {mask.shape}")
    if not mask.any():
        return Stretched(image=np.zeros_like(image), rule="percentile" if reference is None else "fit",
                         description="no covered pixel: shown black", gain=0.0, offset=0.0, clipped_fraction=0.0)
    if reference is not None:
        reference = _check_image("reference", reference, image.shape)
        least_squares_gain, _ = least_squares_gain_offset(reference, image, mask=mask)
        if least_squares_gain > 0:
            gain, offset = moment_matched_gain_offset(image, reference, mask)
            return _apply(image, mask, gain, offset, "fit", _FIT_DESCRIPTION, uncovered)
        gain, offset = percentile_gain_offset(image, mask)
        return _apply(image, mask, gain, offset, "percentile", _PERCENTILE_DESCRIPTION + _FALLBACK_NOTE, uncovered)
    gain, offset = percentile_gain_offset(image, mask)
    return _apply(image, mask, gain, offset, "percentile", _PERCENTILE_DESCRIPTION, uncovered)


def uncovered_rule(result):
    """How to draw the pixels ``result`` leaves uncovered: ``"neutral"`` or ``"black"``.

    A feature file's inversion records what its uncovered pixels hold
    (``params["uncovered"]``: the covered median, so that a reader and OCR
    see text as text, :func:`lbdviewer.features.invert.invert_features`):
    they are drawn at the covered median (``"neutral"``). Any other result
    (a grid's border strip, the paper's FAST figures) shows its coverage in
    black.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> uncovered_rule(SimpleNamespace(params={"uncovered": {"rule": "covered median"}})), uncovered_rule(None)
    ('neutral', 'black')
    """
    params = getattr(result, "params", None) or {}
    return "neutral" if params.get("uncovered") else "black"


def display_original(image):
    """An original image as it is (values clipped to ``[0, 1]``), named as such.

    Examples
    --------
    >>> shown = display_original(np.array([[0.25, 1.5]]))
    >>> shown.image.tolist(), shown.description
    ([[0.25, 1.0]], 'shown as stored (no stretch)')
    """
    image = _check_image("image", image)
    return _apply(image, np.ones(image.shape, dtype=bool), 1.0, 0.0, "none", _NONE_DESCRIPTION, "black")


def difference_image(original, shown, *, mask=None):
    """Signed difference ``shown - original`` of two displayed images, and its symmetric limit.

    Used for "original | estimate | difference" panels: both inputs are
    already on the display scale (the estimate through :func:`display_stretch`
    with the original as reference), so the difference is in grey levels.
    Uncovered pixels are 0.

    Returns
    -------
    difference : ndarray of float64, shape (H, W)
    limit : float
        ``max |difference|`` over the covered pixels (at least 1/255), for a
        colour scale symmetric around 0.

    Examples
    --------
    >>> diff, limit = difference_image(np.array([[0.0, 1.0]]), np.array([[0.5, 0.5]]))
    >>> diff.tolist(), limit
    ([[0.5, -0.5]], 0.5)
    """
    original = _check_image("original", original)
    shown = _check_image("shown", shown, original.shape)
    mask = np.ones(original.shape, dtype=bool) if mask is None else np.asarray(mask, dtype=bool)
    difference = np.where(mask, shown - original, 0.0)  # not empty: _check_image refuses empty images
    return difference, max(float(np.abs(difference).max()), 1.0 / 255.0)
