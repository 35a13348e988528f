"""``lbdviewer --screenshot``: render the window offscreen once the work is done, save it, exit 0."""

import os
import subprocess
import sys

import pytest

from lbdviewer import io
from lbdviewer.gui.app import parse_size
from lbdviewer.gui.export import read_png


def test_screenshot_renders_the_window_after_the_reconstructions(tmp_path, make_image):
    image = tmp_path / "small.png"
    io.save_png(image, make_image())
    out = tmp_path / "window.png"
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "XDG_CONFIG_HOME": str(tmp_path / "config")}
    done = subprocess.run([sys.executable, "-m", "lbdviewer", str(image), "--screenshot", str(out),
                           "--size", "1280x800"], capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    assert read_png(out).shape == (800, 1280, 3)
    assert not (tmp_path / "config").exists()  # the user's settings are left alone


def test_screenshot_of_a_bad_image_fails_with_the_reason(tmp_path):
    bad = tmp_path / "bad.png"
    bad.write_text("nope")
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    done = subprocess.run([sys.executable, "-m", "lbdviewer", str(bad), "--screenshot", str(tmp_path / "x.png")],
                          capture_output=True, text=True, timeout=60, env=env)
    assert done.returncode == 2 and "bad.png" in done.stderr


@pytest.mark.parametrize("text", ["1600", "axb", "10x10"])
def test_bad_sizes_are_refused(text):
    with pytest.raises(ValueError, match="size must"):
        parse_size(text)
