"""Whole images from the descriptors of their patches.

Two modes share one entry point, :func:`reconstruct_image`:

``"patches"`` (the paper's protocol, Sec. 4.1)
    each patch is reconstructed on its own (mean 0.5, values in ``[0, 1]``)
    and the estimates are averaged where they overlap;
``"joint"`` (beyond the paper)
    one unknown image explains every descriptor at once through the joint
    operator of :mod:`lbdviewer.operators.joint`, with a whole-image Haar prior and the
    ``[0, 1]`` box. Overlapping patches then have to agree, which recovers
    brightness relations between patches that averaging loses.

Descriptors come in one of three forms, read by the one rule of
:func:`lbdviewer.bits.descriptor_encoding`: packed bits (uint8, shape
``(S, ceil(M / 8))``, least significant bit first as
:func:`lbdviewer.bits.pack_bits`), bits in {-1, +1} (int8 or any integer
type, ``(S, M)``), or real measurements (float, ``(S, M)``). A float array of
only -1 and +1 is refused: bits or real values, the caller says which.
:func:`describe_sites` gives bits as int8 ``(S, M)`` like
:meth:`lbdviewer.operators.descriptor.DescriptorOperator.describe`, packed with
``packed=True``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numba
import numpy as np

from lbdviewer._validation import check_choice, check_finite_array, check_iterations
from lbdviewer.operators.joint.site_patterns import index_patterns
from lbdviewer.operators.joint.operator import JointOperator, site_subset
from lbdviewer.operators.descriptor import DescriptorOperator
from lbdviewer.bits import descriptor_encoding, pack_bits, sign_with_ties, unpack_bits
from lbdviewer.reconstruction.sites import coarser_grid, coverage
from lbdviewer.solvers.patch.primal_dual import DEFAULT_LAM, PrimalDualL1
from lbdviewer.solvers.patch.biht import BIHT
from lbdviewer.solvers.image.coherence import JointCoherentContrast
from lbdviewer.solvers.image.joint import (COARSE_SPACING, JOINT_ITERATIONS, CoarseToDense, FlatRange, JointBIHT,
                                           default_joint_iterations)
from lbdviewer.solvers.image.likelihood import JointLikelihood

MODES = ("joint", "patches")
METHODS = ("consistency", "likelihood", "coherent", "biht", "primal-dual")
WHOLE_IMAGE_METHODS = ("consistency", "likelihood", "coherent")  # bits only, joint mode only
DEFAULT_ITERATIONS = {("patches", "biht"): 200, ("patches", "primal-dual"): 1000,
                      ("joint", "biht"): 300, ("joint", "primal-dual"): 1000, ("joint", "consistency"): JOINT_ITERATIONS,
                      ("joint", "likelihood"): 160, ("joint", "coherent"): 3000}


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
        Every parameter used, for figure and metrics files; a joint solve's
        ``solver_settings`` say what its solver ran with beyond the method's
        name (sign consistency: stages, margins, total variation, gate, tie
        lean; None for BIHT and primal-dual, whose ``sparsity`` and ``lam``
        are given).
    iterations_run : int or None
        Iterations actually run: the most any patch ran (``"patches"``) or
        the whole-image solver's count; fewer than ``iterations`` when the
        solver stopped early (every patch at a fixed point, or converged).
    """

    image: np.ndarray
    covered: np.ndarray
    mode: str
    method: str
    iterations: int
    solver_bit_consistency: float | None
    seconds: float
    params: dict = field(default_factory=dict)
    iterations_run: int | None = None


@dataclass(frozen=True)
class ImageProgress:
    """One progress report of :func:`iter_reconstruct_image`.

    ``done`` of ``total`` work units (patches or iterations) are finished;
    ``estimate`` is the current whole-image estimate when one is cheap to
    give (None otherwise); ``result`` is set on the last report only. Joint
    solves report every iteration (the solver's own read-only snapshot), so
    a caller that stops consuming stops the solve within one iteration.
    """

    done: int
    total: int
    estimate: np.ndarray | None = None
    result: ImageResult | None = None


