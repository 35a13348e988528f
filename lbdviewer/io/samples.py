"""The sample images shipped in ``resources/``: names and loading."""

from __future__ import annotations

from pathlib import Path

from lbdviewer.io.images import load_image

__all__ = ["RESOURCES", "sample_image", "sample_images"]

#: The folder of the shipped sample images (``resources/`` beside the package).
RESOURCES = Path(__file__).resolve().parents[2] / "resources"
SAMPLE_SUFFIX = ".png"


def sample_images():
    """The shipped sample images, as ``{name: path}``, sorted by name.

    The real photographs come from :mod:`skimage.data` (licences in
    ``resources/LICENSES.md``); the synthetic ones are made by
    ``scripts/make_samples.py``.

    Examples
    --------
    >>> sorted(sample_images())
    ['astronaut', 'book-titles', 'camera', 'dark-screen', 'document', 'faces', 'plate', 'receipt', 'shapes', 'whiteboard']
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
