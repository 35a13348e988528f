"""Gated margins: sites whose bits show noise are asked for their signs only, so flat noisy paper is drawn flat."""

import numpy as np
import pytest

from lbdviewer.operators.joint.operator import JointOperator
from lbdviewer.bits import sign_with_ties
from lbdviewer.patterns.families import make_pattern
from lbdviewer.reconstruction.image import describe_sites, reconstruct_image
from lbdviewer.reconstruction.sites import grid_sites
from lbdviewer.solvers.image.consistency import DEFAULT_MARGIN, SignConsistency
from lbdviewer.solvers.image.evidence import blurred_agreement, coherence_gain, gated_orientation
from lbdviewer.solvers.image.orientation import ramp_orientation
from lbdviewer.solvers.image.joint import JointSignConsistency


def _problem(image, family, m=256):
    sites = grid_sites(image.shape, patch_size=32, offset=8)
    op = JointOperator(image.shape, sites, make_pattern(family, patch_size=32, m=m))
    return op, sign_with_ties(op.forward(image), tie_positive=op.tie_positive, atol=1e-9)


def _paper_with_a_bar(seed=3):
    """Paper at 0.9 with noise of 3 grey levels, and a dark bar (a line of print) across its middle."""
    image = 0.9 + np.random.default_rng(seed).normal(0.0, 3 / 255, (96, 96))
    image[40:52, 16:80] = 0.15
    return np.clip(image, 0.0, 1.0)


def test_gated_orientation_scales_each_site_by_its_gain():
    image = _paper_with_a_bar()
    op, bits = _problem(image, "brief")
    orientation = ramp_orientation(op, bits)
    x = JointSignConsistency(op, bits, iterations=60, gated=False).run().x[0]
    (scale, direction), start = gated_orientation(op, bits, x, orientation)
    gains = coherence_gain(blurred_agreement(op, bits, x))
    assert gains.min() == 0.0 and 0 < np.mean(gains == 0) < 1  # the paper's sites are read as noise ...
    assert gains.max() == 1.0 and start is None  # ... and the bar's as structure
    np.testing.assert_allclose(scale, gains * orientation[0])
    lengths = np.linalg.norm(direction, axis=1) ** 2
    np.testing.assert_allclose(lengths, gains * np.linalg.norm(orientation[1], axis=1) ** 2)


def test_without_structure_every_margin_vanishes_and_the_solve_goes_on_from_flat():
    noise = 0.5 + np.random.default_rng(5).normal(0.0, 0.3 / 255, (64, 64))
    op, bits = _problem(noise, "freak")
    x = JointSignConsistency(op, bits, iterations=60, gated=False).run().x[0]
    (scale, direction), start = gated_orientation(op, bits, x, ramp_orientation(op, bits))
    assert not scale.any() and not direction.any()
    assert start.shape == x.shape and np.ptp(start) == 0 and start[0, 0] == pytest.approx(x.mean())


def test_orientations_of_the_wrong_shape_are_named():
    op, bits = _problem(_paper_with_a_bar(), "brief")
    with pytest.raises(ValueError, match="orientation must have shapes"):
        gated_orientation(op, bits, np.full(op.domain_shape, 0.5), (np.ones(3), np.zeros((3, 2))))


@pytest.mark.parametrize("family", ["brief", "freak"])
def test_flat_noise_below_one_grey_level_is_drawn_flat_by_the_default(family):
    # the test, for the default solver: without gating it draws this noise as speckle 16-35x its std
    image = 0.5 + np.random.default_rng(5).normal(0.0, 0.3 / 255, (64, 64))
    sites = grid_sites(image.shape, patch_size=32, offset=8)
    pattern = make_pattern(family, patch_size=32, m=256)
    x = reconstruct_image(describe_sites(image, sites, pattern), sites, pattern, shape=image.shape).image
    assert x.std() < 0.25 * image.std()


@pytest.mark.parametrize("family", ["brief", "freak"])
def test_noisy_paper_is_drawn_flatter_and_the_print_stands_out_more(family):
    image = _paper_with_a_bar()
    op, bits = _problem(image, family)
    paper = np.zeros(image.shape, dtype=bool)
    paper[:, 84:] = paper[:24, :] = paper[70:, :] = True  # at least 18 px from the bar

    def measured(gated):
        x = JointSignConsistency(op, bits, gated=gated).run().x[0]
        return x[paper].std(), x[paper].mean() - x[42:50, 24:72].mean()

    (speckle, contrast), (plain_speckle, plain_contrast) = measured(True), measured(False)
    # measured: paper std 0.018 -> 0.002 (BRIEF), 0.045 -> 0.007 (FREAK); print over paper speckle 3.3 -> 11.9,
    # 4.6 -> 9.5 (the print's contrast falls too: margins, not the bits, set it)
    assert speckle < 0.5 * plain_speckle
    assert contrast / speckle > 2 * plain_contrast / plain_speckle > 0


