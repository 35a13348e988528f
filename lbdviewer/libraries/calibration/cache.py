"""Recover a library's comparison table by running the library itself.

Every descriptor modelled in :mod:`lbdviewer.patterns` computes bit ``k`` as
the comparison of two measurements, ``v[a_k] > v[b_k]`` (or ``>=``), where
``v`` are values we can compute ourselves (smoothed pixels, box sums, field
means). Rather than copying a library's pattern table, we *calibrate*: run the
installed library on random images at keypoints we control, compute every
candidate measurement ``v`` for each sample, and for each output bit find the
one ordered pair ``(a, b)`` that predicts the bit on every sample.

Results are cached as ``.npz`` files (``allow_pickle=False``) under
:func:`cache_dir`, keyed by the caller (library name, version, parameters).
An entry cannot lie: it holds its own key (an entry copied under another
descriptor's or parameters' name is foreign), a checksum, and a probe (the
library's bits on a fixed synthetic image) that :func:`cached_arrays`
verifies on every load; only a regular file of at most
:data:`MAX_ENTRY_BYTES`, whose zip directory declares no more, is read.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
import warnings
import zipfile
from pathlib import Path

import numpy as np

from lbdviewer.features.npz import save_npz
from lbdviewer.io.files import open_regular

CACHE_ENV = "LBDVIEWER_CACHE_DIR"


class CalibrationError(ValueError):
    """The library's bits are not explained by any pair of measurements."""


def cache_dir():
    """Directory holding calibration tables.

    ``$LBDVIEWER_CACHE_DIR`` if set, else ``$XDG_CACHE_HOME/lbdviewer``, else
    ``~/.cache/lbdviewer``.

    Examples
    --------
    >>> isinstance(cache_dir(), Path)
    True
    """
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "lbdviewer"


def cache_key(*parts):
    """A file-name-safe key from ``parts``.

    Examples
    --------
    >>> cache_key("orb", "5.0.0", ("patch_size", 31))
    'orb-5.0.0-patch_size-31'
    """
    text = "-".join(str(p) if not isinstance(p, tuple) else "-".join(map(str, p)) for p in parts)
    return re.sub(r"[^A-Za-z0-9_.=+-]", "_", text)


class CacheWarning(UserWarning):
    """A calibration cache entry was bad and recomputed, or the cache folder is not writable."""


CHECKSUM_KEY = "__sha256__"
PROBE_KEY = "__probe__"
#: The entry's own key, stored inside it and compared on load.
KEY_KEY = "__key__"
#: Largest cache entry read (bytes, on disk and declared uncompressed); the largest real one is ~20 KB.
MAX_ENTRY_BYTES = 8 * 2**20
#: Most members an entry may hold.
MAX_ENTRY_MEMBERS = 32


def arrays_checksum(arrays):
    """SHA-256 over the names, dtypes, shapes and bytes of ``arrays``, as 32 uint8.

    Examples
    --------
    >>> a = arrays_checksum({"x": np.arange(3)})
    >>> a.shape, bool((a == arrays_checksum({"x": np.arange(3)})).all())
    ((32,), True)
    >>> bool((a == arrays_checksum({"x": np.arange(3)[::-1]})).all())
    False
    """
    digest = hashlib.sha256()
    for name in sorted(arrays):
        value = np.ascontiguousarray(arrays[name])
        digest.update(f"{name}|{value.dtype.str}|{value.shape}|".encode())
        digest.update(value.tobytes())
    return np.frombuffer(digest.digest(), dtype=np.uint8).copy()


def _fallback_dir():
    return Path(tempfile.gettempdir()) / f"lbdviewer-cache-{os.getuid() if hasattr(os, 'getuid') else 'user'}"


def _read_entry(path, key):
    """The arrays of a cache file (key, checksum and probe checked later), or None and what is wrong with it.

    Only a regular file of at most :data:`MAX_ENTRY_BYTES` is opened (a FIFO, a device or a symbolic link to
    one is refused before it is opened), and only if its zip directory declares no more than that
    uncompressed: a zip bomb is refused before anything is inflated.
    """
    try:
        with open_regular(path, "calibration cache entry", max_bytes=MAX_ENTRY_BYTES) as handle:
            with zipfile.ZipFile(handle) as archive:
                members = archive.infolist()
                declared = sum(info.file_size for info in members)
                if len(members) > MAX_ENTRY_MEMBERS or declared > MAX_ENTRY_BYTES:
                    return None, (f"declares {len(members)} members of {declared:,} bytes, more than an entry "
                                  f"holds ({MAX_ENTRY_BYTES:,})")
            handle.seek(0)
            with np.load(handle, allow_pickle=False) as data:
                stored = {name: data[name] for name in data.files}
    except (OSError, ValueError, EOFError, zipfile.BadZipFile, KeyError, RuntimeError) as error:
        return None, f"is unreadable ({type(error).__name__}: {error})"
    checksum = stored.pop(CHECKSUM_KEY, None)
    if checksum is not None and not np.array_equal(checksum, arrays_checksum(stored)):
        return None, "fails its checksum"
    own_key = stored.pop(KEY_KEY, None)
    if own_key is None:  # written before entries held their key: the probe alone vouches for it
        return stored, None
    if own_key.dtype.kind != "U" or own_key.shape != () or str(own_key) != key:
        return None, f"holds the calibration of {str(own_key)!r}, not of {key!r}"
    return stored, None


