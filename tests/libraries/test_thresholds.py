"""Thresholded bits ``sign(L p - t)`` (BEBLID, TEBLID) through the solvers, the joint operator and inversion."""

from dataclasses import replace

import numpy as np
import pytest
from skimage import data

from lbdviewer.features.keypoints import FeatureSet
from lbdviewer.features.invert import invert_features, keypoint_patterns, level0_pattern
from lbdviewer.operators.joint.operator import JointOperator
from lbdviewer.libraries.registry import get_model
from lbdviewer.evaluation.metrics import correlation
from lbdviewer.operators.descriptor import DescriptorOperator
from lbdviewer.bits import pack_bits, sign_with_ties
from lbdviewer.patterns.families import make_pattern
from lbdviewer.reconstruction.image import describe_sites
from lbdviewer.solvers.patch.primal_dual import PrimalDualL1
from lbdviewer.solvers.patch.biht import BIHT
from lbdviewer.solvers.patch.base import thresholds_of
from lbdviewer.solvers.image.consistency import SignConsistency
from lbdviewer.solvers.image.likelihood import BitLikelihood
from lbdviewer.testing import MatrixOperator, dot_test
from lbdviewer.operators.wavelets import HaarTransform


def _camera_patches(count, size, seed):
    image = data.camera().astype(np.float64) / 255.0
    rows, cols = np.random.default_rng(seed).integers(0, 512 - size, (2, count))
    return np.stack([image[r:r + size, c:c + size] for r, c in zip(rows, cols)])


def _with_thresholds(pattern, seed, scale=0.03):
    """The pattern with random thresholds of about the size of its differences on photos."""
    return replace(pattern, thresholds=np.random.default_rng(seed).normal(0.0, scale, pattern.m))


@pytest.fixture(scope="module")
def brief_t():
    return DescriptorOperator(_with_thresholds(make_pattern("brief", patch_size=16, m=128), 1))


@pytest.fixture(scope="module")
def freak_t():
    return DescriptorOperator(_with_thresholds(make_pattern("freak"), 2, scale=0.02))


def _margins(op, x):
    return op.forward(np.asarray(x, dtype=np.float64)).astype(np.float64) - op.thresholds


def _consistency(op, x, bits):
    """Share of ``sign(L x - t)`` equal to ``bits``, computed here, not by the solver."""
    signs = sign_with_ties(_margins(op, x), tie_positive=op.pattern.tie_positive, atol=1e-6)
    return np.mean(signs == bits, axis=1)


# -- the operator -------------------------------------------------------------------

def test_thresholds_leave_the_linear_operator_alone(brief_t):
    plain = DescriptorOperator(replace(brief_t.pattern, thresholds=None))
    x = _camera_patches(3, 16, 0)
    np.testing.assert_array_equal(brief_t.forward(x), plain.forward(x))
    dot_test(brief_t, rtol=1e-5)
    assert thresholds_of(plain, 128) is None
    np.testing.assert_array_equal(thresholds_of(brief_t, 128), brief_t.pattern.thresholds)
    # the bits do move: about a third of them here
    assert 0.1 < np.mean(brief_t.describe(x) != plain.describe(x)) < 0.6


def test_malformed_thresholds_are_refused_by_name():
    op = MatrixOperator(np.eye(3))
    op.thresholds = [0.1, np.nan, 0.0]
    with pytest.raises(ValueError, match="thresholds must be 3 finite values"):
        BIHT(op, np.ones((1, 3)), transform=None)


# -- patch solvers ---------------------------------------------------------------------

@pytest.mark.parametrize("backend", ["fused", "batched", "reference"])
def test_biht_reaches_consistency_with_sign_of_lx_minus_t(brief_t, backend):
    patches = _camera_patches(6, 16, 3)
    bits = brief_t.describe(patches)
    state = BIHT(brief_t, bits, iterations=150, backend=backend).run()
    measured = _consistency(brief_t, state.x, bits)
    np.testing.assert_allclose(state.bit_consistency, measured, atol=1.5 / 128)  # float32 ties at most
    assert measured.mean() > 0.97
    # scored against sign(L x), forgetting t, the same estimates are far off
    plain = np.mean(sign_with_ties(brief_t.forward(state.x)) == bits, axis=1)
    assert plain.mean() < measured.mean() - 0.1


def test_biht_first_step_follows_the_thresholds_signs(brief_t):
    # At the flat start the margins are -t: a bit that sign(-t) already gives
    # is consistent there and the first gradient leaves it out.
    bits = sign_with_ties(-brief_t.thresholds)[None]
    states = list(BIHT(brief_t, bits, iterations=5).steps())
    assert states[0].iteration == 0 and states[0].objective[0] == 0
    np.testing.assert_array_equal(states[-1].x[0], np.full((16, 16), 0.5))


