"""How far float rounding moves the joint AKAZE inversion of a feature file, and what OCR reads of it.

The joint solve runs 200 L-BFGS iterations; a change of the operator's
arithmetic (another summation order, another filter path) that moves its
gradient by float32 rounding ends on an image a few 1e-2 away in some
pixels, and a line of text that OCR read at the threshold may then read
just below it. This script measures that spread with the working tree: the
library's inversion (:func:`lbdviewer.features.invert.invert_features`),
then the same solve through the solver's generic path (``forward`` then
``adjoint``, no fused hinge), then ``--seeds`` solves whose gradient is
multiplied by :math:`1 + 10^{-7} n`, :math:`n` standard normal per pixel
(float32 rounding is :math:`6 \\cdot 10^{-8}`). Each image is shown and read
as ``scripts/legibility.py --features akaze:K`` reads it (the covered
median in the uncovered pixels, as written and cleaned up). A change to the
operator leaves the result unchanged when its figures fall in this spread.

Usage: ``python scripts/akaze_rounding.py [--samples document dark-screen] [--keypoints 500] [--seeds 4]
[--json OUT.json]``
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

from legibility import clean_up, expected_lines
from lbdviewer.evaluation.display import display_stretch
from lbdviewer.evaluation.ocr import read_lines
from lbdviewer.features.extract import extract_features
from lbdviewer.features.invert import invert_features, neutral_uncovered
from lbdviewer.features.invert_akaze import AKAZE_SMOOTHNESS
from lbdviewer.io.samples import sample_image
from lbdviewer.io.strict_json import save_json
from lbdviewer.libraries.akaze.joint import AkazeJointOperator, balanced_channel_weights
from lbdviewer.libraries.akaze.model import Model
from lbdviewer.solvers.image.consistency import DEFAULT_MARGIN, SignConsistency

RELATIVE_NOISE = 1e-7


class GradientNoise:
    """An operator's ``forward`` and ``adjoint`` only (the solver's generic path), ``adjoint`` times ``1 + scale n``."""

    def __init__(self, operator, scale, seed):
        self.operator, self.scale, self.rng = operator, scale, np.random.default_rng(seed)
        self.domain_shape, self.range_shape = operator.domain_shape, operator.range_shape
        self.tie_positive = operator.tie_positive

    def forward(self, x):
        return self.operator.forward(x)

    def adjoint(self, y):
        image = self.operator.adjoint(y)
        if self.scale:
            image = image * (1.0 + self.scale * self.rng.standard_normal(image.shape))
        return image.astype(np.float32)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", nargs="+", default=["document", "dark-screen"])
    parser.add_argument("--keypoints", type=int, default=500)
    parser.add_argument("--seeds", type=int, default=4)
    parser.add_argument("--json", metavar="OUT.json")
    args = parser.parse_args(argv)
    rows = []
    for sample in args.samples:
        image, lines = sample_image(sample), expected_lines(sample)
        features = extract_features(image, "akaze", n_keypoints=args.keypoints)
        library = invert_features(features)
        operator = AkazeJointOperator(Model(**features.model_params()), features.keypoints, features.image_shape)
        operator = operator.with_channel_weights(balanced_channel_weights(operator))
        runs = [("library", library.image, library.solver_bit_consistency)]
        for label, scale, seed in [("generic path", 0.0, 0)] + [(f"gradient noise, seed {s}", RELATIVE_NOISE, s)
                                                                  for s in range(args.seeds)]:
            state = SignConsistency(GradientNoise(operator, scale, seed), features.bits(), margin=DEFAULT_MARGIN,
                                    smoothness=AKAZE_SMOOTHNESS, iterations=200).run()
            estimate, _ = neutral_uncovered(np.clip(state.x[0], 0.0, 1.0), operator.covered)
            runs.append((label, estimate, float(state.bit_consistency[0])))
        for label, estimate, bits in runs:
            shown = display_stretch(estimate, mask=library.covered, uncovered="neutral").image
            written, cleaned = (read_lines(pixels, lines, psm=6) for pixels in (shown, clean_up(shown)))
            difference = np.abs(estimate - library.image)[library.covered]
            row = {"sample": sample, "run": label, "bit_consistency": bits,
                   "max_difference": float(difference.max()), "mean_difference": float(difference.mean()),
                   "lines": len(lines), "read_as_written": written.count, "read_cleaned_up": cleaned.count,
                   "ratios_as_written": [round(r, 3) for r in written.ratios]}
            rows.append(row)
            print(f"{sample:11} {label:24} bits {bits:.5f}  difference max {row['max_difference']:.3f} mean "
                  f"{row['mean_difference']:.1e}  read {written.count}/{len(lines)} as written "
                  f"{row['ratios_as_written']}, {cleaned.count}/{len(lines)} cleaned up", flush=True)
    if args.json:
        save_json(args.json, {"keypoints": args.keypoints, "relative_noise": RELATIVE_NOISE, "rows": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())
