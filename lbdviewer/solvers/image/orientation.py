r"""Margins that follow the bits' own ramps: a faint gradient is not drawn steep.

Sign consistency asks every strict test for a margin :math:`\delta_i`
growing with its length (:class:`lbdviewer.solvers.image.joint.JointSignConsistency`).
In a flat region with a faint, consistent gradient (a sky, a wall, paper
under uneven light) every test is decided by the gradient, and so is a test
almost *across* it: the difference it sees is :math:`k\, d \cos\theta` for a
slope :math:`k`, a length :math:`d` and an angle :math:`\theta` to the
gradient, and asking it for the margin of a test along the gradient asks the
region for a slope :math:`k \ge \delta / (d \cos\theta)`: the faint ramp
comes out steep, brighter than the edges around it (camera's sky black at
the top, its coat's folds bright).

**The fit.** A site whose bits are explained by one linear ramp shows it:
with :math:`u_i` the unit vector of test :math:`i` and :math:`b_{si}` the
bits, the ramp's direction is :math:`g_s \propto \sum_i b_{si} u_i`, and the
share of bits it explains,
:math:`a_s = \operatorname{mean}_i [\operatorname{sign}(g_s \cdot u_i) = b_{si}]`,
is 1 for a clean ramp or a straight edge and about 1/2 for texture.

**The margins.** With :math:`\rho_s = \operatorname{clip}((a_s - a_0) / (1 - a_0), 0, 1)^{1/2}`,
:math:`a_0` = ``RAMP_CHANCE`` (the share a fitted direction explains in
texture, by chance and by the fit's own bias), the margin of test :math:`i` at site :math:`s` becomes

.. math::  \delta_{si} = \delta_i \big(1 - \rho_s + \rho_s \cos^2\theta_{si}\big),
           \qquad \cos\theta_{si} = \hat g_s \cdot u_i,

the full margin along the ramp and none across it where the bits are a clean
ramp, unchanged where they are texture. It is passed to the fused kernel as
``(scale, direction) = (1 - \rho_s, \sqrt{\rho_s}\, \hat g_s)``
(:meth:`lbdviewer.operators.joint.operator.JointOperator.squared_hinge`), so it costs two
numbers a site.
"""

from __future__ import annotations

import numba
import numpy as np

#: Share of a site's bits that one fitted ramp explains in texture (:math:`a_0`): 0.5 by chance, more by the
#: fit's own bias. Measured at 300 iterations, offset 8 (correlation): 0.5 loses held-out FREAK (chelsea 0.918,
#: rocket 0.819 against 0.920, 0.836 at 0.65); 0.8 loses camera FREAK (0.757 against 0.818); 0.65 gains over the
#: plain margins on 9 of 10 photo cases (see :class:`lbdviewer.solvers.image.joint.JointSignConsistency`).
RAMP_CHANCE = 0.65
#: Sites whose bits are read ``SITE_CHUNK`` at a time (memory ``O(SITE_CHUNK x M)``).
SITE_CHUNK = 1024


def ramp_orientation(operator, bits):
    r"""Every site's ramp: ``(scale, direction)`` of its oriented margins (see the module notes).

    Parameters
    ----------
    operator : lbdviewer.operators.joint.operator.JointOperator
        Its :attr:`~lbdviewer.operators.joint.operator.JointOperator.test_directions` and site patterns are used.
    bits : array_like, shape (S, M)
        Bits in {-1, +1}.

    Returns
    -------
    scale : ndarray, shape (S,)
        :math:`1 - \rho_s`.
    direction : ndarray, shape (S, 2)
        :math:`\sqrt{\rho_s}\, \hat g_s` (row, column).

    Examples
    --------
    A vertical ramp: every site is nearly one clean ramp along the rows (the
    horizontal tests are ties, and the mean direction of the rest leans a
    little).

    >>> from lbdviewer.operators.joint import JointOperator
    >>> from lbdviewer.bits import sign_with_ties
    >>> from lbdviewer.patterns import make_pattern
    >>> image = np.linspace(0.0, 1.0, 24)[:, None] * np.ones((24, 24))
    >>> op = JointOperator(image.shape, [[0, 0], [8, 8]], make_pattern("brief", patch_size=16, m=64))
    >>> scale, direction = ramp_orientation(op, sign_with_ties(op.forward(image), atol=1e-9))
    >>> scale.round(2).tolist(), np.abs(direction).round(2).tolist()
    ([0.05, 0.05], [[0.98, 0.06], [0.98, 0.06]])
    """
    explained, unit = fit_ramps(operator, bits)
    rho = np.sqrt(np.clip((explained - RAMP_CHANCE) / (1.0 - RAMP_CHANCE), 0.0, 1.0))
    return 1.0 - rho, np.sqrt(rho)[:, None] * unit


