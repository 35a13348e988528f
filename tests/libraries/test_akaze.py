import json

import numpy as np
import pytest
from skimage import data, io

from lbdviewer.features.invert_akaze import cell_ranks
from lbdviewer.cli.main import main
from lbdviewer.features.extract import extract_features
from lbdviewer.features.keypoints import Keypoints
from lbdviewer.features.files import load_features
from lbdviewer.features.invert import invert_features
from lbdviewer.libraries.registry import get_model
from lbdviewer.evaluation.metrics import image_metrics
from lbdviewer.libraries.akaze.scale_space import diffusion_step, fed_steps, level_sigmas
from lbdviewer.libraries.akaze.grid import comparison_pairs
from lbdviewer.testing import dot_test


@pytest.fixture(scope="module")
def image():
    return data.camera()[96:352, 96:352] / 255.0


@pytest.fixture(scope="module")
def described(image):
    model = get_model("akaze")
    result = model.run_library(image, model.detect(image, n_keypoints=60))
    return model, result


def test_detected_levels_match_opencv_class_ids(image):
    model = get_model("akaze")
    found = model._create(60).detect((image * 255).round().astype(np.uint8), None)
    assert len(found) > 20
    levels = model.level_of(Keypoints.from_cv(found))
    assert levels.tolist() == [k.class_id for k in found] and levels.max() > 0


def test_model_is_bit_exact_on_detected_keypoints(described, image):
    model, result = described
    assert result.bits.shape[1] == 486 and len(result.keypoints) > 20
    assert np.array_equal(model.model_bits(image, result.keypoints), result.bits)


def test_model_is_bit_exact_at_other_angles(described, image):
    model, result = described
    kp = result.keypoints.take(slice(0, 15))
    turned = Keypoints(kp.x, kp.y, kp.size, np.random.default_rng(0).uniform(0, 360, len(kp)), kp.octave, kp.response)
    again = model.run_library(image, turned)
    assert not np.array_equal(again.bits, result.bits[:15])
    assert np.array_equal(model.model_bits(image, turned), again.bits)


def test_linear_views_reproduce_the_bits(described, image):
    model, result = described
    kp = result.keypoints.take(slice(0, 20))
    sampled = model.linear_bits(image, kp, fold_smoothing=False)
    assert np.mean(sampled == result.bits[:20]) > 0.999
    folded = model.linear_bits(image, kp)
    level0 = model.level_of(kp) == 0
    assert np.mean(folded == result.bits[:20]) > 0.99
    assert np.any(level0) and np.mean(folded[level0] == result.bits[:20][level0]) > 0.999


def test_patch_operator_passes_the_dot_test_and_reads_the_level(described, image):
    model, result = described
    ops = model.patch_operators(result.keypoints.take(slice(0, 3)), image_shape=image.shape)
    for op in ops:
        dot_test(op)
        dot_test(op, batch=(2,))
    level = model.scale_space(image)[ops[0].level]
    sources = model.source_images(image)
    values = ops[0].cell_values(ops[0].extract(sources[ops[0].level]))
    exact = model.cell_values([(lv.lt, lv.lx, lv.ly) for lv in model.scale_space(image)],
                              result.keypoints.take(slice(0, 1)), exact=False)[0]
    if ops[0].level == 0:
        np.testing.assert_allclose(values, exact, atol=1e-5)
    assert level.lt.shape == ops[0].level_shape


def test_fed_steps_reach_the_time_and_stay_positive():
    for time in (0.3, 1.0, 7.5):
        steps = fed_steps(time)
        assert np.all(steps > 0) and abs(float(steps.sum()) - time) < 1e-4 * time
        n = len(steps)
        assert 0.25 * n * (n + 1) / 3 >= time > 0.25 * (n - 1) * n / 3


def test_diffusion_step_conserves_mass_and_matches_the_stencil():
    rng = np.random.default_rng(0)
    lt = rng.random((12, 15)).astype(np.float32)
    for rows, cols in ((slice(0, 2), slice(0, 2)), (slice(0, 2), slice(-2, None)),
                       (slice(-2, None), slice(0, 2)), (slice(-2, None), slice(-2, None))):
        lt[rows, cols] = 0.5  # no flux at the corners the library leaves at 0
    g = rng.random((12, 15)).astype(np.float32)
    step = diffusion_step(lt, g, np.float32(0.1))
    assert abs(float(step.astype(np.float64).sum())) < 1e-5  # zero flux across the border
    delta = np.zeros((7, 7), np.float32)
    delta[3, 3] = 1.0
    step = diffusion_step(delta, np.ones((7, 7), np.float32), np.float32(0.1))
    assert step[3, 3] == pytest.approx(-0.8) and step[2, 3] == pytest.approx(0.2) and step[2, 2] == 0
    assert not np.any(diffusion_step(np.full((6, 7), 0.5, np.float32), g[:6, :7], np.float32(0.1)))


def test_level_sigmas_stop_octaves_on_small_images():
    assert {o for o, *_ in level_sigmas(4, 4, (100, 200))} == {0, 1}
    assert len(level_sigmas(4, 4, (30, 30))) == 4