def test_reweigh_changes_the_margins_once_and_the_objective_never_rises():
    op, bits = _problem(_paper_with_a_bar(), "brief")
    orientation = ramp_orientation(op, bits)
    calls = []

    def halve(x):
        calls.append(x.shape)
        return (orientation[0] / 2, orientation[1] / np.sqrt(2)), None

    solver = SignConsistency(op, bits, margin=DEFAULT_MARGIN, orientation=orientation, iterations=30,
                             reweigh=(20, halve))
    objectives = [float(s.objective[0]) for s in solver.steps()]
    assert calls == [op.domain_shape] and len(objectives) == 30
    assert np.all(np.diff(objectives) <= 1e-9 * objectives[0])
    assert objectives[20] < 0.75 * objectives[19]  # half the margins: about a quarter of the squares


def test_reweigh_drops_the_curvature_pairs_of_the_old_objective(monkeypatch):
    from lbdviewer.solvers.image import consistency

    op, bits = _problem(_paper_with_a_bar(), "brief")
    orientation = ramp_orientation(op, bits)
    pairs, original = [], consistency.compact_coefficients

    def counting(order, *args):
        pairs.append(len(order))
        return original(order, *args)

    monkeypatch.setattr(consistency, "compact_coefficients", counting)
    solver = SignConsistency(op, bits, orientation=orientation, iterations=30,
                             reweigh=(20, lambda x: ((orientation[0] / 2, orientation[1]), None)))
    states = list(solver.steps())
    assert len(states) == 30
    assert pairs[0] == 0 and max(pairs[:20]) > 1  # the memory fills up before the reweigh...
    assert pairs[20] == 0 and pairs[21] == 1  # ... and starts again after it (iteration 21's direction)


def test_reweigh_can_restart_from_an_image():
    op, bits = _problem(_paper_with_a_bar(), "brief")
    orientation = ramp_orientation(op, bits)
    zero = (np.zeros_like(orientation[0]), np.zeros_like(orientation[1]))
    flat = np.full(op.domain_shape, 0.42)
    solver = SignConsistency(op, bits, orientation=orientation, iterations=30, reweigh=(10, lambda x: (zero, flat)))
    state = solver.run()
    # no margin left: a flat image costs no data term and its total variation has no slope, so the solve ends there
    assert state.iteration == 11 and state.finished and np.all(state.x[0] == np.float32(0.42))
    assert solver._data_term(state.x[0])[0] == 0.0


def test_a_slow_decrease_does_not_end_the_solve_before_its_reweigh():
    op, bits = _problem(_paper_with_a_bar(), "brief")
    orientation = ramp_orientation(op, bits)
    plain = list(SignConsistency(op, bits, orientation=orientation, iterations=400).steps())
    assert plain[-1].finished and len(plain) < 300  # its objective stops decreasing (measured: 102 iterations)
    calls = []

    def record(x):
        calls.append(len(calls))
        return orientation, None

    states = list(SignConsistency(op, bits, orientation=orientation, iterations=400, reweigh=(300, record)).steps())
    assert calls == [0] and len(states) > 300 and states[-1].finished
    assert not any(state.finished for state in states[:-1])


@pytest.mark.parametrize("reweigh, message", [
    ((0, lambda x: None), "reweigh's iteration must be an integer in"),
    ((30, lambda x: None), "reweigh's iteration must be an integer in"),
    ((2.5, lambda x: None), "reweigh's iteration must be an integer in"),
    ((5, "halve"), "reweigh's update must be callable"),
])
def test_bad_reweigh_arguments_are_named(reweigh, message):
    op, bits = _problem(_paper_with_a_bar(), "brief")
    with pytest.raises(ValueError, match=message):
        SignConsistency(op, bits, orientation=ramp_orientation(op, bits), iterations=30, reweigh=reweigh)
    with pytest.raises(ValueError, match="reweigh needs an orientation"):
        SignConsistency(op, bits, iterations=30, reweigh=(5, lambda x: None))


def test_gating_needs_oriented_margins():
    op, bits = _problem(_paper_with_a_bar(), "brief")
    with pytest.raises(ValueError, match="gated margins scale the oriented ones"):
        JointSignConsistency(op, bits, oriented=False, gated=True)


def test_agreement_read_a_chunk_of_sites_at_a_time_is_the_same():
    image = _paper_with_a_bar()
    op, bits = _problem(image, "freak")
    x = JointSignConsistency(op, bits, iterations=30, gated=False).run().x[0]
    whole = blurred_agreement(op, bits, x)
    np.testing.assert_array_equal(blurred_agreement(op, bits, x, chunk=7), whole)
    assert whole.shape == (len(op.sites),) and 0 < whole.min() and whole.max() <= 1
