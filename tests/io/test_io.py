import os
import struct

import cv2
import numpy as np
import pytest

from lbdviewer import io
from lbdviewer.io import files


def test_formats_bit_depths_colour_and_alpha(tmp_path):
    gray16 = (np.arange(64, dtype=np.uint16).reshape(8, 8) * 1000)
    cv2.imwrite(str(tmp_path / "g16.png"), gray16)
    np.testing.assert_allclose(io.load_image(tmp_path / "g16.png"), gray16 / 65535.0)
    colour = np.zeros((4, 4, 3), np.uint8); colour[..., 2] = 255          # pure red (BGR)
    for suffix in (".png", ".bmp", ".tif"):
        cv2.imwrite(str(tmp_path / f"c{suffix}"), colour)
        np.testing.assert_allclose(io.load_image(tmp_path / f"c{suffix}"), 0.299, atol=1e-9)
    cv2.imwrite(str(tmp_path / "c.jpg"), np.full((8, 8, 3), 128, np.uint8))
    assert abs(io.load_image(tmp_path / "c.jpg").mean() - 128 / 255) < 0.01
    rgba = np.zeros((2, 2, 4), np.uint8); rgba[0, 0, 3] = 255             # one opaque black pixel
    cv2.imwrite(str(tmp_path / "a.png"), rgba)
    assert io.load_image(tmp_path / "a.png").tolist() == [[0.0, 1.0], [1.0, 1.0]]


@pytest.mark.parametrize("content", [b"", b"not an image at all", b"\x89PNG\r\n\x1a\n broken"])
def test_unreadable_files_raise_naming_the_file(tmp_path, content):
    path = tmp_path / "bad.png"
    path.write_bytes(content)
    with pytest.raises(ValueError, match="bad.png"):
        io.load_image(path)


def test_missing_file_and_folder(tmp_path):
    with pytest.raises(ValueError, match="does not exist"):
        io.load_image(tmp_path / "missing.png")
    with pytest.raises(ValueError, match="is a folder, not a regular file"):
        io.load_image(tmp_path)


def test_atomic_writers_round_trip_and_leave_no_temporary(tmp_path):
    image = np.linspace(0, 1, 12).reshape(3, 4)
    io.save_png(tmp_path / "out.png", image)
    np.testing.assert_allclose(io.load_image(tmp_path / "out.png"), image, atol=0.5 / 255)
    io.save_json(tmp_path / "out.json", {"a": np.float32(0.5), "b": np.arange(2)})
    assert (tmp_path / "out.json").read_text().count('"a": 0.5') == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json", "out.png"]
    with pytest.raises(ValueError, match="folder"):
        io.save_png(tmp_path / "nowhere" / "x.png", image)


def test_samples_are_listed_and_load():
    assert {"camera", "book-titles", "shapes"} <= set(io.sample_images())
    assert io.sample_image("book-titles").shape == (384, 512)
    with pytest.raises(ValueError, match="name"):
        io.sample_image("lena")


def test_written_files_get_ordinary_permissions(tmp_path):
    import os
    import stat

    from lbdviewer.io.images import save_png
    from lbdviewer.io.strict_json import save_json

    previous = os.umask(0o022)
    try:
        png = save_png(tmp_path / "a.png", np.zeros((4, 4)))
        record = save_json(tmp_path / "a.json", {"k": np.float32(1.5)})
    finally:
        os.umask(previous)
    for path in (png, record):
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o644
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_uint8_rgb_is_written_as_is(tmp_path):
    from lbdviewer.io.images import save_png

    rgb = np.arange(2 * 3 * 3, dtype=np.uint8).reshape(2, 3, 3) * 7
    path = save_png(tmp_path / "rgb.png", rgb)
    assert np.array_equal(cv2.imread(str(path))[:, :, ::-1], rgb)


def test_files_written_together_land_together_or_not_at_all(tmp_path, monkeypatch):
    image, metrics = tmp_path / "out.png", tmp_path / "out.json"
    io.atomic_write_all({image: b"new image", metrics: b"{}"})
    assert image.read_bytes() == b"new image" and metrics.read_bytes() == b"{}"
    real_replace, calls = files.os.replace, []

    def replace_failing_on_the_metrics(source, target):
        if str(target) == str(metrics) and not calls:  # the disk fills up after the image was placed
            calls.append(target)
            raise OSError(28, "No space left on device")
        return real_replace(source, target)
    monkeypatch.setattr(files.os, "replace", replace_failing_on_the_metrics)
    with pytest.raises(OSError, match="No space left"):
        io.atomic_write_all({image: b"newer image", metrics: b'{"new": 1}'})
    monkeypatch.undo()
    assert image.read_bytes() == b"new image" and metrics.read_bytes() == b"{}"  # the old pair is back
    with pytest.raises(ValueError, match="does not exist"):
        io.atomic_write_all({tmp_path / "fresh.png": b"x", tmp_path / "nodir" / "m.json": b"{}"})
    with pytest.raises(ValueError, match="is a folder"):
        io.atomic_write_all({tmp_path / "fresh.png": b"x", tmp_path: b"{}"})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json", "out.png"]


