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
    windows = [lv.shape[0] * lv.shape[1] for lv in op._levels]
    whole = [lv.level_shape[0] * lv.level_shape[1] for lv in op._levels]
    assert len(op._levels) > len(np.unique(model.level_of(keypoints)))  # some level split into bands ...
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
