r"""Solvers of the whole image at once through the joint operator: each yields :class:`SolverState`.

The joint mode of :func:`lbdviewer.reconstruction.image.iter_reconstruct_image` runs
one of these on a :class:`lbdviewer.operators.joint.operator.JointOperator` ``A`` (all sites'
descriptors of one ``H x W`` image). Like the patch solvers, ``steps()``
yields a frozen snapshot after every iteration (a batch of one image:
``x`` has shape ``(1, H, W)``) and ``run()`` returns the last.

:class:`JointBIHT`
    BIHT with a whole-image Haar prior, the step shared among the patches
    that see a pixel;
:class:`JointSignConsistency`
    :class:`lbdviewer.solvers.image.consistency.SignConsistency` with margins that
    grow with each test's length, oriented along each site's ramp and, late
    in the solve, gated by how strongly each site's bits show structure;
:class:`CoarseToDense`
    :class:`JointSignConsistency` on a sparser sub-grid first when the grid
    is dense, then on all sites (or the plain margins at keypoints).

(:class:`lbdviewer.solvers.image.likelihood.JointLikelihood`, bits as noisy
signs, lives beside its :class:`~lbdviewer.solvers.image.likelihood.BitLikelihood`.)
"""

from __future__ import annotations

import dataclasses

import numpy as np

from lbdviewer._validation import check_fraction, check_iterations
from lbdviewer.operators.joint.operator import site_subset
from lbdviewer.reconstruction.sites import coarser_grid, is_grid
from lbdviewer.solvers.image.consistency import DEFAULT_MARGIN, DEFAULT_SMOOTHNESS, SignConsistency
from lbdviewer.solvers.image.evidence import (COHERENCE_BLUR, FULL_OVERLAP, GATE_SHARE, NOISE_AGREEMENT,
                                              STRUCTURE_AGREEMENT, gated_orientation, overlap_confidence)
from lbdviewer.solvers.image.large_scales import (FLAT_FULL, FLATTEN_BLUR, RAMP_FULL, RAMP_RELIEF, RAMP_THRESHOLD,
                                                  REGION_BLUR, REGION_SCALE, REGION_THRESHOLD, SPREAD_BLUR,
                                                  TEXTURE_SHARE, flatten_ramps, ramp_regions, ramp_terms)
from lbdviewer.solvers.image.orientation import TIE_LEAN, ramp_orientation, tie_side
from lbdviewer.solvers.state import IterativeSolver, SolverState, frozen_copy
from lbdviewer.operators.wavelets import haar_adjoint_inplace, haar_forward_inplace

#: Margins of the joint solve grow as (distance between the two fields) ** MARGIN_POWER.
MARGIN_POWER = 2
#: Weight of the total variation of :class:`JointSignConsistency` (with its strict ties; ``DEFAULT_SMOOTHNESS``
#: without them).
JOINT_SMOOTHNESS = 1e-3
#: Default iterations of :class:`JointSignConsistency`.
JOINT_ITERATIONS = 300
#: Default iterations of the plain sign consistency at sites that are not a grid (keypoints).
KEYPOINT_ITERATIONS = 200
#: On a grid so sparse that no patch overlaps another, the total variation is lowered by this share where every
#: site shows exact flat areas (see :func:`sparse_smoothness`).
SPARSE_FLAT_RELIEF = 0.5
#: Grids denser than this (pixels) start the joint solve on a sub-grid this sparse ...
COARSE_SPACING = 8
#: ... and spend this share of the iterations on all sites afterwards.
DENSE_SHARE = 0.2


