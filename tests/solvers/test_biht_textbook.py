"""BIHT against a textbook iteration written from the paper's equations, for every backend.

The oracle shares no code with :mod:`lbdviewer.solvers.patch.biht`: Alg. 2 of
the paper (Sec. 3.2) with its own pieces,

* :math:`a = x + \\tfrac{\\tau}{2} L^T (b - \\mathcal{B}(L x))`, :math:`\\tau = 1/M`,
  the subgradient step of :math:`J(x) = \\|[b \\odot \\mathcal{B}(Lx)]_-\\|_1`, with
  :math:`\\mathcal{B}` the descriptor's binarisation: the sign, and the pattern's tie bit
  for measurements within ``ATOL`` of 0 (at the flat start every measurement is 0, and
  the step takes ``sign(0) = 0``, as the paper's :math:`L^T b`);
* :math:`W`: the orthonormal Haar transform of PyWavelets (``wavedec2``,
  periodization, full depth), not lbdviewer's;
* :math:`H_K`: the ``K`` largest magnitudes kept by a sort;
* :math:`P_S`: the Euclidean projection on :math:`S = \\{x \\in [0, 1]^N : \\bar x = 0.5\\}`
  by root finding on its multiplier, :math:`x = \\operatorname{clip}(a - \\mu, 0, 1)`;
* :math:`x^{(0)} = P_S(0)`, the flat 0.5 (the paper starts at 0; BIHT projects every
  iterate on :math:`S`, and the first step's measurements are zero either way).

A change in any backend's step (its length, its sign, the kept coefficients or
the projection) makes the iterates leave the oracle's, even a change every
backend makes alike, which comparing the fast paths with the reference cannot
see.
"""

import itertools
import math

import numpy as np
import pytest
import pywt
from scipy.optimize import brentq
from skimage import data

from lbdviewer.operators.descriptor import DescriptorOperator
from lbdviewer.patterns.families import make_pattern
from lbdviewer.solvers.patch.biht import BIHT

#: Coefficients within this distance of the K-th largest magnitude are tied: the Haar coefficients of BIHT's
#: iterates tie exactly (symmetric fields), and rounding breaks such ties either way (float32: a few 1e-8 of
#: iterates near 0.5, against coefficients near 1e-3). The oracle then accepts every choice of the tied
#: coefficients that keeps K in all.
TIE = {"reference": 1e-12, "batched": 1e-6, "fused": 1e-6}
#: BIHT's tie band: measurements within it are ties and take the pattern's tie bit.
ATOL = 1e-6
#: A step with a measurement this close to the edge of the tie band is not compared (float32 rounds either way).
MARGIN = {"reference": 1e-12, "batched": 1e-7, "fused": 1e-7}
#: Most tied coefficient choices enumerated; a step with more is not compared.
MAX_CHOICES = 1000


def _patches(count, size, seed):
    image = data.camera().astype(np.float64) / 255.0
    rows, cols = np.random.default_rng(seed).integers(0, 512 - size, (2, count))
    return np.stack([image[r:r + size, c:c + size] for r, c in zip(rows, cols)])


def _haar(image):
    array, slices = pywt.coeffs_to_array(pywt.wavedec2(image, "haar", mode="periodization"))
    return array, slices


def _haar_inverse(array, slices):
    return pywt.waverec2(pywt.array_to_coeffs(array, slices, output_format="wavedec2"), "haar",
                         mode="periodization")


def _project_on_patches(a):
    """The point of {x in [0, 1]^N, mean 0.5} nearest to ``a``: clip(a - mu, 0, 1) with the mean's mu."""
    mu = brentq(lambda shift: np.clip(a - shift, 0.0, 1.0).mean() - 0.5, a.min() - 1.0, a.max(), xtol=1e-15)
    return np.clip(a - mu, 0.0, 1.0)


def textbook_step(matrix, bits, x, k, shape, *, first, tie_bit, tie=1e-12):
    """Every iterate Alg. 2 may give from ``x`` (float64), one per choice of coefficients tied within ``tie``.

    Returns the iterates (none when there are more than :data:`MAX_CHOICES`) and the margins ``L x``.
    """
    margins = matrix @ x.ravel()
    if first:
        signs = np.zeros_like(margins)
    else:
        signs = np.where(margins > ATOL, 1.0, np.where(margins < -ATOL, -1.0, tie_bit))
    a = x.ravel() + (1.0 / matrix.shape[0]) / 2.0 * (matrix.T @ (bits - signs))
    coefficients, slices = _haar(a.reshape(shape))
    flat = coefficients.ravel()
    magnitude = np.abs(flat)
    threshold = np.sort(magnitude)[::-1][k - 1]
    above = np.flatnonzero(magnitude > threshold + tie)
    tied = np.flatnonzero(np.abs(magnitude - threshold) <= tie)
    if threshold <= tie:
        tied, above = tied[:0], np.argsort(-magnitude, kind="stable")[:k]  # the ties are zeros: any will do
    elif math.comb(tied.size, k - above.size) > MAX_CHOICES:
        return [], margins
    iterates = []
    for chosen in itertools.combinations(tied, k - above.size):
        kept = np.zeros_like(flat)
        keep = np.concatenate([above, np.array(chosen, dtype=np.int64)])
        kept[keep] = flat[keep]
        iterates.append(_project_on_patches(_haar_inverse(kept.reshape(coefficients.shape), slices)).reshape(shape))
    return iterates, margins


