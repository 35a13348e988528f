"""Images in, PNG and JSON out, and the shipped sample images.

Every image leaves :func:`load_image` as a float64 array in ``[0, 1]`` with
shape ``(H, W)``: colour is converted to gray (ITU-R BT.601 weights, as
OpenCV's ``cvtColor``), 16-bit data keeps its precision, and an alpha channel
is composited over a white background. Writers go through a temporary file in
the destination folder and :func:`os.replace`, so an interrupted run never
leaves a half-written file behind.
"""

from __future__ import annotations

import json
import os
import platform
import tempfile
from importlib import metadata
from pathlib import Path

import cv2
import numpy as np

from lbdviewer import limits
from lbdviewer.limits import check_pixels, image_header_size

RESOURCES = Path(__file__).resolve().parent.parent / "resources"
SAMPLE_SUFFIX = ".png"
#: Distributions whose versions go into figure and export metadata.
VERSIONED = ("lbdviewer", "numpy", "scipy", "numba", "PyWavelets", "scikit-image",
             "opencv-contrib-python-headless", "PyQt6", "pyqtgraph", "superqt")
_GRAY_WEIGHTS = np.array([0.114, 0.587, 0.299])  # B, G, R as OpenCV stores them


def to_gray(array, *, name="image"):
    """Convert a decoded image array to a gray float image in ``[0, 1]``.

    Parameters
    ----------
    array : ndarray
        ``(H, W)``, ``(H, W, 1)``, ``(H, W, 2)`` (gray + alpha), ``(H, W, 3)``
        (BGR) or ``(H, W, 4)`` (BGRA); unsigned integers are scaled by their
        maximum value, floats are clipped to ``[0, 1]``, booleans map to 0/1.
    name : str
        What to call the array in error messages (e.g. the file name).

    Returns
    -------
    ndarray of float64, shape (H, W)

    Notes
    -----
    Gray is ``0.299 R + 0.587 G + 0.114 B``. With an alpha channel ``a`` the
    result is ``a * gray + (1 - a)``: transparent pixels become white.

    Examples
    --------
    >>> to_gray(np.array([[0, 65535]], dtype=np.uint16))
    array([[0., 1.]])
    >>> to_gray(np.zeros((1, 1, 4), dtype=np.uint8))  # fully transparent
    array([[1.]])
    """
    array = np.asarray(array)
    if array.dtype == bool:
        values = array.astype(np.float64)
    elif np.issubdtype(array.dtype, np.unsignedinteger):
        values = array.astype(np.float64) / np.iinfo(array.dtype).max
    elif np.issubdtype(array.dtype, np.floating):
        values = np.clip(np.nan_to_num(array.astype(np.float64)), 0.0, 1.0)
    else:
        raise ValueError(f"{name}: unsupported pixel type {array.dtype}")
    if values.ndim == 3 and values.shape[2] == 1:
        values = values[:, :, 0]
    if values.ndim == 2:
        gray, alpha = values, None
    elif values.ndim == 3 and values.shape[2] == 2:
        gray, alpha = values[:, :, 0], values[:, :, 1]
    elif values.ndim == 3 and values.shape[2] in (3, 4):
        gray = values[:, :, :3] @ _GRAY_WEIGHTS
        alpha = values[:, :, 3] if values.shape[2] == 4 else None
    else:
        raise ValueError(f"{name}: unsupported image shape {array.shape}")
    if alpha is not None:
        gray = alpha * gray + (1.0 - alpha)
    if gray.shape[0] < 1 or gray.shape[1] < 1:
        raise ValueError(f"{name}: empty image of shape {array.shape}")
    return np.ascontiguousarray(np.clip(gray, 0.0, 1.0))


