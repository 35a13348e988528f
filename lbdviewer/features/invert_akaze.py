r"""Invert AKAZE feature files at each keypoint's scale.

An AKAZE descriptor compares, within each of three grids (2x2, 3x3, 4x4
cells) and each channel (intensity, two rotated derivatives), *every* pair
of cells. Its bits therefore give the complete ranking of the cells' values
per grid and channel, and nothing else: the unknown patch of the keypoint's
level enters only through the 87 cell values ``v = F u``
(:class:`~lbdviewer.libraries.akaze.operator.AkazePatchOperator`).

For every keypoint we

1. read the rank of each cell in its grid and channel from the bits (the
   number of cells it beats) and centre and scale the ranks of each grid and
   channel to zero mean and unit variance: :math:`\hat v`;
2. take the patch of least norm with those cell values,
   :math:`u = \tilde F^T (\tilde F \tilde F^T + \epsilon I)^{-1} \hat v`,
   where :math:`\tilde F` is ``F`` with the rows of each channel divided by
   their mean norm (so that no channel dominates), smoothed by a Gaussian as
   wide as the sample spacing ``s`` (the intensity rows are sparse samples
   ``s`` level pixels apart);
3. resize it by the level's pixel size and add it at its place in the level-0
   image, weighted by its smoothed footprint; the average is mapped to
   ``[0, 1]`` as ``0.5 + v / (6 std(v))`` (clipped).

The result is a band-pass picture of the image at the keypoints' scales
(each patch is known up to an offset and a gain). On coffee (200 keypoints)
the derivative channels raise the correlation from 0.652 (intensity cells
alone) to 0.679; their weight against the intensity rows hardly matters
(0.678 to 0.679 for 0.3x to 3x).

That closed form is the ``"patches"`` mode. The ``"joint"`` mode (the
default) solves for one level-0 image that explains every keypoint's bits
at once (:func:`iter_invert_akaze_joint`): sign consistency with a
total-variation prior through
:class:`~lbdviewer.libraries.akaze.joint.AkazeJointOperator`, whose linear
view reproduces 98.9 % of the file's bits on the original (the document
sample, 500 keypoints). Its measurements are weighted by channel so that
each channel's functionals have the intensity's mean norm
(:func:`~lbdviewer.libraries.akaze.joint.balanced_channel_weights`: the
derivatives' are 5.8 times shorter on the document, 6.9 on astronaut; with
one margin for all, their bits weighed ~40 times less). Measured from 500
keypoints (correlation over the covered pixels; lines tesseract reads of the
document, both polarities, as written or cleaned up, ``scripts/legibility.py
--features akaze:500``):

=============  ======================  ===================  ==================
image          closed form (patches)   joint, unweighted    joint, balanced
=============  ======================  ===================  ==================
document       0.54, 0 of 7 lines      0.875, 3 of 7        0.890, 4 of 7
astronaut      0.65                    0.956                0.964
=============  ======================  ===================  ==================

(ORB, 500 keypoints: document 3 of 7.) The bits the solve explains rose
from 96.5 to 97.4 % (document) and 97.9 to 98.8 % (astronaut). The two
smallest lines (10 and 9 pixels high) stay unread: the 500 strongest
keypoints leave the last line 5 keypoints. Every keypoint AKAZE's detector
keeps (839 on the document: OpenCV's AKAZE sets no cap unless a program
calls ``setMaxPoints``) gives 0.896 and 5 of 7 lines (``--features
akaze:all``, cleaned up; 4 or 5 as written).

What limits the print is the objective, not the solver: started from the
original itself, the solve ends at the same objective as from a flat start
(0.752 against 0.749, document, 500 keypoints) and reads 5 of 7 lines, not
7. Every level-0 bit it leaves unexplained compares cells the original
tells apart by less than 0.009 (paper noise); the total variation then
prefers letters of less contrast with their counters filled.

The closed form took 60-90 s and 2.2-3.5 GB there (every keypoint's dense
functionals at once); the joint solve takes 0.6 times the grid solve of the
same image on the document and 1.3 times on the dark-mode screen, below
250 MB (``scripts/bench_invert.py``). Its total variation,
``AKAZE_SMOOTHNESS`` (5e-5), is weaker than the grid's: AKAZE's cells are 5
to 10 level pixels wide and a stronger prior blurs the print (unweighted,
document 1e-4: 2 of 7 lines, 0.872; 8e-4: 1 of 7; 2e-5: 3 of 7 but 0.846;
astronaut 0.956, 0.956, 0.948 at 1e-4, 5e-5, 2e-5).
"""

from __future__ import annotations

import numpy as np
from scipy import ndimage

from lbdviewer.features.progress import InversionProgress
from lbdviewer.libraries.akaze.joint import AkazeJointOperator, balanced_channel_weights
from lbdviewer.libraries.akaze.operator import N_CELLS
from lbdviewer.libraries.akaze.model import Model
from lbdviewer.libraries.akaze.grid import GRIDS, comparison_pairs
from lbdviewer.solvers.image.consistency import DEFAULT_MARGIN, SignConsistency

RIDGE = 1e-6
STRETCH = 6.0
#: Weight of the total variation of the joint AKAZE solve (see the module notes).
AKAZE_SMOOTHNESS = 5e-5
#: Estimates handed out during a joint solve (it reports every iteration).
JOINT_ESTIMATES = 100


