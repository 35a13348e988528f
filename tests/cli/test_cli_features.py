import hashlib
import json
import re

import numpy as np
import pytest
from skimage import data, io

from lbdviewer.cli.main import main
from lbdviewer.features.files import load_features


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
    assert loaded.image_sha256 == hashlib.sha256(image_file.read_bytes()).hexdigest()  # the image they came from
    out, metrics = tmp_path / "out.png", tmp_path / "m.json"
    assert main(["invert", str(features), "-o", str(out), "--iterations", "20",
                 "--reference", str(image_file), "--metrics", str(metrics)]) == 0
    assert io.imread(out).shape == (303, 384)
    report = json.loads(metrics.read_text())
    assert report["parameters"]["descriptor"] == "orb" and np.isfinite(report["psnr"])


def test_a_filestorage_file_keeps_the_image_sha256_and_still_inverts(tmp_path, image_file):
    features = tmp_path / "f.yml"
    assert main(["extract", str(image_file), "-o", str(features), "--descriptor", "beblid", "--keypoints", "15"]) == 0
    loaded = load_features(features)
    assert loaded.image_sha256 == hashlib.sha256(image_file.read_bytes()).hexdigest()
    assert "image_sha256" not in loaded.model_params() and "library" not in loaded.model_params()
    assert main(["invert", str(features), "-o", str(tmp_path / "out.png"), "--iterations", "5", "--quiet"]) == 0


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
    assert report["parameters"]["mode"] == "joint" and report["correlation"] > 0.3


def _valid_arrays():
    keypoints = [[30.0, 30.0, 31.0, 0.0, 0.0, 0.0], [50.0, 40.0, 31.0, 90.0, 0.0, 0.0]]
    return dict(format=np.array("lbdviewer-features"), version=np.array(1), descriptor=np.array("orb"),
                params=np.array("{}"), image_shape=np.array([80, 90]), keypoints=np.array(keypoints),
                descriptors=np.zeros((2, 32), np.uint8), n_bits=np.array(256), bitorder=np.array("little"))


def _write(path, **changes):
    arrays = {**_valid_arrays(), **changes}
    with open(path, "wb") as handle:
        np.savez(handle, **{k: v for k, v in arrays.items() if v is not None})
    return path


def _truncated(path):
    data = _write(path).read_bytes()
    path.write_bytes(data[: len(data) // 2])
    return path


MALFORMED = {
    "truncated": (_truncated, "truncated"),
    "not a zip": (lambda path: path.write_bytes(b"PK\x03\x04 not really a zip") and path, "not .npz"),
    "wrong descriptor shape": (lambda path: _write(path, descriptors=np.zeros((2, 16), np.uint8)),
                               r"descriptors must be uint8 of shape \(2, 32\)"),
    "wrong keypoint shape": (lambda path: _write(path, keypoints=np.zeros((2, 4))), r"shape \(K, 6\)"),
    "unknown descriptor": (lambda path: _write(path, descriptor=np.array("sift")), "unknown descriptor 'sift'"),
    "pickled payload": (lambda path: _write(path, params=np.array([{"a": 1}], dtype=object)), "pickled"),
    "NaN coordinates": (lambda path: _write(path, keypoints=np.array([[np.nan, 30.0, 31.0, 0.0, 0.0, 0.0]])),
                        "keypoint 0 has a NaN"),
    "keypoint outside": (lambda path: _write(path, keypoints=np.array([[95.0, 30.0, 31.0, 0.0, 0.0, 0.0]])),
                         "outside the image"),
    "missing item": (lambda path: _write(path, n_bits=None), "missing 'n_bits'"),
    "params the model does not take": (lambda path: _write(path, params=np.array('{"n_levels": 8, "bogus": 1}')),
                                       "bogus"),
    "octave beyond the pyramid": (lambda path: _write(path, keypoints=np.array([[30.0, 30.0, 31.0, 0.0, 9.0, 0.0]] * 2)),
                                  "octave must be below"),
}


@pytest.mark.parametrize("kind", MALFORMED)
def test_invert_of_a_malformed_file_is_a_clear_error_and_writes_nothing(tmp_path, capsys, kind):
    make, message = MALFORMED[kind]
    broken = tmp_path / "broken.npz"
    make(broken)
    output = tmp_path / "out.png"
    assert main(["invert", str(broken), "-o", str(output), "--iterations", "2"]) == 2
    error = capsys.readouterr().err
    assert error.startswith("lbdviewer invert: error:") and "Traceback" not in error, error
    assert re.search(message, error), error
    assert not output.exists()


def test_the_valid_file_of_the_malformed_tests_inverts(tmp_path):
    output = tmp_path / "out.png"
    assert main(["invert", str(_write(tmp_path / "ok.npz")), "-o", str(output), "--iterations", "2",
                 "--mode", "patches"]) == 0
    assert io.imread(output).shape == (80, 90)


@pytest.mark.parametrize("argv, message", [
    (["extract", "{image}", "-o", "{tmp}/f.npz", "--keypoints", "0"], "--keypoints: must be a positive integer"),
    (["extract", "{tmp}/missing.png", "-o", "{tmp}/f.npz"], "missing.png"),
    (["extract", "{image}", "-o", "{tmp}/no/such/folder/f.npz"], "folder"),
    (["verify-model", "{image}", "--keypoints", "-3"], "--keypoints: must be a positive integer"),
    (["invert", "{tmp}/missing.npz", "-o", "{tmp}/o.png"], "missing.npz"),
    (["invert", "{features}", "-o", "{tmp}/o.png", "--iterations", "0"], "--iterations: must be a positive integer"),
    (["invert", "{features}", "-o", "{tmp}/o.png", "--reference", "{image}"], "give --metrics OUT.json too"),
    (["invert", "{features}", "-o", "{tmp}/o.png", "--reference", "{image}", "--metrics", "{tmp}/m.json"],
     "--reference has shape"),
])
def test_bad_command_lines_are_clear_errors(tmp_path, image_file, capsys, argv, message):
    features = _write(tmp_path / "f0.npz")
    argv = [a.format(image=image_file, tmp=tmp_path, features=features) for a in argv]
    assert main(argv) == 2
    error = capsys.readouterr().err
    assert error.startswith(f"lbdviewer {argv[0]}: error:") and message in error, error