def load_image(path, *, max_pixels=None):
    """Read a PNG, JPEG, TIFF, BMP or PNM file as a gray float image in ``[0, 1]``.

    The size the file's header declares is checked against the pixel limit
    before anything is decoded (:mod:`lbdviewer.limits`).

    Parameters
    ----------
    path : str or os.PathLike
        The image file.
    max_pixels : int, optional
        Largest ``height * width`` accepted; default
        :func:`lbdviewer.limits.max_pixels` (``$LBDVIEWER_MAX_PIXELS`` or
        12 M pixels).

    Returns
    -------
    ndarray of float64, shape (H, W)

    Raises
    ------
    ValueError
        If the file does not exist, is not a file, or cannot be decoded; the
        message names the file and the reason.
    lbdviewer.limits.ResourceLimitError
        If the header declares more pixels than ``max_pixels``.

    Examples
    --------
    >>> image = load_image(sample_images()["camera"])
    >>> image.shape, image.dtype, bool(0.0 <= image.min() <= image.max() <= 1.0)
    ((512, 512), dtype('float64'), True)
    """
    max_pixels = limits.max_pixels(max_pixels)
    path = Path(path)
    if not path.exists():
        raise ValueError(f"image file {str(path)!r} does not exist")
    if not path.is_file():
        raise ValueError(f"image file {str(path)!r} is not a file")
    data = np.fromfile(path, dtype=np.uint8)
    if data.size == 0:
        raise ValueError(f"image file {str(path)!r} is empty")
    header = image_header_size(data.tobytes())
    if header is None:
        raise ValueError(f"image file {str(path)!r} could not be decoded: not a PNG, JPEG, TIFF, BMP or PNM image "
                         "(or its header is cut short)")
    height, width, _ = header
    check_pixels(height, width, f"image file {str(path)!r}", limit=max_pixels)
    try:
        array = cv2.imdecode(data, cv2.IMREAD_UNCHANGED)
    except cv2.error as error:
        raise ValueError(f"image file {str(path)!r} could not be decoded: {error}") from None
    if array is None:
        raise ValueError(f"image file {str(path)!r} could not be decoded (truncated or corrupt)")
    # The decoder may read a size the header parser did not see (a TIFF's later directory).
    check_pixels(array.shape[0], array.shape[1], f"image file {str(path)!r}", limit=max_pixels)
    return to_gray(array, name=f"image file {str(path)!r}")


def atomic_write(path, data):
    """Write ``data`` (bytes) to ``path`` through a temporary file and a rename.

    A reader never sees a half-written file, and an interrupted write leaves
    the old file (or none) in place.

    Raises
    ------
    ValueError
        If the folder of ``path`` does not exist.
    """
    path = Path(path)
    directory = path.parent if str(path.parent) else Path(".")
    if not directory.is_dir():
        raise ValueError(f"output folder {str(directory)!r} does not exist")
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(handle, "wb") as file:
            file.write(data)
        _give_default_mode(temporary)
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise
    return path


def to_uint8(image):
    """Quantise a float image in ``[0, 1]`` to uint8 (values are clipped first).

    Examples
    --------
    >>> to_uint8(np.array([[0.0, 0.5, 2.0]]))
    array([[  0, 128, 255]], dtype=uint8)
    """
    return np.round(np.clip(np.asarray(image, dtype=np.float64), 0.0, 1.0) * 255.0).astype(np.uint8)


#: Encoders of :func:`encode_image`, by file suffix.
IMAGE_ENCODERS = {".png": ".png", ".jpg": ".jpg", ".jpeg": ".jpg", ".tif": ".tiff", ".tiff": ".tiff",
                  ".bmp": ".bmp"}


