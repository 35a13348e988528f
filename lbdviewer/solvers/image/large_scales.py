r"""The large scales: where the bits show one ramp over a whole region, the region is drawn flat.

Bits carry no magnitude, so sign consistency makes contrast out of margins
(:class:`lbdviewer.solvers.image.joint.JointSignConsistency`): every strict
test is asked a difference :math:`\delta_i \propto d_i^2`. In a region lit
unevenly (a whiteboard under a window, paper in a shadow, a sky) every test is
decided by the light, and every one of them asks its margin: the region's
slope must reach :math:`\delta_i / d_i` for its longest tests, and across a
region many patches wide the rises add up. Camera at offset 8 came out with
its sky black at the top; a whiteboard whose light falls from 235 to 120 grey
levels came out with four times the original's spread and its text washed
out (correlation 0.62 and 0.66, BRIEF and FREAK). What the bits say there is
a direction, not a size; this module draws such regions faint.

**A site's ramp.** With :math:`u_i` the unit vector of test :math:`i` and
:math:`w_i \propto d_i^2` (the margins' own weights, so long tests count as
they do in the objective), the ramp a site's bits show is
:math:`g_s \propto \sum_i w_i b_{si} u_i`, and the weighted share of its bits
that ramp explains (a test with :math:`u_i = 0`, between two fields with one
centre, is explained by a tie) is

.. math::  a_s = \sum_i w_i \big[\operatorname{sign}(g_s \cdot u_i) = b_{si}\big].

A clean ramp gives the pattern's own :math:`a^*` (measured on a synthetic
ramp, :func:`clean_ramp_share`: 0.98 BRIEF, 0.99 FREAK), texture about
``TEXTURE_SHARE``. The site's ramp strength is
:math:`\rho_s = \operatorname{clip}((a_s - a_0) / (a^* - a_0), 0, 1)`.

**Regions, not edges.** A straight edge also reads as a clean ramp at the
sites that see it, but only in a band one patch wide; a ramp region holds
every site around it. So a site belongs to a region when the ramps of the
sites within ``REGION_BLUR`` pixels agree: with
:math:`r_s = \operatorname{clip}((\rho_s - t) / (1 - t), 0, 1)`
(:math:`t` = ``RAMP_THRESHOLD``) and :math:`\bar{\,\cdot\,}` a Gaussian
average over neighbouring sites, :math:`R_s = |\overline{r\, \hat g}|_s`
is near 1 inside a region and small at an edge or in texture; the region
weight :math:`e_s = \operatorname{clip}((R_s - R_0) / (1 - R_0), 0, 1)`
(:math:`R_0` = ``REGION_THRESHOLD``) is then spread over ``SPREAD_BLUR``
pixels (text on a lit board sits inside the board's region too), giving each
site a weight :math:`W_s` and a regional direction :math:`G_s`.

**Margins** (:func:`ramp_terms`). A test whose bit the regional ramp explains
(:math:`\operatorname{sign}(G_s \cdot u_i) = b_{si}`) is asked
:math:`1 - \epsilon_s` of its margin, :math:`\epsilon_s` =
``RAMP_RELIEF`` :math:`\cdot \operatorname{clip}(W_s / W_1, 0, 1)`; a test
against it (text, an edge inside the region) keeps its margin. The fused
kernel reads :math:`(\epsilon_s, G_s)` beside the oriented margins
(:meth:`lbdviewer.operators.joint.operator.JointOperator.squared_hinge`).

**Flattening** (:func:`flatten_ramps`). Margins relieved late do not undo a
ramp already drawn: its total variation is its rise times its width,
whatever its slope, and the gradient of the total variation vanishes inside
a monotone ramp, so nothing pulls it down. So at the gate of the joint solve
the estimate's large scales are flattened where the regions are: with
:math:`L = G_{16} x` (``FLATTEN_BLUR``), :math:`m` the region-weighted mean of
:math:`L` over ``REGION_SCALE`` pixels and :math:`v` the pixels' region
weight (:math:`W` per pixel, full at ``FLAT_FULL``),
:math:`x \leftarrow x - v\,(L - m)`; the rest of the solve (with the relieved
margins) redraws the detail on the flat base. Both computations run on a
grid of ``CELL``-pixel cells.

Measured at offset 8, 32x32, M = 512, 300 iterations, BRIEF / FREAK (lines
read by tesseract, both polarities): see
:class:`lbdviewer.solvers.image.joint.JointSignConsistency`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import cv2
import numpy as np
from scipy.ndimage import gaussian_filter

from lbdviewer.solvers.image.orientation import fit_ramps

#: Tests are weighted by (distance between their fields) ** RAMP_SHARE_POWER in a site's ramp fit.
RAMP_SHARE_POWER = 2
#: Weighted share of a site's bits a fitted ramp explains in texture (:math:`a_0`).
TEXTURE_SHARE = 0.75
#: Ramp strength below which a site does not count towards a region (:math:`t`).
RAMP_THRESHOLD = 0.2
#: Pixels over which neighbouring sites' ramps must agree (Gaussian sigma) ...
REGION_BLUR = 64.0
#: ... by at least this resultant (:math:`R_0`) for the sites to form a region ...
REGION_THRESHOLD = 0.3
#: ... whose weight is then spread over this many pixels (Gaussian sigma).
SPREAD_BLUR = 48.0
#: Region weight at which a site's explained tests get the whole relief (:math:`W_1`) ...
RAMP_FULL = 0.2
#: ... which takes this share of their margin away.
RAMP_RELIEF = 0.95
#: Reliefs below this are dropped (a Gaussian's tail reaches every site).
RELIEF_FLOOR = 0.01
#: Region weight at which a pixel's large scales are flattened whole.
FLAT_FULL = 0.15
#: Blur (pixels) that separates the large scales flattened from the detail kept.
FLATTEN_BLUR = 16.0
#: Pixels over which a region's mean is taken (Gaussian sigma).
REGION_SCALE = 256.0
#: Side (pixels) of the cells the region maps are computed on.
CELL = 8


@dataclass(frozen=True)
class RampRegions:
    """Where the bits show one ramp over a region (see the module notes).

    Attributes
    ----------
    weight : ndarray, shape (S,)
        :math:`W_s` in ``[0, 1]``: how far each site lies inside a region.
    direction : ndarray, shape (S, 2)
        :math:`G_s`, the region's unit direction (row, column) at each site
        (zero where no region is near).
    cells : ndarray, shape (ceil(H / CELL), ceil(W / CELL))
        :math:`W` on the cell grid, for :func:`flatten_ramps`.
    """

    weight: np.ndarray
    direction: np.ndarray
    cells: np.ndarray


def _test_weights(pattern):
    """Each test's distance between its fields ** RAMP_SHARE_POWER, summing to 1."""
    step = pattern.centers[pattern.pairs[:, 0]] - pattern.centers[pattern.pairs[:, 1]]
    weights = np.hypot(step[:, 0], step[:, 1]) ** RAMP_SHARE_POWER
    return weights / max(float(weights.sum()), 1e-12)


