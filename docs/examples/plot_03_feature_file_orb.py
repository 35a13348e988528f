"""
A feature file: ORB extracted, written, read back and inverted
==============================================================

What an eavesdropper on an app's keypoints learns. OpenCV's real ORB describes
the ``camera`` sample (its own detector, up to 300 keypoints); the keypoints
and their 256-bit descriptors go to a feature file (``.npz``, no pickles), and
the image is rebuilt from that file alone, with lbdviewer's bit-exact model of
ORB standing in for the library.
"""

import tempfile
from pathlib import Path

import lbdviewer as lbd

image = lbd.io.sample_image("camera")[128:384, 128:384]
features = lbd.features.extract_features(image, "orb", n_keypoints=300)
print(f"{features.descriptor}: {len(features.keypoints)} keypoints, "
      f"{features.n_bits} bits each")

# %%
# Write the file, read it back (every item is checked on loading), invert it.
with tempfile.TemporaryDirectory() as folder:
    path = Path(folder) / "camera.npz"
    lbd.features.save_features(path, features)
    loaded = lbd.features.load_features(path)
result = lbd.features.invert_features(loaded, iterations=100)
metrics = lbd.evaluation.image_metrics(image, result.image, mask=result.covered)
print(f"correlation {metrics['correlation']:.3f} over the "
      f"{metrics['covered_fraction']:.0%} of pixels covered")

# %%
# Pixels no keypoint's patch covers are drawn at the median grey of the covered
# ones, as the inversion holds them, so that text reads as text
# (``lbd.evaluation.uncovered_rule``).
title = f"ORB feature file, {len(loaded.keypoints)} keypoints"
spec = lbd.figures.whole_image_figure(image, result.image, covered=result.covered, metrics=metrics,
                                      title=title, uncovered=lbd.evaluation.uncovered_rule(result))
figure, layout = lbd.figures.render_figure(spec, width="double", dpi=150)
