r"""AKAZE's 486 measurements of one keypoint as a linear operator on a patch of its level.

The unknown is a square patch of the level's source image ``U`` (see
:mod:`lbdviewer.libraries.akaze.model`). Cell ``c`` averages its in-level
samples with weights :math:`w_c` (``1/n_c`` on each sample, repeated samples
counted twice); its three values are

.. math::

    v_{c,0} = \langle w_c, G_d * U\rangle,\quad
    v_{c,1} = \langle w_c, (-\sin\theta\, D_x + \cos\theta\, D_y) G_1 * U\rangle,\quad
    v_{c,2} = \langle w_c, (\cos\theta\, D_x + \sin\theta\, D_y) G_1 * U\rangle

with ``D_x, D_y`` AKAZE's scaled derivatives, ``G_1`` its 5x5 smoothing
(identity at level 0) and ``G_d`` the Gaussian standing in for the level's
diffusion (identity at level 0). The rows :math:`F` of the 87 functionals are
built once by the adjoints of the filters, :math:`F_{c,0} = G_d^T w_c`,
and so on; measurement ``i`` is :math:`v_{a_i} - v_{b_i}` for the pairs of
:func:`~lbdviewer.libraries.akaze.grid.comparison_pairs`.
"""

from __future__ import annotations

import math

import numpy as np
from lbdviewer.libraries.akaze.grid import comparison_pairs
from lbdviewer.libraries.akaze.scale_space import SMOOTH_SIGMA, derivative_kernels

N_CELLS = 29


def _gaussian(sigma, radius):
    x = np.arange(-radius, radius + 1, dtype=np.float64)
    g = np.exp(-x * x / (2.0 * sigma * sigma))
    return g / g.sum()


