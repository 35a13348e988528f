r"""Euclidean projections onto the validity domains of a reconstructed patch.

The paper's domain is :math:`S = S_1 \cap S_2` with the box
:math:`S_1 = [0, 1]^N` and the hyperplane :math:`S_2 = \{x : \bar x = 0.5\}`.
The paper approximates :math:`P_S` by :math:`P_{S_1} \circ P_{S_2}`; here it is
computed exactly. The KKT conditions of :math:`\min \|x - z\|^2` over :math:`S`
give :math:`x_i = \operatorname{clip}(z_i - \mu, 0, 1)` for the one scalar
:math:`\mu` where :math:`f(\mu) = \sum_i \operatorname{clip}(z_i - \mu, 0, 1) = N\,m`
(:math:`m` the target mean). :math:`f` is continuous, non-increasing and
piecewise linear with breakpoints :math:`z_i` and :math:`z_i - 1`, so
:math:`\mu` is found exactly by sorting the breakpoints (numpy path) or by
a safeguarded Newton iteration that stops when the active set repeats (numba
kernel :func:`mean_box_projection_inplace`).
"""

from __future__ import annotations

import numba
import numpy as np

CONSTRAINTS = ("patch", "box", None)


def check_constraint(constraint):
    """Return ``constraint`` if it is one of :data:`CONSTRAINTS`, else raise.

    Parameters
    ----------
    constraint : {"patch", "box", None}
        ``"patch"``: :math:`[0, 1]^N` with mean 0.5; ``"box"``: :math:`[0, 1]^N`;
        ``None``: no domain (callers may normalise instead).

    Raises
    ------
    ValueError
        If ``constraint`` is anything else.

    Examples
    --------
    >>> check_constraint("box")
    'box'
    """
    if constraint not in CONSTRAINTS:
        raise ValueError(f"constraint must be one of {CONSTRAINTS}, got {constraint!r}")
    return constraint


def project_box(x, *, lower=0.0, upper=1.0):
    """Projection onto the box :math:`[lower, upper]^N` (a clip), dtype kept.

    Parameters
    ----------
    x : array_like
        Any shape.
    lower, upper : float
        Bounds, ``lower <= upper``.

    Returns
    -------
    numpy.ndarray
        ``clip(x, lower, upper)``.

    Examples
    --------
    >>> project_box([-0.5, 0.25, 2.0])
    array([0.  , 0.25, 1.  ])
    """
    x = np.asarray(x)
    if not np.issubdtype(x.dtype, np.floating):
        x = x.astype(np.float64)
    if not lower <= upper:
        raise ValueError(f"lower must be <= upper, got lower={lower!r}, upper={upper!r}")
    return np.clip(x, x.dtype.type(lower), x.dtype.type(upper))


def _mean_box_shift(z, target_sum):
    """Exact :math:`\\mu` per row of ``z`` (B, N) by sorted breakpoints, float64."""
    n_rows, n = z.shape
    # Breakpoints in increasing mu: at z_i - 1 entry i leaves the upper bound
    # (slope of f drops by 1), at z_i it reaches the lower bound (slope back up).
    points = np.concatenate([z - 1.0, z], axis=1)
    slopes = np.concatenate([-np.ones_like(z), np.ones_like(z)], axis=1)
    order = np.argsort(points, axis=1, kind="stable")
    points = np.take_along_axis(points, order, axis=1)
    slopes = np.take_along_axis(slopes, order, axis=1)
    # f(points[k]) for all k: f = n left of the first breakpoint, then linear.
    slope_after = np.cumsum(slopes, axis=1)  # slope of f right of breakpoint k
    gaps = np.diff(points, axis=1)
    values = np.empty_like(points)
    values[:, 0] = n
    values[:, 1:] = n + np.cumsum(slope_after[:, :-1] * gaps, axis=1)
    # First breakpoint where f <= target: the root lies just left of it.
    k = np.argmax(values <= target_sum[:, None], axis=1)
    rows = np.arange(n_rows)
    k = np.maximum(k, 1)
    left, right = points[rows, k - 1], points[rows, k]
    f_left, f_right = values[rows, k - 1], values[rows, k]
    span = f_left - f_right
    fraction = np.divide(f_left - target_sum, span, out=np.zeros_like(span), where=span > 0)
    return left + fraction * (right - left)


