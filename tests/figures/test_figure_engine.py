"""The figure engine: pixel-exact insets, vector text in one style, captions beside the artwork, nothing clipped."""

import shutil
import subprocess
import xml.etree.ElementTree as ElementTree

import numpy as np
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.text import Text
from PIL import Image

from lbdviewer.figures import DIVERGING, FigureSpec, Panel, render_figure, save_figure
from lbdviewer.figures.engine import inset_rgb
from lbdviewer.figures.style import style_value
from lbdviewer.io.images import upscale
from lbdviewer.evaluation.records import read_sidecar


def _distinct_colours(height, width):
    """An RGB image whose every pixel has a saturated colour no other pixel (and no grey text) has."""
    index = np.arange(height * width)
    rgb = np.stack([index % 256, 255 - (index * 7) % 256, (index * 37 + 11) % 256], axis=1)
    rgb[:, 1] = np.where(np.abs(rgb[:, 1] - rgb[:, 0]) < 40, (rgb[:, 1] + 128) % 256, rgb[:, 1])
    assert len({tuple(c) for c in rgb}) == len(rgb)
    return rgb.reshape(height, width, 3) / 255.0


def _read_png(path):
    with Image.open(path) as image:
        return np.asarray(image.convert("RGB")), image.info.get("dpi")


@pytest.mark.parametrize("width, dpi", [("single", 300), ("double", 300), (5.0, 150)])
def test_insets_are_exact_integer_enlargements_found_in_the_png(tmp_path, width, dpi):
    source = _distinct_colours(12, 10)
    gray = np.linspace(0, 1, 64).reshape(8, 8)
    spec = FigureSpec(kind="exact", rows=((Panel(source, title="distinct colours"),
                                           Panel(gray, title="grey", colorbar="grey level")),),
                      caption="Every pixel a block.")
    written = save_figure(spec, tmp_path / "exact", formats=("png",), dpi=dpi, width=width)
    pixels, recorded_dpi = _read_png(written["png"])
    assert round(recorded_dpi[0]) == dpi and round(recorded_dpi[1]) == dpi
    expected = np.round(source * 255).astype(np.uint8)
    # find every source pixel's colour in the whole PNG: it must fill exactly one s x s block, on a grid
    keys = pixels.astype(np.int64) @ [65536, 256, 1]
    wanted = expected.reshape(-1, 3).astype(np.int64) @ [65536, 256, 1]
    ys, xs = np.nonzero(np.isin(keys, wanted))
    found = keys[ys, xs]
    blocks = {}
    for index, key in enumerate(wanted):
        here = found == key
        assert here.any(), f"colour of pixel {divmod(index, source.shape[1])} not found"
        y, x = ys[here], xs[here]
        height, width_ = y.max() - y.min() + 1, x.max() - x.min() + 1
        assert height == width_ and here.sum() == height * width_, "not one solid square block"
        blocks[divmod(index, source.shape[1])] = (y.min(), x.min(), height)
    scale = blocks[(0, 0)][2]
    top, left = blocks[(0, 0)][:2]
    assert scale >= 1 and all(b == (top + r * scale, left + c * scale, scale) for (r, c), b in blocks.items())
    crop = pixels[top:top + 12 * scale, left:left + 10 * scale]
    np.testing.assert_array_equal(crop, upscale(expected, scale))
    # the layout in the record says the same, and the grey panel (with a colour bar) is exact too
    record = read_sidecar(written["json"])
    first, second = record["extra"]["figure"]["panels"]
    assert (first["y"], first["x"], first["scale"]) == (top, left, scale)
    grey = pixels[second["y"]:second["y"] + second["height"], second["x"]:second["x"] + second["width"]]
    np.testing.assert_array_equal(grey, upscale(inset_rgb(spec.rows[0][1]), second["scale"]))


def _rows(layout):
    """Panels a row, top to bottom."""
    tops = sorted({p["y"] for p in layout["panels"]})
    return [sum(p["y"] == top for p in layout["panels"]) for top in tops]


def test_panels_of_one_shape_share_a_scale_and_rows_too_wide_are_cut_evenly():
    panels = tuple(Panel(np.zeros((512, 512)), title=f"p{i}") for i in range(5))
    _, layout = render_figure(FigureSpec(kind="wide", rows=(panels,)), width="single", dpi=300)
    assert _rows(layout) == [2, 2, 1] and {p["scale"] for p in layout["panels"]} == {1}  # 1050 px: two a row
    _, layout = render_figure(FigureSpec(kind="wide", rows=(panels,)), width="double", dpi=300)
    assert _rows(layout) == [3, 2]                                # 2148 px holds four: five cut 3 + 2, not 4 + 1
    seven = tuple(Panel(np.zeros((512, 512)), title=f"p{i}") for i in range(7))
    assert _rows(render_figure(FigureSpec(kind="wide", rows=(seven,)), width="double", dpi=300)[1]) == [4, 3]
    mixed = (Panel(np.zeros((16, 16)), title="a"), Panel(np.zeros((32, 32)), title="b"),
             Panel(np.zeros((16, 16)), title="c", colorbar="grey level"))
    _, layout = render_figure(FigureSpec(kind="mixed", rows=(mixed,)), width="double", dpi=300)
    scales = [p["scale"] for p in layout["panels"]]
    assert scales[0] == scales[2] and scales[1] * 32 <= 2148 / 3
    with pytest.raises(ValueError, match="does not fit"):
        render_figure(FigureSpec(kind="huge", rows=((Panel(np.zeros((8, 1100))),),)), width="single", dpi=300)