class AkazePatchOperator:
    """The measurements of one keypoint, ``(P, P)`` patch to ``(486,)`` differences.

    Parameters
    ----------
    level : int
        Evolution level (index into the source images).
    power : int
        Level pixel size in image pixels, ``2 ** octave``.
    level_shape : (int, int)
        Shape of the level; samples outside it are skipped, as the library does.
    cells, rows, cols : ndarray of int, shape (S,)
        Cell index and rounded level position of every sample.
    co, si : float
        Cosine and sine of the keypoint angle.
    size : int
        Half-width of the derivative kernels.
    diffusion : float
        Sigma of the Gaussian standing in for the level's diffusion (0: none).
    smooth : bool
        Whether the derivatives read ``G_1 * U`` (levels above 0) or ``U``.

    Attributes
    ----------
    origin : (int, int)
        Level ``(row, col)`` of patch pixel ``(0, 0)``.
    functionals : ndarray, shape (87, P * P)

    Examples
    --------
    >>> op = AkazePatchOperator(0, 1, (100, 100), np.arange(29), np.full(29, 50), np.arange(40, 69), 1.0, 0.0, 2, 0.0,
    ...                         smooth=False)
    >>> op.shape, op.functionals.shape[0]
    ((486, 1225), 87)
    """

    def __init__(self, level, power, level_shape, cells, rows, cols, co, si, size, diffusion, *, smooth):
        self.level, self.power, self.level_shape = int(level), int(power), tuple(level_shape)
        inside = (rows >= 0) & (rows < level_shape[0]) & (cols >= 0) & (cols < level_shape[1])
        cells, rows, cols = cells[inside], rows[inside], cols[inside]
        counts = np.bincount(cells, minlength=N_CELLS)
        reach_d = int(math.ceil(3.0 * diffusion)) if diffusion > 0 else 0
        margin = max(reach_d, size + (2 if smooth else 0)) + 1
        top, left = int(rows.min()) - margin, int(cols.min()) - margin
        side = max(int(rows.max()) - top, int(cols.max()) - left) + margin + 1
        self.origin = (top, left)
        self.domain_shape = (side, side)
        self.range_shape = (486,)
        self.shape = (486, side * side)
        self.dtype = np.dtype(np.float64)
        weights = np.zeros((N_CELLS, side, side))
        np.add.at(weights, (cells, rows - top, cols - left), 1.0 / np.maximum(counts[cells], 1))
        intensity = weights if diffusion <= 0 else self._convolve(weights, _gaussian(diffusion, reach_d),
                                                                  _gaussian(diffusion, reach_d))
        g = _gaussian(SMOOTH_SIGMA, 2) if smooth else np.ones(1)
        # D G_1 as one separable filter: each 1-D kernel convolved with G_1's
        dx = self._convolve(weights, *(np.convolve(k, g) for k in derivative_kernels(1, 0, size)))
        dy = self._convolve(weights, *(np.convolve(k, g) for k in derivative_kernels(0, 1, size)))
        functionals = np.empty((N_CELLS, 3, side, side))
        functionals[:, 0] = intensity
        functionals[:, 1] = -si * dx + co * dy
        functionals[:, 2] = co * dx + si * dy
        self.functionals = functionals.reshape(3 * N_CELLS, side * side)
        pairs = comparison_pairs()
        self.differences = np.zeros((3 * N_CELLS, len(pairs)))
        self.differences[pairs[:, 0], np.arange(len(pairs))] = 1.0
        self.differences[pairs[:, 1], np.arange(len(pairs))] = -1.0

    @staticmethod
    def _convolve(images, kernel_x, kernel_y):
        """Adjoint of correlating each image with ``outer(kernel_y, kernel_x)`` (zero outside the patch):
        correlation with the flipped (odd-length) kernels."""
        import cv2

        kx = np.ascontiguousarray(np.asarray(kernel_x, dtype=np.float64)[::-1])
        ky = np.ascontiguousarray(np.asarray(kernel_y, dtype=np.float64)[::-1])
        out = np.empty_like(images)
        for image, filtered in zip(images, out):
            cv2.sepFilter2D(image, cv2.CV_64F, kx, ky, dst=filtered, borderType=cv2.BORDER_CONSTANT)
        return out

    @property
    def m(self):
        """Number of measurements (486)."""
        return self.shape[0]

    def frame_vector(self, index):
        r"""Measurement ``index`` as a ``(P, P)`` image: :math:`F_{a_i} - F_{b_i}` (row ``index`` of the operator).

        Examples
        --------
        >>> op = AkazePatchOperator(0, 1, (100, 100), np.arange(29), np.full(29, 50), np.arange(40, 69), 1.0, 0.0, 2,
        ...                         0.0, smooth=False)
        >>> bool(np.allclose(op.frame_vector(3), op.adjoint(np.eye(486)[3])))
        True
        """
        if isinstance(index, bool) or int(index) != index or not 0 <= index < self.m:
            raise ValueError(f"index must be an integer from 0 to {self.m - 1}, got {index!r}")
        a, b = comparison_pairs()[int(index)]
        return (self.functionals[a] - self.functionals[b]).reshape(self.domain_shape)

    def weight_map(self):
        r"""Total weight each pixel receives, :math:`\sum_i |F_{a_i}| + |F_{b_i}|` (as for a field pattern)."""
        uses = np.bincount(comparison_pairs().ravel(), minlength=3 * N_CELLS).astype(np.float64)
        return (uses @ np.abs(self.functionals)).reshape(self.domain_shape)

    def occurrence_map(self):
        """How many measurements read each pixel (either of their two functionals), ``(P, P)`` int."""
        support = self.functionals != 0
        pairs = comparison_pairs()
        reads = support[pairs[:, 0]] | support[pairs[:, 1]]
        return reads.sum(axis=0).astype(np.int64).reshape(self.domain_shape)

    def cell_values(self, patch):
        """The ``(..., 29, 3)`` cell values of a patch (or batch of patches)."""
        patch = np.asarray(patch, dtype=np.float64)
        flat = patch.reshape(patch.shape[:-2] + (-1,)) @ self.functionals.T
        return flat.reshape(patch.shape[:-2] + (N_CELLS, 3))

    def forward(self, x):
        """Measurements ``v_a - v_b``: ``(..., P, P)`` to ``(..., 486)``."""
        return self.cell_values(x).reshape(np.shape(x)[:-2] + (-1,)) @ self.differences

    def adjoint(self, y):
        """``(..., 486)`` to ``(..., P, P)``."""
        y = np.asarray(y, dtype=np.float64)
        return (y @ self.differences.T @ self.functionals).reshape(y.shape[:-1] + self.domain_shape)

    def extract(self, source):
        """This operator's patch of a level image, replicating the level's edge beyond it."""
        top, left = self.origin
        side = self.domain_shape[0]
        rows = np.clip(np.arange(top, top + side), 0, source.shape[0] - 1)
        cols = np.clip(np.arange(left, left + side), 0, source.shape[1] - 1)
        return np.asarray(source, dtype=np.float64)[np.ix_(rows, cols)]
