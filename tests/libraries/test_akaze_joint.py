import numpy as np
import pytest
from scipy import ndimage

from lbdviewer.features.extract import extract_features
from lbdviewer.features.keypoints import Keypoints
from lbdviewer.io.samples import sample_image
from lbdviewer.libraries.akaze.joint import AkazeJointOperator, balanced_channel_weights
from lbdviewer.libraries.akaze.model import Model
from lbdviewer.libraries.akaze.operator import N_CELLS
from lbdviewer.libraries.akaze.scale_space import level_sigmas
from lbdviewer.testing import dot_test


@pytest.fixture(scope="module")
def document():
    image = sample_image("document")[:192, :256]
    return image, extract_features(image, "akaze", n_keypoints=60)


@pytest.fixture(scope="module")
def operator(document):
    image, features = document
    return AkazeJointOperator(Model(**features.model_params()), features.keypoints, image.shape)


def test_adjoint_passes_the_dot_test(operator):
    dot_test(operator, rtol=1e-5)


def test_covered_is_the_operators_support(operator):
    """A pixel is covered exactly when some measurement reads it: ``A^T y`` of generic ``y`` is nonzero there."""
    rng = np.random.default_rng(4)
    reached = np.abs(operator.adjoint(rng.standard_normal(operator.range_shape))) > 0
    assert reached.any() and not reached.all()
    np.testing.assert_array_equal(operator.covered, reached)


def test_its_signs_are_the_files_bits_on_the_original(document, operator):
    image, features = document
    bits = np.where(operator.forward(image) > 0, 1, -1)
    assert np.mean(bits == features.bits()) > 0.95  # the linear view of the library's scale space


def test_a_keypoint_at_level_zero_reads_the_smoothed_image_at_its_samples():
    model = Model()
    keypoints = Keypoints([40.0], [30.0], [4.8], [0.0], [0])
    op = AkazeJointOperator(model, keypoints, (64, 80))
    flat = np.full((64, 80), 0.3)
    values = op.cell_values(flat)
    assert values.shape == (1, N_CELLS, 3)
    np.testing.assert_allclose(values[0, :, 0], 0.3, rtol=1e-5)  # a flat image: every cell its grey ...
    np.testing.assert_allclose(values[0, :, 1:], 0.0, atol=1e-6)  # ... and no derivative
    assert op.covered.any() and not op.covered[:, :10].any()  # only around the keypoint


def test_keypoints_beyond_the_images_levels_are_refused():
    keypoints = Keypoints([20.0], [20.0], [60.0], [0.0], [3])  # octave 3 of a 48x48 image does not exist
    with pytest.raises(ValueError, match="keypoints reach level"):
        AkazeJointOperator(Model(), keypoints, (48, 48))


def test_channel_weights_keep_the_signs_and_the_adjoint(document, operator):
    image, features = document
    weighted = AkazeJointOperator(Model(**features.model_params()), features.keypoints, image.shape,
                                  channel_weights=(1.0, 4.0, 0.5))
    dot_test(weighted, rtol=1e-5)
    plain, scaled = operator.forward(image), weighted.forward(image)
    np.testing.assert_array_equal(np.sign(scaled), np.sign(plain))
    np.testing.assert_allclose(scaled, plain * np.array([1.0, 4.0, 0.5])[operator.test_channels], rtol=1e-5)


def test_balanced_weights_give_every_channel_the_intensitys_mean_norm(document):
    image, features = document
    operator = AkazeJointOperator(Model(**features.model_params()), features.keypoints.take(np.arange(8)),
                                  image.shape)
    weights = balanced_channel_weights(operator)
    rows = np.zeros(operator.range_shape, dtype=np.float32)
    exact = np.zeros(operator.range_shape)  # every functional's norm from the adjoint of a unit vector
    for k in range(operator.range_shape[0]):
        for i in range(operator.range_shape[1]):
            rows[k, i] = 1.0
            exact[k, i] = np.linalg.norm(operator.adjoint(rows))
            rows[k, i] = 0.0
    norms = [np.sqrt(np.mean(exact[:, operator.test_channels == c] ** 2)) for c in range(3)]
    assert weights[0] == 1.0 and norms[1] < norms[0] / 3  # the derivatives' functionals are far shorter
    np.testing.assert_allclose(np.array(weights[1:]) * norms[1:], norms[0], rtol=0.1)