def describe_sites(image, sites, patterns, *, binary=True, packed=False, atol=1e-9, chunk=DESCRIBE_CHUNK):
    """The descriptor of every site of ``image``.

    Parameters
    ----------
    image : array_like, shape (H, W)
    sites : array_like of int, shape (S, 2)
        Top-left ``(row, col)`` of each patch.
    patterns : Pattern or sequence of Pattern (one per site)
    binary : bool
        Bits ``sign(L p - t)`` (with each pattern's thresholds and tie rule,
        see :meth:`DescriptorOperator.describe`) or real measurements ``L p``.
    packed : bool
        Bits packed 8 a byte (:func:`lbdviewer.bits.pack_bits`, least
        significant first; 8x less memory) instead of int8 {-1, +1}, the
        encoding :meth:`DescriptorOperator.describe` also takes. Binary only.
    atol : float
        Differences within ``atol`` of zero are ties (measuring a float
        reconstruction, use :data:`lbdviewer.operators.joint.operator.TIE_ATOL`).
    chunk : int
        Sites described at a time (bounds memory).

    Returns
    -------
    ndarray
        Binary: int8 in {-1, +1}, shape ``(S, M)``, or with ``packed`` uint8
        ``(S, ceil(M / 8))``; real: float32 ``(S, M)``.

    Raises
    ------
    ValueError
        If ``image`` holds NaN, None or infinities, or is not 2-D, or
        ``packed`` is asked for real values.

    Examples
    --------
    >>> from lbdviewer.patterns import make_pattern
    >>> image = np.random.default_rng(0).random((16, 24))
    >>> pattern = make_pattern("brief", patch_size=8, m=16)
    >>> bits = describe_sites(image, [[0, 0], [8, 16]], pattern)
    >>> bits.dtype, bits.shape, describe_sites(image, [[0, 0], [8, 16]], pattern, packed=True).shape
    (dtype('int8'), (2, 16), (2, 2))
    """
    if packed and not binary:
        raise ValueError("packed=True needs binary=True: real measurements are not packed")
    image = check_finite_array("image", image)
    if image.ndim != 2:
        raise ValueError(f"image must be a 2-D gray image, got shape {image.shape}")
    sites = np.asarray(sites, dtype=np.int64).reshape(-1, 2)
    unique, index = index_patterns(patterns, len(sites))
    m = unique[0].m
    columns, dtype = ((m + 7) // 8, np.uint8) if packed else (m, np.int8 if binary else np.float32)
    out = np.empty((len(sites), columns), dtype=dtype)
    for start in range(0, len(sites), chunk):
        part = slice(start, start + chunk)
        operator = JointOperator(image.shape, sites[part],
                                 unique[0] if len(unique) == 1 else [unique[i] for i in index[part]], dtype=np.float64)
        if binary:  # bits sign(A x - t) with each pattern's thresholds t
            bits = sign_with_ties(operator.margins(image), tie_positive=operator.tie_positive, atol=atol)
            out[part] = pack_bits(bits) if packed else bits
        else:
            out[part] = operator.forward(image)
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
    """``(encoding, descriptors)`` of a 2-D array by :func:`lbdviewer.bits.descriptor_encoding`."""
    descriptors = np.asarray(descriptors)
    if descriptors.ndim != 2:
        raise ValueError(f"descriptors must have shape (S, {m}) or packed (S, {(m + 7) // 8}) uint8, "
                         f"got {descriptors.dtype} {descriptors.shape}")
    return descriptor_encoding(descriptors, m), descriptors


def iter_reconstruct_image(descriptors, sites, patterns, *, shape, mode=None, method=None,
                           iterations=None, sparsity=0.4, lam=DEFAULT_LAM, chunk=1024):
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
    method : {"consistency", "likelihood", "coherent", "biht", "primal-dual"}, optional
        Default :func:`default_method`. BIHT, consistency, likelihood and
        coherent need bits; consistency, likelihood (bits as noisy signs,
        :class:`lbdviewer.solvers.image.likelihood.JointLikelihood`) and coherent
        (low-TV consistency, then contrast in proportion to the evidence of
        structure, :class:`lbdviewer.solvers.image.coherence.JointCoherentContrast`)
        solve only the joint whole image; primal-dual takes bits or real values.
    iterations : int, optional
        Default ``DEFAULT_ITERATIONS[(mode, method)]`` (paper: 200 BIHT,
        1000 primal-dual per patch); the joint sign consistency's is
        :func:`~lbdviewer.solvers.image.joint.default_joint_iterations`
        (300 on a grid, 200 at keypoints).
    sparsity : float
        Share of Haar coefficients BIHT keeps (paper: 0.4).
    lam : float
        Data weight of primal-dual, patchwise and joint (default
        :data:`~lbdviewer.solvers.patch.primal_dual.DEFAULT_LAM`; the paper's 0.1 leaves most
        patches that overlap no other exactly constant).
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
    check_choice("mode", mode, MODES)
    if method is None:
        method = default_method(mode, kind != "real")
    check_choice("method", method, METHODS)
    if method in ("biht", *WHOLE_IMAGE_METHODS) and kind == "real":
        raise ValueError(f"method {method!r} needs binary descriptors, got real values (use 'primal-dual')")
    if method in WHOLE_IMAGE_METHODS and mode != "joint":
        raise ValueError(f"method {method!r} solves the whole image at once: use mode 'joint'")
    if iterations is None:
        iterations = (default_joint_iterations(sites) if (mode, method) == ("joint", "consistency")
                      else DEFAULT_ITERATIONS[(mode, method)])
    iterations = check_iterations(iterations)
    params = {"mode": mode, "method": method, "iterations": iterations, "sparsity": float(sparsity),
              "lam": float(lam), "sites": int(len(sites)), "m": int(m), "binary": kind != "real",
              "patch_size": sorted({int(p.patch_size) for p in unique})}
    if mode == "patches":
        runner = _patchwise(descriptors, kind, sites, unique, index, shape, method, iterations,
                            sparsity, lam, chunk)
    else:
        runner = _joint(descriptors, kind, sites, patterns, shape, counts, method, iterations, sparsity, lam, params)
    consistency = ran = None
    for item in runner:
        if isinstance(item, ImageProgress):
            yield item
        else:
            image, consistency, ran = item
    image = np.where(counts > 0, np.clip(image, 0.0, 1.0), 0.0)
    result = ImageResult(image=image, covered=counts > 0, mode=mode, method=method, iterations=iterations,
                         solver_bit_consistency=consistency, seconds=time.perf_counter() - started,
                         params=params, iterations_run=ran)
    yield ImageProgress(done=1, total=1, estimate=image, result=result)


def reconstruct_image(descriptors, sites, patterns, *, shape, mode=None, method=None, iterations=None,
                      sparsity=0.4, lam=DEFAULT_LAM, chunk=1024):
    """Reconstruct a whole image from the descriptors of its patches.

    Same parameters as :func:`iter_reconstruct_image`; returns its final
    :class:`ImageResult`.

    Examples
    --------
    >>> from lbdviewer.patterns import make_pattern
    >>> from lbdviewer.reconstruction.sites import grid_sites
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
    covered = np.zeros((height, width), dtype=np.int64)  # patches solved so far over each pixel
    consistent = 0
    done = ran = 0
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
            ran = max(ran, int(np.max(state.iterations_run)))
            if state.bit_consistency is not None:
                consistent += float(np.sum(state.bit_consistency)) * pattern.m
            _accumulate(total, np.asarray(state.x, dtype=np.float64), sites[part])
            covered += coverage(shape, sites[part], pattern.patch_size)
            done += part.size
            yield ImageProgress(done=done, total=len(sites),
                                estimate=np.where(covered > 0, total / np.maximum(covered, 1), 0.0))
    sizes = np.array([p.patch_size for p in unique])[index]
    counts = coverage(shape, sites, sizes)
    image = np.where(counts > 0, total / np.maximum(counts, 1), 0.0)
    yield image, (consistent / (len(sites) * unique[0].m) if kind != "real" else None), ran


# -- joint -------------------------------------------------------------------
def _joint(descriptors, kind, sites, patterns, shape, counts, method, iterations, sparsity, lam, params):
    """The joint solve's progress, then ``(image, bit consistency, iterations run)``; records its settings."""
    operator, subset = JointOperator(shape, sites, patterns), {}
    if method == "consistency":
        bits = unpack_bits(descriptors, operator.m) if kind == "packed" else descriptors
        solver = CoarseToDense(operator, bits, sites, iterations)
    elif method == "likelihood":
        bits = unpack_bits(descriptors, operator.m) if kind == "packed" else descriptors
        solver = JointLikelihood(operator, bits, sites, shape, iterations)
    elif method == "coherent":
        bits = unpack_bits(descriptors, operator.m) if kind == "packed" else descriptors
        keep = coarser_grid(sites, spacing=COARSE_SPACING)
        if keep is not None:  # its weak-TV solve needs thousands of iterations: on the 8-pixel sub-grid only
            operator, bits = site_subset(operator, keep), bits[keep]
        solver = JointCoherentContrast(operator, bits, iterations=iterations)
        subset = {"spacing": None if keep is None else COARSE_SPACING}
    elif method == "biht":
        packed = descriptors if kind == "packed" else pack_bits(descriptors)
        solver = JointBIHT(operator, packed, covered_counts=counts, sparsity=sparsity, iterations=iterations)
    else:
        values = unpack_bits(descriptors, operator.m) if kind == "packed" else descriptors
        solver = PrimalDualL1(FlatRange(operator), values.reshape(1, -1).astype(np.float32), lam=lam,
                              iterations=iterations, constraint="box", binary=kind != "real", backend="batched")
    # what ran beyond the method's name: the solver's own settings (BIHT and primal-dual: sparsity and lam above)
    settings = getattr(solver, "settings", None)
    params["solver_settings"] = None if settings is None else {**settings, **subset}
    state = None
    for state in solver.steps():  # every iteration: each report is a point where a caller can stop
        yield ImageProgress(done=min(state.iteration, iterations), total=iterations, estimate=state.x[0])
    consistency = None if state.bit_consistency is None else float(state.bit_consistency[0])
    yield np.asarray(state.x[0], dtype=np.float64), consistency, int(state.iteration)
