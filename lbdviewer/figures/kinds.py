"""The figures the app exports: pure functions of arrays and metadata that return a :class:`FigureSpec`.

Each function takes what a view shows (the patch, the pattern, the estimate,
the maps) plus the facts to print, applies the one display rule
(:mod:`lbdviewer.evaluation.display`) and returns a spec for
:func:`lbdviewer.figures.engine.save_figure`. None of them computes a
reconstruction; the frame vector of a selected pair is read from the
operator of the very pattern that is drawn, so its title and picture agree.

=========================  ===============================================================
function                   panels
=========================  ===============================================================
:func:`patch_pattern_figure`  the patch with the pattern over it (| the selected pair's ``L_i``)
:func:`live_figure`           original patch | estimate | difference
:func:`maps_figure`           weight maps | occurrence maps (| frame vectors), each map on its own scale
:func:`whole_image_figure`    original | reconstruction (| the original's edges over it)
:func:`families_figure`       original patch | one estimate per descriptor family
=========================  ===============================================================
"""

from __future__ import annotations

import cv2
import numpy as np

from lbdviewer.evaluation.display import difference_image, display_original, display_stretch
from lbdviewer.figures.engine import DIVERGING, Circles, FigureSpec, Panel, Segments
from lbdviewer.io.images import to_uint8
from lbdviewer.operators.descriptor import DescriptorOperator

PAIR_CHOICES = ("all", "selected", "none")
CANNY_THRESHOLDS = (100, 200)
EDGE_COLOR = (1.0, 0.0, 0.0)
FIELD_COLOR = "#2ca6e0"
PAIR_COLOR = "#ff9f1c"
SELECTED_COLOR = "#e4002b"
METRIC_NAMES = (("correlation", "correlation {:.3f}"), ("psnr", "PSNR {:.1f} dB"), ("ssim", "SSIM {:.3f}"),
                ("bit_consistency", "bit consistency {:.1%}"), ("covered_fraction", "covered {:.0%}"))


def _sentence(text):
    text = text.strip()
    return text if not text or text.endswith(".") else text + "."


def edge_overlay(estimate, original, *, thresholds=CANNY_THRESHOLDS, color=EDGE_COLOR):
    """``estimate`` (gray, display scale) with the Canny edges of ``original`` painted in ``color``.

    Examples
    --------
    >>> original = np.zeros((16, 16)); original[:, 8:] = 1.0
    >>> overlay = edge_overlay(np.full((16, 16), 0.5), original)
    >>> overlay.shape, overlay[8, 7].tolist(), overlay[8, 2].tolist()
    ((16, 16, 3), [1.0, 0.0, 0.0], [0.5, 0.5, 0.5])
    """
    edges = cv2.Canny(to_uint8(original), int(thresholds[0]), int(thresholds[1])) > 0
    out = np.repeat(np.asarray(estimate, dtype=np.float64)[:, :, None], 3, axis=2)
    out[edges] = color
    return out


