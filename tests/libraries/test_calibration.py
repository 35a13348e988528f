import numpy as np
import pytest

from lbdviewer.libraries.calibration.cache import (CacheWarning, CalibrationError, cache_dir, cache_key, cached_arrays,
                                   calibrate_point_pairs, identify_pairs)


def test_identify_pairs_exhaustive_and_candidates_agree():
    rng = np.random.default_rng(1)
    values = rng.normal(size=(400, 30))
    truth = np.array([[3, 7], [12, 0], [29, 28], [5, 4]])
    bits = values[:, truth[:, 0]] > values[:, truth[:, 1]]
    assert identify_pairs(values, bits).tolist() == truth.tolist()
    assert identify_pairs(values, bits, candidates=6).tolist() == truth.tolist()


def test_identify_pairs_ties_follow_convention():
    values = np.array([[1, 1], [2, 1], [0, 1], [1, 1], [3, 2]], dtype=float)
    bits = (values[:, 0] >= values[:, 1])[:, None]
    assert identify_pairs(values, bits, tie_positive=True).tolist() == [[0, 1]]
    with pytest.raises(CalibrationError, match="bit 0"):
        identify_pairs(values, bits, tie_positive=False)


def test_identify_pairs_rejects_unexplained_bits():
    rng = np.random.default_rng(2)
    with pytest.raises(CalibrationError, match="no pair"):
        identify_pairs(rng.normal(size=(300, 6)), rng.random((300, 1)) < 0.5)


def test_calibrate_point_pairs_recovers_a_known_comparator():
    table = np.array([[[2, -1], [-3, 0]], [[0, 3], [1, 1]]])

    def describe(image, centers):
        x, y = centers[:, 0:1], centers[:, 1:2]
        a = image[y + table[:, 0, 1], x + table[:, 0, 0]]
        b = image[y + table[:, 1, 1], x + table[:, 1, 0]]
        return a > b

    found = calibrate_point_pairs(describe, lambda im: im, radius=3, margin=4, n_images=1, size=40, step=2)
    assert found.tolist() == table.tolist()


def test_cache_roundtrip_uses_env_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("LBDVIEWER_CACHE_DIR", str(tmp_path))
    calls = []

    def compute():
        calls.append(1)
        return {"pairs": np.arange(6).reshape(3, 2)}

    key = cache_key("toy", "1.0", ("n", 3))
    first = cached_arrays(key, compute)
    second = cached_arrays(key, compute)
    assert cache_dir() == tmp_path and (tmp_path / f"{key}.npz").exists()
    assert len(calls) == 1 and np.array_equal(first["pairs"], second["pairs"])
    (tmp_path / f"{key}.npz").write_bytes(b"garbage")
    with pytest.warns(CacheWarning, match="unreadable"):
        assert np.array_equal(cached_arrays(key, compute)["pairs"], first["pairs"]) and len(calls) == 2