def weighted_ramp_share(operator, bits):
    r"""Each site's ramp and the length-weighted share of its bits it explains (see the module notes).

    Parameters
    ----------
    operator : lbdviewer.operators.joint.operator.JointOperator
    bits : array_like, shape (S, M)
        Bits in {-1, +1}.

    Returns
    -------
    share : ndarray, shape (S,)
        :math:`a_s` in ``[0, 1]``.
    direction : ndarray, shape (S, 2)
        :math:`\hat g_s` (row, column), a unit vector (zero if the bits cancel).

    Examples
    --------
    A ramp rising along the rows: each site explains nearly all its bits by it
    (float32 rounding decides the few tests across it).

    >>> from lbdviewer.bits import sign_with_ties
    >>> from lbdviewer.operators import JointOperator
    >>> from lbdviewer.patterns import make_pattern
    >>> image = np.linspace(0.0, 1.0, 24)[:, None] * np.ones((24, 24))
    >>> op = JointOperator(image.shape, [[0, 0], [8, 8]], make_pattern("brief", patch_size=16, m=64))
    >>> share, direction = weighted_ramp_share(op, sign_with_ties(op.forward(image), atol=1e-9))
    >>> share.round(2).tolist(), np.abs(direction[:, 0]).round(2).tolist()
    ([0.99, 0.99], [1.0, 1.0])
    """
    return fit_ramps(operator, bits, [_test_weights(pattern) for pattern in operator.patterns])


