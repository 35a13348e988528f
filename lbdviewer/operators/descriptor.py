"""The sensing operator ``L`` of a local binary descriptor.

Row ``i`` of ``L`` is ``G_a - G_b``: the difference of the two unit-L1 kernels
that measurement ``i`` compares (eq. (2) of the paper). The operator factors as
``L = D K`` with ``K`` (F x N) the field kernels and ``D`` (M x F) holding one
``+1`` and one ``-1`` per row, which the fast back-ends exploit:

``"dense"``
    the explicit ``M x N`` matrix (the slow, obviously correct reference);
``"sparse"``
    ``L`` as a CSR matrix (BRIEF: 18 non-zeros a row);
``"fields"``
    the ``F`` field means by one small GEMM, then differences (FREAK: 43
    fields for 512 or 903 measurements);
``"integral"``
    box fields read from an integral image, 4 look-ups a field, as the paper's
    C++ and OpenCV's FREAK do: ``L x = D C cumsum2d(x)``.

All back-ends compute the same linear map; the tests check each against the
dense matrix and with the dot test.
"""

from __future__ import annotations

from functools import cached_property

import numba
import numpy as np
from scipy import sparse

from lbdviewer._validation import check_choice, check_finite_array
from lbdviewer.bits import pack_bits, sign_with_ties
from lbdviewer.operators.linear import power_norm
from lbdviewer.patterns.base import KERNELS, Pattern

OPERATOR_BACKENDS = ("auto", "dense", "sparse", "fields", "integral")
_SUPPORT_SLACK = 1e-9


@numba.njit(cache=True, nogil=True)
def _support(center, radius, size):
    """Inclusive pixel range ``(low, high)`` a field reads along one axis, clipped to the patch."""
    low = np.ceil(center - radius - _SUPPORT_SLACK)
    high = np.floor(center + radius + _SUPPORT_SLACK)
    if low > high:  # narrower than a pixel: read the nearest pixel
        low = high = np.floor(center + 0.5)
    return max(np.int64(low), 0), min(np.int64(high), size - 1)


@numba.njit(cache=True, nogil=True)
def _bounds_and_starts(centers, radii_x, radii_y, sizes, bounds, entry_start):
    """Fill each field's bounds and the start of its entries; return the first field that reads no pixel, or -1."""
    entry_start[0] = 0
    for f in range(centers.shape[0]):
        x0, x1 = _support(centers[f, 0], radii_x[f], sizes[f])
        y0, y1 = _support(centers[f, 1], radii_y[f], sizes[f])
        if x0 > x1 or y0 > y1:
            return f
        bounds[f, 0], bounds[f, 1], bounds[f, 2], bounds[f, 3] = x0, x1, y0, y1
        entry_start[f + 1] = entry_start[f] + (x1 - x0 + 1) * (y1 - y0 + 1)
    return -1


def _all_bounds(patterns):
    """Bounds ``(F, 4)``, entry starts ``(F + 1,)``, centres ``(F, 2)`` and patch sizes ``(F,)`` of all fields."""
    n_fields = [pattern.n_fields for pattern in patterns]
    centers = np.concatenate([pattern.centers for pattern in patterns])
    radii = [(pattern.radii, pattern.radii) if pattern.radii.ndim == 1 else pattern.radii.T for pattern in patterns]
    radii_x = np.concatenate([radius[0] for radius in radii])
    radii_y = np.concatenate([radius[1] for radius in radii])
    sizes = np.repeat(np.array([pattern.patch_size for pattern in patterns], dtype=np.int64), n_fields)
    bounds = np.empty((len(sizes), 4), dtype=np.int64)
    entry_start = np.empty(len(sizes) + 1, dtype=np.int64)
    empty = _bounds_and_starts(centers, radii_x, radii_y, sizes, bounds, entry_start)
    if empty >= 0:
        p = int(np.searchsorted(np.cumsum(n_fields), empty, side="right"))
        pattern, index = patterns[p], empty - sum(n_fields[:p])
        x, y = pattern.centers[index]
        where = f" (patterns[{p}])" if len(patterns) > 1 else ""
        raise ValueError(
            f"field {index} of pattern {pattern.name!r}{where} at ({x:.2f}, {y:.2f}) "
            f"reads no pixel of the {pattern.patch_size}x{pattern.patch_size} patch"
        )
    return bounds, entry_start, centers, sizes


