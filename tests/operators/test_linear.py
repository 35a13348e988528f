import numpy as np
import pytest

from lbdviewer.operators.joint.operator import JointOperator
from lbdviewer.operators.linear import LinearOperator, power_norm
from lbdviewer.operators.descriptor import DescriptorOperator
from lbdviewer.patterns.families import make_pattern
from lbdviewer.testing import MatrixOperator, dot_test


def test_both_operators_meet_the_contract():
    pattern = make_pattern("brief", patch_size=8, m=16)
    for op in (DescriptorOperator(pattern), JointOperator((12, 12), [[0, 0], [4, 4]], pattern),
               MatrixOperator(np.ones((3, 4)))):
        assert isinstance(op, LinearOperator)
        assert op.shape == (int(np.prod(op.range_shape)), int(np.prod(op.domain_shape)))
        y = op.forward(np.zeros((2, *op.domain_shape), dtype=op.dtype))
        assert y.shape == (2, *op.range_shape)
        assert op.adjoint(y).shape == (2, *op.domain_shape)


def test_dot_test_refuses_a_wrong_adjoint():
    matrix = np.random.default_rng(0).standard_normal((5, 4))
    op = MatrixOperator(matrix)
    lhs, rhs = dot_test(op, batch=(2,))
    assert np.isclose(lhs, rhs)
    op.adjoint = lambda y: 1.001 * (np.asarray(y) @ matrix)
    with pytest.raises(AssertionError, match="dot test failed"):
        dot_test(op)


def test_power_norm_is_the_largest_singular_value():
    matrix = np.random.default_rng(1).standard_normal((30, 12))
    op = MatrixOperator(matrix)
    estimate = power_norm(op.forward, op.adjoint, op.domain_shape, iterations=500, rtol=1e-14)
    assert estimate == pytest.approx(np.linalg.norm(matrix, 2), rel=1e-6)
    assert power_norm(lambda v: 0 * v, lambda r: r, (3,)) == 0.0
