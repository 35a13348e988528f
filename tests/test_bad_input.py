"""Bad input, tried as a hostile user would: every case exits 2 (or raises) with a message naming the problem.

One parametrised suite per kind of input (images, feature files, parameters,
outputs, API); the calibration cache has its own in ``test_calibration_cache.py``.
The command line runs in-process (``lbdviewer.cli.main.main``); every file is
tiny, and what a file *declares* (a 20000-pixel side, 67 M keypoints) is
refused before anything of that size is allocated.
"""

import io
import json
import struct
import zipfile
import zlib

import cv2
import numpy as np
import pytest

from lbdviewer.io import limits
from lbdviewer.cli.main import main
from lbdviewer.features.keypoints import FeatureSet, Keypoints
from lbdviewer.features.files import load_features, save_features
from lbdviewer.io.images import load_image

# -- helpers ---------------------------------------------------------------------------------------


def run_cli(argv, capsys):
    """Exit status and stderr of ``lbdviewer argv`` (argparse's own exit included)."""
    try:
        status = main([str(a) for a in argv])
    except SystemExit as stop:
        status = stop.code
    captured = capsys.readouterr()
    return status, captured.err


def png_declaring(height, width):
    """A PNG header and one tiny IDAT: what a decompression bomb's first bytes look like."""
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(b"\x00" * 64)) + chunk(b"IEND", b""))


def jpeg_declaring(height, width):
    good = cv2.imencode(".jpg", np.zeros((8, 8), np.uint8))[1].tobytes()
    at = next(i for i in range(2, len(good)) if good[i] == 0xFF and good[i + 1] in (0xC0, 0xC2))
    return good[:at + 5] + struct.pack(">HH", height, width) + good[at + 9:]


def tiff_declaring(height, width):
    entries = [(256, 4, 1, width), (257, 4, 1, height), (258, 3, 1, 8), (259, 3, 1, 1), (262, 3, 1, 1)]
    ifd = struct.pack("<H", len(entries)) + b"".join(struct.pack("<HHII", *e) for e in entries) + b"\0" * 4
    return b"II*\x00" + struct.pack("<I", 8) + ifd


def bmp_declaring(height, width):
    return b"BM" + b"\0" * 16 + struct.pack("<ii", width, height) + b"\0" * 28


def npy(array):
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=False)
    return buffer.getvalue()


def npy_header(shape, descr="<f8"):
    text = repr({"descr": descr, "fortran_order": False, "shape": tuple(shape)}).encode()
    text += b" " * (64 - (10 + len(text) + 1) % 64) + b"\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(text)) + text


def good_members(n=3):
    rng = np.random.default_rng(0)
    table = np.column_stack([rng.uniform(40, 60, n), rng.uniform(40, 60, n), np.full(n, 31.0), np.zeros(n),
                             np.zeros(n), np.zeros(n)])
    return {
        "format": np.array("lbdviewer-features"), "version": np.array(1, dtype=np.int64),
        "descriptor": np.array("orb"), "params": np.array("{}"),
        "image_shape": np.array([100, 100], dtype=np.int64), "keypoints": table,
        "descriptors": rng.integers(0, 256, (n, 32), dtype=np.uint8),
        "n_bits": np.array(256, dtype=np.int64), "bitorder": np.array("little"),
    }


def write_members(path, members, raw=()):
    """An npz from arrays, with ``raw`` = {name: bytes} members written as given."""
    raw = dict(raw)
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, value in members.items():
            if name not in raw:
                archive.writestr(f"{name}.npy", npy(value))
        for name, data in raw.items():
            archive.writestr(f"{name}.npy", data)
    return path


@pytest.fixture(scope="module")
def image_file(write_wave_image):
    return write_wave_image(64)


@pytest.fixture(scope="module")
def feature_file(tmp_path_factory):
    return write_members(tmp_path_factory.mktemp("feat") / "good.npz", good_members())


# -- images ----------------------------------------------------------------------------------------

