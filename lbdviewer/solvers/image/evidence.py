r"""How strongly a site's bits show structure rather than noise, and margins that follow it.

Noise has no scale in the bits: faint noise on flat paper gives exactly the
bits of strong noise, and a solver that asks every test for a margin draws
it as full-contrast speckle (:class:`lbdviewer.solvers.image.joint.JointSignConsistency`
on the ``document`` sample: the paper's speckle hides six of its seven lines
from tesseract).

**The test.** With :math:`x` a reconstruction, :math:`G_\beta` a Gaussian
blur of :math:`\beta` pixels (``COHERENCE_BLUR``) and :math:`b_s` the bits
of site :math:`s`, the agreement

.. math::  a_s = \operatorname{mean}_i \big[\operatorname{sign}(A G_\beta x)_{si} = b_{si}\big]

is the share of the site's bits the blurred estimate still reproduces.
White noise is fitted as speckle about one field wide; the blur removes it,
and only chance agreement is left: :math:`a_s \approx 0.62` (BRIEF) to
:math:`0.64` (FREAK) on pure noise. Edges, text and the layout of a photo
survive the blur: :math:`a_s \approx 0.8`--:math:`0.97`. A site's gain is
:math:`g_s = \operatorname{clip}((a_s - a_0) / (a_1 - a_0), 0, 1)`
(``NOISE_AGREEMENT`` :math:`a_0`, ``STRUCTURE_AGREEMENT`` :math:`a_1`).

**Gated margins** (:func:`gated_orientation`). Sign consistency asks test
:math:`i` of site :math:`s` for a margin :math:`\delta_{si}`; late in the
solve (:class:`~lbdviewer.solvers.image.joint.JointSignConsistency`, after
``GATE_SHARE`` of its iterations) each site's margins are scaled by its gain,
:math:`\delta_{si} \to g_s\, \delta_{si}`. A site read as noise then asks only
for its signs, with no contrast, and the total variation flattens its
speckle; a site read as structure keeps its margins. Where no site shows
structure, every margin is zero and a flat image is a minimiser: the solve
goes on from the estimate's mean.

The thresholds are :class:`~lbdviewer.solvers.image.coherence.JointCoherentContrast`'s,
set on camera, the document and the flat-noise test. Others were measured
for the gate (offset 8, 32x32, M = 512, BRIEF / FREAK, document lines read
as written; the held-out photos, coffee, chelsea and rocket, correlation):
:math:`(a_0, a_1)` = (0.64, 0.76) reads 4/7 and 2/7 lines and loses at most
0.005 on the held-out photos; (0.66, 0.80) 5/7 and 4/7, at most 0.009;
(0.70, 0.80) 6/7 and 6/7, at most 0.013; (0.70, 0.85) 4/7 and 5/7, at most
0.018. After 250 iterations of the default solve the agreement of pure
noise (256x256, 3 grey levels) is 0.62 on average (99th percentile 0.68,
BRIEF; 0.63 and 0.74, FREAK); the document's printed lines sit at 0.72-0.84
and 0.70-0.89, so FREAK's text and noise overlap and the gate cannot be
sharp.

**Confidence from overlap** (:func:`overlap_confidence`). The thresholds
were set at offset 8, where every pixel lies in 16 patches and a site read
as noise by mistake is redrawn by its neighbours. On a sparse grid the
agreement of structure falls towards noise's (the book titles at offset 32:
text sites 0.70-0.86, noise 0.59-0.70, BRIEF) while a site gated by mistake
is lost: the titles came out washed out, correlation 0.54 and no line read
(0.71 and 3/4 ungated). So a site's gain is trusted in proportion to how
many patches cover its pixels, :math:`c_s = \log \bar n_s / \log 16`
clipped to ``[0, 1]`` (``FULL_OVERLAP``), and its margins are scaled by
:math:`1 - c_s (1 - g_s)`: a full gate at offset 8, none at offset 32 (one
patch a pixel), half at offset 16.
"""

from __future__ import annotations

import numpy as np
from scipy.ndimage import gaussian_filter, maximum_filter

from lbdviewer.operators.joint.operator import JointOperator, site_subset
from lbdviewer.reconstruction.sites import coverage
from lbdviewer.solvers.image.consistency import operator_margins