def test_comparison_pairs_and_ranks_recover_the_ordering():
    pairs = comparison_pairs()
    assert pairs.shape == (486, 2) and np.all(pairs[:, 0] % 3 == pairs[:, 1] % 3)
    values = np.random.default_rng(1).normal(size=(3, 87))
    bits = np.where(values[:, pairs[:, 0]] > values[:, pairs[:, 1]], 1, -1)
    ranks = cell_ranks(bits)
    for grid in (slice(0, 4), slice(4, 13), slice(13, 29)):
        intensity = values[:, 0::3][:, grid]
        assert np.array_equal(np.argsort(ranks[:, 0::3][:, grid], axis=1), np.argsort(intensity, axis=1))
        along = values[:, 2::3][:, grid]
        assert np.array_equal(np.argsort(ranks[:, 2::3][:, grid], axis=1), np.argsort(along, axis=1))
        np.testing.assert_allclose(ranks[:, 0::3][:, grid].mean(axis=1), 0, atol=1e-12)


def test_bad_parameters_are_named():
    with pytest.raises(ValueError, match="n_octaves must be"):
        get_model("akaze", n_octaves=0)
    with pytest.raises(ValueError, match="threshold must be positive"):
        get_model("akaze", threshold=-1.0)


def test_invert_akaze_features_resembles_the_image(image):
    features = extract_features(image, "akaze", n_keypoints=40)
    closed = invert_features(features, mode="patches")
    assert closed.method == "akaze-cell-ranks" and closed.covered.mean() > 0.3
    assert 0.0 < closed.solver_bit_consistency <= 1.0
    assert image_metrics(image, closed.image, mask=closed.covered)["correlation"] > 0.3
    joint = invert_features(features, iterations=60)  # the joint solve reproduces the bits and the image better
    assert joint.method == "consistency" and joint.params["solver_settings"]["operator"] == "AkazeJointOperator"
    assert joint.solver_bit_consistency > max(0.9, closed.solver_bit_consistency)
    quality = image_metrics(image, joint.image, mask=joint.covered)["correlation"]
    assert quality > image_metrics(image, closed.image, mask=joint.covered)["correlation"] and quality > 0.6


def test_cli_extract_invert_and_verify_akaze(tmp_path, image, capsys):
    path = tmp_path / "cam.png"
    io.imsave(path, (image * 255).round().astype(np.uint8))
    features = tmp_path / "f.npz"
    assert main(["extract", str(path), "-o", str(features), "--descriptor", "akaze", "--keypoints", "20"]) == 0
    loaded = load_features(features)
    assert loaded.descriptor == "akaze" and loaded.n_bits == 486
    assert main(["invert", str(features), "-o", str(tmp_path / "out.png")]) == 0
    assert io.imread(tmp_path / "out.png").shape == image.shape
    capsys.readouterr()
    assert main(["verify-model", str(path), "--descriptor", "akaze", "--keypoints", "15", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["descriptors"][0]["exact"] == 1.0 and report["descriptors"][0]["linear"] > 0.99


def test_cell_corners_hold_the_samples_of_their_cell(described):
    model, result = described
    kp = result.keypoints.take(slice(0, 8))
    levels, cells, rows, cols, _, _ = model.sample_grid(kp)
    corner_levels, corners = model.cell_corners(kp)
    assert np.array_equal(corner_levels, levels) and corners.shape == (8, 29, 4, 2)
    for k in range(8):
        for cell in range(29):
            c0, c1, _, c3 = corners[k, cell]
            e1, e2 = c1 - c0, c3 - c0
            samples = np.stack([cols[k, cells == cell], rows[k, cells == cell]], axis=1) - c0
            u, v = samples @ e1 / (e1 @ e1), samples @ e2 / (e2 @ e2)
            slack = 0.71 / np.sqrt(e1 @ e1)  # rounding moves a sample by at most half a pixel diagonal
            assert np.all((u > -slack) & (u < 1 + slack) & (v > -slack) & (v < 1 + slack))


def test_patch_operator_maps_are_its_rows(described, image):
    model, result = described
    (op,) = model.patch_operators(result.keypoints.take([3]), image_shape=image.shape)
    matrix = np.stack([op.frame_vector(i).ravel() for i in range(op.m)])
    np.testing.assert_allclose(matrix, op.adjoint(np.eye(op.m)).reshape(op.m, -1), atol=1e-12)
    pairs = comparison_pairs()
    values = np.abs(op.functionals)
    expected = sum(values[a] + values[b] for a, b in pairs)
    np.testing.assert_allclose(op.weight_map().ravel(), expected)
    reads = sum(((op.functionals[a] != 0) | (op.functionals[b] != 0)).astype(int) for a, b in pairs)
    assert np.array_equal(op.occurrence_map().ravel(), reads) and op.occurrence_map().max() <= 486
    with pytest.raises(ValueError, match="index must be an integer from 0 to 485"):
        op.frame_vector(486)
