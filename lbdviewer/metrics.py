"""Quality of a reconstruction, for patches and for whole images.

A descriptor says nothing about the mean brightness of a patch and, once
binarised, nothing about its contrast either, so the image metrics first fit
the best gain and offset ``a x + b`` of the estimate to the reference (least
squares over the valid pixels) and then compare. Pixels that no patch covers
are excluded through ``mask``.

Orientation error compares the dominant gradient orientation of the
structure tensor of each patch, as the paper does by eye (Sec. 4.2: "the
orientation selected for the output patch is consistent with the original
main gradient direction").
"""

from __future__ import annotations

import numpy as np
from skimage.metrics import structural_similarity

COHERENCE_THRESHOLD = 0.5


def _pair(reference, estimate, mask):
    reference = np.asarray(reference, dtype=np.float64)
    estimate = np.asarray(estimate, dtype=np.float64)
    if reference.shape != estimate.shape:
        raise ValueError(f"estimate must have the shape of reference {reference.shape}, got {estimate.shape}")
    if mask is None:
        mask = np.ones(reference.shape, dtype=bool)
    mask = np.asarray(mask, dtype=bool)
    if mask.shape != reference.shape:
        raise ValueError(f"mask must have shape {reference.shape}, got {mask.shape}")
    if not mask.any():
        raise ValueError("mask must select at least one pixel")
    return reference, estimate, mask


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


def fit_gain_offset(reference, estimate, *, mask=None):
    """Least-squares gain and offset ``(a, b)`` minimising ``||a x + b - r||`` over ``mask``.

    A constant estimate gets ``a = 0`` and ``b = mean(r)``.

    Examples
    --------
    >>> r = np.array([0.0, 0.5, 1.0]); x = np.array([1.0, 2.0, 3.0])
    >>> [round(v, 12) for v in fit_gain_offset(r, x)]
    [0.5, -0.5]
    """
    reference, estimate, mask = _pair(reference, estimate, mask)
    r, x = reference[mask], estimate[mask]
    xc = x - x.mean()
    variance = float(xc @ xc)
    gain = float(xc @ (r - r.mean())) / variance if variance > 1e-24 else 0.0
    return gain, float(r.mean() - gain * x.mean())


def fitted(reference, estimate, *, mask=None):
    """The estimate after the best gain/offset fit to the reference (see :func:`fit_gain_offset`)."""
    gain, offset = fit_gain_offset(reference, estimate, mask=mask)
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
    reference, estimate, mask = _pair(reference, estimate, mask)
    r = reference[mask] - reference[mask].mean()
    x = estimate[mask] - estimate[mask].mean()
    denominator = np.sqrt(float(r @ r) * float(x @ x))
    return float(r @ x) / float(denominator) if denominator > 1e-24 else 0.0


def psnr(reference, estimate, *, mask=None, data_range=1.0):
    """PSNR in dB after the best gain/offset fit: ``10 log10(range^2 / MSE)``.

    Returns ``inf`` for a perfect fit.

    Examples
    --------
    >>> r = np.array([0.0, 1.0, 0.0, 1.0])
    >>> psnr(r, 3 * r + 1)
    inf
    >>> round(psnr(r, r + np.array([0.1, 0.0, -0.1, 0.0])), 2)
    23.1
    """
    reference, estimate, mask = _pair(reference, estimate, mask)
    error = fitted(reference, estimate, mask=mask)[mask] - reference[mask]
    mse = float(np.mean(error**2))
    return float("inf") if mse <= 1e-30 else float(10.0 * np.log10(data_range**2 / mse))


def ssim(reference, estimate, *, mask=None, data_range=1.0):
    """Mean SSIM (scikit-image, 7x7 windows) after the best gain/offset fit, over ``mask``.

    The SSIM map is averaged over the masked pixels only.

    Examples
    --------
    >>> r = np.random.default_rng(0).random((16, 16))
    >>> round(ssim(r, 2 * r + 3), 6)
    1.0
    """
    reference, estimate, mask = _pair(reference, estimate, mask)
    if min(reference.shape) < 7:
        raise ValueError(f"images must be at least 7x7 for SSIM, got {reference.shape}")
    _, local = structural_similarity(
        reference, fitted(reference, estimate, mask=mask), data_range=data_range, full=True
    )
    return float(local[mask].mean())


