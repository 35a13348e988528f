import numpy as np
import pytest

from lbdviewer.patterns.base import Pattern
from lbdviewer.patterns.families import FAMILIES, make_pattern, max_measurements
from lbdviewer.patterns.freak import all_pairs, learn_pair_order, retina_unit


def test_brief_golden_values_for_seed_0():
    pattern = make_pattern("brief", patch_size=32, m=512, rng=0)
    assert pattern.centers[:4].tolist() == [[26.0, 20.0], [16.0, 9.0], [10.0, 2.0], [3.0, 1.0]]
    assert pattern.pairs[:2].tolist() == [[0, 1], [2, 3]]
    assert pattern.n_fields == 1024
    assert np.all(pattern.sigmas == 1.0) and np.all(pattern.radii == 1.0)


def test_brief_is_reproducible_and_seed_dependent():
    a = make_pattern("brief", rng=5)
    b = make_pattern("brief", rng=5)
    c = make_pattern("brief", rng=6)
    assert np.array_equal(a.centers, b.centers)
    assert not np.array_equal(a.centers, c.centers)


@pytest.mark.parametrize("distribution", ["uniform", "gaussian"])
def test_brief_pairs_are_distinct_and_inside(distribution):
    pattern = make_pattern("brief", patch_size=16, m=300, distribution=distribution)
    points = pattern.centers.reshape(-1, 2, 2)
    assert np.all(pattern.centers >= 1) and np.all(pattern.centers <= 14)
    assert not np.any(np.all(points[:, 0] == points[:, 1], axis=1))
    keys = {tuple(sorted(map(tuple, pair))) for pair in points}
    assert len(keys) == 300


def test_brief_gaussian_concentrates_in_the_centre():
    uniform = make_pattern("brief", patch_size=64, m=2000, distribution="uniform")
    gaussian = make_pattern("brief", patch_size=64, m=2000, distribution="gaussian")
    spread = lambda p: np.abs(p.centers - p.center).mean()
    assert spread(gaussian) < 0.75 * spread(uniform)


def test_brief_can_use_every_pair_of_a_small_patch():
    limit = max_measurements("brief", 8)
    pattern = make_pattern("brief", patch_size=8, m=limit)
    assert pattern.m == limit == 630


def test_freak_geometry():
    centers, sigmas = retina_unit()
    assert centers.shape == (43, 2)
    radii = np.hypot(*centers.T)
    assert np.allclose(radii[:6], 2 / 3) and radii[-1] == 0
    assert np.allclose(sigmas[:6], 1 / 3) and np.isclose(sigmas[-1], 1 / 24)
    # Odd rings are turned by pi/6.
    angle = np.arctan2(centers[6, 1], centers[6, 0])
    assert np.isclose(angle, np.pi / 6)
    pattern = make_pattern("freak", patch_size=32)
    extent = np.abs(pattern.centers - pattern.center).max(axis=1) + pattern.radii
    assert extent.max() <= 15.5 + 1e-9


def test_freak_families():
    assert make_pattern("ex-freak").m == 903
    assert make_pattern("freak").m == 512
    assert np.array_equal(make_pattern("freak", m=100).pairs, make_pattern("freak").pairs[:100])
    ra = make_pattern("ra-freak", m=512, rng=1)
    assert len({tuple(p) for p in ra.pairs}) == 512
    assert np.all(ra.pairs[:, 0] > ra.pairs[:, 1])
    assert len({tuple(p) for p in make_pattern("freak", m=903).pairs}) == 903


def test_learned_order_prefers_balanced_uncorrelated_pairs():
    rng = np.random.default_rng(0)
    means = rng.random((500, 43))
    means[:, 1] = 2.0  # field 1 beats every other: its 42 pairs carry no information
    order = learn_pair_order(means)
    constant = {(1, 0)} | {(i, 1) for i in range(2, 43)}
    assert {tuple(p) for p in order[-42:].tolist()} == constant
    assert sorted(map(tuple, order.tolist())) == sorted(map(tuple, all_pairs().tolist()))


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"name": "brief", "patch_size": 7}, "patch_size must be between 8 and 128, got 7"),
        ({"name": "brief", "patch_size": 129}, "got 129"),
        ({"name": "brief", "patch_size": 8, "m": 631}, "m must be an integer from 1 to 630"),
        ({"name": "freak", "m": 904}, "from 1 to 903"),
        ({"name": "ra-freak", "m": 0}, "got 0"),
        ({"name": "freak", "m": 2.5}, "got 2.5"),
        ({"name": "surf"}, "name must be one of"),
        ({"name": "brief", "distribution": "cauchy"}, "distribution must be one of"),
        ({"name": "freak", "distribution": "uniform"}, "takes no options"),
    ],
)
def test_bad_parameters_are_named(kwargs, message):
    with pytest.raises(ValueError, match=message):
        make_pattern(**kwargs)


def test_every_family_builds_at_every_size():
    for name in FAMILIES:
        for size in (8, 13, 128):
            pattern = make_pattern(name, patch_size=size, m=min(100, max_measurements(name, size)))
            assert pattern.patch_size == size


def test_pattern_is_immutable():
    pattern = make_pattern("freak")
    with pytest.raises(ValueError):
        pattern.centers[0, 0] = 3.0
    with pytest.raises(AttributeError):
        pattern.patch_size = 16


def test_transformed_rotates_about_centre_and_scales():
    pattern = Pattern("toy", 11, [[8, 5], [5, 5]], [1, 1], [1, 1], [[0, 1]])
    turned = pattern.transformed(angle=90)
    assert np.allclose(turned.centers, [[5, 8], [5, 5]])
    scaled = pattern.transformed(scale=2.0, patch_size=21)
    assert np.allclose(scaled.centers, [[16, 10], [10, 10]])
    assert np.allclose(scaled.sigmas, 2) and np.allclose(scaled.radii, 2)
    back = turned.transformed(angle=-90)
    assert np.allclose(back.centers, pattern.centers)
    with pytest.raises(ValueError, match="scale must be positive"):
        pattern.transformed(scale=0)


def test_pattern_validation():
    with pytest.raises(ValueError, match="pairs must index fields"):
        Pattern("toy", 8, [[2, 2]], [1], [1], [[0, 1]])
    with pytest.raises(ValueError, match="kernel must be one of"):
        Pattern("toy", 8, [[2, 2]], [1], [1], [[0, 0]], kernel="disk")
    with pytest.raises(ValueError, match="centers must have shape"):
        Pattern("toy", 8, [2, 2], [1], [1], [[0, 0]])