class JointBIHT(IterativeSolver):
    r"""BIHT on the whole image (see Notes).

    Parameters
    ----------
    operator : JointOperator
    packed_bits : ndarray of uint8, shape (S, ceil(M / 8))
    covered_counts : ndarray of int, shape (H, W)
        Patches covering each pixel (:func:`lbdviewer.reconstruction.sites.coverage`).
    sparsity : float
        Share of the ``H W`` Haar coefficients kept, in (0, 1].
    iterations : int

    Notes
    -----
    With ``n(q)`` the number of patches covering pixel ``q``, one step is

    .. math::
        a = x + \frac{1}{M\,n} \odot \tfrac12 A^T(b - \operatorname{sign}(Ax)),\qquad
        x \leftarrow \operatorname{clip}_{[0,1]}\big(W^T H_K(W a)\big),

    i.e. the paper's step ``tau = 1/M`` per patch, shared among the patches
    that see a pixel. ``sign`` resolves ties like the descriptor
    (:meth:`JointOperator.binary_gradient`), so flat areas stay flat. Start:
    ``x = 0.5``. A state's ``objective`` is the number of bits of
    ``sign(A x)`` that differ from ``b`` (computed with the next step's
    gradient, in the same pass).

    Examples
    --------
    >>> from lbdviewer.operators import JointOperator
    >>> from lbdviewer.bits import pack_bits
    >>> from lbdviewer.bits import sign_with_ties
    >>> from lbdviewer.patterns import make_pattern
    >>> from lbdviewer.reconstruction.sites import coverage, grid_sites
    >>> pattern = make_pattern("brief", patch_size=8, m=64)
    >>> sites = grid_sites((16, 16), patch_size=8, offset=4)
    >>> op = JointOperator((16, 16), sites, pattern)
    >>> image = np.zeros((16, 16)); image[:, 8:] = 1.0
    >>> bits = pack_bits(sign_with_ties(op.forward(image), atol=1e-6))
    >>> counts = coverage((16, 16), sites, np.full(len(sites), 8))
    >>> state = JointBIHT(op, bits, covered_counts=counts, iterations=20).run()
    >>> state.iteration, state.x.shape, bool(state.x[0, :, 12:].mean() > state.x[0, :, :4].mean())
    (20, (1, 16, 16), True)
    """

    def __init__(self, operator, packed_bits, *, covered_counts, sparsity=0.4, iterations=300):
        self.operator = operator
        self.packed_bits = packed_bits
        self.sparsity = check_fraction("sparsity", sparsity)
        self.iterations = check_iterations(iterations)
        height, width = operator.domain_shape
        self.keep = max(1, int(round(self.sparsity * height * width)))
        self.step = (1.0 / (operator.m * np.maximum(covered_counts, 1))).astype(np.float32)

    def steps(self):
        """Iterate, yielding a :class:`SolverState` (one image) after every step."""
        operator, (height, width) = self.operator, self.operator.domain_shape
        n_bits = len(operator.sites) * operator.m
        x = np.full((height, width), 0.5, dtype=np.float32)
        scratch = np.empty(max(height, width), dtype=np.float32)
        gradient, _ = operator.binary_gradient(x, self.packed_bits)
        for iteration in range(1, self.iterations + 1):
            coefficients = (x + self.step * gradient).ravel()
            haar_forward_inplace(coefficients, scratch, height, width)
            magnitude = np.abs(coefficients)
            if self.keep < magnitude.size:
                threshold = np.partition(magnitude, magnitude.size - self.keep)[magnitude.size - self.keep]
                coefficients[magnitude < threshold] = 0.0
            haar_adjoint_inplace(coefficients, scratch, height, width)
            x = np.clip(coefficients.reshape(height, width), 0.0, 1.0)
            gradient, mismatches = operator.binary_gradient(x, self.packed_bits)
            yield SolverState(iteration=iteration, x=frozen_copy(x[None]),
                              objective=frozen_copy([float(mismatches)]),
                              bit_consistency=frozen_copy([1.0 - mismatches / n_bits]),
                              active=frozen_copy([True]), iterations_run=frozen_copy([iteration]),
                              finished=iteration == self.iterations)


def pair_separations(operator):
    """Distance in pixels between the two fields of every test of each pattern, shape (len(patterns), M)."""
    return np.array([np.hypot(*(p.centers[p.pairs[:, 0]] - p.centers[p.pairs[:, 1]]).T)
                     for p in operator.patterns], dtype=np.float32)


