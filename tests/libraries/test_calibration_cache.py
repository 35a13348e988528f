"""The calibration cache checks itself: damaged or wrong entries are recomputed, with a warning.

A toy "library" stands in for OpenCV: its bits compare two pixels of a
noise image at fixed offsets, and its calibration is the offset table. The
probe of :func:`lbdviewer.libraries.calibration.cache.point_pair_probe` catches an entry
whose table no longer predicts those bits.
"""

import os
import zipfile

import numpy as np
import pytest

from lbdviewer.libraries.calibration import cache as calibration
from lbdviewer.libraries.calibration.cache import CacheWarning, cached_arrays, point_pair_probe
from lbdviewer.features.npz import save_npz

TRUE_PAIRS = np.array([[[1, 0], [-1, 0]], [[0, 2], [0, -2]], [[2, 2], [-1, 1]], [[0, -1], [1, 1]]] * 4)


def describe(image, centers):
    values = image.astype(np.float64)
    xs, ys = centers[:, 0:1], centers[:, 1:2]
    a = values[ys + TRUE_PAIRS[:, 0, 1], xs + TRUE_PAIRS[:, 0, 0]]
    b = values[ys + TRUE_PAIRS[:, 1, 1], xs + TRUE_PAIRS[:, 1, 0]]
    return a > b


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv(calibration.CACHE_ENV, str(tmp_path / "cache"))
    calls = []

    def get():
        def compute():
            calls.append(1)
            return {"pairs": TRUE_PAIRS.copy()}
        probe = point_pair_probe(describe, lambda image: image, margin=4)
        return cached_arrays("toy-1.0", compute, probe=probe)["pairs"]
    return get, calls, tmp_path / "cache" / "toy-1.0.npz"


def _entry(path):
    with np.load(path) as data:
        return {name: data[name] for name in data.files}


def _truncate(path):
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def _flip_a_bit(path):
    data = bytearray(path.read_bytes())
    at = data.find(b"\x93NUMPY") + 200  # inside the first member's data
    data[at] ^= 0x10
    path.write_bytes(bytes(data))


def _permute_with_valid_checksum(path):
    entry = _entry(path)
    entry.pop(calibration.CHECKSUM_KEY)
    entry["pairs"] = entry["pairs"][np.random.default_rng(0).permutation(len(entry["pairs"]))]
    entry[calibration.CHECKSUM_KEY] = calibration.arrays_checksum(entry)
    save_npz(path, entry)


def _old_format_permuted(path):
    """An entry as lbdviewer wrote them before checksums and probes, with wrong pairs."""
    entry = _entry(path)
    save_npz(path, {"pairs": entry["pairs"][::-1].copy()})


def _other_library_probe(path):
    entry = _entry(path)
    entry.pop(calibration.CHECKSUM_KEY)
    entry[calibration.PROBE_KEY] = ~entry[calibration.PROBE_KEY]
    entry[calibration.CHECKSUM_KEY] = calibration.arrays_checksum(entry)
    save_npz(path, entry)


def _empty_file(path):
    path.write_bytes(b"")


def _foreign(path):
    """A good entry of another key (another descriptor or parameters) copied under this one's name."""
    entry = _entry(path)
    entry.pop(calibration.CHECKSUM_KEY)
    entry[calibration.KEY_KEY] = np.array("toy-2.0")
    entry[calibration.CHECKSUM_KEY] = calibration.arrays_checksum(entry)
    save_npz(path, entry)


def _fifo(path):
    path.unlink()
    os.mkfifo(path)


def _link_to_fifo(path):
    path.unlink()
    os.mkfifo(path.with_name("pipe"))
    path.symlink_to(path.with_name("pipe"))


