"""The paper's figures, made again on the shipped sample images with the figure engine.

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
``leakage``            each library descriptor's feature file of one photo, inverted and scored
=====================  =================================================================

Every reconstruction is shown by the one display rule (:mod:`lbdviewer.evaluation.display`):
the original is known, so each is mapped by the gain and offset fitted to it.
Titles name what ran, read from the :class:`~lbdviewer.reconstruction.image.ImageResult`
(the solver and mode actually used), and the record beside each figure holds,
per panel, the solver record, metrics, parameters and time of that run.
"""

from __future__ import annotations

import numpy as np

from lbdviewer.evaluation.display import display_original, display_stretch
from lbdviewer.figures.engine import DIVERGING, FigureSpec, Panel, run_title
from lbdviewer.figures.kinds import CANNY_THRESHOLDS, edge_overlay, maps_figure
from lbdviewer.figures.leakage import leakage_figure
from lbdviewer.io.samples import sample_image
from lbdviewer.evaluation.metrics import image_metrics
from lbdviewer.operators.descriptor import DescriptorOperator
from lbdviewer.patterns.families import make_pattern
from lbdviewer.reconstruction.image import default_method, describe_sites, reconstruct_image
from lbdviewer.evaluation.records import image_source, run_record, solver_record
from lbdviewer.reconstruction.sites import fast_sites, grid_sites
from lbdviewer.solvers.patch.primal_dual import DEFAULT_LAM

PATCH_SIZE = 32
# (image, top, left, side) of the regions the figures use
OFFSET1_CROP = ("camera", 64, 192, 128)
DETAIL_CROPS = (("camera", 64, 192, 128), ("astronaut", 40, 150, 128))
QUICK_CROP = ("camera", 96, 208, 64)
QUICK_OFFSET1_CROP = ("camera", 112, 224, 40)
QUICK_FAST_CROP = ("camera", 80, 200, 96)
QUICK_SHAPES_CROP = ("shapes", 32, 32, 64)
QUICK_ITERATIONS = {"biht": 15, "primal-dual": 40, "consistency": 30}
FAST_NOTE = "FAST keypoints (OpenCV defaults: threshold 10, non-max suppression)"


class _Runs:
    """Reconstructions of one figure and what each one recorded."""

    def __init__(self, quick):
        self.quick = quick
        self.panels = {}

    def reconstruct(self, key, image, pattern, sites, *, mode, binary=True):
        """Describe ``image`` at ``sites`` and reconstruct with the defaults (primal-dual: :data:`DEFAULT_LAM`).

        Returns (displayed image, result).
        """
        method = default_method(mode, binary)
        iterations = QUICK_ITERATIONS[method] if self.quick else None
        descriptors = describe_sites(image, sites, pattern, binary=binary)
        result = reconstruct_image(descriptors, sites, pattern, shape=image.shape, mode=mode, method=method,
                                   iterations=iterations)
        metrics = {}
        if result.covered.sum() >= 49 and min(image.shape) >= 7:
            quality = image_metrics(image, result.image, mask=result.covered)
            metrics = {name: quality[name] for name in ("correlation", "psnr", "ssim", "covered_fraction")}
        shown = display_stretch(result.image, mask=result.covered, reference=image)
        self.panels[key] = {"solver": solver_record(result=result), "metrics": metrics, "seconds": result.seconds,
                            "parameters": {**result.params, "descriptor": pattern.name,
                                           "pattern": pattern.describe_params()},
                            "display": shown.record()}
        return shown.image, result


def _crop(region):
    name, top, left, side = region
    image = sample_image(name)[top:top + side, left:left + side]
    return image, image_source(name, image, crop=(top, left, side, side))


def _full(name, quick):
    if quick:
        return _crop(QUICK_CROP)
    image = sample_image(name)
    return image, image_source(name, image)


def _spec(name, rows, caption):
    return FigureSpec(kind=name, rows=tuple(tuple(row) for row in rows), caption=caption)


def _record(name, quick, *, runs=None, source=None, parameters=None, display=None):
    extra = {"panels": runs.panels} if runs is not None else {}
    return run_record(f"figure:{name}", source=source, parameters={"quick": bool(quick), **(parameters or {})},
                      display=display if display is not None else
                      ({key: value["display"] for key, value in runs.panels.items()} if runs else None),
                      extra=extra, seconds=sum(p["seconds"] for p in runs.panels.values()) if runs else None)


