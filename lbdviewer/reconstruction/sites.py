"""Where the patches of a whole image sit.

A *site* is the top-left pixel ``(row, col)`` of a square patch that lies
entirely inside the image; sites are int64 arrays of shape ``(S, 2)``. They
come from a regular grid with offset ``N_off`` (the paper's protocol, Sec. 4.1),
from FAST keypoints (OpenCV's detector with its default parameters, the patch
centred on each keypoint; Sec. 4.2), or from the caller (e.g. keypoints read
from a feature file, through :func:`sites_from_points`).
"""

from __future__ import annotations

import cv2
import numpy as np

from lbdviewer._validation import check_int

FAST_THRESHOLD = 10  # OpenCV's FastFeatureDetector defaults
FAST_NONMAX = True


def _check_shape(shape):
    shape = tuple(int(v) for v in shape)
    if len(shape) != 2 or min(shape) < 1:
        raise ValueError(f"shape must be (H, W) with positive sides, got {shape}")
    return shape


def _axis_starts(length, patch_size, offset):
    starts = list(range(0, length - patch_size + 1, offset))
    if starts[-1] != length - patch_size:
        starts.append(length - patch_size)
    return np.array(starts, dtype=np.int64)


def grid_sites(shape, *, patch_size=32, offset=8):
    """Patch sites on a regular grid with spacing ``offset``.

    Rows start at ``0, offset, 2 offset, ...`` while the patch fits; if that
    leaves a strip at the bottom (right) uncovered, one more row (column) of
    patches is added flush with the border, so every pixel is covered.

    Parameters
    ----------
    shape : (int, int)
        Image shape ``(H, W)``; both sides must be at least ``patch_size``.
    patch_size : int
        Patch side ``P``.
    offset : int
        Spacing ``N_off`` between neighbouring patches (``offset = P``: no
        overlap; ``1``: a patch at every pixel).

    Returns
    -------
    ndarray of int64, shape (S, 2)
        ``(row, col)`` of each patch's top-left pixel, row-major order.

    Raises
    ------
    ValueError
        If the image is smaller than a patch or a parameter is not a positive integer.

    Examples
    --------
    >>> grid_sites((64, 64), patch_size=32, offset=32).tolist()
    [[0, 0], [0, 32], [32, 0], [32, 32]]
    >>> grid_sites((40, 32), patch_size=32, offset=32).tolist()
    [[0, 0], [8, 0]]
    """
    height, width = _check_shape(shape)
    patch_size = check_int("patch_size", patch_size, minimum=1)
    offset = check_int("offset", offset, minimum=1)
    if height < patch_size or width < patch_size:
        raise ValueError(f"shape must be at least patch_size={patch_size} on each side, got {(height, width)}")
    rows = _axis_starts(height, patch_size, offset)
    cols = _axis_starts(width, patch_size, offset)
    grid = np.stack(np.meshgrid(rows, cols, indexing="ij"), axis=-1)
    return grid.reshape(-1, 2)


