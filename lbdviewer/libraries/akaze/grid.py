"""The geometry of AKAZE's M-LDB descriptor: three grids of cells (2x2, 3x3, 4x4) and the 486 comparisons between them."""

from __future__ import annotations

import numpy as np

__all__ = ["GRIDS", "N_CHANNELS", "PATTERN_SIZE", "cell_corners", "comparison_pairs", "grid_cells"]

#: Half the side of the sampled square, in units of the keypoint's scale.
PATTERN_SIZE = 10
#: Cells a side of each grid.
GRIDS = (2, 3, 4)
#: Values a cell: mean intensity, mean x and y derivatives.
N_CHANNELS = 3


def grid_cells(pattern_size=PATTERN_SIZE):
    """The cells of the three grids: ``(grid, i0, j0, step)`` with ``i`` along x, ``j`` along y.

    Examples
    --------
    >>> cells = grid_cells()
    >>> len(cells), cells[0], cells[4]
    (29, (0, -10, -10, 10), (1, -10, -10, 7))
    """
    out = []
    for grid, n in enumerate(GRIDS):
        step = -(-2 * pattern_size // n)
        for i in range(-pattern_size, pattern_size, step):
            for j in range(-pattern_size, pattern_size, step):
                out.append((grid, i, j, step))
    return out


def comparison_pairs():
    """``(486, 2)`` indices into the ``29 * 3`` cell values (cell-major, channel-minor), in bit order.

    Examples
    --------
    >>> pairs = comparison_pairs()
    >>> pairs.shape, pairs[:2].tolist(), pairs[6].tolist()
    ((486, 2), [[0, 3], [0, 6]], [1, 4])
    """
    out, first = [], 0
    for n in GRIDS:
        count = n * n
        for channel in range(N_CHANNELS):
            for i in range(count):
                for j in range(i + 1, count):
                    out.append(((first + i) * N_CHANNELS + channel, (first + j) * N_CHANNELS + channel))
        first += count
    return np.array(out, dtype=np.int64)


def cell_corners(x, y, scale, cos, sin, pattern_size=PATTERN_SIZE):
    r"""Corners ``(x, y)`` of the square each cell samples, turned and scaled as a keypoint's grid.

    Cell ``(grid, i0, j0, step)`` samples the offsets ``k`` in ``[i0, i0 + step)``
    and ``l`` in ``[j0, j0 + step)``; offset ``(k, l)`` sits at

    .. math::

        (x, y) + s\,(k \cos\theta - l \sin\theta,\; l \cos\theta + k \sin\theta)

    (before the library rounds it to a pixel). The square runs half a step
    beyond the first and last offsets, so the cells of a grid tile it.

    Parameters
    ----------
    x, y : float
        The keypoint in its level's pixels.
    scale : float
        Sample spacing ``s`` in level pixels.
    cos, sin : float
        Of the keypoint's angle.
    pattern_size : int

    Returns
    -------
    ndarray, shape (C, 4, 2)
        Per cell of :func:`grid_cells`, its corners in order around the square.

    Examples
    --------
    >>> corners = cell_corners(0.0, 0.0, 1.0, 1.0, 0.0)
    >>> corners.shape, corners[0].tolist()
    ((29, 4, 2), [[-10.5, -10.5], [-0.5, -10.5], [-0.5, -0.5], [-10.5, -0.5]])
    """
    cells = np.array([(i0, j0, step) for _, i0, j0, step in grid_cells(pattern_size)], dtype=np.float64)
    low_k, low_l = cells[:, 0] - 0.5, cells[:, 1] - 0.5
    high_k, high_l = low_k + cells[:, 2], low_l + cells[:, 2]
    k = np.stack([low_k, high_k, high_k, low_k], axis=1)
    l = np.stack([low_l, low_l, high_l, high_l], axis=1)
    return np.stack([x + scale * (k * cos - l * sin), y + scale * (l * cos + k * sin)], axis=-1)
