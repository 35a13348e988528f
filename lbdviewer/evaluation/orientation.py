"""Orientation and per-patch quality: the structure tensor of each patch, and :func:`patch_metrics`.

Orientation error compares the dominant gradient orientation of the
structure tensor of each patch, as the paper does by eye (Sec. 4.2: "the
orientation selected for the output patch is consistent with the original
main gradient direction").

For many overlapping patches (a dense grid) :func:`patch_metrics` does not
cut the patches out: it computes every patch sum it needs (moments of the two
images, structure tensors with the patch-border one-sided differences) as
sliding-window sums over the whole image, and recomputes directly the few
patches whose sums are too ill-conditioned to give the same numbers.
"""

from __future__ import annotations

import operator

import numpy as np

from lbdviewer.reconstruction.sites import site_patches

COHERENCE_THRESHOLD = 0.5

#: Patches extracted at a time on the direct path (bounds memory).
PATCH_CHUNK = 2048

# The dense path of patch_metrics is accurate to a few tens of ulps of its
# terms; where a patch is within these margins of a decision (a threshold) or
# of an ill-conditioned result, it is recomputed directly.
_CANCELLATION_MARGIN = 1e-5     # standard deviation against the mean of a patch
_DECISION_MARGIN = 1e-10        # coherence next to its threshold; near-zero trace or denominator
_ISOTROPY_MARGIN = 1e-3         # estimate coherence below this: its angle is ill-conditioned


def compared_images(reference, estimate, mask=None):
    """``reference`` and ``estimate`` as float64 arrays of one shape, and the boolean ``mask`` (default: all).

    Raises
    ------
    ValueError
        If the shapes differ or the mask selects no pixel.

    Examples
    --------
    >>> r, x, mask = compared_images([[0, 1]], [[1, 0]])
    >>> mask.tolist()
    [[True, True]]
    """
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


def _structure_tensor(patches):
    """``(J_xx, J_yy, J_xy)`` of each ``(..., P, P)`` patch, as :func:`structure_orientation` defines them."""
    gx = np.gradient(patches, axis=-1)
    gy = np.gradient(patches, axis=-2)
    return (gx * gx).sum(axis=(-2, -1)), (gy * gy).sum(axis=(-2, -1)), (gx * gy).sum(axis=(-2, -1))


def _orientation(jxx, jyy, jxy):
    trace = jxx + jyy
    spread = np.sqrt((jxx - jyy) ** 2 + 4 * jxy**2)
    coherence = np.where(trace > 1e-12, spread / np.maximum(trace, 1e-300), 0.0)
    angle = np.mod(np.degrees(0.5 * np.arctan2(2 * jxy, jxx - jyy)), 180.0)
    return angle, np.clip(coherence, 0.0, 1.0)


def _angle_error(reference_angle, coherence, estimate_angle, coherence_threshold):
    difference = np.abs(reference_angle - estimate_angle) % 180.0
    error = np.minimum(difference, 180.0 - difference)
    return np.where(coherence >= coherence_threshold, error, np.nan)


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
    return _orientation(*_structure_tensor(patches))


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
    return _angle_error(reference_angle, coherence, estimate_angle, coherence_threshold)


def _direct_terms(reference, estimate, corners, patch_size):
    """Per-patch correlation and structure tensors of both images, patch by patch (the reference path).

    Returns an array of shape (7, S): correlation, then ``J_xx, J_yy, J_xy``
    of the reference and of the estimate.
    """
    terms = np.empty((7, len(corners)))
    for start in range(0, len(corners), PATCH_CHUNK):
        part = slice(start, start + PATCH_CHUNK)
        reference_patches = site_patches(reference, corners[part], patch_size)
        estimate_patches = site_patches(estimate, corners[part], patch_size)
        r = reference_patches.reshape(len(reference_patches), -1)
        x = estimate_patches.reshape(len(estimate_patches), -1)
        r = r - r.mean(axis=1, keepdims=True)
        x = x - x.mean(axis=1, keepdims=True)
        denominator = np.sqrt((r * r).sum(axis=1) * (x * x).sum(axis=1))
        safe = np.where(denominator > 1e-24, denominator, 1.0)
        terms[0, part] = np.where(denominator > 1e-24, (r * x).sum(axis=1) / safe, 0.0)
        terms[1:4, part] = _structure_tensor(reference_patches)
        terms[4:7, part] = _structure_tensor(estimate_patches)
    return terms


def _add(left, _left_count, right, _right_count):
    return tuple(a + b for a, b in zip(left, right))


def _merge_moments(left, left_count, right, right_count):
    """Chan et al.'s pairwise update of ``(mean_r, mean_x, M2_r, M2_x, C_rx)`` for the union of two sets."""
    mean_r, mean_x, m2_r, m2_x, c_rx = left
    count = left_count + right_count
    dr, dx = right[0] - mean_r, right[1] - mean_x
    weight = left_count * right_count / count
    return (mean_r + dr * (right_count / count), mean_x + dx * (right_count / count),
            m2_r + right[2] + dr * dr * weight, m2_x + right[3] + dx * dx * weight, c_rx + right[4] + dr * dx * weight)