def encode_image(image, suffix=".png"):
    """The bytes of a float image in ``[0, 1]`` encoded as 8 bits in the format of ``suffix``.

    Parameters
    ----------
    image : ndarray, shape (H, W) or (H, W, 3)
        Gray, or colour in RGB order: floats in ``[0, 1]``, or uint8 written
        as they are.
    suffix : str
        One of :data:`IMAGE_ENCODERS` (case-insensitive); JPEG at quality 95.

    Returns
    -------
    bytes

    Raises
    ------
    ValueError
        If ``image`` has another shape or ``suffix`` is not an image format.

    Examples
    --------
    >>> encode_image(np.zeros((2, 2)))[:4]
    b'\\x89PNG'
    >>> encode_image(np.zeros((2, 2)), ".JPG")[:2]
    b'\\xff\\xd8'
    """
    image = np.asarray(image)
    if not (image.ndim == 2 or (image.ndim == 3 and image.shape[2] == 3)):
        raise ValueError(f"image must have shape (H, W) or (H, W, 3), got {image.shape}")
    kind = IMAGE_ENCODERS.get(suffix.lower())
    if kind is None:
        raise ValueError(f"cannot write an image as {suffix!r}; use one of {', '.join(IMAGE_ENCODERS)}")
    pixels = image if image.dtype == np.uint8 else to_uint8(image)
    if pixels.ndim == 3:
        pixels = pixels[:, :, ::-1]
    params = [cv2.IMWRITE_JPEG_QUALITY, 95] if kind == ".jpg" else []
    ok, encoded = cv2.imencode(kind, np.ascontiguousarray(pixels), params)
    if not ok:
        raise ValueError(f"could not encode an image as {suffix!r}")
    return encoded.tobytes()


def save_png(path, image):
    """Write a float image in ``[0, 1]`` as an 8-bit PNG, atomically.

    Parameters
    ----------
    path : str or os.PathLike
        Destination; its folder must exist. A name ending in another image
        format (``.jpg``, ``.tif``, ...) is refused: use :func:`save_image`.
    image : ndarray, shape (H, W) or (H, W, 3)
        Gray, or colour in RGB order: floats in ``[0, 1]``, or uint8 written
        as they are.

    Returns
    -------
    pathlib.Path

    Raises
    ------
    ValueError
        If ``image`` has another shape, the name ends in another image format
        or the folder does not exist.
    """
    suffix = Path(path).suffix.lower()
    if suffix in IMAGE_ENCODERS and suffix != ".png":
        raise ValueError(f"save_png would write PNG bytes under the name {str(path)!r}; use save_image")
    return atomic_write(path, encode_image(image, ".png"))


def save_image(path, image):
    """Write a float image in ``[0, 1]`` in the format its name's suffix says, atomically.

    See :func:`encode_image` for ``image`` and the formats.

    Returns
    -------
    pathlib.Path
    """
    return atomic_write(path, encode_image(image, Path(path).suffix or ".png"))


def atomic_write_all(files):
    """Write several files so that either all of them land or none does.

    Every file is first written in full to a temporary file beside it; then
    each existing destination is moved aside, the new files are renamed into
    place, and the old ones are deleted. If any step fails, the new files are
    removed and the old ones put back.

    Parameters
    ----------
    files : dict of path to bytes

    Raises
    ------
    ValueError
        If a destination folder does not exist or a destination is a folder.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     a, b = Path(folder, "a.png"), Path(folder, "a.json")
    ...     _ = atomic_write_all({a: b"png", b: b"{}"})
    ...     a.read_bytes(), b.read_bytes()
    (b'png', b'{}')
    """
    staged, placed, aside = [], [], []
    try:
        for path, data in files.items():
            path = Path(path)
            directory = path.parent if str(path.parent) else Path(".")
            if not directory.is_dir():
                raise ValueError(f"output folder {str(directory)!r} does not exist")
            if path.is_dir():
                raise ValueError(f"output {str(path)!r} is a folder")
            handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
            staged.append((temporary, path))
            with os.fdopen(handle, "wb") as file:
                file.write(data)
            _give_default_mode(temporary)
        for temporary, path in staged:
            if path.exists():
                backup = f"{temporary}.old"
                os.replace(path, backup)
                aside.append((backup, path))
            os.replace(temporary, path)
            placed.append(path)
    except BaseException:
        for path in placed:
            if os.path.exists(path):
                os.unlink(path)
        for backup, path in aside:
            os.replace(backup, path)
        for temporary, _ in staged:
            if os.path.exists(temporary):
                os.unlink(temporary)
        raise
    for backup, _ in aside:
        os.unlink(backup)
    return [path for _, path in staged]


