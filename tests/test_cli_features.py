import json

import numpy as np
import pytest
from skimage import data, io

from lbdviewer.cli import main
from lbdviewer.features import load_features


@pytest.fixture(scope="module", autouse=True)
def shared_cache(tmp_path_factory):
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("LBDVIEWER_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "lbdcache"))
        yield


@pytest.fixture
def image_file(tmp_path):
    path = tmp_path / "coins.png"
    io.imsave(path, data.coins())
    return path


def test_extract_then_invert_with_metrics(tmp_path, image_file, capsys):
    features = tmp_path / "f.npz"
    assert main(["extract", str(image_file), "-o", str(features), "--descriptor", "orb", "--keypoints", "25"]) == 0
    loaded = load_features(features)
    assert loaded.descriptor == "orb" and loaded.image_shape == (303, 384) and loaded.n_bits == 256
    out, metrics = tmp_path / "out.png", tmp_path / "m.json"
    assert main(["invert", str(features), "-o", str(out), "--iterations", "20",
                 "--reference", str(image_file), "--metrics", str(metrics)]) == 0
    assert io.imread(out).shape == (303, 384)
    report = json.loads(metrics.read_text())
    assert report["descriptor"] == "orb" and np.isfinite(report["psnr"])


def test_verify_model_prints_agreement(image_file, capsys):
    assert main(["verify-model", str(image_file), "--descriptor", "opencv-freak", "--keypoints", "30", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["descriptors"][0]["exact"] == 1.0 and report["overall_exact"] == 1.0


def test_invert_joint_mode_writes_image_and_metrics(tmp_path, image_file):
    features = tmp_path / "f.npz"
    assert main(["extract", str(image_file), "-o", str(features), "--descriptor", "opencv-brief",
                 "--keypoints", "20"]) == 0
    out, metrics = tmp_path / "joint.png", tmp_path / "joint.json"
    assert main(["invert", str(features), "-o", str(out), "--mode", "joint", "--iterations", "30",
                 "--reference", str(image_file), "--metrics", str(metrics)]) == 0
    assert io.imread(out).shape == (303, 384)
    report = json.loads(metrics.read_text())
    assert report["mode"] == "joint" and report["correlation"] > 0.3


def test_level0_patterns_reproduce_orb_bits_on_upper_pyramid_levels():
    from lbdviewer.commands.extract import extract_features
    from lbdviewer.commands.invert import level0_pattern
    from lbdviewer.library_models import get_model
    from lbdviewer.operators import unpack_bits
    from lbdviewer.reconstruct import describe_sites

    image = data.camera()[::2, ::2] / 255.0
    features = extract_features(image, "orb", n_keypoints=60)
    model = get_model("orb")
    agreement = []
    for k, kp in enumerate(model.keypoint_patterns(features.keypoints)):
        pattern, (row, col) = level0_pattern(kp)
        inside = row >= 0 and col >= 0 and row + pattern.patch_size <= 256 and col + pattern.patch_size <= 256
        if kp.level > 0 and inside:
            assert pattern.patch_size > kp.pattern.patch_size
            bits = unpack_bits(describe_sites(image, [[row, col]], pattern), pattern.m)[0]
            agreement.append(np.mean(bits == features.bits()[k]))
    assert len(agreement) >= 5 and np.mean(agreement) > 0.9
