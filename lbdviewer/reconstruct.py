"""Whole images from the descriptors of their patches.

Two modes share one entry point, :func:`reconstruct_image`:

``"patches"`` (the paper's protocol, Sec. 4.1)
    each patch is reconstructed on its own (mean 0.5, values in ``[0, 1]``)
    and the estimates are averaged where they overlap;
``"joint"`` (beyond the paper)
    one unknown image explains every descriptor at once through the joint
    operator of :mod:`lbdviewer.joint`, with a whole-image Haar prior and the
    ``[0, 1]`` box. Overlapping patches then have to agree, which recovers
    brightness relations between patches that averaging loses.

Descriptors come in one of three forms: packed bits (uint8, shape
``(S, ceil(M / 8))``, least significant bit first as
:func:`lbdviewer.operators.pack_bits`), bits in {-1, +1} (int8 or any integer
type, ``(S, M)``), or real measurements (float, ``(S, M)``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numba
import numpy as np

from lbdviewer.joint import JointOperator, index_patterns
from lbdviewer.operators import DescriptorOperator, pack_bits, sign_with_ties, unpack_bits
from lbdviewer.sites import coarser_grid, coverage
from lbdviewer.solvers import BIHT, PrimalDualL1
from lbdviewer.solvers.consistency import DEFAULT_MARGIN, DEFAULT_SMOOTHNESS, SignConsistency
from lbdviewer.wavelets import haar_adjoint_inplace, haar_forward_inplace

MODES = ("joint", "patches")
METHODS = ("consistency", "biht", "primal-dual")
DEFAULT_ITERATIONS = {("patches", "biht"): 200, ("patches", "primal-dual"): 1000,
                      ("joint", "biht"): 300, ("joint", "primal-dual"): 1000, ("joint", "consistency"): 200}
#: Margins of the joint solve grow as (distance between the two fields) ** MARGIN_POWER.
MARGIN_POWER = 2
#: Grids denser than this (pixels) start the joint solve on a sub-grid this sparse ...
COARSE_SPACING = 8
#: ... and spend this share of the iterations on all sites afterwards.
DENSE_SHARE = 0.2


def default_method(mode, binary):
    """The solver used when none is named.

    Real values: primal-dual. Bits: BIHT per patch (the paper), sign
    consistency for the joint whole image.

    Examples
    --------
    >>> default_method("joint", True), default_method("patches", True), default_method("joint", False)
    ('consistency', 'biht', 'primal-dual')
    """
    if not binary:
        return "primal-dual"
    return "consistency" if mode == "joint" else "biht"


DESCRIBE_CHUNK = 16384


@dataclass(frozen=True)
class ImageResult:
    """A reconstructed image and how it was made.

    Attributes
    ----------
    image : ndarray of float64, shape (H, W)
        The estimate in ``[0, 1]``; uncovered pixels are 0 (black).
    covered : ndarray of bool, shape (H, W)
        Pixels read by at least one patch.
    mode, method : str
    iterations : int
        Iterations per patch (``"patches"``) or of the whole-image solver.
    solver_bit_consistency : float or None
        Share of input bits reproduced by the solver's own estimates (the
        patch estimates before averaging, or the joint image); None for
        real-valued descriptors.
    seconds : float
        Wall-clock time of the reconstruction.
    params : dict
        Every parameter used, for figure and metrics files.
    """

    image: np.ndarray
    covered: np.ndarray
    mode: str
    method: str
    iterations: int
    solver_bit_consistency: float | None
    seconds: float
    params: dict = field(default_factory=dict)


@dataclass(frozen=True)
class ImageProgress:
    """One progress report of :func:`iter_reconstruct_image`.

    ``done`` of ``total`` work units (patches or iterations) are finished;
    ``estimate`` is the current whole-image estimate when one is cheap to
    give (None otherwise); ``result`` is set on the last report only.
    """

    done: int
    total: int
    estimate: np.ndarray | None = None
    result: ImageResult | None = None


def describe_sites(image, sites, patterns, *, binary=True, atol=1e-9, chunk=DESCRIBE_CHUNK):
    """The descriptor of every site of ``image``.

    Parameters
    ----------
    image : array_like, shape (H, W)
    sites : array_like of int, shape (S, 2)
        Top-left ``(row, col)`` of each patch.
    patterns : Pattern or sequence of Pattern (one per site)
    binary : bool
        Bits (with each pattern's tie rule, see
        :meth:`DescriptorOperator.describe`) or real measurements.
    atol : float
        Differences within ``atol`` of zero are ties (measuring a float
        reconstruction, use :data:`lbdviewer.joint.TIE_ATOL`).
    chunk : int
        Sites described at a time (bounds memory).

    Returns
    -------
    ndarray
        Binary: packed uint8, shape ``(S, ceil(M / 8))``; real: float32 ``(S, M)``.

    Examples
    --------
    >>> from lbdviewer.patterns import make_pattern
    >>> image = np.random.default_rng(0).random((16, 24))
    >>> describe_sites(image, [[0, 0], [8, 16]], make_pattern("brief", patch_size=8, m=16)).shape
    (2, 2)
    """
    image = np.asarray(image, dtype=np.float64)
    sites = np.asarray(sites, dtype=np.int64).reshape(-1, 2)
    unique, index = index_patterns(patterns, len(sites))
    m = unique[0].m
    out = np.empty((len(sites), (m + 7) // 8 if binary else m), dtype=np.uint8 if binary else np.float32)
    for start in range(0, len(sites), chunk):
        part = slice(start, start + chunk)
        operator = JointOperator(image.shape, sites[part],
                                 unique[0] if len(unique) == 1 else [unique[i] for i in index[part]], dtype=np.float64)
        values = operator.forward(image)
        out[part] = pack_bits(sign_with_ties(values, tie_positive=operator.tie_positive, atol=atol)) if binary else values
    return out


def average_patches(patches, sites, shape):
    """Put patch estimates back at their sites and average where they overlap.

    Parameters
    ----------
    patches : array_like, shape (S, P, P)
    sites : array_like of int, shape (S, 2)
    shape : (int, int)

    Returns
    -------
    image : ndarray of float64, shape (H, W)
        The mean of the estimates covering each pixel; 0 where none does.
    counts : ndarray of int32, shape (H, W)
        How many patches cover each pixel.

    Examples
    --------
    >>> image, counts = average_patches(np.stack([np.ones((2, 2)), 3 * np.ones((2, 2))]),
    ...                                 [[0, 0], [0, 1]], (2, 3))
    >>> image.tolist(), counts.tolist()
    ([[1.0, 2.0, 3.0], [1.0, 2.0, 3.0]], [[1, 2, 1], [1, 2, 1]])
    """
    patches = np.asarray(patches, dtype=np.float64)
    sites = np.asarray(sites, dtype=np.int64).reshape(-1, 2)
    if patches.ndim != 3 or patches.shape[0] != len(sites) or patches.shape[1] != patches.shape[2]:
        raise ValueError(f"patches must have shape ({len(sites)}, P, P), got {patches.shape}")
    total = np.zeros(shape, dtype=np.float64)
    _accumulate(total, patches, sites)
    counts = coverage(shape, sites, patches.shape[1])
    return np.where(counts > 0, total / np.maximum(counts, 1), 0.0), counts


@numba.njit(cache=True, nogil=True)
def _accumulate(total, patches, sites):
    """``total[r + i, c + j] += patches[s, i, j]`` for every site ``s = (r, c)`` (overlaps add up)."""
    size = patches.shape[1]
    for s in range(patches.shape[0]):
        r, c = sites[s, 0], sites[s, 1]
        for i in range(size):
            for j in range(size):
                total[r + i, c + j] += patches[s, i, j]


def _descriptor_kind(descriptors, m):
    descriptors = np.asarray(descriptors)
    if descriptors.dtype == np.uint8 and descriptors.ndim == 2 and descriptors.shape[1] == (m + 7) // 8:
        return "packed", descriptors
    if descriptors.ndim != 2 or descriptors.shape[1] != m:
        raise ValueError(f"descriptors must have shape (S, {m}) or packed (S, {(m + 7) // 8}) uint8, "
                         f"got {descriptors.dtype} {descriptors.shape}")
    if np.issubdtype(descriptors.dtype, np.floating):
        return "real", descriptors
    if not np.all(np.abs(descriptors) == 1):
        raise ValueError("descriptors of integer type must hold bits in {-1, +1}")
    return "bits", descriptors


def _check_choice(value, choices, name):
    if value not in choices:
        raise ValueError(f"{name} must be one of {choices}, got {value!r}")
    return value


def iter_reconstruct_image(descriptors, sites, patterns, *, shape, mode=None, method=None,
                           iterations=None, sparsity=0.4, lam=0.1, chunk=1024):
    """Reconstruct a whole image, yielding :class:`ImageProgress` as work is done.

    Parameters
    ----------
    descriptors : ndarray, shape (S, M) or packed (S, ceil(M / 8))
        See the module notes for the accepted forms.
    sites : array_like of int, shape (S, 2)
        Top-left ``(row, col)`` of each patch.
    patterns : Pattern or sequence of Pattern (one per site, same ``m``)
    shape : (int, int)
        Image shape ``(H, W)``.
    mode : {"joint", "patches"}, optional
        Default: ``"joint"`` where patches overlap, ``"patches"`` otherwise.
    method : {"consistency", "biht", "primal-dual"}, optional
        Default :func:`default_method`. BIHT and consistency need bits;
        consistency solves only the joint whole image; primal-dual takes
        bits or real values.
    iterations : int, optional
        Default ``DEFAULT_ITERATIONS[(mode, method)]`` (paper: 200 BIHT,
        1000 primal-dual per patch).
    sparsity : float
        Share of Haar coefficients BIHT keeps (paper: 0.4).
    lam : float
        Data weight of primal-dual (paper: 0.1).
    chunk : int
        Patches per solver batch in ``"patches"`` mode.

    Yields
    ------
    ImageProgress
        The last one carries the :class:`ImageResult`.

    Raises
    ------
    ValueError
        Bad parameter or descriptor shape, or BIHT asked for real values.
    """
    started = time.perf_counter()
    sites = np.asarray(sites, dtype=np.int64).reshape(-1, 2)
    unique, index = index_patterns(patterns, len(sites))
    m = unique[0].m
    kind, descriptors = _descriptor_kind(descriptors, m)
    if len(descriptors) != len(sites):
        raise ValueError(f"descriptors must have one row per site ({len(sites)}), got {len(descriptors)}")
    sizes = np.array([p.patch_size for p in unique])[index]
    counts = coverage(shape, sites, sizes)
    if mode is None:
        mode = "joint" if counts.max() > 1 else "patches"
    _check_choice(mode, MODES, "mode")
    if method is None:
        method = default_method(mode, kind != "real")
    _check_choice(method, METHODS, "method")
    if method in ("biht", "consistency") and kind == "real":
        raise ValueError(f"method {method!r} needs binary descriptors, got real values (use 'primal-dual')")
    if method == "consistency" and mode != "joint":
        raise ValueError("method 'consistency' solves the whole image at once: use mode 'joint'")
    iterations = DEFAULT_ITERATIONS[(mode, method)] if iterations is None else int(iterations)
    if iterations < 1:
        raise ValueError(f"iterations must be >= 1, got {iterations}")
    params = {"mode": mode, "method": method, "iterations": iterations, "sparsity": float(sparsity),
              "lam": float(lam), "sites": int(len(sites)), "m": int(m), "binary": kind != "real",
              "patch_size": sorted({int(p.patch_size) for p in unique})}
    if mode == "patches":
        runner = _patchwise(descriptors, kind, sites, unique, index, shape, method, iterations,
                            sparsity, lam, chunk)
    else:
        runner = _joint(descriptors, kind, sites, patterns, shape, counts, method, iterations, sparsity, lam)
    consistency = None
    for item in runner:
        if isinstance(item, ImageProgress):
            yield item
        else:
            image, consistency = item
    image = np.where(counts > 0, np.clip(image, 0.0, 1.0), 0.0)
    result = ImageResult(image=image, covered=counts > 0, mode=mode, method=method, iterations=iterations,
                         solver_bit_consistency=consistency, seconds=time.perf_counter() - started,
                         params=params)
    yield ImageProgress(done=1, total=1, estimate=image, result=result)


def reconstruct_image(descriptors, sites, patterns, *, shape, mode=None, method=None, iterations=None,
                      sparsity=0.4, lam=0.1, chunk=1024):
    """Reconstruct a whole image from the descriptors of its patches.

    Same parameters as :func:`iter_reconstruct_image`; returns its final
    :class:`ImageResult`.

    Examples
    --------
    >>> from lbdviewer.patterns import make_pattern
    >>> from lbdviewer.sites import grid_sites
    >>> image = np.zeros((24, 24)); image[:, 12:] = 1.0        # a vertical edge
    >>> pattern = make_pattern("brief", patch_size=16, m=128)
    >>> sites = grid_sites(image.shape, patch_size=16, offset=4)
    >>> result = reconstruct_image(describe_sites(image, sites, pattern), sites, pattern,
    ...                            shape=image.shape, iterations=60)
    >>> result.mode, bool(result.image[:, 16:].mean() > result.image[:, :8].mean())
    ('joint', True)
    """
    for progress in iter_reconstruct_image(descriptors, sites, patterns, shape=shape, mode=mode,
                                           method=method, iterations=iterations, sparsity=sparsity,
                                           lam=lam, chunk=chunk):
        if progress.result is not None:
            return progress.result
    raise AssertionError("iter_reconstruct_image ended without a result")


# -- patchwise ---------------------------------------------------------------
def _rows_as_values(descriptors, kind, rows, m):
    part = descriptors[rows]
    if kind == "packed":
        return unpack_bits(part, m)
    return part.astype(np.float32 if kind == "real" else np.int8)


def _patchwise(descriptors, kind, sites, unique, index, shape, method, iterations, sparsity, lam, chunk):
    height, width = shape
    total = np.zeros((height, width), dtype=np.float64)
    consistent = 0
    done = 0
    for p, pattern in enumerate(unique):
        operator = DescriptorOperator(pattern)
        rows = np.flatnonzero(index == p)
        for start in range(0, rows.size, chunk):
            part = rows[start:start + chunk]
            values = _rows_as_values(descriptors, kind, part, pattern.m)
            if method == "biht":
                state = BIHT(operator, values, sparsity=sparsity, iterations=iterations).run()
            else:
                state = PrimalDualL1(operator, values, lam=lam, iterations=iterations,
                                     binary=kind != "real").run()
            if state.bit_consistency is not None:
                consistent += float(np.sum(state.bit_consistency)) * pattern.m
            _accumulate(total, np.asarray(state.x, dtype=np.float64), sites[part])
            done += part.size
            yield ImageProgress(done=done, total=len(sites))
    sizes = np.array([p.patch_size for p in unique])[index]
    counts = coverage(shape, sites, sizes)
    image = np.where(counts > 0, total / np.maximum(counts, 1), 0.0)
    yield image, (consistent / (len(sites) * unique[0].m) if kind != "real" else None)


# -- joint -------------------------------------------------------------------
class _FlatJoint:
    """A :class:`JointOperator` seen as one ``(S M) x (H W)`` matrix for :class:`PrimalDualL1`."""

    def __init__(self, joint):
        self.joint = joint
        self.shape = joint.shape
        self.domain_shape = joint.domain_shape
        self.pattern = joint.patterns[0]

    def forward(self, x):
        out = self.joint.forward(x)
        return out.reshape(*out.shape[:-2], -1)

    def adjoint(self, y):
        y = np.asarray(y)
        return self.joint.adjoint(y.reshape(*y.shape[:-1], *self.joint.range_shape))

    def norm_estimate(self):
        return self.joint.norm_estimate()


def joint_biht_steps(operator, packed_bits, *, covered_counts, sparsity=0.4, iterations=300):
    """BIHT on the whole image: yields ``(iteration, x, mismatches)`` after every step.

    Parameters
    ----------
    operator : JointOperator
    packed_bits : ndarray of uint8, shape (S, ceil(M / 8))
    covered_counts : ndarray of int, shape (H, W)
        Patches covering each pixel (:func:`lbdviewer.sites.coverage`).
    sparsity : float
        Share of the ``H W`` Haar coefficients kept.
    iterations : int

    Notes
    -----
    With ``n(q)`` the number of patches covering pixel ``q``, one step is

    .. math::
        a = x + \\frac{1}{M\\,n} \\odot \\tfrac12 A^T(b - \\operatorname{sign}(Ax)),\\qquad
        x \\leftarrow \\operatorname{clip}_{[0,1]}\\big(W^T H_K(W a)\\big),

    i.e. the paper's step ``tau = 1/M`` per patch, shared among the patches
    that see a pixel. ``sign`` resolves ties like the descriptor
    (:meth:`JointOperator.binary_gradient`), so flat areas stay flat. Start:
    ``x = 0.5``.
    """
    height, width = operator.domain_shape
    if not 0.0 < sparsity <= 1.0:
        raise ValueError(f"sparsity must be in (0, 1], got {sparsity!r}")
    keep = max(1, int(round(sparsity * height * width)))
    step = (1.0 / (operator.m * np.maximum(covered_counts, 1))).astype(np.float32)
    x = np.full((height, width), 0.5, dtype=np.float32)
    scratch = np.empty(max(height, width), dtype=np.float32)
    for iteration in range(1, iterations + 1):
        gradient, mismatches = operator.binary_gradient(x, packed_bits)
        coefficients = (x + step * gradient).ravel()
        haar_forward_inplace(coefficients, scratch, height, width)
        magnitude = np.abs(coefficients)
        if keep < magnitude.size:
            threshold = np.partition(magnitude, magnitude.size - keep)[magnitude.size - keep]
            coefficients[magnitude < threshold] = 0.0
        haar_adjoint_inplace(coefficients, scratch, height, width)
        x = np.clip(coefficients.reshape(height, width), 0.0, 1.0)
        yield iteration, x, mismatches


def pair_separations(operator):
    """Distance in pixels between the two fields of every test of each pattern, shape (len(patterns), M)."""
    return np.array([np.hypot(*(p.centers[p.pairs[:, 0]] - p.centers[p.pairs[:, 1]]).T)
                     for p in operator.patterns], dtype=np.float32)


def joint_consistency_steps(operator, bits, *, iterations=200, margin=DEFAULT_MARGIN, x0=None):
    """Sign consistency on the whole image, margins growing with the tests' lengths, from ``x0`` (default flat).

    Yields ``(iteration, state)``.

    Notes
    -----
    Each strict test is asked a margin proportional to the distance ``d``
    between its two fields raised to ``MARGIN_POWER``, ``margin`` on average
    over each pattern's tests (so keypoints of coarse pyramid levels, whose
    patterns are scaled up, are not asked for larger differences):
    bits say nothing of magnitudes, and one margin for all tests turns every
    faint but consistent gradient (a sky, a wall) into a steep ramp, since
    short pairs demand as much as long ones. Measured at 200 iterations,
    offset 8, on the two photos of ``resources/`` and three scikit-image
    photos held out (coffee, chelsea, rocket), BRIEF and FREAK: ``d^2`` beats
    ``d`` on 8 of 10 cases (camera, BRIEF: 0.753 against 0.712; the largest
    loss 0.004), one margin for all is far worse. A second stage with one
    constant margin and a weaker total variation reproduced 0.3-0.8 % more
    bits but lost 0.02-0.04 in correlation; it was dropped.
    """
    weights = pair_separations(operator) ** MARGIN_POWER
    weights /= np.maximum(weights.mean(axis=1, keepdims=True), 1e-12)  # each pattern: ``margin`` on average
    solver = SignConsistency(operator, bits, margin=margin * weights,
                             smoothness=DEFAULT_SMOOTHNESS, iterations=iterations, x0=x0)
    for state in solver.steps():
        yield state.iteration, state


def _coarse_to_dense(operator, bits, sites, shape, iterations):
    """:func:`joint_consistency_steps`, first on a sub-grid ``COARSE_SPACING`` apart when the grid is denser.

    A dense grid (offset 1: ~450 tests a pixel) costs ~60 times more an
    iteration than the sub-grid, which already fixes the image's layout and
    brightness; the dense sites then refine it for ``DENSE_SHARE`` of the
    iterations. Yields ``(iteration, state)`` counted over both.
    """
    keep = coarser_grid(sites, spacing=COARSE_SPACING)
    dense = iterations if keep is None else max(1, int(round(DENSE_SHARE * iterations)))
    done, x0 = 0, None
    if keep is not None and iterations > dense:
        unique = operator.patterns
        coarse_patterns = unique[0] if len(unique) == 1 else [unique[i] for i in operator.site_pattern[keep]]
        coarse = JointOperator(shape, sites[keep], coarse_patterns)
        for done, state in joint_consistency_steps(coarse, bits[keep], iterations=iterations - dense):
            yield done, state
        x0 = np.asarray(state.x[0], dtype=np.float64)
    for step, state in joint_consistency_steps(operator, bits, iterations=dense, x0=x0):
        yield done + step, state


def _joint(descriptors, kind, sites, patterns, shape, counts, method, iterations, sparsity, lam):
    operator = JointOperator(shape, sites, patterns)
    report_every = max(1, iterations // 100)
    if method == "consistency":
        bits = unpack_bits(descriptors, operator.m) if kind == "packed" else descriptors
        state, done = None, 0
        for done, state in _coarse_to_dense(operator, bits, sites, shape, iterations):
            if done % report_every == 0 or state.finished:
                yield ImageProgress(done=min(done, iterations), total=iterations, estimate=state.x[0])
        yield np.asarray(state.x[0], dtype=np.float64), float(state.bit_consistency[0])
        return
    if method == "biht":
        packed = descriptors if kind == "packed" else pack_bits(descriptors)
        x = None
        for iteration, x, _ in joint_biht_steps(operator, packed, covered_counts=counts, sparsity=sparsity,
                                                iterations=iterations):
            if iteration % report_every == 0 or iteration == iterations:
                yield ImageProgress(done=iteration, total=iterations, estimate=x)
        _, mismatches = operator.binary_gradient(x, packed)
        yield x.astype(np.float64), 1.0 - mismatches / (len(sites) * operator.m)
        return
    if kind == "packed":
        values = unpack_bits(descriptors, operator.m)
    else:
        values = descriptors
    solver = PrimalDualL1(_FlatJoint(operator), values.reshape(1, -1).astype(np.float32), lam=lam,
                          iterations=iterations, constraint="box", binary=kind != "real", backend="batched")
    state = None
    for state in solver.steps():
        if state.iteration % report_every == 0 or state.finished:
            yield ImageProgress(done=state.iteration, total=iterations, estimate=state.x[0])
    consistency = None if state.bit_consistency is None else float(state.bit_consistency[0])
    yield np.asarray(state.x[0], dtype=np.float64), consistency
