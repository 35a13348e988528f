"""
Which descriptor leaks more: ORB or BEBLID?
===========================================

Each library describes the same image at its default settings, the feature
file is written, read back and inverted alone, and the reconstruction is
compared with the original over the pixels the keypoints cover. This is one
row of ``lbdviewer audit`` per descriptor, in miniature (a 256x256 crop, 300
keypoints, 100 iterations, no OCR).
"""

import lbdviewer as lbd

image = lbd.io.sample_image("astronaut")[0:256, 128:384]
rows = lbd.evaluation.compare_descriptors(
    image, ("orb", "beblid"), n_keypoints=300, ocr=False, iterations=100)
for row in rows:
    print(f"{row.descriptor:8s} {row.keypoints:4d} keypoints, "
          f"correlation {row.correlation:.3f}, coverage {row.coverage:.0%}")

# %%
# The original and each reconstruction, shown by the one display rule.
original = lbd.evaluation.display_original(image)
panels = [lbd.figures.Panel(original.image, title="original")]
for row in rows:
    shown = lbd.evaluation.display_stretch(row.reconstruction, mask=row.covered,
                                           reference=image, uncovered="neutral")
    title = f"{row.descriptor}: r = {row.correlation:.2f}"
    panels.append(lbd.figures.Panel(shown.image, title=title))
spec = lbd.figures.FigureSpec(
    kind="leakage", rows=(tuple(panels),),
    caption="Each descriptor's feature file inverted alone (joint solve); r: correlation "
            "with the original over the covered pixels, the others drawn at their median grey.")
figure, layout = lbd.figures.render_figure(spec, width="double", dpi=150)
