import numpy as np
import pytest
from scipy.optimize import minimize

from lbdviewer.solvers.projections import (
    check_constraint,
    mean_box_projection_inplace,
    project,
    project_box,
    project_mean_box,
)


def _points(n_rows=50, n=64, seed=0):
    rng = np.random.default_rng(seed)
    scales = rng.choice([0.01, 0.3, 1.0, 5.0], size=(n_rows, 1))
    return rng.normal(0.5, 1.0, (n_rows, n)) * scales + rng.normal(0, 1, (n_rows, 1))


def test_result_lies_in_the_set_with_exact_mean():
    x = project_mean_box(_points(), ndim=1)
    assert x.min() >= 0.0 and x.max() <= 1.0
    np.testing.assert_allclose(x.mean(axis=1), 0.5, atol=1e-14)


def test_idempotent():
    x = project_mean_box(_points(), ndim=1)
    np.testing.assert_allclose(project_mean_box(x, ndim=1), x, atol=1e-14)


def test_variational_inequality_against_points_of_the_set():
    # x = P_S(z) iff <z - x, y - x> <= 0 for every y in S.
    z = _points(n_rows=20, seed=1)
    x = project_mean_box(z, ndim=1)
    y = project_mean_box(_points(n_rows=20, seed=2), ndim=1)
    assert np.all(np.sum((z - x) * (y - x), axis=1) <= 1e-12)


@pytest.mark.parametrize("seed", range(4))
def test_matches_brute_force_optimisation(seed):
    z = np.random.default_rng(seed).normal(0.5, 0.8, 8)
    result = minimize(
        lambda x: np.sum((x - z) ** 2), np.full(8, 0.5), jac=lambda x: 2 * (x - z),
        bounds=[(0, 1)] * 8, constraints=[{"type": "eq", "fun": lambda x: x.mean() - 0.5}],
        method="SLSQP", options={"ftol": 1e-14, "maxiter": 500},
    )
    np.testing.assert_allclose(project_mean_box(z[None], ndim=1)[0], result.x, atol=1e-6)


def test_batched_patches_and_dtype():
    z = _points(n_rows=6, n=16).reshape(2, 3, 4, 4).astype(np.float32)
    x = project_mean_box(z)
    assert x.shape == z.shape and x.dtype == np.float32
    np.testing.assert_allclose(x.mean(axis=(-2, -1)), 0.5, atol=1e-6)
    np.testing.assert_allclose(x.reshape(6, 16), project_mean_box(z.reshape(6, 16), ndim=1))


def test_numba_kernel_matches_sorting_path():
    z = _points(n_rows=30, n=1024, seed=3)
    expected = project_mean_box(z, ndim=1)
    for row, target in zip(z.astype(np.float32), expected):
        mean_box_projection_inplace(row, 0.5)
        np.testing.assert_allclose(row, target, atol=1e-6)


def test_other_means_and_extremes():
    z = _points(n_rows=5, n=10)
    for mean in (0.0, 0.2, 1.0):
        np.testing.assert_allclose(project_mean_box(z, mean=mean, ndim=1).mean(axis=1), mean,
                                   atol=1e-12)


def test_box_and_dispatch():
    z = np.array([[-1.0, 0.25, 3.0]])
    np.testing.assert_array_equal(project_box(z), [[0.0, 0.25, 1.0]])
    np.testing.assert_array_equal(project(z, "box"), project_box(z))
    np.testing.assert_array_equal(project(z, None), z)
    np.testing.assert_allclose(project(z, "patch", ndim=1).mean(), 0.5)


@pytest.mark.parametrize(("call", "name"), [
    (lambda: project_mean_box(np.zeros(4), mean=1.5, ndim=1), "mean"),
    (lambda: project_mean_box(np.zeros(4), ndim=2), "ndim"),
    (lambda: check_constraint("simplex"), "constraint"),
    (lambda: project_box(np.zeros(2), lower=1, upper=0), "lower"),
])
def test_bad_arguments_name_the_parameter(call, name):
    with pytest.raises(ValueError, match=name):
        call()


def test_ndim_from_one_to_all_axes():
    np.testing.assert_allclose(project_mean_box(np.array([2.0, 0.0, -1.0]), ndim=1), [1.0, 0.5, 0.0])
    with pytest.raises(ValueError, match="ndim"):
        project_mean_box(np.zeros((2, 3)), ndim=0)


@pytest.mark.parametrize("z", [[10.0, -10.0, -10.0], [-5.0, -5.0, 7.0, 7.0], [3.0, 3.0, 3.0, -40.0, 0.1],
                               [0.0, 0.0, 1.0, 1.0, 1.0, 1.0, 1.0]])
def test_the_kernel_on_vectors_whose_newton_steps_leave_no_free_entry(z):
    """Every entry clipped at some step (no active entry to divide by): bisection takes over."""
    expected = project_mean_box(np.array([z]), ndim=1)[0]
    row = np.array(z, dtype=np.float64)
    mean_box_projection_inplace(row, 0.5)
    np.testing.assert_allclose(row, expected, atol=1e-9)
    assert row.mean() == pytest.approx(0.5) and row.min() >= 0 and row.max() <= 1


def test_the_in_place_projection_does_not_stop_where_its_function_is_one():
    """z = (2, 2, 0, 0) to mean 1/4: the first shift (0.75) leaves f = 1 exactly; the root is 1.5."""
    z = np.array([2.0, 2.0, 0.0, 0.0])
    shift = mean_box_projection_inplace(z, 0.25)
    assert shift == 1.5
    np.testing.assert_array_equal(z, [0.5, 0.5, 0.0, 0.0])             # mean 1/4, the nearest such point
