"""``lbdviewer figures``: the paper's figures as PNG (dpi recorded), PDF (text), SVG and a strict record."""

import shutil
import subprocess

import numpy as np
import pytest
from PIL import Image

from lbdviewer.cli.main import main
from lbdviewer.evaluation.records import read_sidecar


def test_quick_weight_maps_and_offsets_in_three_formats(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["figures", str(out), "--quick", "--only", "weight-maps", "offsets", "--format", "png,pdf,svg"]) == 0
    assert shutil.which("pdftotext"), "pdftotext (poppler-utils, scripts/install) is needed"
    for name, descriptors in (("weight-maps", ("BRIEF", "FREAK")), ("offsets", ("FREAK",))):
        with Image.open(out / f"{name}.png") as image:
            assert min(image.info["dpi"]) >= 299.99 and image.size[0] == round(7.16 * 300)
        text = subprocess.run(["pdftotext", str(out / f"{name}.pdf"), "-"], capture_output=True, text=True,
                              check=True).stdout
        assert all(d in text for d in descriptors), text
        assert "<svg" in (out / f"{name}.svg").read_text()[:400]
        record = read_sidecar(out / f"{name}.json")                        # strict JSON, run-record schema
        assert record["kind"] == f"figure:{name}" and record["parameters"]["quick"] is True
    offsets = read_sidecar(out / "offsets.json")
    panels = offsets["extra"]["panels"]
    titles = [p["title"] for p in offsets["extra"]["figure"]["panels"]]
    for offset in (32, 16, 8, 1):
        joint = panels[f"joint offset {offset}"]
        assert joint["solver"]["mode"] == "joint" and joint["solver"]["iterations_requested"] == 30
        # the title names the solver that ran, as the run recorded it
        assert any(t.startswith(f"N_off={offset}, {joint['solver']['method']} (joint)") for t in titles)
        assert panels[f"patches offset {offset}"]["solver"]["method"] == "biht"
        assert joint["display"]["rule"] == "fit" and 0 < joint["metrics"]["correlation"] <= 1
    assert offsets["source"]["name"] == "camera" and len(offsets["source"]["sha256"]) == 64
    assert "offsets.png" in capsys.readouterr().out


def test_single_width_and_dpi(tmp_path):
    assert main(["figures", str(tmp_path), "--quick", "--only", "frame-vectors", "--width", "single",
                 "--dpi", "150", "--format", "png"]) == 0
    with Image.open(tmp_path / "frame-vectors.png") as image:
        assert image.size[0] == round(3.5 * 150) and round(image.info["dpi"][0]) == 150
        pixels = np.asarray(image.convert("RGB"))
    record = read_sidecar(tmp_path / "frame-vectors.json")
    assert record["extra"]["figure"]["pixels"] == [pixels.shape[1], pixels.shape[0]]
    assert not (tmp_path / "frame-vectors.pdf").exists()


@pytest.mark.parametrize("argv, message", [
    (["--format", "png,gif"], "formats must be some of"),
    (["--width", "triple"], "width must be 'single', 'double' or inches"),
    (["--dpi", "20"], "dpi must be an integer from 72 to 1200"),
])
def test_bad_options_are_refused_by_name(tmp_path, capsys, argv, message):
    assert main(["figures", str(tmp_path / "x"), "--quick", *argv]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "x").exists()


def test_the_command_lists_what_the_engine_makes_and_starts_without_matplotlib(tmp_path):
    import os
    import sys

    from lbdviewer.cli.commands import figures as command
    from lbdviewer.figures import DEFAULT_DPI, FIGURES, FORMATS, WIDTHS

    assert command.FIGURE_NAMES == tuple(FIGURES) and command.FORMATS == FORMATS
    assert command.WIDTHS == WIDTHS and command.DEFAULT_DPI == DEFAULT_DPI
    code = "import sys; from lbdviewer.cli.main import build_parser; build_parser(); print('matplotlib' in sys.modules)"
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "config"), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    assert done.stdout.strip() == "False" and not (tmp_path / "config").exists()