def _running(values, length, axis, combine, unit=1):
    """Combine every ``length`` consecutive entries along ``axis``: ``out[k]`` covers ``k .. k + length - 1``.

    ``values`` is a tuple of arrays, each entry standing for ``unit`` samples;
    ``combine(left, left_count, right, right_count)`` is associative. Blocks of
    ``2^j`` entries are built by doubling and the window from the blocks of the
    binary digits of ``length``, so each output only combines its own entries
    (no differences of long cumulative sums, which cancel catastrophically)
    in ``O(n log length)``.
    """
    block = tuple(np.moveaxis(v, axis, 0) for v in values)
    count = block[0].shape[0] - length + 1
    out, done, size = None, 0, 1
    for bit in range(length.bit_length()):
        if length >> bit & 1:
            piece = tuple(v[done:done + count] for v in block)
            out = piece if out is None else combine(out, done * unit, piece, size * unit)
            done += size
        if length >> (bit + 1):
            block = combine(tuple(v[:-size] for v in block), size * unit, tuple(v[size:] for v in block), size * unit)
            size *= 2
    return tuple(np.moveaxis(v, 0, axis) for v in out)


def _window_sum(values, rows, cols):
    """``out[i, j] = values[i:i + rows, j:j + cols].sum()`` for every window inside ``values``."""
    return _running(_running((values,), cols, 1, _add), rows, 0, _add)[0]


def _gradient_fields(image, axis):
    """``np.gradient`` along ``axis`` of the patches, read from the whole image.

    A patch's first row (column) has the forward difference, its last the
    backward one and the others the central one: returns these three images
    (first, inner, last), 0 where undefined. Each value is bit for bit what
    ``np.gradient`` gives on a patch.
    """
    def cut(start, stop):
        index = [slice(None)] * 2
        index[axis] = slice(start, stop)
        return tuple(index)

    forward = np.diff(image, axis=axis)
    first, inner, last = np.zeros((3,) + image.shape)
    first[cut(None, -1)] = forward
    inner[cut(1, -1)] = (image[cut(2, None)] - image[cut(None, -2)]) / 2.0
    last[cut(1, None)] = forward
    return first, inner, last


def _dense_tensor(image, corners, patch_size):
    """``(J_xx, J_yy, J_xy)`` of every patch from window sums over the whole image.

    A patch's rows and columns are of three kinds (first, inner, last), each
    with its own finite difference, so ``J_xy`` is the sum of nine window sums
    of products of whole-image gradient fields (one-pixel ones are look-ups)
    and ``J_xx``, ``J_yy`` of three each.
    """
    p = patch_size
    spans = [(0, 1), (1, p - 2), (p - 1, 1)]    # (offset, length) of the first, inner and last rows or columns
    gx = [(g, span) for g, span in zip(_gradient_fields(image, 1), spans) if span[1]]
    gy = [(g, span) for g, span in zip(_gradient_fields(image, 0), spans) if span[1]]
    rows, cols = corners[:, 0], corners[:, 1]

    def patch_sum(a, b, row_span, col_span):
        at = rows + row_span[0], cols + col_span[0]
        if row_span[1] == col_span[1] == 1:
            return a[at] * b[at]
        return _window_sum(a * b, row_span[1], col_span[1])[at]

    jxx = sum(patch_sum(g, g, (0, p), span) for g, span in gx)
    jyy = sum(patch_sum(g, g, span, (0, p)) for g, span in gy)
    jxy = sum(patch_sum(g_x, g_y, row_span, col_span) for g_y, row_span in gy for g_x, col_span in gx)
    return jxx, jyy, jxy


