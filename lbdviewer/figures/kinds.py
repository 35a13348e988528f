r"""The figures the app exports: pure functions of arrays and metadata that return a :class:`FigureSpec`.

Each function takes what a view shows (the patch, the pattern, the estimate,
the maps) plus the facts to print, applies the one display rule
(:mod:`lbdviewer.evaluation.display`) and returns a spec for
:func:`lbdviewer.figures.engine.save_figure`. Panels get short titles; the
run (``title``, e.g. :func:`~lbdviewer.figures.notation.run_title`) and
everything else a reader needs go into the caption, in the paper's notation
(:mod:`lbdviewer.figures.notation`; pairs numbered from 1). None of them
computes a reconstruction; the frame vector of a selected pair is read from
the operator of the very pattern that is drawn, so its label and picture
agree.

=========================  ===============================================================
function                   panels
=========================  ===============================================================
:func:`patch_pattern_figure`  the patch with the pattern over it (| the selected pair's :math:`L_i`)
:func:`live_figure`           original patch | estimate | difference
:func:`maps_figure`           weight maps | occurrence maps (| frame vectors), own or shared scales
:func:`whole_image_figure`    original | reconstruction (| the original's edges over it)
:func:`families_figure`       original patch | one estimate per descriptor family
=========================  ===============================================================
"""

from __future__ import annotations

import cv2
import numpy as np
from matplotlib.colors import to_rgb

from lbdviewer.evaluation.display import difference_image, display_original, display_stretch
from lbdviewer.figures.engine import Circles, FigureSpec, Panel, Segments
from lbdviewer.figures.notation import descriptor_name, letter, letter_span, patch_text
from lbdviewer.figures.style import DIVERGING, OKABE_ITO, SEQUENTIAL
from lbdviewer.io.images import to_uint8
from lbdviewer.operators.descriptor import DescriptorOperator
from lbdviewer.patterns.base import pair_label, pair_number

PAIR_CHOICES = ("all", "selected", "none")
CANNY_THRESHOLDS = (100, 200)
#: Colour-blind-safe overlay colours (Okabe-Ito), and the word a caption uses for the edges' colour.
EDGE_COLOR = to_rgb(OKABE_ITO["vermillion"])
EDGE_NAME = "vermillion"
FIELD_COLOR = OKABE_ITO["sky"]
PAIR_COLOR = OKABE_ITO["orange"]
SELECTED_COLOR = OKABE_ITO["vermillion"]
METRIC_NAMES = (("correlation", "correlation {:.3f}"), ("psnr", "PSNR {:.1f} dB"), ("ssim", "SSIM {:.3f}"),
                ("bit_consistency", "bit consistency {:.1%}"), ("covered_fraction", "covered {:.0%}"))


def _sentence(text):
    text = text.strip()
    return text if not text or text.endswith(".") else text + "."


def _percent(text):
    """``'97.0%'`` -> ``'97.0 %'`` (a space before the unit, as in SI)."""
    return text.replace("%", " %")


def edge_overlay(estimate, original, *, thresholds=CANNY_THRESHOLDS, color=EDGE_COLOR):
    """``estimate`` (gray, display scale) with the Canny edges of ``original`` painted in ``color``.

    Examples
    --------
    >>> original = np.zeros((16, 16)); original[:, 8:] = 1.0
    >>> overlay = edge_overlay(np.full((16, 16), 0.5), original)
    >>> overlay.shape, overlay[8, 7].tolist() == list(EDGE_COLOR), overlay[8, 2].tolist()
    ((16, 16, 3), True, [0.5, 0.5, 0.5])
    """
    edges = cv2.Canny(to_uint8(original), int(thresholds[0]), int(thresholds[1])) > 0
    out = np.repeat(np.asarray(estimate, dtype=np.float64)[:, :, None], 3, axis=2)
    out[edges] = color
    return out


def metrics_sentence(metrics):
    """The metrics a caption quotes, in words (those present and finite).

    Examples
    --------
    >>> metrics_sentence({"correlation": 0.81234, "psnr": 19.04, "ssim": float("nan"), "covered_fraction": 0.5})
    'correlation 0.812, PSNR 19.0 dB, covered 50 %'
    """
    parts = []
    for key, template in METRIC_NAMES:
        value = (metrics or {}).get(key)
        if value is not None and np.isfinite(value):
            parts.append(_percent(template.format(value)))
    return ", ".join(parts)


