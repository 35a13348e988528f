import numpy as np
import pytest

from lbdviewer.features.keypoints import FeatureSet, Keypoints
from lbdviewer.features.files import load_features, save_features


def _features(**changes):
    kp = Keypoints([10.5, 40.0], [20.0, 30.25], [31.0, 37.2], [12.0, -1.0], [0, 1], [0.5, 0.25])
    values = dict(descriptor="orb", params={"n_levels": 8}, image_shape=(64, 80), keypoints=kp,
                  descriptors=np.arange(64, dtype=np.uint8).reshape(2, 32), n_bits=256, bitorder="little")
    values.update(changes)
    return FeatureSet(**values)


def _write(path, **arrays):
    base = dict(format=np.array("lbdviewer-features"), version=np.array(1), descriptor=np.array("orb"),
                params=np.array("{}"), image_shape=np.array([64, 80]),
                keypoints=np.array([[10.0, 20.0, 31.0, 0.0, 0.0, 0.0]]),
                descriptors=np.zeros((1, 32), np.uint8), n_bits=np.array(256), bitorder=np.array("little"))
    base.update(arrays)
    with open(path, "wb") as handle:
        np.savez(handle, **{k: v for k, v in base.items() if v is not None})
    return path


def test_roundtrip_keeps_everything(tmp_path):
    path = tmp_path / "f.npz"
    original = _features()
    save_features(path, original)
    loaded = load_features(path)
    assert loaded.descriptor == "orb" and loaded.params == {"n_levels": 8} and loaded.image_shape == (64, 80)
    assert np.array_equal(loaded.keypoints.as_array(), original.keypoints.as_array())
    assert np.array_equal(loaded.descriptors, original.descriptors)
    assert np.array_equal(loaded.bits(), original.bits())


def test_truncated_file(tmp_path):
    path = tmp_path / "f.npz"
    save_features(path, _features())
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError, match="truncated"):
        load_features(path)


def test_pickled_payload_is_refused(tmp_path):
    path = _write(tmp_path / "f.npz", params=np.array([{"a": 1}], dtype=object))
    with pytest.raises(ValueError, match="pickled"):
        load_features(path)


def test_unknown_descriptor(tmp_path):
    with pytest.raises(ValueError, match="unknown descriptor 'sift'"):
        load_features(_write(tmp_path / "f.npz", descriptor=np.array("sift")))


def test_wrong_descriptor_shape(tmp_path):
    with pytest.raises(ValueError, match=r"descriptors must be uint8 of shape \(1, 32\)"):
        load_features(_write(tmp_path / "f.npz", descriptors=np.zeros((1, 16), np.uint8)))


def test_wrong_keypoint_shape(tmp_path):
    with pytest.raises(ValueError, match=r"keypoints must have shape \(K, 6\)"):
        load_features(_write(tmp_path / "f.npz", keypoints=np.zeros((1, 4))))


def test_nan_coordinates(tmp_path):
    with pytest.raises(ValueError, match="keypoint 0 has a NaN"):
        load_features(_write(tmp_path / "f.npz", keypoints=np.array([[np.nan, 20.0, 31.0, 0.0, 0.0, 0.0]])))


def test_keypoint_outside_image(tmp_path):
    with pytest.raises(ValueError, match="outside the image"):
        load_features(_write(tmp_path / "f.npz", keypoints=np.array([[90.0, 20.0, 31.0, 0.0, 0.0, 0.0]])))


def test_missing_item_and_wrong_version(tmp_path):
    with pytest.raises(ValueError, match="missing 'n_bits'"):
        load_features(_write(tmp_path / "a.npz", n_bits=None))
    with pytest.raises(ValueError, match="version 7"):
        load_features(_write(tmp_path / "b.npz", version=np.array(7)))


def test_not_an_npz(tmp_path):
    path = tmp_path / "f.npz"
    path.write_text("hello")
    with pytest.raises(ValueError, match="cannot read feature file"):
        load_features(path)


def test_keypoints_validate_octave():
    with pytest.raises(ValueError, match="octave"):
        Keypoints([1.0], [1.0], octave=[0.5])


def test_the_image_sha256_is_optional_checked_and_kept(tmp_path):
    assert _features().image_sha256 is None  # files without it (older ones, other programs) still open
    digest = "0123456789abcdef" * 4
    path = tmp_path / "f.npz"
    save_features(path, _features(params={"n_levels": 8, "image_sha256": digest}))
    loaded = load_features(path)
    assert loaded.image_sha256 == digest and loaded.model_params() == {"n_levels": 8}
    for bad in ("ABC", "g" * 64, 12):
        with pytest.raises(ValueError, match="image_sha256"):
            _features(params={"image_sha256": bad})


def test_keypoints_copy_their_columns_and_fill_opencvs_defaults():
    x, y = np.array([1.0, 2.0]), np.array([3.0, 4.0])
    kp = Keypoints(x, y)
    x[0] = 9.0
    assert kp.x.tolist() == [1.0, 2.0] and x.flags.writeable          # a copy: the caller's array is untouched
    assert kp.size.tolist() == [31.0, 31.0] and kp.angle.tolist() == [-1.0, -1.0]
    assert kp.octave.tolist() == [0, 0] and kp.response.tolist() == [0.0, 0.0]


