r"""The paper's figures, made again on the shipped sample images with the figure engine.

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
Panels carry short titles in the paper's notation; what ran (descriptor,
:math:`M`, :math:`N_{\mathrm{off}}`, the solver actually used, read from the
:class:`~lbdviewer.reconstruction.image.ImageResult`) is said in the
caption, which refers to panels by their letters, and the record beside each
figure holds, per panel, the solver record, metrics, parameters and time of
that run (:func:`lbdviewer.evaluation.records.panel_record`).

Making a figure
    :data:`FIGURES` maps a name to a function of ``quick`` (and options,
    such as ``shared_scale`` of ``weight-maps``) that either returns
    ``(spec, record)`` or is a generator that yields a
    :class:`FigureProgress` after each run and returns them.
    :func:`iter_figure` runs either kind and reports progress;
    :func:`make_figure` returns the result; :func:`write_figure` writes it.
"""

from __future__ import annotations

import inspect
from pathlib import Path

import numpy as np

from lbdviewer.evaluation.display import display_original, display_stretch
from lbdviewer.evaluation.metrics import image_metrics
from lbdviewer.evaluation.records import image_source, panel_record, run_record
from lbdviewer.figures.engine import (DEFAULT_DPI, DEFAULT_FORMATS, DIVERGING, FigureProgress, FigureSpec, Panel,
                                     save_figure)
from lbdviewer.figures.kinds import CANNY_THRESHOLDS, EDGE_NAME, edge_overlay, maps_figure
from lbdviewer.figures.leakage import leakage_csv, leakage_figure
from lbdviewer.figures.notation import (descriptor_name, lam_text, letter, letter_span, measurements_text, mode_name,
                                        offset_text, patch_text, solver_name)
from lbdviewer.io.files import atomic_write
from lbdviewer.io.samples import sample_image
from lbdviewer.operators.descriptor import DescriptorOperator
from lbdviewer.patterns.base import pair_label, pair_number
from lbdviewer.patterns.families import make_pattern
from lbdviewer.reconstruction.image import default_method, describe_sites, reconstruct_image
from lbdviewer.reconstruction.sites import fast_sites, grid_sites
from lbdviewer.solvers.patch.primal_dual import DEFAULT_LAM

PATCH_SIZE = 32
# (image, top, left, side) of the regions the figures use
OFFSET1_CROP = ("camera", 64, 192, 128)
DETAIL_CROPS = (("camera", 64, 192, 128), ("astronaut", 40, 150, 128))
QUICK_CROP = ("camera", 96, 208, 64)
QUICK_OFFSET1_CROP = ("camera", 112, 224, 40)
QUICK_FAST_CROP = ("camera", 80, 200, 96)
QUICK_SHAPES_CROP = ("shapes", 72, 88, 64)
QUICK_ITERATIONS = {"biht": 15, "primal-dual": 40, "consistency": 30}
FAST_NOTE = "FAST keypoints (OpenCV defaults: threshold 10, non-maximum suppression)"
FIT_NOTE = ("Reconstructions are shown with the gain and offset fitted to the original, mean and spread matched "
            "(descriptors carry no offset, and bits no gain either); images are enlarged by integer factors, "
            "without resampling.")


