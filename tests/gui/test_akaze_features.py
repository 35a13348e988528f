import numpy as np
from skimage import data


def test_akaze_feature_file_opens_and_inverts(qtbot, window, tmp_path):
    from lbdviewer.commands.extract import extract_features
    from lbdviewer.features import save_features

    image = data.camera()[128:384, 128:384] / 255.0
    path = tmp_path / "akaze.npz"
    save_features(path, extract_features(image, "akaze", n_keypoints=20))
    with qtbot.waitSignal(window.whole_finished, timeout=30000) as blocker:
        window.load_path(str(path))  # opened on a worker thread
    assert blocker.args == [True]
    assert len(window.source.keypoints_item.data) > 0
    result = window.whole.result.array
    assert result.shape == image.shape and np.ptp(result) > 0