def project_mean_box(x, *, mean=0.5, ndim=2):
    r"""Exact Euclidean projection onto :math:`\{x \in [0,1]^N : \bar x = m\}`.

    Each block of the last ``ndim`` axes (a patch) is projected on its own.

    Parameters
    ----------
    x : array_like, shape ``(..., *patch_shape)``
        Points to project; ``patch_shape`` has ``ndim`` axes.
    mean : float
        Target mean :math:`m` in ``[0, 1]``.
    ndim : int
        Number of trailing axes forming one patch (2 for ``(P, P)`` patches,
        1 for flat rows).

    Returns
    -------
    numpy.ndarray
        Same shape and floating dtype as ``x``.

    Raises
    ------
    ValueError
        If ``mean`` is outside ``[0, 1]`` or ``ndim`` does not fit ``x``.

    Notes
    -----
    :math:`P_S(z)_i = \operatorname{clip}(z_i - \mu, 0, 1)` with :math:`\mu`
    the unique root (any root gives the same point) of the piecewise-linear
    :math:`f(\mu) = \sum_i \operatorname{clip}(z_i - \mu, 0, 1) - N m`, found
    exactly by sorting its :math:`2N` breakpoints. Cost
    :math:`O(N \log N)` per patch.

    Examples
    --------
    >>> project_mean_box([[0.0, 0.2, 2.0]], ndim=1)
    array([[0.15, 0.35, 1.  ]])
    """
    x = np.asarray(x)
    if not np.issubdtype(x.dtype, np.floating):
        x = x.astype(np.float64)
    if not 0.0 <= mean <= 1.0:
        raise ValueError(f"mean must be in [0, 1], got {mean!r}")
    if not 1 <= ndim <= x.ndim:
        raise ValueError(f"ndim must be between 1 and x.ndim={x.ndim}, got {ndim!r}")
    n = int(np.prod(x.shape[x.ndim - ndim:]))
    flat = x.reshape(-1, n).astype(np.float64)
    if flat.shape[0] == 0:
        return x.copy()
    target = np.full(flat.shape[0], mean * n)
    mu = _mean_box_shift(flat, target)
    out = np.clip(flat - mu[:, None], 0.0, 1.0)
    return out.astype(x.dtype, copy=False).reshape(x.shape)


def project(x, constraint, *, ndim=2):
    """Project ``x`` onto the domain named by ``constraint``.

    Parameters
    ----------
    x : array_like, shape ``(..., *patch_shape)``
        Points to project.
    constraint : {"patch", "box", None}
        ``"patch"`` calls :func:`project_mean_box` (mean 0.5), ``"box"`` calls
        :func:`project_box`, ``None`` returns ``x`` unchanged (as an array).
    ndim : int
        Trailing axes forming one patch (used by ``"patch"``).

    Returns
    -------
    numpy.ndarray
        The projection.

    Examples
    --------
    >>> project([[2.0, 0.0]], "patch", ndim=1)
    array([[1., 0.]])
    """
    check_constraint(constraint)
    if constraint == "patch":
        return project_mean_box(x, ndim=ndim)
    if constraint == "box":
        return project_box(x)
    return np.asarray(x)


@numba.njit(cache=True, nogil=True)
def mean_box_projection_inplace(z, mean, guess=np.nan):
    """Project one flat vector ``z`` in place onto ``[0,1]^N`` with mean ``mean``; return the shift.

    Safeguarded Newton on the piecewise-linear :math:`f(\\mu)`: each Newton step
    lands on the root of the current linear piece, so the iteration stops,
    exactly, once the active set repeats; bisection on the bracket guards
    against cycling. Accumulations are in float64. ``guess`` (e.g. the shift
    returned for the previous iterate of a solver) starts the iteration when
    it lies in the bracket; else it starts from the mean.
    """
    n = z.shape[0]
    target = mean * n
    lo = np.inf
    hi = -np.inf
    total = 0.0
    for i in range(n):
        v = np.float64(z[i])
        total += v
        lo = min(lo, v - 1.0)
        hi = max(hi, v)
    mu = total / n - mean
    if lo <= guess <= hi:
        mu = guess
    for _ in range(200):
        n_upper = 0
        n_active = 0
        active_sum = 0.0
        for i in range(n):
            d = np.float64(z[i]) - mu
            if d >= 1.0:
                n_upper += 1
            elif d > 0.0:
                n_active += 1
                active_sum += np.float64(z[i])
        f = n_upper + active_sum - mu * n_active - target
        if f == 0.0:
            break
        if f > 0.0:
            lo = max(lo, mu)
        else:
            hi = min(hi, mu)
        if n_active > 0:
            new_mu = (n_upper + active_sum - target) / n_active
        else:
            new_mu = 0.5 * (lo + hi)
        if not (lo <= new_mu <= hi):
            new_mu = 0.5 * (lo + hi)
        if new_mu == mu or hi - lo <= 1e-15 * max(1.0, abs(mu)):
            mu = new_mu
            break
        mu = new_mu
    for i in range(n):
        d = np.float64(z[i]) - mu
        z[i] = min(max(d, 0.0), 1.0)
    return mu
