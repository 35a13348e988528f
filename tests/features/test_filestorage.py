"""Feature files in OpenCV's FileStorage formats: what cv2.FileStorage writes loads, ours reads back in cv2."""

import json

import cv2
import numpy as np
import pytest

from lbdviewer.cli.main import main
from lbdviewer.features.keypoints import FeatureSet, Keypoints
from lbdviewer.features.files import load_features, save_features
from lbdviewer.features.filestorage.parser import default_budget, parse_yaml
from lbdviewer.features.filestorage.xml_stream import parse_xml

SUFFIXES = (".yml", ".xml", ".json")


@pytest.fixture(scope="module")
def orb_output():
    """Keypoints and descriptors of OpenCV's ORB on a textured image (as a program would have them)."""
    rng = np.random.default_rng(3)
    image = cv2.GaussianBlur((rng.random((120, 160)) * 255).astype(np.uint8), (5, 5), 1.5)
    keypoints, descriptors = cv2.ORB_create(40).detectAndCompute(image, None)
    assert len(keypoints) > 10
    return image.shape, keypoints, descriptors


def write_like_cv_write(path, keypoints, descriptors, **extra):
    """What ``cv::write(fs, "keypoints", kps); fs << "descriptors" << desc`` stores, through cv2."""
    storage = cv2.FileStorage(str(path), cv2.FILE_STORAGE_WRITE)
    storage.startWriteStruct("keypoints", cv2.FileNode_SEQ | cv2.FileNode_FLOW)
    for kp in keypoints:
        for value in (kp.pt[0], kp.pt[1], kp.size, kp.angle, kp.response):
            storage.write("", float(value))
        storage.write("", int(kp.octave))
        storage.write("", int(kp.class_id))
    storage.endWriteStruct()
    storage.write("descriptors", descriptors)
    for key, value in extra.items():
        storage.write(key, value)
    storage.release()


@pytest.mark.parametrize("suffix", SUFFIXES)
def test_files_written_by_cv2_filestorage_load(tmp_path, orb_output, suffix):
    shape, keypoints, descriptors = orb_output
    path = tmp_path / f"orb{suffix}"
    write_like_cv_write(path, keypoints, descriptors)
    features = load_features(path, descriptor="orb", image_shape=shape)
    assert features.descriptor == "orb" and features.image_shape == shape and features.n_bits == 256
    np.testing.assert_array_equal(features.descriptors, descriptors)
    np.testing.assert_array_equal(features.keypoints.x, np.float32([k.pt[0] for k in keypoints]))
    np.testing.assert_array_equal(features.keypoints.angle, np.float32([k.angle for k in keypoints]))
    np.testing.assert_array_equal(features.keypoints.octave, [k.octave for k in keypoints])
    np.testing.assert_array_equal(features.keypoints.response, np.float32([k.response for k in keypoints]))


@pytest.mark.parametrize("suffix", SUFFIXES)
def test_what_the_file_says_wins_and_a_contradicting_option_is_refused(tmp_path, orb_output, suffix):
    shape, keypoints, descriptors = orb_output
    named = tmp_path / f"named{suffix}"
    write_like_cv_write(named, keypoints, descriptors, descriptor="orb", image_width=shape[1],
                        image_height=shape[0])
    features = load_features(named)
    assert features.image_shape == shape and features.provenance["image_size"] == "file"
    assert features.provenance["descriptor"]["method"] == "file" and features.provenance["notes"] == []
    assert load_features(named, descriptor="orb", image_shape=shape).image_shape == shape  # agreeing: fine
    with pytest.raises(ValueError, match="holds orb descriptors, not 'opencv-brief'"):
        load_features(named, descriptor="opencv-brief")
    with pytest.raises(ValueError, match=r"gives the image size 160x120, not 100x90 as given \(--image-size\)"):
        load_features(named, image_shape=(90, 100))
    with pytest.raises(ValueError, match="holds one image's features: --entry 'a' does not apply"):
        load_features(named, entry="a")


