"""The paper's figures, made again on the shipped sample images.

Each figure is a grid of panels composed with numpy: every panel is enlarged
by an integer nearest-neighbour factor (no resampling), panels are separated
by thin white lines, and a short title sits above each one. A figure is
written as ``NAME.png`` beside ``NAME.json``, which holds every parameter,
the place of every panel in the PNG and the library versions, so that it can
be made again.

=====================  =================================================================
name                   what it shows (paper figure)
=====================  =================================================================
``frame-vectors``      first and last four frame vectors of FREAK, M = 512 (Fig. 2)
``weight-maps``        weight and occurrence maps of BRIEF and FREAK (Fig. 5)
``measurements-128``   zero-overlap BRIEF and FREAK with M = 128 on ``shapes`` (Fig. 6)
``zero-overlap``       zero-overlap BRIEF, FREAK, RA-FREAK, EX-FREAK (Fig. 7)
``offsets``            FREAK at offsets 32, 16, 8 and 1; patchwise and joint (Fig. 8)
``fast-real``          real-valued BRIEF on FAST keypoints; patchwise and joint (Fig. 9)
``fast-binary``        binary BRIEF and FREAK on FAST keypoints; patchwise and joint (Fig. 10)
``detail``             BRIEF against FREAK on enlarged details, offset 8 (Fig. 11)
=====================  =================================================================

Reconstructions overlaid with edges (Figs. 6 and 7) show the Canny edges of
the original in red, as the paper overlays the original contours. Pixels no
patch covers (FAST keypoints) are black.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

import cv2
import numpy as np

from lbdviewer.io import library_versions, sample_image, save_json, save_png, to_uint8
from lbdviewer.metrics import image_metrics
from lbdviewer.operators import DescriptorOperator
from lbdviewer.patterns import make_pattern
from lbdviewer.reconstruct import default_method, describe_sites, reconstruct_image
from lbdviewer.sites import fast_sites, grid_sites

SEPARATOR = 2
TITLE_HEIGHT = 16
BACKGROUND = (1.0, 1.0, 1.0)
EDGE_COLOR = (1.0, 0.0, 0.0)
CANNY_THRESHOLDS = (100, 200)
DIVERGING_ENDS = ((0.230, 0.299, 0.754), (0.706, 0.016, 0.150))  # blue for < 0, red for > 0
PATCH_SIZE = 32
FULL_IMAGE = 512
# (image, top, left, side) of the regions the figures use
OFFSET1_CROP = ("camera", 64, 192, 128)
DETAIL_CROPS = (("camera", 64, 192, 128), ("astronaut", 40, 150, 128))
QUICK_CROP = ("camera", 96, 208, 64)
QUICK_OFFSET1_CROP = ("camera", 112, 224, 40)
QUICK_FAST_CROP = ("camera", 80, 200, 96)
DISPLAY_PERCENTILES = (0.5, 99.5)
DISPLAY_NOTE = ("reconstructions are contrast-stretched per panel (0.5 and 99.5 percentiles of the covered "
                "pixels to 0 and 1); uncovered pixels are black; panels enlarged by integer nearest-neighbour factors")
QUICK_ITERATIONS = {"biht": 15, "primal-dual": 40, "consistency": 30}


@dataclass(frozen=True)
class Figure:
    """A composed figure and how it was made.

    Attributes
    ----------
    name : str
    image : ndarray of float64, shape (H, W, 3)
        RGB in ``[0, 1]``.
    panels : list of dict
        Per panel: ``title``, ``row``, ``column``, ``x``, ``y`` (top-left in
        the figure, pixels), ``width``, ``height`` (after enlarging) and
        ``scale`` (the nearest-neighbour factor).
    params : dict
        Every parameter, per panel and for the figure.
    """

    name: str
    image: np.ndarray
    panels: list
    params: dict = field(default_factory=dict)


# -- pixels ----------------------------------------------------------------
def upscale(image, factor):
    """Enlarge ``image`` (``(H, W)`` or ``(H, W, C)``) by an integer factor, nearest neighbour.

    Examples
    --------
    >>> upscale(np.array([[0.0, 1.0]]), 2).tolist()
    [[0.0, 0.0, 1.0, 1.0], [0.0, 0.0, 1.0, 1.0]]
    """
    if isinstance(factor, bool) or int(factor) != factor or factor < 1:
        raise ValueError(f"factor must be a positive integer, got {factor!r}")
    factor = int(factor)
    return np.repeat(np.repeat(np.asarray(image), factor, axis=0), factor, axis=1)


def as_rgb(image):
    """A gray ``(H, W)`` image as ``(H, W, 3)``; RGB images pass through.

    Examples
    --------
    >>> as_rgb(np.zeros((2, 3))).shape
    (2, 3, 3)
    """
    image = np.asarray(image, dtype=np.float64)
    if image.ndim == 2:
        return np.repeat(image[:, :, None], 3, axis=2)
    if image.ndim == 3 and image.shape[2] == 3:
        return image
    raise ValueError(f"image must have shape (H, W) or (H, W, 3), got {image.shape}")


def colorize(values, *, cmap="viridis", vmin=None, vmax=None):
    """Map values to RGB in ``[0, 1]`` with a sequential or a diverging colour map.

    Parameters
    ----------
    values : array_like, shape (H, W)
    cmap : {"viridis", "diverging"}
        ``"viridis"``: OpenCV's viridis table (256 levels) from ``vmin``
        (default: the minimum) to ``vmax`` (default: the maximum).
        ``"diverging"``: white at 0, blue below, red above, linear in the
        value over ``[-v, v]`` with ``v = vmax`` (default ``max |values|``),
        so the map is symmetric around 0.

    Returns
    -------
    ndarray of float64, shape (H, W, 3)

    Examples
    --------
    >>> colorize(np.array([[-1.0, 0.0, 1.0]]), cmap="diverging")[0, 1].tolist()
    [1.0, 1.0, 1.0]
    >>> bool(colorize(np.array([[0.0, 1.0]]))[0, 1].sum() > colorize(np.array([[0.0, 1.0]]))[0, 0].sum())
    True
    """
    values = np.asarray(values, dtype=np.float64)
    if values.ndim != 2:
        raise ValueError(f"values must have shape (H, W), got {values.shape}")
    if cmap == "diverging":
        limit = float(np.abs(values).max()) if vmax is None else float(vmax)
        t = np.clip(values / limit, -1.0, 1.0) if limit > 0 else np.zeros_like(values)
        ends = np.array(DIVERGING_ENDS)
        end = np.where(t[..., None] < 0, ends[0], ends[1])
        weight = np.abs(t)[..., None]
        return (1.0 - weight) + weight * end
    if cmap == "viridis":
        low = float(values.min()) if vmin is None else float(vmin)
        high = float(values.max()) if vmax is None else float(vmax)
        t = (values - low) / (high - low) if high > low else np.zeros_like(values)
        levels = np.round(np.clip(t, 0.0, 1.0) * 255.0).astype(np.uint8)
        return cv2.applyColorMap(levels, cv2.COLORMAP_VIRIDIS)[:, :, ::-1] / 255.0
    raise ValueError(f"cmap must be 'viridis' or 'diverging', got {cmap!r}")


def edge_overlay(estimate, original, *, thresholds=CANNY_THRESHOLDS, color=EDGE_COLOR):
    """``estimate`` in gray with the Canny edges of ``original`` painted in ``color``.

    Examples
    --------
    >>> original = np.zeros((16, 16)); original[:, 8:] = 1.0
    >>> overlay = edge_overlay(np.full((16, 16), 0.5), original)
    >>> overlay.shape, overlay[8, 7].tolist(), overlay[8, 2].tolist()
    ((16, 16, 3), [1.0, 0.0, 0.0], [0.5, 0.5, 0.5])
    """
    edges = cv2.Canny(to_uint8(original), int(thresholds[0]), int(thresholds[1])) > 0
    out = as_rgb(estimate).copy()
    out[edges] = color
    return out


def compose(rows, *, separator=SEPARATOR, title_height=TITLE_HEIGHT):
    """Lay panels out in a grid with white separators and a title above each.

    Parameters
    ----------
    rows : list of list of (str, ndarray, int)
        ``(title, image, scale)`` per panel; ``image`` is gray or RGB in
        ``[0, 1]`` and is enlarged ``scale`` times. Each row and column is as
        large as its largest panel; a panel sits at the top-left of its cell.
    separator : int
        Width of the white lines between cells (and around the figure).
    title_height : int
        Height of the title strip above each panel (0: no titles).

    Returns
    -------
    image : ndarray of float64, shape (H, W, 3)
    panels : list of dict
        See :attr:`Figure.panels`.

    Examples
    --------
    >>> image, panels = compose([[("a", np.zeros((2, 2)), 3), ("b", np.ones((4, 4)), 1)]], title_height=0)
    >>> image.shape, [(p["x"], p["width"]) for p in panels]
    ((10, 16, 3), [(2, 6), (10, 4)])
    """
    enlarged = [[(title, as_rgb(upscale(image, scale)), int(scale)) for title, image, scale in row] for row in rows]
    n_columns = max(len(row) for row in enlarged)
    widths = [max((row[c][1].shape[1] for row in enlarged if c < len(row)), default=0) for c in range(n_columns)]
    heights = [max(panel[1].shape[0] for panel in row) + title_height for row in enlarged]
    x_starts = separator + np.concatenate([[0], np.cumsum(np.add(widths, separator))])
    y_starts = separator + np.concatenate([[0], np.cumsum(np.add(heights, separator))])
    canvas = np.empty((int(y_starts[-1]), int(x_starts[-1]), 3))
    canvas[:] = BACKGROUND
    panels = []
    for r, row in enumerate(enlarged):
        for c, (title, image, scale) in enumerate(row):
            x, y = int(x_starts[c]), int(y_starts[r]) + title_height
            height, width = image.shape[:2]
            canvas[y:y + height, x:x + width] = image
            if title_height:
                _put_title(canvas, title, x, int(y_starts[r]), widths[c], title_height)
            panels.append({"title": title, "row": r, "column": c, "x": x, "y": y, "width": width,
                           "height": height, "scale": scale})
    return canvas, panels


def _put_title(canvas, title, x, y, width, height):
    strip = np.full((height, width, 3), 255, dtype=np.uint8)
    cv2.putText(strip, title, (2, height - 4), cv2.FONT_HERSHEY_SIMPLEX, 0.4, (0, 0, 0), 1, cv2.LINE_AA)
    canvas[y:y + height, x:x + width] = strip / 255.0


# -- inputs and reconstructions -------------------------------------------------
def _crop(region):
    name, top, left, side = region
    return sample_image(name)[top:top + side, left:left + side], {"image": name, "crop": [top, left, side]}


def _full(name, quick):
    if quick:
        return _crop(QUICK_CROP)
    image = sample_image(name)
    return image, {"image": name, "crop": None}


def _iterations(method, quick):
    return QUICK_ITERATIONS[method] if quick else None


def _reconstruct(image, pattern, sites, *, mode, binary=True, quick=False):
    """Describe ``image`` at ``sites`` and reconstruct; returns (estimate, params)."""
    method = default_method(mode, binary)
    params = {"descriptor": pattern.name, "pattern": pattern.describe_params(), "mode": mode, "method": method,
              "binary": binary, "sites": int(len(sites))}
    if len(sites) == 0:
        return np.zeros(image.shape), {**params, "iterations": 0, "seconds": 0.0}
    descriptors = describe_sites(image, sites, pattern, binary=binary)
    started = time.perf_counter()
    result = reconstruct_image(descriptors, sites, pattern, shape=image.shape, mode=mode, method=method,
                               iterations=_iterations(method, quick))
    params.update(result.params)
    params["seconds"] = round(time.perf_counter() - started, 3)
    if result.covered.sum() >= 49 and min(image.shape) >= 7:
        quality = image_metrics(image, result.image, mask=result.covered)
        params.update({key: quality[key] for key in ("correlation", "psnr", "ssim", "covered_fraction")})
    return stretch(result.image, mask=result.covered), params


def stretch(estimate, *, mask=None, percentiles=DISPLAY_PERCENTILES):
    """Stretch an estimate's contrast for display: the given percentiles of the ``mask`` pixels go to 0 and 1.

    Descriptors (binary ones above all) lose the gain and offset of a patch,
    so reconstructions are shown contrast-stretched, as in the paper. Pixels
    outside ``mask`` are 0 (black).

    Examples
    --------
    >>> stretch(np.array([[0.4, 0.5, 0.6]]), percentiles=(0, 100)).round(6).tolist()
    [[0.0, 0.5, 1.0]]
    """
    estimate = np.asarray(estimate, dtype=np.float64)
    mask = np.ones(estimate.shape, dtype=bool) if mask is None else np.asarray(mask, dtype=bool)
    if not mask.any():
        return np.zeros_like(estimate)
    low, high = np.percentile(estimate[mask], percentiles)
    scaled = (estimate - low) / (high - low) if high > low else np.full_like(estimate, 0.5)
    return np.where(mask, np.clip(scaled, 0.0, 1.0), 0.0)


def _scale_to(side, target):
    return max(1, target // side)


# -- the figures -----------------------------------------------------------------
def frame_vectors_figure(*, quick=False):
    """First and last four frame vectors ``L_i`` of FREAK (M = 512), diverging colours (Fig. 2)."""
    pattern = make_pattern("freak", patch_size=PATCH_SIZE, m=512)
    operator = DescriptorOperator(pattern)
    indices = [0, 1, 2, 3, pattern.m - 4, pattern.m - 3, pattern.m - 2, pattern.m - 1]
    vectors = [operator.frame_vector(i) for i in indices]
    limit = max(float(np.abs(v).max()) for v in vectors)
    scale = 4 if quick else 8
    panels = [(f"L{i + 1}", colorize(v, cmap="diverging", vmax=limit), scale) for i, v in zip(indices, vectors)]
    return [panels[:4], panels[4:]], {"pattern": pattern.describe_params(), "indices_1_based": [i + 1 for i in indices],
                                      "colormap": "diverging blue-white-red, symmetric", "vmax": limit}


def weight_maps_figure(*, quick=False):
    """Weight (top) and occurrence (bottom) maps of BRIEF and FREAK, M = 512 (Fig. 5).

    Each map is coloured with viridis from 0 to its own maximum.
    """
    scale = 4 if quick else 8
    rows, params = [[], []], {"colormap": "viridis from 0 to each map's maximum", "patterns": {}}
    for name in ("brief", "freak"):
        pattern = make_pattern(name, patch_size=PATCH_SIZE, m=512)
        operator = DescriptorOperator(pattern)
        weights, occurrences = operator.weight_map(), operator.occurrence_map()
        rows[0].append((f"{name.upper()} weight", colorize(weights, vmin=0.0), scale))
        rows[1].append((f"{name.upper()} occurrence", colorize(occurrences, vmin=0.0), scale))
        params["patterns"][name] = {**pattern.describe_params(), "weight_max": float(weights.max()),
                                    "occurrence_max": int(occurrences.max())}
    return rows, params


def _zero_overlap_row(image, families, m, quick):
    sites = grid_sites(image.shape, patch_size=PATCH_SIZE, offset=PATCH_SIZE)
    scale = _scale_to(image.shape[0], 256 if quick else FULL_IMAGE)
    row, params = [("original", image, scale)], {}
    for family in families:
        pattern = make_pattern(family, patch_size=PATCH_SIZE, m=m)
        estimate, params[family] = _reconstruct(image, pattern, sites, mode="patches", quick=quick)
        row.append((f"{family.upper()} M={pattern.m}", edge_overlay(estimate, image), scale))
    return row, params


def measurements_128_figure(*, quick=False):
    """Zero-overlap BRIEF and FREAK with M = 128 on the synthetic ``shapes`` image (Fig. 6)."""
    image = sample_image("shapes")
    source = {"image": "shapes", "crop": None}
    if quick:
        image, source = image[32:96, 32:96], {"image": "shapes", "crop": [32, 32, 64]}
    row, params = _zero_overlap_row(image, ("brief", "freak"), 128, quick)
    return [row], {**source, "offset": PATCH_SIZE, "canny_thresholds": CANNY_THRESHOLDS, "panel_params": params}


def zero_overlap_figure(*, quick=False):
    """Zero-overlap BRIEF, FREAK, RA-FREAK and EX-FREAK with the original's edges in red (Fig. 7)."""
    image, source = _full("camera", quick)
    row, params = _zero_overlap_row(image, ("brief", "freak", "ra-freak", "ex-freak"), 512, quick)
    return [row[:3], [row[0]] + row[3:]], {**source, "offset": PATCH_SIZE, "canny_thresholds": CANNY_THRESHOLDS,
                                           "panel_params": params}