def metrics_sentence(metrics):
    """The metrics a caption quotes, in words (those present and finite).

    Examples
    --------
    >>> metrics_sentence({"correlation": 0.81234, "psnr": 19.04, "ssim": float("nan")})
    'correlation 0.812, PSNR 19.0 dB'
    """
    parts = []
    for key, template in METRIC_NAMES:
        value = (metrics or {}).get(key)
        if value is not None and np.isfinite(value):
            parts.append(template.format(value))
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
        Index of the selected pair (row of ``L``, from 0). Adds a panel with
        its frame vector ``L_i`` (diverging, symmetric around 0).
    title : str
        Names the run (e.g. :func:`lbdviewer.figures.engine.run_title`).

    Returns
    -------
    FigureSpec

    Raises
    ------
    ValueError
        Bad ``pairs``, a ``selected`` out of range, or a patch of another size.

    Examples
    --------
    >>> from lbdviewer.patterns import make_pattern
    >>> spec = patch_pattern_figure(np.zeros((16, 16)), make_pattern("brief", patch_size=16, m=8), selected=2)
    >>> [panel.colorbar for row in spec.rows for panel in row]
    ['grey level', 'L_i value']
    """
    if pairs not in PAIR_CHOICES:
        raise ValueError(f"pairs must be one of {PAIR_CHOICES}, got {pairs!r}")
    shown = display_original(patch)
    size = int(pattern.patch_size)
    if shown.image.shape != (size, size):
        raise ValueError(f"patch must have shape ({size}, {size}) for this pattern, got {shown.image.shape}")
    if selected is not None and (isinstance(selected, bool) or int(selected) != selected
                                 or not 0 <= selected < pattern.m):
        raise ValueError(f"selected must be a pair index from 0 to {pattern.m - 1}, got {selected!r}")
    if pairs == "selected" and selected is None:
        raise ValueError("pairs='selected' needs a selected pair index, got selected=None")
    centers = np.asarray(pattern.centers, dtype=np.float64)
    segments = centers[np.asarray(pattern.pairs)]
    overlays = [Circles(centers, np.asarray(pattern.sigmas), color=FIELD_COLOR, width=0.3,
                        alpha=float(np.clip(25.0 / len(centers), 0.08, 0.5)))]
    if pairs == "all":
        overlays.append(Segments(segments, color=PAIR_COLOR, width=0.35,
                                 alpha=float(np.clip(40.0 / len(segments), 0.12, 0.9))))
    if selected is not None and pairs != "none":
        overlays.append(Segments(segments[[int(selected)]], color=SELECTED_COLOR, width=1.2))
    drawn = {"all": f"all {pattern.m} pairs as segments between field centres (faint)",
             "selected": f"the selected pair {selected} only", "none": "no pairs"}[pairs]
    panels = [Panel(shown.image, title=title or pattern.name.upper(), colorbar="grey level", overlays=tuple(overlays))]
    caption = (f"Patch of {size}\u00d7{size} pixels, shown as stored, and the {pattern.name.upper()} pattern: "
               f"receptive fields as circles of radius \u03c3; {drawn}")
    display = {"patch": shown.record()}
    if selected is not None:
        vector = DescriptorOperator(pattern).frame_vector(int(selected))
        limit = float(np.abs(vector).max()) or 1.0
        panels.append(Panel(vector, title=f"frame vector L_i, i = {int(selected)}", cmap=DIVERGING, vmin=-limit,
                            vmax=limit, colorbar="L_i value"))
        caption += (f"; the selected pair (i = {int(selected)}, counted from 0) in red, and its frame vector L_i "
                    f"(row i of L) on a colour scale symmetric around 0, \u00b1{limit:.3g}")
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
        Names the run.

    Returns
    -------
    FigureSpec

    Examples
    --------
    >>> spec = live_figure(np.eye(8), np.eye(8) * 3 + 1, iteration=14, iterations=200, bit_consistency=1.0,
    ...                    stop_reason="all bits consistent")
    >>> "stopped at iteration 14: all bits consistent" in spec.caption
    True
    """
    original_shown = display_original(original)
    shown = display_stretch(estimate, reference=original_shown.image)
    difference, limit = difference_image(original_shown.image, shown.image)
    progress = f"iteration {int(iteration)}" + (f" of {int(iterations)}" if iterations is not None else "")
    if stop_reason:
        progress += f" (stopped at iteration {int(iteration)}: {stop_reason})"
    bits = ("real-valued measurements (no bits to compare)" if bit_consistency is None
            else f"bit consistency {float(bit_consistency):.1%}")
    row = (Panel(original_shown.image, title="original patch"),
           Panel(shown.image, title=f"estimate, {progress.split(' (')[0]}", colorbar="grey level"),
           Panel(difference, title="estimate \u2212 original", cmap=DIVERGING, vmin=-limit, vmax=limit,
                 colorbar="\u0394 grey level"))
    caption = (f"{title + ': ' if title else ''}{progress}; {bits}. Estimate shown with the "
               f"{shown.description}; difference on a scale symmetric around 0")
    return FigureSpec(kind="live", rows=(row,), caption=_sentence(caption),
                      display={"original patch": original_shown.record(), "estimate": shown.record()})


def maps_figure(entries, *, frame_vectors=()):
    """Weight maps (top row) and occurrence maps (bottom row) of several descriptors, each on its own scale.

    Each map gets its own colour scale from 0 to its maximum and its own
    labelled colour bar, so that a map whose values are small next to
    another's (BRIEF's weights are about a tenth of FREAK's) still shows
    its structure; the caption gives every maximum and, for two or more
    descriptors, the ratio of the largest to the smallest, so the maps stay
    comparable.

    Parameters
    ----------
    entries : sequence of (str, array_like, array_like)
        ``(title, weight_map, occurrence_map)`` per descriptor (e.g. from
        :meth:`DescriptorOperator.weight_map` and ``occurrence_map``).
    frame_vectors : sequence of (str, int, array_like)
        ``(title, index, L_i)``: an optional third row of frame vectors on one
        diverging scale symmetric around 0; the title names the index the
        array is, so they cannot disagree.

    Returns
    -------
    FigureSpec

    Examples
    --------
    >>> spec = maps_figure([("A", np.ones((4, 4)), np.ones((4, 4))), ("B", 2 * np.ones((4, 4)), np.ones((4, 4)))])
    >>> [(p.vmax, p.colorbar) for p in spec.rows[0]]
    [(1.0, 'weight'), (2.0, 'weight')]
    >>> spec.caption.split(": ")[1].split(";")[0]
    'weight maxima A 1, B 2 (largest/smallest 2)'
    """
    entries = list(entries)
    if not entries:
        raise ValueError("entries must hold at least one (title, weights, occurrences), got none")
    rows, sentences = [], []
    for k, (quantity, digits) in enumerate((("weight", ".3g"), ("occurrences", ".0f"))):
        titles = [entry[0] for entry in entries]
        maps = [np.asarray(entry[1 + k], float) for entry in entries]
        maxima = [float(values.max()) if values.size else 0.0 for values in maps]
        rows.append(tuple(Panel(values, title=f"{title} {quantity}", cmap="viridis", vmin=0.0,
                                vmax=maximum if maximum > 0 else 1.0, colorbar=quantity)
                          for title, values, maximum in zip(titles, maps, maxima)))
        sentences.append(f"{quantity} maxima " + ", ".join(f"{title} {maximum:{digits}}"
                                                           for title, maximum in zip(titles, maxima))
                         + _ratio(maxima))
    caption = ("Weight maps (total field weight on each pixel) and occurrence maps (measurements reading each "
               "pixel), each on its own colour scale from 0 to its maximum: " + "; ".join(sentences))
    frame_vectors = list(frame_vectors)
    if frame_vectors:
        limit = max(float(np.abs(v).max()) for _, _, v in frame_vectors) or 1.0
        rows.append(tuple(Panel(np.asarray(v, float), title=f"{t} L_i, i = {int(i)}", cmap=DIVERGING, vmin=-limit,
                                vmax=limit, colorbar="L_i value" if k == len(frame_vectors) - 1 else None)
                          for k, (t, i, v) in enumerate(frame_vectors)))
        caption += f"; frame vectors L_i (i counted from 0) on one scale symmetric around 0, \u00b1{limit:.3g}"
    return FigureSpec(kind="maps", rows=tuple(rows), caption=_sentence(caption))