@lru_cache(maxsize=32)
def _clean_share(pattern):
    from lbdviewer.bits import sign_with_ties
    from lbdviewer.operators.joint.operator import JointOperator

    size = pattern.patch_size
    rows, cols = np.mgrid[0:size, 0:size].astype(np.float64)
    operator = JointOperator((size, size), [[0, 0]], pattern, dtype=np.float64)
    shares = []
    for angle in np.linspace(0.0, np.pi, 8, endpoint=False):
        image = 0.5 + 1e-3 * (np.cos(angle) * rows + np.sin(angle) * cols)
        bits = sign_with_ties(operator.margins(image), tie_positive=operator.tie_positive, atol=1e-12)
        shares.append(weighted_ramp_share(operator, bits)[0][0])
    return float(np.mean(shares))


def clean_ramp_share(pattern):
    """:math:`a^*`: the share :func:`weighted_ramp_share` gives a clean ramp (mean of 8 directions) for ``pattern``.

    Examples
    --------
    >>> from lbdviewer.patterns import make_pattern
    >>> round(clean_ramp_share(make_pattern("brief", patch_size=32, m=512)), 2)
    0.98
    """
    return _clean_share(pattern)


def _cell_shape(shape):
    return (-(-shape[0] // CELL), -(-shape[1] // CELL))


def _site_cells(operator):
    """The cell (row, column) of each site's patch centre."""
    sizes = operator.patch_sizes
    centres = operator.sites + (sizes[:, None] - 1) / 2.0
    return np.clip((centres // CELL).astype(np.int64), 0, np.array(_cell_shape(operator.domain_shape)) - 1)


def _neighbourhood_mean(cells, shape, values, sigma):
    """Gaussian-weighted mean (sigma in pixels) of per-site ``values`` (S, k) around every cell, shape (k, *shape)."""
    counts = np.zeros(shape)
    np.add.at(counts, (cells[:, 0], cells[:, 1]), 1.0)
    norm = gaussian_filter(counts, sigma / CELL, mode="constant")
    out = np.empty((values.shape[1], *shape))
    for k in range(values.shape[1]):
        grid = np.zeros(shape)
        np.add.at(grid, (cells[:, 0], cells[:, 1]), values[:, k])
        out[k] = gaussian_filter(grid, sigma / CELL, mode="constant") / np.maximum(norm, 1e-12)
    return out


def ramp_regions(operator, bits):
    """The regions where the bits show one ramp: each site's weight and the region's direction.

    Parameters
    ----------
    operator : lbdviewer.operators.joint.operator.JointOperator
    bits : array_like, shape (S, M)
        Bits in {-1, +1}.

    Returns
    -------
    RampRegions

    Examples
    --------
    A faint ramp is one region; a straight edge is not:

    >>> from lbdviewer.bits import sign_with_ties
    >>> from lbdviewer.operators import JointOperator
    >>> from lbdviewer.patterns import make_pattern
    >>> from lbdviewer.reconstruction.sites import grid_sites
    >>> pattern = make_pattern("brief", patch_size=32, m=256)
    >>> ramp = 0.4 + 1e-3 * np.arange(160)[:, None] * np.ones((160, 160))
    >>> edge = np.where(np.arange(160)[:, None] < 80, 0.3, 0.7) * np.ones((160, 160))
    >>> weights = []
    >>> for image in (ramp, edge):
    ...     op = JointOperator(image.shape, grid_sites(image.shape, patch_size=32, offset=8), pattern)
    ...     weights.append(ramp_regions(op, sign_with_ties(op.forward(image), atol=1e-9)).weight.mean())
    >>> bool(weights[0] > 0.5), bool(weights[1] < 0.1)
    (True, True)
    """
    share, unit = weighted_ramp_share(operator, bits)
    top = np.array([clean_ramp_share(p) for p in operator.patterns])[operator.site_pattern]
    strength = np.clip((share - TEXTURE_SHARE) / np.maximum(top - TEXTURE_SHARE, 1e-12), 0.0, 1.0)
    ramp = np.clip((strength - RAMP_THRESHOLD) / (1.0 - RAMP_THRESHOLD), 0.0, 1.0)
    cells, shape = _site_cells(operator), _cell_shape(operator.domain_shape)
    local = _neighbourhood_mean(cells, shape, ramp[:, None] * unit, REGION_BLUR)[:, cells[:, 0], cells[:, 1]]
    agreement = np.hypot(local[0], local[1])
    region = np.clip((agreement - REGION_THRESHOLD) / (1.0 - REGION_THRESHOLD), 0.0, 1.0)
    spread = _neighbourhood_mean(cells, shape, np.column_stack([region, region[:, None] * unit]), SPREAD_BLUR)
    weight = np.clip(spread[0][cells[:, 0], cells[:, 1]], 0.0, 1.0)
    direction = spread[1:, cells[:, 0], cells[:, 1]].T
    length = np.hypot(direction[:, 0], direction[:, 1])
    direction = np.where(length[:, None] > 0, direction / np.maximum(length, 1e-12)[:, None], 0.0)
    return RampRegions(weight=weight, direction=direction, cells=np.clip(spread[0], 0.0, 1.0))


def ramp_terms(regions):
    """``(relief, direction)`` of the fused kernel (see the module notes): the orientation's fourth and fifth arrays.

    Examples
    --------
    >>> regions = RampRegions(np.array([0.0, 0.1, 0.5]), np.array([[1.0, 0.0]] * 3), np.zeros((1, 1)))
    >>> ramp_terms(regions)[0].round(3).tolist()
    [0.0, 0.475, 0.95]
    """
    relief = RAMP_RELIEF * np.clip(np.asarray(regions.weight, dtype=np.float64) / RAMP_FULL, 0.0, 1.0)
    relief[relief < RELIEF_FLOOR] = 0.0  # far from every region: the kernel skips blocks of such sites
    return relief, np.asarray(regions.direction, dtype=np.float64)


def _cell_means(image, shape):
    """Means of ``image`` over ``CELL`` x ``CELL`` cells (partial cells at the borders average what they hold)."""
    height, width = image.shape
    padded = np.zeros((shape[0] * CELL, shape[1] * CELL))
    weight = np.zeros_like(padded)
    padded[:height, :width], weight[:height, :width] = image, 1.0
    sums = padded.reshape(shape[0], CELL, shape[1], CELL).sum(axis=(1, 3))
    counts = weight.reshape(shape[0], CELL, shape[1], CELL).sum(axis=(1, 3))
    return sums / np.maximum(counts, 1.0)


def flatten_ramps(x, regions):
    r"""``x`` with its large scales flattened inside the ramp regions (see the module notes).

    Parameters
    ----------
    x : array_like, shape (H, W)
    regions : RampRegions
        Of the sites of ``x``'s image (:func:`ramp_regions`).

    Returns
    -------
    ndarray of float64, shape (H, W)
        :math:`x - v (L - m)`: unchanged where no region is.

    Examples
    --------
    A ramp inside a region comes out flat at its mean; outside, nothing moves:

    >>> ramp = np.linspace(0.2, 0.8, 64)[:, None] * np.ones((64, 64))
    >>> inside = RampRegions(np.ones(1), np.zeros((1, 2)), np.ones((8, 8)))
    >>> outside = RampRegions(np.zeros(1), np.zeros((1, 2)), np.zeros((8, 8)))
    >>> float(np.ptp(flatten_ramps(ramp, inside)[8:-8, 8:-8])) < 0.1, bool(np.all(flatten_ramps(ramp, outside) == ramp))
    (True, True)
    """
    x = np.asarray(x, dtype=np.float64)
    shape = _cell_shape(x.shape)
    if regions.cells.shape != shape:
        raise ValueError(f"regions must be of a {x.shape[0]}x{x.shape[1]} image (cells {shape}), got cells "
                         f"{regions.cells.shape}")
    full = np.clip(regions.cells / FLAT_FULL, 0.0, 1.0)
    if not np.any(full > 0):
        return x
    low = gaussian_filter(_cell_means(x, shape), FLATTEN_BLUR / CELL, mode="nearest")
    norm = gaussian_filter(full, REGION_SCALE / CELL, mode="constant")
    mean = gaussian_filter(full * low, REGION_SCALE / CELL, mode="constant") / np.maximum(norm, 1e-12)
    correction = (full * (low - mean)).astype(np.float32)
    upsampled = cv2.resize(correction, (shape[1] * CELL, shape[0] * CELL), interpolation=cv2.INTER_LINEAR)
    return x - upsampled[:x.shape[0], :x.shape[1]]