def sparse_smoothness(confidence, ties):
    r"""The joint total variation on a grid of this overlap and these flat areas (``JOINT_SMOOTHNESS`` when dense).

    With :math:`\bar c` the median overlap confidence of the sites
    (:func:`lbdviewer.solvers.image.evidence.overlap_confidence`: 1 at offset 8, 0
    at offset 32) and :math:`f` the share of sites whose bits lean to the side
    that takes ties (``ties`` is :func:`lbdviewer.solvers.image.orientation.tie_side`:
    0 there), the weight is ``JOINT_SMOOTHNESS`` :math:`(1 - r (1 - \bar c) f)`,
    :math:`r` = ``SPARSE_FLAT_RELIEF``. Exact flat areas (print on clean paper,
    screens) are kept flat by their tie bits; on a grid whose patches do not
    overlap the total variation then mostly blurs strokes and sets each patch's
    paper apart from its neighbours'. The book titles at offset 32 (BRIEF):
    correlation 0.72 at 1e-3, 0.77 at 7e-4, 0.80 at 5e-4; photos have no
    flat areas and keep 1e-3 (camera at offset 32: 0.68 at 1e-3, 0.58 at
    5e-4; astronaut FREAK 0.62 and 0.50).

    Examples
    --------
    >>> sparse_smoothness(np.ones(4), np.zeros(4)), sparse_smoothness(np.zeros(4), np.zeros(4))
    (0.001, 0.0005)
    >>> sparse_smoothness(np.zeros(4), np.ones(4))
    0.001
    """
    flat = float(np.mean(np.asarray(ties) == 0)) if np.size(ties) else 0.0
    sparsity = 1.0 - float(np.median(confidence)) if np.size(confidence) else 0.0
    return JOINT_SMOOTHNESS * (1.0 - SPARSE_FLAT_RELIEF * sparsity * flat)


