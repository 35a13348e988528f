import numpy as np
import pytest

from lbdviewer.reconstruction.sites import (coarser_grid, coverage, fast_keypoints, fast_sites, grid_sites,
                                           sites_from_points)


def test_grid_offsets_of_the_paper_cover_every_pixel():
    for offset, per_axis in [(32, 4), (16, 7), (8, 13), (1, 97)]:
        sites = grid_sites((128, 128), patch_size=32, offset=offset)
        assert len(sites) == per_axis**2
        assert coverage((128, 128), sites, 32).min() >= 1


def test_grid_adds_a_border_row_when_the_offset_does_not_divide():
    sites = grid_sites((50, 32), patch_size=32, offset=16)
    assert sites[:, 0].tolist() == [0, 16, 18]
    assert sites[:, 1].tolist() == [0, 0, 0]


@pytest.mark.parametrize("bad", [{"offset": 0}, {"offset": 2.5}, {"patch_size": 64}])
def test_grid_rejects_bad_parameters(bad):
    with pytest.raises(ValueError, match=next(iter(bad)) if "offset" in bad else "shape"):
        grid_sites((40, 40), **{"patch_size": 32, "offset": 8, **bad})


def test_points_centre_their_patches_and_border_points_are_dropped():
    sites, kept = sites_from_points([[15.5, 15.5], [40.0, 10.0], [70.0, 30.0]], (48, 80), patch_size=32)
    assert kept.tolist() == [True, False, False]
    assert sites.tolist() == [[0, 0]]


def test_fast_sites_lie_inside_and_centre_on_keypoints():
    image = np.random.default_rng(3).random((64, 64))
    sites, points = fast_sites(image, patch_size=16)
    assert len(sites) > 0
    assert sites.min() >= 0 and (sites + 16).max() <= 64
    centre = sites[:, ::-1] + 7.5
    assert np.abs(centre - points).max() <= 0.5


def test_coverage_counts_overlaps_and_rejects_patches_outside():
    counts = coverage((6, 6), [[0, 0], [2, 2]], 4)
    assert counts[2:4, 2:4].tolist() == [[2, 2], [2, 2]]
    assert counts[5, 0] == 0 and counts.sum() == 32
    with pytest.raises(ValueError, match="inside"):
        coverage((6, 6), [[4, 4]], 4)


@pytest.mark.parametrize("offset", [1, 2, 3, 5])
def test_coarser_grid_is_sparse_and_covers_what_the_grid_covers(offset):
    shape = (61, 75)
    sites = grid_sites(shape, patch_size=16, offset=offset)
    keep = coarser_grid(sites, spacing=8)
    kept = sites[keep]
    assert np.all(np.diff(np.unique(kept[:, 0]))[:-1] >= 8) and np.all(np.diff(np.unique(kept[:, 1]))[:-1] >= 8)
    np.testing.assert_array_equal(coverage(shape, kept, 16) > 0, coverage(shape, sites, 16) > 0)


def test_coarser_grid_leaves_sparse_grids_and_scattered_sites_alone():
    assert coarser_grid(grid_sites((64, 64), patch_size=16, offset=8), spacing=8) is None
    assert coarser_grid([[0, 0], [1, 5], [7, 2]], spacing=8) is None


def test_boundaries_of_the_image_and_the_patch():
    assert grid_sites((32, 40), patch_size=32, offset=8).tolist() == [[0, 0], [0, 8]]   # an image one patch high
    assert grid_sites((1, 1), patch_size=1, offset=1).tolist() == [[0, 0]]            # the smallest image
    for shape, message in [((0, 5), "positive sides"), ((5,), "positive sides"), ((31, 40), "at least patch_size")]:
        with pytest.raises(ValueError, match=message):
            grid_sites(shape, patch_size=32, offset=8)
    with pytest.raises(ValueError, match="patch_size"):
        grid_sites((8, 8), patch_size=0, offset=1)
    # a patch flush with the bottom or right border fits; one pixel further does not
    sites, kept = sites_from_points([[15.5, 31.5], [31.5, 15.5], [15.5, 32.5], [32.5, 15.5]], (48, 48), patch_size=32)
    assert kept.tolist() == [True, True, False, False] and sites.tolist() == [[16, 0], [0, 16]]
    for outside in ([[0, 2]], [[2, 0]], [[-1, 0]]):                  # past the right only, the bottom only, the top
        with pytest.raises(ValueError, match="inside"):
            coverage((5, 5), outside, 4)


def test_fast_sites_are_opencvs_fast_corners_of_the_8_bit_image():
    import cv2

    image = np.clip(np.random.default_rng(4).random((64, 64)) * 1.2 - 0.1, 0.0, 1.0)   # 0 and 1 both occur
    pixels = np.round(image * 255).astype(np.uint8)
    expected = sorted(kp.pt for kp in cv2.FastFeatureDetector_create(threshold=10).detect(pixels, None))
    sites, points = fast_sites(image)                                 # default patch: 32 pixels
    assert sorted(map(tuple, fast_keypoints(image).tolist())) == expected
    assert len(sites) > 0 and np.array_equal(sites[:, ::-1] + 15, points)    # FAST points are whole pixels
    assert (sites + 32).max() <= 64


def test_off_diagonal_sites_repeated_sites_and_the_fast_threshold():
    counts = coverage((4, 6), [[0, 3], [1, 0]], 2)                     # row != column
    assert counts.tolist() == [[0, 0, 0, 1, 1, 0], [1, 1, 0, 1, 1, 0], [1, 1, 0, 0, 0, 0], [0, 0, 0, 0, 0, 0]]
    sites = grid_sites((40, 40), patch_size=16, offset=2)
    assert coarser_grid(sites, spacing=8) is not None
    assert coarser_grid(np.concatenate([sites, sites[:1]]), spacing=8) is None   # a site twice: not a grid
    image = np.random.default_rng(5).random((64, 64))
    strict, _ = fast_sites(image, patch_size=16, threshold=60)
    loose, _ = fast_sites(image, patch_size=16, threshold=5)
    assert 0 < len(strict) < len(loose)
    assert len(strict) == len(sites_from_points(fast_keypoints(image, threshold=60), (64, 64), patch_size=16)[0])


def test_sites_from_points_refuse_an_empty_patch():
    with pytest.raises(ValueError, match="patch_size"):
        sites_from_points([[20, 16]], (64, 64), patch_size=0)