def field_bounds(pattern):
    """Inclusive pixel bounds ``(x0, x1, y0, y1)`` of each field inside the patch.

    A field narrower than a pixel reads its nearest pixel.

    Raises
    ------
    ValueError
        If a field reads no pixel of the patch.

    Examples
    --------
    >>> from lbdviewer.patterns import make_pattern
    >>> field_bounds(make_pattern("brief", patch_size=8, m=4)).shape
    (8, 4)
    """
    return _all_bounds([pattern])[0]


@numba.njit(cache=True, nogil=True)
def _entry_exponents(bounds, centers, sigmas, sizes, gaussian, entry_start, pixels, exponents):
    """Each field's pixels, row-major, and the exponent of its Gaussian weight there (0 for a box)."""
    for f in range(bounds.shape[0]):
        x0, x1, y0, y1 = bounds[f, 0], bounds[f, 1], bounds[f, 2], bounds[f, 3]
        e = entry_start[f]
        for y in range(y0, y1 + 1):
            for x in range(x0, x1 + 1):
                pixels[e] = y * sizes[f] + x
                if gaussian[f]:
                    dx, dy = x - centers[f, 0], y - centers[f, 1]
                    exponents[e] = -(dx * dx + dy * dy) / (2.0 * (sigmas[f] * sigmas[f]))
                else:
                    exponents[e] = 0.0
                e += 1


@numba.njit(cache=True, nogil=True)
def _normalise_fields(entry_start, weights):
    """Divide each field's weights by their sum, summed in entry order."""
    for f in range(entry_start.shape[0] - 1):
        total = 0.0
        for e in range(entry_start[f], entry_start[f + 1]):
            total += weights[e]
        for e in range(entry_start[f], entry_start[f + 1]):
            weights[e] /= total


def field_entries(patterns, *, kernel=None):
    """The non-zeros of the field kernels of many patterns, all fields at once.

    The fields of all patterns are numbered through the patterns in order;
    field ``f`` holds exactly the entries of its row of :func:`field_kernels`,
    in the same order (its pixels row-major).

    Parameters
    ----------
    patterns : sequence of Pattern
        At least one.
    kernel : {"gaussian", "box"} or None
        Field kernel of every pattern; None: each pattern's own.

    Returns
    -------
    entry_start : ndarray of int64, shape (F + 1,)
        Entries of field ``f``: ``entry_start[f]:entry_start[f + 1]``, at least one.
    pixels : ndarray of int32, shape (E,)
        Row-major index of each entry's pixel in its patch.
    weights : ndarray of float64, shape (E,)
        Each field's weights sum to 1.

    Raises
    ------
    ValueError
        If a field reads no pixel of its patch (the message names the field
        and the pattern, and its position in ``patterns``).

    Examples
    --------
    >>> from lbdviewer.patterns import make_pattern
    >>> brief = make_pattern("brief", patch_size=8, m=4)
    >>> start, pixels, weights = field_entries([brief, brief.transformed(angle=30)])
    >>> start.shape, np.allclose(np.add.reduceat(weights, start[:-1]), 1)
    ((17,), True)
    """
    if kernel is not None and kernel not in KERNELS:
        raise ValueError(f"kernel must be one of {KERNELS} or None, got {kernel!r}")
    if len(patterns) == 0:
        raise ValueError("patterns must hold at least one Pattern")
    bounds, entry_start, centers, sizes = _all_bounds(patterns)
    sigmas = np.concatenate([pattern.sigmas for pattern in patterns])
    gaussian = np.repeat([(kernel or pattern.kernel) == "gaussian" for pattern in patterns],
                         [pattern.n_fields for pattern in patterns])
    pixels = np.empty(entry_start[-1], dtype=np.int32)
    weights = np.empty(entry_start[-1])
    _entry_exponents(bounds, centers, sigmas, sizes, gaussian, entry_start, pixels, weights)
    np.exp(weights, out=weights)
    _normalise_fields(entry_start, weights)
    return entry_start, pixels, weights


def field_kernels(pattern, kernel):
    """The field kernels as a CSR matrix ``K`` (F x N), each row of unit L1 norm.

    Parameters
    ----------
    pattern : Pattern
    kernel : {"gaussian", "box"}

    Returns
    -------
    scipy.sparse.csr_matrix, float64
        Row ``f`` holds field ``f``'s pixels in row-major order (see
        :func:`field_entries`, which computes many patterns at once).

    Examples
    --------
    >>> from lbdviewer.patterns import make_pattern
    >>> K = field_kernels(make_pattern("brief", patch_size=8, m=4), "gaussian")
    >>> K.shape, np.allclose(abs(K).sum(axis=1), 1)
    ((8, 64), True)
    """
    check_choice("kernel", kernel, KERNELS)
    entry_start, pixels, weights = field_entries([pattern], kernel=kernel)
    return sparse.csr_matrix((weights, pixels, entry_start), shape=(pattern.n_fields, pattern.n))