def _zip_bomb(path):
    """A small file whose member declares far more than an entry holds (inflating it is never tried)."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("pairs.npy", b"\0" * (calibration.MAX_ENTRY_BYTES + 1))


def _oversized(path):
    path.write_bytes(b"\0" * (calibration.MAX_ENTRY_BYTES + 1))


DAMAGE = {
    "truncated": (_truncate, "unreadable"),
    "bit-flipped": (_flip_a_bit, "unreadable|checksum"),  # the zip's CRC or our checksum
    "permuted-pairs": (_permute_with_valid_checksum, "predicts"),
    "old-format-wrong": (_old_format_permuted, "predicts"),
    "recorded-for-other-library": (_other_library_probe, "other library bits"),
    "empty": (_empty_file, "unreadable"),
    "foreign": (_foreign, "holds the calibration of 'toy-2.0', not of 'toy-1.0'"),
    "fifo": (_fifo, "FIFO"),
    "link-to-fifo": (_link_to_fifo, "FIFO"),
    "zip-bomb": (_zip_bomb, "declares 1 members of"),
    "oversized": (_oversized, "bytes, more than"),
}


@pytest.mark.parametrize("case", list(DAMAGE))
def test_damaged_entry_is_detected_recomputed_and_rewritten(case, cache):
    get, calls, path = cache
    assert np.array_equal(get(), TRUE_PAIRS) and len(calls) == 1
    damage, reason = DAMAGE[case]
    damage(path)
    with pytest.warns(CacheWarning, match=reason):
        again = get()
    assert np.array_equal(again, TRUE_PAIRS) and len(calls) == 2
    assert np.array_equal(get(), TRUE_PAIRS) and len(calls) == 2  # the rewritten entry is good again


def test_good_entry_of_the_old_format_is_upgraded_silently(cache):
    get, calls, path = cache
    get()
    save_npz(path, {"pairs": _entry(path)["pairs"]})
    assert np.array_equal(get(), TRUE_PAIRS) and len(calls) == 1
    assert calibration.CHECKSUM_KEY in _entry(path) and calibration.PROBE_KEY in _entry(path)
    assert str(_entry(path)[calibration.KEY_KEY]) == "toy-1.0"  # bound to its key from now on


@pytest.fixture(scope="module")
def blid_tables():
    from lbdviewer.libraries import blid

    return {flavour: dict(zip(("boxes", "thresholds"), blid.weak_learners(flavour, 256))) for flavour in blid.FLAVOURS}


@pytest.mark.parametrize("flavour, other", [("beblid", "teblid"), ("teblid", "beblid")])
def test_blid_probe_refuses_the_other_table_and_permuted_rows(blid_tables, flavour, other):
    from lbdviewer.libraries import blid

    probe = blid._probe(flavour, 256, _blid_describe(flavour))
    library, predicted = probe(blid_tables[flavour])
    assert np.array_equal(library, predicted)  # the right table predicts every bit of the probe
    library, predicted = probe(blid_tables[other])  # TEBLID's entry under BEBLID's name, and back
    assert np.mean(library == predicted) < 0.8
    order = np.random.default_rng(0).permutation(256)
    permuted = {name: value[order] for name, value in blid_tables[flavour].items()}
    library, predicted = probe(permuted)
    assert np.mean(library == predicted) < 0.8


def _blid_describe(flavour):
    from lbdviewer.features.keypoints import Keypoints
    from lbdviewer.libraries import blid
    from lbdviewer.libraries.base import opencv_describe

    def describe(image, centers):
        kps = Keypoints(centers[:, 0], centers[:, 1], np.full(len(centers), float(blid.PATCH)))
        _, bits, _ = opencv_describe(blid._create(flavour, 1.0, 256), image, kps, n_bits=256, bitorder="big")
        return bits > 0
    return describe


def test_good_entry_is_read_back_without_recomputing(cache):
    get, calls, path = cache
    get()
    stamp = path.stat().st_mtime_ns
    get()
    assert len(calls) == 1 and path.stat().st_mtime_ns == stamp


def test_wrong_calibration_is_refused_before_it_is_cached(tmp_path, monkeypatch):
    monkeypatch.setenv(calibration.CACHE_ENV, str(tmp_path))
    probe = point_pair_probe(describe, lambda image: image, margin=4)
    with pytest.raises(calibration.CalibrationError, match="does not predict"):
        cached_arrays("wrong", lambda: {"pairs": TRUE_PAIRS[::-1].copy()}, probe=probe)
    assert not (tmp_path / "wrong.npz").exists()


def test_cache_path_that_is_a_file_falls_back_to_a_temporary_one(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setenv(calibration.CACHE_ENV, str(blocker / "cache"))
    monkeypatch.setattr(calibration, "_fallback_dir", lambda: tmp_path / "fallback")
    with pytest.warns(CacheWarning, match="not writable"):
        out = cached_arrays("toy-file", lambda: {"x": np.arange(3)})
    assert out["x"].tolist() == [0, 1, 2] and (tmp_path / "fallback" / "toy-file.npz").exists()
    again = cached_arrays("toy-file", lambda: {"x": np.zeros(3)})  # found in the fallback, no new warning
    assert again["x"].tolist() == [0, 1, 2]
