import numpy as np
import pytest

import lbdviewer.solvers.image.coherence as coherence
from lbdviewer.reconstruction.image import describe_sites, reconstruct_image
from lbdviewer.patterns.families import make_pattern
from lbdviewer.reconstruction.sites import coarser_grid, grid_sites
from lbdviewer.solvers.image.coherence import (JointCoherentContrast, blurred_agreement, coherence_gain, coherent_contrast,
                                         site_average)
from lbdviewer.testing import joint_sign_problem


@pytest.fixture(scope="module")
def problem():
    return joint_sign_problem("brief")


def test_site_average_matches_a_loop_over_the_patches():
    rng = np.random.default_rng(0)
    shape, sizes = (20, 17), rng.integers(3, 8, 12)
    sites = np.column_stack([rng.integers(0, 20 - sizes), rng.integers(0, 17 - sizes)])
    values = rng.random(12)
    total, count = np.zeros(shape), np.zeros(shape)
    for (r, c), size, value in zip(sites, sizes, values):
        total[r:r + size, c:c + size] += value
        count[r:r + size, c:c + size] += 1
    expected = np.where(count > 0, total / np.maximum(count, 1), 0.0)
    np.testing.assert_allclose(site_average(shape, sites, sizes, values), expected, atol=1e-12)


def test_agreement_is_one_for_the_true_image_and_near_chance_for_noise(problem):
    image, op, bits = problem
    assert np.all(blurred_agreement(op, bits, image, blur=0) == 1.0)
    noise = np.random.default_rng(1).random(image.shape)
    assert np.mean(blurred_agreement(op, bits, noise, blur=0)) < 0.6
    assert np.all(blurred_agreement(op, bits, image, blur=2) <= 1.0)


def test_gain_is_zero_for_noise_one_for_structure_and_monotone():
    agreement = np.linspace(0.0, 1.0, 101)
    gain = coherence_gain(agreement)
    assert np.all(gain[agreement <= coherence.NOISE_AGREEMENT] == 0.0)
    assert np.all(gain[agreement >= coherence.STRUCTURE_AGREEMENT] == 1.0)
    assert np.all(np.diff(gain) >= 0)


def test_full_gain_leaves_the_reconstruction_unchanged(problem):
    _, op, bits = problem
    x = np.random.default_rng(2).random(op.domain_shape)
    np.testing.assert_allclose(coherent_contrast(op, bits, x, noise=0.0, structure=1e-9), x, atol=1e-12)


def test_no_evidence_anywhere_gives_a_flat_image(problem):
    _, op, bits = problem
    x = np.random.default_rng(3).random(op.domain_shape)
    flat = coherent_contrast(op, bits, x, noise=0.999, structure=1.0)
    np.testing.assert_allclose(flat, x.mean(), atol=1e-12)


def test_states_count_iterations_and_only_the_last_is_finished(problem):
    _, op, bits = problem
    states = list(JointCoherentContrast(op, bits, iterations=12).steps())
    assert [s.iteration for s in states] == list(range(1, len(states) + 1))
    assert states[-1].finished and not any(s.finished for s in states[:-1])
    assert 0 <= states[-1].x.min() and states[-1].x.max() <= 1


def test_bad_parameters_are_refused_by_name(problem):
    _, op, bits = problem
    with pytest.raises(ValueError, match="blur"):
        blurred_agreement(op, bits, np.zeros(op.domain_shape), blur=-1.0)
    with pytest.raises(ValueError, match="noise=0.9"):
        coherence_gain([0.5], noise=0.9, structure=0.8)
    with pytest.raises(ValueError, match="values"):
        site_average((4, 4), [[0, 0]], 2, [1.0, 2.0])
    pattern = make_pattern("brief", patch_size=16, m=128)
    sites = grid_sites((40, 40), patch_size=16, offset=8)
    with pytest.raises(ValueError, match="use mode 'joint'"):
        reconstruct_image(describe_sites(np.zeros((40, 40)), sites, pattern), sites, pattern, shape=(40, 40),
                          mode="patches", method="coherent")


def test_dense_grids_are_solved_on_their_8_pixel_sub_grid():
    image = np.zeros((48, 48)); image[:, 24:] = 1.0
    pattern = make_pattern("brief", patch_size=32, m=64)
    dense = grid_sites(image.shape, patch_size=32, offset=2)
    result = reconstruct_image(describe_sites(image, dense, pattern), dense, pattern, shape=image.shape,
                               method="coherent", iterations=40)
    sparse = grid_sites(image.shape, patch_size=32, offset=8)
    assert coarser_grid(dense, spacing=8) is not None and len(sparse) < len(dense)
    expected = reconstruct_image(describe_sites(image, sparse, pattern), sparse, pattern, shape=image.shape,
                                 method="coherent", iterations=40)
    np.testing.assert_array_equal(result.image, expected.image)
    assert result.covered.all()


def test_intermediate_gains_draw_the_detail_in_proportion_on_the_blurred_base(problem):
    """The rule of the module notes, written out: y = B + g (x - B), B = mean + gamma (G_48 x - mean)."""
    from scipy.ndimage import gaussian_filter

    image, op, bits = problem
    x = np.clip(image + 0.15 * np.random.default_rng(5).standard_normal(image.shape), 0.0, 1.0)
    agreement = blurred_agreement(op, bits, x)
    noise, structure = agreement.min() - 0.02, agreement.max() + 0.05     # every site between noise and structure
    gains = (agreement - noise) / (structure - noise)
    assert 0.05 < gains.min() and gains.max() < 0.95                       # intermediate gains only
    total, count = np.zeros(x.shape), np.zeros(x.shape)                    # each pixel's mean over its sites
    for (r, c), gain in zip(op.sites, gains):
        total[r:r + 16, c:c + 16] += gain
        count[r:r + 16, c:c + 16] += 1
    gain_map = gaussian_filter(total / count, coherence.GAIN_SMOOTHING)
    base = x.mean() + gains.max() * (gaussian_filter(x, coherence.BASE_BLUR, mode="reflect") - x.mean())
    expected = base + gain_map * (x - base)
    result = coherent_contrast(op, bits, x, noise=noise, structure=structure)
    np.testing.assert_allclose(result, expected, atol=1e-12)
    detail = np.std(result - base) / np.std(x - base)                     # the detail kept, in proportion
    assert gain_map.min() - 1e-9 <= detail <= gain_map.max() + 1e-9 and detail < 0.95
