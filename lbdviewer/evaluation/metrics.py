"""Quality of a reconstruction as a whole image: correlations, PSNR and SSIM after a gain/offset fit.

A descriptor says nothing about the mean brightness of a patch and, once
binarised, nothing about its contrast either, so PSNR and SSIM first fit a
gain and offset ``a x + b`` of the estimate to the reference by least
squares over the covered pixels, **with the gain constrained to** ``a >= 0``
(:func:`least_squares_gain_offset`): an inverted estimate (``1 - r``) is not
turned the right way up by a negative gain and scored as perfect; it gets the
fit of a flat image, a low PSNR and an SSIM near 0, and its correlation
(which keeps its sign) says it is inverted. The display rule
(:mod:`lbdviewer.evaluation.display`) asks the same fit whether the gain is
positive before it shows an estimate on the original's scale.

Pixels that no patch covers are excluded through ``mask``: the fit, the error
and the SSIM windows read only covered pixels. Per-patch correlation and
orientation are in :mod:`lbdviewer.evaluation.orientation`.
"""

from __future__ import annotations

import numpy as np
from scipy.ndimage import binary_erosion
from scipy.stats import rankdata
from skimage.metrics import structural_similarity

from lbdviewer.evaluation.orientation import COHERENCE_THRESHOLD, compared_images, patch_metrics

#: Side of the SSIM windows (scikit-image's default, Gaussian weights off).
SSIM_WINDOW = 7


def bit_consistency(bits, reference_bits):
    """Fraction of equal bits, per descriptor and overall.

    Parameters
    ----------
    bits, reference_bits : array_like, shape (..., M)
        Bits in {-1, +1} (or {0, 1}; any sign convention both share).

    Returns
    -------
    per_descriptor : ndarray, shape (...)
    overall : float

    Examples
    --------
    >>> per, overall = bit_consistency([[1, 1, -1, -1]], [[1, -1, -1, -1]])
    >>> per.tolist(), overall
    ([0.75], 0.75)
    """
    bits = np.asarray(bits)
    reference_bits = np.asarray(reference_bits)
    if bits.shape != reference_bits.shape:
        raise ValueError(f"bits must have the shape of reference_bits {reference_bits.shape}, got {bits.shape}")
    equal = (bits > 0) == (reference_bits > 0)
    return equal.mean(axis=-1), float(equal.mean())


_POPCOUNT = np.unpackbits(np.arange(256, dtype=np.uint8)[:, None], axis=1).sum(axis=1).astype(np.uint8)


def packed_bit_consistency(packed, reference_packed, m, *, bitorder="little"):
    """:func:`bit_consistency` of packed descriptors, without unpacking them.

    The differing bits of two descriptors are the set bits of their XOR, so
    ``per_descriptor = (m - popcount(a XOR b)) / m``; bits past ``m`` in the
    last byte are ignored.

    Parameters
    ----------
    packed, reference_packed : array_like of uint8, shape (..., ceil(M / 8))
        Descriptors as :func:`lbdviewer.bits.pack_bits` stores them.
    m : int
        Bits per descriptor.
    bitorder : {"little", "big"}
        Bit order within a byte (see :func:`lbdviewer.bits.pack_bits`).

    Returns
    -------
    per_descriptor, overall
        As :func:`bit_consistency` returns them for the unpacked bits.

    Examples
    --------
    >>> packed_bit_consistency([[0b0011]], [[0b0001]], 4)[1]  # 1 bit of 4 differs
    0.75
    """
    packed = np.asarray(packed)
    reference_packed = np.asarray(reference_packed)
    if packed.shape != reference_packed.shape:
        raise ValueError(f"packed must have the shape of reference_packed {reference_packed.shape}, "
                         f"got {packed.shape}")
    if bitorder not in ("little", "big"):
        raise ValueError(f"bitorder must be 'little' or 'big', got {bitorder!r}")
    if not 1 <= m <= 8 * packed.shape[-1] or m <= 8 * (packed.shape[-1] - 1):
        raise ValueError(f"m must be from {8 * packed.shape[-1] - 7} to {8 * packed.shape[-1]} "
                         f"for {packed.shape[-1]} bytes, got {m}")
    different = np.bitwise_xor(packed.astype(np.uint8), reference_packed.astype(np.uint8))
    tail = m - 8 * (packed.shape[-1] - 1)
    different[..., -1] &= (0xFF >> (8 - tail)) if bitorder == "little" else (0xFF << (8 - tail)) & 0xFF
    equal = m - _POPCOUNT[different].sum(axis=-1, dtype=np.int64)
    return equal / m, float(equal.sum() / (equal.size * m))