def _probe_problem(arrays, recorded, probe):
    library, predicted = (np.asarray(bits, dtype=bool) for bits in probe(arrays))
    if recorded is None or recorded.shape != library.shape or not np.array_equal(recorded, library):
        return "was recorded for other library bits on the probe image"
    if predicted.shape != library.shape or not np.array_equal(predicted, library):
        share = float(np.mean(predicted == library)) if predicted.shape == library.shape else 0.0
        return f"predicts {100 * share:.1f} % of the library's bits on the probe image, not all"
    return None


def cached_arrays(key, compute, *, probe=None):
    """Return the arrays stored under ``key``, computing and caching them once.

    Each entry holds its own ``key``, a checksum of its arrays and, with
    ``probe``, the library's bits on a fixed synthetic image (the *probe*).
    On load all are verified: the key against ``key`` (an entry copied under
    another descriptor's or parameters' name is foreign), the checksum
    against the arrays, and ``probe(arrays)`` must give the recorded library
    bits and predict them exactly. What is not a regular file of at most
    :data:`MAX_ENTRY_BYTES` is never opened. A truncated, bit-flipped,
    foreign, oversized or well-formed but wrong entry (pairs permuted, the
    checksum recomputed) is recomputed, rewritten atomically and reported
    in one line (a :class:`CacheWarning`). A cache folder that cannot be
    written falls back to a temporary one (with a warning).

    Parameters
    ----------
    key : str
        Cache key (see :func:`cache_key`).
    compute : callable
        ``compute() -> dict[str, ndarray]`` (numeric arrays only).
    probe : callable, optional
        ``probe(arrays) -> (library_bits, predicted_bits)``: boolean arrays of
        one shape, the installed library's bits on a fixed synthetic image and
        the bits ``arrays`` predict for it.

    Returns
    -------
    dict of str to ndarray

    Raises
    ------
    CalibrationError
        If freshly computed arrays do not predict the probe's bits.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     os.environ[CACHE_ENV] = folder
    ...     first = cached_arrays("toy", lambda: {"x": np.arange(3)})
    ...     again = cached_arrays("toy", lambda: {"x": np.zeros(3)})  # read back, not recomputed
    ...     del os.environ[CACHE_ENV]
    >>> again["x"].tolist()
    [0, 1, 2]
    """
    path = cache_dir() / f"{key}.npz"
    fallback = _fallback_dir() / path.name
    if not path.exists() and fallback.exists():  # an earlier run could not write the cache folder
        path = fallback
    if os.path.lexists(path):
        stored, problem = _read_entry(path, key)
        if stored is not None and PROBE_KEY not in stored and probe is not None:  # an older lbdviewer's entry
            problem = _probe_problem(stored, probe(stored)[0], probe)
            if problem is None:  # it predicts the library: kept, bound to its key from now on
                _store(cache_dir() / path.name, _entry(key, stored, probe))
                return stored
        elif stored is not None:
            recorded = stored.pop(PROBE_KEY, None)
            problem = None if probe is None else _probe_problem(stored, recorded, probe)
            if problem is None:
                return stored
        warnings.warn(f"calibration cache entry {str(path)!r} {problem}; recomputing it", CacheWarning,
                      stacklevel=2)
    arrays = {name: np.asarray(value) for name, value in compute().items()}
    _store(cache_dir() / path.name, _entry(key, arrays, probe))
    return arrays


def _entry(key, arrays, probe):
    """``arrays`` with the probe's library bits and the checksum, as stored."""
    entry = {**arrays, KEY_KEY: np.array(key)}
    if probe is not None:
        library, predicted = (np.asarray(bits, dtype=bool) for bits in probe(arrays))
        if predicted.shape != library.shape or not np.array_equal(predicted, library):
            raise CalibrationError(f"calibration {key!r} does not predict the library's bits on the probe image")
        entry[PROBE_KEY] = library
    entry[CHECKSUM_KEY] = arrays_checksum(entry)
    return entry