@pytest.mark.parametrize("weights", [(1.0, 0.0, 1.0), (1.0, 2.0), (1.0, np.nan, 1.0)])
def test_bad_channel_weights_are_refused(document, weights):
    image, features = document
    with pytest.raises(ValueError, match="channel_weights must be three positive numbers"):
        AkazeJointOperator(Model(**features.model_params()), features.keypoints, image.shape,
                           channel_weights=weights)


def test_the_joint_inversion_balances_the_channels_and_explains_more_bits(document):
    from lbdviewer.features.invert import invert_features
    from lbdviewer.solvers.image.consistency import SignConsistency
    from lbdviewer.features.invert_akaze import AKAZE_SMOOTHNESS

    image = document[0]
    features = extract_features(image, "akaze", n_keypoints=150)
    result = invert_features(features, iterations=100)
    weights = result.params["solver_settings"]["channel_weights"]
    assert weights[0] == 1.0 and min(weights[1:]) > 3  # the derivatives' functionals are ~6x shorter
    plain = AkazeJointOperator(Model(**features.model_params()), features.keypoints, image.shape)
    unweighted = SignConsistency(plain, features.bits(), smoothness=AKAZE_SMOOTHNESS, iterations=100).run()
    assert result.solver_bit_consistency > float(unweighted.bit_consistency[0]) + 0.004  # 0.984 against 0.975


def test_levels_filtered_in_windows_read_what_the_whole_level_reads():
    # Keypoints on two text lines far apart: each level is filtered only in bands around its samples. Their
    # intensity cells are the means of the level's Gaussian at the samples, and the same keypoints moved 32
    # pixels into a zero-padded copy of the image (zero padding is what the filters assume past the border)
    # read the same values and give the same adjoint.
    image = sample_image("document")
    keypoints = Keypoints([120.0, 220.0, 150.0, 260.0], [66.0, 60.0, 300.0, 305.0], [4.8, 6.0, 4.8, 7.2],
                          [0.0, 30.0, 200.0, 90.0], [0, 0, 0, 0])
    model = Model()
    op = AkazeJointOperator(model, keypoints, image.shape)
    windows = [lv.shape[0] * lv.shape[1] for lv in op._windows]
    whole = [lv.level_shape[0] * lv.level_shape[1] for lv in op._windows]
    assert len(op._windows) > len(np.unique(model.level_of(keypoints)))  # some level split into bands ...
    assert sum(windows) < 0.5 * sum(whole)  # ... and far less filtered than the whole levels
    plan = level_sigmas(model.n_octaves, model.n_sublevels, image.shape)
    levels, cells, rows, cols, _, _ = model.sample_grid(keypoints)
    values = op.cell_values(image)[:, :, 0]
    for k in range(len(keypoints)):  # the intensity cells: means of the level's Gaussian at the cells' samples
        blurred = ndimage.gaussian_filter(image, plan[levels[k]][2], mode="constant", truncate=3.0)
        expected = [blurred[rows[k, cells == c], cols[k, cells == c]].mean() for c in range(N_CELLS)]
        np.testing.assert_allclose(values[k], expected, atol=2e-3)
    padded = np.pad(image, 32)
    moved = Keypoints(keypoints.x + 32, keypoints.y + 32, keypoints.size, keypoints.angle, keypoints.octave)
    far = AkazeJointOperator(model, moved, padded.shape)
    np.testing.assert_allclose(op.forward(image), far.forward(padded), rtol=1e-4, atol=1e-6)
    y = np.random.default_rng(3).standard_normal(op.range_shape)
    np.testing.assert_allclose(op.adjoint(y), far.adjoint(y)[32:-32, 32:-32], rtol=1e-4, atol=1e-6)
    dot_test(op, rtol=1e-5)


