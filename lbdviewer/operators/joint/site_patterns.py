"""The patterns of a joint operator's sites: one table of distinct patterns, and their test directions."""

from __future__ import annotations

import numpy as np

from lbdviewer.patterns.base import Pattern

__all__ = ["index_patterns", "pair_directions"]


def index_patterns(patterns, n_sites):
    """The distinct patterns of the sites and each site's index into them.

    Parameters
    ----------
    patterns : Pattern or sequence of Pattern
        One pattern for every site, or one per site. Patterns are told apart
        by identity, so sites that share a Pattern object share its tables.
    n_sites : int

    Returns
    -------
    unique : list of Pattern
    index : ndarray of int, shape (n_sites,)

    Raises
    ------
    ValueError
        Wrong count or type, or patterns whose ``m`` or tie rule differ.

    Examples
    --------
    >>> from lbdviewer.patterns import make_pattern
    >>> a, b = make_pattern("brief", m=8), make_pattern("freak", m=8)
    >>> unique, index = index_patterns([a, b, a], 3)
    >>> len(unique), index.tolist()
    (2, [0, 1, 0])
    """
    if isinstance(patterns, Pattern):
        return [patterns], np.zeros(n_sites, dtype=np.int64)
    patterns = list(patterns)
    if len(patterns) != n_sites:
        raise ValueError(f"patterns must be one Pattern or one per site ({n_sites}), got {len(patterns)}")
    unique, index, ids = [], np.empty(n_sites, dtype=np.int64), {}
    for s, pattern in enumerate(patterns):
        if not isinstance(pattern, Pattern):
            raise ValueError(f"patterns[{s}] must be a Pattern, got {type(pattern).__name__}")
        if id(pattern) not in ids:
            ids[id(pattern)] = len(unique)
            unique.append(pattern)
        index[s] = ids[id(pattern)]
    if len({p.m for p in unique}) != 1:
        raise ValueError(f"patterns must all have the same m, got {sorted({p.m for p in unique})}")
    if len({bool(p.tie_positive) for p in unique}) != 1:
        raise ValueError("patterns must all have the same tie_positive")
    return unique, index


def pair_directions(patterns, dtype):
    """Unit vector (row, column) from the second field of every test to the first, shape (len(patterns), 2, M).

    Tests between two fields with one centre get the zero vector.

    Examples
    --------
    >>> from lbdviewer.patterns import make_pattern
    >>> pattern = make_pattern("brief", patch_size=8, m=4)
    >>> u = pair_directions([pattern], np.float64)
    >>> u.shape, bool(np.allclose(np.hypot(u[0, 0], u[0, 1]), 1.0))
    ((1, 2, 4), True)
    """
    out = np.zeros((len(patterns), 2, patterns[0].m), dtype=dtype)
    for k, pattern in enumerate(patterns):
        # centres are (x, y): reversed to (row, column)
        step = (pattern.centers[pattern.pairs[:, 0]] - pattern.centers[pattern.pairs[:, 1]])[:, ::-1]
        length = np.hypot(step[:, 0], step[:, 1])
        out[k] = np.where(length[:, None] > 0, step / np.maximum(length, 1e-12)[:, None], 0.0).T
    return out