class JointSignConsistency(IterativeSolver):
    r"""Sign consistency on the whole image, margins growing with the tests' lengths, from ``x0`` (default flat).

    Parameters
    ----------
    operator : JointOperator
    bits : ndarray, shape (S, M)
        Target bits in {-1, +1}.
    iterations : int
        Default ``JOINT_ITERATIONS``.
    margin : float
        Average margin of each pattern's strict tests.
    x0 : ndarray, shape (H, W), optional
        Starting image.
    oriented : bool
        Orient each site's margins along the ramp its bits show
        (:func:`lbdviewer.solvers.image.orientation.ramp_orientation`), so that
        faint gradients are not drawn steep. Default True.
    gated : bool, optional
        After ``GATE_SHARE`` of the iterations (or when no step decreases the
        objective before), scale each site's margins by how strongly its bits
        show structure rather than noise
        (:func:`lbdviewer.solvers.image.evidence.gated_orientation`), so flat noisy
        paper is drawn flat. Needs ``oriented``; default: as ``oriented``.
    strict_ties : bool, optional
        Ask the bits of the side that takes ties for the same margin at
        every site whose bits show no flat area
        (:func:`lbdviewer.solvers.image.orientation.tie_side`), with the total
        variation ``JOINT_SMOOTHNESS``. Needs ``oriented``; default: as
        ``oriented``.

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

    Even ``d^2`` margins draw a faint, consistent gradient steep: a test
    almost across it is decided by it and asked the margin of one along it
    (camera's sky came out black at the top, its coat's folds bright). The
    oriented margins (``oriented``) ask a test at angle :math:`\theta` to the
    ramp a site's bits show for :math:`\cos^2\theta` of its margin, in
    proportion to how cleanly the bits are one ramp
    (:mod:`lbdviewer.solvers.image.orientation`). Measured at offset 8, 32x32,
    M = 512, one process, correlation BRIEF / FREAK:

    ==========  ===============  ===============  ===============
    image       200 iterations   300 iterations   300, oriented
    ==========  ===============  ===============  ===============
    camera      0.754 / 0.591    0.780 / 0.651    0.879 / 0.809
    astronaut   0.880 / 0.909    0.892 / 0.930    0.902 / 0.939
    coffee      0.923 / 0.885    0.924 / 0.896    0.924 / 0.897
    chelsea     0.923 / 0.931    0.924 / 0.926    0.931 / 0.921
    rocket      0.815 / 0.832    0.815 / 0.823    0.841 / 0.840
    ==========  ===============  ===============  ===============

    (coffee, chelsea, rocket: :mod:`skimage.data`, held out while the rule
    was chosen; rank correlation drops on three of their six cases, by at
    most 0.017). The default is 300 oriented iterations (``JOINT_ITERATIONS``):
    at 280, camera FREAK falls below 0.80.

    Margins make noise visible: faint noise on flat paper gives the bits of
    strong noise, and every one of its tests asks for a margin. So the
    margins are gated (``gated``, :mod:`lbdviewer.solvers.image.evidence`): after
    250 of the 300 iterations each site's margins are scaled by how strongly
    its bits show structure, so a site read as noise is asked for its signs
    only and the total variation flattens its speckle. Measured at offset 8,
    32x32, M = 512 (BRIEF / FREAK; lines tesseract reads as written):

    ==========================  ===============  ===============
    case                        300, oriented    + gated
    ==========================  ===============  ===============
    ``document`` (noisy paper)  1/7, 1/7 lines   6/7, 6/7 lines
    flat image, faint noise     16.5x, 34.9x     0, 0 (flat)
    camera                      0.879 / 0.809    0.876 / 0.816
    astronaut                   0.902 / 0.939    0.898 / 0.935
    coffee                      0.924 / 0.897    0.915 / 0.895
    chelsea                     0.931 / 0.921    0.922 / 0.908
    rocket                      0.841 / 0.840    0.836 / 0.834
    ==========================  ===============  ===============

    (flat image: the reconstruction's spread as a multiple of the noise's.)
    The held-out photos lose 0.002-0.013 where faint texture reads as noise;
    the book titles still read 4/4. The moment of the gate matters for the
    document, whose faint print sits at tesseract's limit: gated after 230,
    240, 260 or 270 iterations it reads 4, 5, 4, 6 of 7 lines from BRIEF
    bits and 6, 4, 3, 3 from FREAK bits. A solve whose objective stops
    decreasing before the gate goes on to it; one with no descent left is
    gated at once.

    Only the strict side of a test is asked a margin: a bit of the side that
    takes ties (−1) may be an exact tie, so half the bits asked only for
    their sign. Exact ties come from flat areas (astronaut's clipped black
    visor and backdrop: 11 % of its pixels are 0, 6 % of its tests tie, 215
    of its 3721 sites tie on more than half their tests; camera: 0.2 %), and
    there a site's bits lean far to that side. So every site whose bits lean
    to it by at most ``TIE_LEAN`` (0.6) asks those bits for the margin too
    (``strict_ties``; one number a site, no dearer an iteration: 0.98x and
    1.00x of the solve without it, ``scripts/bench_joint_ab.py 5aaec6d``,
    BRIEF and FREAK), and the total variation rises from 8e-4 to
    ``JOINT_SMOOTHNESS`` (1e-3). Measured at offset 8, 32x32, M = 512, 300
    iterations (BRIEF / FREAK; lines tesseract reads as written):

    ==========================  ===============  ===============  ===============
    case                        gated            + strict ties    + TV 1e-3
    ==========================  ===============  ===============  ===============
    camera                      0.876 / 0.816    0.890 / 0.833    0.908 / 0.829
    astronaut                   0.898 / 0.935    0.920 / 0.923    0.921 / 0.930
    ``document`` (noisy paper)  6/7, 6/7 lines   6/7, 6/7 lines   6/7, 7/7 lines
    flat image, faint noise     flat             flat             flat
    coffee                      0.915 / 0.895    0.926 / 0.931    0.925 / 0.926
    chelsea                     0.922 / 0.908    0.947 / 0.949    0.948 / 0.938
    rocket                      0.836 / 0.833    0.841 / 0.841    0.848 / 0.831
    ==========================  ===============  ===============  ===============

    Astronaut BRIEF sits at 0.9207, just over 0.92 (0.9201 after 290
    iterations, 0.9194 after 280, 0.9221 after 320): other leans give 0.919
    (0.55), 0.920 (0.65-0.8); a total variation of 1.2e-3 and 1.5e-3 gives
    0.922 and 0.923 but 1.5e-3 reads 5/7 lines of the document from BRIEF
    bits. Margins scaled per site instead (by the bits' ramp fit or the
    blurred estimate's agreement, at the gate or earlier) reached at most
    0.910 and lost the document's FREAK lines or chelsea.

    Camera's figures moved with rounding while the L-BFGS pairs of the
    objective before the gate were kept after it: its large flat areas
    followed whichever way the first steps went. Adding BRIEF's steps to the
    filtered plane in place (the same sums in another order,
    :func:`lbdviewer.operators.joint._kernels._bits_blocks`) moved camera BRIEF from
    0.908 to 0.877, and starts perturbed by noise of 1e-4 (four draws, and
    the flat start) gave 0.873-0.909 (BRIEF) and 0.805-0.865 (FREAK). The
    pairs are now dropped at the gate (:class:`SignConsistency`'s
    ``reweigh``), and the same draws give (BRIEF / FREAK):

    ==========================  ===============  ===============
    case                        pairs kept       pairs dropped
    ==========================  ===============  ===============
    camera                      0.873-0.909 /    0.899-0.902 /
                                0.805-0.865      0.826-0.831
    astronaut                   0.9202-0.9212 /  0.9201-0.9203 /
                                0.924-0.930      0.923-0.925
    ``document``                5-6/7, 7/7       6/7, 7/7 lines
    coffee                      0.925 / 0.926    0.924 / 0.923
    chelsea                     0.947 / 0.938    0.947 / 0.943
    rocket                      0.844 / 0.831    0.837 / 0.839
    ==========================  ===============  ===============

    (held-out photos: the flat start only.)
    """

    def __init__(self, operator, bits, *, iterations=JOINT_ITERATIONS, margin=DEFAULT_MARGIN, x0=None,
                 oriented=True, gated=None, strict_ties=None, ramps=None):
        weights = pair_separations(operator) ** MARGIN_POWER
        weights /= np.maximum(weights.mean(axis=1, keepdims=True), 1e-12)  # each pattern: ``margin`` on average
        if oriented and not hasattr(operator, "test_directions"):
            raise ValueError(f"oriented margins need a JointOperator, got {type(operator).__name__}; "
                             "pass oriented=False")
        gated = oriented if gated is None else gated
        strict_ties = oriented if strict_ties is None else strict_ties
        ramps = oriented if ramps is None else ramps
        if strict_ties and not oriented:
            raise ValueError("strict ties are passed with the oriented margins: pass oriented=True or "
                             "strict_ties=False")
        if gated and not oriented:
            raise ValueError("gated margins scale the oriented ones: pass oriented=True or gated=False")
        if ramps and not oriented:
            raise ValueError("ramp regions ride on the oriented margins: pass oriented=True or ramps=False")
        bits = np.asarray(bits)
        orientation, regions, smoothness = None, None, DEFAULT_SMOOTHNESS
        if oriented:
            ties = tie_side(bits, tie_positive=bool(getattr(operator, "tie_positive", False)))
            orientation = (*ramp_orientation(operator, bits), ties if strict_ties else np.zeros(len(bits)))
            if ramps:
                regions = ramp_regions(operator, bits)
                orientation = (*orientation, *ramp_terms(regions))
        confidence = overlap_confidence(operator) if oriented else None
        if strict_ties:
            smoothness = sparse_smoothness(confidence, ties)
        iterations = check_iterations(iterations)
        self.settings = self.describe(iterations, margin=margin, oriented=oriented, gated=gated,
                                      strict_ties=strict_ties, ramps=ramps, smoothness=smoothness)
        after = self.settings["gated_after"]
        reweigh = None
        if after is not None:
            def gate(x):  # the gate, then the large scales flattened where the bits show ramps
                orientation_after, start = gated_orientation(operator, bits, x, orientation, confidence=confidence)
                if regions is not None:
                    start = flatten_ramps(x if start is None else start, regions)
                return orientation_after, start

            reweigh = (after, gate)
        self.regions = regions
        self.solver = SignConsistency(operator, bits, margin=margin * weights, orientation=orientation,
                                      smoothness=smoothness, iterations=iterations, x0=x0, reweigh=reweigh)

    @staticmethod
    def describe(iterations=JOINT_ITERATIONS, *, margin=DEFAULT_MARGIN, oriented=True, gated=None, strict_ties=None,
                 ramps=None, smoothness=None):
        """What a solve with these arguments runs: the record's ``solver_settings`` (plain JSON values).

        The library's constants that shape the solve are written out (margin
        law, total variation, gate, tie lean, ramp regions), so a record says
        which solver ran without the source at hand. ``smoothness``: the
        total variation the solve chose (:func:`sparse_smoothness`; default
        the dense grid's).

        Examples
        --------
        >>> settings = JointSignConsistency.describe(300)
        >>> settings["gated_after"], settings["strict_ties"], settings["smoothness"], settings["ramps"] is None
        (250, True, 0.001, False)
        >>> JointSignConsistency.describe(300, oriented=False)["gated_after"] is None
        True
        """
        gated = oriented if gated is None else gated
        strict_ties = oriented if strict_ties is None else strict_ties
        ramps = oriented if ramps is None else ramps
        after = int(round(GATE_SHARE * iterations))
        gated_after = after if gated and 1 <= after < iterations else None
        if smoothness is None:
            smoothness = JOINT_SMOOTHNESS if strict_ties else DEFAULT_SMOOTHNESS
        return {
            "solver": "JointSignConsistency", "iterations": int(iterations), "margin": float(margin),
            "margin_power": MARGIN_POWER, "oriented": bool(oriented), "smoothness": float(smoothness),
            "gated_after": gated_after,
            "gate": None if gated_after is None else {"noise_agreement": NOISE_AGREEMENT,
                                                      "structure_agreement": STRUCTURE_AGREEMENT,
                                                      "blur": COHERENCE_BLUR, "full_overlap": FULL_OVERLAP},
            "strict_ties": bool(strict_ties), "tie_lean": TIE_LEAN if strict_ties else None,
            "ramps": None if not ramps else {
                "texture_share": TEXTURE_SHARE, "ramp_threshold": RAMP_THRESHOLD, "region_blur": REGION_BLUR,
                "region_threshold": REGION_THRESHOLD, "spread_blur": SPREAD_BLUR, "ramp_full": RAMP_FULL,
                "relief": RAMP_RELIEF, "flattened_at_gate": gated_after is not None, "flat_full": FLAT_FULL,
                "flatten_blur": FLATTEN_BLUR, "region_scale": REGION_SCALE},
        }

    def steps(self, x0=None):
        """The states of the underlying :class:`SignConsistency`, from ``x0`` if given (else the construction's)."""
        if x0 is not None:
            x0 = np.asarray(x0, dtype=np.float64)
            if x0.shape != self.solver.shape:
                raise ValueError(f"x0 must have shape {self.solver.shape}, got {x0.shape}")
            self.solver.x0 = x0
        return self.solver.steps()


