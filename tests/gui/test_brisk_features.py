"""The app opens a BRISK feature file, inverts it, and draws a keypoint's BRISK pattern."""

import numpy as np
from skimage import data


def test_brisk_feature_file_opens_inverts_and_its_pattern_draws(window, tmp_path, open_extracted_features):
    from lbdviewer.features.invert import keypoint_patterns
    from lbdviewer.libraries.base import keypoint_patches

    image = data.astronaut()[96:288, 160:352].mean(axis=2) / 255.0
    assert open_extracted_features(image, "brisk", n_keypoints=30, timeout=30000) == [True]
    assert "brisk keypoints" in window.source.title_text()
    assert len(window.source.keypoints_item.data) > 0 and window.whole.result.array.any()

    first = keypoint_patterns(window.session.features)[0]
    pattern = first.pattern
    canvas = window.pattern_panel.patch
    canvas.show_array(keypoint_patches([window.whole.result.array], [first])[0])  # the inverted patch
    canvas.set_pattern(pattern)
    canvas.set_title(f"Keypoint 0 of brisk.npz + {pattern.name} pattern")
    x, y = canvas.pairs_item.getData()
    assert len(x) == 2 * 512 and np.all((x >= 0) & (x <= pattern.patch_size))
    circles_x, _ = canvas.fields_item.getData()
    assert len(circles_x) == 60 * 33  # 60 fields, 32 segments each
    window.pattern_panel.grab().save(str(tmp_path / "brisk_pattern.png"))