def _store(path, entry):
    try:
        path.parent.mkdir(parents=True, exist_ok=True)  # a link or FIFO in the entry's place is renamed over
        save_npz(path, entry)
    except (OSError, ValueError) as error:
        fallback = _fallback_dir() / path.name
        warnings.warn(f"calibration cache folder {str(path.parent)!r} is not writable ({error}); "
                      f"using {str(fallback.parent)!r} (set ${CACHE_ENV} to choose another)", CacheWarning,
                      stacklevel=3)
        fallback.parent.mkdir(parents=True, exist_ok=True)
        save_npz(fallback, entry)


def point_pair_probe(describe, smooth, *, margin, tie_positive=False, size=None, step=5, rng=20261126):
    """The probe of a point-pair calibration (see :func:`cached_arrays`).

    The library describes a fixed noise image at a small grid of keypoints;
    the calibrated offsets predict the same bits from ``smooth(image)``.

    Parameters
    ----------
    describe, smooth, margin, tie_positive
        As for :func:`calibrate_point_pairs`.
    size : int, optional
        Side of the probe image (default ``2 margin + 3 step``).
    step, rng
        Keypoint spacing and the image's seed.

    Returns
    -------
    callable
        ``probe(arrays) -> (library_bits, predicted_bits)`` for arrays holding
        ``"pairs"`` of shape ``(M, 2, 2)``.
    """
    size = 2 * margin + 3 * step if size is None else size
    image = np.random.default_rng(rng).integers(0, 256, (size, size), dtype=np.uint8)
    grid = np.arange(margin, size - margin, step)
    xs, ys = (g.ravel() for g in np.meshgrid(grid, grid))
    centers = np.stack([xs, ys], axis=1)
    compare = np.greater_equal if tie_positive else np.greater

    def probe(arrays):
        table = np.asarray(arrays["pairs"], dtype=np.int64)
        library = np.asarray(describe(image, centers), dtype=bool)
        smoothed = np.asarray(smooth(image), dtype=np.float64)
        pad = int(np.abs(table).max(initial=0)) + 1
        padded = np.pad(smoothed, pad, mode="reflect")
        a = padded[ys[:, None] + table[:, 0, 1] + pad, xs[:, None] + table[:, 0, 0] + pad]
        b = padded[ys[:, None] + table[:, 1, 1] + pad, xs[:, None] + table[:, 1, 0] + pad]
        return library, compare(a, b)

    return probe


def cached_point_pairs(key, describe, smooth, *, margin, **calibration):
    """The point pairs of a descriptor, calibrated once (:func:`calibrate_point_pairs`) and cached under ``key``.

    The entry is verified on every load by :func:`point_pair_probe` of the
    same ``describe`` and ``smooth`` (see :func:`cached_arrays`).

    Parameters
    ----------
    key : str
        :func:`cache_key` of the library, its version and the parameters.
    describe, smooth, margin
        As for :func:`calibrate_point_pairs`.
    **calibration
        The other arguments of :func:`calibrate_point_pairs` (``radius``, ...).

    Returns
    -------
    ndarray of int64, shape (M, 2, 2)
    """
    def compute():
        return {"pairs": calibrate_point_pairs(describe, smooth, margin=margin, **calibration)}

    probe = point_pair_probe(describe, smooth, margin=margin, tie_positive=calibration.get("tie_positive", False))
    return cached_arrays(key, compute, probe=probe)["pairs"].astype(np.int64)