class CoarseToDense(IterativeSolver):
    """:class:`JointSignConsistency`, first on a sub-grid ``COARSE_SPACING`` apart when the grid is denser.

    A dense grid (offset 1: ~450 tests a pixel) costs ~60 times more an
    iteration than the sub-grid, which already fixes the image's layout and
    brightness; the dense sites then refine it for ``DENSE_SHARE`` of the
    iterations. States count iterations over both stages; only the last is
    ``finished``.

    Sites that are not a grid (keypoints: :func:`lbdviewer.reconstruction.sites.is_grid`)
    get the plain margins (``oriented=False``, nothing gated, no ramp
    regions), as feature files do: the oriented, gated and strict-tie rules
    were chosen on grids, and on the FAST sites of the book titles they cost
    0.02-0.05 of correlation (FREAK 0.905 -> 0.883, BRIEF 0.950 -> 0.928,
    ``scripts/bench_images.py --sites fast``). Their default budget is
    ``KEYPOINT_ITERATIONS`` (:func:`default_joint_iterations`).

    Parameters
    ----------
    operator : JointOperator
        On all ``sites``.
    bits : ndarray, shape (S, M)
    sites : ndarray of int, shape (S, 2)
    iterations : int
    """

    def __init__(self, operator, bits, sites, iterations):
        self.iterations = check_iterations(iterations)
        oriented, keep = is_grid(sites), coarser_grid(sites, spacing=COARSE_SPACING)
        dense = self.iterations if keep is None else max(1, int(round(DENSE_SHARE * self.iterations)))
        # Every stage built now, so that the record holds the settings each runs with (the total
        # variation each chose from its own sites' overlap, :func:`sparse_smoothness`).
        self._coarse = (None if dense == self.iterations else
                        JointSignConsistency(site_subset(operator, keep), bits[keep],
                                             iterations=self.iterations - dense, oriented=oriented))
        self._dense_solver = JointSignConsistency(operator, bits, iterations=dense, oriented=oriented)
        stages = [] if self._coarse is None else [{**self._coarse.settings, "sites": int(np.count_nonzero(keep)),
                                                   "spacing": COARSE_SPACING}]
        #: What the solve runs (the record's ``solver_settings``): its stages, coarse first.
        self.settings = {"solver": "CoarseToDense", "stages": stages + [self._dense_solver.settings]}

    def steps(self):
        """Yield the coarse stage's states, then the dense stage's (from the coarse result), numbered on."""
        if self._coarse is None:
            yield from self._dense_solver.steps()
            return
        state = None
        for state in self._coarse.steps():
            yield dataclasses.replace(state, finished=False)
        done = state.iteration
        for state in self._dense_solver.steps(x0=state.x[0]):
            yield dataclasses.replace(state, iteration=done + state.iteration)