class _Runs:
    """Reconstructions of one figure and what each one recorded."""

    def __init__(self, name, quick, total):
        self.name, self.quick, self.total = name, quick, total
        self.panels = {}

    def reconstruct(self, key, image, pattern, sites, *, mode, binary=True):
        """Describe ``image`` at ``sites`` and reconstruct with the defaults (primal-dual: :data:`DEFAULT_LAM`).

        A generator: yields one :class:`FigureProgress` when done and
        returns ``(displayed image, result)`` (``yield from``).
        """
        method = default_method(mode, binary)
        iterations = QUICK_ITERATIONS[method] if self.quick else None
        descriptors = describe_sites(image, sites, pattern, binary=binary, packed=binary)
        result = reconstruct_image(descriptors, sites, pattern, shape=image.shape, mode=mode, method=method,
                                   iterations=iterations)
        metrics = {}
        if result.covered.sum() >= 49 and min(image.shape) >= 7:
            quality = image_metrics(image, result.image, mask=result.covered)
            metrics = {name: quality[name] for name in ("correlation", "psnr", "ssim", "covered_fraction")}
        shown = display_stretch(result.image, mask=result.covered, reference=image)
        self.panels[key] = panel_record(result=result, metrics=metrics, display=shown.record(),
                                        parameters={**result.params, "descriptor": pattern.name,
                                                    "pattern": pattern.describe_params()})
        yield FigureProgress(self.name, len(self.panels), self.total, key)
        return shown.image, result

    def solvers(self, keys=None):
        """The solvers the runs ``keys`` (default: all) used, as the paper names them: ``"BIHT"``."""
        used = dict.fromkeys(solver_name(panel["solver"]["method"])
                             for key, panel in self.panels.items() if keys is None or key in keys)
        return " and ".join(used)

    def record(self, *, source=None, parameters=None):
        return run_record(f"figure:{self.name}", source=source,
                          parameters={"quick": bool(self.quick), **(parameters or {})},
                          display={key: value["display"] for key, value in self.panels.items()} or None,
                          panels=self.panels)


def _crop(region):
    name, top, left, side = region
    image = sample_image(name)[top:top + side, left:left + side]
    return image, image_source(name, image, crop=(top, left, side, side))


def _full(name, quick):
    if quick:
        return _crop(QUICK_CROP)
    image = sample_image(name)
    return image, image_source(name, image)


#: Largest height of a small map (a 32 x 32 frame vector or weight map): larger shows nothing more.
MAP_HEIGHT = 1.2


def _spec(name, rows, caption, **options):
    return FigureSpec(kind=name, rows=tuple(tuple(row) for row in rows), caption=caption, **options)


def _source_words(source):
    crop = source.get("crop")
    if not crop:
        return source["name"]
    return f"a {patch_text(crop[2])} crop of {source['name']}"


# -- the figures -----------------------------------------------------------------
def frame_vectors_figure(*, quick=False):
    """The first and last four frame vectors L_i of FREAK, M = 512, on one diverging scale (paper Fig. 2)."""
    pattern = make_pattern("freak", patch_size=PATCH_SIZE, m=512)
    operator = DescriptorOperator(pattern)
    rows = [0, 1, 2, 3, pattern.m - 4, pattern.m - 3, pattern.m - 2, pattern.m - 1]
    vectors = [operator.frame_vector(i) for i in rows]
    limit = max(float(np.abs(v).max()) for v in vectors)
    panels = [Panel(v, title=pair_label(i, math=True), cmap=DIVERGING, vmin=-limit, vmax=limit,
                    colorbar="$L_i$" if k in (3, 7) else None) for k, (i, v) in enumerate(zip(rows, vectors))]
    caption = (f"The first and last four frame vectors $L_i$ of FREAK ({measurements_text(pattern.m)}, "
               f"{patch_text(PATCH_SIZE)} patches), rows of $L$ numbered from 1 as in the paper: "
               f"{letter_span(0, 3)} $L_1$ to $L_4$, {letter_span(4, 7)} $L_{{{pattern.m - 3}}}$ to "
               f"$L_{{{pattern.m}}}$. Blue below 0, red above, on one colour scale symmetric around 0 "
               f"($\\pm {limit:.3g}$).")
    record = run_record("figure:frame-vectors", parameters={
        "quick": bool(quick), "pattern": pattern.describe_params(), "pairs": [pair_number(i) for i in rows],
        "pairs_numbered_from": 1, "colormap": DIVERGING, "limit": limit})
    return _spec("frame-vectors", [panels[:4], panels[4:]], caption, max_inset_height=MAP_HEIGHT), record


