"""Strict ties: the side of the bits that takes ties is asked a margin where the site's bits show no flat area."""

import numpy as np
import pytest

from lbdviewer.operators.joint.operator import JointOperator
from lbdviewer.bits import sign_with_ties
from lbdviewer.patterns.families import make_pattern
from lbdviewer.reconstruction.sites import grid_sites
from lbdviewer.solvers.image.evidence import gated_orientation
from lbdviewer.solvers.image.orientation import ramp_orientation, tie_side


def _problem(image, family="brief", m=128):
    sites = grid_sites(image.shape, patch_size=32, offset=8)
    op = JointOperator(image.shape, sites, make_pattern(family, patch_size=32, m=m))
    return op, sign_with_ties(op.forward(image), tie_positive=op.tie_positive, atol=1e-9)


def test_sites_of_a_flat_area_keep_their_ties_and_the_others_are_strict():
    image = np.random.default_rng(1).random((48, 96))
    image[:, :48] = 0.0  # clipped black: every test inside ties
    op, bits = _problem(image)
    sides = tie_side(bits, tie_positive=op.tie_positive)
    columns = op.sites[:, 1]
    assert np.all(sides[columns == 0] == 0) and np.all(sides[columns == columns.max()] == 1)


@pytest.mark.parametrize("tie_positive", [False, True])
def test_the_kernel_asks_the_tie_side_its_share_of_the_margin(tie_positive):
    op, bits = _problem(np.random.default_rng(2).random((48, 48)), "freak")
    op.tie_positive = tie_positive
    x = np.random.default_rng(3).random((48, 48)).astype(np.float32)
    scale, direction = ramp_orientation(op, bits)
    share = np.linspace(0.0, 1.0, len(bits))
    margin = np.full((1, op.m), 0.02, dtype=np.float32)
    value, gradient, _ = op.squared_hinge(x, bits > 0, margin, orientation=(scale, direction, share))
    cos = np.einsum("sk,km->sm", direction, op.test_directions[0])
    strict = (bits < 0) if tie_positive else (bits > 0)
    delta = 0.02 * (scale[:, None] + cos ** 2) * np.where(strict, 1.0, share[:, None])
    residual = np.maximum(delta - bits * op.margins(x), 0.0)
    assert value == pytest.approx(np.sum(residual.astype(np.float64) ** 2), rel=1e-4)
    np.testing.assert_allclose(gradient, op.adjoint(-2.0 * bits * residual), atol=1e-4)
    plain, _, _ = op.squared_hinge(x, bits > 0, margin, orientation=(scale, direction))
    none, _, _ = op.squared_hinge(x, bits > 0, margin, orientation=(scale, direction, np.zeros(len(bits))))
    assert plain == none < value


def test_the_gate_passes_the_tie_side_on_and_bad_ones_are_named():
    op, bits = _problem(np.random.default_rng(4).random((48, 48)))
    scale, direction = ramp_orientation(op, bits)
    sides = tie_side(bits)
    (_, _, passed), _ = gated_orientation(op, bits, np.full((48, 48), 0.5), (scale, direction, sides))
    assert passed is sides
    with pytest.raises(ValueError, match="tie_side must lie in"):
        op.squared_hinge(np.zeros((48, 48)), bits > 0, 0.1, orientation=(scale, direction, 2 * np.ones(len(bits))))
    with pytest.raises(ValueError, match="lean must be in"):
        tie_side(bits, lean=0.3)