def offsets_figure(*, quick=False):
    """FREAK at offsets 32, 16, 8 and 1 (offset 1 on a crop); patchwise (top) and joint (bottom) (Fig. 8)."""
    image, source = _full("camera", quick)
    crop, crop_source = _crop(QUICK_OFFSET1_CROP if quick else OFFSET1_CROP)
    pattern = make_pattern("freak", patch_size=PATCH_SIZE, m=512)
    target = 256 if quick else FULL_IMAGE
    rows, params = [], {}
    for mode in ("patches", "joint"):
        row = []
        for offset in (32, 16, 8, 1):
            region = crop if offset == 1 else image
            sites = grid_sites(region.shape, patch_size=PATCH_SIZE, offset=offset)
            estimate, params[f"{mode} offset {offset}"] = _reconstruct(region, pattern, sites, mode=mode, quick=quick)
            title = f"{mode} N_off={offset}" + (" (crop)" if offset == 1 else "")
            row.append((title, estimate, _scale_to(region.shape[0], target)))
        rows.append(row)
    return rows, {**source, "offset_1_on_crop": crop_source,
                  "note": "offset 1 is computed on the crop only (one patch per pixel is slow)", "panel_params": params}


def _fast_rows(names, families, *, binary, quick):
    rows, params = [], {}
    for name in names:
        image, source = _crop(QUICK_FAST_CROP) if quick else (sample_image(name), {"image": name, "crop": None})
        scale = _scale_to(image.shape[0], 256 if quick else FULL_IMAGE)
        sites, points = fast_sites(image, patch_size=PATCH_SIZE)
        row = [(f"{source['image']}", image, scale)]
        for family in families:
            pattern = make_pattern(family, patch_size=PATCH_SIZE, m=512)
            for mode in ("patches", "joint"):
                key = f"{source['image']} {family} {mode}"
                estimate, params[key] = _reconstruct(image, pattern, sites, mode=mode, binary=binary, quick=quick)
                params[key].update(source=source, fast_keypoints=int(len(points)))
                row.append((f"{family.upper()} {mode}", estimate, scale))
        rows.append(row)
    return rows, params