def patch_pattern_figure(patch, pattern, *, pairs="all", selected=None, title=""):
    """The patch with the descriptor's pattern drawn over it.

    Parameters
    ----------
    patch : array_like, shape (P, P)
        The patch in ``[0, 1]``, shown as stored.
    pattern : Pattern
        Its fields are drawn as faint circles of radius sigma; its pairs as
        segments between field centres.
    pairs : {"all", "selected", "none"}
        Which pairs to draw; with ``"all"`` the selected pair is drawn again on
        top, prominent.
    selected : int, optional
        Row of ``L`` of the selected pair (from 0, as arrays count; shown
        numbered from 1 as in the paper, :func:`~lbdviewer.patterns.base.pair_label`).
        Adds a panel with its frame vector :math:`L_i` (diverging, symmetric around 0).
    title : str
        Names the run (e.g. :func:`lbdviewer.figures.notation.run_title`); opens the caption.

    Returns
    -------
    FigureSpec

    Raises
    ------
    ValueError
        Bad ``pairs``, a ``selected`` out of range, or a patch of another size.

    Examples
    --------
    >>> from lbdviewer.patterns.families import make_pattern
    >>> spec = patch_pattern_figure(np.zeros((16, 16)), make_pattern("brief", patch_size=16, m=8), selected=2)
    >>> [(panel.title, panel.colorbar) for row in spec.rows for panel in row]
    [('patch', 'grey level'), ('$L_{3}$', '$L_i$')]
    """
    if pairs not in PAIR_CHOICES:
        raise ValueError(f"pairs must be one of {PAIR_CHOICES}, got {pairs!r}")
    shown = display_original(patch)
    size = int(pattern.patch_size)
    if shown.image.shape != (size, size):
        raise ValueError(f"patch must have shape ({size}, {size}) for this pattern, got {shown.image.shape}")
    if selected is not None and (isinstance(selected, bool) or int(selected) != selected
                                 or not 0 <= selected < pattern.m):
        raise ValueError(f"selected must be a row of L from 0 to {pattern.m - 1} (pair {pair_label(0)} to "
                         f"{pair_label(pattern.m - 1)}), got {selected!r}")
    if pairs == "selected" and selected is None:
        raise ValueError("pairs='selected' needs a selected pair, got selected=None")
    centers = np.asarray(pattern.centers, dtype=np.float64)
    segments = centers[np.asarray(pattern.pairs)]
    overlays = [Circles(centers, np.asarray(pattern.sigmas), color=FIELD_COLOR, width=0.3,
                        alpha=float(np.clip(25.0 / len(centers), 0.08, 0.5)))]
    if pairs == "all":
        overlays.append(Segments(segments, color=PAIR_COLOR, width=0.35,
                                 alpha=float(np.clip(40.0 / len(segments), 0.12, 0.9))))
    if selected is not None and pairs != "none":
        overlays.append(Segments(segments[[int(selected)]], color=SELECTED_COLOR, width=1.2))
    name = descriptor_name(pattern.name)
    drawn = {"all": f"all {pattern.m} pairs as faint segments between field centres, the selected one in "
                    f"{EDGE_NAME}" if selected is not None else
                    f"all {pattern.m} pairs as faint segments between field centres",
             "selected": f"the selected pair only, in {EDGE_NAME}", "none": "no pairs"}[pairs]
    panels = [Panel(shown.image, title="patch", colorbar="grey level", overlays=tuple(overlays))]
    caption = (f"{title + '. ' if title else ''}{'(a) ' if selected is not None else ''}A patch of "
               f"{patch_text(size)} pixels, shown as stored, and the {name} pattern: receptive fields as circles "
               f"of radius $\\sigma$; {drawn}")
    display = {"patch": shown.record()}
    if selected is not None:
        vector = DescriptorOperator(pattern).frame_vector(int(selected))
        limit = float(np.abs(vector).max()) or 1.0
        number = pair_number(selected)
        panels.append(Panel(vector, title=pair_label(selected, math=True), cmap=DIVERGING, vmin=-limit, vmax=limit,
                            colorbar="$L_i$"))
        caption += (f". (b) The frame vector of the selected pair, {pair_label(selected, math=True)} (row {number} "
                    f"of $L$, pairs numbered from 1 as in the paper), on a colour scale symmetric around 0 "
                    f"($\\pm {limit:.3g}$)")
    return FigureSpec(kind="patch-pattern", rows=(tuple(panels),), caption=_sentence(caption), display=display)


