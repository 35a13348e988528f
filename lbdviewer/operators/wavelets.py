"""Orthonormal 2-D Haar transform, full depth, batched over leading axes.

The transform is the classical Mallat pyramid: at every level the current
coarse block is split along the columns (last axis) and then along the rows
into a low-pass (coarse) half and a high-pass (detail) half. A pair of samples
``(u, v)`` gives ``(u + v) / sqrt(2)`` (coarse) and ``(u - v) / sqrt(2)``
(detail). When the block has an odd length along an axis, its last sample has
no partner: it passes to the coarse half unchanged. Every level is therefore an
orthogonal map, and so is the whole transform: ``W^T W = W W^T = I`` for every
shape, not only powers of two. Levels continue until the coarse block is
``1 x 1``; for power-of-two sides that coefficient is ``sqrt(N)`` times the mean.

For square power-of-two shapes the coefficients are, up to sign, those of
``pywt.wavedec2(x, "haar", mode="periodization")`` laid out by
``pywt.coeffs_to_array``.

This module is the one home of the transform: :class:`HaarTransform` (numpy,
batched over leading axes), the numba kernels of one flat image used by the
solvers (:func:`haar_forward_inplace`, :func:`haar_adjoint_inplace`) and of
``LANES`` images interleaved element by element, as the primal-dual fused
path stores them (:func:`haar_forward_lanes`, :func:`haar_adjoint_lanes`).
All follow the same level order and arithmetic.
"""

from __future__ import annotations

import math

import numba
import numpy as np

_INV_SQRT2 = 1.0 / math.sqrt(2.0)
#: Images a lane kernel transforms at once: element ``j`` of image ``k`` sits at ``j * LANES + k``
#: (8 float32: one AVX2 register).
LANES = 8
_LANE_SCALE = np.float32(_INV_SQRT2)  # the lanes are float32


def _level_sizes(shape):
    """Block sizes ``(h, w)`` visited by the pyramid, finest first."""
    h, w = shape
    sizes = []
    while h > 1 or w > 1:
        sizes.append((h, w))
        h = (h + 1) // 2
        w = (w + 1) // 2
    return sizes


def _split(block, axis):
    """One analysis step of ``block`` along ``axis`` (-1 or -2)."""
    n = block.shape[axis]
    pairs = n // 2
    even = np.take(block, np.arange(0, 2 * pairs, 2), axis=axis)
    odd = np.take(block, np.arange(1, 2 * pairs, 2), axis=axis)
    scale = block.dtype.type(_INV_SQRT2)
    low = (even + odd) * scale
    high = (even - odd) * scale
    parts = [low, np.take(block, [n - 1], axis=axis), high] if n % 2 else [low, high]
    return np.concatenate(parts, axis=axis)


def _merge(block, axis):
    """Inverse of :func:`_split` (its transpose, as the step is orthogonal)."""
    n = block.shape[axis]
    pairs = n // 2
    n_low = n - pairs
    low = np.take(block, np.arange(pairs), axis=axis)
    high = np.take(block, np.arange(n_low, n), axis=axis)
    scale = block.dtype.type(_INV_SQRT2)
    out = np.empty_like(block)
    index = [slice(None)] * block.ndim
    index[axis] = slice(0, 2 * pairs, 2)
    out[tuple(index)] = (low + high) * scale
    index[axis] = slice(1, 2 * pairs, 2)
    out[tuple(index)] = (low - high) * scale
    if n % 2:
        index[axis] = slice(n - 1, n)
        out[tuple(index)] = np.take(block, [pairs], axis=axis)
    return out


