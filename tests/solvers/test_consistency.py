import threading

import numpy as np
import pytest

from lbdviewer.operators.joint.operator import JointOperator
from lbdviewer.bits import sign_with_ties
from lbdviewer.patterns.base import Pattern
from lbdviewer.patterns.families import make_pattern
from lbdviewer.reconstruction.image import describe_sites, reconstruct_image
from lbdviewer.solvers.image.joint import CoarseToDense, pair_separations
from lbdviewer.reconstruction.sites import grid_sites
from lbdviewer.testing import joint_sign_problem
from lbdviewer.solvers.image.consistency import (FIRST_STEP, HISTORY, SignConsistency, _curvature_pass, _direction_pass,
                                           compact_coefficients, remember_pair, smoothed_total_variation)


@pytest.fixture(scope="module")
def problem():
    return joint_sign_problem("brief")


def test_objective_decreases_and_bits_become_consistent(problem):
    _, op, bits = problem
    states = list(SignConsistency(op, bits, smoothness=0.0, iterations=80).steps())
    assert states[-1].finished and not any(s.finished for s in states[:-1])
    assert [s.iteration for s in states] == list(range(1, len(states) + 1))
    objectives = np.array([s.objective[0] for s in states])
    assert objectives[-1] < 1e-3 * objectives[0]
    assert states[-1].bit_consistency[0] > 0.99 > states[0].bit_consistency[0]
    x = states[-1].x[0]
    assert x.min() >= 0 and x.max() <= 1
    with pytest.raises(ValueError):
        x[0, 0] = 0.3


def test_total_variation_gradient_matches_finite_differences():
    x = np.random.default_rng(1).random((5, 6))
    value, grad = smoothed_total_variation(x, 0.1)
    step = 1e-6
    for index in [(0, 0), (2, 3), (4, 5)]:
        bumped = x.copy()
        bumped[index] += step
        assert np.isclose((smoothed_total_variation(bumped, 0.1)[0] - value) / step, grad[index], atol=1e-4)


def two_loop_direction(projected, free, pairs):
    """The textbook L-BFGS two-loop recursion (Nocedal and Wright, Algorithm 7.4), then 0 off the free pixels."""
    q, alphas = projected.astype(np.float64), []
    for s, y in reversed(pairs):
        alphas.append(s @ q / (s @ y))
        q = q - alphas[-1] * y
    s, y = pairs[-1]
    r = (s @ y) / (y @ y) * q
    for (s, y), alpha in zip(pairs, reversed(alphas)):
        r = r + s * (alpha - y @ r / (s @ y))
    return np.where(free, -r, 0.0)


def test_compact_direction_equals_the_two_loop_recursion():
    rng = np.random.default_rng(6)
    n, rows = 3000, HISTORY + 1
    x = rng.random(n).astype(np.float32)
    x[:200], x[200:400] = 0.0, 1.0  # pixels on the bounds: free only where the gradient points inwards
    gradient = rng.standard_normal(n).astype(np.float32)
    memory = np.zeros((rows, n), np.float32), np.zeros((rows, n), np.float32)
    sty, yty, order = np.zeros((rows, rows)), np.zeros((rows, rows)), []
    for k in range(HISTORY + 3):  # more pairs than the memory keeps; one with negative curvature
        s = rng.standard_normal(n).astype(np.float32)
        y = (s * rng.uniform(0.5, 2.0, n) * (-1 if k == 3 else 1)).astype(np.float32)
        spare = next(r for r in range(rows) if r not in order)
        dots, _ = _curvature_pass(x, x - s, gradient, gradient - y, *memory, spare, 0, n, True)
        kept = remember_pair(order, sty, yty, dots, spare)
        assert (kept[-1] == spare) == (k != 3)
        order = kept
    assert len(order) == HISTORY
    dots, largest = _curvature_pass(x, x, gradient, gradient, *memory, 0, 0, n, False)
    free = ~(((x <= 0) & (gradient > 0)) | ((x >= 1) & (gradient < 0)))
    projected = np.where(free, gradient, 0.0)
    assert np.isclose(largest, np.abs(projected).max())
    direction = np.empty(n, np.float32)
    coefficients = compact_coefficients(order, sty, yty, dots[2:], largest)
    slope = _direction_pass(x, gradient, *memory, *coefficients, 0, n, direction)
    pairs = [(memory[0][r].astype(np.float64), memory[1][r].astype(np.float64)) for r in order]
    expected = two_loop_direction(projected, free, pairs)
    np.testing.assert_allclose(direction, expected, rtol=1e-3, atol=1e-4 * np.abs(expected).max())
    assert np.isclose(slope, gradient.astype(np.float64) @ direction, rtol=1e-4) and slope < 0
    steepest = compact_coefficients([], sty, yty, dots[2:], largest)
    _direction_pass(x, gradient, *memory, *steepest, 0, n, direction)
    np.testing.assert_allclose(direction, -FIRST_STEP * projected / np.abs(projected).max(), rtol=1e-6)


