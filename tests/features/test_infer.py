"""Files as OpenCV's C++ API writes them are understood without flags; a wrong descriptor name is never silent."""

import json

import cv2
import numpy as np
import pytest

from lbdviewer.cli.main import main
from lbdviewer.features.files import load_features
from lbdviewer.features.infer import CHANCE_AGREEMENT, candidates_for, law_exclusions
from lbdviewer.io.samples import sample_image

#: How each descriptor's test file is made: (the library's extractor, OpenCV detector or None, suffix).
WRITERS = {
    "orb": (lambda: cv2.ORB_create(60), None, ".yml"),
    "brisk": (lambda: cv2.xfeatures2d.BRISK_create(30, 3, 1.0), None, ".xml"),
    "akaze": (lambda: cv2.xfeatures2d.AKAZE_create(), None, ".json"),
    "beblid": (lambda: cv2.xfeatures2d.BEBLID_create(1.0, cv2.xfeatures2d.BEBLID_SIZE_256_BITS), "orb", ".yml"),
    "opencv-brief": (lambda: cv2.xfeatures2d.BriefDescriptorExtractor_create(32, False), "orb", ".xml"),
    "opencv-freak": (lambda: cv2.xfeatures2d.FREAK_create(), "fast", ".json"),
}


@pytest.fixture(scope="module")
def image():
    return (sample_image("camera")[60:260, 150:350] * 255).astype(np.uint8)


def write_like_cpp(path, keypoints, descriptors, *, size=None):
    """``fs << "keypoints" << kps << "descriptors" << desc`` of OpenCV 4's C++ API, through cv2.

    A sequence of one seven-number flow sequence per keypoint, the descriptors an
    ``!!opencv-matrix`` (``<descriptors type_id="opencv-matrix">`` in XML); ``size``: a
    ``cv::Size`` node ``image_size: [w, h]``.
    """
    storage = cv2.FileStorage(str(path), cv2.FILE_STORAGE_WRITE)
    if size is not None:
        storage.startWriteStruct("image_size", cv2.FileNode_SEQ | cv2.FileNode_FLOW)
        storage.write("", int(size[1]))
        storage.write("", int(size[0]))
        storage.endWriteStruct()
    storage.startWriteStruct("keypoints", cv2.FileNode_SEQ)
    for kp in keypoints:
        storage.startWriteStruct("", cv2.FileNode_SEQ | cv2.FileNode_FLOW)
        for value in (kp.pt[0], kp.pt[1], kp.size, kp.angle, kp.response):
            storage.write("", float(value))
        storage.write("", int(kp.octave))
        storage.write("", int(kp.class_id))
        storage.endWriteStruct()
    storage.endWriteStruct()
    storage.write("descriptors", descriptors)
    storage.release()


def library_file(tmp_path, image, name, *, suffix=None, size=True):
    """A feature file of ``image`` written by the real library, as a C++ program would write it."""
    make, detector, default_suffix = WRITERS[name]
    extractor = make()
    finder = {"orb": lambda: cv2.ORB_create(400), "fast": cv2.FastFeatureDetector_create, None: lambda: extractor}
    keypoints = finder[detector]().detect(image, None)
    keypoints, descriptors = extractor.compute(image, keypoints)  # FREAK drops keypoints near the border
    strongest = np.argsort([-k.response for k in keypoints], kind="stable")[:60]
    keypoints, descriptors = [keypoints[i] for i in strongest], descriptors[strongest]
    path = tmp_path / f"{name}{suffix or default_suffix}"
    write_like_cpp(path, keypoints, descriptors, size=image.shape if size else None)
    text = path.read_text()
    assert "opencv-matrix" in text and ("[" in text or "<_>" in text)  # the C++ layout, nested sequences
    return path


@pytest.mark.parametrize("name", list(WRITERS))
def test_the_descriptor_of_a_cpp_written_file_is_inferred(tmp_path, image, name):
    features = load_features(library_file(tmp_path, image, name))
    assert features.descriptor == name and features.image_shape == image.shape
    choice = features.provenance["descriptor"]
    if choice["method"] == "sample inversion":
        agreements = choice["agreements"]
        assert max(agreements, key=agreements.get).startswith(name) and choice["margin"] > 0.2
        assert any(f"{name}" in note and "margin" in note for note in features.provenance["notes"])
        assert sorted([*agreements, *choice["unscored"], *choice["excluded"]]) == sorted(choice["candidates"])
        if name == "brisk":  # decided by BRISK and FREAK: the costliest calibrations are never made
            assert {"beblid-512", "teblid-512"} <= set(choice["unscored"])
    else:
        assert choice["method"] == "only candidate" and name == "akaze"  # 61 bytes: AKAZE alone


def test_the_keypoint_laws_and_the_byte_width_narrow_the_candidates(tmp_path, image):
    orb = load_features(library_file(tmp_path, image, "orb", size=False))
    assert orb.provenance["image_size"] == "keypoint extent"
    assert min(orb.image_shape) > 150 and "extent" in orb.provenance["notes"][0]
    brisk = load_features(library_file(tmp_path, image, "brisk"), descriptor="brisk")
    assert "orb" in law_exclusions(brisk.keypoints, np.full(len(brisk.keypoints), -1.0))
    assert [name for name, _ in candidates_for(64)] == ["brisk", "opencv-freak", "opencv-brief", "beblid", "teblid"]


def test_a_brisk_file_read_as_beblid_warns_and_the_record_says_so(tmp_path, image, capsys):
    path = library_file(tmp_path, image, "brisk")
    metrics = tmp_path / "m.json"
    assert main(["invert", str(path), "-o", str(tmp_path / "o.png"), "--descriptor", "beblid", "--iterations", "30",
                 "--metrics", str(metrics), "--quiet"]) == 0
    err = capsys.readouterr().err
    assert "warning" in err and "not written by beblid-512" in err and "likelier: brisk" in err
    check = json.loads(metrics.read_text())["feature_file"]["agreement_check"]
    assert check["bit_agreement"] < CHANCE_AGREEMENT and next(iter(check["likelier"])) == "brisk"
    assert "teblid-512" in check["unscored"]  # decided once BRISK explained the bits: TEBLID is never calibrated
    assert main(["invert", str(path), "-o", str(tmp_path / "p.png"), "--iterations", "30", "--quiet"]) == 0
    assert "warning" not in capsys.readouterr().err  # inferred: brisk, and its bits agree


def test_an_image_size_over_the_limit_is_refused_before_any_inference(tmp_path, monkeypatch):
    from lbdviewer.features import infer
    from lbdviewer.io.limits import ResourceLimitError

    def never(*args, **kwargs):
        raise AssertionError("a sample was inverted before the image size was checked")

    monkeypatch.setattr(infer, "candidate_agreements", never)
    path = tmp_path / "far.yml"  # ORB-shaped keypoints, 32 bytes, no size, no name: several candidates remain
    path.write_text("keypoints:\n   - [ 40., 40., 31., 0., 0., 0, -1 ]\n   - [ 5000., 4000., 31., 0., 0., 0, -1 ]\n"
                    "descriptors: !!opencv-matrix\n   rows: 2\n   cols: 32\n   dt: u\n   data: [ "
                    + ", ".join(["7"] * 64) + " ]\n")
    with pytest.raises(ResourceLimitError, match="declares 5032 x 4032 = "):
        load_features(path, max_pixels=1_000_000)  # the keypoints' extent: 5032 x 4032
    with pytest.raises(ResourceLimitError, match="declares 3000 x 3000 = "):
        load_features(path, image_shape=(3000, 3000), max_pixels=1_000_000)
