"""AKAZE: the model's agreement with OpenCV and the inversion at the keypoints' scale.

Usage: python scripts/akaze_report.py [N_KEYPOINTS]

Agreement (share of identical bits, AKAZE's own keypoints) on skimage.data
coffee, chelsea and rocket (gray; none is used by the tests): ``exact`` (our
float32 rebuild of the scale space and sampling), ``linear_sampled`` (float64
linear functionals of our level images Lt, Lx, Ly) and ``linear`` (one level
image per keypoint, the diffusion replaced by a Gaussian of the same time).
Then the inversion of an AKAZE feature file of astronaut: correlation and
rank correlation with the original over the covered pixels, coverage, time.
"""

import sys
import time

from skimage import color, data

from lbdviewer.features.extract import extract_features
from lbdviewer.features.invert import invert_features
from lbdviewer.io.strict_json import dumps_strict
from lbdviewer.libraries.base import agreement
from lbdviewer.libraries.registry import get_model
from lbdviewer.evaluation.metrics import image_metrics


def main(n_keypoints=500):
    model = get_model("akaze")
    for name in ("coffee", "chelsea", "rocket"):
        image = color.rgb2gray(getattr(data, name)())
        print(dumps_strict({"image": name, **agreement(model, image, n_keypoints=n_keypoints)}, indent=None),
              flush=True)
    image = color.rgb2gray(data.astronaut())
    started = time.perf_counter()
    result = invert_features(extract_features(image, "akaze", n_keypoints=n_keypoints))
    metrics = image_metrics(image, result.image, mask=result.covered)
    print(dumps_strict({"image": "astronaut", "keypoints": result.params["keypoints"],
                        "correlation": metrics["correlation"], "rank_correlation": metrics["rank_correlation"],
                        "covered": float(result.covered.mean()),
                        "bit_consistency": result.solver_bit_consistency,
                        "seconds": time.perf_counter() - started}, indent=None), flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 500)
