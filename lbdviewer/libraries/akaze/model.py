r"""Model of OpenCV's AKAZE descriptor (``cv2.xfeatures2d.AKAZE_create``, M-LDB, 486 bits).

For a keypoint of evolution level ``e`` (octave ``o``; ``e`` is OpenCV's
``class_id``, recovered here from ``octave`` and ``size``) at level-0 position
``(x, y)``, angle ``theta`` and size ``d``, M-LDB samples the level images
``Lt, Lx, Ly`` of :mod:`lbdviewer.libraries.akaze.scale_space` on a rotated
grid: with ``s = round(d / 2^{o+1})``, ``(x_f, y_f) = (x, y) / 2^o`` and
integer offsets ``(k, l)`` in ``[-10, 10)``,

.. math::

    p_{kl} = \mathrm{round}\big((x_f, y_f) + s\,(k \cos\theta - l \sin\theta,\;
             l \cos\theta + k \sin\theta)\big)

(samples outside the level are skipped). The ``20 x 20`` offsets are cut
into 2x2, 3x3 and 4x4 cells (steps 10, 7, 5, the last cells clipped); a
cell's three values are the means over its samples of ``Lt``, of
``-Lx \sin\theta + Ly \cos\theta`` and of ``Lx \cos\theta + Ly \sin\theta``.
Per grid and per channel, bit ``(i, j)`` for cells ``i < j`` is
``value_i > value_j`` (comparing the floats' total order, so ``-0 < +0``):
``3 (6 + 36 + 120) = 486`` bits, packed least significant first.

Every bit is thus the sign of a linear functional of the level images:
:meth:`Model.cell_functionals` gives them for a patch of one unknown image per
keypoint, ``U = Lt_{e-1}`` (the level's input, resized at an octave change):
``Lx, Ly`` are exactly linear in ``U``; the nonlinear diffusion from ``U``
to ``Lt_e`` is replaced by the linear diffusion of the same time, a Gaussian
of :math:`\sigma_d = \sqrt{\sigma_e^2 - \sigma_{e-1}^2}` (exact at level 0,
where ``U = Lt_0`` and there is no diffusion).
"""

from __future__ import annotations

import math

import numpy as np

from lbdviewer.features.keypoints import Keypoints
from lbdviewer.libraries.akaze.operator import AkazePatchOperator
from lbdviewer.libraries.base import LibraryModel, gray_uint8
from lbdviewer.libraries.akaze.grid import N_CHANNELS, cell_corners, comparison_pairs, grid_cells
from lbdviewer.libraries.akaze.scale_space import DERIVATIVE_FACTOR, build_scale_space, level_sigmas

F32 = np.float32


def _cv2():
    import cv2

    return cv2


def _sortable(values):
    """float32 values as int32 keys of their total order (``CV_TOGGLE_FLT``): -0 sorts below +0."""
    bits = np.ascontiguousarray(values, dtype=F32).view(np.int32)
    return bits ^ ((bits >> 31) & np.int32(0x7FFFFFFF))


