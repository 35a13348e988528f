"""The flip-aware likelihood of bits released through randomized response (BitLikelihood's ``flip_rate``)."""

import math

import numpy as np
import pytest

from lbdviewer.solvers.image.likelihood import BitLikelihood
from lbdviewer.testing import joint_sign_problem


@pytest.fixture(scope="module")
def problem():
    return joint_sign_problem("brief")


def _sigmoid(z):
    """G(z) = exp(-rho(z)), rho(z) = (sqrt(1 + z^2) - z) / 2: the sigmoid whose negative log is BitLikelihood's loss."""
    return np.exp(-0.5 * (np.sqrt(1.0 + z * z) - z))


class OneTest:
    """One site, one test: the difference of two pixels of a 1 x 2 image."""

    domain_shape, range_shape = (1, 2), (1, 1)

    def forward(self, x):
        x = np.asarray(x, dtype=np.float64)
        return (x[..., 0, 0] - x[..., 0, 1])[..., None, None]

    def adjoint(self, y):
        y = np.asarray(y, dtype=np.float64)[..., 0, 0]
        return np.stack([y, -y], axis=-1)[..., None, :]


def test_flip_aware_loss_is_the_negative_log_likelihood_of_a_flipped_bit():
    """One test, one bit: the loss equals -log(p + (1 - 2p) G(z)) written out from its definition."""
    op = OneTest()
    x = np.array([[0.8, 0.2]])  # A x = 0.6
    for bit, p in ((1, 0.1), (-1, 0.1), (-1, 0.3)):
        solver = BitLikelihood(op, np.array([[bit]]), noise=0.2, smoothness=0.0, flip_rate=p)
        value, gradient, _ = solver._data_term(x)
        z = bit * 0.6 / 0.2
        assert value == pytest.approx(-math.log(p + (1 - 2 * p) * _sigmoid(z)), rel=1e-6)
        step = 1e-6
        numeric = [(solver._data_term(x + step * e)[0] - solver._data_term(x - step * e)[0]) / (2 * step)
                   for e in np.eye(2).reshape(2, 1, 2)]
        np.testing.assert_allclose(np.ravel(gradient), numeric, rtol=1e-3, atol=1e-6)


def test_zero_flip_rate_is_the_plain_likelihood_and_fused(problem):
    _, op, bits = problem
    x = np.random.default_rng(1).random(op.domain_shape).astype(np.float32)
    plain = BitLikelihood(op, bits, noise=0.03)._data_term(x)
    zero = BitLikelihood(op, bits, noise=0.03, flip_rate=0.0)._data_term(x)
    assert zero[0] == plain[0]
    tiny = BitLikelihood(op, bits, noise=0.03, flip_rate=1e-12)._data_term(x)  # the generic path, p -> 0
    assert tiny[0] == pytest.approx(plain[0], rel=1e-4)


def test_a_contradicted_bit_costs_at_most_minus_log_p(problem):
    _, op, bits = problem
    x = np.random.default_rng(2).random(op.domain_shape)
    for p in (0.05, 0.2):
        solver = BitLikelihood(op, bits, noise=1e-4, smoothness=0.0, flip_rate=p)  # every bit decided firmly
        value, _, agree = solver._data_term(x)
        wrong = (1.0 - agree) * bits.size
        assert value <= wrong * (-math.log(p)) + (bits.size - wrong) * (-math.log(1 - p)) + 1e-3 * bits.size


def test_gradient_matches_finite_differences_on_the_joint_operator(problem):
    _, op, bits = problem
    solver = BitLikelihood(op, bits, noise=0.05, flip_rate=0.2)
    x = np.random.default_rng(3).random(op.domain_shape)
    _, gradient, _ = solver._data_term(x)
    direction = np.random.default_rng(4).standard_normal(op.domain_shape)
    step = 1e-3
    change = solver._data_term(x + step * direction)[0] - solver._data_term(x - step * direction)[0]
    assert change / (2 * step) == pytest.approx(float(np.sum(gradient * direction)), rel=2e-3)


def test_flip_rate_is_checked():
    with pytest.raises(ValueError, match=r"flip_rate must be in \[0, 0.5\), got 0.5"):
        BitLikelihood(OneTest(), np.ones((1, 1)), flip_rate=0.5)