def pair_differences(pattern):
    """The CSR matrix ``D`` (M x F) with ``+1`` at ``pairs[i, 0]`` and ``-1`` at ``pairs[i, 1]``.

    A pair of a field with itself gives an empty row (a measurement that is
    always zero).
    """
    m = pattern.m
    rows = np.repeat(np.arange(m), 2)
    cols = pattern.pairs.ravel()
    vals = np.tile([1.0, -1.0], m)
    return sparse.csr_matrix((vals, (rows, cols)), shape=(m, pattern.n_fields))


def _integral_corners(pattern, bounds):
    """CSR matrix ``C`` (F x (P+1)^2): each box mean from 4 integral-image corners."""
    side = pattern.patch_size + 1
    x0, x1, y0, y1 = bounds.T
    area = (x1 - x0 + 1) * (y1 - y0 + 1)
    # S[y, x] = sum of x_img[:y, :x]; box sum = S[y1+1,x1+1] - S[y0,x1+1] - S[y1+1,x0] + S[y0,x0]
    corners = np.stack(
        [(y1 + 1) * side + x1 + 1, y0 * side + x1 + 1, (y1 + 1) * side + x0, y0 * side + x0], axis=1
    )
    signs = np.array([1.0, -1.0, -1.0, 1.0])
    rows = np.repeat(np.arange(pattern.n_fields), 4)
    vals = (signs[None, :] / area[:, None]).ravel()
    return sparse.csr_matrix((vals, (rows, corners.ravel())), shape=(pattern.n_fields, side * side))