def live_figure(original, estimate, *, iteration, iterations=None, bit_consistency=None, stop_reason=None,
                title=""):
    """Original patch | current estimate | difference, with the iteration and bit consistency.

    Parameters
    ----------
    original : array_like, shape (P, P)
    estimate : array_like, shape (P, P)
        Shown with the gain and offset fitted to ``original`` (bits carry none).
    iteration : int
        Iterations run so far.
    iterations : int, optional
        The budget.
    bit_consistency : float, optional
        Share of the input bits the estimate reproduces; None for a
        real-valued run (the caption says so).
    stop_reason : str, optional
        Why the solver stopped before its budget (e.g. "all bits consistent").
    title : str
        Names the run; opens the caption.

    Returns
    -------
    FigureSpec

    Examples
    --------
    >>> spec = live_figure(np.eye(8), np.eye(8) * 3 + 1, iteration=14, iterations=200, bit_consistency=1.0,
    ...                    stop_reason="all bits consistent")
    >>> "stopped at iteration 14: all bits consistent" in spec.caption, [p.title for p in spec.rows[0]]
    (True, ['original', 'estimate', 'difference'])
    """
    original_shown = display_original(original)
    shown = display_stretch(estimate, reference=original_shown.image)
    difference, limit = difference_image(original_shown.image, shown.image)
    progress = f"iteration {int(iteration)}" + (f" of {int(iterations)}" if iterations is not None else "")
    if stop_reason:
        progress += f" (stopped at iteration {int(iteration)}: {stop_reason})"
    bits = ("real-valued measurements (no bits to compare)" if bit_consistency is None
            else _percent(f"bit consistency {float(bit_consistency):.1%}"))
    row = (Panel(original_shown.image, title="original"),
           Panel(shown.image, title="estimate", colorbar="grey level"),
           Panel(difference, title="difference", cmap=DIVERGING, vmin=-limit, vmax=limit,
                 colorbar="\u0394 grey level"))
    caption = (f"{title + ': ' if title else ''}{progress}; {bits}. (a) The original patch; (b) the estimate, shown "
               f"with the {shown.description}; (c) estimate \u2212 original, on a scale symmetric around 0")
    return FigureSpec(kind="live", rows=(row,), caption=_sentence(caption),
                      display={"original": original_shown.record(), "estimate": shown.record()})