def _text_boxes(figure):
    canvas = FigureCanvasAgg(figure)
    canvas.draw()
    renderer = canvas.get_renderer()
    texts = [t for t in figure.findobj(Text) if t.get_visible() and t.get_text().strip()]
    return renderer, [(t.get_text(), t.get_window_extent(renderer)) for t in texts]


def _narrow_row():
    """Five small panels with long titles in mathtext (the paper's Fig. 10 row at single width)."""
    titles = ["camera, 133 keypoints", "BRIEF, $M = 512$, BIHT", "BRIEF, $M = 512$, sign consistency",
              "FREAK, $M = 512$, BIHT", "FREAK, $N_{\\mathrm{off}} = 8$, joint"]
    return FigureSpec(kind="narrow", rows=(tuple(Panel(np.zeros((96, 96)), title=t) for t in titles),),
                      caption="Short.")


@pytest.mark.parametrize("width", ["single", "double"])
def test_no_title_tick_or_label_is_clipped_or_over_an_image(width):
    long_title = "BRIEF $M = 512$ $32 \\times 32$ $N_{\\mathrm{off}} = 8$, sign consistency (joint) with a long " \
                 "explanation that must wrap"
    spec = FigureSpec(kind="text", rows=(
        (Panel(np.random.default_rng(0).random((32, 32)), title=long_title, cmap="viridis", vmin=0, vmax=1234.5,
               colorbar="occurrences"),
         Panel(np.linspace(-3e-3, 3e-3, 256).reshape(16, 16), title="$L_i$", cmap=DIVERGING, vmin=-3e-3,
               vmax=3e-3, colorbar="difference (grey levels)"),
         Panel(np.zeros((32, 32)), title="patch", colorbar="grey level")),), caption="A caption $x_1$ " * 40)
    for spec, dpi in ((spec, 150), (spec, 300), (_narrow_row(), 300)):
        figure, layout = render_figure(spec, width=width, dpi=dpi, caption="inside")
        renderer, boxes = _text_boxes(figure)
        frame = figure.bbox
        images = [ax.get_window_extent(renderer) for ax in figure.axes if ax.images]
        for text, box in boxes:
            assert frame.x0 <= box.x0 and box.x1 <= frame.x1 and frame.y0 <= box.y0 and box.y1 <= frame.y1, \
                f"{text!r} clipped at {width}, {dpi} dpi: {box} outside {frame}"
            for image in images:
                assert not box.overlaps(image) or box.width == 0, f"{text!r} over an image"
        for k, (text, box) in enumerate(boxes):                           # no text over another
            for other, other_box in boxes[k + 1:]:
                assert not box.overlaps(other_box), f"{text!r} overlaps {other!r} at {width}, {dpi} dpi"
        labels = [text for text, _ in boxes]
        if spec.kind == "narrow":
            continue
        assert "occurrences" in labels and any(t.replace("\n", " ") == "difference (grey levels)" for t in labels)
        assert {"\u22120.003", "0", "0.003"} <= set(labels)                # symmetric scale, shown
        assert any(text.startswith("(a) BRIEF") for text in labels) and "(b) $L_i$" in labels


def _pdf_text(path):
    assert shutil.which("pdftotext"), "pdftotext (poppler-utils, scripts/install) is needed"
    return subprocess.run(["pdftotext", str(path), "-"], capture_output=True, text=True, check=True).stdout


def caption_of_tex(text):
    r"""The argument of the ``\caption{...}`` in ``text`` (braces balanced)."""
    start = text.index(r"\caption{") + len(r"\caption{")
    depth = 1
    for end in range(start, len(text)):
        depth += {"{": 1, "}": -1}.get(text[end], 0) if text[end - 1] != "\\" else 0
        if depth == 0:
            return text[start:end]
    raise AssertionError("unbalanced \\caption")


FONTS_CAPTION = ("Searchable caption: $L_{12}$ at $N_{\\mathrm{off}} = 8$, $\\lambda = 0.5$, 41 % covered, "
                 "32\u00d732 patches.")