def cell_ranks(bits):
    """Standardised ranks of the cells of every grid and channel, from ``(K, 486)`` bits in {-1, +1}.

    Returns
    -------
    ndarray, shape (K, 87)
        Cell-major, channel-minor, as the values of
        :func:`~lbdviewer.libraries.akaze.grid.comparison_pairs`.

    Examples
    --------
    >>> values = np.random.default_rng(0).normal(size=(1, 87))
    >>> pairs = comparison_pairs()
    >>> bits = np.where(values[:, pairs[:, 0]] > values[:, pairs[:, 1]], 1, -1)
    >>> ranks = cell_ranks(bits)
    >>> bool(np.all(np.argsort(ranks[0, 0:12:3]) == np.argsort(values[0, 0:12:3])))
    True
    """
    bits = np.asarray(bits)
    pairs = comparison_pairs()
    wins = np.zeros((bits.shape[0], 3 * N_CELLS))
    np.add.at(wins.T, pairs[:, 0], (bits.T > 0))
    np.add.at(wins.T, pairs[:, 1], (bits.T < 0))
    out, first = np.zeros_like(wins), 0
    for n in GRIDS:
        for channel in range(3):
            columns = np.arange(first, first + n * n) * 3 + channel
            block = wins[:, columns] - wins[:, columns].mean(axis=1, keepdims=True)
            out[:, columns] = block / np.maximum(block.std(axis=1, keepdims=True), 1e-12)
        first += n * n
    return out


def iter_invert_akaze_joint(features, iterations):
    """The joint AKAZE solve of a feature file (see the module notes), as :func:`iter_invert_akaze` yields.

    Yields
    ------
    InversionProgress
        One per iteration (the estimate every 1/``JOINT_ESTIMATES`` of the
        budget and at the end), then ``(image, covered, bit_consistency,
        iterations run, solver settings)``.
    """
    model = Model(**features.model_params())
    operator = AkazeJointOperator(model, features.keypoints, features.image_shape)
    weights = balanced_channel_weights(operator)
    operator = operator.with_channel_weights(weights)
    settings = {"solver": "SignConsistency", "operator": "AkazeJointOperator", "iterations": int(iterations),
                "margin": DEFAULT_MARGIN, "smoothness": AKAZE_SMOOTHNESS,
                "channel_weights": [round(w, 4) for w in weights]}
    solver = SignConsistency(operator, features.bits(), margin=DEFAULT_MARGIN, smoothness=AKAZE_SMOOTHNESS,
                             iterations=iterations)
    every = max(1, iterations // JOINT_ESTIMATES)
    state = None
    for state in solver.steps():
        image = np.clip(state.x[0], 0.0, 1.0) if state.iteration % every == 0 or state.finished else None
        yield InversionProgress(done=state.iteration, total=iterations, image=image, iterations_run=state.iteration)
    yield (np.asarray(state.x[0], dtype=np.float64), operator.covered, float(state.bit_consistency[0]),
           int(state.iteration), settings)


def iter_invert_akaze(features):
    """Reconstruct the level-0 image an AKAZE feature file describes (see the module notes).

    Yields
    ------
    InversionProgress
        One per keypoint (no image), then the tuple ``(image, covered,
        bit_consistency, 0, None)`` (no solver iterations and no solver
        settings: each keypoint is one ridge solve) that
        :func:`lbdviewer.features.invert.iter_invert_features` turns into its result.
    """
    import cv2

    model = Model(**features.model_params())
    height, width = features.image_shape
    keypoints = features.keypoints
    bits = features.bits()
    ranks = cell_ranks(bits)
    total, weight = np.zeros((height, width)), np.zeros((height, width))
    consistent = 0.0
    operators = model.iter_patch_operators(keypoints, image_shape=(height, width))  # one at a time: each is large
    _, _, _, scale, _, _ = model._frames(keypoints)
    for k, op in enumerate(operators):
        rows = op.functionals.reshape(N_CELLS, 3, -1)
        intensity = rows[:, 0]
        scaled = np.concatenate([rows[:, channel] / np.linalg.norm(rows[:, channel], axis=1).mean()
                                 for channel in range(3)])
        targets = np.concatenate([ranks[k, channel::3] for channel in range(3)])
        gram = scaled @ scaled.T
        coefficients = np.linalg.solve(gram + RIDGE * np.trace(gram) / len(gram) * np.eye(len(gram)), targets)
        sigma = float(scale[k])
        patch = ndimage.gaussian_filter((coefficients @ scaled).reshape(op.domain_shape), sigma)
        footprint = ndimage.gaussian_filter((np.abs(intensity).sum(axis=0) > 0).reshape(op.domain_shape) * 1.0,
                                            sigma)
        predicted = np.where(op.forward(patch) > 0, 1, -1)
        consistent += float(np.mean(predicted == bits[k]))
        side = op.domain_shape[0] * op.power
        if op.power > 1:
            patch = cv2.resize(patch, (side, side), interpolation=cv2.INTER_LINEAR)
            footprint = cv2.resize(footprint, (side, side), interpolation=cv2.INTER_LINEAR)
        top, left = op.origin[0] * op.power, op.origin[1] * op.power
        r0, c0 = max(top, 0), max(left, 0)
        r1, c1 = min(top + side, height), min(left + side, width)
        if r0 < r1 and c0 < c1:
            f = footprint[r0 - top:r1 - top, c0 - left:c1 - left]
            total[r0:r1, c0:c1] += f * patch[r0 - top:r1 - top, c0 - left:c1 - left]
            weight[r0:r1, c0:c1] += f
        yield InversionProgress(done=k + 1, total=len(keypoints))
    covered = weight > 1e-3 * max(weight.max(), 1e-12)
    image = np.where(covered, total / np.maximum(weight, 1e-12), 0.0)
    spread = float(image[covered].std()) if np.any(covered) else 1.0
    image = np.where(covered, np.clip(0.5 + image / (STRETCH * max(spread, 1e-12)), 0.0, 1.0), 0.0)
    yield image, covered, consistent / max(len(keypoints), 1), 0, None
