"""The app opens a BEBLID feature file (thresholded bits), inverts it, and draws a keypoint's box pattern."""

import numpy as np
from skimage import data


def test_beblid_feature_file_opens_inverts_and_its_pattern_draws(qtbot, window, tmp_path):
    from lbdviewer.features.keypoints import FeatureSet
    from lbdviewer.features.files import save_features
    from lbdviewer.features.invert import keypoint_patterns
    from lbdviewer.libraries.base import keypoint_patches
    from lbdviewer.libraries.registry import get_model
    from lbdviewer.bits import pack_bits

    image = data.astronaut()[96:288, 160:352].mean(axis=2) / 255.0
    model = get_model("beblid", n_bits=256)  # the calibration the session already has (tests/test_opencv_blid.py)
    library = model.run_library(image, model.detect(image, n_keypoints=30))
    path = tmp_path / "beblid.npz"
    save_features(path, FeatureSet("beblid", {**model.params(), "library": model.library_version()}, image.shape,
                                   library.keypoints, pack_bits(library.bits, bitorder=model.bitorder)
                                   .reshape(len(library.keypoints), -1), model.n_bits, model.bitorder))
    window.parameters.iterations = 20
    with qtbot.waitSignal(window.whole_finished, timeout=60000) as blocker:
        window.load_path(str(path))
    assert blocker.args == [True]
    assert "beblid keypoints" in window.source.title_text()
    assert window.whole.result.array.any()

    first = keypoint_patterns(window.session.features)[0]
    pattern = first.pattern
    assert pattern.thresholded and pattern.kernel == "box"
    canvas = window.pattern_panel.patch
    canvas.show_array(keypoint_patches([window.whole.result.array], [first])[0])  # the inverted patch
    canvas.set_pattern(pattern)
    x, _ = canvas.pairs_item.getData()
    assert len(x) == 2 * 256 and np.all((x >= 0) & (x <= pattern.patch_size))
    circles_x, circles_y = canvas.fields_item.getData()
    assert len(circles_x) == pattern.n_fields * 33  # each box as a ring of its half-width, 32 segments
    assert np.all((circles_x >= -0.5) & (circles_y <= pattern.patch_size + 0.5))
    window.pattern_panel.grab().save(str(tmp_path / "beblid_pattern.png"))