def _whole_level_cells(model, keypoints, image):
    """The module's linear view computed the plain way: every level filtered whole (scipy, zero padding), then sampled."""
    from scipy.ndimage import correlate1d

    from lbdviewer.libraries.akaze.joint import _gaussian_kernel
    from lbdviewer.libraries.akaze.scale_space import SMOOTH_SIGMA, derivative_kernels

    plan = level_sigmas(model.n_octaves, model.n_sublevels, image.shape)
    levels, cells, rows, cols, co, si = model.sample_grid(keypoints)

    def correlate(plane, kernel_x, kernel_y):
        across = correlate1d(plane, np.asarray(kernel_x, dtype=np.float64), axis=1, mode="constant")
        return correlate1d(across, np.asarray(kernel_y, dtype=np.float64), axis=0, mode="constant")

    out = np.zeros((len(keypoints), N_CELLS, 3))
    for k, e in enumerate(levels):
        octave, _, esigma, size = plan[e]
        p = 1 << octave
        h, w = image.shape[0] // p, image.shape[1] // p
        level = image[:h * p, :w * p].reshape(h, p, w, p).mean(axis=(1, 3))
        gauss = _gaussian_kernel(esigma / p)
        intensity = correlate(level, gauss, gauss)
        smoothing = _gaussian_kernel(np.hypot(plan[e - 1][2] / p, SMOOTH_SIGMA)) if e > 0 else gauss
        smoothed = correlate(level, smoothing, smoothing)
        dx, dy = correlate(smoothed, *derivative_kernels(1, 0, size)), correlate(smoothed, *derivative_kernels(0, 1, size))
        inside = (rows[k] >= 0) & (rows[k] < h) & (cols[k] >= 0) & (cols[k] < w)
        for c in range(N_CELLS):
            here = inside & (cells == c)
            if here.any():
                r, q = rows[k][here], cols[k][here]
                vx, vy = dx[r, q].mean(), dy[r, q].mean()
                out[k, c] = intensity[r, q].mean(), -vx * si[k] + vy * co[k], vx * co[k] + vy * si[k]
    return out


def test_every_channel_reads_what_the_whole_filtered_levels_read(document):
    # The operator filters windows, reads the derivatives from their nonzero taps only and sums the samples with
    # compiled kernels; the plain way filters every level whole with the full kernels. Keypoints of the file (levels
    # 0-3, two octaves) and hand-placed ones whose samples cross the image's border at octaves 0 and 1.
    image, features = document
    extra = Keypoints([6.0, 250.0, 12.0, 128.0], [8.0, 186.0, 100.0, 4.0], [4.8, 6.0, 9.6, 19.2],
                      [30.0, 200.0, 300.0, 45.0], [0, 0, 1, 1])
    keypoints = Keypoints(*(np.concatenate([getattr(features.keypoints, a), getattr(extra, a)])
                            for a in ("x", "y", "size", "angle", "octave")))
    model = Model(**features.model_params())
    op = AkazeJointOperator(model, keypoints, image.shape)
    expected = _whole_level_cells(model, keypoints, image)
    assert len(np.unique(model.level_of(keypoints))) >= 4 and expected[:, :, 1:].std() > 0.01
    np.testing.assert_allclose(op.cell_values(image), expected, atol=2e-6)
    assert {lv.power for lv in op._windows} == {1, 2} and min(lv.top for lv in op._windows) == 0
    dot_test(op, rtol=1e-5)  # the transposes of the border taps and of the block means too


def test_the_fused_hinge_is_the_hinge_of_forward_and_adjoint(document, operator):
    # h = sum [delta - s m]_+^2 over the tests, delta the margin where the bit is +1 (the strict side), 0 where it
    # is -1 (ties read -1), and its gradient A^T(-2 s [.]_+): computed here from forward and adjoint.
    image, features = document
    weighted = operator.with_channel_weights((1.0, 5.0, 6.0))
    rng = np.random.default_rng(5)
    bits = features.bits()
    bits[rng.random(bits.shape) < 0.2] *= -1  # some bits the image does not reproduce
    x = np.clip(image + 0.05 * rng.standard_normal(image.shape), 0, 1).astype(np.float32)
    x[:40, :60] = 0.5  # a flat area: its tests tie
    margin = np.linspace(0.001, 0.01, 486, dtype=np.float32)
    m = weighted.forward(x).astype(np.float64)
    s = np.where(bits > 0, 1.0, -1.0)
    residual = np.maximum(np.where(bits > 0, margin, 0.0) - s * m, 0.0)
    tie = np.abs(m) <= 1e-5
    assert tie.any()
    agree = np.sum(np.where(m > 1e-5, 1, -1) == bits)
    gradient = weighted.adjoint(-2 * s * residual)
    for positive in (bits > 0, np.packbits(bits > 0, axis=1, bitorder="little"), weighted.block_bits(bits > 0)):
        value, grad, count = weighted.squared_hinge(x, positive, margin[None, :], atol=1e-5)
        np.testing.assert_allclose(value, np.sum(residual ** 2), rtol=1e-4)
        np.testing.assert_allclose(grad, gradient, rtol=1e-4, atol=1e-4 * np.abs(gradient).max())
        assert count == agree
    assert weighted.squared_hinge(x, bits > 0, 0.005)[0] != value  # one margin for all tests is another hinge
    with pytest.raises(ValueError, match="positive must be bool"):
        weighted.squared_hinge(x, bits, margin)
    with pytest.raises(ValueError, match="margin must be"):
        weighted.squared_hinge(x, bits > 0, margin[:10])


