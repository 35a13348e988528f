"""Feature files are read in linear time and bounded memory, only from regular files; options that do not apply are refused."""

import os
import threading
import time

import numpy as np
import pytest

from lbdviewer.cli.main import main
from lbdviewer.features import extract as extract_module
from lbdviewer.features.files import entry_summaries, load_features, save_features
from lbdviewer.features.keypoints import FeatureSet, Keypoints
from lbdviewer.io.images import load_image
from lbdviewer.io.samples import sample_image


def orb_like(n, *, side=640, seed=0):
    """``n`` ORB-shaped keypoints (size 31 x 1.2^octave) with random descriptors, as ``extract`` writes them."""
    rng = np.random.default_rng(seed)
    octave = rng.integers(0, 8, n)
    keypoints = Keypoints(rng.uniform(20, side - 20, n), rng.uniform(20, side - 20, n),
                          np.float32(31) * np.float32(1.2) ** octave.astype(np.float32), rng.uniform(0, 360, n),
                          octave, rng.uniform(0, 0.01, n))
    return FeatureSet("orb", {"n_levels": 8}, (side, side), keypoints,
                      rng.integers(0, 256, (n, 32), dtype=np.uint8), 256, "little")


def _best_seconds(function, repeats=3):
    best = np.inf
    for _ in range(repeats):
        started = time.perf_counter()
        function()
        best = min(best, time.perf_counter() - started)
    return best


#: Generous wall-clock bounds (seconds; the tests are marked ``wallclock``): the quadratic parsers took 193 s.
FAST_S = 10.0


@pytest.mark.wallclock
@pytest.mark.parametrize("suffix", [".yml", ".xml", ".json"])
def test_ten_thousand_keypoints_load_fast_and_in_linear_time(tmp_path, suffix):
    small, large = tmp_path / f"small{suffix}", tmp_path / f"large{suffix}"
    save_features(small, orb_like(2500))
    save_features(large, orb_like(10_000))
    loaded = load_features(large)
    np.testing.assert_array_equal(loaded.keypoints.as_array(), orb_like(10_000).keypoints.as_array())
    small_seconds = _best_seconds(lambda: load_features(small))
    large_seconds = _best_seconds(lambda: load_features(large))
    assert large_seconds < FAST_S  # was 193 s for 1000 keypoints of YAML (quadratic)
    assert large_seconds < 8 * small_seconds  # 4x the keypoints: linear is 4x, quadratic 16x


@pytest.mark.wallclock
def test_the_budget_refuses_a_long_sequence_while_tokenising(tmp_path):
    path = tmp_path / "long.yml"
    with open(path, "w") as handle:  # 1.4 MB: far more keypoints than the limit, each its own line
        handle.write("keypoints:\n" + "   - [ 1., 2., 31., 0., 0., 0, -1 ]\n" * 40_000 + "descriptors: 0\n")
    started = time.perf_counter()
    with pytest.raises(ValueError, match="holds more than 64,000 values"):
        load_features(path, max_keypoints=1000)
    assert time.perf_counter() - started < FAST_S
    matrix = tmp_path / "rows.xml"
    matrix.write_text('<?xml version="1.0"?>\n<opencv_storage><keypoints></keypoints><descriptors type_id='
                      '"opencv-matrix"><rows>100000</rows><cols>32</cols><dt>u</dt><data>1 2 3</data>'
                      "</descriptors></opencv_storage>")
    with pytest.raises(ValueError, match="declares 100,000 x 32 values, more than the 1,024,000"):
        load_features(matrix, max_keypoints=1000)  # refused at <data>, before any of it is read


def _returns_within(function, seconds=20):
    outcome = {}

    def run():
        try:
            function()
        except ValueError as error:
            outcome["error"] = str(error)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), "blocked on the FIFO"
    return outcome.get("error", "")


@pytest.mark.parametrize("name", ["f.yml", "f.json", "f.xml", "f.npz"])
def test_a_fifo_or_a_folder_is_refused_by_name_without_blocking(tmp_path, name):
    os.mkfifo(tmp_path / name)
    assert "is a FIFO (named pipe), not a regular file: refused" in _returns_within(
        lambda: load_features(tmp_path / name))
    os.mkfifo(tmp_path / "pipe.png")
    assert "FIFO" in _returns_within(lambda: load_image(tmp_path / "pipe.png"))
    (tmp_path / "folder.yml").mkdir()
    assert "is a folder" in _returns_within(lambda: load_features(tmp_path / "folder.yml"))


def test_options_that_do_not_apply_to_an_npz_are_refused(tmp_path, capsys):
    path = tmp_path / "f.npz"
    save_features(path, orb_like(5, side=100))
    assert load_features(path, descriptor="auto").descriptor == "orb"
    for argv, what in ((["--descriptor", "orb"], "descriptor"), (["--image-size", "100x100"], "image size"),
                       (["--entry", "a"], "entry")):
        assert main(["invert", str(path), "-o", str(tmp_path / "o.png"), *argv]) == 2
        assert f"the {what} given does not apply to it" in capsys.readouterr().err


