"""
The frame vectors of a pattern
==============================

A descriptor's measurements are rows of one matrix: ``L_i = G_i - G'_i``, the
difference of the two receptive fields of pair ``i`` (:ref:`background`). This
example draws a few rows of BRIEF and of FREAK as images, then the pattern over
a patch, with :class:`~lbdviewer.figures.FigureSpec` and
:class:`~lbdviewer.figures.Panel` directly: any arrays make a figure.
"""

import numpy as np

import lbdviewer as lbd

# sphinx_gallery_thumbnail_number = 2
operators = {}
for name in ("brief", "freak"):
    pattern = lbd.patterns.make_pattern(name, patch_size=32)
    operators[name] = lbd.operators.DescriptorOperator(pattern)

rows = []
for name, operator in operators.items():
    picked = (0, 170, 340, 511)  # rows of L, counted from 0 in Python
    vectors = [operator.frame_vector(i) for i in picked]
    limit = max(float(np.abs(v).max()) for v in vectors)
    panels = []
    for i, vector in zip(picked, vectors):
        panels.append(lbd.figures.Panel(  # titled as the paper numbers pairs: row 0 is L_1
            vector, title=f"{name.upper()}, {lbd.patterns.pair_label(i, math=True)}", cmap=lbd.figures.DIVERGING,
            vmin=-limit, vmax=limit, colorbar="$L_i$" if i == picked[-1] else None))
    rows.append(tuple(panels))
spec = lbd.figures.FigureSpec(
    kind="frame-vectors", rows=tuple(rows),
    caption="Frame vectors $L_i$ (rows of $L$, numbered from 1): blue below 0, red above, "
            "each descriptor on one scale symmetric around 0.")
figure, layout = lbd.figures.render_figure(spec, width="double", dpi=110)

# %%
# The FREAK pattern over a patch: receptive fields as circles of radius sigma,
# every pair as a faint segment, one pair (and its frame vector) highlighted.
patch = lbd.io.sample_image("camera")[56:88, 176:208]
freak = operators["freak"].pattern
spec = lbd.figures.patch_pattern_figure(patch, freak, selected=0, title="FREAK, 512 pairs")
pattern_figure, layout = lbd.figures.render_figure(spec, width="double", dpi=110)

# %%
# The weight map (total field weight on each pixel) and occurrence map (how
# many measurements read each pixel) of the paper's Fig. 5: BRIEF reads the
# patch evenly, FREAK weighs its centre.
maps = [(name.upper(), operator.weight_map(), operator.occurrence_map())
        for name, operator in operators.items()]
spec = lbd.figures.maps_figure(maps)
maps_figure, layout = lbd.figures.render_figure(spec, width="double", dpi=110)