def least_squares_gain_offset(reference, estimate, *, mask=None):
    r"""The least-squares gain and offset ``(a, b)`` of ``estimate`` to ``reference`` over ``mask``, with ``a >= 0``.

    Minimises :math:`\sum_{mask} (a x + b - r)^2` subject to :math:`a \ge 0`.
    The objective is a convex quadratic in ``a`` once ``b`` is eliminated, so
    the constrained minimum is the unconstrained one clipped at 0:

    .. math:: a = \max\Big(0, \frac{\sum (x - \bar x)(r - \bar r)}{\sum (x - \bar x)^2}\Big),
              \qquad b = \bar r - a \bar x .

    An estimate anticorrelated with the reference (inverted) or constant gets
    ``a = 0`` and ``b = mean(r)``: the best it can do without being turned
    upside down is the flat mean. This is the fit of :func:`psnr` and
    :func:`ssim`, and the test of :func:`lbdviewer.evaluation.display.display_stretch`
    (which shows an estimate on the original's scale only when ``a > 0``).

    Examples
    --------
    >>> r = np.array([0.0, 0.5, 1.0]); x = np.array([1.0, 2.0, 3.0])
    >>> [round(v, 12) for v in least_squares_gain_offset(r, x)]
    [0.5, -0.5]
    >>> least_squares_gain_offset(r, 1 - r)     # inverted: no negative gain, the flat mean
    (0.0, 0.5)
    """
    reference, estimate, mask = compared_images(reference, estimate, mask)
    r, x = reference[mask], estimate[mask]
    xc = x - x.mean()
    variance = float(xc @ xc)
    gain = max(0.0, float(xc @ (r - r.mean())) / variance) if variance > 1e-24 else 0.0
    return gain, float(r.mean() - gain * x.mean())


def least_squares_fitted(reference, estimate, *, mask=None):
    """``a x + b``: the estimate after :func:`least_squares_gain_offset` (gain ``a >= 0``), on every pixel.

    Examples
    --------
    >>> least_squares_fitted(np.array([0.0, 1.0]), np.array([2.0, 4.0])).tolist()
    [0.0, 1.0]
    """
    gain, offset = least_squares_gain_offset(reference, estimate, mask=mask)
    return gain * np.asarray(estimate, dtype=np.float64) + offset


def correlation(reference, estimate, *, mask=None):
    """Pearson correlation over ``mask`` (invariant to gain and offset; 0 if one side is constant).

    Examples
    --------
    >>> round(correlation([0, 1, 2, 3], [1, 3, 5, 7]), 12)
    1.0
    >>> round(correlation([0, 1, 2, 3], [3, 2, 1, 0]), 12)
    -1.0
    """
    reference, estimate, mask = compared_images(reference, estimate, mask)
    r = reference[mask] - reference[mask].mean()
    x = estimate[mask] - estimate[mask].mean()
    denominator = np.sqrt(float(r @ r) * float(x @ x))
    return float(r @ x) / float(denominator) if denominator > 1e-24 else 0.0


def rank_correlation(reference, estimate, *, mask=None):
    r"""Spearman rank correlation over ``mask``: the Pearson correlation of the pixels' ranks.

    Invariant to every increasing tone map of either image (bits carry
    orderings of field means, not tone), so an estimate with the right
    orderings and the wrong gamma scores 1. Equal values share their mean
    rank; 0 if one side is constant.

    .. math:: \rho = \operatorname{corr}\big(\operatorname{rank}(r), \operatorname{rank}(x)\big)

    Examples
    --------
    >>> round(rank_correlation([0, 1, 2, 3], [0, 1, 8, 27]), 12)        # monotone, not linear
    1.0
    >>> round(rank_correlation([0, 1, 2, 3], [3, 2, 2, 0]), 6)
    -0.948683
    """
    reference, estimate, mask = compared_images(reference, estimate, mask)
    return correlation(rankdata(reference[mask]), rankdata(estimate[mask]))


def psnr(reference, estimate, *, mask=None, data_range=1.0):
    r"""PSNR in dB over ``mask`` after the least-squares fit with gain ``>= 0``: ``10 log10(range^2 / MSE)``.

    The fit (:func:`least_squares_gain_offset`) and the mean squared error
    both read only the pixels of ``mask``. Returns ``inf`` for a perfect fit;
    an inverted estimate is fitted as the flat mean of the reference, so it
    scores :math:`10 \log_{10}(\text{range}^2 / \operatorname{var}(r))`,
    the PSNR of a flat guess.

    Examples
    --------
    >>> r = np.array([0.0, 1.0, 0.0, 1.0])
    >>> psnr(r, 3 * r + 1)
    inf
    >>> round(psnr(r, r + np.array([0.1, 0.0, -0.1, 0.0])), 2)
    23.1
    >>> round(psnr(r, 1 - r), 2)        # inverted: the PSNR of the flat mean 0.5
    6.02
    """
    reference, estimate, mask = compared_images(reference, estimate, mask)
    error = least_squares_fitted(reference, estimate, mask=mask)[mask] - reference[mask]
    mse = float(np.mean(error**2))
    return float("inf") if mse <= 1e-30 else float(10.0 * np.log10(data_range**2 / mse))