def structure_orientation(patches):
    """Dominant gradient orientation and coherence of each patch (structure tensor).

    With ``J = sum [gx^2, gx gy; gx gy, gy^2]`` over the patch (central
    differences, one-sided at the border; x to the right, y down), the orientation of the dominant
    gradient is ``theta = atan2(2 J_xy, J_xx - J_yy) / 2`` in degrees in
    ``[0, 180)`` and the coherence is ``(l1 - l2) / (l1 + l2)`` in ``[0, 1]``
    (``l1 >= l2`` eigenvalues of ``J``; 0 for a flat patch).

    Parameters
    ----------
    patches : array_like, shape (..., P, P)

    Returns
    -------
    angle_deg : ndarray, shape (...)
    coherence : ndarray, shape (...)

    Examples
    --------
    >>> ramp = np.tile(np.arange(8.0), (8, 1))     # brightness grows to the right
    >>> angle, coherence = structure_orientation(ramp)
    >>> float(angle), float(coherence)
    (0.0, 1.0)
    """
    patches = np.asarray(patches, dtype=np.float64)
    if patches.ndim < 2:
        raise ValueError(f"patches must have shape (..., P, P), got {patches.shape}")
    gx = np.gradient(patches, axis=-1)
    gy = np.gradient(patches, axis=-2)
    jxx = (gx * gx).sum(axis=(-2, -1))
    jyy = (gy * gy).sum(axis=(-2, -1))
    jxy = (gx * gy).sum(axis=(-2, -1))
    trace = jxx + jyy
    spread = np.sqrt((jxx - jyy) ** 2 + 4 * jxy**2)
    coherence = np.where(trace > 1e-12, spread / np.maximum(trace, 1e-300), 0.0)
    angle = np.mod(np.degrees(0.5 * np.arctan2(2 * jxy, jxx - jyy)), 180.0)
    return angle, np.clip(coherence, 0.0, 1.0)


def orientation_error(reference_patches, estimate_patches, *, coherence_threshold=COHERENCE_THRESHOLD):
    """Angle in degrees between the dominant orientations of matching patches.

    Parameters
    ----------
    reference_patches, estimate_patches : array_like, shape (..., P, P)
    coherence_threshold : float
        Patches whose *reference* coherence is below this have no reliable
        orientation; they are reported as NaN.

    Returns
    -------
    ndarray, shape (...)
        Error in ``[0, 90]`` degrees (orientations are modulo 180), or NaN.

    Examples
    --------
    >>> ramp = np.tile(np.arange(8.0), (8, 1))
    >>> float(orientation_error(ramp, ramp.T))
    90.0
    """
    reference_angle, coherence = structure_orientation(reference_patches)
    estimate_angle, _ = structure_orientation(estimate_patches)
    difference = np.abs(reference_angle - estimate_angle) % 180.0
    error = np.minimum(difference, 180.0 - difference)
    return np.where(coherence >= coherence_threshold, error, np.nan)


def extract_patches(image, corners, patch_size):
    """The ``(S, P, P)`` patches of ``image`` whose top-left pixels are ``corners`` (row, col).

    Examples
    --------
    >>> extract_patches(np.arange(16.0).reshape(4, 4), [[1, 2]], 2).tolist()
    [[[6.0, 7.0], [10.0, 11.0]]]
    """
    image = np.asarray(image)
    corners = np.asarray(corners, dtype=np.int64).reshape(-1, 2)
    rows = corners[:, 0, None, None] + np.arange(patch_size)[None, :, None]
    cols = corners[:, 1, None, None] + np.arange(patch_size)[None, None, :]
    return image[rows, cols]


def patch_metrics(reference, estimate, corners, patch_size, *, coherence_threshold=COHERENCE_THRESHOLD):
    """Per-patch correlation and orientation error.

    Returns
    -------
    dict
        ``correlation`` (S,) Pearson correlation of each patch pair (0 for a
        constant patch) and ``orientation_error_deg`` (S,) (NaN where the
        reference patch is not coherent enough).
    """
    reference_patches = extract_patches(reference, corners, patch_size).astype(np.float64)
    estimate_patches = extract_patches(estimate, corners, patch_size).astype(np.float64)
    r = reference_patches.reshape(len(reference_patches), -1)
    x = estimate_patches.reshape(len(estimate_patches), -1)
    r = r - r.mean(axis=1, keepdims=True)
    x = x - x.mean(axis=1, keepdims=True)
    denominator = np.sqrt((r * r).sum(axis=1) * (x * x).sum(axis=1))
    safe = np.where(denominator > 1e-24, denominator, 1.0)
    per_patch = np.where(denominator > 1e-24, (r * x).sum(axis=1) / safe, 0.0)
    errors = orientation_error(reference_patches, estimate_patches, coherence_threshold=coherence_threshold)
    return {"correlation": per_patch, "orientation_error_deg": errors}


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
        ``correlation``, ``psnr``, ``ssim``, ``covered_fraction`` and, with
        ``corners``, ``orientation_error_deg`` (mean over the coherent patches,
        NaN if none), ``coherent_patches`` and ``coherence_threshold``.

    Examples
    --------
    >>> r = np.tile(np.linspace(0.0, 1.0, 16), (16, 1))      # a horizontal ramp
    >>> m = image_metrics(r, 0.5 * r, corners=[[0, 0], [8, 8]], patch_size=8)
    >>> m["correlation"], m["psnr"], round(m["ssim"], 6), m["orientation_error_deg"]
    (1.0, inf, 1.0, 0.0)
    """
    reference, estimate, mask = _pair(reference, estimate, mask)
    result = {
        "correlation": correlation(reference, estimate, mask=mask),
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
