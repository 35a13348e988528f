"""Oriented margins: the ramp a site's bits show, and a faint gradient that is no longer drawn steep."""

import numpy as np
import pytest

from lbdviewer.operators.joint.operator import JointOperator
from lbdviewer.bits import sign_with_ties
from lbdviewer.patterns.families import make_pattern
from lbdviewer.reconstruction.sites import grid_sites
from lbdviewer.solvers.image.orientation import ramp_orientation
from lbdviewer.solvers.image.joint import JointSignConsistency


def _problem(image, family, m=256):
    sites = grid_sites(image.shape, patch_size=32, offset=8)
    op = JointOperator(image.shape, sites, make_pattern(family, patch_size=32, m=m))
    return op, sign_with_ties(op.forward(image), tie_positive=op.tie_positive, atol=1e-9)


@pytest.mark.parametrize("family", ["brief", "freak"])
def test_a_clean_ramp_is_found_along_its_gradient_and_texture_is_not(family):
    rows, cols = np.mgrid[0:64, 0:64]
    ramp = 0.3 + 0.004 * (np.cos(0.5) * rows + np.sin(0.5) * cols)  # gradient at 0.5 rad from the rows
    scale, direction = ramp_orientation(*_problem(ramp, family))
    assert np.all(scale < 0.3)
    unit = direction / np.linalg.norm(direction, axis=1, keepdims=True)
    assert np.all(np.abs(unit @ [np.cos(0.5), np.sin(0.5)]) > 0.95)
    noise = np.random.default_rng(0).random((64, 64))
    scale, direction = ramp_orientation(*_problem(noise, family))
    assert scale.mean() > 0.8 and np.all(np.linalg.norm(direction, axis=1) <= np.sqrt(1 - scale) + 1e-9)


def test_bits_of_the_wrong_shape_are_named():
    op, bits = _problem(np.zeros((48, 48)), "brief")
    with pytest.raises(ValueError, match="bits must have shape"):
        ramp_orientation(op, bits[:, :10])


@pytest.mark.parametrize("family", ["brief", "freak"])
def test_oriented_margins_draw_a_faint_ramp_flatter_against_an_edge(family):
    # left: a faint vertical ramp (5 grey levels over 96 rows); right: a dark region. Truth: ramp / edge ~ 0.04.
    image = np.full((96, 96), 0.2)
    image[:, :48] = np.linspace(0.62, 0.60, 96)[:, None]
    op, bits = _problem(image, family)

    def ramp_to_edge(oriented):
        x = JointSignConsistency(op, bits, oriented=oriented, gated=False, strict_ties=False).run().x[0]
        ramp = x[:24, 4:44].mean() - x[-24:, 4:44].mean()
        return ramp / (x[:, 4:44].mean() - x[:, 52:92].mean())

    plain, oriented = ramp_to_edge(False), ramp_to_edge(True)
    # measured: BRIEF 1.31 to 1.06, FREAK 0.97 to 0.72 -- flatter, still far from the truth (margins ask a ramp
    # region for a rise growing with its size, an edge for one margin)
    assert 0 < oriented < 0.9 * plain


def test_the_oriented_solve_decreases_its_objective():
    image = np.full((64, 64), 0.7)
    image[:, 32:] = np.linspace(0.2, 0.3, 64)[:, None]
    op, bits = _problem(image, "brief")
    objectives = [float(s.objective[0]) for s in JointSignConsistency(op, bits, iterations=40, ramps=False).steps()]
    assert objectives[-1] < 0.5 * objectives[0]
    assert np.all(np.diff(objectives) <= 1e-9 * objectives[0])
    # with the ramp regions the gate also flattens the right half's ramp: the solve goes on from another point, and
    # only that step may raise the objective
    solver = JointSignConsistency(op, bits, iterations=40)
    assert solver.regions.weight.max() > 0
    objectives = [float(s.objective[0]) for s in solver.steps()]
    after = solver.settings["gated_after"]
    rises = np.flatnonzero(np.diff(objectives) > 1e-9 * objectives[0]) + 1  # iteration index (0-based) that rose
    assert set(rises) <= {after} and objectives[-1] < 0.5 * objectives[0]
