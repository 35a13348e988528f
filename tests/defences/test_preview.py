"""The app's view of one defence: the attacker's reconstruction and a synthetic pair's matches, both numbers."""

import numpy as np

from lbdviewer.defences.preview import DefencePreview, iter_preview_defence, preview_defence
from lbdviewer.defences.transforms import Defence
from lbdviewer.features.progress import InversionProgress
from lbdviewer.io.samples import sample_image


def test_preview_reports_progress_then_both_numbers_and_what_to_draw():
    image = sample_image("camera")[80:208, 180:308]
    items = list(iter_preview_defence(image, "orb", None, n_keypoints=80, iterations=8))
    assert all(isinstance(item, InversionProgress) for item in items[:-1]) and len(items) > 2
    clean = items[-1]
    assert isinstance(clean, DefencePreview) and clean.label == "no defence"
    assert clean.correlation > 0.5 and clean.matching_accuracy > 0.7
    assert np.count_nonzero(clean.correct) == clean.scores["correct_3px"] == round(
        clean.matching_accuracy * len(clean.matches))
    assert clean.matches[:, 0].max() < len(clean.first_points) and clean.matches[:, 1].max() < len(clean.second_points)
    noisy = preview_defence(image, "orb", Defence("rr", 0.5), n_keypoints=80, iterations=8)
    assert noisy.label == "rr eps=0.5" and noisy.matching_accuracy < clean.matching_accuracy - 0.3
    empty = preview_defence(sample_image("document")[:128, :256], "orb", Defence("keep-keypoints-aware", 0.5),
                            n_keypoints=80, iterations=8)
    assert len(empty.first_points) == 0 and empty.correlation == 0.0 and not empty.covered.any()