def coarser_grid(sites, *, spacing=8):
    """The sites of a sub-grid at least ``spacing`` pixels apart, when ``sites`` form a denser grid.

    Every ``k``-th row and column of the grid is kept, with ``k`` the
    smallest step that reaches ``spacing``, and the last row and column
    always (they are flush with the border, so the sub-grid covers every
    pixel the grid covers). A coarse solve on these sites is a cheap start
    for a dense one.

    Parameters
    ----------
    sites : array_like of int, shape (S, 2)
    spacing : int

    Returns
    -------
    ndarray of bool, shape (S,), or None
        Which sites to keep; None when the sites are not a full grid (rows x
        columns) or are already at least ``spacing`` apart.

    Examples
    --------
    >>> sites = grid_sites((48, 48), patch_size=32, offset=2)
    >>> keep = coarser_grid(sites, spacing=8)
    >>> sorted(set(sites[keep, 0].tolist()))
    [0, 8, 16]
    >>> coarser_grid(grid_sites((48, 48), patch_size=32, offset=8)) is None
    True
    """
    sites = np.asarray(sites, dtype=np.int64).reshape(-1, 2)
    axes = _full_grid_axes(sites)
    if axes is None:
        return None
    rows, cols = axes
    steps = np.concatenate([np.diff(rows), np.diff(cols)])
    if len(steps) == 0 or steps.min() >= spacing:
        return None
    every = -(-spacing // int(steps.min()))
    kept_rows = np.union1d(rows[::every], rows[-1:])
    kept_cols = np.union1d(cols[::every], cols[-1:])
    return np.isin(sites[:, 0], kept_rows) & np.isin(sites[:, 1], kept_cols)


def is_grid(sites):
    """Whether ``sites`` are a whole regular grid: every pair of its rows and columns, evenly spaced.

    The last row and column may sit closer to the one before (flush with the
    border, as :func:`grid_sites` puts them).

    Examples
    --------
    >>> is_grid(grid_sites((40, 72), patch_size=32, offset=8)), is_grid([[0, 0], [3, 5]])
    (True, False)
    """
    axes = _full_grid_axes(np.asarray(sites, dtype=np.int64).reshape(-1, 2))
    return axes is not None and all(len(np.unique(np.diff(axis)[:-1])) <= 1 for axis in axes)


def _full_grid_axes(sites):
    """The distinct rows and columns of ``(S, 2)`` sites if they hold every pair of them once, else None."""
    rows, cols = np.unique(sites[:, 0]), np.unique(sites[:, 1])
    if len(sites) != len(rows) * len(cols) or len(np.unique(sites, axis=0)) != len(sites):
        return None
    return rows, cols


def sites_from_points(points, shape, *, patch_size=32):
    """Sites of patches centred on points ``(x, y)``; points too near the border are dropped.

    The patch centre ``((P - 1) / 2, (P - 1) / 2)`` is put on the point,
    rounded to whole pixels: ``corner = floor(point - (P - 1) / 2 + 1/2)``.

    Parameters
    ----------
    points : array_like, shape (S, 2)
        Points ``(x, y)`` = (column, row) in pixels, as OpenCV keypoints.
    shape : (int, int)
        Image shape ``(H, W)``.
    patch_size : int
        Patch side ``P``.

    Returns
    -------
    sites : ndarray of int64, shape (S', 2)
        ``(row, col)`` of the patches that fit in the image.
    kept : ndarray of bool, shape (S,)
        Which points gave a site.

    Examples
    --------
    >>> sites, kept = sites_from_points([[20, 16], [2, 2]], (64, 64), patch_size=32)
    >>> sites.tolist(), kept.tolist()
    ([[1, 5]], [True, False])
    """
    height, width = _check_shape(shape)
    patch_size = check_int("patch_size", patch_size, minimum=1)
    points = np.asarray(points, dtype=np.float64).reshape(-1, 2)
    corners = np.floor(points[:, ::-1] - (patch_size - 1) / 2.0 + 0.5).astype(np.int64)
    kept = (
        (corners[:, 0] >= 0)
        & (corners[:, 1] >= 0)
        & (corners[:, 0] + patch_size <= height)
        & (corners[:, 1] + patch_size <= width)
    )
    return corners[kept], kept


def fast_keypoints(image, *, threshold=FAST_THRESHOLD, nonmax_suppression=FAST_NONMAX):
    """FAST corners of a float image in ``[0, 1]`` (OpenCV defaults), as ``(x, y)``.

    The image is quantised to 8 bits first, as OpenCV's detector needs.

    Returns
    -------
    ndarray of float64, shape (K, 2)
        Keypoints ``(x, y)`` sorted by row then column (deterministic).

    Examples
    --------
    >>> noise = np.random.default_rng(0).random((40, 40))
    >>> fast_keypoints(noise).shape[1], len(fast_keypoints(noise)) > 0
    (2, True)
    """
    image = np.asarray(image, dtype=np.float64)
    if image.ndim != 2:
        raise ValueError(f"image must have shape (H, W), got {image.shape}")
    pixels = np.round(np.clip(image, 0.0, 1.0) * 255.0).astype(np.uint8)
    detector = cv2.FastFeatureDetector_create(threshold=int(threshold),
                                              nonmaxSuppression=bool(nonmax_suppression))
    points = np.array([kp.pt for kp in detector.detect(pixels, None)], dtype=np.float64).reshape(-1, 2)
    order = np.lexsort((points[:, 0], points[:, 1]))
    return points[order]


def fast_sites(image, *, patch_size=32, threshold=FAST_THRESHOLD, nonmax_suppression=FAST_NONMAX):
    """Patch sites centred on the FAST keypoints of ``image`` (paper, Figs. 9-10).

    Keypoints whose patch would leave the image are dropped; pixels that no
    patch covers stay uncovered (see :func:`coverage`).

    Returns
    -------
    sites : ndarray of int64, shape (S, 2)
    points : ndarray of float64, shape (S, 2)
        The keypoints ``(x, y)`` that gave the sites.

    Examples
    --------
    >>> noise = np.random.default_rng(0).random((80, 80))
    >>> sites, points = fast_sites(noise, patch_size=16)
    >>> sites.shape == points.shape and len(sites) > 0
    True
    """
    points = fast_keypoints(image, threshold=threshold, nonmax_suppression=nonmax_suppression)
    sites, kept = sites_from_points(points, np.shape(image), patch_size=patch_size)
    return sites, points[kept]


def coverage(shape, sites, patch_sizes):
    """How many patches cover each pixel.

    Parameters
    ----------
    shape : (int, int)
    sites : array_like, shape (S, 2)
    patch_sizes : int or array_like of int, shape (S,)

    Returns
    -------
    ndarray of int32, shape (H, W)
        Zero where no patch reads the pixel (uncovered).

    Examples
    --------
    >>> coverage((4, 4), [[0, 0], [1, 1]], 2)
    array([[1, 1, 0, 0],
           [1, 2, 1, 0],
           [0, 1, 1, 0],
           [0, 0, 0, 0]], dtype=int32)
    """
    height, width = _check_shape(shape)
    sites = np.asarray(sites, dtype=np.int64).reshape(-1, 2)
    sizes = np.broadcast_to(np.asarray(patch_sizes, dtype=np.int64), (len(sites),))
    counts = np.zeros((height + 1, width + 1), dtype=np.int32)
    bottom, right = sites[:, 0] + sizes, sites[:, 1] + sizes
    if len(sites) and (sites.min() < 0 or bottom.max() > height or right.max() > width):
        raise ValueError(f"sites must put every patch inside the {height}x{width} image")
    np.add.at(counts, (sites[:, 0], sites[:, 1]), 1)
    np.add.at(counts, (sites[:, 0], right), -1)
    np.add.at(counts, (bottom, sites[:, 1]), -1)
    np.add.at(counts, (bottom, right), 1)
    return np.cumsum(np.cumsum(counts, axis=0), axis=1)[:height, :width].astype(np.int32)


def site_patches(image, sites, patch_size):
    """The ``(S, P, P)`` patches of ``image`` whose top-left pixels are ``sites`` (row, col); no padding.

    Examples
    --------
    >>> site_patches(np.arange(16.0).reshape(4, 4), [[1, 2]], 2).tolist()
    [[[6.0, 7.0], [10.0, 11.0]]]
    """
    image = np.asarray(image)
    sites = np.asarray(sites, dtype=np.int64).reshape(-1, 2)
    rows = sites[:, 0, None, None] + np.arange(patch_size)[None, :, None]
    cols = sites[:, 1, None, None] + np.arange(patch_size)[None, None, :]
    return image[rows, cols]