class HaarTransform:
    r"""Orthonormal full-depth 2-D Haar transform :math:`W` of a fixed shape.

    Parameters
    ----------
    shape : tuple of int
        ``(H, W)`` of the images (``(N,)`` is read as ``(1, N)``: a 1-D
        transform). Every side must be at least 1.

    Attributes
    ----------
    shape : tuple of int
        The domain shape, as given.
    size : int
        Number of coefficients, :math:`N = HW`.

    Raises
    ------
    ValueError
        If ``shape`` has more than two axes or a side smaller than 1.

    Notes
    -----
    :math:`W` is orthogonal, so the adjoint is the inverse,
    :math:`W^T W = W W^T = I`, and :math:`\|Wx\|_2 = \|x\|_2`. Inputs keep
    their floating dtype (float32 stays float32); integers become float64.

    Examples
    --------
    >>> import numpy as np
    >>> haar = HaarTransform((2, 2))
    >>> haar.forward(np.array([[1.0, 1.0], [1.0, 1.0]]))
    array([[2., 0.],
           [0., 0.]])
    >>> x = np.arange(15.0).reshape(3, 5)
    >>> np.allclose(HaarTransform((3, 5)).adjoint(HaarTransform((3, 5)).forward(x)), x)
    True
    """

    def __init__(self, shape):
        shape = tuple(int(s) for s in np.atleast_1d(shape))
        if len(shape) not in (1, 2) or min(shape) < 1:
            raise ValueError(f"shape must be (H, W) or (N,) with sides >= 1, got {shape!r}")
        self.shape = shape
        self._shape2d = shape if len(shape) == 2 else (1, shape[0])
        self.size = int(np.prod(shape))
        self._levels = _level_sizes(self._shape2d)

    @property
    def domain_shape(self):
        """The image shape: the transform maps it to coefficients of the same shape."""
        return self.shape

    range_shape = domain_shape

    def __repr__(self):
        return f"HaarTransform(shape={self.shape!r})"

    def _as_2d(self, x, name):
        x = np.asarray(x)
        if not np.issubdtype(x.dtype, np.floating):
            x = x.astype(np.float64)
        ndim = len(self.shape)
        if x.shape[x.ndim - ndim:] != self.shape or x.ndim < ndim:
            raise ValueError(f"{name} must have shape (..., {self.shape}), got {x.shape}")
        lead = x.shape[: x.ndim - ndim]
        return x.reshape(lead + self._shape2d), x.shape

    def _pyramid(self, values, name, *, merge):
        """All levels, finest first, split columns then rows; or, if ``merge``, their inverse in reverse order."""
        values2, shape = self._as_2d(values, name)
        out = np.array(values2, copy=True)
        step, axes = (_merge, (-2, -1)) if merge else (_split, (-1, -2))
        for h, w in reversed(self._levels) if merge else self._levels:
            block = out[..., :h, :w]
            for axis in axes:
                if block.shape[axis] > 1:
                    block = step(block, axis)
            out[..., :h, :w] = block
        return out.reshape(shape)

    def forward(self, x):
        """Haar coefficients :math:`Wx`, shape ``(..., *shape)``.

        Parameters
        ----------
        x : array_like, shape ``(..., *shape)``
            Images, batched over leading axes.

        Returns
        -------
        numpy.ndarray
            Coefficients in the pyramid layout, same shape and dtype as ``x``.
        """
        return self._pyramid(x, "x", merge=False)

    def adjoint(self, c):
        """Adjoint (= inverse) :math:`W^T c`, shape ``(..., *shape)``.

        Parameters
        ----------
        c : array_like, shape ``(..., *shape)``
            Coefficients in the layout produced by :meth:`forward`.

        Returns
        -------
        numpy.ndarray
            Images, same shape and dtype as ``c``.
        """
        return self._pyramid(c, "c", merge=True)

    inverse = adjoint

    def matrix(self):
        """Dense ``(N, N)`` float64 matrix of :math:`W` (row-major pixels).

        Returns
        -------
        numpy.ndarray
            Orthogonal matrix with ``W @ x.ravel() == forward(x).ravel()``.
        """
        eye = np.eye(self.size).reshape((self.size,) + self.shape)
        return self.forward(eye).reshape(self.size, self.size).T


# --- numba kernels for one image stored flat (row-major), used by the solvers ---


@numba.njit(cache=True, nogil=True, inline="always")
def _pair_offsets(n, merge):
    """Where one Haar step along a side of ``n`` samples reads and writes its pairs.

    Pair ``j`` sits at ``(2j, 2j + 1)`` interleaved and at ``(j, n_low + j)``
    separated (``n_low = n - n // 2``); an odd side's unpaired sample sits at
    ``n - 1`` interleaved and at ``n // 2`` separated. A split reads the
    interleaved places and writes the separated ones, a merge the reverse:
    as ``(u, v) -> ((u + v), (u - v)) / sqrt(2)`` is its own inverse, that is
    the only difference between the two.

    Returns
    -------
    tuple of int
        ``(read_step, read_second, write_step, write_second, read_odd,
        write_odd)``: pair ``j`` is read at ``j * read_step`` and
        ``j * read_step + read_second``, written at ``j * write_step`` and
        ``j * write_step + write_second``; the unpaired sample is read at
        ``read_odd`` and written at ``write_odd``.

    Examples
    --------
    >>> _pair_offsets(5, False), _pair_offsets(5, True)
    ((2, 1, 1, 3, 4, 2), (1, 3, 2, 1, 2, 4))
    """
    pairs = n // 2
    if merge:
        return 1, n - pairs, 2, 1, pairs, n - 1
    return 2, 1, 1, n - pairs, n - 1, pairs