def test_the_solver_runs_the_fused_hinge_as_it_ran_forward_and_adjoint(document, operator):
    from lbdviewer.solvers.image.consistency import SignConsistency

    class Plain:  # the operator without its fused hinge: the solver's generic path
        def __init__(self, op):
            self.domain_shape, self.range_shape, self.tie_positive = op.domain_shape, op.range_shape, op.tie_positive
            self.forward, self.adjoint = op.forward, op.adjoint

    image, features = document
    fused = SignConsistency(operator, features.bits(), smoothness=5e-5, iterations=3).run()
    plain = SignConsistency(Plain(operator), features.bits(), smoothness=5e-5, iterations=3).run()
    np.testing.assert_allclose(fused.objective, plain.objective, rtol=1e-5)
    np.testing.assert_allclose(fused.bit_consistency, plain.bit_consistency)
    np.testing.assert_allclose(fused.x, plain.x, atol=1e-4)


def test_other_channel_weights_share_the_windows_and_equal_a_fresh_build(document, operator):
    image, features = document
    weighted = operator.with_channel_weights((1.0, 4.0, 0.5))
    fresh = AkazeJointOperator(Model(**features.model_params()), features.keypoints, image.shape,
                               channel_weights=(1.0, 4.0, 0.5))
    y = np.random.default_rng(2).standard_normal(operator.range_shape)
    np.testing.assert_array_equal(weighted.forward(image), fresh.forward(image))
    np.testing.assert_array_equal(weighted.adjoint(y), fresh.adjoint(y))
    assert operator.channel_weights == (1.0, 1.0, 1.0) and weighted._windows is operator._windows
    with pytest.raises(ValueError, match="channel_weights"):
        operator.with_channel_weights((1.0, -1.0, 1.0))


def test_one_thread_and_two_give_the_same_values(operator, document):
    from lbdviewer._runtime.parallel import numba_threads

    image = document[0]
    y = np.random.default_rng(6).standard_normal(operator.range_shape)
    with numba_threads(1):
        one = operator.forward(image), operator.adjoint(y), len(operator._parts())
    with numba_threads(2):
        two = operator.forward(image), operator.adjoint(y), len(operator._parts())
    assert (one[2], two[2]) == (1, 2)
    np.testing.assert_array_equal(one[0], two[0])  # each keypoint's cells come from one window
    np.testing.assert_allclose(one[1], two[1], rtol=1e-5, atol=1e-6)  # the parts' images add in another order


def test_windows_merge_while_that_filters_fewer_pixels():
    from lbdviewer.libraries.akaze.joint import _window_groups

    rng = np.random.default_rng(1)
    corners = rng.integers(0, 400, size=(60, 2))
    boxes = np.column_stack([corners[:, 0], corners[:, 0] + rng.integers(10, 40, 60),
                             corners[:, 1], corners[:, 1] + rng.integers(10, 40, 60)])
    groups = _window_groups(boxes, overhead=500)
    members = np.sort(np.concatenate([indices for indices, _ in groups]))
    np.testing.assert_array_equal(members, np.arange(60))  # every box in exactly one group
    for indices, (top, bottom, left, right) in groups:
        inner = boxes[indices]
        assert top == inner[:, 0].min() and bottom == inner[:, 1].max()  # the group's box is its boxes' bounds
        assert left == inner[:, 2].min() and right == inner[:, 3].max()

    def cost(boxes_, overhead=500):
        return sum((b - t) * (r - l) + overhead for t, b, l, r in boxes_)

    merged = cost(box for _, box in groups)
    assert 1 < len(groups) < 60 and merged < cost(boxes)  # some merged, some apart, fewer pixels
    assert merged < cost([(boxes[:, 0].min(), boxes[:, 1].max(), boxes[:, 2].min(), boxes[:, 3].max())])
    for i, (_, box_a) in enumerate(groups):  # no two groups left that would save by merging
        for _, box_b in groups[i + 1:]:
            union = (min(box_a[0], box_b[0]), max(box_a[1], box_b[1]), min(box_a[2], box_b[2]),
                     max(box_a[3], box_b[3]))
            assert cost([union]) >= cost([box_a, box_b])
