"""The ``fast-real`` figure: its patchwise real-valued panels show the patches, not grey blocks."""

import numpy as np

from lbdviewer.figures.paper import REAL_LAM, make_figure
from lbdviewer.io import sample_image
from lbdviewer.operators import DescriptorOperator
from lbdviewer.patterns import make_pattern
from lbdviewer.solvers import PrimalDualL1
from lbdviewer.wavelets import HaarTransform


def test_at_the_papers_lambda_the_constant_patch_beats_the_true_one():
    patch = sample_image("camera")[100:132, 230:262]  # the head's edge: a textured patch
    operator = DescriptorOperator(make_pattern("brief", patch_size=32, m=512))
    measurements = operator.forward(patch[None])
    # on the ray 0.5 + a (p - mean p) the objective is lam (1 - a) ||Lp||_1 + a ||W(p - mean p)||_1 + const
    critical = (np.abs(HaarTransform((32, 32)).forward(patch - patch.mean())).sum()
                / np.abs(measurements).sum())
    assert 0.1 < critical < REAL_LAM
    flat = PrimalDualL1(operator, measurements, lam=0.1, iterations=300).run().x[0]
    solved = PrimalDualL1(operator, measurements, lam=REAL_LAM, iterations=300).run().x[0]
    assert np.ptp(flat) < 1e-3  # exactly constant: a grey block
    assert np.corrcoef(solved.ravel(), patch.ravel())[0, 1] > 0.7


def test_real_valued_panels_show_the_patches_and_say_which_lambda():
    spec, record = make_figure("fast-real", quick=True)
    panels = record["extra"]["panels"]
    patches, joint = panels["camera brief patches"], panels["camera brief joint"]
    assert patches["parameters"]["lam"] == joint["parameters"]["lam"] == REAL_LAM
    assert patches["metrics"]["correlation"] > 0.7  # 0.53 with the paper's lambda: mostly flat patches
    titles = [panel.title for row in spec.rows for panel in row]
    assert all(f"\u03bb={REAL_LAM:g}" in title for title in titles[1:])
    assert "most patches come out exactly constant" in spec.caption and "no brightness" in spec.caption
