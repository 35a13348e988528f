"""
A whole image on a grid
=======================

Describe every 32x32 patch of a grid (a patch every ``offset`` pixels), forget
the image, and rebuild it from the descriptors: patch by patch as in the paper
(each patch alone with mean 0.5, overlaps averaged), and jointly, one unknown
image explaining every descriptor at once (lbdviewer's default where patches
overlap). Quick settings: a 192x192 crop of ``astronaut`` and 100 iterations.
"""

import lbdviewer as lbd

image = lbd.io.sample_image("astronaut")[40:232, 150:342]
pattern = lbd.patterns.make_pattern("brief", patch_size=32)
sites = lbd.reconstruction.grid_sites(image.shape, patch_size=32, offset=8)
descriptors = lbd.reconstruction.describe_sites(image, sites, pattern)
print(f"{len(sites)} patches, {pattern.m} bits each")

# %%
# The paper's protocol, then the joint solve, from the same descriptors.
results = {mode: lbd.reconstruction.reconstruct_image(descriptors, sites, pattern, shape=image.shape, mode=mode,
                                                       iterations=100)
           for mode in ("patches", "joint")}
for mode, result in results.items():
    metrics = lbd.evaluation.image_metrics(image, result.image, mask=result.covered)
    print(f"{mode:8s} correlation {metrics['correlation']:.3f}, {result.seconds:.1f} s")

# %%
# The joint estimate beside the original, the original's edges in red over it.
joint = results["joint"]
spec = lbd.figures.whole_image_figure(
    image, joint.image, covered=joint.covered, edges=True,
    metrics=lbd.evaluation.image_metrics(image, joint.image, mask=joint.covered),
    title=lbd.figures.run_title(descriptor="brief", m=512, patch_size=32, offset=8, solver=joint.method,
                                mode="joint"))
figure, layout = lbd.figures.render_figure(spec, width="double", dpi=110)