class DescriptorOperator:
    """The linear map ``L`` from a patch to its ``M`` descriptor measurements.

    Parameters
    ----------
    pattern : Pattern
        Receptive fields and pairs.
    kernel : {"gaussian", "box"}, optional
        Field kernel shape; default ``pattern.kernel``.
    backend : {"auto", "dense", "sparse", "fields", "integral"}
        How to compute (see the module notes); ``"integral"`` needs box
        kernels. ``"auto"`` picks the cheapest for the pattern.
    dtype : numpy dtype
        Working precision of :meth:`forward` and :meth:`adjoint`.

    Notes
    -----
    ``(L x)_i = <G_{q_i, s_i} - G_{q'_i, s'_i}, x>`` with unit-L1 kernels, so a
    constant patch gives 0 and ``|(L x)_i| <= max(x) - min(x)``.

    Examples
    --------
    >>> from lbdviewer.patterns import make_pattern
    >>> op = DescriptorOperator(make_pattern("freak", patch_size=32))
    >>> op.shape, bool(np.abs(op.forward(np.full((32, 32), 0.7))).max() < 1e-6)
    ((512, 1024), True)
    >>> x = np.random.default_rng(0).random((2, 32, 32))
    >>> op.describe(x).shape
    (2, 512)
    """

    def __init__(self, pattern, *, kernel=None, backend="auto", dtype=np.float32):
        if not isinstance(pattern, Pattern):
            raise ValueError(f"pattern must be a Pattern, got {type(pattern).__name__}")
        kernel = pattern.kernel if kernel is None else kernel
        check_choice("kernel", kernel, KERNELS)
        check_choice("backend", backend, OPERATOR_BACKENDS)
        if backend == "integral" and kernel != "box":
            raise ValueError(f"backend 'integral' needs box kernels, got kernel={kernel!r}")
        self.pattern = pattern
        self.kernel = kernel
        self.dtype = np.dtype(dtype)
        self._bounds = field_bounds(pattern)
        self._kernels = field_kernels(pattern, kernel)
        self._pairs = pair_differences(pattern)
        self.backend = self._choose_backend() if backend == "auto" else backend
        self._setup_backend()

    # -- shapes -----------------------------------------------------------
    @property
    def thresholds(self):
        """Per-measurement thresholds ``t`` (bits are ``sign(L x - t)``), float64 (M,)."""
        return self.pattern.thresholds

    @property
    def shape(self):
        """``(M, N)``."""
        return (self.pattern.m, self.pattern.n)

    @property
    def m(self):
        return self.pattern.m

    @property
    def n(self):
        return self.pattern.n

    @property
    def patch_shape(self):
        """``(P, P)``: the shape :meth:`forward` expects in its last two axes."""
        return (self.pattern.patch_size, self.pattern.patch_size)

    domain_shape = patch_shape

    @property
    def range_shape(self):
        """``(M,)``: the shape :meth:`forward` returns in its last axis."""
        return (self.pattern.m,)

    def __repr__(self):
        return (
            f"DescriptorOperator({self.pattern.name!r}, P={self.pattern.patch_size}, "
            f"M={self.m}, kernel={self.kernel!r}, backend={self.backend!r})"
        )

    # -- back-ends --------------------------------------------------------
    def _choose_backend(self):
        # Measured on 1024 32x32 patches (forward + adjoint, float32, 2 cores):
        # FREAK "fields" 11 ms < dense 15 < sparse 33 < integral 56; BRIEF dense
        # 16 ms < sparse 20. Sparse wins once L is under ~1 % full (large patches).
        if self.pattern.n_fields < self.m:
            return "fields"
        if (self._pairs @ self._kernels).nnz <= 0.01 * self.m * self.n:
            return "sparse"
        return "dense"

    def _setup_backend(self):
        dtype = self.dtype
        self._first = self.pattern.pairs[:, 0]
        self._second = self.pattern.pairs[:, 1]
        self._pairs_t = self._pairs.T.tocsr().astype(dtype)
        if self.backend == "dense":
            self._dense = (self._pairs @ self._kernels).toarray().astype(dtype)
        elif self.backend == "sparse":
            product = (self._pairs @ self._kernels).tocsr()
            self._sparse = product.astype(dtype)
            self._sparse_t = product.T.tocsr().astype(dtype)
        elif self.backend == "fields":
            self._fields = np.ascontiguousarray(self._kernels.toarray().astype(dtype))
        else:
            corners = _integral_corners(self.pattern, self._bounds)
            self._corners = corners.astype(dtype)
            self._corners_t = corners.T.tocsr().astype(dtype)

    def _flatten(self, x, trailing, name):
        x = np.asarray(x)
        if x.shape[x.ndim - len(trailing):] != trailing or x.ndim < len(trailing):
            raise ValueError(f"{name} must have shape (..., {', '.join(map(str, trailing))}), got {x.shape}")
        lead = x.shape[: x.ndim - len(trailing)]
        return x.reshape(-1, int(np.prod(trailing))).astype(self.dtype, copy=False), lead

    def _field_means(self, flat):
        if self.backend == "fields":
            return flat @ self._fields.T
        size = self.pattern.patch_size
        images = flat.reshape(-1, size, size)
        integral = np.zeros((images.shape[0], size + 1, size + 1), dtype=self.dtype)
        np.cumsum(np.cumsum(images, axis=1), axis=2, out=integral[:, 1:, 1:])
        return (self._corners @ integral.reshape(images.shape[0], -1).T).T

    def _field_adjoint(self, weights):
        if self.backend == "fields":
            return weights @ self._fields
        size = self.pattern.patch_size
        corner_weights = (self._corners_t @ weights.T).T.reshape(-1, size + 1, size + 1)
        # Adjoint of "cumsum over rows then columns, shifted by one": reversed cumsums.
        tail = corner_weights[:, 1:, 1:]
        back = np.flip(np.cumsum(np.flip(tail, axis=(1, 2)), axis=1), axis=(1, 2))
        back = np.flip(np.cumsum(np.flip(back, axis=2), axis=2), axis=2)
        return back.reshape(weights.shape[0], -1)

    def forward(self, x):
        """Measurements ``L x``.

        Parameters
        ----------
        x : array_like, shape (..., P, P)

        Returns
        -------
        ndarray, shape (..., M), in ``self.dtype``
        """
        flat, lead = self._flatten(x, self.patch_shape, "x")
        if self.backend == "dense":
            out = flat @ self._dense.T
        elif self.backend == "sparse":
            out = (self._sparse @ flat.T).T
        else:
            means = self._field_means(flat)
            out = means[:, self._first] - means[:, self._second]
        return np.ascontiguousarray(out).reshape(*lead, self.m)

    def adjoint(self, y):
        """Back-projection ``L^T y``.

        Parameters
        ----------
        y : array_like, shape (..., M)

        Returns
        -------
        ndarray, shape (..., P, P), in ``self.dtype``
        """
        flat, lead = self._flatten(y, (self.m,), "y")
        if self.backend == "dense":
            out = flat @ self._dense
        elif self.backend == "sparse":
            out = (self._sparse_t @ flat.T).T
        else:
            out = self._field_adjoint((self._pairs_t @ flat.T).T)
        return np.ascontiguousarray(out).reshape(*lead, *self.patch_shape)

    # -- descriptors ------------------------------------------------------
    def describe(self, patches, *, binary=True, packed=False, atol=1e-9):
        """The descriptor of each patch, computed in float64.

        Parameters
        ----------
        patches : array_like, shape (..., P, P)
        binary : bool
            ``True``: bits ``sign(L p - t)`` in {-1, +1} (int8) with the
            pattern's thresholds ``t`` and tie rule; ``False``: the real
            measurements ``L p`` (float64).
        packed : bool
            Bits packed 8 a byte (:func:`lbdviewer.bits.pack_bits`, least
            significant first), the encoding
            :func:`lbdviewer.reconstruction.image.describe_sites` also takes.
            Binary only.
        atol : float
            Values of ``L p - t`` within ``atol`` of zero are ties.

        Returns
        -------
        ndarray, shape (..., M), or uint8 (..., ceil(M / 8)) with ``packed``

        Raises
        ------
        ValueError
            If ``patches`` has another shape, or holds NaN, None or
            infinities, or ``packed`` is asked for real values.
        """
        if packed and not binary:
            raise ValueError("packed=True needs binary=True: real measurements are not packed")
        patches = check_finite_array("patches", patches)
        if patches.shape[-2:] != self.patch_shape:
            raise ValueError(f"patches must have shape (..., {self.patch_shape[0]}, {self.patch_shape[1]}), got {patches.shape}")
        lead = patches.shape[:-2]
        means = (self._kernels @ patches.reshape(-1, self.n).T).T
        values = (means[:, self._first] - means[:, self._second]).reshape(*lead, self.m)
        if not binary:
            return values
        bits = sign_with_ties(values - self.thresholds, tie_positive=self.pattern.tie_positive, atol=atol)
        return pack_bits(bits) if packed else bits

    # -- analysis ---------------------------------------------------------
    def field_matrix(self):
        """Field kernels ``K`` as CSR (F x N), float64, rows of unit L1 norm."""
        return self._kernels.copy()

    def pair_matrix(self):
        """Pair differences ``D`` as CSR (M x F): ``L = D K``."""
        return self._pairs.copy()

    @cached_property
    def _matrix64(self):
        return (self._pairs @ self._kernels).toarray()

    def matrix(self):
        """The dense ``M x N`` matrix of ``L`` in float64."""
        return self._matrix64.copy()

    def frame_vector(self, index):
        """Row ``index`` of ``L`` as a ``P x P`` image (positive lobe minus negative lobe).

        Examples
        --------
        >>> from lbdviewer.patterns import make_pattern
        >>> op = DescriptorOperator(make_pattern("brief", patch_size=8, m=4))
        >>> bool(abs(op.frame_vector(0).sum()) < 1e-12), op.frame_vector(3).shape
        (True, (8, 8))
        """
        if isinstance(index, bool) or int(index) != index or not 0 <= index < self.m:
            raise ValueError(f"index must be an integer from 0 to {self.m - 1}, got {index!r}")
        row = self._pairs[int(index)] @ self._kernels
        return row.toarray().reshape(self.patch_shape)

    def weight_map(self):
        """Total weight each pixel receives: ``sum_i |G_i| + |G'_i|`` (paper's Fig. 5, top).

        Returns
        -------
        ndarray, shape (P, P); it sums to ``2 M``.
        """
        uses = np.bincount(self.pattern.pairs.ravel(), minlength=self.pattern.n_fields).astype(float)
        return (uses @ abs(self._kernels)).reshape(self.patch_shape)

    def occurrence_map(self):
        """How many measurements read each pixel (paper's Fig. 5, bottom).

        Returns
        -------
        ndarray of int, shape (P, P)
        """
        support = (self._kernels != 0).astype(np.int32).tocsr()
        first = support[self._first]
        second = support[self._second]
        union = ((first + second) > 0).astype(np.int64)
        return np.asarray(union.sum(axis=0)).reshape(self.patch_shape)

    @cached_property
    def _norm(self):
        matrix = (self._pairs @ self._kernels).tocsr()
        return power_norm(lambda v: matrix @ v, lambda r: matrix.T @ r, (self.n,), iterations=200, rtol=1e-10)

    def norm_estimate(self):
        """Spectral norm ``||L||_2`` by the power method (cached)."""
        return self._norm