def test_feature_set_bounds():
    _features(keypoints=Keypoints([79.0, 0.0], [63.0, 0.0]))              # the last pixel centre is inside
    with pytest.raises(ValueError, match="outside the image"):
        _features(keypoints=Keypoints([10.0, 20.0], [63.5, 1.0]))         # past the last row's centre
    with pytest.raises(ValueError, match="outside the image"):
        _features(keypoints=Keypoints([79.5, 20.0], [1.0, 1.0]))
    with pytest.raises(ValueError, match="n_bits must be positive"):
        _features(n_bits=0)


@pytest.mark.parametrize("suffix", [".npz", ".yml", ".json", ".xml"])
def test_save_features_writes_the_format_its_name_says(tmp_path, suffix):
    path = tmp_path / f"f{suffix}"
    save_features(path, _features())
    assert load_features(path).keypoints.x.tolist() == [10.5, 40.0]
    assert (path.read_bytes()[:2] == b"PK") == (suffix == ".npz")


def test_a_file_at_the_keypoint_limit_loads_and_one_past_it_does_not(tmp_path):
    n = 200
    kp = Keypoints(np.linspace(0, 79, n), np.linspace(0, 63, n))
    save_features(tmp_path / "f.npz", _features(keypoints=kp, descriptors=np.zeros((n, 32), np.uint8)))
    assert len(load_features(tmp_path / "f.npz", max_keypoints=n).keypoints) == n
    with pytest.raises(ValueError, match="keypoints"):
        load_features(tmp_path / "f.npz", max_keypoints=n - 1)


def test_members_in_npy_format_2_are_read(tmp_path):
    """``np.save`` writes format 2.0 when a header outgrows 1.0's; both are read (3.0 is not)."""
    import io
    import zipfile

    path = _write(tmp_path / "plain.npz")
    with np.load(path) as archive:
        members = {name: archive[name] for name in archive.files}
    for version, readable in (((2, 0), True), ((3, 0), False)):
        target = tmp_path / f"v{version[0]}.npz"
        with zipfile.ZipFile(target, "w") as archive:
            for name, value in members.items():
                buffer = io.BytesIO()
                np.lib.format.write_array(buffer, value, version=version if name == "keypoints" else (1, 0))
                archive.writestr(f"{name}.npy", buffer.getvalue())
        if readable:
            assert load_features(target).keypoints.x.tolist() == [10.0]
        else:
            with pytest.raises(ValueError, match="version"):
                load_features(target)


def test_keypoint_columns_are_float_and_one_bit_descriptors_are_allowed():
    kp = Keypoints([1, 2], [3, 4])                                       # integers in, float64 out
    assert kp.x.dtype == kp.y.dtype == kp.size.dtype == np.float64
    one_bit = _features(n_bits=1, descriptors=np.array([[1], [0]], np.uint8))
    assert one_bit.bits().tolist() == [[1], [-1]]


def test_params_are_written_in_one_order_and_an_explicit_format_wins(tmp_path):
    first, second = tmp_path / "a.npz", tmp_path / "b.npz"
    save_features(first, _features(params={"n_levels": 8, "edge_threshold": 31}))
    save_features(second, _features(params={"edge_threshold": 31, "n_levels": 8}))
    with np.load(first) as a, np.load(second) as b:
        assert str(a["params"]) == str(b["params"]) == '{"edge_threshold": 31, "n_levels": 8}'
    save_features(tmp_path / "named.features", _features(), fmt="xml")   # a name that says no format: as given
    assert (tmp_path / "named.features").read_text().startswith("<?xml")


def test_an_npz_image_larger_than_the_pixel_limit_is_refused(tmp_path):
    from lbdviewer.io.limits import ResourceLimitError

    save_features(tmp_path / "f.npz", _features())                     # 64 x 80 = 5,120 pixels
    assert load_features(tmp_path / "f.npz", max_pixels=5120).image_shape == (64, 80)
    with pytest.raises(ResourceLimitError, match="5,120 pixels"):
        load_features(tmp_path / "f.npz", max_pixels=5119)


def test_members_larger_than_their_limits_are_refused_before_they_are_read(tmp_path):
    from lbdviewer.io.limits import ResourceLimitError

    path = _write(tmp_path / "wide.npz", descriptors=np.zeros((1, 600), np.uint8))
    with pytest.raises(ResourceLimitError, match="descriptors of 600 bytes each, more than 512"):
        load_features(path)
    chars = 2**20 // 4                                                   # '<U' holds 4 bytes a character
    light = _write(tmp_path / "light.npz", params=np.array("{}" + " " * (chars - 1000)))   # under 1 MiB: read
    assert load_features(light).params == {}
    path = _write(tmp_path / "long.npz", params=np.array("{}" + " " * (chars * 3 // 2)))   # 1.5 MiB: refused
    with pytest.raises(ResourceLimitError, match="member 'params'"):
        load_features(path)
    path = _write(tmp_path / "heavy.npz", keypoints=np.zeros((1, 27), np.float16))   # 54 bytes, not 6 x 8
    with pytest.raises(ResourceLimitError, match=r"member 'keypoints' declares shape \(1, 27\).*more than the 48"):
        load_features(path, max_keypoints=1)