_FIT_NOTE = ("Reconstructions are shown with the gain and offset fitted to the original, mean and spread matched (descriptors carry no "
             "offset, and bits no gain either); images are enlarged by integer factors, without resampling")


# -- the figures -----------------------------------------------------------------
def frame_vectors_figure(*, quick=False):
    """First and last four frame vectors ``L_i`` of FREAK (M = 512) on one symmetric diverging scale (Fig. 2)."""
    pattern = make_pattern("freak", patch_size=PATCH_SIZE, m=512)
    operator = DescriptorOperator(pattern)
    indices = [0, 1, 2, 3, pattern.m - 4, pattern.m - 3, pattern.m - 2, pattern.m - 1]
    vectors = [operator.frame_vector(i) for i in indices]
    limit = max(float(np.abs(v).max()) for v in vectors)
    panels = [Panel(v, title=f"L{i + 1}", cmap=DIVERGING, vmin=-limit, vmax=limit,
                    colorbar="L_i value" if k in (3, 7) else None) for k, (i, v) in enumerate(zip(indices, vectors))]
    caption = (f"{run_title(descriptor='freak', m=pattern.m, patch_size=PATCH_SIZE)}: the first and last four "
               f"frame vectors L_i (rows of L, counted from 1 as in the paper), blue below 0 and red above, "
               f"on one scale symmetric around 0 (\u00b1{limit:.3g})")
    return (_spec("frame-vectors", [panels[:4], panels[4:]], caption + "."),
            _record("frame-vectors", quick, parameters={"pattern": pattern.describe_params(),
                                                        "indices_1_based": [i + 1 for i in indices],
                                                        "colormap": DIVERGING, "limit": limit}))


def weight_maps_figure(*, quick=False):
    """Weight (top) and occurrence (bottom) maps of BRIEF and FREAK, M = 512, each on its own scale (Fig. 5)."""
    entries, parameters = [], {}
    for name in ("brief", "freak"):
        pattern = make_pattern(name, patch_size=PATCH_SIZE, m=512)
        operator = DescriptorOperator(pattern)
        weights, occurrences = operator.weight_map(), operator.occurrence_map()
        entries.append((run_title(descriptor=name, m=pattern.m, patch_size=PATCH_SIZE), weights, occurrences))
        parameters[name] = {**pattern.describe_params(), "weight_max": float(weights.max()),
                            "occurrence_max": int(occurrences.max())}
    spec = maps_figure(entries)
    return (FigureSpec(kind="weight-maps", rows=spec.rows, caption=spec.caption),
            _record("weight-maps", quick, parameters={"patterns": parameters, "colormap": "viridis"}))


def _zero_overlap_panels(image, families, m, runs):
    sites = grid_sites(image.shape, patch_size=PATCH_SIZE, offset=PATCH_SIZE)
    panels = [Panel(display_original(image).image, title="original")]
    for family in families:
        pattern = make_pattern(family, patch_size=PATCH_SIZE, m=m)
        shown, result = runs.reconstruct(family, image, pattern, sites, mode="patches")
        panels.append(Panel(edge_overlay(shown, image), title=run_title(
            descriptor=family, m=pattern.m, offset=PATCH_SIZE, solver=result.method, mode=result.mode)))
    return panels


def _edges_caption(extra):
    return (f"Zero overlap (N_off = {PATCH_SIZE}, patches {PATCH_SIZE}\u00d7{PATCH_SIZE}){extra}; red: Canny edges "
            f"of the original (thresholds {CANNY_THRESHOLDS[0]}, {CANNY_THRESHOLDS[1]}). {_FIT_NOTE}.")


def measurements_128_figure(*, quick=False):
    """Zero-overlap BRIEF and FREAK with M = 128 on the synthetic ``shapes`` image (Fig. 6)."""
    if quick:
        image, source = _crop(QUICK_SHAPES_CROP)
    else:
        image = sample_image("shapes")
        source = image_source("shapes", image)
    runs = _Runs(quick)
    panels = _zero_overlap_panels(image, ("brief", "freak"), 128, runs)
    return (_spec("measurements-128", [panels], _edges_caption(", M = 128 measurements")),
            _record("measurements-128", quick, runs=runs, source=source, parameters={"offset": PATCH_SIZE}))