def maps_figure(entries, *, frame_vectors=(), shared_scale=False):
    """Weight maps (top row) and occurrence maps (bottom row) of several descriptors.

    By default each map gets its own colour scale from 0 to its maximum and
    its own labelled colour bar, so that a map whose values are small next to
    another's (BRIEF's weights are about a tenth of FREAK's) still shows its
    structure; the caption gives every maximum and, for two or more
    descriptors, the ratio of the largest to the smallest, so the maps stay
    comparable. ``shared_scale=True`` puts each row on one scale (one colour
    bar, at its end) instead. The caption names the choice.

    Parameters
    ----------
    entries : sequence of (str, array_like, array_like)
        ``(name, weight_map, occurrence_map)`` per descriptor (e.g. from
        :meth:`DescriptorOperator.weight_map` and ``occurrence_map``); the
        name titles its panels ("BRIEF, weights").
    frame_vectors : sequence of (str, int, array_like)
        ``(name, row, L_i)``: an optional third row of frame vectors on one
        diverging scale symmetric around 0; ``row`` (from 0) is the row of
        ``L`` the array is, titled as the paper numbers it (from 1).
    shared_scale : bool
        One colour scale per row instead of one per map.

    Returns
    -------
    FigureSpec

    Examples
    --------
    >>> spec = maps_figure([("A", np.ones((4, 4)), np.ones((4, 4))), ("B", 2 * np.ones((4, 4)), np.ones((4, 4)))])
    >>> [(p.title, p.vmax, p.colorbar) for p in spec.rows[0]]
    [('A, weights', 1.0, 'weight'), ('B, weights', 2.0, 'weight')]
    >>> shared = maps_figure([("A", np.ones((4, 4)), np.ones((4, 4))), ("B", 2 * np.ones((4, 4)), np.ones((4, 4)))],
    ...                      shared_scale=True)
    >>> [(p.vmax, p.colorbar) for p in shared.rows[0]]
    [(2.0, None), (2.0, 'weight')]
    """
    entries = list(entries)
    if not entries:
        raise ValueError("entries must hold at least one (name, weights, occurrences), got none")
    rows, sentences = [], []
    count = len(entries)
    for k, (quantity, plural, digits) in enumerate((("weight", "weights", ".3g"),
                                                    ("occurrences", "occurrences", ".0f"))):
        names = [entry[0] for entry in entries]
        maps = [np.asarray(entry[1 + k], float) for entry in entries]
        maxima = [float(values.max()) if values.size else 0.0 for values in maps]
        tops = [max(maxima)] * count if shared_scale else maxima
        rows.append(tuple(Panel(values, title=f"{name}, {plural}", cmap=SEQUENTIAL, vmin=0.0,
                                vmax=top if top > 0 else 1.0,
                                colorbar=quantity if not shared_scale or j == count - 1 else None)
                          for j, (name, values, top) in enumerate(zip(names, maps, tops))))
        sentences.append(f"{quantity} maxima " + ", ".join(f"{name} {maximum:{digits}}"
                                                           for name, maximum in zip(names, maxima))
                         + _ratio(maxima))
    scale = ("each row on one colour scale from 0 to its largest maximum (shared scale: a map with small values "
             "looks faint)" if shared_scale else "each map on its own colour scale from 0 to its maximum")
    caption = (f"Weight maps {letter_span(0, count - 1)} (total field weight on each pixel) and occurrence maps "
               f"{letter_span(count, 2 * count - 1)} (measurements reading each pixel), {scale}: "
               + "; ".join(sentences))
    frame_vectors = list(frame_vectors)
    if frame_vectors:
        limit = max(float(np.abs(v).max()) for _, _, v in frame_vectors) or 1.0
        rows.append(tuple(Panel(np.asarray(v, float), title=f"{name}, {pair_label(i, math=True)}", cmap=DIVERGING,
                                vmin=-limit, vmax=limit, colorbar="$L_i$" if k == len(frame_vectors) - 1 else None)
                          for k, (name, i, v) in enumerate(frame_vectors)))
        caption += (f"; frame vectors $L_i$ (pairs numbered from 1 as in the paper) on one colour scale symmetric "
                    f"around 0, $\\pm {limit:.3g}$")
    return FigureSpec(kind="maps", rows=tuple(rows), caption=_sentence(caption))


def _ratio(maxima):
    """`` (largest/smallest 15.2)`` for two or more maxima, else empty."""
    if len(maxima) < 2 or min(maxima) <= 0:
        return ""
    return f" (largest/smallest {max(maxima) / min(maxima):.3g})"


