"""The :class:`Pattern` record shared by every descriptor family.

A local binary descriptor compares pairs of *receptive fields*. A field is a
kernel (a Gaussian or a box) centred somewhere in the patch; a measurement is
the difference of the means of two fields. A :class:`Pattern` stores exactly
that and nothing else, so that the operator, the GUI overlay and the models of
real libraries all read the same record.

Coordinates are ``(x, y)`` = (column, row) in pixels, with pixel ``(r, c)``
centred at ``(c, r)``; the patch centre is ``((P - 1) / 2, (P - 1) / 2)``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from lbdviewer._validation import check_choice

KERNELS = ("gaussian", "box")
MIN_PATCH_SIZE = 8
MAX_PATCH_SIZE = 128


def _frozen(array, dtype):
    out = np.array(array, dtype=dtype, copy=True)
    out.flags.writeable = False
    return out


def seed_for_metadata(rng):
    """The seed to record in figure metadata: the int itself, else ``None``."""
    if isinstance(rng, (int, np.integer)) and not isinstance(rng, bool):
        return int(rng)
    return None


def check_m(m, limit, what):
    """Return ``m`` as an int in ``[1, limit]``, or raise naming the value.

    Examples
    --------
    >>> check_m(512, 903, "FREAK pairs")
    512
    """
    if isinstance(m, bool) or int(m) != m or not 1 <= m <= limit:
        raise ValueError(f"m must be an integer from 1 to {limit} ({what}), got {m!r}")
    return int(m)


def check_patch_size(patch_size):
    """Return ``patch_size`` as an int, or raise naming the bad value.

    Parameters
    ----------
    patch_size : int
        Side of the square patch in pixels, from 8 to 128.

    Raises
    ------
    ValueError
        If ``patch_size`` is not an integer in ``[8, 128]``.

    Examples
    --------
    >>> check_patch_size(32)
    32
    """
    if isinstance(patch_size, bool) or int(patch_size) != patch_size:
        raise ValueError(f"patch_size must be an integer, got {patch_size!r}")
    patch_size = int(patch_size)
    if not MIN_PATCH_SIZE <= patch_size <= MAX_PATCH_SIZE:
        raise ValueError(
            f"patch_size must be between {MIN_PATCH_SIZE} and {MAX_PATCH_SIZE}, "
            f"got {patch_size}"
        )
    return patch_size


_SUBSCRIPT_DIGITS = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")


def pair_number(row):
    """The number of the pair (measurement) in row ``row`` of ``L``, counted from 1 as the paper counts.

    Arrays index rows from 0; everything a person reads (the app's labels,
    figure titles, captions, records) numbers pairs from 1: row 0 is
    :math:`L_1`, row ``M - 1`` is :math:`L_M`.

    Raises
    ------
    ValueError
        If ``row`` is not an integer from 0.

    Examples
    --------
    >>> pair_number(0), pair_number(511)
    (1, 512)
    """
    if isinstance(row, bool) or int(row) != row or row < 0:
        raise ValueError(f"row must be an integer from 0 (a row of L), got {row!r}")
    return int(row) + 1


def pair_label(row, *, math=False):
    """The frame vector of row ``row`` of ``L`` as the paper writes it, numbered from 1 (:func:`pair_number`).

    Parameters
    ----------
    row : int
        Row of ``L``, from 0.
    math : bool
        Matplotlib mathtext (``"$L_{12}$"``, for figures) instead of Unicode
        subscripts (``"L₁₂"``, for the app's labels and plain text).

    Examples
    --------
    >>> pair_label(0), pair_label(11, math=True)
    ('L₁', '$L_{12}$')
    """
    number = pair_number(row)
    return f"$L_{{{number}}}$" if math else "L" + str(number).translate(_SUBSCRIPT_DIGITS)


@dataclass(frozen=True, eq=False)
class Pattern:
    """Receptive fields and the pairs a binary descriptor compares.

    Measurement ``i`` is ``mean(field[pairs[i, 0]]) - mean(field[pairs[i, 1]])``
    and its bit is ``+1`` when that difference is positive. Ties (a difference
    of exactly zero, as in flat areas) give ``+1`` when ``tie_positive`` is true
    (the ``>=`` convention of OpenCV's FREAK) and ``-1`` otherwise (the paper's
    ``sign``, and the strict ``<`` of ORB and BRIEF once their pairs are ordered
    so that the bit reads "first > second").

    Parameters
    ----------
    name : str
        Family name, e.g. ``"brief"``.
    patch_size : int
        Side ``P`` of the square patch; ``N = P * P``.
    centers : array_like, shape (F, 2)
        Field centres ``(x, y)`` in patch pixels (may be fractional).
    sigmas : array_like, shape (F,)
        Gaussian standard deviation of each field, in pixels.
    radii : array_like, shape (F,) or (F, 2)
        Half-width of each field's support, in pixels: the field reads the
        pixels with ``|px - x| <= rx`` and ``|py - y| <= ry`` (one column:
        ``rx = ry``). A box field weighs them equally, a Gaussian field by
        ``exp(-d^2 / (2 sigma^2))``; either is normalised to unit L1 norm over
        the part of its support inside the patch.
    pairs : array_like of int, shape (M, 2)
        Indices into the fields; row ``i`` is measurement ``i``.
    kernel : {"gaussian", "box"}
        Default kernel shape for the operator.
    tie_positive : bool
        Bit given to a zero difference (see above).
    params : tuple of (str, object)
        The parameters the pattern was made with, for figure metadata.
    thresholds : array_like, shape (M,), optional
        Per-test threshold ``t``: bit ``i`` is the sign of ``L_i x - t_i``
        (ties as above). Zero by default (the paper's ``sign(L x)``); BEBLID
        and TEBLID compare box differences against learned thresholds.

    Examples
    --------
    >>> p = Pattern("toy", 8, [[2, 2], [5, 5]], [1, 1], [1, 1], [[0, 1]])
    >>> p.m, p.n, p.n_fields, p.thresholds.tolist(), p.thresholded
    (1, 64, 2, [0.0], False)
    """

    name: str
    patch_size: int
    centers: np.ndarray
    sigmas: np.ndarray
    radii: np.ndarray
    pairs: np.ndarray
    kernel: str = "gaussian"
    tie_positive: bool = False
    params: tuple = field(default=())
    thresholds: np.ndarray = None

    def __post_init__(self):
        size = int(self.patch_size)
        if size < 1:
            raise ValueError(f"patch_size must be positive, got {self.patch_size!r}")
        centers = _frozen(self.centers, np.float64)
        sigmas = _frozen(self.sigmas, np.float64)
        radii = _frozen(self.radii, np.float64)
        pairs = _frozen(self.pairs, np.int64)
        if centers.ndim != 2 or centers.shape[1] != 2:
            raise ValueError(f"centers must have shape (F, 2), got {centers.shape}")
        n_fields = centers.shape[0]
        if sigmas.shape != (n_fields,) or radii.shape not in ((n_fields,), (n_fields, 2)):
            raise ValueError(
                f"sigmas must have shape ({n_fields},) and radii ({n_fields},) or "
                f"({n_fields}, 2), got {sigmas.shape} and {radii.shape}"
            )
        if np.any(sigmas <= 0) or np.any(radii < 0):
            raise ValueError("sigmas must be positive and radii non-negative")
        if pairs.ndim != 2 or pairs.shape[1] != 2 or pairs.shape[0] < 1:
            raise ValueError(f"pairs must have shape (M, 2) with M >= 1, got {pairs.shape}")
        if pairs.min() < 0 or pairs.max() >= n_fields:
            raise ValueError(f"pairs must index fields 0..{n_fields - 1}")
        check_choice("kernel", self.kernel, KERNELS)
        object.__setattr__(self, "patch_size", size)
        object.__setattr__(self, "centers", centers)
        object.__setattr__(self, "sigmas", sigmas)
        object.__setattr__(self, "radii", radii)
        object.__setattr__(self, "pairs", pairs)
        object.__setattr__(self, "params", tuple(self.params))
        thresholds = _frozen(np.zeros(pairs.shape[0]) if self.thresholds is None else self.thresholds, np.float64)
        if thresholds.shape != (pairs.shape[0],) or not np.all(np.isfinite(thresholds)):
            raise ValueError(f"thresholds must be {pairs.shape[0]} finite values (one per pair), "
                             f"got shape {thresholds.shape}")
        object.__setattr__(self, "thresholds", thresholds)

    @property
    def m(self):
        """Number of measurements (bits)."""
        return self.pairs.shape[0]

    @property
    def thresholded(self):
        """Whether any test has a non-zero threshold (``sign(L x - t)`` rather than ``sign(L x)``)."""
        return bool(np.any(self.thresholds != 0))

    @property
    def n(self):
        """Number of pixels in a patch, ``P * P``."""
        return self.patch_size * self.patch_size

    @property
    def n_fields(self):
        """Number of receptive fields."""
        return self.centers.shape[0]

    @property
    def center(self):
        """Patch centre ``(x, y)``: ``((P - 1) / 2, (P - 1) / 2)``."""
        c = (self.patch_size - 1) / 2.0
        return np.array([c, c])

    def with_pairs(self, pairs, *, name=None, thresholds=None):
        """Return the same fields with another list of pairs (thresholds zero unless given).

        Examples
        --------
        >>> p = Pattern("toy", 8, [[2, 2], [5, 5]], [1, 1], [1, 1], [[0, 1]])
        >>> p.with_pairs([[1, 0], [0, 1]]).m
        2
        """
        return replace(self, pairs=pairs, name=self.name if name is None else name, thresholds=thresholds)

    def transformed(self, *, angle=0.0, scale=1.0, patch_size=None):
        """Rotate and scale the pattern about the patch centre.

        A field at ``c + v`` moves to ``c' + scale * R(angle) v``, where ``c``
        and ``c'`` are the old and new patch centres and
        ``R = [[cos, -sin], [sin, cos]]`` acts on ``(x, y)`` with y pointing
        down, as OpenCV applies ``KeyPoint.angle`` (so a positive angle turns
        clockwise on screen). Sigmas and radii are multiplied by ``scale``.

        Parameters
        ----------
        angle : float
            Rotation in degrees.
        scale : float
            Positive scale factor.
        patch_size : int, optional
            Side of the new patch (default: unchanged).

        Returns
        -------
        Pattern

        Examples
        --------
        >>> p = Pattern("toy", 9, [[6, 4]], [1], [1], [[0, 0]])
        >>> np.round(p.transformed(angle=90).centers, 6)
        array([[4., 6.]])
        """
        if not scale > 0:
            raise ValueError(f"scale must be positive, got {scale!r}")
        size = self.patch_size if patch_size is None else int(patch_size)
        theta = np.deg2rad(angle)
        cos, sin = np.cos(theta), np.sin(theta)
        rotation = np.array([[cos, -sin], [sin, cos]])
        offsets = (self.centers - self.center) @ rotation.T
        new_center = (size - 1) / 2.0
        return replace(
            self,
            patch_size=size,
            centers=new_center + scale * offsets,
            sigmas=self.sigmas * scale,
            radii=self.radii * scale,
        )

    def describe_params(self):
        """The construction parameters as a plain dict (for JSON)."""
        return {"name": self.name, "patch_size": self.patch_size, "m": self.m, **dict(self.params)}