class Model(LibraryModel):
    """OpenCV's AKAZE with its default M-LDB descriptor (3 channels, all 486 bits).

    Parameters
    ----------
    n_octaves, n_sublevels : int
        ``nOctaves`` (4) and ``nOctaveLayers`` (4).
    threshold : float
        Detector threshold (0.001).

    Examples
    --------
    >>> m = Model()
    >>> m.n_bits, m.level_of(Keypoints([50.0, 50.0], [50.0, 50.0], [4.8, 11.416], [0.0, 0.0], [0, 1])).tolist()
    (486, [0, 5])
    """

    name = "akaze"
    bitorder = "little"
    tie_positive = False
    n_bits = 486

    def __init__(self, *, n_octaves=4, n_sublevels=4, threshold=0.001):
        if int(n_octaves) != n_octaves or not 1 <= n_octaves <= 8:
            raise ValueError(f"n_octaves must be an integer from 1 to 8, got {n_octaves!r}")
        if int(n_sublevels) != n_sublevels or not 1 <= n_sublevels <= 8:
            raise ValueError(f"n_sublevels must be an integer from 1 to 8, got {n_sublevels!r}")
        if not threshold > 0:
            raise ValueError(f"threshold must be positive, got {threshold!r}")
        self.n_octaves, self.n_sublevels, self.threshold = int(n_octaves), int(n_sublevels), float(threshold)

    def params(self):
        """Parameters as a JSON-ready dict."""
        return {"n_octaves": self.n_octaves, "n_sublevels": self.n_sublevels, "threshold": self.threshold}

    @staticmethod
    def library_version():
        return f"opencv {_cv2().__version__}"

    def _create(self, n_keypoints=None):
        cv2 = _cv2()
        akaze = cv2.xfeatures2d.AKAZE_create(threshold=self.threshold, nOctaves=self.n_octaves,
                                             nOctaveLayers=self.n_sublevels)
        if n_keypoints is not None:
            akaze.setMaxPoints(int(n_keypoints))
        return akaze

    def detect(self, image, *, n_keypoints=500):
        """AKAZE's own keypoints (Hessian extrema of the scale space), the strongest ``n_keypoints``."""
        return Keypoints.from_cv(self._create(n_keypoints).detect(gray_uint8(image), None))

    def level_of(self, keypoints):
        """Evolution level (OpenCV's ``class_id``) of each keypoint, from its octave and size.

        AKAZE sets ``size = 2 * 1.5 * sigma_e``; the level is the sublevel
        of the keypoint's octave whose size is nearest.
        """
        sizes = np.array([2.0 * float(F32(F32(e) * F32(DERIVATIVE_FACTOR)))
                          for _, _, e, _ in level_sigmas(self.n_octaves, self.n_sublevels, (10 ** 6, 10 ** 6))])
        sizes = sizes.reshape(self.n_octaves, self.n_sublevels)
        octave = np.asarray(keypoints.octave)
        if np.any(octave >= self.n_octaves):
            raise ValueError(f"keypoint octave must be below n_octaves={self.n_octaves}, got {octave.max()}")
        sub = np.argmin(np.abs(sizes[octave] - np.asarray(keypoints.size)[:, None]), axis=1)
        return octave * self.n_sublevels + sub

    def _to_cv(self, keypoints):
        cv2 = _cv2()
        levels = self.level_of(keypoints)
        return [cv2.KeyPoint(float(x), float(y), float(s), float(a), float(r), int(o), int(c))
                for x, y, s, a, r, o, c in zip(keypoints.x, keypoints.y, keypoints.size, keypoints.angle,
                                               keypoints.response, keypoints.octave, levels)]

    def _run_library(self, image, keypoints):
        """Describe with OpenCV; a keypoint whose level the image lacks is dropped."""
        levels = self.level_of(keypoints)
        available = len(level_sigmas(self.n_octaves, self.n_sublevels, np.shape(image)))
        index = np.flatnonzero(levels < available)
        kept = keypoints.take(index)
        kps, desc = self._create().compute(gray_uint8(image), self._to_cv(kept))
        if len(kps) != len(kept):
            raise RuntimeError(f"AKAZE described {len(kps)} of {len(kept)} keypoints")
        if desc is None:
            desc = np.zeros((0, (self.n_bits + 7) // 8), dtype=np.uint8)
        bits = np.unpackbits(desc, axis=1, count=self.n_bits, bitorder=self.bitorder).astype(np.int8) * 2 - 1
        return kept, bits, index

    def scale_space(self, image):
        """The evolution levels of :func:`~lbdviewer.libraries.akaze.scale_space.build_scale_space`."""
        return build_scale_space(gray_uint8(image), n_octaves=self.n_octaves, n_sublevels=self.n_sublevels)

    # -- geometry ---------------------------------------------------------------------------------------------

    def _frames(self, keypoints):
        """Per keypoint: level, ``(xf, yf)``, step ``s``, ``cos``, ``sin`` (float32, as the library)."""
        levels = self.level_of(keypoints)
        ratio = (1 << np.asarray(keypoints.octave)).astype(F32)
        scale = np.rint(F32(0.5) * keypoints.size.astype(F32) / ratio).astype(F32)
        xf = keypoints.x.astype(F32) / ratio
        yf = keypoints.y.astype(F32) / ratio
        angle = keypoints.angle.astype(F32) * F32(math.pi / float(F32(180.0)))
        co = np.cos(angle.astype(np.float64)).astype(F32)
        si = np.sin(angle.astype(np.float64)).astype(F32)
        return levels, xf, yf, scale, co, si

    def sample_grid(self, keypoints):
        """Every keypoint's rounded samples, in the library's order.

        Returns
        -------
        levels : ndarray of int, shape (K,)
        cells : ndarray of int, shape (S,)
            Cell of each sample (S = 1241 for the default pattern).
        rows, cols : ndarray of int, shape (K, S)
            Level position of each sample (may lie outside the level).
        co, si : ndarray of float32, shape (K,)
        """
        levels, xf, yf, scale, co, si = self._frames(keypoints)
        offsets = [(c, k, l) for c, (_, i0, j0, step) in enumerate(grid_cells())
                   for k in range(i0, i0 + step) for l in range(j0, j0 + step)]
        cells, k, l = (np.array(v) for v in zip(*offsets))
        k, l = k.astype(F32)[None, :], l.astype(F32)[None, :]
        c, s, sc = co[:, None], si[:, None], scale[:, None]
        sy = yf[:, None] + (l * c * sc + k * s * sc)
        sx = xf[:, None] + ((-l) * s * sc + k * c * sc)
        return levels, cells, np.rint(sy).astype(np.int64), np.rint(sx).astype(np.int64), co, si

    def cell_corners(self, keypoints):
        """Corners of every keypoint's cells in its level's pixels (:func:`~lbdviewer.libraries.akaze.grid.cell_corners`).

        Returns
        -------
        levels : ndarray of int, shape (K,)
        corners : ndarray, shape (K, 29, 4, 2)
            ``(x, y)`` level positions; :meth:`sample_grid` rounds the
            samples inside them.
        """
        levels, xf, yf, scale, co, si = self._frames(keypoints)
        corners = [cell_corners(float(x), float(y), float(s), float(c), float(n))
                   for x, y, s, c, n in zip(xf, yf, scale, co, si)]
        return levels, np.array(corners, dtype=np.float64).reshape(len(keypoints), len(grid_cells()), 4, 2)

    def cell_values(self, images, keypoints, *, exact=True):
        """The ``(K, 29, 3)`` cell means of ``(Lt, rotated derivatives)`` for every keypoint.

        Parameters
        ----------
        images : sequence of (lt, lx, ly) per level
        keypoints : Keypoints
        exact : bool
            float32 sums in the library's order (True), or float64 (the linear view).
        """
        dtype = F32 if exact else np.float64
        levels, cells, rows, cols, co, si = self.sample_grid(keypoints)
        n = len(keypoints)
        lt, lx, ly = (np.zeros((n, rows.shape[1]), dtype=dtype) for _ in range(3))
        inside = np.zeros(rows.shape, dtype=bool)
        for e in np.unique(levels):
            here = levels == e
            images_e = images[e]
            r, q = rows[here], cols[here]
            ok = (r >= 0) & (r < images_e[0].shape[0]) & (q >= 0) & (q < images_e[0].shape[1])
            r, q = np.where(ok, r, 0), np.where(ok, q, 0)
            inside[here] = ok
            for out, image in zip((lt, lx, ly), images_e):
                out[here] = np.where(ok, image[r, q], 0).astype(dtype)
        c, s = co.astype(dtype)[:, None], si.astype(dtype)[:, None]
        channels = (lt, (-lx) * s + ly * c, lx * c + ly * s)
        out = np.zeros((n, len(grid_cells()), N_CHANNELS), dtype=dtype)
        for cell in range(len(grid_cells())):
            columns = np.flatnonzero(cells == cell)
            count = inside[:, columns].sum(axis=1)
            inv = (dtype(1.0) / np.maximum(count, 1).astype(dtype)).astype(dtype)
            for channel, values in enumerate(channels):
                total = np.zeros(n, dtype=dtype)
                for column in columns:  # sequential sums, as the library adds
                    total = (total + values[:, column]).astype(dtype)
                out[:, cell, channel] = np.where(count > 0, total * inv, total)
        return out

    def model_bits(self, image, keypoints):
        """AKAZE's bits recomputed with our scale space and sampling: ``{-1, +1}``, shape (K, 486)."""
        space = self.scale_space(image)
        values = self.cell_values([(lv.lt, lv.lx, lv.ly) for lv in space], keypoints)
        keys = _sortable(values).reshape(len(keypoints), -1)
        pairs = comparison_pairs()
        return np.where(keys[:, pairs[:, 0]] > keys[:, pairs[:, 1]], 1, -1).astype(np.int8)

    def linear_bits(self, image, keypoints, *, fold_smoothing=True):
        """Bits of the linear view: signs of differences of float64 linear functionals.

        With ``fold_smoothing=False`` the functionals read the library's level
        images ``(Lt, Lx, Ly)`` (our rebuild) in float64; with True they read
        one image per keypoint, ``U = Lt_{e-1}``, through
        :meth:`cell_functionals` (diffusion replaced by a Gaussian).
        """
        space = self.scale_space(image)
        if not fold_smoothing:
            values = self.cell_values([(lv.lt, lv.lx, lv.ly) for lv in space], keypoints, exact=False)
        else:
            sources = self.source_images(image, space=space)  # one operator at a time: each holds its patch maps
            values = np.stack([op.cell_values(op.extract(sources[op.level]))
                               for op in self.iter_patch_operators(keypoints, image_shape=np.shape(image))])
        flat = values.reshape(len(keypoints), -1)
        pairs = comparison_pairs()
        return np.where(flat[:, pairs[:, 0]] - flat[:, pairs[:, 1]] > 0, 1, -1).astype(np.int8)

    # -- the linear view -----------------------------------------------------------------------------------------

    def source_images(self, image, *, space=None):
        """Per level, the image ``U_e`` the level's functionals read (``Lt_0``; ``Lt_{e-1}``, resized)."""
        cv2 = _cv2()
        space = self.scale_space(image) if space is None else space
        out = [space[0].lt.astype(np.float64)]
        for previous, level in zip(space[:-1], space[1:]):
            source = previous.lt
            if level.octave > previous.octave:
                source = cv2.resize(source, level.lt.shape[::-1], interpolation=cv2.INTER_AREA)
            out.append(source.astype(np.float64))
        return out

    def sampled_images(self, image):
        """Per level, ``Lt_e`` (what the intensity channel reads)."""
        return [lv.lt.astype(np.float64) for lv in self.scale_space(image)]

    def keypoint_patterns(self, keypoints, *, fold_smoothing=True):
        raise NotImplementedError("AKAZE's bits are not differences of box or Gaussian fields; "
                                  "use patch_operators")

    def patch_operators(self, keypoints, *, image_shape):
        """One :class:`~lbdviewer.libraries.akaze.operator.AkazePatchOperator` per keypoint."""
        return list(self.iter_patch_operators(keypoints, image_shape=image_shape))

    def iter_patch_operators(self, keypoints, *, image_shape):
        """:meth:`patch_operators` one at a time, so that a caller holds one (they are large) at once."""
        plan = level_sigmas(self.n_octaves, self.n_sublevels, tuple(image_shape))
        levels, cells, rows, cols, co, si = self.sample_grid(keypoints)
        for k in range(len(keypoints)):
            e = int(levels[k])
            octave, _, esigma, size = plan[e]
            diffusion = 0.0 if e == 0 else math.sqrt(max(esigma ** 2 - plan[e - 1][2] ** 2, 0.0))
            power = 1 << octave
            shape = (int(image_shape[0] / power), int(image_shape[1] / power))
            yield AkazePatchOperator(e, power, shape, cells, rows[k], cols[k], float(co[k]), float(si[k]), size,
                                     diffusion, smooth=e > 0)