def whole_image_figure(original, reconstruction, *, covered=None, edges=False, metrics=None, title="",
                       keypoints=None, uncovered="black"):
    """Original | reconstruction (| the original's edges over the reconstruction), metrics in the caption.

    Parameters
    ----------
    original : array_like, shape (H, W), or None
        None when only descriptors are known (a feature file): the
        reconstruction is then shown alone, with the percentile stretch.
    reconstruction : array_like, shape (H, W)
    covered : array_like of bool, shape (H, W), optional
        Pixels some patch covers; the others are drawn by ``uncovered``.
    edges : bool
        Add a panel with the original's Canny edges over the reconstruction.
    metrics : dict, optional
        ``correlation``, ``psnr``, ``ssim``, ``bit_consistency``, ``covered_fraction``.
    title : str
        Names the run (descriptor, M, patch size, offset, solver, mode); opens the caption.
    keypoints : int, optional
        Keypoints of the feature file the reconstruction comes from (in the
        reconstruction's title and the caption).
    uncovered : {"black", "neutral"}
        Pixels outside ``covered``: black, which shows the coverage, or the
        median grey of the covered ones, as a feature file's inversion holds
        them (:func:`lbdviewer.evaluation.display.uncovered_rule`); the
        caption says which.

    Returns
    -------
    FigureSpec

    Examples
    --------
    >>> spec = whole_image_figure(np.eye(8), np.eye(8), metrics={"correlation": 1.0}, edges=True)
    >>> len(spec.rows[0]), "correlation 1.000" in spec.caption
    (3, True)
    >>> whole_image_figure(None, np.eye(8), keypoints=500).rows[0][0].title
    'reconstruction, 500 keypoints'
    """
    shown = display_stretch(reconstruction, mask=covered, reference=original, uncovered=uncovered)
    display = {"reconstruction": shown.record()}
    panels = []
    if original is not None:
        original_shown = display_original(original)
        display["original"] = original_shown.record()
        panels.append(Panel(original_shown.image, title="original"))
    from_keypoints = f"{int(keypoints)} keypoint{'' if int(keypoints) == 1 else 's'}" if keypoints is not None else ""
    panels.append(Panel(shown.image, title=", ".join(p for p in ("reconstruction", from_keypoints) if p)))
    if edges:
        if original is None:
            raise ValueError("edges=True needs the original, got original=None")
        panels.append(Panel(edge_overlay(shown.image, original_shown.image), title="with edges"))
    which = f"{letter(1)} " if original is not None else ""
    caption = f"{title + '. ' if title else ''}{which}Reconstruction"
    caption += f" from the {from_keypoints} of a feature file" if from_keypoints else ""
    caption += f", shown with the {shown.description}"
    if metrics:
        caption += f"; {metrics_sentence(metrics)} (PSNR and SSIM after the best gain/offset fit)"
    if covered is not None and not np.all(covered):
        caption += ("; pixels no patch covers are black" if uncovered == "black" else
                    "; pixels no patch covers are drawn at the median grey of the covered ones")
    if edges:
        caption += (f"; {letter(2)} the same with the Canny edges of the original in {EDGE_NAME} (thresholds "
                    f"{CANNY_THRESHOLDS[0]}, {CANNY_THRESHOLDS[1]})")
    return FigureSpec(kind="whole-image", rows=(tuple(panels),), caption=_sentence(caption), display=display)


def families_figure(patch, estimates, *, title=""):
    """One patch and its estimate from each descriptor family, each fitted to the patch.

    Parameters
    ----------
    patch : array_like, shape (P, P)
    estimates : sequence of (str, array_like)
        ``(name, estimate)`` per family; the name titles the panel (e.g.
        ``"BRIEF"``; a longer :func:`~lbdviewer.figures.notation.run_title`
        works too).
    title : str
        Names the run; opens the caption.

    Returns
    -------
    FigureSpec

    Examples
    --------
    >>> spec = families_figure(np.eye(8), [("BRIEF", np.eye(8)), ("FREAK", np.eye(8) * 2)])
    >>> [p.title for p in spec.rows[0]]
    ['original', 'BRIEF', 'FREAK']
    """
    original = display_original(patch)
    estimates = list(estimates)
    if not estimates:
        raise ValueError("estimates must hold at least one (name, estimate), got none")
    panels = [Panel(original.image, title="original")]
    display = {"original": original.record()}
    descriptions = set()
    for name, estimate in estimates:
        shown = display_stretch(estimate, reference=original.image)
        panels.append(Panel(shown.image, title=name))
        display[name] = shown.record()
        descriptions.add(shown.description)
    caption = (f"{title + '. ' if title else ''}(a) A patch, and {letter_span(1, len(estimates))} the same patch "
               f"reconstructed from each descriptor's bits; estimates shown with the "
               f"{'; '.join(sorted(descriptions))}")
    return FigureSpec(kind="families", rows=(tuple(panels),), caption=_sentence(caption), display=display)