def fit_ramps(operator, bits, weights=None):
    r"""Each site's ramp fitted to its bits, and the weighted share of its bits that the ramp explains.

    With :math:`u_i` the unit vector of test :math:`i` (zero for two fields
    with one centre) and :math:`w_i` its weight, the ramp of site :math:`s` is
    :math:`\hat g_s \propto \sum_i w_i b_{si} u_i` and its share
    :math:`\sum_i w_i [\operatorname{sign}(\hat g_s \cdot u_i) = b_{si}] / \sum_i w_i`
    (a test with no direction is never explained). Compiled, a site at a time,
    in double precision (the sums of numpy's matrix products, in another
    order: a share can move by one test where a test lies exactly across
    the ramp).

    Parameters
    ----------
    operator : lbdviewer.operators.joint.operator.JointOperator
    bits : array_like of int, shape (S, M)
        Bits in {-1, +1}.
    weights : sequence of array_like, shape (M,), optional
        One weight vector per pattern of the operator (default all 1).

    Returns
    -------
    share : ndarray, shape (S,)
    direction : ndarray, shape (S, 2)
        :math:`\hat g_s` (row, column), zero where the bits cancel.

    Examples
    --------
    >>> from lbdviewer.operators.joint import JointOperator
    >>> from lbdviewer.patterns import make_pattern

    The bits of a ramp rising along the columns:

    >>> op = JointOperator((16, 16), [[0, 0]], make_pattern("brief", patch_size=16, m=64))
    >>> share, direction = fit_ramps(op, np.where(op.test_directions[0][1] > 0, 1, -1)[None])
    >>> share.round(2).tolist(), direction.round(1).tolist()
    ([0.98], [[0.0, 1.0]])
    """
    bits = np.asarray(bits)
    n_sites = len(operator.site_pattern)
    if bits.shape != (n_sites, operator.m):
        raise ValueError(f"bits must have shape {(n_sites, operator.m)}, got {bits.shape}")
    share, direction = np.zeros(n_sites), np.zeros((n_sites, 2))
    for p, units in enumerate(np.asarray(operator.test_directions, dtype=np.float64)):
        sites = np.flatnonzero(operator.site_pattern == p)
        w = np.ones(operator.m) if weights is None else np.asarray(weights[p], dtype=np.float64)
        for start in range(0, len(sites), SITE_CHUNK):  # bits cast a chunk at a time: an offset-1 grid holds 118 M
            chunk = sites[start:start + SITE_CHUNK]
            share[chunk], direction[chunk] = _fit_ramps(np.ascontiguousarray(bits[chunk], dtype=np.int8),
                                                        np.ascontiguousarray(units), w)
    return share, direction


@numba.njit(cache=True, nogil=True)
def _fit_ramps(bits, units, weights):
    """:func:`fit_ramps` of one pattern's sites: ``bits`` int8 (n, M), ``units`` (2, M), ``weights`` (M,)."""
    n, m = bits.shape
    share, direction = np.zeros(n), np.zeros((n, 2))
    total = 0.0
    for i in range(m):
        total += weights[i]
    for s in range(n):
        row, col = 0.0, 0.0
        for i in range(m):
            row += weights[i] * bits[s, i] * units[0, i]
            col += weights[i] * bits[s, i] * units[1, i]
        length = np.sqrt(row * row + col * col)
        if length > 0.0:
            row, col = row / length, col / length
        else:
            row, col = 0.0, 0.0
        explained = 0.0
        for i in range(m):
            along = row * units[0, i] + col * units[1, i]
            predicted = 1 if along > 0.0 else (-1 if along < 0.0 else 0)
            if predicted == bits[s, i]:
                explained += weights[i]
        share[s] = explained / max(total, 1e-300)
        direction[s, 0], direction[s, 1] = row, col
    return share, direction


#: A site whose bits lean to the side that takes ties by more than this share is read as flat somewhere
#: (exact ties), and its bits of that side ask no margin (see :func:`tie_side`).
TIE_LEAN = 0.6


def tie_side(bits, *, tie_positive=False, lean=TIE_LEAN):
    r"""Share of the margin each site's bits of the side that takes ties are asked: 1, or 0 where they may be ties.

    A bit of the side that takes ties (−1 unless ``tie_positive``) is a
    strict sign or an exact tie, and sign consistency asks it for no margin.
    Exact ties come from flat areas (a clipped black or white region), where
    nearly every test ties and the site's bits lean far to that side; where
    they do not lean past ``lean`` (a share of the bits), the bits of that
    side are read as strict signs and asked the same margin (default ``TIE_LEAN``)
    (:meth:`lbdviewer.operators.joint.operator.JointOperator.squared_hinge`, ``orientation``'s
    third array).

    Examples
    --------
    >>> tie_side(np.array([[1, -1, 1, -1], [-1, -1, -1, 1]])).tolist()
    [1.0, 0.0]
    """
    bits = np.asarray(bits)
    if not 0.5 <= lean <= 1:
        raise ValueError(f"lean must be in [0.5, 1], got {lean!r}")
    leaning = np.mean(bits > 0 if tie_positive else bits < 0, axis=1)
    return (leaning <= lean).astype(np.float64)