#: Blur (pixels) that removes fitted speckle before the agreement test.
COHERENCE_BLUR = 4.0
#: Agreement at or below which a site is read as noise (gain 0) ...
NOISE_AGREEMENT = 0.70
#: ... and at or above which as structure (gain 1).
STRUCTURE_AGREEMENT = 0.80
#: Sites whose agreement :func:`blurred_agreement` measures at a time (memory ``O(SITE_CHUNK x M)``).
SITE_CHUNK = 16384
#: Share of the iterations of the joint sign consistency after which its margins are gated.
GATE_SHARE = 5 / 6
#: Patches covering a pixel (on average over a site's patch) at which its gate is trusted in full.
FULL_OVERLAP = 16


def blurred_agreement(operator, bits, x, *, blur=COHERENCE_BLUR, chunk=SITE_CHUNK):
    """Share of each site's bits that the estimate blurred by ``blur`` pixels reproduces, shape (S,).

    Ties of the blurred estimate are resolved as the operator's
    (``operator.tie_positive``). A :class:`~lbdviewer.operators.joint.operator.JointOperator`
    with more than ``chunk`` sites is read ``chunk`` sites at a time (an
    offset-1 grid of a 512x512 image has 118 M tests). See the module notes.

    Examples
    --------
    >>> from lbdviewer.bits import sign_with_ties
    >>> from lbdviewer.patterns import make_pattern
    >>> op = JointOperator((16, 24), [[0, 0], [0, 8]], make_pattern("brief", patch_size=16, m=64))
    >>> image = np.zeros((16, 24)); image[:, 12:] = 1.0
    >>> bits = sign_with_ties(op.forward(image), atol=1e-6)
    >>> blurred_agreement(op, bits, image, blur=0).tolist()
    [1.0, 1.0]
    """
    x = np.asarray(x, dtype=np.float32)
    if not blur >= 0:
        raise ValueError(f"blur must be non-negative, got {blur!r}")
    if blur > 0:
        x = gaussian_filter(x, blur)
    bits = np.asarray(bits)
    tie_positive = bool(getattr(operator, "tie_positive", False))

    def agreement(op, rows):  # the bits of :func:`sign_with_ties` (atol 1e-6) as booleans, compared directly
        margins = operator_margins(op, x)
        positive = margins >= -1e-6 if tie_positive else margins > 1e-6
        return np.mean(positive == (bits[rows] > 0), axis=1)

    n_sites = len(bits)
    if n_sites <= chunk or not isinstance(operator, JointOperator):
        return agreement(operator, slice(None))
    return np.concatenate([agreement(site_subset(operator, np.arange(lo, min(lo + chunk, n_sites))),
                                     slice(lo, lo + chunk)) for lo in range(0, n_sites, chunk)])


def coherence_gain(agreement, *, noise=NOISE_AGREEMENT, structure=STRUCTURE_AGREEMENT):
    """``clip((agreement - noise) / (structure - noise), 0, 1)``: 0 for noise, 1 for structure.

    Examples
    --------
    >>> coherence_gain([0.6, 0.75, 0.9]).round(2).tolist()
    [0.0, 0.5, 1.0]
    """
    if not 0 <= noise < structure <= 1:
        raise ValueError(f"need 0 <= noise < structure <= 1, got noise={noise!r}, structure={structure!r}")
    return np.clip((np.asarray(agreement, dtype=np.float64) - noise) / (structure - noise), 0.0, 1.0)


def overlap_confidence(operator, *, full=FULL_OVERLAP):
    """How far each site's gate is trusted: ``clip(log n / log full, 0, 1)``, ``n`` the overlap its patch reaches.

    ``n`` is the largest number of patches covering a pixel of the site's
    patch (:func:`lbdviewer.reconstruction.sites.coverage`): 16 inside a grid of offset 8,
    at its borders too, 4 at offset 16, 1 at offset 32. See the module notes.

    Examples
    --------
    >>> from lbdviewer.patterns import make_pattern
    >>> from lbdviewer.reconstruction.sites import grid_sites
    >>> pattern = make_pattern("brief", patch_size=32, m=64)
    >>> [float(np.median(overlap_confidence(JointOperator((128, 128), grid_sites((128, 128), patch_size=32,
    ...                                                                         offset=step), pattern))))
    ...  for step in (32, 16, 8)]
    [0.0, 0.5, 1.0]
    """
    if not full > 1:
        raise ValueError(f"full must be greater than 1, got {full!r}")
    sizes = operator.patch_sizes
    counts = coverage(operator.domain_shape, operator.sites, sizes)
    most = np.empty(len(sizes))
    for size in np.unique(sizes):  # the largest count over each patch: a sliding maximum sampled at its centre
        rows = np.flatnonzero(sizes == size)
        peaks = maximum_filter(counts, size=int(size), mode="constant")
        centre = operator.sites[rows] + int(size) // 2
        most[rows] = peaks[np.minimum(centre[:, 0], counts.shape[0] - 1), np.minimum(centre[:, 1], counts.shape[1] - 1)]
    return np.clip(np.log(np.maximum(most, 1.0)) / np.log(full), 0.0, 1.0)