def _ratio(maxima):
    """`` (largest/smallest 15.2)`` for two or more maxima, else empty."""
    if len(maxima) < 2 or min(maxima) <= 0:
        return ""
    return f" (largest/smallest {max(maxima) / min(maxima):.3g})"


def whole_image_figure(original, reconstruction, *, covered=None, edges=False, metrics=None, title=""):
    """Original | reconstruction (| the original's edges over the reconstruction), metrics in the caption.

    Parameters
    ----------
    original : array_like, shape (H, W), or None
        None when only descriptors are known (a feature file): the
        reconstruction is then shown with the percentile stretch.
    reconstruction : array_like, shape (H, W)
    covered : array_like of bool, shape (H, W), optional
        Pixels some patch covers; the others are black.
    edges : bool
        Add a panel with the original's Canny edges in red over the reconstruction.
    metrics : dict, optional
        ``correlation``, ``psnr``, ``ssim``, ``bit_consistency``, ``covered_fraction``.
    title : str
        Names the run (descriptor, M, patch size, offset, solver, mode).

    Returns
    -------
    FigureSpec

    Examples
    --------
    >>> spec = whole_image_figure(np.eye(8), np.eye(8), metrics={"correlation": 1.0}, edges=True)
    >>> len(spec.rows[0]), "correlation 1.000" in spec.caption
    (3, True)
    """
    shown = display_stretch(reconstruction, mask=covered, reference=original)
    display = {"reconstruction": shown.record()}
    panels = []
    if original is not None:
        original_shown = display_original(original)
        display["original"] = original_shown.record()
        panels.append(Panel(original_shown.image, title="original"))
    panels.append(Panel(shown.image, title=title or "reconstruction"))
    if edges:
        if original is None:
            raise ValueError("edges=True needs the original, got original=None")
        panels.append(Panel(edge_overlay(shown.image, original_shown.image),
                            title="reconstruction with the original's edges"))
    caption = f"{title + '. ' if title else ''}Reconstruction shown with the {shown.description}"
    if metrics:
        caption += f"; {metrics_sentence(metrics)} (PSNR and SSIM after the best gain/offset fit)"
    if covered is not None and not np.all(covered):
        caption += "; pixels no patch covers are black"
    if edges:
        caption += f"; red: Canny edges of the original (thresholds {CANNY_THRESHOLDS[0]}, {CANNY_THRESHOLDS[1]})"
    return FigureSpec(kind="whole-image", rows=(tuple(panels),), caption=_sentence(caption), display=display)


def families_figure(patch, estimates, *, title=""):
    """One patch and its estimate from each descriptor family, each fitted to the patch.

    Parameters
    ----------
    patch : array_like, shape (P, P)
    estimates : sequence of (str, array_like)
        ``(title, estimate)`` per family (title: e.g. ``run_title(...)``).

    Returns
    -------
    FigureSpec

    Examples
    --------
    >>> spec = families_figure(np.eye(8), [("BRIEF", np.eye(8)), ("FREAK", np.eye(8) * 2)])
    >>> [p.title for p in spec.rows[0]]
    ['original patch', 'BRIEF', 'FREAK']
    """
    original = display_original(patch)
    estimates = list(estimates)
    if not estimates:
        raise ValueError("estimates must hold at least one (title, estimate), got none")
    panels = [Panel(original.image, title="original patch")]
    display = {"original patch": original.record()}
    descriptions = set()
    for name, estimate in estimates:
        shown = display_stretch(estimate, reference=original.image)
        panels.append(Panel(shown.image, title=name))
        display[name] = shown.record()
        descriptions.add(shown.description)
    caption = (f"{title + '. ' if title else ''}The same patch reconstructed from each descriptor's bits; "
               f"estimates shown with the {'; '.join(sorted(descriptions))}")
    return FigureSpec(kind="families", rows=(tuple(panels),), caption=_sentence(caption), display=display)