@pytest.mark.parametrize("suffix", SUFFIXES)
def test_our_files_read_back_exactly_and_in_cv2(tmp_path, orb_output, suffix):
    shape, keypoints, descriptors = orb_output
    original = FeatureSet("orb", {"n_levels": 8, "library": "opencv x"}, shape, Keypoints.from_cv(keypoints),
                          descriptors, 256, "little")
    path = tmp_path / f"ours{suffix}"
    save_features(path, original)
    loaded = load_features(path)
    np.testing.assert_array_equal(loaded.keypoints.as_array(), original.keypoints.as_array())
    np.testing.assert_array_equal(loaded.descriptors, descriptors)
    assert (loaded.params, loaded.image_shape, loaded.descriptor) == (original.params, shape, "orb")
    storage = cv2.FileStorage(str(path), cv2.FILE_STORAGE_READ)
    np.testing.assert_array_equal(storage.getNode("descriptors").mat(), descriptors)
    flat = storage.getNode("keypoints")
    assert flat.size() == 7 * len(keypoints) and flat.at(7).real() == keypoints[1].pt[0]
    assert storage.getNode("descriptor").string() == "orb"
    storage.release()
    save_features(tmp_path / "named.txt", original, fmt="json")  # a format given for a suffix that says none
    assert json.loads((tmp_path / "named.txt").read_text())["descriptor"] == "orb"
    with pytest.raises(ValueError, match="format 'xml' contradicts the suffix"):
        save_features(tmp_path / "other.json", original, fmt="xml")


def test_hand_written_files_in_the_cv_write_layout(tmp_path):
    yaml = """%YAML:1.0
---
# two keypoints, one nested sequence each (also read)
keypoints:
   - [ 20., 30., 31., 45.5, 1.5e-03, 0, -1 ]
   - [ 40., 35.5, 37.2, -1, 0., 1, 7 ]
descriptors: !!opencv-matrix
   rows: 2
   cols: 32
   dt: u
   data: [ 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18,
       19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 255, 254, 253, 252,
       251, 250, 249, 248, 247, 246, 245, 244, 243, 242, 241, 240, 239, 238,
       237, 236, 235, 234, 233, 232, 231, 230, 229, 228, 227, 226, 225, 224 ]
descriptor: orb
image_width: 64
image_height: 48
"""
    xml = """<?xml version="1.0"?>
<opencv_storage>
<keypoints>20. 30. 31. 45.5 1.5e-03 0 -1
  40. 35.5 37.2 -1 0. 1 7</keypoints>
<descriptors type_id="opencv-matrix"><rows>2</rows><cols>32</cols><dt>u</dt>
<data>%s</data></descriptors>
<descriptor>orb</descriptor><image_width>64</image_width><image_height>48</image_height>
</opencv_storage>
""" % " ".join(str(v) for v in list(range(32)) + list(range(255, 223, -1)))
    (tmp_path / "h.yaml").write_text(yaml)
    (tmp_path / "h.xml").write_text(xml)
    for name in ("h.yaml", "h.xml"):
        features = load_features(tmp_path / name)
        assert features.image_shape == (48, 64) and len(features.keypoints) == 2
        assert features.keypoints.y.tolist() == [30.0, 35.5] and features.keypoints.octave.tolist() == [0, 1]
        assert features.descriptors[1, :3].tolist() == [255, 254, 253]


def _orb_yaml(rows=1, cols=32, dt="u", data=None, keypoints="[ 20., 30., 31., 45.5, 0., 0, -1 ]"):
    data = ", ".join(["7"] * (rows * cols)) if data is None else data
    return (f"%YAML:1.0\n---\ndescriptor: orb\nimage_width: 64\nimage_height: 48\nkeypoints: {keypoints}\n"
            f"descriptors: !!opencv-matrix\n   rows: {rows}\n   cols: {cols}\n   dt: {dt}\n   data: [ {data} ]\n")


@pytest.mark.parametrize("text, message", [
    (_orb_yaml(cols=16, data=", ".join(["7"] * 16)), "descriptors have 16 bytes a row; orb with 256 bits has 32"),
    (_orb_yaml(data=", ".join(["7"] * 31)), r"declares 1 x 32 = 32 values but holds 31"),
    (_orb_yaml(dt="x"), "dt 'x' is not a one-channel OpenCV type"),
    (_orb_yaml(dt="3u"), "dt '3u' is not a one-channel OpenCV type"),
    (_orb_yaml(dt="f"), r"binary descriptors are bytes \(dt 'u'\)"),
    (_orb_yaml(rows=10**9, data="7"), "declares 1,000,000,000 x 32 values, more than the 10,240,000"),
    (_orb_yaml(cols=10**6, data="7"), r"cols must be an integer in \[0, 1024\], got 1000000"),
    (_orb_yaml(data=", ".join(["300"] * 32)), "the data from line 11 do not fit their declared type uint8"),
    (_orb_yaml(keypoints="[ 20., 30., 31., 45.5, 0., 0 ]"), "holds 6 numbers, not a multiple of 7"),
    (_orb_yaml(rows=2, data=", ".join(["7"] * 64)), "holds 1 keypoints but 2 descriptor rows"),
    (_orb_yaml().replace("keypoints", "kps"), "holds no features: no 'keypoints' and 'descriptors' nodes"),
    (_orb_yaml().replace("[ 20.", "&a [ 20."), "anchors and aliases are refused"),
    (_orb_yaml().replace("!!opencv-matrix", "!!binary"), "base64"),
    (_orb_yaml().replace("descriptor: orb", "descriptor: surf"), "unknown descriptor 'surf'"),
])
def test_malformed_yaml_gives_a_clear_error(tmp_path, text, message):
    path = tmp_path / "bad.yml"
    path.write_text(text)
    with pytest.raises(ValueError, match=message):
        load_features(path)


