"""``lbdviewer invert FEATURES -o OUT.png``: reconstruct an image from a feature file alone.

``--mode patches``: each keypoint's bits are inverted with BIHT on its own
operator (the library's pattern turned by the keypoint angle and scaled to
its pyramid level or FREAK scale, see
:meth:`lbdviewer.library_models.LibraryModel.keypoint_patterns`); the patch
estimates are resized to level-0 pixels, placed at their keypoints and
overlap-averaged.

``--mode joint``: one level-0 image explains every keypoint's bits at once
(:func:`lbdviewer.reconstruct.reconstruct_image` with one pattern per
keypoint). A keypoint described on pyramid level ``l`` (pixel size ``s`` in
level-0 pixels) gets its pattern mapped to level 0 by :func:`level0_pattern`:
field centres move to the level-0 position of the level pixel they sat on,
sigmas and radii are multiplied by ``s``. This ignores the pyramid's own
resampling filter (ORB builds its levels by bilinear resizing), which the
wider fields approximate. Libraries read patches that leave the image with
reflect-101 padding; the joint solve instead pads the unknown image with free
pixels (a border as wide as the farthest patch reaches) and crops it away
afterwards.

In both modes pixels that no keypoint's patch covers are 0.5.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from lbdviewer.features import load_features
from lbdviewer.io import load_image, save_json, save_png
from lbdviewer.library_models import get_model
from lbdviewer.operators import DescriptorOperator, pack_bits
from lbdviewer.reconstruct import reconstruct_image
from lbdviewer.solvers import BIHT


def invert_features(features, *, iterations=100, sparsity=0.4):
    """Reconstruct the described image patch by patch.

    Parameters
    ----------
    features : FeatureSet
    iterations : int
        BIHT iterations per keypoint.
    sparsity : float
        Share of Haar coefficients BIHT keeps.

    Returns
    -------
    image : ndarray, shape (H, W)
        Estimate in ``[0, 1]``.
    coverage : ndarray of bool, shape (H, W)
        Pixels at least one keypoint's patch covers.
    """
    import cv2

    params = {k: v for k, v in features.params.items() if k != "library"}
    model = get_model(features.descriptor, **params)
    bits = features.bits()
    height, width = features.image_shape
    total = np.zeros((height, width))
    weight = np.zeros((height, width))
    for k, kp in enumerate(model.keypoint_patterns(features.keypoints)):
        operator = DescriptorOperator(kp.pattern)
        patch = BIHT(operator, bits[k:k + 1], iterations=iterations, sparsity=sparsity).run().x[0]
        size = max(1, int(round(kp.pattern.patch_size * kp.scale)))
        patch = cv2.resize(np.asarray(patch, dtype=np.float32), (size, size), interpolation=cv2.INTER_LINEAR)
        # level pixel (r, c) is centred at level-0 ((c + 0.5) * s - 0.5, (r + 0.5) * s - 0.5)
        top = int(round((kp.origin[0] + 0.5) * kp.scale - 0.5))
        left = int(round((kp.origin[1] + 0.5) * kp.scale - 0.5))
        r0, c0 = max(top, 0), max(left, 0)
        r1, c1 = min(top + size, height), min(left + size, width)
        if r0 >= r1 or c0 >= c1:
            continue
        total[r0:r1, c0:c1] += patch[r0 - top:r1 - top, c0 - left:c1 - left]
        weight[r0:r1, c0:c1] += 1.0
    coverage = weight > 0
    image = np.where(coverage, total / np.maximum(weight, 1.0), 0.5)
    return np.clip(image, 0.0, 1.0), coverage


def level0_pattern(keypoint_pattern):
    """A keypoint's pattern in level-0 pixels and the level-0 ``(row, col)`` of its patch corner.

    Level pixel ``(r, c)`` is centred at level-0 ``((c + 1/2) s - 1/2, (r + 1/2) s - 1/2)``
    with ``s`` the level's pixel size. A field centred at ``(x, y)`` in a patch
    whose corner sits at level pixel ``(r0, c0)`` moves to
    ``((c0 + x + 1/2) s - 1/2 - C0, (r0 + y + 1/2) s - 1/2 - R0)`` in a patch of
    side ``ceil(P s) + 1`` whose corner is the level-0 pixel
    ``(R0, C0) = (round(r0 s), round(c0 s))``; sigmas and radii scale by ``s``.
    A level-0 keypoint (``s = 1``) keeps its pattern object unchanged.

    Parameters
    ----------
    keypoint_pattern : lbdviewer.library_models.KeypointPattern

    Returns
    -------
    pattern : Pattern
    origin : (int, int)

    Examples
    --------
    >>> from lbdviewer.library_models import KeypointPattern
    >>> from lbdviewer.patterns.base import Pattern
    >>> p = Pattern("toy", 4, [[1.0, 2.0]], [1.0], [1.0], [[0, 0]])
    >>> q, origin = level0_pattern(KeypointPattern(p, 1, (3, 5), 2.0))
    >>> q.patch_size, origin, q.centers.tolist(), q.sigmas.tolist()
    (9, (6, 10), [[2.5, 4.5]], [2.0])
    """
    pattern, scale = keypoint_pattern.pattern, float(keypoint_pattern.scale)
    row, col = keypoint_pattern.origin
    if scale == 1.0:
        return pattern, (int(row), int(col))
    origin = (int(math.floor(row * scale + 0.5)), int(math.floor(col * scale + 0.5)))
    corner = np.array([col, row], dtype=np.float64)
    centers = (corner + pattern.centers + 0.5) * scale - 0.5 - np.array([origin[1], origin[0]])
    size = int(math.ceil(pattern.patch_size * scale)) + 1
    return replace(pattern, patch_size=size, centers=centers, sigmas=pattern.sigmas * scale,
                   radii=pattern.radii * scale), origin


def invert_features_joint(features, *, iterations=300, sparsity=0.4):
    """Reconstruct the described image with one joint BIHT solve (see the module notes).

    Parameters
    ----------
    features : FeatureSet
    iterations : int
        Iterations of the whole-image BIHT.
    sparsity : float
        Share of Haar coefficients kept (of the padded image).

    Returns
    -------
    image : ndarray, shape (H, W)
        Estimate in ``[0, 1]``; 0.5 where no patch reaches.
    coverage : ndarray of bool, shape (H, W)
    """
    params = {k: v for k, v in features.params.items() if k != "library"}
    model = get_model(features.descriptor, **params)
    height, width = features.image_shape
    mapped = [level0_pattern(kp) for kp in model.keypoint_patterns(features.keypoints)]
    if not mapped:
        return np.full((height, width), 0.5), np.zeros((height, width), dtype=bool)
    patterns = [pattern for pattern, _ in mapped]
    origins = np.array([origin for _, origin in mapped], dtype=np.int64).reshape(-1, 2)
    sizes = np.array([p.patch_size for p in patterns], dtype=np.int64)
    top, left = max(0, -int(origins[:, 0].min())), max(0, -int(origins[:, 1].min()))
    bottom = max(0, int((origins[:, 0] + sizes).max()) - height)
    right = max(0, int((origins[:, 1] + sizes).max()) - width)
    shape = (height + top + bottom, width + left + right)
    bits = pack_bits(features.bits())
    result = reconstruct_image(bits, origins + [top, left], patterns, shape=shape, mode="joint",
                               iterations=iterations, sparsity=sparsity)
    image = result.image[top:top + height, left:left + width]
    covered = result.covered[top:top + height, left:left + width]
    return np.where(covered, image, 0.5), covered


def add_parser(subparsers):
    parser = subparsers.add_parser("invert", help="reconstruct an image from a feature file")
    parser.add_argument("features", help="feature file (.npz) written by 'lbdviewer extract'")
    parser.add_argument("-o", "--output", required=True, metavar="OUT.png")
    parser.add_argument("--mode", choices=("patches", "joint"), default="patches",
                        help="patches: each keypoint alone, then averaging; joint: one image explains all bits")
    parser.add_argument("--iterations", type=int, default=None,
                        help="BIHT iterations (default 100 per patch, 300 joint)")
    parser.add_argument("--reference", metavar="ORIGINAL", help="original image, for --metrics")
    parser.add_argument("--metrics", metavar="OUT.json", help="write metrics against --reference")
    parser.set_defaults(func=run)


def run(args):
    if args.iterations is not None and args.iterations < 1:
        raise SystemExit(f"lbdviewer invert: --iterations must be positive, got {args.iterations}")
    if bool(args.reference) != bool(args.metrics):
        raise SystemExit("lbdviewer invert: --reference and --metrics go together")
    features = load_features(args.features)
    if args.mode == "joint":
        image, coverage = invert_features_joint(features, iterations=args.iterations or 300)
    else:
        image, coverage = invert_features(features, iterations=args.iterations or 100)
    save_png(args.output, image)
    if args.metrics:
        from lbdviewer.metrics import image_metrics

        reference = load_image(args.reference)
        if reference.shape != image.shape:
            raise SystemExit(f"lbdviewer invert: --reference has shape {reference.shape}, features {image.shape}")
        save_json(args.metrics, {"descriptor": features.descriptor, "keypoints": len(features.keypoints),
                                 "mode": args.mode,
                                 **image_metrics(reference, image, mask=coverage)})
    print(f"{args.output}: {features.descriptor}, {len(features.keypoints)} keypoints, mode {args.mode}")
    return 0
