import numpy as np
import pytest

from lbdviewer.operators.descriptor import DescriptorOperator
from lbdviewer.patterns.families import make_pattern
from lbdviewer.solvers.patch._sparse import (
    lane_factors,
    sparse_adjoint,
    sparse_adjoint_lanes,
    sparse_factors,
    sparse_forward,
    sparse_forward_lanes,
)
from lbdviewer.operators.wavelets import LANES


@pytest.fixture(scope="module", params=["brief", "freak"])
def factors(request):
    """BRIEF's fields share one Gaussian stencil; FREAK's boxes keep taps of their own."""
    operator = DescriptorOperator(make_pattern(request.param, patch_size=32, m=256))
    return operator, sparse_factors(operator, (32, 32))


def _interleave(rows):
    return np.ascontiguousarray(rows.T).ravel()  # element j of row k at j * LANES + k


def _lane_work(factors, n):
    return np.empty((n + factors.n_fields) * LANES, dtype=np.float32)


def test_lane_forward_is_the_one_patch_forward_bit_for_bit(factors):
    operator, factors = factors
    m, n = operator.shape
    x = np.random.default_rng(1).random((LANES, n), dtype=np.float32)
    got = np.empty(m * LANES, dtype=np.float32)
    sparse_forward_lanes(_interleave(x), lane_factors(factors, n), _lane_work(factors, n), got)
    expected = np.empty((LANES, m), dtype=np.float32)
    fields, plane = np.empty(factors.n_fields, np.float32), np.zeros(n, np.float32)
    for row, out in zip(x, expected):
        sparse_forward(row, factors.arrays, fields, plane, out)
    np.testing.assert_array_equal(got.reshape(m, LANES).T, expected)
    np.testing.assert_allclose(expected, operator.forward(x.reshape(LANES, 32, 32)), rtol=1e-4, atol=1e-5)


def test_lane_adjoint_is_the_one_patch_adjoint_and_passes_the_dot_test(factors):
    operator, factors = factors
    m, n = operator.shape
    rng = np.random.default_rng(2)
    x = rng.standard_normal((LANES, n)).astype(np.float32)
    r = rng.standard_normal((LANES, m)).astype(np.float32)
    lanes, work = lane_factors(factors, n), _lane_work(factors, n)
    lx, back = np.empty(m * LANES, np.float32), np.empty(n * LANES, np.float32)
    sparse_forward_lanes(_interleave(x), lanes, work, lx)
    sparse_adjoint_lanes(_interleave(r), lanes, work, back)
    back = back.reshape(n, LANES).T
    expected = np.empty((LANES, n), dtype=np.float32)
    fields = np.empty(factors.n_fields, np.float32)
    for row, out in zip(r, expected):
        sparse_adjoint(row, factors.arrays, fields, out)
    np.testing.assert_allclose(back, expected, rtol=1e-4, atol=1e-4)  # terms in another order
    lhs = np.sum(lx.reshape(m, LANES).T.astype(np.float64) * r, axis=1)
    rhs = np.sum(x.astype(np.float64) * back, axis=1)
    np.testing.assert_allclose(lhs, rhs, rtol=1e-4)


def test_brief_reads_its_fields_off_the_stencil_and_freak_from_taps():
    stencils = {}
    for family in ("brief", "freak"):
        operator = DescriptorOperator(make_pattern(family, patch_size=32, m=256))
        factors = sparse_factors(operator, (32, 32))
        stencils[family] = (factors.stencil.size > 0, bool((factors.anchor >= 0).any()))
    assert stencils == {"brief": (True, True), "freak": (False, False)}