@pytest.mark.parametrize("suffix", SUFFIXES)
def test_truncated_files_give_a_clear_error(tmp_path, orb_output, suffix):
    shape, keypoints, descriptors = orb_output
    path = tmp_path / f"whole{suffix}"
    write_like_cv_write(path, keypoints, descriptors, descriptor="orb", image_width=shape[1],
                        image_height=shape[0])
    text = path.read_text()
    cut = tmp_path / f"cut{suffix}"
    cut.write_text(text[: len(text) // 2])
    with pytest.raises(ValueError, match=r"truncated|not closed|declares|not a multiple"):
        load_features(cut)


def test_xml_entities_and_large_files_are_refused(tmp_path, monkeypatch):
    bomb = tmp_path / "bomb.xml"
    bomb.write_text('<?xml version="1.0"?><!DOCTYPE l [<!ENTITY a "aaaa"><!ENTITY b "&a;&a;&a;">]>'
                    "<opencv_storage><descriptor>&b;</descriptor></opencv_storage>")
    with pytest.raises(ValueError, match="DOCTYPE or ENTITY declaration is refused"):
        load_features(bomb)
    big = tmp_path / "big.yml"
    big.write_text(_orb_yaml())
    monkeypatch.setattr("lbdviewer.features.filestorage.parser.MAX_FILE_BYTES", 100)
    with pytest.raises(ValueError, match=r"bytes, more than the 100"):
        load_features(big)


def test_json_duplicate_keys_and_non_mapping_are_refused(tmp_path):
    path = tmp_path / "d.json"
    path.write_text('{"descriptor": "orb", "descriptor": "orb"}')
    with pytest.raises(ValueError, match="duplicate key 'descriptor'"):
        load_features(path)
    path.write_text("[1, 2]")
    with pytest.raises(ValueError, match="the top must be a mapping"):
        load_features(path)


def test_parsers_read_opencv_scalars_flow_maps_and_strings():
    tree = parse_yaml('\ufeff%YAML 1.2\n---\na: { x: 41, "y": -.Inf }\nb: "x \\"y\\" z"\nc:\n   - 1\n   - k: 2\n')
    assert tree == {"a": {"x": 41, "y": -np.inf}, "b": 'x "y" z', "c": [1, {"k": 2}]}  # a BOM, as in XML
    xml = b'\xef\xbb\xbf<opencv_storage><s>"a &quot;b&quot; c"</s><q><_>1 2</_><_>3</_></q></opencv_storage>'
    tree = parse_xml(xml, default_budget())
    assert tree["s"] == 'a "b" c' and tree["q"][0].tolist() == [1, 2] and tree["q"][1] == 3
    rows = parse_yaml("kp:\n  - [ 1., 2 ]\n  - [ 3, 4.5 ]\n")["kp"]
    assert rows.shape == (2, 2) and rows.dtype == np.float64  # rows of numbers: one array, not objects


def test_extract_format_and_invert_a_filestorage_file(tmp_path, orb_output):
    shape, keypoints, descriptors = orb_output
    image_path = tmp_path / "img.png"
    rng = np.random.default_rng(0)
    cv2.imwrite(str(image_path), cv2.GaussianBlur((rng.random((90, 100)) * 255).astype(np.uint8), (5, 5), 2))
    out = tmp_path / "f.txt"
    assert main(["extract", str(image_path), "-o", str(out), "--format", "xml", "--keypoints", "20"]) == 0
    assert out.read_text().startswith('<?xml version="1.0"?>')
    assert main(["extract", str(image_path), "-o", str(tmp_path / "f.yml"), "--format", "json"]) == 2
    bare = tmp_path / "bare.yml"
    write_like_cv_write(bare, keypoints, descriptors)
    assert main(["invert", str(bare), "-o", str(tmp_path / "o.png"), "--iterations", "2",
                 "--descriptor", "orb", "--image-size", f"{shape[1]}x{shape[0]}"]) == 0
    assert cv2.imread(str(tmp_path / "o.png"), cv2.IMREAD_UNCHANGED).shape == shape


@pytest.mark.parametrize("data, keypoints, message", [
    ("7.5", None, r"data .* do not fit their declared type uint8"),   # a fraction in a byte
    ("-1", None, r"data .* do not fit their declared type uint8"),
    ("7", "[ 20., 30., 31., 45.5, 0., 0.5, -1 ]", "octave must be non-negative integers"),
    ("7", "[ 20., 30., 31., 45.5, 0., 2.25, -1 ]", "octave must be non-negative integers"),
])
def test_fractional_values_for_integer_types_are_refused(tmp_path, data, keypoints, message):
    """A fraction where OpenCV writes integers is a damaged file, never a value rounded or truncated silently."""
    options = {} if keypoints is None else {"keypoints": keypoints}
    text = _orb_yaml(data=", ".join(["7"] * 31 + [data]), **options)
    for suffix, content in ((".yml", text), (".json", _yaml_to_json(text))):
        path = tmp_path / f"fraction{suffix}"
        path.write_text(content)
        with pytest.raises(ValueError, match=message):
            load_features(path)
    whole = tmp_path / "whole.yml"                                   # "7." is how OpenCV may write an integral float
    whole.write_text(_orb_yaml(data=", ".join(["7"] * 31 + ["7."]), keypoints="[ 20., 30., 31., 45.5, 0., 1., -1 ]"))
    features = load_features(whole)
    assert features.descriptors[0, -1] == 7 and features.keypoints.octave.tolist() == [1]


def _yaml_to_json(text):
    """The JSON FileStorage text of :func:`_orb_yaml`'s one-keypoint file (``20.`` written ``20.0``)."""
    import re

    lines = {key: re.sub(r"(\d)\.(?=[\s,\]])", r"\1.0", value)
             for key, value in (line.strip().split(": ", 1) for line in text.splitlines()[2:] if ": " in line)}
    return ('{"descriptor": "orb", "image_width": 64, "image_height": 48, '
            f'"keypoints": {lines["keypoints"]}, "descriptors": {{"type_id": "opencv-matrix", '
            f'"rows": 1, "cols": 32, "dt": "u", "data": {lines["data"]}}}}}')


def test_the_size_limit_is_inclusive(tmp_path, monkeypatch):
    path = tmp_path / "f.yml"
    path.write_text(_orb_yaml())
    size = path.stat().st_size
    monkeypatch.setattr("lbdviewer.features.filestorage.parser.MAX_FILE_BYTES", size)
    assert len(load_features(path).keypoints) == 1                  # exactly the limit: read
    monkeypatch.setattr("lbdviewer.features.filestorage.parser.MAX_FILE_BYTES", size - 1)
    with pytest.raises(ValueError, match=f"has {size} bytes, more than the {size - 1}"):
        load_features(path)


@pytest.mark.parametrize("text, expected", [
    ('a: "p \\" #q"\n', {"a": 'p " #q'}),                              # an escaped quote, then a '#' inside the string
    ("a: 'it''s # here'\n", {"a": "it's # here"}),
    ('"k y": 5\n\'z\': 7\n', {"k y": 5, "z": 7}),                        # quoted keys
    ('"k y": 5\n"z": [1, 2]\n', {"k y": 5, "z": [1, 2]}),                # a quoted key before a flow
    ("a: 1 # a comment\n", {"a": 1}),
])
def test_yaml_strings_keys_and_comments(text, expected):
    tree = parse_yaml("%YAML:1.0\n---\n" + text)
    # a flow of numbers is read in place as one array
    assert {key: value.tolist() if isinstance(value, np.ndarray) else value for key, value in tree.items()} == expected


def test_an_unterminated_string_is_refused(tmp_path):
    path = tmp_path / "u.yml"
    path.write_text(_orb_yaml().replace("descriptor: orb", 'descriptor: "orb'))
    with pytest.raises(ValueError, match="unterminated string"):
        load_features(path)


def test_params_are_written_in_one_order(tmp_path):
    """The file of a feature set does not depend on the order its params were made in."""
    def written(params):
        features = FeatureSet("orb", params, (64, 64), Keypoints([32.0], [30.5]), np.zeros((1, 32), np.uint8), 256,
                              "little")
        path = tmp_path / "p.yml"
        save_features(path, features)
        return path.read_text()

    assert written({"n_levels": 8, "edge_threshold": 31}) == written({"edge_threshold": 31, "n_levels": 8})


def test_nesting_through_dash_items_is_refused_before_python_runs_out_of_stack():
    """``k:`` / ``- k:`` / ``  - k:`` ... nests without a block of its own: it was a RecursionError at 1000 levels."""
    def nested(levels):
        lines = ["k:"] + [" " * (2 * (i - 1)) + "- k:" for i in range(1, levels + 1)] + [" " * (2 * levels) + "- 1"]
        return "%YAML:1.0\n---\n" + "\n".join(lines) + "\n"

    assert parse_yaml(nested(2))["k"][0]["k"][0]["k"][0] == 1
    parse_yaml(nested(30))                                            # 61 levels: allowed
    for levels in (40, 1000):
        with pytest.raises(ValueError, match="nested too deeply"):
            parse_yaml(nested(levels))


def test_an_empty_quoted_key_is_a_key():
    assert parse_yaml('%YAML:1.0\n---\n"": 5\n') == {"": 5}


def test_the_image_size_is_read_whole_or_refused(tmp_path):
    from lbdviewer.features.filestorage.reader import keypoint_table

    assert keypoint_table([]).shape == keypoint_table(None).shape == (0, 7)            # no keypoints: no rows
    sized = _orb_yaml().replace("image_width: 64\nimage_height: 48\n", "image_size: [ 64, 48 ]\n")
    (tmp_path / "sized.yml").write_text(sized)
    assert load_features(tmp_path / "sized.yml").image_shape == (48, 64)               # cv::Size is width, height
    (tmp_path / "half.yml").write_text(_orb_yaml().replace("image_height: 48\n", ""))
    with pytest.raises(ValueError, match="'image_width' without 'image_height': give both, or neither"):
        load_features(tmp_path / "half.yml")                                 # half a size (was a TypeError)


def test_errors_name_the_line_they_are_on():
    with pytest.raises(ValueError, match="duplicate key 'a' on line 6"):
        parse_yaml("%YAML:1.0\n---\na: 1\nb: 2\nc: 3\na: 4\n")
    with pytest.raises(ValueError, match="opened on line 6 is not closed"):
        parse_yaml("%YAML:1.0\n---\na: 1\n\n# c\nb: [1, 2\nc: 3\n")


def test_written_files_look_like_opencvs():
    features = FeatureSet("orb", {"n_levels": 8}, (48, 64), Keypoints([32.0], [30.5]), np.zeros((1, 32), np.uint8),
                          256, "little")
    from lbdviewer.features.filestorage.writer import dumps

    yaml = dumps(features, "yaml")
    assert "descriptor: orb\n" in yaml and "bitorder: little\n" in yaml              # identifiers plain
    assert 'params: "{\\"n_levels\\": 8}"' in yaml                                 # other strings quoted
    assert dumps(features, "json").endswith("}\n") and dumps(features, "xml").endswith("\n")


@pytest.mark.parametrize("open_, close", [('{"a": ', "}"), ("[", "]")])
def test_json_collections_nest_to_the_limit_and_no_further(open_, close):
    from lbdviewer.features.filestorage.flow import parse_json
    from lbdviewer.features.filestorage.values import MAX_DEPTH, Budget

    def nested(levels):  # the top mapping is one level
        return '{"k": ' + open_ * (levels - 1) + "1" + close * (levels - 1) + "}"

    budget = Budget(max_values=1000, max_matrix_values=1000)
    inner = parse_json(nested(MAX_DEPTH), budget)["k"]
    for _ in range(MAX_DEPTH - 2):                                   # down to the innermost collection
        inner = inner["a"] if open_.startswith("{") else inner[0]
    assert (inner["a"] if open_.startswith("{") else inner.tolist()) in (1, [1])
    with pytest.raises(ValueError, match=f"nested deeper than {MAX_DEPTH}"):
        parse_json(nested(MAX_DEPTH + 1), budget)


def test_a_json_comma_before_the_end_is_refused_with_its_line():
    from lbdviewer.features.filestorage.flow import parse_json
    from lbdviewer.features.filestorage.values import Budget

    with pytest.raises(ValueError, match=r"a comma before the end\) at '\]}' on line 2"):
        parse_json('{"d": "orb",\n "kp": [1, 2,]}', Budget(max_values=9, max_matrix_values=9))