def _dense_terms(reference, estimate, corners, patch_size, coherence_threshold):
    """:func:`_direct_terms` from window reductions over the whole images, ``O(H W log P + S)``.

    The patch moments (means, ``M2 = sum (r - mean)^2`` and the co-moment)
    are merged pairwise over the window (Chan et al.), which does not cancel
    for nearly constant patches; the tensors come from :func:`_dense_tensor`.
    The patches where the result could still differ from :func:`_direct_terms`
    by more than about ``1e-10`` are recomputed directly: a non-zero constant
    or nearly constant patch (standard deviation under ``_CANCELLATION_MARGIN``
    of its mean), a near-zero correlation denominator or reference trace, a
    reference coherence next to ``coherence_threshold`` and, where the
    reference is coherent, an almost isotropic estimate (its angle is then
    ill-conditioned).
    """
    n = patch_size * patch_size
    zeros = np.zeros_like(reference)
    moments = _running((reference, estimate, zeros, zeros, zeros), patch_size, 1, _merge_moments)
    mean_r, mean_x, m2_r, m2_x, c_rx = (
        v[corners[:, 0], corners[:, 1]]
        for v in _running(moments, patch_size, 0, _merge_moments, unit=patch_size))
    product = m2_r * m2_x
    terms = np.empty((7, len(corners)))
    terms[0] = np.where(product > 0, c_rx / np.sqrt(np.where(product > 0, product, 1.0)), 0.0)
    terms[1:4] = _dense_tensor(reference, corners, patch_size)
    terms[4:7] = _dense_tensor(estimate, corners, patch_size)
    _, coherence = _orientation(*terms[1:4])
    _, estimate_coherence = _orientation(*terms[4:7])
    trace = terms[1] + terms[2]
    ill = ((m2_r < n * (_CANCELLATION_MARGIN * mean_r) ** 2) | (m2_x < n * (_CANCELLATION_MARGIN * mean_x) ** 2)
           | ((product > 0) & (product <= 1e-40))       # denominator within 1e4 of its 1e-24 floor
           | ((trace > 0) & (trace <= _DECISION_MARGIN))
           | (np.abs(coherence - coherence_threshold) <= _DECISION_MARGIN)
           | ((coherence >= coherence_threshold) & (estimate_coherence < _ISOTROPY_MARGIN)))
    if ill.any():
        terms[:, ill] = _direct_terms(reference, estimate, corners[ill], patch_size)
    return terms


def patch_metrics(reference, estimate, corners, patch_size, *, coherence_threshold=COHERENCE_THRESHOLD):
    r"""Per-patch correlation and orientation error.

    Parameters
    ----------
    reference, estimate : array_like, shape (H, W)
    corners : array_like of int, shape (S, 2)
        Top-left ``(row, col)`` of each patch.
    patch_size : int
        Patch side ``P`` (at least 2).
    coherence_threshold : float
        See :func:`orientation_error`.

    Returns
    -------
    dict
        ``correlation`` (S,) Pearson correlation of each patch pair (0 for a
        constant patch) and ``orientation_error_deg`` (S,) (NaN where the
        reference patch is not coherent enough), as
        :func:`orientation_error` on the extracted patches.

    Notes
    -----
    When the patches hold more pixels than the image (they overlap, as on a
    dense grid), nothing is extracted: every patch quantity is a reduction
    over a sliding window of the whole images, built by doubling so that a
    window only combines its own pixels. The correlation is

    .. math:: \rho = \frac{C_{rx}}{\sqrt{M_r M_x}}, \quad
              M_r = \sum (r - \bar r)^2, \quad C_{rx} = \sum (r - \bar r)(x - \bar x),

    merged pairwise: for two halves :math:`A, B` of :math:`n_A, n_B` pixels,
    :math:`M_r = M_{r,A} + M_{r,B} + \delta^2 n_A n_B / n` with
    :math:`\delta = \bar r_B - \bar r_A`, which does not cancel even for nearly
    constant patches [1]_. The structure tensor sums whole-image forward,
    central and backward differences over the patch's first, inner and last
    rows and columns, bit for bit the values ``np.gradient`` gives on the
    patch. Time and memory are ``O(H W log P + S)`` instead of
    ``O(S P^2)``; the results agree with the patch-by-patch definition to about
    ``1e-10`` (ill-conditioned patches are recomputed patch by patch).

    References
    ----------
    .. [1] T. F. Chan, G. H. Golub, R. J. LeVeque, "Updating formulae and a
       pairwise algorithm for computing sample variances", COMPSTAT 1982.

    Examples
    --------
    >>> ramp = np.tile(np.linspace(0.0, 1.0, 8), (8, 1))
    >>> m = patch_metrics(ramp, ramp.T, [[0, 0], [2, 3]], 4)
    >>> m["correlation"].round(6).tolist(), m["orientation_error_deg"].tolist()
    ([0.0, 0.0], [90.0, 90.0])
    """
    reference, estimate, _ = compared_images(reference, estimate)
    corners = np.asarray(corners, dtype=np.int64).reshape(-1, 2)
    patch_size = operator.index(patch_size)
    if patch_size < 2:
        raise ValueError(f"patch_size must be at least 2, got {patch_size}")
    if len(corners) and (corners.min() < 0 or (corners + patch_size > reference.shape).any()):
        raise ValueError(f"every patch must lie inside the image of shape {reference.shape}")
    if len(corners) * patch_size**2 > reference.size:
        terms = _dense_terms(reference, estimate, corners, patch_size, coherence_threshold)
    else:
        terms = _direct_terms(reference, estimate, corners, patch_size)
    reference_angle, coherence = _orientation(*terms[1:4])
    estimate_angle, _ = _orientation(*terms[4:7])
    return {"correlation": terms[0],
            "orientation_error_deg": _angle_error(reference_angle, coherence, estimate_angle, coherence_threshold)}
