import numpy as np
import pytest

from lbdviewer.patterns.families import make_pattern
from lbdviewer.reconstruction.image import describe_sites, reconstruct_image
from lbdviewer.reconstruction.sites import grid_sites
from lbdviewer.testing import joint_sign_problem
from lbdviewer.solvers.image.likelihood import BitLikelihood
from lbdviewer.solvers.image.likelihood import JointLikelihood, decisive_bits


class Unfused:
    """The operator without its fused ``bit_likelihood``: :class:`BitLikelihood` then uses forward and adjoint."""

    def __init__(self, op):
        self.op = op
        for name in ("domain_shape", "range_shape", "patterns", "site_pattern", "tie_positive"):
            setattr(self, name, getattr(op, name))

    def forward(self, x):
        return self.op.forward(x)

    def adjoint(self, y):
        return self.op.adjoint(y)


@pytest.fixture(scope="module")
def problem():
    return joint_sign_problem("freak")


@pytest.mark.parametrize("hinge_weight", [0.0, 40.0])
def test_fused_loss_matches_forward_and_adjoint(problem, hinge_weight):
    _, op, bits = problem
    rng = np.random.default_rng(2)
    x = rng.random(op.domain_shape).astype(np.float32)
    options = {"noise": rng.uniform(0.005, 0.05, op.m), "keep": rng.random(bits.shape) < 0.7,
               "hinge_weight": hinge_weight, "logistic_weight": 0.5}
    fused = BitLikelihood(op, bits, **options)._data_term(x)
    plain = BitLikelihood(Unfused(op), bits, **options)._data_term(x)
    assert fused[0] == pytest.approx(plain[0], rel=1e-5)
    np.testing.assert_allclose(fused[1], plain[1], atol=1e-5 * np.abs(plain[1]).max())
    assert fused[2] == pytest.approx(plain[2])


def test_gradient_matches_finite_differences(problem):
    _, op, bits = problem
    solver = BitLikelihood(Unfused(op), bits, noise=0.05)
    x = np.random.default_rng(3).random(op.domain_shape)
    value, gradient, _ = solver._data_term(x)
    direction = np.random.default_rng(4).standard_normal(op.domain_shape)
    step = 1e-4
    change = solver._data_term(x + step * direction)[0] - solver._data_term(x - step * direction)[0]
    assert change / (2 * step) == pytest.approx(float(np.sum(gradient * direction)), rel=1e-3)


def test_objective_decreases_and_bits_become_consistent(problem):
    _, op, bits = problem
    states = list(BitLikelihood(op, bits, noise=0.01, smoothness=0.0, iterations=60).steps())
    objectives = np.array([s.objective[0] for s in states])
    assert np.all(np.diff(objectives) <= 1e-9 * objectives[:-1])
    assert objectives[-1] < 0.2 * objectives[0]
    assert states[-1].bit_consistency[0] > 0.97 > states[0].bit_consistency[0]
    assert 0 <= states[-1].x.min() and states[-1].x.max() <= 1


def test_decisive_bits_keep_the_large_differences(problem):
    image, op, _ = problem
    values = np.abs(op.forward(image))
    kept = np.unpackbits(decisive_bits(op, image, factor=2.0, chunk=5), axis=1, count=op.m, bitorder="little") == 1
    assert kept.any() and not kept.all()
    assert values[kept].min() > values[~kept].max()
    np.testing.assert_array_equal(decisive_bits(op, image, factor=2.0, chunk=5), decisive_bits(op, image, factor=2.0))


@pytest.mark.parametrize("method", ["consistency", "likelihood", "coherent"])
@pytest.mark.parametrize("family", ["brief", "freak"])
def test_relative_brightness_of_large_flat_regions(family, method):
    image = np.full((96, 96), 0.2)
    image[:, 48:] = 0.5
    image[24:72, 60:84] = 0.9
    pattern = make_pattern(family, patch_size=32, m=256)
    sites = grid_sites(image.shape, patch_size=32, offset=8)
    x = reconstruct_image(describe_sites(image, sites, pattern), sites, pattern, shape=image.shape,
                          method=method).image
    dark, middle, bright = x[:, 4:40].mean(), x[4:20, 56:92].mean(), x[30:66, 64:80].mean()
    assert dark < middle < bright
    assert 1.5 < (bright - dark) / (middle - dark) < 3.5  # 7/3 in the original


def test_flat_image_with_faint_noise_stays_flat():
    image = 0.5 + np.random.default_rng(5).normal(0.0, 0.3 / 255, (64, 64))
    pattern = make_pattern("freak", patch_size=32, m=256)
    sites = grid_sites(image.shape, patch_size=32, offset=8)
    x = reconstruct_image(describe_sites(image, sites, pattern), sites, pattern, shape=image.shape,
                          method="coherent").image  # likelihood draws speckle 16x the noise (default: test_evidence)
    assert x.std() < 0.25 * image.std()


def test_bad_parameters_are_refused_by_name(problem):
    _, op, bits = problem
    with pytest.raises(ValueError, match="noise"):
        BitLikelihood(op, bits, noise=0.0)
    with pytest.raises(ValueError, match="noise"):
        BitLikelihood(op, bits, noise=np.ones(3))
    with pytest.raises(ValueError, match="keep"):
        BitLikelihood(op, bits, keep=np.ones((2, 2), bool))
    with pytest.raises(ValueError, match="must not both be 0"):
        BitLikelihood(op, bits, logistic_weight=0.0)
    with pytest.raises(ValueError, match="keep_words"):
        op.bit_likelihood(np.zeros(op.domain_shape), op.block_bits(bits > 0), np.zeros((1, 1), np.uint64),
                          np.ones((1, op.m)), np.ones((1, op.m)))
    pattern = make_pattern("brief", patch_size=16, m=128)
    sites = grid_sites((40, 40), patch_size=16, offset=8)
    with pytest.raises(ValueError, match="needs binary descriptors"):
        reconstruct_image(np.zeros((len(sites), 128), np.float32), sites, pattern, shape=(40, 40), method="likelihood")
    with pytest.raises(ValueError, match="use mode 'joint'"):
        reconstruct_image(describe_sites(np.zeros((40, 40)), sites, pattern), sites, pattern, shape=(40, 40),
                          mode="patches", method="likelihood")


def test_joint_likelihood_counts_iterations_over_both_stages(problem):
    _, op, bits = problem
    states = list(JointLikelihood(op, bits, op.sites, op.domain_shape, 10).steps())
    assert [s.iteration for s in states] == list(range(1, len(states) + 1))
    assert states[-1].finished and not any(s.finished for s in states[:-1])