@pytest.fixture(scope="module", params=["brief", "freak"])
def problem(request):
    """An operator and the bits of three camera patches: BRIEF 16x16 (pixel path), FREAK 32x32 (cell path)."""
    if request.param == "brief":
        operator = DescriptorOperator(make_pattern("brief", patch_size=16, m=128))
    else:
        operator = DescriptorOperator(make_pattern("freak"))
    size = operator.patch_shape[0]
    return operator, operator.describe(_patches(3, size, seed=4))


@pytest.mark.parametrize("backend", ["reference", "batched", "fused"])
def test_every_backend_takes_the_textbook_step(problem, backend):
    operator, bits = problem
    matrix, shape = operator.matrix(), operator.patch_shape
    solver = BIHT(operator, bits, iterations=15, backend=backend)
    if operator.pattern.name == "freak" and backend == "fused":
        assert solver._cells is not None          # the cell path (FREAK's 115 cells) is the one checked here
    atol = 1e-9 if backend == "reference" else 2e-5
    tie_bit = 1.0 if operator.pattern.tie_positive else -1.0
    previous = np.full((len(bits),) + shape, 0.5)
    compared = 0
    for state in solver.steps():
        for row in range(len(bits)):
            iterates, margins = textbook_step(matrix, bits[row].astype(np.float64), previous[row], solver.k, shape,
                                              first=state.iteration == 1, tie_bit=tie_bit, tie=TIE[backend])
            if not iterates or np.any(np.abs(np.abs(margins) - ATOL) < MARGIN[backend]):
                continue
            errors = [np.abs(state.x[row] - x).max() for x in iterates]
            assert min(errors) <= atol, f"{backend}: iteration {state.iteration}, patch {row}: off by {min(errors)}"
            compared += 1
        previous = np.asarray(state.x, dtype=np.float64)
    assert compared >= 0.9 * state.iteration * len(bits)        # rounding near a decision is rare


def test_the_oracle_is_the_papers_iteration():
    """The oracle's own pieces: W orthonormal, H_K keeps K, P_S lands in S and is the nearest point there."""
    rng = np.random.default_rng(0)
    image = rng.standard_normal((16, 16))
    coefficients, slices = _haar(image)
    assert np.sum(coefficients**2) == pytest.approx(np.sum(image**2))
    np.testing.assert_allclose(_haar_inverse(coefficients, slices), image, atol=1e-12)
    projected = _project_on_patches(image.ravel())
    assert projected.mean() == pytest.approx(0.5) and projected.min() >= 0 and projected.max() <= 1
    for _ in range(20):  # no other point of S is nearer (S is convex: a random point of it is no closer)
        other = _project_on_patches(rng.standard_normal(256))
        assert np.linalg.norm(other - image.ravel()) >= np.linalg.norm(projected - image.ravel()) - 1e-12


@pytest.mark.parametrize("backend", ["reference", "batched", "fused"])
def test_every_backend_reports_the_share_of_bits_its_iterate_reproduces(problem, backend):
    """``objective`` counts the bits ``B(L x)`` gets wrong, ``bit_consistency`` is the share it gets right."""
    operator, bits = problem
    matrix = operator.matrix()
    tie_bit = 1 if operator.pattern.tie_positive else -1
    for state in BIHT(operator, bits, iterations=8, backend=backend).steps():
        margins = np.asarray(state.x, dtype=np.float64).reshape(len(bits), -1) @ matrix.T
        signs = np.where(margins > ATOL, 1, np.where(margins < -ATOL, -1, tie_bit))
        wrong = np.count_nonzero(signs != bits, axis=1)
        slack = 0 if backend == "reference" else np.count_nonzero(np.abs(np.abs(margins) - ATOL) < 1e-6, axis=1)
        assert np.all(np.abs(state.objective - wrong) <= slack)
        np.testing.assert_allclose(state.bit_consistency, 1.0 - state.objective / bits.shape[1], atol=1e-12)