def weight_maps_figure(*, quick=False, shared_scale=False):
    """Weight and occurrence maps of BRIEF and FREAK, M = 512, each on its own scale or one shared (paper Fig. 5)."""
    entries, parameters = [], {}
    for name in ("brief", "freak"):
        pattern = make_pattern(name, patch_size=PATCH_SIZE, m=512)
        operator = DescriptorOperator(pattern)
        weights, occurrences = operator.weight_map(), operator.occurrence_map()
        entries.append((descriptor_name(name), weights, occurrences))
        parameters[name] = {**pattern.describe_params(), "weight_max": float(weights.max()),
                            "occurrence_max": int(occurrences.max())}
    spec = maps_figure(entries, shared_scale=shared_scale)
    caption = f"BRIEF and FREAK, {measurements_text(512)}, {patch_text(PATCH_SIZE)} patches. {spec.caption}"
    record = run_record("figure:weight-maps", parameters={
        "quick": bool(quick), "patterns": parameters, "colormap": "viridis",
        "scale": "shared" if shared_scale else "per panel"})
    return FigureSpec(kind="weight-maps", rows=spec.rows, caption=caption, max_inset_height=MAP_HEIGHT), record


def _zero_overlap_panels(image, families, m, runs):
    sites = grid_sites(image.shape, patch_size=PATCH_SIZE, offset=PATCH_SIZE)
    panels = [Panel(display_original(image).image, title="original")]
    for family in families:
        pattern = make_pattern(family, patch_size=PATCH_SIZE, m=m)
        shown, _ = yield from runs.reconstruct(family, image, pattern, sites, mode="patches")
        panels.append(Panel(edge_overlay(shown, image), title=descriptor_name(family)))
    return panels


def _zero_overlap_caption(source, families, m, runs):
    named = ", ".join(f"{letter(k + 1)} {descriptor_name(family)}" for k, family in enumerate(families))
    return (f"Zero overlap on {_source_words(source)}: {patch_text(PATCH_SIZE)} patches side by side "
            f"({offset_text(PATCH_SIZE)}), {measurements_text(m)} bits each, each patch solved alone by "
            f"{runs.solvers()}: {letter(0)} the original, {named}. {EDGE_NAME.capitalize()}: the Canny edges of "
            f"the original (thresholds {CANNY_THRESHOLDS[0]}, {CANNY_THRESHOLDS[1]}). {FIT_NOTE}")


def measurements_128_figure(*, quick=False):
    """Zero-overlap BRIEF and FREAK with M = 128 measurements on the synthetic shapes image (paper Fig. 6)."""
    if quick:
        image, source = _crop(QUICK_SHAPES_CROP)
    else:
        image = sample_image("shapes")
        source = image_source("shapes", image)
    runs = _Runs("measurements-128", quick, 2)
    panels = yield from _zero_overlap_panels(image, ("brief", "freak"), 128, runs)
    caption = _zero_overlap_caption(source, ("brief", "freak"), 128, runs)
    return _spec("measurements-128", [panels], caption), runs.record(source=source,
                                                                     parameters={"offset": PATCH_SIZE})


def zero_overlap_figure(*, quick=False):
    """Zero-overlap BRIEF, FREAK, RA-FREAK and EX-FREAK with the original's edges drawn over them (paper Fig. 7)."""
    image, source = _full("camera", quick)
    families = ("brief", "freak", "ra-freak", "ex-freak")
    runs = _Runs("zero-overlap", quick, len(families))
    panels = yield from _zero_overlap_panels(image, families, 512, runs)
    caption = _zero_overlap_caption(source, families, 512, runs)
    return _spec("zero-overlap", [panels], caption), runs.record(source=source, parameters={"offset": PATCH_SIZE})


