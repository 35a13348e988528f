"""What the patch view draws of a descriptor's sampling geometry, in view coordinates, without Qt.

An :class:`Overlay` holds, for one pattern (or one keypoint's pattern), the
segment of every measurement (its two ends) and the outline of every field
it compares: a circle of radius sigma for a Gaussian field, the pixel
rectangle a box field averages, the turned square of an AKAZE grid cell.
The canvas draws it (:class:`lbdviewer.gui.canvas.PatchCanvas`); the
geometry comes from the core (:class:`~lbdviewer.patterns.base.Pattern`,
:meth:`lbdviewer.libraries.akaze.model.Model.cell_corners`).

View coordinates: pixel ``(r, c)`` of the patch covers ``[c, c+1] x [r, r+1]``,
so a point ``(x, y)`` of the core (pixel centres at integers) is drawn at
``(x + 1/2, y + 1/2)``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: Points on a drawn circle (plus one to close it).
CIRCLE_POINTS = 32
#: What a field's outline is: a circle of radius sigma, a box's pixels, an AKAZE cell's turned square.
OUTLINE_KINDS = ("circles", "boxes", "cells")


@dataclass(frozen=True)
class Overlay:
    """The geometry of a pattern to draw over its patch.

    Attributes
    ----------
    segments : ndarray, shape (M, 2, 2)
        Measurement ``i`` joins ``segments[i, 0]`` to ``segments[i, 1]``
        (``(x, y)`` in view coordinates): the centres of the two fields it
        compares, the first one the one whose larger value sets the bit.
    outlines : ndarray, shape (F, V, 2)
        Closed outline of each field (its first vertex repeated last).
    pair_fields : ndarray of int, shape (M, 2)
        The two fields (rows of ``outlines``) of each measurement.
    kind : str
        One of :data:`OUTLINE_KINDS`.
    """

    segments: np.ndarray
    outlines: np.ndarray
    pair_fields: np.ndarray
    kind: str

    @property
    def m(self):
        """Number of measurements."""
        return self.segments.shape[0]

    def pairs_xy(self):
        """Every segment's two ends in a row, ``(2 M, 2)``: the input of ``connect="pairs"``."""
        return self.segments.reshape(-1, 2)

    def outlines_xy(self, fields=None):
        """The outlines of ``fields`` (default all) as one polyline ``(n, 2)`` and where it breaks ``(n,)``.

        Examples
        --------
        >>> overlay = box_overlay(np.array([[1.0, 1.0]]), np.array([[0.0, 0.0]]), np.array([[0, 0]]))
        >>> xy, connect = overlay.outlines_xy()
        >>> xy.tolist(), connect.tolist()
        ([[1.0, 1.0], [2.0, 1.0], [2.0, 2.0], [1.0, 2.0], [1.0, 1.0]], [True, True, True, True, False])
        """
        outlines = self.outlines if fields is None else self.outlines[np.asarray(fields, dtype=np.int64)]
        connect = np.ones(outlines.shape[:2], dtype=bool)
        connect[:, -1] = False
        return outlines.reshape(-1, 2), connect.ravel()


def _ring(points=CIRCLE_POINTS):
    angles = np.linspace(0.0, 2.0 * np.pi, points + 1)
    return np.stack([np.cos(angles), np.sin(angles)], axis=1)


def circle_overlay(centers, sigmas, pairs):
    """Gaussian fields as circles of radius sigma around their centres (core coordinates).

    Examples
    --------
    >>> overlay = circle_overlay(np.array([[0.0, 0.0], [4.0, 0.0]]), np.array([1.0, 2.0]), np.array([[1, 0]]))
    >>> overlay.segments.tolist(), overlay.outlines.shape
    ([[[4.5, 0.5], [0.5, 0.5]]], (2, 33, 2))
    """
    centers = np.asarray(centers, dtype=np.float64) + 0.5
    outlines = centers[:, None, :] + np.asarray(sigmas, dtype=np.float64)[:, None, None] * _ring()[None]
    pairs = np.asarray(pairs, dtype=np.int64)
    return Overlay(centers[pairs], outlines, pairs, "circles")


def box_overlay(centers, radii, pairs):
    """Box fields as the rectangles of pixels they average (half-widths ``radii``, (F,) or (F, 2)).

    A box of half-width ``r`` around pixel centre ``x`` covers the pixels
    ``x - r .. x + r``, whose edges lie at ``x - r`` and ``x + r + 1`` in view
    coordinates.

    Examples
    --------
    >>> overlay = box_overlay(np.array([[2.0, 3.0]]), np.array([1.0]), np.array([[0, 0]]))
    >>> overlay.outlines[0].tolist()
    [[1.0, 2.0], [4.0, 2.0], [4.0, 5.0], [1.0, 5.0], [1.0, 2.0]]
    """
    centers = np.asarray(centers, dtype=np.float64)
    radii = np.asarray(radii, dtype=np.float64)
    rx, ry = (radii, radii) if radii.ndim == 1 else (radii[:, 0], radii[:, 1])
    x0, x1 = centers[:, 0] - rx, centers[:, 0] + rx + 1.0
    y0, y1 = centers[:, 1] - ry, centers[:, 1] + ry + 1.0
    outlines = np.stack([np.stack([x0, y0], 1), np.stack([x1, y0], 1), np.stack([x1, y1], 1),
                         np.stack([x0, y1], 1), np.stack([x0, y0], 1)], axis=1)
    pairs = np.asarray(pairs, dtype=np.int64)
    return Overlay((centers + 0.5)[pairs], outlines, pairs, "boxes")


def pattern_overlay(pattern, *, kernel_shapes=False):
    """The overlay of a :class:`~lbdviewer.patterns.base.Pattern`: circles of radius sigma.

    With ``kernel_shapes`` a box field is drawn as the rectangle of pixels it
    averages (a library's exact geometry) rather than as the paper draws its
    receptive fields.

    Examples
    --------
    >>> from lbdviewer.patterns.families import make_pattern
    >>> freak = make_pattern("freak", patch_size=32, m=64)
    >>> overlay = pattern_overlay(freak)
    >>> overlay.kind, overlay.m, overlay.outlines.shape[0], pattern_overlay(freak, kernel_shapes=True).kind
    ('circles', 64, 43, 'boxes')
    """
    if kernel_shapes and pattern.kernel == "box":
        return box_overlay(pattern.centers, pattern.radii, pattern.pairs)
    return circle_overlay(pattern.centers, pattern.sigmas, pattern.pairs)


def cells_overlay(corners, pair_cells):
    """AKAZE's grid cells as turned squares, measurement ``i`` joining the centres of the cells it compares.

    Parameters
    ----------
    corners : ndarray, shape (C, 4, 2)
        Each cell's corners in the patch (core coordinates).
    pair_cells : ndarray of int, shape (M, 2)
        The two cells each measurement compares.

    Examples
    --------
    >>> square = np.array([[[0.0, 0.0], [2.0, 0.0], [2.0, 2.0], [0.0, 2.0]]])
    >>> overlay = cells_overlay(square, np.array([[0, 0]]))
    >>> overlay.segments[0, 0].tolist(), overlay.outlines.shape
    ([1.5, 1.5], (1, 5, 2))
    """
    corners = np.asarray(corners, dtype=np.float64) + 0.5
    outlines = np.concatenate([corners, corners[:, :1]], axis=1)
    pairs = np.asarray(pair_cells, dtype=np.int64)
    return Overlay(corners.mean(axis=1)[pairs], outlines, pairs, "cells")