def test_cache_dir_follows_the_xdg_rule(tmp_path, monkeypatch):
    monkeypatch.delenv("LBDVIEWER_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == tmp_path / "xdg" / "lbdviewer"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache_dir() == tmp_path / "home" / ".cache" / "lbdviewer"


def test_the_point_pair_probe_reads_a_3x3_grid_and_catches_a_wrong_table():
    from lbdviewer.libraries.calibration.cache import point_pair_probe

    table = np.array([[[2, -1], [-3, 0]], [[0, 3], [1, 1]], [[-2, -2], [2, 2]]])
    seen = []

    def describe(image, centers):
        seen.append(np.asarray(centers).copy())
        x, y = centers[:, 0:1], centers[:, 1:2]
        return image[y + table[:, 0, 1], x + table[:, 0, 0]] > image[y + table[:, 1, 1], x + table[:, 1, 0]]

    probe = point_pair_probe(describe, lambda image: image.astype(np.float64), margin=4, step=5)
    library, predicted = probe({"pairs": table})
    assert len(seen[0]) == 9 and sorted(set(seen[0][:, 0].tolist())) == [4, 9, 14]   # 2 margin + 3 steps
    assert np.array_equal(library, predicted)
    library, predicted = probe({"pairs": table[:, ::-1]})                              # every pair reversed
    assert np.mean(library == predicted) < 0.2


def test_calibrate_point_pairs_reaches_the_edge_of_its_radius_and_refuses_noise():
    table = np.array([[[3, 3], [-3, -3]], [[-3, 3], [3, -3]]])           # the corners of radius 3

    def describe(image, centers):
        x, y = centers[:, 0:1], centers[:, 1:2]
        return (image[y + table[:, 0, 1], x + table[:, 0, 0]] > image[y + table[:, 1, 1], x + table[:, 1, 0]]
                ).astype(np.uint8)                                           # 0/1 integers, as some libraries give

    found = calibrate_point_pairs(describe, lambda im: im, radius=3, margin=4, n_images=1, size=40, step=2)
    assert found.tolist() == table.tolist()
    def one_flipped(image, centers):                                      # one bit of one keypoint is wrong
        bits = describe(image, centers)
        bits[0, 0] ^= 1
        return bits

    with pytest.raises(CalibrationError, match="no pair of measurements predicts bit 0 \\(1 mismatches\\)"):
        calibrate_point_pairs(one_flipped, lambda im: im, radius=3, margin=4, n_images=1, size=40, step=2)


def test_cached_point_pairs_calibrates_once_and_probes_what_it_reads(tmp_path, monkeypatch):
    from lbdviewer.libraries.calibration.cache import cached_point_pairs

    monkeypatch.setenv("LBDVIEWER_CACHE_DIR", str(tmp_path))
    table = np.array([[[2, -1], [-3, 0]], [[0, 3], [1, 1]]])
    described = []

    def describe(image, centers):
        described.append(len(centers))
        x, y = centers[:, 0:1], centers[:, 1:2]
        return image[y + table[:, 0, 1], x + table[:, 0, 0]] > image[y + table[:, 1, 1], x + table[:, 1, 0]]

    options = dict(margin=4, radius=3, n_images=1, size=40, step=2)
    key = cache_key("toy-pairs", "1.0", ("radius", 3))
    assert cached_point_pairs(key, describe, lambda im: im, **options).tolist() == table.tolist()
    calibrated = len(described)
    assert cached_point_pairs(key, describe, lambda im: im, **options).tolist() == table.tolist()
    assert described[calibrated:] == [9]                              # read back: only the probe's 3 x 3 keypoints


def test_a_cache_entry_of_too_many_members_is_never_inflated(tmp_path, monkeypatch):
    import io
    import zipfile

    from lbdviewer.libraries.calibration.cache import MAX_ENTRY_MEMBERS

    monkeypatch.setenv("LBDVIEWER_CACHE_DIR", str(tmp_path))
    key = cache_key("toy-members", "1.0")
    for members, refused in ((MAX_ENTRY_MEMBERS, False), (MAX_ENTRY_MEMBERS + 1, True)):
        with zipfile.ZipFile(tmp_path / f"{key}.npz", "w") as archive:
            for i in range(members):
                buffer = io.BytesIO()
                np.save(buffer, np.arange(2))
                archive.writestr(f"m{i}.npy", buffer.getvalue())
        computed = []
        compute = lambda: computed.append(1) or {"pairs": np.arange(4)}  # noqa: E731
        if refused:
            with pytest.warns(CacheWarning, match=f"declares {members} members"):
                cached_arrays(key, compute)
        else:
            cached_arrays(key, compute)
        assert computed == ([1] if refused else [])          # at the limit it is read (an old entry: no key)


@pytest.mark.parametrize("values_shape, bits_shape", [((200,), (200, 2)), ((200, 5), (200,)), ((200, 5), (199, 2))])
def test_identify_pairs_names_shapes_that_do_not_fit(values_shape, bits_shape):
    with pytest.raises(ValueError, match=r"values \(S, F\) and bits \(S, M\) must share S"):
        identify_pairs(np.zeros(values_shape), np.zeros(bits_shape, bool))