def offsets_figure(*, quick=False):
    """FREAK at grid offsets 32, 16, 8 and 1, each patch alone (top) and the whole image at once (bottom) (Fig. 8)."""
    image, source = _full("camera", quick)
    crop, crop_source = _crop(QUICK_OFFSET1_CROP if quick else OFFSET1_CROP)
    pattern = make_pattern("freak", patch_size=PATCH_SIZE, m=512)
    offsets = (32, 16, 8, 1)
    runs = _Runs("offsets", quick, 2 * len(offsets))
    rows = []
    for mode in ("patches", "joint"):
        row = []
        for offset in offsets:
            region = crop if offset == 1 else image
            sites = grid_sites(region.shape, patch_size=PATCH_SIZE, offset=offset)
            shown, _ = yield from runs.reconstruct(f"{mode} offset {offset}", region, pattern, sites, mode=mode)
            row.append(Panel(shown, title=offset_text(offset)))
        rows.append(row)
    last = len(offsets) - 1
    caption = (f"FREAK ({measurements_text(pattern.m)}, {patch_text(PATCH_SIZE)} patches) on "
               f"{_source_words(source)} at grid offsets {offset_text(offsets[0])}, {', '.join(map(str, offsets[1:-1]))} "
               f"and {offsets[-1]}. "
               f"{letter_span(0, last)}: each patch solved alone by "
               f"{runs.solvers([f'patches offset {o}' for o in offsets])}, overlaps averaged; "
               f"{letter_span(last + 1, 2 * last + 1)}: the whole image solved at once by "
               f"{runs.solvers([f'joint offset {o}' for o in offsets])}. {letter(last)} and "
               f"{letter(2 * last + 1)}: offset 1 on {_source_words(crop_source)} (one patch a pixel). {FIT_NOTE}")
    return _spec("offsets", rows, caption), runs.record(
        source=source, parameters={"offset_1_source": crop_source, "pattern": pattern.describe_params()})


def _fast_sources(quick):
    if quick:
        image, source = _crop(QUICK_FAST_CROP)
        return [(image, source)]
    return [(sample_image(name), image_source(name, sample_image(name))) for name in ("camera", "astronaut")]


def _fast_figure(name, families, *, binary, quick):
    """Rows of a FAST-keypoint figure: per image, the original then each family patchwise and joint."""
    sources = _fast_sources(quick)
    runs = _Runs(name, quick, len(sources) * len(families) * 2)
    rows, counts, recorded = [], [], {}
    for image, source in sources:
        sites, points = fast_sites(image, patch_size=PATCH_SIZE)
        counts.append(f"{_source_words(source)}: {len(points)} keypoints")
        recorded[source["name"]] = source
        row = [Panel(display_original(image).image, title=source["name"])]
        for family in families:
            pattern = make_pattern(family, patch_size=PATCH_SIZE, m=512)
            for mode in ("patches", "joint"):
                shown, _ = yield from runs.reconstruct(f"{source['name']} {family} {mode}", image, pattern, sites,
                                                       mode=mode, binary=binary)
                words = mode_name(mode) if len(families) == 1 else f"{descriptor_name(family)}, {mode_name(mode)}"
                row.append(Panel(shown, title=words))
        rows.append(row)
    return rows, runs, "; ".join(counts), recorded


def _panel_letters(rows, offset):
    """Letters of the panel at ``offset`` in each row (rows of equal length, in reading order)."""
    return ", ".join(letter(k * len(rows[0]) + offset) for k in range(len(rows)))