def zero_overlap_figure(*, quick=False):
    """Zero-overlap BRIEF, FREAK, RA-FREAK and EX-FREAK with the original's edges in red (Fig. 7)."""
    image, source = _full("camera", quick)
    runs = _Runs(quick)
    panels = _zero_overlap_panels(image, ("brief", "freak", "ra-freak", "ex-freak"), 512, runs)
    return (_spec("zero-overlap", [panels[:3], [panels[0]] + panels[3:]], _edges_caption("")),
            _record("zero-overlap", quick, runs=runs, source=source, parameters={"offset": PATCH_SIZE}))


def offsets_figure(*, quick=False):
    """FREAK at offsets 32, 16, 8 and 1 (offset 1 on a crop); patchwise (top) and joint (bottom) (Fig. 8)."""
    image, source = _full("camera", quick)
    crop, crop_source = _crop(QUICK_OFFSET1_CROP if quick else OFFSET1_CROP)
    pattern = make_pattern("freak", patch_size=PATCH_SIZE, m=512)
    runs = _Runs(quick)
    rows = []
    for mode in ("patches", "joint"):
        row = []
        for offset in (32, 16, 8, 1):
            region = crop if offset == 1 else image
            sites = grid_sites(region.shape, patch_size=PATCH_SIZE, offset=offset)
            shown, result = runs.reconstruct(f"{mode} offset {offset}", region, pattern, sites, mode=mode)
            title = run_title(offset=offset, solver=result.method, mode=result.mode,
                              extra="crop" if offset == 1 else None)
            row.append(Panel(shown, title=title))
        rows.append(row)
    caption = (f"{run_title(descriptor='freak', m=pattern.m, patch_size=PATCH_SIZE)} at grid offsets N_off = "
               f"32, 16, 8 and 1; top: each patch solved alone and overlaps averaged; bottom: the whole image "
               f"solved at once. Offset 1 on a {crop.shape[0]}\u00d7{crop.shape[1]} crop (one patch a pixel). "
               f"{_FIT_NOTE}.")
    return (_spec("offsets", rows, caption),
            _record("offsets", quick, runs=runs, source=source,
                    parameters={"offset_1_source": crop_source, "pattern": pattern.describe_params()}))


def _fast_rows(names, families, *, binary, quick, runs):
    rows, sources = [], {}
    for name in names:
        if quick:
            image, source = _crop(QUICK_FAST_CROP)
        else:
            image = sample_image(name)
            source = image_source(name, image)
        sources[name] = source
        sites, points = fast_sites(image, patch_size=PATCH_SIZE)
        original = Panel(display_original(image).image, title=f"{source['name']}, {len(points)} keypoints")
        for family in families:  # one row a family: original | patchwise | joint (the original repeated)
            pattern = make_pattern(family, patch_size=PATCH_SIZE, m=512)
            row = [original]
            for mode in ("patches", "joint"):
                shown, result = runs.reconstruct(f"{name} {family} {mode}", image, pattern, sites, mode=mode,
                                                 binary=binary)
                weight = f"\u03bb={result.params['lam']:g}" if result.method == "primal-dual" else None
                row.append(Panel(shown, title=run_title(descriptor=family, m=pattern.m, solver=result.method,
                                                        mode=result.mode, extra=weight)))
            rows.append(row)
    return rows, sources


def _fast_figure(name, families, *, binary, caption, quick):
    """The spec and run record of a FAST-keypoint figure of ``families`` (Figs. 9 and 10)."""
    runs = _Runs(quick)
    rows, sources = _fast_rows(("camera", "astronaut")[:1 if quick else 2], families, binary=binary, quick=quick,
                               runs=runs)
    return (_spec(name, rows, caption),
            _record(name, quick, runs=runs, parameters={"keypoints": FAST_NOTE, "sources": sources}))