@pytest.mark.parametrize("suffix, magic", [(".png", b"\x89PNG"), (".jpg", b"\xff\xd8"), (".JPEG", b"\xff\xd8"),
                                           (".tif", b"II*\x00"), (".bmp", b"BM")])
def test_save_image_writes_the_format_its_name_says(tmp_path, suffix, magic):
    path = io.save_image(tmp_path / f"x{suffix}", np.linspace(0, 1, 64).reshape(8, 8))
    assert path.read_bytes()[:len(magic)] == magic
    assert io.load_image(path).shape == (8, 8)


def test_save_png_refuses_another_format_name(tmp_path):
    with pytest.raises(ValueError, match="use save_image"):
        io.save_png(tmp_path / "x.jpg", np.zeros((4, 4)))
    assert not (tmp_path / "x.jpg").exists()


def test_float_tiffs_outside_the_unit_range_are_rescaled_with_a_note(tmp_path):
    from lbdviewer.io.images import ImageRescaledWarning

    ramp = np.linspace(0.0, 1.0, 64, dtype=np.float32).reshape(8, 8)
    cases = {"unit": (ramp, ramp, None), "eight-bit": (ramp * 200 + 10, (ramp * 200 + 10) / 255, "divided by 255"),
             "sixteen-bit": (ramp * 4000, ramp * 4000 / 65535, "divided by 65535"),
             "top-of-eight-bit": (ramp * 255, ramp, "divided by 255"),          # 255 itself: still 8-bit levels
             "past-eight-bit": (ramp * 255.5, ramp * 255.5 / 65535, "divided by 65535"),
             "signed": (ramp * 2 - 1, ramp, "stretched linearly"), "constant": (np.full((8, 8), -3.0, np.float32),
                                                                               np.zeros((8, 8)), "clipped")}
    for name, (stored, expected, how) in cases.items():
        path = tmp_path / f"{name}.tif"
        assert cv2.imwrite(str(path), stored.astype(np.float32))
        if how is None:
            loaded = io.load_image(path)                      # warnings are errors here: none is given
        else:
            with pytest.warns(ImageRescaledWarning, match=f"{name}.tif.*outside \\[0, 1\\].*{how}"):
                loaded = io.load_image(path)
        np.testing.assert_allclose(loaded, expected, atol=1e-6)
    assert cv2.imwrite(str(tmp_path / "nan.tif"), np.where(ramp > 0.5, np.nan, ramp).astype(np.float32))
    with pytest.raises(ValueError, match="nan.tif.*must be finite"):
        io.load_image(tmp_path / "nan.tif")


def test_gray_with_one_channel_or_with_alpha():
    from lbdviewer.io.images import to_gray

    gray = np.array([[0, 51], [102, 255]], dtype=np.uint8)
    np.testing.assert_allclose(to_gray(gray[:, :, None]), gray / 255)               # (H, W, 1) is gray
    alpha = np.array([[255, 0], [51, 255]], dtype=np.uint8)
    expected = alpha / 255 * gray / 255 + (1 - alpha / 255)                          # over white
    np.testing.assert_allclose(to_gray(np.stack([gray, alpha], axis=2)), expected)


def test_the_decoded_size_is_checked_too(tmp_path, monkeypatch):
    """A header the size check misreads (a TIFF's later directory) does not let a large image through."""
    from lbdviewer.io import images
    from lbdviewer.io.limits import ResourceLimitError

    path = tmp_path / "wide.png"
    cv2.imwrite(str(path), np.zeros((10, 400), np.uint8))
    monkeypatch.setattr(images, "image_header_size", lambda data: (1, 1, "PNG"))    # the header says 1 x 1
    with pytest.raises(ResourceLimitError, match="400 x 10 = 4,000 pixels"):
        io.load_image(path, max_pixels=1000)