def fast_real_figure(*, quick=False):
    r"""Real-valued BRIEF on FAST keypoints, patchwise and joint; uncovered pixels black (paper Fig. 9).

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
    Both modes use :data:`lbdviewer.solvers.patch.primal_dual.DEFAULT_LAM` instead (the caption says so).
    Each patchwise patch keeps the mean 0.5 of :math:`S`, so the patchwise panels lose the
    patches' brightness; the joint solve recovers it where patches overlap, and a
    patch that overlaps no other stays a grey square there too.
    """
    rows, runs, counts, sources = yield from _fast_figure("fast-real", ("brief",), binary=False, quick=quick)
    caption = (f"Real-valued BRIEF measurements ({measurements_text(512)}, {patch_text(PATCH_SIZE)} patches) at "
               f"{FAST_NOTE}; {counts}. {_panel_letters(rows, 0)}: the original; {_panel_letters(rows, 1)}: each "
               f"patch solved alone (mean 0.5, as in the paper); {_panel_letters(rows, 2)}: the whole image solved "
               f"at once; both by {runs.solvers()}, with {lam_text(DEFAULT_LAM)} "
               f"instead of the paper's 0.1: with fields of unit $\\ell_1$ norm and an orthonormal Haar, at "
               f"$\\lambda = 0.1$ the $\\ell_1$ prior outweighs the data and most patches come out exactly constant "
               f"(grey blocks). Descriptors carry no brightness: a patchwise patch keeps the mean 0.5, and a joint "
               f"patch that overlaps no other gets none from its neighbours (the grey squares). Pixels no patch "
               f"covers are black. {FIT_NOTE}")
    return _spec("fast-real", rows, caption), runs.record(parameters={"keypoints": FAST_NOTE, "sources": sources,
                                                                      "lam": DEFAULT_LAM})


def fast_binary_figure(*, quick=False):
    """Binary BRIEF and FREAK on FAST keypoints, patchwise and joint; uncovered pixels black (paper Fig. 10)."""
    rows, runs, counts, sources = yield from _fast_figure("fast-binary", ("brief", "freak"), binary=True, quick=quick)
    caption = (f"Binary BRIEF and FREAK ({measurements_text(512)}, {patch_text(PATCH_SIZE)} patches) at "
               f"{FAST_NOTE}; {counts}. {_panel_letters(rows, 0)}: the original; {_panel_letters(rows, 1)}: BRIEF "
               f"and {_panel_letters(rows, 3)}: FREAK, each patch solved alone (by "
               f"{runs.solvers([k for k in runs.panels if k.endswith('patches')])}); {_panel_letters(rows, 2)}: "
               f"BRIEF and {_panel_letters(rows, 4)}: FREAK, the whole image solved at once (by "
               f"{runs.solvers([k for k in runs.panels if k.endswith('joint')])}). Pixels no patch covers are "
               f"black. {FIT_NOTE}")
    return _spec("fast-binary", rows, caption), runs.record(parameters={"keypoints": FAST_NOTE, "sources": sources})


def detail_figure(*, quick=False):
    """BRIEF against FREAK on enlarged details, patches every 8 pixels, each solved alone (paper Fig. 11)."""
    regions = (QUICK_CROP,) if quick else DETAIL_CROPS
    runs = _Runs("detail", quick, 2 * len(regions))
    rows, sources = [], {}
    for region in regions:
        image, source = _crop(region)
        sources[region[0]] = source
        sites = grid_sites(image.shape, patch_size=PATCH_SIZE, offset=8)
        row = [Panel(display_original(image).image, title=source["name"])]
        for family in ("brief", "freak"):
            pattern = make_pattern(family, patch_size=PATCH_SIZE, m=512)
            shown, _ = yield from runs.reconstruct(f"{source['name']} {family}", image, pattern, sites,
                                                   mode="patches")
            row.append(Panel(shown, title=descriptor_name(family)))
        rows.append(row)
    details = " and ".join(_source_words(source) for source in sources.values())
    caption = (f"BRIEF against FREAK on details: {details} ({_panel_letters(rows, 0)}); "
               f"{_panel_letters(rows, 1)}: BRIEF, {_panel_letters(rows, 2)}: FREAK, {measurements_text(512)}, "
               f"{patch_text(PATCH_SIZE)} patches every 8 pixels ({offset_text(8)}), each solved alone by "
               f"{runs.solvers()}. {FIT_NOTE}")
    return _spec("detail", rows, caption), runs.record(parameters={"offset": 8, "sources": sources})


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


