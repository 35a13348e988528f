"""The pyramid joint operator: OpenCV's pyramid as a linear map, the dot test, agreement with the joint operator."""

import cv2
import numpy as np
import pytest

from lbdviewer.operators.joint.operator import TIE_ATOL, JointOperator
from lbdviewer.libraries.registry import get_model
from lbdviewer.patterns.base import Pattern
from lbdviewer.testing import dot_test
from lbdviewer.operators.pyramid import LevelAtlas, PyramidJointOperator, reflect_matrix, resize_matrix, shared_stencils
from lbdviewer.solvers.image.joint import JointSignConsistency


@pytest.mark.parametrize("source, target", [((90, 64), (75, 53)), ((31, 40), (26, 33)), ((20, 20), (10, 10))])
def test_resize_matrix_is_opencv_bilinear_resize(source, target):
    image = np.random.default_rng(0).random(source).astype(np.float32)
    ours = resize_matrix(source[0], target[0]) @ image @ resize_matrix(source[1], target[1]).T
    reference = cv2.resize(image, target[::-1], interpolation=cv2.INTER_LINEAR)
    np.testing.assert_allclose(ours, reference, atol=5e-5)


def test_reflect_matrix_is_opencv_reflect_101():
    row = np.arange(7.0)[None]
    expected = cv2.copyMakeBorder(row, 0, 0, 5, 5, cv2.BORDER_REFLECT_101)[0]
    np.testing.assert_array_equal(reflect_matrix(7, 5) @ row[0], expected)


def test_atlas_holds_orb_pyramid_levels_and_passes_the_dot_test():
    rng = np.random.default_rng(1)
    model = get_model("orb", n_levels=4)
    image = rng.random((80, 96))
    levels = model.source_images(image)
    atlas = LevelAtlas(image.shape, [level.shape for level in levels], [0, 2, 3], [0, 4, 2], dtype=np.float64)
    out = atlas.forward(image)
    for index in (2, 3):
        row, col = atlas.offsets[index]
        height, width = levels[index].shape
        # ORB rounds each level to 8 bits: within a grey level or so of the linear pyramid
        assert np.abs(out[row:row + height, col:col + width] - levels[index]).max() < 2.5 / 255
    np.testing.assert_array_equal(out[atlas.offsets[0][0]:80, :96], image)
    y = rng.standard_normal(atlas.shape)
    assert np.isclose(np.vdot(out, y), np.vdot(image, atlas.adjoint(y)), rtol=1e-10)


@pytest.fixture(scope="module")
def orb_problem():
    """Real ORB features over several levels of a photo crop, the model and the trimmed level patterns."""
    from lbdviewer.features.extract import extract_features
    from lbdviewer.features.invert import keypoint_patterns
    from lbdviewer.io.samples import sample_image

    image = sample_image("camera")[60:260, 150:380]
    features = extract_features(image, "orb", n_keypoints=80)
    assert len(set(features.keypoints.octave.tolist())) >= 3
    return image, features, get_model("orb"), keypoint_patterns(features)


def test_pyramid_operator_is_the_joint_operator_on_the_atlas_and_passes_the_dot_test(orb_problem):
    image, _, model, patterns = orb_problem
    shapes = [level.shape for level in model.source_images(image)]
    op = PyramidJointOperator(image.shape, shapes, [kp.level for kp in patterns], [kp.origin for kp in patterns],
                              [kp.pattern for kp in patterns], dtype=np.float64)
    place = np.array([op.atlas.offsets[kp.level] for kp in patterns])
    joint = JointOperator(op.atlas.shape, np.array([kp.origin for kp in patterns]) + place,
                          [kp.pattern for kp in patterns], dtype=np.float64)
    np.testing.assert_allclose(op.forward(image), joint.forward(op.atlas.forward(image)), atol=1e-9)
    dot_test(op, batch=(2,), rtol=1e-9)


def test_pyramid_operator_reproduces_the_library_bits(orb_problem):
    image, features, model, patterns = orb_problem
    shapes = [level.shape for level in model.source_images(image)]
    op = PyramidJointOperator(image.shape, shapes, [kp.level for kp in patterns], [kp.origin for kp in patterns],
                              [kp.pattern for kp in patterns], dtype=np.float64)
    # OpenCV rounds each level and its blur to 8 bits; the linear pyramid misses only near-ties.
    assert np.mean((op.forward(image) > 0) == (features.bits() > 0)) > 0.97


def test_hinge_matches_the_joint_operator_and_its_gradient_is_the_adjoint(orb_problem):
    image, _, model, patterns = orb_problem
    shapes = [level.shape for level in model.source_images(image)]
    args = (image.shape, shapes, [kp.level for kp in patterns], [kp.origin for kp in patterns],
            [kp.pattern for kp in patterns])
    op = PyramidJointOperator(*args, dtype=np.float64)
    rng = np.random.default_rng(4)
    positive = rng.random(op.range_shape) > 0.5
    margin = rng.random((len(op.patterns), op.m)) * 0.01
    x = rng.random(image.shape)
    value, gradient, agree = op.squared_hinge(x, positive, margin, atol=1e-6)
    values = op.forward(x)
    sign = np.where(positive, 1.0, -1.0)
    residual = np.maximum(np.where(positive, margin[op.site_pattern], 0.0) - sign * values, 0.0)
    assert np.isclose(value, np.sum(residual ** 2))
    np.testing.assert_allclose(gradient, op.adjoint(-2 * sign * residual), atol=1e-9)
    assert agree == np.sum((values > 1e-6) == positive)
    errors, mismatches = op.binary_gradient(x, np.packbits(positive, axis=1, bitorder="little"))
    assert mismatches == np.sum((values > TIE_ATOL) != positive)


def test_fields_between_pixels_are_refused():
    pattern = Pattern("toy", 9, [[3.5, 3.0], [5.0, 4.0]], [1.0, 1.0], [1.5, 1.5], [[0, 1]])
    with pytest.raises(ValueError, match="between pixels"):
        shared_stencils([pattern])
    with pytest.raises(ValueError, match="leaves its patch"):
        shared_stencils([Pattern("toy", 9, [[0.0, 3.0], [5.0, 4.0]], [1.0, 1.0], [1.5, 1.5], [[0, 1]])])


def test_keypoint_pyramids_refuse_oriented_margins_by_name(orb_problem):
    image, _, model, patterns = orb_problem
    shapes = [level.shape for level in model.source_images(image)]
    op = PyramidJointOperator(image.shape, shapes, [kp.level for kp in patterns], [kp.origin for kp in patterns],
                              [kp.pattern for kp in patterns])
    n = op.range_shape[0]
    with pytest.raises(ValueError, match="orientation is not supported by PyramidJointOperator"):
        op.squared_hinge(image, np.ones(op.range_shape, bool), 0.01, orientation=(np.ones(n), np.zeros((n, 2))))
    with pytest.raises(ValueError, match="oriented margins need a JointOperator"):
        JointSignConsistency(op, np.ones(op.range_shape), oriented=True)