def test_biht_objective_decreases_with_thresholds(freak_t):
    bits = freak_t.describe(_camera_patches(8, 32, 4))
    start = np.count_nonzero(bits != sign_with_ties(-freak_t.thresholds), axis=1)
    state = BIHT(freak_t, bits, iterations=200).run()
    assert np.all(state.objective < 0.3 * start) and state.objective.mean() < 0.2 * start.mean()


@pytest.mark.parametrize("options", [{}, {"constraint": "box", "step": 0.2}])
def test_biht_cell_path_matches_reference_with_thresholds(freak_t, options):
    bits = freak_t.describe(_camera_patches(2, 32, 5))
    assert BIHT(freak_t, bits)._cells is not None
    fast = list(BIHT(freak_t, bits, iterations=12, **options).steps())
    slow = list(BIHT(freak_t, bits, iterations=12, backend="reference", **options).steps())
    for a, b in zip(fast, slow):
        np.testing.assert_allclose(a.x, b.x, atol=1e-6)
        np.testing.assert_array_equal(a.objective, b.objective)


@pytest.mark.parametrize("backend", ["fused", "batched"])
def test_biht_pixel_paths_match_reference_with_thresholds(brief_t, backend):
    bits = brief_t.describe(_camera_patches(4, 16, 6))
    fast = list(BIHT(brief_t, bits, iterations=30, backend=backend).steps())
    slow = list(BIHT(brief_t, bits, iterations=30, backend="reference").steps())
    for a, b in zip(fast[:3], slow[:3]):  # float32 against float64: a near-tied K-th coefficient may swap later
        np.testing.assert_allclose(a.x, b.x, atol=2e-3)
    np.testing.assert_array_equal(fast[0].objective, slow[0].objective)


def test_primal_dual_with_thresholds_fused_equals_reference_and_decreases(brief_t):
    bits = brief_t.describe(_camera_patches(5, 16, 7))
    reference = list(PrimalDualL1(brief_t, bits, lam=1.0, iterations=60, backend="reference").steps())
    for backend in ("fused", "batched"):
        states = list(PrimalDualL1(brief_t, bits, lam=1.0, iterations=60, backend=backend).steps())
        np.testing.assert_allclose(states[-1].x, reference[-1].x, atol=1e-4)
        np.testing.assert_allclose(states[-1].objective, reference[-1].objective, rtol=1e-4)
    # the data term is lam |L x - t - b|_1
    x = np.asarray(reference[-1].x, dtype=np.float64)
    prior = np.abs(HaarTransform((16, 16)).forward(x)).reshape(5, -1).sum(axis=1)
    expected = np.abs(_margins(brief_t, x) - bits).sum(axis=1) + prior
    np.testing.assert_allclose(reference[-1].objective, expected, rtol=1e-7)  # c = b + t is float32
    assert np.all(reference[-1].objective < reference[0].objective)
    np.testing.assert_allclose(reference[-1].bit_consistency, _consistency(brief_t, x, bits), atol=1e-12)


def test_primal_dual_real_values_need_no_thresholds(brief_t):
    # Real descriptors are L p: they hold the thresholds' information, so the fit is to L p itself.
    b = brief_t.describe(_camera_patches(2, 16, 8), binary=False)
    plain = DescriptorOperator(replace(brief_t.pattern, thresholds=None))
    a = PrimalDualL1(brief_t, b, iterations=50, backend="reference").run()
    c = PrimalDualL1(plain, b, iterations=50, backend="reference").run()
    np.testing.assert_array_equal(a.x, c.x)


# -- the joint operator ---------------------------------------------------------------