@numba.njit(cache=True, nogil=True, inline="always")
def _butterfly_rows_inplace(a, tmp, h, w, width, scale, merge):
    """Split (``merge`` false) or merge the columns of every row of the top-left ``h x w`` block."""
    read_step, read_second, write_step, write_second, read_odd, write_odd = _pair_offsets(w, merge)
    for r in range(h):
        base = r * width
        for j in range(w // 2):
            u = a[base + j * read_step]
            v = a[base + j * read_step + read_second]
            tmp[j * write_step] = (u + v) * scale
            tmp[j * write_step + write_second] = (u - v) * scale
        if w % 2:
            tmp[write_odd] = a[base + read_odd]
        for j in range(w):
            a[base + j] = tmp[j]


@numba.njit(cache=True, nogil=True, inline="always")
def _butterfly_cols_inplace(a, block, h, w, width, scale, merge):
    """Split (``merge`` false) or merge the rows of every column of the top-left ``h x w`` block.

    ``block`` is ``h * w`` scratch; whole rows at a time, so the inner loops
    run over contiguous memory.
    """
    _butterfly_cols(a, width, block, w, h, w, scale, merge, 1)
    for i in range(h):
        for c in range(w):
            a[i * width + c] = block[i * w + c]


@numba.njit(cache=True)
def haar_forward_inplace(a, tmp, height, width):
    """In-place :meth:`HaarTransform.forward` of one flat ``height x width`` image.

    ``tmp`` is scratch space of at least ``max(height, width)`` elements.
    """
    scale = a.dtype.type(_INV_SQRT2)
    block = np.empty(height * width, dtype=a.dtype)
    h = height
    w = width
    while h > 1 or w > 1:
        if w > 1:
            _butterfly_rows_inplace(a, tmp, h, w, width, scale, False)
        if h > 1:
            _butterfly_cols_inplace(a, block, h, w, width, scale, False)
        h = (h + 1) // 2
        w = (w + 1) // 2


@numba.njit(cache=True, nogil=True)
def level_shapes(height, width):
    """Shapes of the top-left blocks a full-depth Haar transform splits, finest level first.

    Each level halves both sides (rounding up) until the block is 1 x 1.

    Examples
    --------
    >>> heights, widths = level_shapes(5, 3)
    >>> heights.tolist(), widths.tolist()
    ([5, 3, 2], [3, 2, 1])
    """
    n_levels, h, w = 0, height, width
    while h > 1 or w > 1:
        n_levels += 1
        h, w = (h + 1) // 2, (w + 1) // 2
    heights, widths = np.empty(n_levels, dtype=np.int64), np.empty(n_levels, dtype=np.int64)
    h, w = height, width
    for level in range(n_levels):
        heights[level], widths[level] = h, w
        h, w = (h + 1) // 2, (w + 1) // 2
    return heights, widths


@numba.njit(cache=True)
def haar_adjoint_inplace(a, tmp, height, width):
    """In-place :meth:`HaarTransform.adjoint` of one flat ``height x width`` image."""
    scale = a.dtype.type(_INV_SQRT2)
    block = np.empty(height * width, dtype=a.dtype)
    heights, widths = level_shapes(height, width)
    for level in range(heights.shape[0] - 1, -1, -1):
        h, w = heights[level], widths[level]
        if h > 1:
            _butterfly_cols_inplace(a, block, h, w, width, scale, True)
        if w > 1:
            _butterfly_rows_inplace(a, tmp, h, w, width, scale, True)


# --- numba kernels for LANES interleaved flat images (the primal-dual fused path) ---


@numba.njit(cache=True, nogil=True)
def haar_forward_lanes(source, a, block, height, width):
    """``a`` = :func:`haar_forward_inplace` of ``source``, ``LANES`` interleaved images.

    Same levels and arithmetic (bit for bit); each split goes between ``a``
    (``source`` at the first level) and the scratch ``block`` (the current
    ``h x w`` block, rows of ``w``) instead of through a copy.
    """
    h = height
    w = width
    while h > 1 or w > 1:
        if w > 1:
            _butterfly_rows_lanes(source, width, block, w, h, w, False)
        else:
            _copy_block_lanes(source, width, block, w, h, w)
        source = a
        if h > 1:
            _butterfly_cols(block, w, a, width, h, w, _LANE_SCALE, False, LANES)
        else:
            _copy_block_lanes(block, w, a, width, h, w)
        h = (h + 1) // 2
        w = (w + 1) // 2


@numba.njit(cache=True, nogil=True)
def haar_adjoint_lanes(a, block, height, width):
    """In-place :func:`haar_adjoint_inplace` of ``LANES`` interleaved images.

    ``block`` is scratch of the size of ``a``; bit for bit the same arithmetic.
    """
    heights, widths = level_shapes(height, width)
    for level in range(heights.shape[0] - 1, -1, -1):
        h, w = heights[level], widths[level]
        if h > 1:
            _butterfly_cols(a, width, block, w, h, w, _LANE_SCALE, True, LANES)
        else:
            _copy_block_lanes(a, width, block, w, h, w)
        if w > 1:
            _butterfly_rows_lanes(block, w, a, width, h, w, True)
        else:
            _copy_block_lanes(block, w, a, width, h, w)


# The steps of a Haar level below read ``source`` (rows of ``source_width``
# pixels) and write ``target`` (rows of ``target_width``); they transform the
# top-left ``h x w`` block. A pair (u, v) gives ((u + v), (u - v)) / sqrt(2);
# :func:`_pair_offsets` says where, for a split and for a merge.


@numba.njit(cache=True, nogil=True, inline="always")
def _copy_block_lanes(source, source_width, target, target_width, h, w):
    for row in range(h):
        line = source[row * source_width * LANES: (row * source_width + w) * LANES]
        out = target[row * target_width * LANES:]
        for q in range(line.shape[0]):
            out[q] = line[q]


@numba.njit(cache=True, nogil=True, inline="always")
def _butterfly_rows_lanes(source, source_width, target, target_width, h, w, merge):
    """Pairs of columns: split (sums to the left half, differences to the right) or, if ``merge``, its inverse."""
    read_step, read_second, write_step, write_second, read_odd, write_odd = _pair_offsets(w, merge)
    for row in range(h):
        line = row * source_width * LANES
        out = row * target_width * LANES
        for j in range(w // 2):
            first = line + j * read_step * LANES
            second = first + read_second * LANES
            low = out + j * write_step * LANES
            high = low + write_second * LANES
            for k in range(LANES):
                u = source[first + k]
                v = source[second + k]
                target[low + k] = (u + v) * _LANE_SCALE
                target[high + k] = (u - v) * _LANE_SCALE
        if w % 2:
            for k in range(LANES):
                target[out + write_odd * LANES + k] = source[line + read_odd * LANES + k]


@numba.njit(cache=True, nogil=True, inline="always")
def _butterfly_cols(source, source_width, target, target_width, h, w, scale, merge, lanes):
    """Pairs of rows: split (sums to the top half, differences to the bottom) or, if ``merge``, its inverse.

    A pixel is ``lanes`` consecutive values: 1 for one image, ``LANES`` for interleaved images.
    """
    read_step, read_second, write_step, write_second, read_odd, write_odd = _pair_offsets(h, merge)
    size = w * lanes
    source_row = source_width * lanes
    target_row = target_width * lanes
    for i in range(h // 2):
        first = source[i * read_step * source_row:]
        second = source[(i * read_step + read_second) * source_row:]
        low = target[i * write_step * target_row:]
        high = target[(i * write_step + write_second) * target_row:]
        for q in range(size):
            low[q] = (first[q] + second[q]) * scale
            high[q] = (first[q] - second[q]) * scale
    if h % 2:
        odd = source[read_odd * source_row:]
        out = target[write_odd * target_row:]
        for q in range(size):
            out[q] = odd[q]
