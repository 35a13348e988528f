"""BRIEF: random point pairs, each a small Gaussian measurement.

Calonder et al. compare smoothed intensities at pairs of points drawn at
random; the paper inverts the variant with points uniform over the patch and a
Gaussian measurement of 3x3 support. The isotropic Gaussian variant (BRIEF's
"G II") is available with ``distribution="gaussian"``.
"""

from __future__ import annotations

import numpy as np

from lbdviewer._validation import check_choice
from lbdviewer.patterns.base import Pattern, check_m, check_patch_size, seed_for_metadata

DISTRIBUTIONS = ("uniform", "gaussian")


def brief_max_pairs(patch_size, *, radius=1):
    """Number of distinct unordered point pairs a BRIEF pattern can draw.

    Points lie on the integer grid at least ``radius`` pixels inside the patch
    so that every 3x3 measurement stays inside it.

    Examples
    --------
    >>> brief_max_pairs(8)
    630
    """
    side = patch_size - 2 * radius
    positions = side * side
    return positions * (positions - 1) // 2


def brief_pattern(patch_size=32, m=512, *, distribution="uniform", rng=0, sigma=1.0, radius=1):
    """The paper's BRIEF pattern: ``m`` distinct random point pairs.

    Parameters
    ----------
    patch_size : int
        Patch side ``P`` (8 to 128).
    m : int
        Number of measurements, at most :func:`brief_max_pairs`.
    distribution : {"uniform", "gaussian"}
        Point distribution: uniform over the patch (the paper's choice), or
        isotropic Gaussian about the centre with variance ``P**2 / 25``
        (BRIEF's G II), rounded and clipped to the patch.
    rng : int or numpy.random.Generator
        Seed or generator; the same seed gives the same pattern.
    sigma, radius : float, int
        Width and support half-width of each Gaussian measurement
        (``radius=1``: 3x3 support).

    Returns
    -------
    Pattern
        ``2 m`` fields (field ``2i`` and ``2i + 1`` form pair ``i``).

    Raises
    ------
    ValueError
        For a patch size outside [8, 128], ``m`` outside ``[1, max pairs]`` or
        an unknown distribution.

    Examples
    --------
    >>> p = brief_pattern(16, 64, rng=1)
    >>> p.m, p.n_fields, float(p.centers.min()) >= 1, float(p.centers.max()) <= 14
    (64, 128, True, True)
    """
    patch_size = check_patch_size(patch_size)
    check_choice("distribution", distribution, DISTRIBUTIONS)
    limit = brief_max_pairs(patch_size, radius=radius)
    m = check_m(m, limit, f"distinct point pairs in a {patch_size}x{patch_size} BRIEF patch")
    seed = seed_for_metadata(rng)
    rng = np.random.default_rng(rng)
    side = patch_size - 2 * radius
    if distribution == "uniform" and limit <= 4 * m:
        chosen = rng.choice(limit, size=m, replace=False)
        first, second = _unrank_pairs(chosen, side * side)
    else:
        first, second = _draw_distinct_pairs(rng, m, side, patch_size, radius, distribution)
    points = np.stack([first, second], axis=1).reshape(-1)
    centers = np.stack([points % side + radius, points // side + radius], axis=1).astype(float)
    fields = 2 * m
    return Pattern(
        name="brief",
        patch_size=patch_size,
        centers=centers,
        sigmas=np.full(fields, float(sigma)),
        radii=np.full(fields, float(radius)),
        pairs=np.arange(fields).reshape(m, 2),
        kernel="gaussian",
        params=(("distribution", distribution), ("rng", seed), ("sigma", sigma)),
    )


def _unrank_pairs(ranks, n):
    """Map ranks in ``[0, n(n-1)/2)`` to pairs ``(i, j)`` with ``i < j``."""
    ranks = np.asarray(ranks, dtype=np.int64)
    # Row i holds n - 1 - i pairs; find i from the cumulative counts.
    starts = np.concatenate([[0], np.cumsum(np.arange(n - 1, 0, -1))])
    first = np.searchsorted(starts, ranks, side="right") - 1
    second = ranks - starts[first] + first + 1
    return first, second


def _draw_distinct_pairs(rng, m, side, patch_size, radius, distribution):
    seen = set()
    first, second = [], []
    while len(first) < m:
        need = 2 * (m - len(first)) + 16
        if distribution == "uniform":
            xy = rng.integers(0, side, size=(need, 2, 2))
        else:
            centre = (patch_size - 1) / 2.0 - radius
            xy = np.rint(rng.normal(centre, patch_size / 5.0, size=(need, 2, 2)))
            xy = np.clip(xy, 0, side - 1).astype(np.int64)
        index = xy[..., 1] * side + xy[..., 0]
        for a, b in index:
            key = (min(a, b), max(a, b))
            if a == b or key in seen:
                continue
            seen.add(key)
            first.append(a)
            second.append(b)
            if len(first) == m:
                break
    return np.array(first), np.array(second)