@pytest.fixture(scope="module")
def joint_case():
    image = data.camera()[200:264, 200:280] / 255.0
    patterns = [_with_thresholds(make_pattern("brief", patch_size=16, m=64), seed) for seed in (10, 11)]
    sites = np.array([[r, c] for r in range(0, 48, 8) for c in range(0, 64, 8)])
    per_site = [patterns[(s // 3) % 2] for s in range(len(sites))]  # blocks of one pattern, then the other
    return image, sites, per_site


def test_joint_thresholds_against_the_patch_operator(joint_case):
    image, sites, per_site = joint_case
    op = JointOperator(image.shape, sites, per_site, dtype=np.float64)
    assert op.thresholded and op.thresholds.shape == (2, 64)
    dot_test(op, rtol=1e-10)
    margins = op.margins(image)
    for s, (r, c) in enumerate(sites):
        patch_op = DescriptorOperator(per_site[s], dtype=np.float64)
        patch = image[r:r + 16, c:c + 16]
        np.testing.assert_allclose(margins[s], patch_op.forward(patch) - per_site[s].thresholds, atol=1e-12)
        bits = describe_sites(image, [[r, c]], per_site[s])[0]
        np.testing.assert_array_equal(bits, patch_op.describe(patch))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fused_joint_data_terms_equal_their_numpy_form_with_thresholds(joint_case, dtype):
    image, sites, per_site = joint_case
    op = JointOperator(image.shape, sites, per_site, dtype=dtype)
    bits = sign_with_ties(op.margins(image), atol=1e-6)
    x = np.clip(image + np.random.default_rng(0).normal(0, 0.1, image.shape), 0, 1)
    margin = np.random.default_rng(1).uniform(0.005, 0.02, (2, 64))

    class Unfused:  # the solvers' numpy path: forward, adjoint and margins only
        domain_shape, range_shape, patterns = op.domain_shape, op.range_shape, op.patterns
        site_pattern, forward, adjoint, margins = op.site_pattern, op.forward, op.adjoint, op.margins
        tie_positive = False

    for make, tol in ((lambda o: SignConsistency(o, bits, margin=margin, iterations=1),
                       1e-4 if dtype == np.float32 else 1e-9),
                      (lambda o: BitLikelihood(o, bits, margin=margin, hinge_weight=0.5, noise=0.02, iterations=1),
                       1e-4)):  # the likelihood's numpy form back-projects in float32
        fused, numpy_form = make(op), make(Unfused())
        value, gradient, share = fused._data_term(x.astype(dtype))
        value_n, gradient_n, share_n = numpy_form._data_term(x.astype(dtype))
        np.testing.assert_allclose(value, value_n, rtol=tol)
        np.testing.assert_allclose(gradient, gradient_n, atol=tol * np.abs(gradient_n).max())
        assert share == pytest.approx(share_n, abs=2 / bits.size)
    gradient, mismatches = op.binary_gradient(x.astype(dtype), pack_bits(bits))
    signs = sign_with_ties(op.margins(x), atol=0.5 / 255)
    assert mismatches == np.count_nonzero(signs != bits)
    np.testing.assert_allclose(gradient, op.adjoint((bits - signs) / 2.0), atol=1e-4 if dtype == np.float32 else 1e-9)


def test_sign_consistency_decreases_and_fits_thresholded_bits(joint_case):
    image, sites, per_site = joint_case
    op = JointOperator(image.shape, sites, per_site)
    bits = sign_with_ties(op.margins(image), atol=1e-6)
    states = list(SignConsistency(op, bits, iterations=80).steps())
    objective = [s.objective[0] for s in states]
    assert all(b <= a for a, b in zip(objective, objective[1:]))
    x = np.asarray(states[-1].x[0], np.float64)
    signs = sign_with_ties(op.margins(x), atol=1e-5)
    assert np.mean(signs == bits) == pytest.approx(states[-1].bit_consistency[0], abs=0.002)
    # as consistent as the same solve of unthresholded bits (the total variation keeps both near 0.94)
    plain = JointOperator(image.shape, sites, [replace(p, thresholds=None) for p in per_site])
    plain_bits = sign_with_ties(plain.forward(image), atol=1e-6)
    plain_state = SignConsistency(plain, plain_bits, iterations=80).run()
    assert states[-1].bit_consistency[0] > min(0.9, plain_state.bit_consistency[0] - 0.02)
    assert np.mean(sign_with_ties(op.forward(x), atol=1e-5) == bits) < states[-1].bit_consistency[0] - 0.1


# -- a BEBLID feature file, end to end -----------------------------------------------

def test_beblid_feature_file_inverts():
    image = data.camera()[::4, ::4] / 255.0  # 128 x 128
    model = get_model("beblid", n_bits=256)  # calibrated once a session (tests/test_opencv_blid.py shares it)
    library = model.run_library(image, model.detect(image, n_keypoints=120))
    features = FeatureSet("beblid", model.params(), image.shape, library.keypoints,
                          pack_bits(library.bits, bitorder=model.bitorder).reshape(len(library.keypoints), -1),
                          model.n_bits, model.bitorder)
    patterns = keypoint_patterns(features)
    assert patterns and all(kp.pattern.thresholded for kp in patterns)
    result = invert_features(features, iterations=60)
    assert result.solver_bit_consistency > 0.9
    covered = result.covered
    assert covered.mean() > 0.3 and correlation(image, result.image, mask=covered) > 0.3
    # the estimate's bits sign(L x - t), keypoint by keypoint at level 0, agree with the file's
    agree = []
    for bits, kp in zip(features.bits(), patterns):
        pattern, (row, col) = level0_pattern(kp)
        if min(row, col) >= 0 and max(row, col) + pattern.patch_size <= 128:
            agree.append(np.mean(describe_sites(result.image, [[row, col]], pattern)[0] == bits))
    assert len(agree) >= 5 and np.mean(agree) > 0.8