def identify_pairs(values, bits, *, tie_positive=False, candidates=None, max_mismatch=0):
    r"""For each bit, the ordered pair of measurements that predicts it.

    Finds, for every column ``k`` of ``bits``, indices ``(a, b)`` with

    .. math:: \mathrm{bits}[s, k] = [\,v[s, a] - v[s, b] > 0\,]
              \quad (\ge 0 \text{ if } \mathtt{tie\_positive})

    for every sample ``s``.

    Parameters
    ----------
    values : ndarray, shape (S, F)
        Candidate measurements for each sample.
    bits : ndarray of bool, shape (S, M)
        The library's bits for the same samples.
    tie_positive : bool
        Whether an exact tie gives bit 1 (``>=``) or 0 (``>``).
    candidates : int, optional
        Exhaustive search over all ``F * (F - 1)`` ordered pairs when None
        (fine for F up to a few hundred). Otherwise only the ``candidates``
        measurements most correlated (positively for ``a``, negatively for
        ``b``) with each bit are tried.
    max_mismatch : int
        Number of samples a pair may mispredict (0: bit-exact).

    Returns
    -------
    ndarray of int, shape (M, 2)

    Raises
    ------
    CalibrationError
        If no pair predicts a bit within ``max_mismatch`` samples.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> v = rng.normal(size=(200, 5))
    >>> b = np.stack([v[:, 3] > v[:, 1], v[:, 0] > v[:, 4]], axis=1)
    >>> identify_pairs(v, b).tolist()
    [[3, 1], [0, 4]]
    """
    values = np.asarray(values, dtype=np.float64)
    bits = np.asarray(bits, dtype=bool)
    if values.ndim != 2 or bits.ndim != 2 or values.shape[0] != bits.shape[0]:
        raise ValueError(f"values (S, F) and bits (S, M) must share S, got {values.shape} and {bits.shape}")
    n_samples, n_values = values.shape
    compare = np.greater_equal if tie_positive else np.greater
    if candidates is None:
        first, second = np.nonzero(~np.eye(n_values, dtype=bool))
        pred = compare(values[:, first], values[:, second]).astype(np.float32)
        b = bits.astype(np.float32)
        agree = b.T @ pred + (1.0 - b).T @ (1.0 - pred)
        best = np.argmax(agree, axis=1)
        mismatches = n_samples - agree[np.arange(bits.shape[1]), best]
        if np.any(mismatches > max_mismatch):
            bad = int(np.argmax(mismatches > max_mismatch))
            raise CalibrationError(f"no pair of measurements predicts bit {bad} ({int(mismatches[bad])} mismatches)")
        return np.stack([first[best], second[best]], axis=1)
    std = values.std(axis=0)
    std[std == 0] = 1.0
    zscores = (values - values.mean(axis=0)) / std
    corr = zscores.T @ (2.0 * bits - 1.0) / n_samples
    order = np.argsort(corr, axis=0)
    pairs = np.empty((bits.shape[1], 2), dtype=np.int64)
    for k in range(bits.shape[1]):
        high = order[::-1, k][:candidates]
        low = order[:candidates, k]
        pred = compare(values[:, high][:, :, None], values[:, low][:, None, :])
        wrong = np.count_nonzero(pred != bits[:, k, None, None], axis=0)
        wrong[high[:, None] == low[None, :]] = n_samples + 1
        i, j = np.unravel_index(np.argmin(wrong), wrong.shape)
        if wrong[i, j] > max_mismatch:
            raise CalibrationError(f"no pair of measurements predicts bit {k} ({int(wrong[i, j])} mismatches)")
        pairs[k] = high[i], low[j]
    return pairs


def calibrate_point_pairs(describe, smooth, *, radius, margin, n_images=2, size=224, step=3, rng=0,
                          candidates=16, tie_positive=False, max_mismatch=0):
    """Identify a descriptor that compares pairs of (smoothed) pixels.

    Runs ``describe`` on random uint8 noise images at a grid of keypoints and
    matches each output bit against all pairs of offsets within ``radius`` of
    the keypoint in ``smooth(image)``.

    Parameters
    ----------
    describe : callable
        ``describe(image_uint8, centers_xy (K, 2) int) -> bits (K, M) bool``
        in the library's output bit order; must describe every centre.
    smooth : callable
        ``smooth(image_uint8) -> (H, W) array`` of the values the library compares.
    radius : int
        Offsets ``-radius..radius`` in x and y are candidates.
    margin : int
        Distance of the keypoint grid from the image border.
    n_images, size, step, rng
        Number and side of the noise images, grid step, random seed.
    candidates, tie_positive, max_mismatch
        See :func:`identify_pairs`.

    Returns
    -------
    ndarray of int, shape (M, 2, 2)
        ``out[k] = [[xa, ya], [xb, yb]]``: bit ``k`` is
        ``smooth[y + ya, x + xa] > smooth[y + yb, x + xb]``.
    """
    gen = np.random.default_rng(rng)
    offsets = np.arange(-radius, radius + 1)
    dy, dx = (grid.ravel() for grid in np.meshgrid(offsets, offsets, indexing="ij"))
    grid = np.arange(margin, size - margin, step)
    xs, ys = (g.ravel() for g in np.meshgrid(grid, grid))
    centers = np.stack([xs, ys], axis=1)
    all_values, all_bits = [], []
    for _ in range(n_images):
        image = gen.integers(0, 256, (size, size), dtype=np.uint8)
        all_bits.append(np.asarray(describe(image, centers), dtype=bool))
        smoothed = np.asarray(smooth(image), dtype=np.float64)
        all_values.append(smoothed[ys[:, None] + dy, xs[:, None] + dx])
    pairs = identify_pairs(np.concatenate(all_values), np.concatenate(all_bits), tie_positive=tie_positive,
                           candidates=candidates, max_mismatch=max_mismatch)
    return np.stack([np.stack([dx[pairs[:, 0]], dy[pairs[:, 0]]], 1),
                     np.stack([dx[pairs[:, 1]], dy[pairs[:, 1]]], 1)], axis=1)
