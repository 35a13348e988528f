import json

import cv2
import numpy as np
import pytest

from lbdviewer.cli import main
from lbdviewer.figures import FIGURES, colorize, compose, make_figure, upscale, write_figure
from lbdviewer.operators import DescriptorOperator
from lbdviewer.patterns import make_pattern


def _read_rgb(path):
    pixels = cv2.imread(str(path), cv2.IMREAD_COLOR)
    assert pixels is not None, f"{path} is not a readable PNG"
    return pixels[:, :, ::-1]


def test_quick_cli_writes_png_and_json_with_the_layout(tmp_path, capsys):
    names = ["frame-vectors", "zero-overlap", "offsets"]
    assert main(["figures", str(tmp_path / "out"), "--quick", "--only", *names]) == 0
    for name in names:
        pixels = _read_rgb(tmp_path / "out" / f"{name}.png")
        record = json.loads((tmp_path / "out" / f"{name}.json").read_text())
        assert record["figure"] == name and record["quick"] is True
        assert list(pixels.shape) == record["png_shape"]
        assert "numpy" in record["versions"] and "opencv-contrib-python-headless" in record["versions"]
        for panel in record["panels_layout"]:
            assert panel["x"] + panel["width"] <= pixels.shape[1] and panel["y"] + panel["height"] <= pixels.shape[0]
    offsets = json.loads((tmp_path / "out" / "offsets.json").read_text())
    # quick: a 64-pixel crop enlarged 4x; offset 1 on a 40-pixel crop enlarged 6x; patchwise row then joint row
    assert [(p["width"], p["scale"]) for p in offsets["panels_layout"][:4]] == [(256, 4)] * 3 + [(240, 6)]
    assert offsets["offset_1_on_crop"]["crop"][2] == 40
    assert offsets["panel_params"]["joint offset 8"]["mode"] == "joint"
    assert offsets["panel_params"]["patches offset 1"]["sites"] == 9 * 9
    zero = json.loads((tmp_path / "out" / "zero-overlap.json").read_text())
    assert zero["panel_params"]["ex-freak"]["m"] == 903 and zero["panel_params"]["brief"]["sites"] == 4
    assert "frame-vectors.png" in capsys.readouterr().out


def test_weight_map_panels_are_the_operator_maps(tmp_path):
    png, record = write_figure(tmp_path, "weight-maps", quick=True)
    pixels = _read_rgb(png)
    layout = {p["title"]: p for p in json.loads(record.read_text())["panels_layout"]}
    pattern = make_pattern("freak", patch_size=32, m=512)
    weights = DescriptorOperator(pattern).weight_map()
    panel = layout["FREAK weight"]
    crop = pixels[panel["y"]:panel["y"] + panel["height"], panel["x"]:panel["x"] + panel["width"]]
    expected = np.round(upscale(colorize(weights, vmin=0.0), panel["scale"]) * 255).astype(np.uint8)
    np.testing.assert_array_equal(crop, expected)
    # the brightest panel pixel (viridis: the largest weight) lies at the FREAK centre
    luminance = crop.astype(float) @ [0.299, 0.587, 0.114]
    row, col = np.unravel_index(np.argmax(luminance), luminance.shape)
    centre = (pattern.patch_size - 1) / 2
    assert abs(row // panel["scale"] - centre) <= 2 and abs(col // panel["scale"] - centre) <= 2


def test_frame_vector_colours_are_symmetric_around_zero():
    figure = make_figure("frame-vectors", quick=True)
    assert len(figure.panels) == 8 and figure.params["indices_1_based"] == [1, 2, 3, 4, 509, 510, 511, 512]
    values = np.array([[-2.0, 0.0, 2.0]])
    colours = colorize(values, cmap="diverging")
    np.testing.assert_allclose(colours[0, 1], 1.0)
    np.testing.assert_allclose(1.0 - colours[0, 0], (1.0 - colours[0, 2]) * (1 - np.array([0.230, 0.299, 0.754]))
                               / (1 - np.array([0.706, 0.016, 0.150])))


def test_compose_places_panels_on_a_grid_with_separators():
    image, panels = compose([[("a", np.zeros((2, 2)), 2)], [("b", np.ones((3, 3)), 1), ("c", np.zeros((1, 1)), 1)]],
                            separator=1, title_height=0)
    assert image.shape == (1 + 4 + 1 + 3 + 1, 1 + 4 + 1 + 1 + 1, 3)
    assert [(p["x"], p["y"]) for p in panels] == [(1, 1), (1, 6), (6, 6)]
    assert np.all(image[6:9, 1:4] == 1.0) and np.all(image[1:5, 1:5] == 0.0) and np.all(image[5] == 1.0)


def test_bad_names_and_factors_raise():
    with pytest.raises(ValueError, match="name must be one of"):
        make_figure("nope")
    with pytest.raises(ValueError, match="factor"):
        upscale(np.zeros((2, 2)), 0)
    assert "offsets" in FIGURES
