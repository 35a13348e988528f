"""The app's view of one defence: the attacker's reconstruction and a synthetic pair's matches, both numbers."""

import numpy as np

from lbdviewer.defences.preview import DefencePreview, iter_preview_defence, preview_defence
from lbdviewer.defences.transforms import Defence
from lbdviewer.features.extract import extract_features
from lbdviewer.features.progress import InversionProgress
from lbdviewer.io.samples import sample_image


def test_preview_reports_progress_then_both_numbers_and_what_to_draw():
    image = sample_image("camera")[80:208, 180:308]
    features = extract_features(image, "orb", n_keypoints=80)
    items = list(iter_preview_defence(features, image=image, iterations=8))
    assert all(isinstance(item, InversionProgress) for item in items[:-1]) and len(items) > 2
    clean = items[-1]
    assert isinstance(clean, DefencePreview) and clean.label == "no defence"
    assert clean.correlation > 0.5 and clean.matching_accuracy > 0.7
    assert np.count_nonzero(clean.correct) == clean.scores["correct_3px"] == round(
        clean.matching_accuracy * len(clean.matches))
    assert clean.matches[:, 0].max() < len(clean.first_points) and clean.matches[:, 1].max() < len(clean.second_points)
    noisy = preview_defence(features, Defence("rr", 0.5), image=image, iterations=8)
    assert noisy.label == "rr eps=0.5" and noisy.matching_accuracy < clean.matching_accuracy - 0.3
    page = sample_image("document")[:128, :256]
    empty = preview_defence(extract_features(page, "orb", n_keypoints=80), Defence("keep-keypoints-aware", 0.5),
                            image=page, iterations=8)
    assert len(empty.first_points) == 0 and empty.correlation == 0.0 and not empty.covered.any()
    alone = preview_defence(features, Defence("jitter", 2.0), iterations=8)  # a feature file without its image
    assert alone.correlation is None and alone.matching_accuracy is None and alone.second is None
    assert alone.covered.any() and len(alone.matches) == 0