def ssim(reference, estimate, *, mask=None, data_range=1.0):
    r"""Mean SSIM over ``mask`` after the least-squares fit with gain ``>= 0``.

    Scikit-image's SSIM map (:data:`SSIM_WINDOW` x :data:`SSIM_WINDOW`
    uniform windows) of the reference and the fitted estimate, averaged over
    the pixels whose whole window lies inside the image and inside ``mask``:
    no pixel outside the mask reaches the result. Without a mask this is
    scikit-image's own mean SSIM (which leaves out the image border the same
    way). An inverted estimate is fitted as a flat image: its SSIM is near 0.

    Returns
    -------
    float
        NaN when no window fits inside the mask.

    Raises
    ------
    ValueError
        If the images are smaller than the window.

    Examples
    --------
    >>> r = np.random.default_rng(0).random((16, 16))
    >>> round(ssim(r, 2 * r + 3), 6)
    1.0
    >>> bool(abs(ssim(r, 1 - r)) < 0.05)
    True
    """
    reference, estimate, mask = compared_images(reference, estimate, mask)
    if min(reference.shape) < SSIM_WINDOW:
        raise ValueError(f"images must be at least {SSIM_WINDOW}x{SSIM_WINDOW} for SSIM, got {reference.shape}")
    inside = binary_erosion(mask, structure=np.ones((SSIM_WINDOW, SSIM_WINDOW), bool), border_value=0)
    if not inside.any():
        return float("nan")
    fitted = least_squares_fitted(reference, estimate, mask=mask)
    # Outside the mask: the masked means, finite values that no counted window reads.
    reference = np.where(mask, reference, reference[mask].mean())
    fitted = np.where(mask, fitted, fitted[mask].mean())
    _, local = structural_similarity(reference, fitted, data_range=data_range, full=True, win_size=SSIM_WINDOW)
    return float(local[inside].mean())


def image_metrics(reference, estimate, *, mask=None, corners=None, patch_size=None,
                  coherence_threshold=COHERENCE_THRESHOLD):
    """Whole-image metrics as a JSON-ready dict.

    Parameters
    ----------
    reference, estimate : array_like, shape (H, W)
    mask : array_like of bool, optional
        Pixels to compare (default: all); uncovered pixels should be False.
    corners : array_like, shape (S, 2), optional
        Patch sites (top-left row, col) for the orientation error.
    patch_size : int, optional
        Patch side, needed with ``corners``.
    coherence_threshold : float
        See :func:`orientation_error`.

    Returns
    -------
    dict
        ``correlation``, ``rank_correlation``, ``psnr``, ``ssim``,
        ``covered_fraction`` and, with
        ``corners``, ``orientation_error_deg`` (mean over the coherent patches,
        NaN if none), ``coherent_patches`` and ``coherence_threshold``.

    Examples
    --------
    >>> r = np.tile(np.linspace(0.0, 1.0, 16), (16, 1))      # a horizontal ramp
    >>> m = image_metrics(r, 0.5 * r, corners=[[0, 0], [8, 8]], patch_size=8)
    >>> m["correlation"], m["psnr"], round(m["ssim"], 6), m["orientation_error_deg"]
    (1.0, inf, 1.0, 0.0)
    """
    reference, estimate, mask = compared_images(reference, estimate, mask)
    result = {
        "correlation": correlation(reference, estimate, mask=mask),
        "rank_correlation": rank_correlation(reference, estimate, mask=mask),
        "psnr": psnr(reference, estimate, mask=mask),
        "ssim": ssim(reference, estimate, mask=mask),
        "covered_fraction": float(mask.mean()),
    }
    if corners is not None:
        if patch_size is None:
            raise ValueError("patch_size must be given with corners, got None")
        errors = patch_metrics(reference, estimate, corners, patch_size,
                               coherence_threshold=coherence_threshold)["orientation_error_deg"]
        coherent = ~np.isnan(errors)
        result["orientation_error_deg"] = float(errors[coherent].mean()) if coherent.any() else float("nan")
        result["coherent_patches"] = int(coherent.sum())
        result["coherence_threshold"] = float(coherence_threshold)
    return result