def test_the_caption_goes_beside_the_artwork_as_latex_and_mathtext_renders(tmp_path):
    spec = FigureSpec(kind="fonts", rows=((Panel(np.eye(8), title="FREAK, weights", colorbar="weight"),
                                           Panel(np.eye(8), title="$L_{12}$", colorbar="$L_i$")),),
                      caption=FONTS_CAPTION)
    written = save_figure(spec, tmp_path / "fonts", formats="png,pdf,svg", dpi=300, width="single")
    data = written["pdf"].read_bytes()
    assert b"/FontFile2" in data and b"/Subtype /Type3" not in data           # TrueType embedded, mathtext too
    text = _pdf_text(written["pdf"])
    assert "(a) FREAK, weights" in text and "(b) L12" in text and "weight" in text  # letters, titles, bar label
    assert "Searchable" not in text and "covered" not in text                # the caption is not in the artwork
    assert "$" not in text and "_" not in text and "\\" not in text            # mathtext set, not printed
    caption = written["caption"].read_text(encoding="utf-8").strip()
    tex = written["tex"].read_text(encoding="utf-8")
    record = read_sidecar(written["json"])
    assert caption == caption_of_tex(tex) == record["extra"]["figure"]["caption"]
    assert caption == ("Searchable caption: $L_{12}$ at $N_{\\mathrm{off}} = 8$, $\\lambda = 0.5$, 41 \\% covered, "
                       "32$\\times$32 patches.")                                   # numbers in math mode, % escaped
    assert r"\includegraphics[width=\linewidth]{fonts}" in tex and r"\label{fig:fonts}" in tex
    assert r"\begin{figure}" in tex and r"\end{figure}" in tex                    # one column wide
    assert record["extra"]["figure"]["caption_placement"] == "beside"
    svg_text = " ".join("".join(node.itertext()) for node in ElementTree.parse(written["svg"]).iter()
                        if node.tag.endswith("text"))
    assert "(a) FREAK, weights" in svg_text and "Searchable" not in svg_text
    assert record["extra"]["figure"]["files"] == {"png": "fonts.png", "pdf": "fonts.pdf", "svg": "fonts.svg",
                                                  "caption": "fonts.caption.txt", "tex": "fonts.tex"}


def test_caption_inside_draws_it_under_the_panels_and_writes_no_latex(tmp_path):
    spec = FigureSpec(kind="fonts", rows=((Panel(np.eye(8), title="FREAK"),),), caption=FONTS_CAPTION)
    written = save_figure(spec, tmp_path / "inside", formats="pdf", dpi=300, width="single", caption="inside")
    assert sorted(written) == ["json", "pdf"]
    text = " ".join(_pdf_text(written["pdf"]).split())
    assert "Searchable caption: L12 at Noff = 8, λ = 0.5, 41 % covered, 32×32 patches." in text
    beside = render_figure(spec, width="single", dpi=300)[1]
    inside = render_figure(spec, width="single", dpi=300, caption="inside")[1]
    assert inside["pixels"][1] > beside["pixels"][1]                        # the caption takes room only inside


def test_every_figure_is_drawn_in_the_package_style():
    spec = FigureSpec(kind="style", rows=((Panel(np.eye(8), title="a", colorbar="weight"),
                                           Panel(np.eye(8), title="b")),), caption="c")
    figure, _ = render_figure(spec, width="single", dpi=150, caption="inside")
    renderer, boxes = _text_boxes(figure)
    sizes = {round(t.get_fontsize(), 2) for t in figure.findobj(Text) if t.get_text().strip()}
    assert sizes == {style_value("font.size")} and 7 <= style_value("font.size") <= 8
    bar = [ax for ax in figure.axes if not ax.images][0]
    assert bar.yaxis.get_major_ticks()[0].tick2line.get_markersize() == style_value("ytick.major.size")


@pytest.mark.parametrize("kwargs, message", [
    ({"width": "triple"}, "width must be 'single', 'double' or inches"),
    ({"width": 0.5}, "width must be"),
    ({"dpi": 10}, "dpi must be an integer from 72 to 1200"),
    ({"dpi": 300.5}, "dpi must be an integer"),
    ({"formats": "png,gif"}, "formats must be some of"),
    ({"caption": "above"}, "caption must be one of"),
])
def test_bad_options_name_the_parameter_and_write_nothing(tmp_path, kwargs, message):
    spec = FigureSpec(kind="bad", rows=((Panel(np.eye(4)),),))
    with pytest.raises(ValueError, match=message):
        save_figure(spec, tmp_path / "bad", **kwargs)
    assert list(tmp_path.iterdir()) == []


def test_bad_panels_are_refused_with_their_title():
    with pytest.raises(ValueError, match="panel 'x': image must be finite"):
        inset_rgb(Panel(np.array([[np.nan]]), title="x"))
    with pytest.raises(ValueError, match="panel 'y': vmax must exceed vmin"):
        inset_rgb(Panel(np.zeros((2, 2)), title="y", vmin=1.0, vmax=1.0))
    with pytest.raises(ValueError, match="has no panels"):
        render_figure(FigureSpec(kind="empty", rows=((),)))