def default_joint_iterations(sites):
    """Default iterations of the joint sign consistency at ``sites``: ``JOINT_ITERATIONS`` on a grid, else ``KEYPOINT_ITERATIONS``.

    Examples
    --------
    >>> from lbdviewer.reconstruction.sites import grid_sites
    >>> default_joint_iterations(grid_sites((64, 64), patch_size=32, offset=8)), default_joint_iterations([[0, 0], [3, 7]])
    (300, 200)
    """
    return JOINT_ITERATIONS if is_grid(sites) else KEYPOINT_ITERATIONS


class FlatRange:
    """A :class:`JointOperator` seen as one ``(S M) x (H W)`` matrix (for :class:`PrimalDualL1`).

    ``thresholds`` are every site's, flat ``(S M,)``.
    """

    def __init__(self, joint):
        self.joint = joint
        self.shape = joint.shape
        self.domain_shape = joint.domain_shape
        self.pattern = joint.patterns[0]
        self.thresholds = joint.site_thresholds().ravel()

    def forward(self, x):
        out = self.joint.forward(x)
        return out.reshape(*out.shape[:-2], -1)

    def adjoint(self, y):
        y = np.asarray(y)
        return self.joint.adjoint(y.reshape(*y.shape[:-1], *self.joint.range_shape))

    def norm_estimate(self):
        return self.joint.norm_estimate()
