"""Whether an image explains a feature file: the library describes it at the file's keypoints and the bits are compared."""

from __future__ import annotations

from lbdviewer.libraries.registry import get_model

__all__ = ["library_bit_consistency"]


def library_bit_consistency(features, image):
    """Share of the file's bits the library gives again when it describes ``image`` at the file's keypoints.

    The check an inversion can always make without the original: a
    reconstruction that explains the bits makes the real library write them
    again. Bits agree by chance half the time.

    Returns
    -------
    overall : float
        Over every bit of the keypoints the library describes (NaN if none).
    min_site : float
        Of the worst keypoint (NaN if none).
    """
    described = get_model(features.descriptor, **features.model_params()).run_library(image, features.keypoints)
    if len(described.index) == 0:
        return float("nan"), float("nan")
    positions = features.bit_positions()  # a file that holds some of the bits: compare those
    library = described.bits if positions is None else described.bits[:, positions]
    agree = library == features.bits()[described.index]
    return float(agree.mean()), float(agree.mean(axis=1).min())