def _give_default_mode(path):
    # mkstemp creates the file readable by its owner only; give it the
    # permissions any new file gets here.
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(path, 0o666 & ~umask)


def _json_default(value):
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"cannot write {type(value).__name__} to JSON")


def _undefined_reason(value):
    if np.isnan(value):
        return "not a number (undefined)"
    return "infinite" if value > 0 else "minus infinity"


def strict_json_data(data, *, reasons=None, path=""):
    """``data`` with every non-finite float replaced by ``None`` (strict JSON has no NaN).

    Numpy scalars and arrays become Python values first. Each replaced value's
    location (``"metrics/psnr"``) and why it is undefined are collected in
    ``reasons``; :func:`dumps_strict` writes them under the key ``"undefined"``.

    Examples
    --------
    >>> reasons = {}
    >>> strict_json_data({"psnr": float("inf"), "n": [1.0, float("nan")]}, reasons=reasons)
    {'psnr': None, 'n': [1.0, None]}
    >>> reasons
    {'psnr': 'infinite', 'n/1': 'not a number (undefined)'}
    """
    reasons = {} if reasons is None else reasons
    if isinstance(data, (np.generic, np.ndarray, Path)):
        data = _json_default(data)
    if isinstance(data, dict):
        return {key: strict_json_data(value, reasons=reasons, path=f"{path}/{key}" if path else str(key))
                for key, value in data.items()}
    if isinstance(data, (list, tuple)):
        return [strict_json_data(value, reasons=reasons, path=f"{path}/{i}" if path else str(i))
                for i, value in enumerate(data)]
    if isinstance(data, float) and not np.isfinite(data):
        reasons[path] = _undefined_reason(data)
        return None
    return data


def dumps_strict(data, *, indent=2):
    """JSON text of ``data`` that any strict parser reads: NaN and infinities become ``null``.

    Where values were replaced, a top-level ``"undefined"`` object names each one
    and why (merged with one the caller already gave, which wins).

    Examples
    --------
    >>> print(dumps_strict({"psnr": float("inf")}, indent=None))
    {"psnr": null, "undefined": {"psnr": "infinite"}}
    """
    reasons = {}
    clean = strict_json_data(data, reasons=reasons)
    if reasons and isinstance(clean, dict):
        clean["undefined"] = {**reasons, **(clean.get("undefined") or {})}
    return json.dumps(clean, indent=indent, sort_keys=indent is not None, allow_nan=False)


def json_bytes(data):
    """The bytes :func:`save_json` writes: indented strict JSON and a newline."""
    return (dumps_strict(data) + "\n").encode("utf-8")


def save_json(path, data):
    """Write ``data`` as indented strict JSON, atomically (see :func:`dumps_strict`).

    Returns
    -------
    pathlib.Path
    """
    return atomic_write(path, json_bytes(data))


def library_versions():
    """Versions of Python and of the installed libraries a result depends on (for JSON metadata).

    Examples
    --------
    >>> versions = library_versions()
    >>> "numpy" in versions and "python" in versions
    True
    """
    found = {"python": platform.python_version()}
    for name in VERSIONED:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = None
    return found


def sample_images():
    """The shipped sample images, as ``{name: path}``, sorted by name.

    The real photographs come from :mod:`skimage.data` (licences in
    ``resources/LICENSES.md``); the synthetic ones are made by
    ``scripts/make_samples.py``.

    Examples
    --------
    >>> sorted(sample_images())
    ['astronaut', 'book-titles', 'camera', 'document', 'shapes']
    """
    return {path.stem: path for path in sorted(RESOURCES.glob(f"*{SAMPLE_SUFFIX}"))}


def sample_image(name):
    """Load a shipped sample image by name (see :func:`sample_images`).

    Raises
    ------
    ValueError
        If there is no sample called ``name``.

    Examples
    --------
    >>> sample_image("shapes").shape
    (256, 256)
    """
    samples = sample_images()
    if name not in samples:
        raise ValueError(f"name must be one of {sorted(samples)}, got {name!r}")
    return load_image(samples[name])