def test_flat_image_with_tie_bits_stays_flat():
    image = np.full((32, 32), 0.3)
    sites = grid_sites(image.shape, patch_size=16, offset=8)
    op = JointOperator(image.shape, sites, make_pattern("brief", patch_size=16, m=64))
    bits = sign_with_ties(op.forward(image), atol=1e-6)
    assert np.all(bits == -1)
    state = SignConsistency(op, bits, iterations=20).run()
    assert np.ptp(state.x[0]) < 1e-6 and state.bit_consistency[0] == 1.0


def test_steps_run_in_the_calling_thread_and_can_be_closed(problem):
    _, op, bits = problem
    before = threading.active_count()
    steps = SignConsistency(op, bits, iterations=500).steps()
    first = next(steps)
    assert first.iteration == 1 and not first.finished and threading.active_count() == before
    steps.close()
    assert threading.active_count() == before


def test_fused_hinge_matches_forward_and_adjoint(problem):
    image, op, bits = problem

    class Plain:  # the same operator without its fused squared_hinge
        domain_shape, forward, adjoint, tie_positive = op.domain_shape, op.forward, op.adjoint, op.tie_positive

    x0 = np.clip(image + 0.1, 0, 1)
    fused = SignConsistency(op, bits, iterations=5, x0=x0)
    plain = SignConsistency(Plain(), bits, iterations=5, x0=x0)
    value, gradient, consistency, _, _ = fused._evaluate(x0.ravel())
    expected = plain._evaluate(x0.ravel())
    assert np.isclose(value, expected[0], rtol=1e-6) and consistency == expected[2]
    np.testing.assert_allclose(gradient, expected[1], atol=1e-6 * np.abs(expected[1]).max())


def test_run_equals_last_step(problem):
    _, op, bits = problem
    last = list(SignConsistency(op, bits, iterations=15).steps())[-1]
    assert np.array_equal(SignConsistency(op, bits, iterations=15).run().x, last.x)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"margin": -1.0}, "margin must be non-negative"),
        ({"smoothness": -1.0}, "smoothness must be non-negative"),
        ({"iterations": 0}, "iterations must be a positive integer, got 0"),
        ({"gradient_tolerance": -1e-3}, "gradient_tolerance must be non-negative, got -0.001"),
        ({"decrease_tolerance": float("nan")}, "decrease_tolerance must be non-negative, got nan"),
    ],
)
def test_bad_parameters_are_named(problem, kwargs, message):
    _, op, bits = problem
    with pytest.raises(ValueError, match=message):
        SignConsistency(op, bits, **kwargs)


def test_stop_tests_can_be_loosened_or_turned_off(problem):
    _, op, bits = problem
    loose = SignConsistency(op, bits, iterations=200, decrease_tolerance=1e-2).run()
    default = SignConsistency(op, bits, iterations=200).run()
    off = SignConsistency(op, bits, iterations=200, decrease_tolerance=0.0, gradient_tolerance=0.0).run()
    assert loose.iteration < default.iteration <= off.iteration
    assert off.objective[0] <= default.objective[0] <= loose.objective[0]


def test_bits_of_the_wrong_shape_are_refused(problem):
    _, op, bits = problem
    with pytest.raises(ValueError, match=r"bits must have shape \(16, 128\), got \(16, 127\)"):
        SignConsistency(op, bits[:, :-1])


def test_pair_separations_are_field_distances():
    pattern = Pattern("toy", 8, [[1, 1], [4, 5], [1, 5]], [1, 1, 1], [1, 1, 1], [[0, 1], [2, 0]])
    other = pattern.with_pairs([[1, 2], [0, 2]])
    op = JointOperator((8, 16), [[0, 0], [0, 8]], [pattern, other])
    assert np.allclose(pair_separations(op), [[5.0, 4.0], [3.0, 4.0]])