def fast_real_figure(*, quick=False):
    """Real-valued BRIEF on FAST keypoints (OpenCV defaults), patchwise and joint; uncovered pixels black (Fig. 9)."""
    rows, params = _fast_rows(("camera", "astronaut")[:1 if quick else 2], ("brief",), binary=False, quick=quick)
    return rows, {"keypoints": "FAST, OpenCV defaults (threshold 10, non-max suppression)", "panel_params": params}


def fast_binary_figure(*, quick=False):
    """Binary BRIEF and FREAK on FAST keypoints, patchwise and joint; uncovered pixels black (Fig. 10)."""
    rows, params = _fast_rows(("camera", "astronaut")[:1 if quick else 2], ("brief", "freak"), binary=True,
                              quick=quick)
    return rows, {"keypoints": "FAST, OpenCV defaults (threshold 10, non-max suppression)", "panel_params": params}


def detail_figure(*, quick=False):
    """BRIEF against FREAK on enlarged details, offset 8, patchwise (Fig. 11)."""
    crops = (QUICK_CROP,) if quick else DETAIL_CROPS
    rows, params = [], {}
    for region in crops:
        image, source = _crop(region)
        sites = grid_sites(image.shape, patch_size=PATCH_SIZE, offset=8)
        scale = _scale_to(image.shape[0], 256 if quick else 384)
        row = [(f"{source['image']} detail", image, scale)]
        for family in ("brief", "freak"):
            pattern = make_pattern(family, patch_size=PATCH_SIZE, m=512)
            key = f"{source['image']} {family}"
            estimate, params[key] = _reconstruct(image, pattern, sites, mode="patches", quick=quick)
            params[key]["source"] = source
            row.append((f"{family.upper()} N_off=8", estimate, scale))
        rows.append(row)
    return rows, {"offset": 8, "panel_params": params}