def fast_real_figure(*, quick=False):
    r"""Real-valued BRIEF on FAST keypoints, patchwise and joint; uncovered pixels black (Fig. 9).

    Notes
    -----
    Each patch is solved alone by Alg. 1, :math:`\min_{x \in S} \lambda \|Lx - b\|_1 + \|Wx\|_1`,
    with :math:`S` the patches in :math:`[0, 1]` of mean 0.5. On the ray
    :math:`x_a = 0.5 + a (p - \bar p)` from the constant patch (``a = 0``) to the true
    one (``a = 1``) the objective is linear in ``a``, so the constant patch wins when
    :math:`\lambda < \|W(p - \bar p)\|_1 / \|Lp\|_1`. With fields of unit
    :math:`\ell_1` norm and an orthonormal Haar :math:`W` (the paper's definitions)
    that ratio is about 0.5 to 4 on natural patches, far above the paper's
    :math:`\lambda = 0.1`: most patches then come out exactly constant (grey blocks).
    The joint solve (box constraint, one data term for every patch) has the same
    balance where a patch overlaps no other: its isolated patches came out flat too.
    Both modes use :data:`lbdviewer.solvers.patch.primal_dual.DEFAULT_LAM` instead (the titles say so). Each patchwise
    patch keeps the mean 0.5 of :math:`S`, so the patchwise panels lose the
    patches' brightness; the joint solve recovers it where patches overlap, and a
    patch that overlaps no other stays a grey square there too.
    """
    caption = (f"Real-valued BRIEF measurements at {FAST_NOTE}; patchwise (each patch alone, mean 0.5, as in "
               f"the paper) and joint. Primal-dual with \u03bb = {DEFAULT_LAM:g} instead of the paper's 0.1: with "
               f"fields of unit \u21131 norm and an orthonormal Haar, at \u03bb = 0.1 the \u21131 prior outweighs the "
               f"data and most patches come out exactly constant (grey blocks). Descriptors carry no brightness: "
               f"a patchwise patch keeps the mean 0.5, and a joint patch that overlaps no other gets none from its "
               f"neighbours (the grey squares). Pixels no patch covers are black. {_FIT_NOTE}.")
    return _fast_figure("fast-real", ("brief",), binary=False, caption=caption, quick=quick)


def fast_binary_figure(*, quick=False):
    """Binary BRIEF and FREAK on FAST keypoints, patchwise and joint; uncovered pixels black (Fig. 10)."""
    caption = (f"Binary BRIEF and FREAK at {FAST_NOTE}; patchwise and joint. Pixels no patch covers are black. "
               f"{_FIT_NOTE}.")
    return _fast_figure("fast-binary", ("brief", "freak"), binary=True, caption=caption, quick=quick)


def detail_figure(*, quick=False):
    """BRIEF against FREAK on enlarged details, offset 8, patchwise (Fig. 11)."""
    runs = _Runs(quick)
    rows, sources = [], {}
    for region in (QUICK_CROP,) if quick else DETAIL_CROPS:
        image, source = _crop(region)
        sources[region[0]] = source
        sites = grid_sites(image.shape, patch_size=PATCH_SIZE, offset=8)
        row = [Panel(display_original(image).image, title=f"{source['name']} detail")]
        for family in ("brief", "freak"):
            pattern = make_pattern(family, patch_size=PATCH_SIZE, m=512)
            shown, result = runs.reconstruct(f"{source['name']} {family}", image, pattern, sites, mode="patches")
            row.append(Panel(shown, title=run_title(descriptor=family, m=pattern.m, offset=8, solver=result.method,
                                                    mode=result.mode)))
        rows.append(row)
    caption = f"BRIEF against FREAK on details, patches {PATCH_SIZE}\u00d7{PATCH_SIZE} every 8 pixels. {_FIT_NOTE}."
    return (_spec("detail", rows, caption),
            _record("detail", quick, runs=runs, parameters={"offset": 8, "sources": sources}))


FIGURES = {
    "frame-vectors": frame_vectors_figure,
    "weight-maps": weight_maps_figure,
    "measurements-128": measurements_128_figure,
    "zero-overlap": zero_overlap_figure,
    "offsets": offsets_figure,
    "fast-real": fast_real_figure,
    "fast-binary": fast_binary_figure,
    "detail": detail_figure,
    "leakage": leakage_figure,
}


def make_figure(name, *, quick=False):
    """Compute one of the paper's figures: its spec and the record of what ran.

    Parameters
    ----------
    name : str
        One of :data:`FIGURES`.
    quick : bool
        Small crops and few iterations (previews and tests; the record says so).

    Returns
    -------
    (FigureSpec, dict)

    Raises
    ------
    ValueError
        If ``name`` is not a known figure.

    Examples
    --------
    >>> spec, record = make_figure("weight-maps", quick=True)
    >>> [p.title for p in spec.rows[0]], record["kind"]
    (['BRIEF M=512 32\u00d732 weight', 'FREAK M=512 32\u00d732 weight'], 'figure:weight-maps')
    """
    if name not in FIGURES:
        raise ValueError(f"name must be one of {tuple(FIGURES)}, got {name!r}")
    return FIGURES[name](quick=quick)