def test_a_file_of_several_images_needs_an_entry(tmp_path, capsys):
    camera = sample_image("camera")  # real bits, so that the inversion explains them and no warning sweeps
    one, two = (extract_module.extract_features(camera[top:top + 160, 150:310], "orb", n_keypoints=40)
                for top in (60, 300))
    counts = [f"{len(one.keypoints)} keypoints", f"{len(two.keypoints)} keypoints"]
    assert counts[0] != counts[1]  # the listing shows which entry is which

    def node(features, indent):
        rows = "\n".join(f"{indent}   - [ {float(x)!r}, {float(y)!r}, {float(s)!r}, {float(a)!r}, 0., {o}, -1 ]"
                          for x, y, s, a, o in zip(
            features.keypoints.x, features.keypoints.y, features.keypoints.size, features.keypoints.angle,
            features.keypoints.octave))
        data = ", ".join(str(v) for v in features.descriptors.ravel())
        return (f"{indent}keypoints:\n{rows}\n{indent}descriptors: !!opencv-matrix\n{indent}   rows: "
                f"{len(features.keypoints)}\n{indent}   cols: 32\n{indent}   dt: u\n{indent}   data: [ {data} ]\n")

    mapping = tmp_path / "map.yml"
    mapping.write_text("%YAML:1.0\n---\ndescriptor: orb\nimage_size: [ 160, 160 ]\nframe_a:\n" + node(one, "   ")
                       + "frame_b:\n" + node(two, "   "))
    sequence = tmp_path / "sequence.yml"
    sequence.write_text("%YAML:1.0\n---\ndescriptor: orb\nimage_size: [ 160, 160 ]\nframes:\n   -\n"
                        + node(one, "      ") + "   -\n" + node(two, "      "))
    for path, names in ((mapping, ["frame_a", "frame_b"]), (sequence, ["frames/0", "frames/1"])):
        assert [s["entry"] for s in entry_summaries(path)] == names
        second = load_features(path, entry=names[1])
        np.testing.assert_array_equal(second.descriptors, two.descriptors)
        assert second.provenance["entry"] == names[1] and second.image_shape == (160, 160)
        with pytest.raises(ValueError, match=f"holds the features of 2 images \\({names[0]}, {names[1]}\\)"):
            load_features(path)
        with pytest.raises(ValueError, match=f"has no entry 'x'; its entries: {names[0]}, {names[1]}"):
            load_features(path, entry="x")
        assert main(["invert", str(path), "--list"]) == 0
        listed = capsys.readouterr().out.splitlines()
        assert [line.split("\t")[:2] for line in listed] == [[names[0], counts[0]], [names[1], counts[1]]]
        out = tmp_path / "o.png"
        assert main(["invert", str(path), "--entry", names[0], "-o", str(out), "--iterations", "3", "--quiet"]) == 0
        assert load_image(out).shape == (160, 160) and "warning" not in capsys.readouterr().err  # its own bits


def test_extract_never_writes_more_keypoints_than_asked(tmp_path, monkeypatch, capsys):
    from lbdviewer.libraries.orb import Model

    detect = Model.detect

    def one_too_many(self, image, *, n_keypoints=500):  # OpenCV's ORB can keep a tie at its cut
        found = detect(self, image, n_keypoints=n_keypoints + 5)
        return found.take(np.arange(min(len(found), n_keypoints + 1)))

    monkeypatch.setattr(Model, "detect", one_too_many)
    image = np.clip(np.random.default_rng(0).normal(0.5, 0.2, (160, 160)), 0, 1)
    features = extract_module.extract_features(image, "orb", n_keypoints=20)
    assert len(features.keypoints) == 20
    weakest_kept = features.keypoints.response.min()
    dropped = one_too_many(Model(), image, n_keypoints=20)
    assert weakest_kept >= np.sort(dropped.response)[0]  # the weakest was the one dropped


@pytest.mark.parametrize("suffix", [".yml", ".xml", ".json"])
def test_a_matrix_is_bounded_by_what_it_declares_in_every_format(tmp_path, suffix):
    import cv2

    def write(path, descriptors):
        storage = cv2.FileStorage(str(path), cv2.FILE_STORAGE_WRITE)
        storage.startWriteStruct("keypoints", cv2.FileNode_SEQ | cv2.FileNode_FLOW)
        for value in [40.0, 40.0, 31.0, 0.0, 0.0, 0, -1] * len(descriptors):
            storage.write("", value)
        storage.endWriteStruct()
        storage.write("descriptors", descriptors)
        storage.release()

    path = tmp_path / f"wide{suffix}"  # 200 keypoints, 128-byte rows: 25,600 values, more than one sequence holds
    write(path, np.full((200, 128), 201, np.uint8))
    with pytest.raises(ValueError, match="no modelled descriptor has 128 bytes a row"):  # read whole, then refused
        load_features(path, max_keypoints=200)  # a sequence: 64 values a keypoint; a matrix: 1024 a row
    write(path, np.full((200, 128), 201, np.int32) + np.eye(200, 128, dtype=np.int32) * 99)
    with pytest.raises(ValueError, match=r"binary descriptors are bytes \(dt 'u'\), got dt 'i'"):
        load_features(path, max_keypoints=200)