FIGURES = {
    "frame-vectors": frame_vectors_figure,
    "weight-maps": weight_maps_figure,
    "measurements-128": measurements_128_figure,
    "zero-overlap": zero_overlap_figure,
    "offsets": offsets_figure,
    "fast-real": fast_real_figure,
    "fast-binary": fast_binary_figure,
    "detail": detail_figure,
}


def make_figure(name, *, quick=False):
    """Compute and compose one figure.

    Parameters
    ----------
    name : str
        One of :data:`FIGURES`.
    quick : bool
        Small crops and few iterations (for tests and previews; the JSON says so).

    Returns
    -------
    Figure

    Raises
    ------
    ValueError
        If ``name`` is not a known figure.

    Examples
    --------
    >>> figure = make_figure("weight-maps", quick=True)
    >>> figure.image.shape, len(figure.panels), figure.panels[0]["width"]
    ((294, 262, 3), 4, 128)
    """
    if name not in FIGURES:
        raise ValueError(f"name must be one of {tuple(FIGURES)}, got {name!r}")
    started = time.perf_counter()
    rows, params = FIGURES[name](quick=quick)
    image, panels = compose(rows)
    params = {"figure": name, "quick": bool(quick), "display": DISPLAY_NOTE, "patch_size": PATCH_SIZE, "separator": SEPARATOR,
              "title_height": TITLE_HEIGHT, **params, "seconds": round(time.perf_counter() - started, 3),
              "versions": library_versions()}
    return Figure(name=name, image=image, panels=panels, params=params)


def write_figure(folder, name, *, quick=False):
    """Make figure ``name`` and write ``folder/NAME.png`` and ``folder/NAME.json``.

    The JSON holds :attr:`Figure.params` and the panel layout
    (:attr:`Figure.panels`) under ``"panels_layout"``.

    Returns
    -------
    (pathlib.Path, pathlib.Path)
        The PNG and JSON paths.
    """
    folder = Path(folder)
    figure = make_figure(name, quick=quick)
    png = save_png(folder / f"{name}.png", figure.image)
    record = save_json(folder / f"{name}.json", {**figure.params, "panels_layout": figure.panels,
                                                   "png_shape": list(figure.image.shape)})
    return png, record