def gated_orientation(operator, bits, x, orientation, *, confidence=None):
    r"""Each site's oriented margins scaled by its gain at the estimate ``x`` (see the module notes).

    Parameters
    ----------
    operator : lbdviewer.operators.joint.operator.JointOperator
    bits : ndarray, shape (S, M)
        Bits in {-1, +1}.
    x : ndarray, shape (H, W)
        The estimate so far.
    orientation : (ndarray, ndarray, ...)
        ``(scale, direction)``, shapes (S,) and (S, 2), of
        :func:`lbdviewer.solvers.image.orientation.ramp_orientation`: test
        :math:`i` of site :math:`s` is asked
        :math:`\delta_i (c_s + (g_s \cdot u_i)^2)`. Further arrays (the
        ``tie_side`` and ramp terms of
        :meth:`lbdviewer.operators.joint.operator.JointOperator.squared_hinge`) are passed on.
    confidence : ndarray, shape (S,), optional
        :math:`c_s` in ``[0, 1]`` (:func:`overlap_confidence`): the gain
        applied is :math:`1 - c_s (1 - g_s)`. Default 1 (the gain itself).

    Returns
    -------
    orientation : (ndarray, ndarray)
        ``(gain * scale, sqrt(gain) * direction[, tie_side])``: every margin of site
        :math:`s` times its gain :math:`g_s`.
    start : ndarray or None
        The flat image at ``x``'s mean where no site shows structure (all
        gains 0), else None: the form ``reweigh`` of
        :class:`lbdviewer.solvers.image.consistency.SignConsistency` takes.

    Examples
    --------
    A ramp with an edge is structure at both sites; noise is structure at
    neither, so the margins vanish and the solve goes on from flat:

    >>> from lbdviewer.bits import sign_with_ties
    >>> from lbdviewer.patterns import make_pattern
    >>> op = JointOperator((32, 48), [[0, 0], [0, 16]], make_pattern("brief", patch_size=32, m=128))
    >>> plain = (np.ones(2), np.zeros((2, 2)))
    >>> image = np.linspace(0.0, 0.5, 48) * np.ones((32, 1)); image[:, 24:] += 0.5
    >>> (scale, _), start = gated_orientation(op, sign_with_ties(op.forward(image), atol=1e-6), image, plain)
    >>> scale.tolist(), start is None
    ([1.0, 1.0], True)
    >>> noise = np.random.default_rng(0).random((32, 48))
    >>> (scale, _), start = gated_orientation(op, sign_with_ties(op.forward(noise), atol=1e-6), noise, plain)
    >>> scale.tolist(), float(np.ptp(start))
    ([0.0, 0.0], 0.0)
    """
    scale, direction = (np.asarray(v, dtype=np.float64) for v in orientation[:2])
    n_sites = len(np.asarray(bits))
    if scale.shape != (n_sites,) or direction.shape != (n_sites, 2):
        raise ValueError(f"orientation must have shapes ({n_sites},) and ({n_sites}, 2), got {scale.shape} and "
                         f"{direction.shape}")
    gains = coherence_gain(blurred_agreement(operator, bits, x))
    if confidence is not None:
        confidence = np.asarray(confidence, dtype=np.float64)
        if confidence.shape != (n_sites,) or not np.all((confidence >= 0) & (confidence <= 1)):
            raise ValueError(f"confidence must hold {n_sites} values in [0, 1], got shape {confidence.shape}")
        gains = 1.0 - confidence * (1.0 - gains)
    start = None if gains.any() else np.full(np.shape(x), float(np.mean(x)))
    return (gains * scale, np.sqrt(gains)[:, None] * direction, *orientation[2:]), start
