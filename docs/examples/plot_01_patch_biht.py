"""
A patch inverted by BIHT
========================

The paper's Alg. 2 on one 32x32 patch of the ``camera`` sample (the top of the
cameraman's hair against the sky): describe the patch with BRIEF's 512 bits,
forget it, and rebuild it from the bits alone.

The solver is a generator of frozen snapshots (``solver.steps()``): the app's
live panel, the command line and this script drive the same loop, and each
snapshot says how many of the 512 bits the current estimate reproduces.
"""

import lbdviewer as lbd

camera = lbd.io.sample_image("camera")
patch = camera[56:88, 176:208]
pattern = lbd.patterns.make_pattern("brief", patch_size=32)
operator = lbd.operators.DescriptorOperator(pattern)
bits = operator.describe(patch)  # int8 in {-1, +1}, shape (512,)
print(f"{bits.size} bits, {(bits > 0).mean():.0%} of them +1")

# %%
# Run BIHT (step 1/M, the 40 % largest Haar coefficients kept, the estimate
# projected on patches in [0, 1] with mean 0.5) and watch the snapshots. The
# solver works on a batch of patches: here a batch of one.
solver = lbd.solvers.BIHT(operator, bits[None], iterations=200)
for state in solver.steps():
    if state.iteration in (1, 10, 50) or state.finished:
        print(f"iteration {state.iteration:3d}: "
              f"{state.bit_consistency[0]:.1%} of the bits reproduced")

# %%
# Bits carry no brightness and no contrast, so the estimate is shown with the
# gain and offset fitted to the original (the one display rule of the app, the
# command line and the figures).
spec = lbd.figures.live_figure(patch, state.x[0], iteration=state.iteration,
                               iterations=200, bit_consistency=state.bit_consistency[0],
                               title="BRIEF M=512, BIHT")
figure, layout = lbd.figures.render_figure(spec, width="double", dpi=110)

# %%
# The same patch from each of the paper's descriptor families (its Fig. 7, on
# one patch): BRIEF spreads a blurred edge over the whole patch, FREAK and its
# variants put a sharper one at the centre, where their fields are finest.
estimates = []
for name in ("brief", "freak", "ra-freak", "ex-freak"):
    pattern = lbd.patterns.make_pattern(name, patch_size=32)
    family = lbd.operators.DescriptorOperator(pattern)
    bits = family.describe(patch)
    estimate = lbd.reconstruction.reconstruct_patches(bits[None], family)[0]
    estimates.append((f"{name.upper()}, M = {family.pattern.m}", estimate))
spec = lbd.figures.families_figure(patch, estimates, title="BIHT, 200 iterations")
families, layout = lbd.figures.render_figure(spec, width="double", dpi=110)
