import numpy as np
from skimage import data


def test_akaze_feature_file_opens_and_inverts(window, open_extracted_features):
    image = data.camera()[128:384, 128:384] / 255.0
    assert open_extracted_features(image, "akaze", n_keypoints=20, timeout=30000, iterations=None) == [True]
    assert len(window.source.keypoints_item.getData()[0]) > 0
    result = window.whole.result.array
    assert result.shape == image.shape and np.ptp(result) > 0