def test_joint_default_is_sign_consistency_and_beats_averaging():
    rng = np.random.default_rng(3)
    image = np.kron(rng.random((6, 6)), np.ones((8, 8)))
    image = np.clip(image + 0.02 * rng.normal(size=image.shape), 0, 1)
    pattern = make_pattern("brief", patch_size=16, m=256)
    sites = grid_sites(image.shape, patch_size=16, offset=4)
    bits = describe_sites(image, sites, pattern)
    joint = reconstruct_image(bits, sites, pattern, shape=image.shape, iterations=120)
    patches = reconstruct_image(bits, sites, pattern, shape=image.shape, mode="patches", iterations=50)
    assert joint.method == "consistency" and joint.mode == "joint"
    score = lambda x: np.corrcoef(x.ravel(), image.ravel())[0, 1]
    assert score(joint.image) > 0.9 and score(joint.image) > score(patches.image) + 0.04
    with pytest.raises(ValueError, match="method 'consistency' solves the whole image"):
        reconstruct_image(bits, sites, pattern, shape=image.shape, mode="patches", method="consistency")


def _blocks_on_a_dense_grid(seed):
    """Flat 8x8 blocks of random grey, BRIEF (M = 128) at offset 2: the image, its sites, operator and bits."""
    image = np.kron(np.random.default_rng(seed).random((5, 5)), np.ones((8, 8)))
    sites = grid_sites(image.shape, patch_size=16, offset=2)
    op = JointOperator(image.shape, sites, make_pattern("brief", patch_size=16, m=128))
    return image, sites, op, sign_with_ties(op.forward(image), atol=1e-6)


def test_dense_grid_starts_on_a_coarse_sub_grid_then_refines_on_all_sites():
    image, sites, op, bits = _blocks_on_a_dense_grid(4)
    steps = [(state.iteration, state) for state in CoarseToDense(op, bits, sites, 50).steps()]
    counts = [done for done, _ in steps]
    assert counts == sorted(set(counts)) and counts[-1] <= 50
    coarse_sites = {state.x.shape for _, state in steps}
    assert coarse_sites == {(1, *image.shape)}
    dense = SignConsistency(op, bits, iterations=1, x0=steps[-1][1].x[0])
    # sites whose blurred estimate misses many bits (here the flat blocks' tie bits) are asked for signs only
    assert dense._evaluate(steps[-1][1].x[0].ravel())[2] > 0.94
    assert len(steps) > 10  # the coarse stage ran (40 iterations) before the dense one (10)


def test_joint_margins_average_the_default_for_every_pattern_whatever_its_scale(monkeypatch):
    import lbdviewer.solvers.image.joint as whole_image

    small = make_pattern("brief", patch_size=16, m=64)
    large = small.transformed(scale=2.0, patch_size=32)  # a coarse pyramid level: pairs twice as long
    op = JointOperator((40, 40), [[0, 0], [4, 4]], [small, large])
    seen = {}
    real = whole_image.SignConsistency

    def spy(operator, bits, *, margin, **kwargs):
        seen["margin"] = margin
        return real(operator, bits, margin=margin, **kwargs)

    monkeypatch.setattr(whole_image, "SignConsistency", spy)
    bits = sign_with_ties(op.forward(np.random.default_rng(5).random((40, 40))), atol=1e-6)
    next(whole_image.JointSignConsistency(op, bits, iterations=1).steps())
    margin = seen["margin"]
    np.testing.assert_allclose(margin.mean(axis=1), whole_image.DEFAULT_MARGIN, rtol=1e-5)
    np.testing.assert_allclose(margin[0], margin[1], rtol=1e-4)  # same pairs, same margins at any scale
    separations = pair_separations(op)[0]
    assert np.argmax(margin[0]) == np.argmax(separations)  # longer tests ask more


def test_each_stage_records_the_total_variation_it_runs_with():
    """The coarse sub-grid overlaps less than the dense grid: its stage chooses (and records) its own weight."""
    _, sites, op, bits = _blocks_on_a_dense_grid(5)
    solver = CoarseToDense(op, bits, sites, 50)
    coarse, dense = solver.settings["stages"]
    assert coarse["smoothness"] == pytest.approx(solver._coarse.solver.smoothness)
    assert dense["smoothness"] == pytest.approx(solver._dense_solver.solver.smoothness)
    assert coarse["smoothness"] != dense["smoothness"]  # what describe() alone wrote for both stages
