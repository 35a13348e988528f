r"""AKAZE's nonlinear scale space, rebuilt with our own code in float32.

OpenCV's AKAZE (``cv2.xfeatures2d.AKAZE_create``) describes a keypoint from
three images of one *evolution level* ``e = o * S + s`` (octave ``o``,
sublevel ``s`` of ``S``): the diffused image ``Lt_e`` and its derivatives
``Lx_e, Ly_e``. This module rebuilds them from a uint8 image:

1. ``I = image / 255`` (float32); level 0 is ``Lt_0 = G_{1.6} * I`` (9x9
   Gaussian, replicated border).
2. The contrast ``k`` is the 70 % percentile of the gradient norm
   ``|Scharr(G_1 * I)|`` (a 300-bin histogram of the non-border pixels,
   excluding its first bin); ``k`` shrinks by 0.75 at every new octave.
3. Level ``e > 0`` starts from ``Lt_{e-1}`` (halved with area averaging at a
   new octave), smooths it, ``Ls_e = G_1 * Lt_{e-1}`` (5x5, replicated
   border), and diffuses it with Perona–Malik conductivity
   ``g = 1 / (1 + |\nabla Ls_e|^2 / k^2)`` by Fast Explicit Diffusion up to
   the time :math:`t_e = \sigma_e^2 / 2`, :math:`\sigma_e = 1.6 \cdot
   2^{o + s / S}`:

   .. math:: L \leftarrow L + \frac{\tau_j}{2} \sum_{n \in \mathcal N_4}
             (g_p + g_n)(L_n - L_p)

   (zero flux across the border), with the FED step sizes
   :math:`\tau_j = \tfrac{\tau_{\max} r}{2 \cos^2(\pi (2j+1)/(4n+2))}` of
   :func:`fed_steps`, cyclically reordered.
4. ``Lx_e, Ly_e`` are scaled Scharr-like derivatives of ``Ls_e`` (of
   ``Lt_0`` at level 0) with kernel half-width ``w_e = round(1.5
   \sigma_e / 2^o)``: derivative ``[-1, 0 .. 0, 1]`` across, smoothing
   ``[1, 0 .. 10/3 .. 0, 1] / (2 w_e (2 + 10/3))`` along.

So ``Lt_e`` is a nonlinear function of the image, but ``Lx_e, Ly_e`` are
linear functions of ``Lt_{e-1}`` (resized at an octave change), and every
M-LDB bit compares two linear functionals of ``(Lt_e, Lx_e, Ly_e)``.

The recipe comes from reading the AKAZE paper and OpenCV's implementation;
the constants (1.6, 1.5, 0.7, 300 bins, 0.75, tau_max 0.25) are checked
against the installed library by :mod:`lbdviewer.libraries.akaze.model`'s
agreement, not copied as code.

References
----------
P. F. Alcantarilla, J. Nuevo, A. Bartoli. Fast explicit diffusion for
accelerated features in nonlinear scale spaces. BMVC 2013.
S. Grewenig, J. Weickert, A. Bruhn. From box filtering to fast explicit
diffusion. DAGM 2010.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

BASE_SIGMA = 1.6
DERIVATIVE_FACTOR = 1.5
CONTRAST_PERCENTILE = 0.7
CONTRAST_BINS = 300
CONTRAST_DECAY = 0.75
TAU_MAX = 0.25
SMOOTH_SIGMA = 1.0
MIN_OCTAVE_WIDTH, MIN_OCTAVE_HEIGHT = 80, 40
F32 = np.float32


def _cv2():
    import cv2

    return cv2


@dataclass(frozen=True, eq=False)
class Level:
    """One evolution level: ``Lt`` (diffused), ``Ls`` (its smoothed input), ``Lx``, ``Ly`` (float32)."""

    octave: int
    sublevel: int
    esigma: float
    sigma_size: int
    lt: np.ndarray
    ls: np.ndarray
    lx: np.ndarray
    ly: np.ndarray

    @property
    def ratio(self):
        """Size of a level pixel in image pixels, ``2 ** octave``."""
        return float(1 << self.octave)


def level_sigmas(n_octaves, n_sublevels, shape):
    """``(octave, sublevel, esigma, sigma_size)`` of every level an image of ``shape`` gets.

    Octaves stop early once a level would be narrower than 80 or lower than 40
    pixels (octave 0 is always kept).

    Examples
    --------
    >>> [(o, s, round(e, 3), w) for o, s, e, w in level_sigmas(2, 2, (100, 200))]
    [(0, 0, 1.6, 2), (0, 1, 2.263, 3), (1, 0, 3.2, 2), (1, 1, 4.525, 3)]
    """
    height, width = shape
    out = []
    for octave in range(n_octaves):
        power = 1 << octave
        if octave > 0 and (int(width / power) < MIN_OCTAVE_WIDTH or int(height / power) < MIN_OCTAVE_HEIGHT):
            break
        for sub in range(n_sublevels):
            esigma = float(F32(F32(BASE_SIGMA) * F32(2.0 ** float(F32(sub) / F32(n_sublevels) + F32(octave)))))
            sigma_size = int(np.rint(F32(esigma) * F32(DERIVATIVE_FACTOR) / F32(power)))
            out.append((octave, sub, esigma, sigma_size))
    return out


def fed_steps(time, *, tau_max=TAU_MAX):
    r"""Fast Explicit Diffusion step sizes reaching ``time`` in one cycle (float32).

    The least ``n`` with :math:`\tau_{\max} n (n+1) / 3 \ge t`, steps
    :math:`\tau_j = \frac{3t}{n(n+1)} \big/ \big(2\cos^2\frac{\pi(2j+1)}{4n+2}\big)`
    (they sum to ``t``), permuted by the cycle
    ``j -> ((l + 1) * (n // 2)) mod p - 1`` (``p`` the least prime above
    ``n``, indices ``>= n`` skipped) that keeps explicit FED stable in
    floating point.

    Examples
    --------
    >>> steps = fed_steps(1.0)
    >>> len(steps), round(float(steps.sum()), 5)
    (3, 1.0)
    """
    t = F32(time)
    n = int(math.ceil(float(np.sqrt(F32(3.0) * t / F32(tau_max) + F32(0.25)) - F32(0.5) - F32(1e-8))))
    if n <= 0:
        return np.zeros(0, dtype=F32)
    scale = F32(3.0) * t / (F32(tau_max) * F32(n * (n + 1)))
    c = F32(1.0) / (F32(4.0) * F32(n) + F32(2.0))
    d = scale * F32(tau_max) / F32(2.0)
    h = np.array([F32(math.cos(float(F32(math.pi) * (F32(2.0) * F32(k) + F32(1.0)) * c))) for k in range(n)])
    ordered = (d / (h * h)).astype(F32)
    kappa, prime = n // 2, n + 1
    while not _is_prime(prime):
        prime += 1
    out, k = [], 0
    while len(out) < n:
        index = ((k + 1) * kappa) % prime - 1
        k += 1
        if 0 <= index < n:
            out.append(ordered[index])
    return np.array(out, dtype=F32)


def _is_prime(number):
    return number > 1 and all(number % d for d in range(2, int(math.isqrt(number)) + 1))


def contrast_factor(image, *, percentile=CONTRAST_PERCENTILE, bins=CONTRAST_BINS):
    """The diffusion contrast ``k``: a percentile of the gradient norm of ``G_1 * image``.

    Parameters
    ----------
    image : ndarray of float32, shape (H, W)

    Returns
    -------
    float32

    Examples
    --------
    >>> round(float(contrast_factor(np.zeros((20, 20), np.float32))), 6)
    0.03
    """
    cv2 = _cv2()
    smooth = cv2.GaussianBlur(image, (5, 5), SMOOTH_SIGMA, sigmaY=SMOOTH_SIGMA, borderType=cv2.BORDER_REPLICATE)
    gx = cv2.Scharr(smooth, cv2.CV_32F, 1, 0)[1:-1, 1:-1]
    gy = cv2.Scharr(smooth, cv2.CV_32F, 0, 1)[1:-1, 1:-1]
    norm = np.sqrt(gx * gx + gy * gy).astype(F32)
    top = F32(norm.max()) if norm.size else F32(0.0)
    if top == 0:
        return F32(0.03)
    index = (norm * F32(F32(bins - 1) / top)).astype(np.int64).ravel()
    hist = np.bincount(index, minlength=bins)
    threshold = int((norm.size - hist[0]) * F32(percentile))
    counted = 0
    for k in range(1, bins):
        if counted >= threshold:
            return F32(top * F32(k) / F32(bins))
        counted += hist[k]
    return F32(0.03)


def diffusion_step(lt, conductivity, step):
    """One explicit step ``step * sum_n (g_p + g_n)(L_n - L_p)`` (zero flux at the border; corners of
    the first and last rows stay 0), float32 in the library's order of additions."""
    h, w = lt.shape
    lp = np.pad(lt, 1, mode="edge")
    gp = np.pad(conductivity, 1, mode="edge")
    c, g = lp[1:-1, 1:-1], gp[1:-1, 1:-1]
    right = (g + gp[1:-1, 2:]) * (lp[1:-1, 2:] - c)
    left = (g + gp[1:-1, :-2]) * (lp[1:-1, :-2] - c)
    below = (g + gp[2:, 1:-1]) * (lp[2:, 1:-1] - c)
    above = (g + gp[:-2, 1:-1]) * (lp[:-2, 1:-1] - c)
    out = (right + left + below + above) * F32(step)
    out[[0, 0, h - 1, h - 1], [0, w - 1, 0, w - 1]] = 0.0
    return out.astype(F32)


def derivative_kernels(order_x, order_y, size):
    """Separable kernels ``(kx, ky)`` of AKAZE's scaled derivative of half-width ``size`` (float32).

    Examples
    --------
    >>> kx, ky = derivative_kernels(1, 0, 2)
    >>> kx.tolist(), [round(v, 4) for v in ky.tolist()]
    ([-1.0, 0.0, 0.0, 0.0, 1.0], [0.0469, 0.0, 0.1563, 0.0, 0.0469])
    """
    if size == 1:
        kx, ky = _cv2().getDerivKernels(order_x, order_y, -1, normalize=True, ktype=_cv2().CV_32F)
        return kx.ravel().astype(F32), ky.ravel().astype(F32)
    ksize = 2 * size + 1
    w = F32(10.0) / F32(3.0)
    norm = F32(1.0) / (F32(2.0) * F32(size) * (w + F32(2.0)))

    def one(order):
        kernel = np.zeros(ksize, dtype=F32)
        if order == 0:
            kernel[[0, ksize - 1]], kernel[size] = norm, w * norm
        else:
            kernel[0], kernel[-1] = -1.0, 1.0
        return kernel

    return one(order_x), one(order_y)


def derivatives(smoothed, size):
    """``(Lx, Ly)`` of a smoothed level: :func:`derivative_kernels` by ``sepFilter2D`` (reflect-101)."""
    cv2 = _cv2()
    kx, ky = derivative_kernels(1, 0, size)
    lx = cv2.sepFilter2D(smoothed, cv2.CV_32F, kx, ky)
    kx, ky = derivative_kernels(0, 1, size)
    ly = cv2.sepFilter2D(smoothed, cv2.CV_32F, kx, ky)
    return lx, ly


def build_scale_space(image, *, n_octaves=4, n_sublevels=4):
    """AKAZE's evolution of a uint8 gray image (see the module notes).

    Parameters
    ----------
    image : ndarray of uint8, shape (H, W)
    n_octaves, n_sublevels : int
        AKAZE's ``nOctaves`` and ``nOctaveLayers``.

    Returns
    -------
    list of Level

    Examples
    --------
    >>> levels = build_scale_space(np.full((48, 96), 128, np.uint8), n_octaves=2, n_sublevels=2)
    >>> len(levels), levels[-1].lt.shape, bool(abs(levels[-1].lt[5, 5] - 128 / 255) < 1e-6)
    (2, (48, 96), True)
    """
    cv2 = _cv2()
    image = np.asarray(image)
    if image.ndim != 2 or image.dtype != np.uint8:
        raise ValueError(f"image must be a 2-D uint8 array, got {image.dtype} {image.shape}")
    gray = (image.astype(F32) * F32(1.0 / 255.0)).astype(F32)
    plan = level_sigmas(n_octaves, n_sublevels, image.shape)
    ksize = int(math.ceil(2.0 * (1.0 + (BASE_SIGMA - 0.8) / 0.3))) | 1
    sigma = float(F32(BASE_SIGMA))
    lt = cv2.GaussianBlur(gray, (ksize, ksize), sigma, sigmaY=sigma, borderType=cv2.BORDER_REPLICATE)
    octave, sub, esigma, size = plan[0]
    lx, ly = derivatives(lt, size)
    levels = [Level(octave, sub, esigma, size, lt, lt, lx, ly)]
    kcontrast = contrast_factor(gray)
    for octave, sub, esigma, size in plan[1:]:
        previous = levels[-1]
        lt = previous.lt
        if octave > previous.octave:
            power = 1 << octave
            shape = (int(image.shape[1] / power), int(image.shape[0] / power))
            lt = cv2.resize(lt, shape, interpolation=cv2.INTER_AREA)
            kcontrast = F32(kcontrast * F32(CONTRAST_DECAY))
        smoothed = cv2.GaussianBlur(lt, (5, 5), SMOOTH_SIGMA, sigmaY=SMOOTH_SIGMA, borderType=cv2.BORDER_REPLICATE)
        gx = cv2.Scharr(smoothed, cv2.CV_32F, 1, 0)
        gy = cv2.Scharr(smoothed, cv2.CV_32F, 0, 1)
        inv = F32(1.0) / (kcontrast * kcontrast)
        conductivity = (F32(1.0) / (F32(1.0) + (gx * gx + gy * gy) * inv)).astype(F32)
        time = F32(0.5) * F32(esigma) * F32(esigma) - F32(0.5) * F32(previous.esigma) * F32(previous.esigma)
        lt = lt.copy()
        for tau in fed_steps(time):
            lt = (lt + diffusion_step(lt, conductivity, F32(tau) * F32(0.5))).astype(F32)
        lx, ly = derivatives(smoothed, size)
        levels.append(Level(octave, sub, esigma, size, lt, smoothed, lx, ly))
    return levels
