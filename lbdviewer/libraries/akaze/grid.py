"""The geometry of AKAZE's M-LDB descriptor: three grids of cells (2x2, 3x3, 4x4) and the 486 comparisons between them."""

from __future__ import annotations

import numpy as np

__all__ = ["GRIDS", "N_CHANNELS", "PATTERN_SIZE", "comparison_pairs", "grid_cells"]

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