def figure_summaries():
    """``{name: one line on what the figure shows}`` (the first line of each function's docstring).

    Examples
    --------
    >>> figure_summaries()["offsets"].startswith("FREAK at grid offsets 32, 16, 8 and 1")
    True
    """
    return {name: inspect.getdoc(make).splitlines()[0] for name, make in FIGURES.items()}


def iter_figure(name, *, quick=False, **options):
    """Make one of the paper's figures, step by step: a :class:`FigureProgress` after each run.

    Parameters
    ----------
    name : str
        One of :data:`FIGURES`.
    quick : bool
        Small crops and few iterations (previews and tests; the record says so).
    **options
        Options of that figure (``shared_scale`` for ``weight-maps``).

    Yields
    ------
    FigureProgress
        One per run (panel solved), then a last one with ``spec`` and ``record``.

    Raises
    ------
    ValueError
        An unknown ``name``, or an option the figure does not take.
    """
    if name not in FIGURES:
        raise ValueError(f"name must be one of {tuple(FIGURES)}, got {name!r}")
    make = FIGURES[name]
    unknown = [key for key in options if key not in inspect.signature(make).parameters]
    if unknown:
        raise ValueError(f"figure {name!r} takes no option {', '.join(unknown)}")
    made = make(quick=quick, **options)
    done = total = 0
    if inspect.isgenerator(made):
        while True:
            try:
                step = next(made)
            except StopIteration as finished:
                made = finished.value
                break
            done, total = step.done, step.total
            yield step
    spec, record = made
    yield FigureProgress(name, done, total, spec=spec, record=record)


def make_figure(name, *, quick=False, **options):
    """Compute one of the paper's figures: its spec and the record of what ran (:func:`iter_figure` to the end).

    Parameters
    ----------
    name, quick, **options
        As :func:`iter_figure`.

    Returns
    -------
    (FigureSpec, dict)

    Raises
    ------
    ValueError
        If ``name`` is not a known figure, or takes no such option.

    Examples
    --------
    >>> spec, record = make_figure("weight-maps", quick=True)
    >>> [p.title for p in spec.rows[0]], record["kind"]
    (['BRIEF, weights', 'FREAK, weights'], 'figure:weight-maps')
    """
    for step in iter_figure(name, quick=quick, **options):
        pass
    return step.spec, step.record


def write_figure(folder, name, *, quick=False, formats=DEFAULT_FORMATS, dpi=DEFAULT_DPI, width="double",
                 caption="beside", options=None, made=None):
    """Make the paper's figure ``name`` and write it to ``folder`` (:func:`~lbdviewer.figures.engine.save_figure`).

    ``NAME.png`` / ``.pdf`` / ``.svg``, ``NAME.json`` and, with the caption
    beside, ``NAME.caption.txt`` and ``NAME.tex``; a figure whose record
    holds a table (``extra["table"]``, e.g. ``leakage``) also gets it as
    ``NAME.csv``. ``options`` go to the figure (:func:`make_figure`);
    ``made``: its ``(spec, record)`` when already computed
    (:func:`iter_figure`).

    Returns
    -------
    dict
        ``{format: path}`` of the files written, ``"json"`` (``"caption"``,
        ``"tex"``, ``"csv"``).
    """
    spec, record = made if made is not None else make_figure(name, quick=quick, **(options or {}))
    written = save_figure(spec, Path(folder) / name, formats=formats, dpi=dpi, width=width, record=record,
                          caption=caption)
    table = (record.get("extra") or {}).get("table")
    if table is not None:
        written["csv"] = atomic_write(Path(folder) / f"{name}.csv", leakage_csv(table).encode("utf-8"))
    return written