@pytest.mark.parametrize("factor", [0, -2, 1.5, True])
def test_upscale_takes_positive_integers_only(factor):
    from lbdviewer.io.images import upscale

    with pytest.raises(ValueError, match="factor must be a positive integer"):
        upscale(np.zeros((2, 2)), factor)


def test_limits_of_one_are_limits():
    from lbdviewer.io import limits

    assert limits.max_pixels(1) == 1 and limits.max_keypoints(1) == 1
    with pytest.raises(ValueError, match="must be a positive integer, got 0"):
        limits.max_pixels(0)


def _jpeg_header(height, width, before=b""):
    """SOI, ``before`` (markers), then a baseline frame header (SOF0) of one 8-bit component."""
    frame = struct.pack(">BHHB", 8, height, width, 1) + b"\x01\x11\x00"
    return b"\xff\xd8" + before + b"\xff\xc0" + struct.pack(">H", len(frame) + 2) + frame


def _tiff_header(tags):
    """A little-endian TIFF header whose first directory holds ``tags`` (tag -> LONG value)."""
    entries = b"".join(struct.pack("<HHII", tag, 4, 1, value) for tag, value in sorted(tags.items()))
    return b"II*\x00" + struct.pack("<I", 8) + struct.pack("<H", len(tags)) + entries + b"\x00" * 4


def test_headers_are_read_or_refused_without_an_exception():
    from lbdviewer.io.limits import image_header_size

    assert image_header_size(_jpeg_header(70, 90)) == (70, 90, "JPEG")
    standalone = b"\xff\x01" + b"\xff\xd0" + b"\xff\xff"                     # TEM, RST0, a fill byte: no length
    assert image_header_size(_jpeg_header(70, 90, standalone)) == (70, 90, "JPEG")
    for cut in (b"\xff\xd8\xff", b"\xff\xd8\xff\xe0\x00", _jpeg_header(70, 90)[:8]):
        assert image_header_size(cut) is None                                     # cut short
    assert image_header_size(_tiff_header({256: 90, 257: 70})) == (70, 90, "TIFF")
    assert image_header_size(_tiff_header({256: 90})) is None                     # no height
    assert image_header_size(_tiff_header({257: 70})) is None                     # no width
    assert image_header_size(b"P5 12 34 255\n") == (34, 12, "PNM")
    assert image_header_size(b"Q5 12 34 255\n") is None and image_header_size(b"PK\x03\x04 12 34") is None


def test_the_temporary_of_an_atomic_write_is_hidden_beside_its_target(tmp_path, monkeypatch):
    from lbdviewer.io import files as io_files

    moved = []
    original = io_files.os.replace
    monkeypatch.setattr(io_files.os, "replace", lambda source, target: (moved.append(source), original(source, target)))
    files.atomic_write(tmp_path / "out.png", b"data")
    (name,) = [os.path.basename(source) for source in moved]
    assert name.startswith(".out.png.") and name.endswith(".tmp") and os.path.dirname(moved[0]) == str(tmp_path)


def test_a_file_over_the_limit_is_refused_by_its_size_before_it_is_read(tmp_path):
    (tmp_path / "big.bin").write_bytes(b"0123456789")
    assert files.read_regular(tmp_path / "big.bin", max_bytes=10) == b"0123456789"
    with pytest.raises(ValueError, match="has 10 bytes, more than the 9"):
        files.read_regular(tmp_path / "big.bin", max_bytes=9)


@pytest.mark.skipif(not os.path.isfile("/proc/self/status"), reason="needs Linux's /proc")
def test_a_file_that_says_it_is_empty_is_still_read_to_the_limit_only():
    """/proc files are regular and report 0 bytes: the size check passes, the read itself must bound them."""
    with open("/proc/self/status", "rb") as file:
        status = file.read()
    assert len(status) > 100 and os.stat("/proc/self/status").st_size == 0
    with pytest.raises(ValueError, match="more than the 100 bytes"):
        files.read_regular("/proc/self/status", max_bytes=100)


def test_upscale_by_one_is_the_image():
    from lbdviewer.io.images import upscale

    image = np.arange(6).reshape(2, 3)
    np.testing.assert_array_equal(upscale(image, 1), image)


@pytest.mark.parametrize("marker", [0xC0, 0xC2, 0xC7, 0xCF])
def test_every_jpeg_frame_header_gives_the_size(marker):
    from lbdviewer.io.limits import image_header_size

    header = bytearray(_jpeg_header(70, 90))
    header[3] = marker
    assert image_header_size(bytes(header)) == (70, 90, "JPEG")