IMAGE_CASES = {
    "missing": (None, "does not exist"),
    "empty": (b"", "is empty"),
    "text": (b"hello, I am not an image", "not a PNG, JPEG, TIFF, BMP or PNM"),
    "gif": (b"GIF89a" + b"\0" * 20, "not a PNG, JPEG, TIFF, BMP or PNM"),
    "png-cut-in-header": (b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR\0\0", "header is cut short"),
    "png-truncated-data": (None, "truncated or corrupt"),
    "png-20000-square": (png_declaring(20000, 20000), "more than the limit of"),
    "png-one-long-row": (png_declaring(1, 2 ** 31 - 1), "more than the limit of"),
    "jpeg-65000-square": (jpeg_declaring(65000, 65000), "more than the limit of"),
    "tiff-50000-square": (tiff_declaring(50000, 50000), "more than the limit of"),
    "bmp-30000-square": (bmp_declaring(30000, 30000), "more than the limit of"),
    "bmp-negative-height": (bmp_declaring(-30000, 30000), "more than the limit of"),
    "pnm-40000-square": (b"P5\n# comment\n40000 40000\n255\n" + b"\0" * 16, "more than the limit of"),
}


def _image_bytes(name):
    data, _ = IMAGE_CASES[name]
    if name == "png-truncated-data":
        full = cv2.imencode(".png", np.random.default_rng(0).integers(0, 255, (64, 64), dtype=np.uint8))[1]
        return full.tobytes()[:200]
    return data


@pytest.mark.parametrize("command", ["reconstruct", "extract", "verify-model"])
@pytest.mark.parametrize("case", list(IMAGE_CASES))
def test_bad_image_exits_2_naming_the_problem(case, command, tmp_path, capsys):
    path = tmp_path / "bad.png"
    data = _image_bytes(case)
    if data is not None:
        path.write_bytes(data)
    out = tmp_path / ("out.npz" if command == "extract" else "out.png")
    argv = [command, path] + ([] if command == "verify-model" else ["-o", out])
    status, err = run_cli(argv, capsys)
    assert status == 2, err
    assert IMAGE_CASES[case][1] in err and "Traceback" not in err
    assert str(path) in err
    assert not out.exists()


def test_image_limit_names_the_flag_and_the_variable(tmp_path, image_file, capsys, monkeypatch):
    status, err = run_cli(["reconstruct", image_file, "-o", tmp_path / "o.png", "--max-pixels", "100"], capsys)
    assert status == 2 and "--max-pixels" in err and "LBDVIEWER_MAX_PIXELS" in err and "4,096 pixels" in err
    monkeypatch.setenv("LBDVIEWER_MAX_PIXELS", "100")
    with pytest.raises(limits.ResourceLimitError, match="limit of 100 "):
        load_image(image_file)
    assert load_image(image_file, max_pixels=64 * 64).shape == (64, 64)  # the argument wins over the variable


@pytest.mark.parametrize("value", ["0", "-5", "abc", "1e9x"])
def test_bad_limit_variable_is_named(value, image_file, monkeypatch):
    monkeypatch.setenv("LBDVIEWER_MAX_PIXELS", value)
    with pytest.raises(ValueError, match="LBDVIEWER_MAX_PIXELS must be a positive integer"):
        load_image(image_file)


# -- feature files ---------------------------------------------------------------------------------

def _members(**changes):
    members = good_members()
    for key, value in changes.items():
        if value is None:
            members.pop(key)
        else:
            members[key] = value
    return members


FEATURE_CASES = {
    "not-a-zip": (lambda p: p.write_bytes(b"PK but not really"), "truncated or not .npz"),
    "empty": (lambda p: p.write_bytes(b""), "truncated or not .npz"),
    "truncated-zip": (lambda p: p.write_bytes(write_members(p, good_members()).read_bytes()[:300]),
                      "truncated or not .npz"),
    "pickled-member": (lambda p: write_members(p, good_members(), {"params": npy_header((1,), "|O") + b"\0" * 8}),
                       "pickled (object) array"),
    "member-shorter-than-header": (
        lambda p: write_members(p, good_members(), {"keypoints": npy_header((3, 6)) + b"\0" * 40}),
        "truncated or corrupt"),
    "member-without-npy-header": (lambda p: write_members(p, good_members(), {"keypoints": b"garbage"}),
                                  "no valid .npy header"),
    "keypoints-declare-67M-rows": (
        lambda p: write_members(p, good_members(), {"keypoints": npy_header((67_108_864, 6))}),
        "67,108,864 keypoints, more than the limit"),
    "descriptors-declare-48GB": (
        lambda p: write_members(p, good_members(), {"descriptors": npy_header((1_610_612_736, 32), "|u1")}),
        "more than the limit"),
    "descriptor-bytes-over-limit": (
        lambda p: write_members(p, good_members(), {"descriptors": npy_header((3, 100_000), "|u1")}),
        "descriptors of 100,000 bytes each"),
    "params-huge-string": (
        lambda p: write_members(p, good_members(), {"params": npy_header((), "<U300000")}),
        "bytes its limit allows"),
    "image-shape-30000-square": (lambda p: write_members(p, _members(image_shape=np.array([30000, 30000]))),
                                 "more than the limit of"),
    "image-shape-negative": (lambda p: write_members(p, _members(image_shape=np.array([-5, 100]))),
                             "image_shape must be (height, width) of positive ints"),
    "image-shape-three-values": (lambda p: write_members(p, _members(image_shape=np.array([5, 5, 5]))),
                                 "image_shape must be 2 integers"),
    "image-shape-float": (lambda p: write_members(p, _members(image_shape=np.array([5.0, 5.0]))),
                          "image_shape must be 2 integers"),
    "missing-descriptors": (lambda p: write_members(p, _members(descriptors=None)), "missing 'descriptors'"),
    "wrong-format": (lambda p: write_members(p, _members(format=np.array("zip"))), "format must be"),
    "wrong-version": (lambda p: write_members(p, _members(version=np.array(7))), "unsupported feature file version"),
    "version-not-int": (lambda p: write_members(p, _members(version=np.array("1"))), "must be an integer"),
    "params-not-json": (lambda p: write_members(p, _members(params=np.array("{oops"))), "not valid JSON"),
    "params-nested-deeply": (lambda p: write_members(p, _members(params=np.array("[" * 100_000 + "]" * 100_000))),
                             "nested too deeply"),
    "params-a-list": (lambda p: write_members(p, _members(params=np.array("[1, 2]"))), "must be a JSON object"),
    "params-unknown-to-model": (lambda p: write_members(p, _members(params=np.array('{"bogus": 1}'))),
                                "do not fit the model"),
    "unknown-descriptor": (lambda p: write_members(p, _members(descriptor=np.array("sift"))), "unknown descriptor"),
    "keypoints-nan": (
        lambda p: write_members(p, _members(keypoints=np.tile([np.nan, 5.0, 31.0, 0.0, 0.0, 0.0], (3, 1)))),
        "NaN or infinite"),
    "keypoints-outside": (
        lambda p: write_members(p, _members(keypoints=np.tile([500.0, 5.0, 31.0, 0.0, 0.0, 0.0], (3, 1)))),
        "lies outside the image"),
    "keypoints-int": (lambda p: write_members(p, _members(keypoints=np.zeros((3, 6), np.int64))), "must be float"),
    "keypoints-five-columns": (lambda p: write_members(p, _members(keypoints=np.zeros((3, 5)))),
                               "must have shape (K, 6)"),
    "keypoint-size-zero": (
        lambda p: write_members(p, _members(keypoints=np.tile([50.0, 50.0, 0.0, 0.0, 0.0, 0.0], (3, 1)))),
        "sizes must be positive"),
    "octave-negative": (
        lambda p: write_members(p, _members(keypoints=np.tile([50.0, 50.0, 31.0, 0.0, -1.0, 0.0], (3, 1)))),
        "octave must be non-negative"),
    "descriptors-wrong-rows": (lambda p: write_members(p, _members(descriptors=np.zeros((2, 32), np.uint8))),
                               "descriptors must be uint8 of shape (3, 32)"),
    "descriptors-float": (lambda p: write_members(p, _members(descriptors=np.zeros((3, 32)))),
                          "descriptors must be uint8"),
    "n-bits-zero": (lambda p: write_members(p, _members(n_bits=np.array(0))), "n_bits must be positive"),
    "bitorder-sideways": (lambda p: write_members(p, _members(bitorder=np.array("sideways"))),
                          "bitorder must be 'little' or 'big'"),
    "too-many-members": (lambda p: write_members(p, {**good_members(), **{f"x{i}": np.zeros(1) for i in range(70)}}),
                         "members, more than"),
}


@pytest.mark.parametrize("case", list(FEATURE_CASES))
def test_bad_feature_file_exits_2_naming_the_problem(case, tmp_path, capsys):
    path = tmp_path / "bad.npz"
    make, expected = FEATURE_CASES[case]
    make(path)
    out = tmp_path / "out.png"
    status, err = run_cli(["invert", path, "-o", out, "--iterations", "1", "--quiet"], capsys)
    assert status == 2, err
    assert expected in err and "Traceback" not in err
    assert not out.exists()


def test_keypoint_limit_is_named_and_can_be_raised(tmp_path, capsys, monkeypatch):
    path = write_members(tmp_path / "f.npz", good_members(n=5))
    status, err = run_cli(["invert", path, "-o", tmp_path / "o.png", "--max-keypoints", "4"], capsys)
    assert status == 2 and "5 keypoints, more than the limit of 4" in err and "--max-keypoints" in err
    monkeypatch.setenv("LBDVIEWER_MAX_KEYPOINTS", "4")
    with pytest.raises(limits.ResourceLimitError, match="LBDVIEWER_MAX_KEYPOINTS"):
        load_features(path)
    assert len(load_features(path, max_keypoints=5).keypoints) == 5


# -- parameters ------------------------------------------------------------------------------------

PARAMETER_CASES = {
    "sparsity-nan": (["reconstruct", "{img}", "-o", "{out}", "--sparsity", "nan"], "--sparsity"),
    "sparsity-inf": (["reconstruct", "{img}", "-o", "{out}", "--sparsity", "inf"], "--sparsity"),
    "sparsity-zero": (["reconstruct", "{img}", "-o", "{out}", "--sparsity", "0"], "--sparsity"),
    "sparsity-above-one": (["reconstruct", "{img}", "-o", "{out}", "--sparsity", "1.5"], "--sparsity"),
    "lam-nan": (["reconstruct", "{img}", "-o", "{out}", "--lam", "nan"], "--lam"),
    "lam-minus-inf": (["reconstruct", "{img}", "-o", "{out}", "--lam", "-inf"], "--lam"),
    "lam-negative": (["reconstruct", "{img}", "-o", "{out}", "--lam", "-1"], "--lam"),
    "seed-negative": (["reconstruct", "{img}", "-o", "{out}", "--seed", "-1"], "--seed"),
    "seed-text": (["reconstruct", "{img}", "-o", "{out}", "--seed", "one"], "--seed"),
    "patch-size-zero": (["reconstruct", "{img}", "-o", "{out}", "--patch-size", "0"], "--patch-size"),
    "m-zero": (["reconstruct", "{img}", "-o", "{out}", "--m", "0"], "--m"),
    "m-too-many": (["reconstruct", "{img}", "-o", "{out}", "--descriptor", "freak", "--m", "100000"], "m must be"),
    "iterations-zero": (["reconstruct", "{img}", "-o", "{out}", "--iterations", "0"], "--iterations"),
    "iterations-float": (["reconstruct", "{img}", "-o", "{out}", "--iterations", "2.5"], "--iterations"),
    "offset-zero": (["reconstruct", "{img}", "-o", "{out}", "--offset", "0"], "--offset"),
    "offset-with-fast-sites": (["reconstruct", "{img}", "-o", "{out}", "--sites", "fast", "--offset", "4"],
                               "--offset"),
    "keypoints-number-in-reconstruct": (["reconstruct", "{img}", "-o", "{out}", "--keypoints", "50"],
                                        "--keypoints"),
    "sites-unknown": (["reconstruct", "{img}", "-o", "{out}", "--sites", "random"], "--sites"),
    "descriptor-unknown": (["reconstruct", "{img}", "-o", "{out}", "--descriptor", "sift"], "--descriptor"),
    "patch-larger-than-image": (["reconstruct", "{img}", "-o", "{out}", "--patch-size", "128"], "patch"),
    "max-pixels-zero": (["reconstruct", "{img}", "-o", "{out}", "--max-pixels", "0"], "--max-pixels"),
    "invert-iterations-negative": (["invert", "{feat}", "-o", "{out}", "--iterations", "-3"], "--iterations"),
    "invert-mode-unknown": (["invert", "{feat}", "-o", "{out}", "--mode", "magic"], "--mode"),
    "invert-reference-without-metrics": (["invert", "{feat}", "-o", "{out}", "--reference", "{img}"],
                                         "--metrics"),
    "invert-reference-wrong-shape": (["invert", "{feat}", "-o", "{out}", "--reference", "{img}", "--metrics",
                                      "{json}", "--iterations", "1"], "--reference has shape"),
    "invert-max-keypoints-text": (["invert", "{feat}", "-o", "{out}", "--max-keypoints", "many"],
                                  "--max-keypoints"),
    "extract-keypoints-zero": (["extract", "{img}", "-o", "{npz}", "--keypoints", "0"], "--keypoints"),
    "extract-keypoints-billion": (["extract", "{img}", "-o", "{npz}", "--keypoints", "1000000000"],
                                  "--max-keypoints"),
    "extract-tiny-image": (["extract", "{tiny}", "-o", "{npz}"], "at least"),
    "extract-descriptor-unknown": (["extract", "{img}", "-o", "{npz}", "--descriptor", "sift"], "--descriptor"),
    "verify-keypoints-negative": (["verify-model", "{img}", "--keypoints", "-1"], "--keypoints"),
    "verify-keypoints-billion": (["verify-model", "{img}", "--keypoints", "1000000000"], "--max-keypoints"),
    "app-size-10x10": (["--screenshot", "{out}", "--size", "10x10"], "--size"),
    "app-size-text": (["--screenshot", "{out}", "--size", "big"], "--size"),
    "command-typo": (["reconstuct", "{img}"], "did you mean reconstruct"),
}


@pytest.mark.parametrize("case", list(PARAMETER_CASES))
def test_bad_parameter_exits_2_naming_it(case, tmp_path, image_file, feature_file, capsys):
    tiny = tmp_path / "tiny.png"
    cv2.imwrite(str(tiny), np.zeros((1, 1), np.uint8))
    names = {"img": image_file, "feat": feature_file, "out": tmp_path / "out.png", "json": tmp_path / "m.json",
             "npz": tmp_path / "f.npz", "tiny": tiny}
    argv, expected = PARAMETER_CASES[case]
    status, err = run_cli([a.format(**names) for a in argv], capsys)
    assert status == 2, err
    assert expected in err and "Traceback" not in err
    assert not (tmp_path / "out.png").exists() and not (tmp_path / "m.json").exists()


# -- outputs ---------------------------------------------------------------------------------------

OUTPUT_CASES = {
    "output-is-the-input": (["-o", "{img}"], "is an input of this command"),
    "output-in-missing-folder": (["-o", "{tmp}/nodir/o.png"], "does not exist"),
    "output-is-a-folder": (["-o", "{tmp}"], "is a folder"),
    "output-gif": (["-o", "{tmp}/o.gif"], "must end in one of"),
    "output-no-suffix": (["-o", "{tmp}/o"], "must end in one of"),
    "metrics-in-missing-folder": (["-o", "{tmp}/o.png", "--metrics", "{tmp}/nodir/m.json"], "does not exist"),
    "metrics-same-as-output": (["-o", "{tmp}/o.png", "--metrics", "{tmp}/o.png"], "are the same file"),
    "metrics-is-the-input": (["-o", "{tmp}/o.png", "--metrics", "{img}"], "is an input of this command"),
}


@pytest.mark.parametrize("command", ["reconstruct", "invert"])
@pytest.mark.parametrize("case", list(OUTPUT_CASES))
def test_bad_output_is_refused_before_any_work(case, command, tmp_path, image_file, feature_file, capsys):
    source = image_file if command == "reconstruct" else feature_file
    before = source.read_bytes()
    options, expected = OUTPUT_CASES[case]
    argv = [command, source] + [a.format(img=source, tmp=tmp_path) for a in options] + ["--iterations", "1"]
    status, err = run_cli(argv, capsys)
    assert status == 2, err
    assert expected in err and "Traceback" not in err
    assert source.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == []


# -- the Python API --------------------------------------------------------------------------------

def _keypoints(**columns):
    base = {"x": [10.0, 20.0], "y": [10.0, 20.0]}
    return Keypoints(**{**base, **columns})


API_CASES = {
    "keypoints-ragged": (lambda: Keypoints([1.0, 2.0], [1.0]), "keypoint column 'y' must have 2 values"),
    "keypoints-octave-fraction": (lambda: _keypoints(octave=[0.5, 0]), "octave must be non-negative integers"),
    "featureset-nan-keypoint": (
        lambda: FeatureSet("orb", {}, (64, 64), _keypoints(x=[np.nan, 1.0]), np.zeros((2, 32), np.uint8), 256,
                           "little"), "NaN or infinite"),
    "featureset-bad-shape": (
        lambda: FeatureSet("orb", {}, (0, 64), _keypoints(), np.zeros((2, 32), np.uint8), 256, "little"),
        "image_shape must be"),
    "featureset-params-list": (
        lambda: FeatureSet("orb", [], (64, 64), _keypoints(), np.zeros((2, 32), np.uint8), 256, "little"),
        "params must be a dict"),
    "save-features-nan-param": (
        lambda: save_features("/tmp/never-written.npz", FeatureSet("orb", {"scale_factor": float("nan")}, (64, 64),
                                                                   _keypoints(), np.zeros((2, 32), np.uint8), 256,
                                                                   "little")),
        "params must be plain JSON values without NaN"),
    "check-pixels": (lambda: limits.check_pixels(10, 10, "my image", limit=99), "my image declares 10 x 10"),
    "check-keypoints": (lambda: limits.check_keypoints(7, "my file", limit=6), "my file declares 7 keypoints"),
    "load-image-max-pixels-zero": (lambda: load_image(__file__, max_pixels=0), "--max-pixels must be a positive"),
    "load-features-missing": (lambda: load_features("/nonexistent/f.npz"), "cannot read feature file"),
    "describe-nan-pixel": (lambda: _operator().describe(_patch(np.nan)), "patches must be finite"),
    "describe-inf-pixel": (lambda: _operator().describe(_patch(np.inf)), "patches must be finite"),
    "describe-none-pixel": (lambda: _operator().describe(_patch(None).tolist()), "patches must be finite"),
    "describe-none": (lambda: _operator().describe(None), "patches must be an array of numbers, got None"),
    "describe-text": (lambda: _operator().describe("abc"), "patches must be an array of numbers"),
    "describe-wrong-shape": (lambda: _operator().describe(np.zeros((7, 7))), "patches must have shape"),
    "describe-sites-nan": (lambda: _describe_sites(_patch(np.nan, 24)), "image must be finite"),
    "describe-sites-minus-inf": (lambda: _describe_sites(_patch(-np.inf, 24)), "image must be finite"),
    "describe-sites-none": (lambda: _describe_sites(None), "image must be an array of numbers, got None"),
    "describe-sites-none-pixel": (lambda: _describe_sites(_patch(None, 24).tolist()), "image must be finite"),
    "describe-sites-3d": (lambda: _describe_sites(np.zeros((24, 24, 3))), "image must be a 2-D gray image"),
}


def _operator():
    from lbdviewer.operators.descriptor import DescriptorOperator
    from lbdviewer.patterns.families import make_pattern

    return DescriptorOperator(make_pattern("brief", patch_size=8, m=16))


def _patch(bad, side=8):
    patch = np.full((side, side), 0.5, dtype=object if bad is None else np.float64)
    patch[3, 4] = bad
    return patch


def _describe_sites(image):
    from lbdviewer.patterns.families import make_pattern
    from lbdviewer.reconstruction.image import describe_sites

    return describe_sites(image, [[0, 0], [8, 8]], make_pattern("brief", patch_size=8, m=16))


@pytest.mark.parametrize("case", list(API_CASES))
def test_api_refuses_bad_input_naming_it(case):
    call, expected = API_CASES[case]
    with pytest.raises(ValueError) as raised:
        call()
    assert expected in str(raised.value)


def test_feature_file_round_trip_still_loads(tmp_path):
    members = good_members()
    features = FeatureSet("orb", {}, (100, 100), Keypoints.from_array(members["keypoints"]), members["descriptors"],
                          256, "little")
    save_features(tmp_path / "f.npz", features)
    again = load_features(tmp_path / "f.npz")
    assert np.array_equal(again.descriptors, features.descriptors) and again.image_shape == (100, 100)


def test_metrics_json_of_a_flat_image_parses_strictly(tmp_path, capsys):
    flat = tmp_path / "flat.png"
    cv2.imwrite(str(flat), np.full((40, 40), 128, np.uint8))
    metrics = tmp_path / "m.json"
    status, err = run_cli(["reconstruct", flat, "-o", tmp_path / "o.png", "--patch-size", "16", "--m", "32",
                           "--iterations", "2", "--metrics", metrics, "--quiet"], capsys)
    assert status == 0, err

    def refuse(constant):
        raise ValueError(f"non-strict JSON constant {constant}")
    report = json.loads(metrics.read_text(), parse_constant=refuse)
    assert report["psnr"] is None and report["undefined"]["psnr"] == "infinite"
