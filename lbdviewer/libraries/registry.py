"""The one registry of library descriptors: their names and the modules that model them.

This module imports nothing of lbdviewer, so that a feature file can check its
descriptor's name (:mod:`lbdviewer.features.keypoints`) without loading the models;
:func:`get_model` imports a model on first use.
"""

from __future__ import annotations

import importlib

__all__ = ["DESCRIPTORS", "MODEL_MODULES", "get_model"]

#: Where each library descriptor's model lives (``module`` or ``module:class``; the class defaults to ``Model``).
MODEL_MODULES = {
    "orb": "lbdviewer.libraries.orb",
    "opencv-brief": "lbdviewer.libraries.opencv_brief",
    "opencv-freak": "lbdviewer.libraries.opencv_freak",
    "skimage-brief": "lbdviewer.libraries.skimage_brief",
    "beblid": "lbdviewer.libraries.blid",
    "teblid": "lbdviewer.libraries.blid:TeblidModel",
    "brisk": "lbdviewer.libraries.brisk",
    "akaze": "lbdviewer.libraries.akaze.model",
}
#: The library descriptors lbdviewer models bit for bit, in the order the app and the CLI list them.
DESCRIPTORS = tuple(MODEL_MODULES)


def get_model(name, **params):
    """The library model called ``name`` with its parameters.

    Parameters
    ----------
    name : str
        One of :data:`DESCRIPTORS`.
    **params
        Keyword parameters of that model.

    Examples
    --------
    >>> get_model("opencv-brief", n_bytes=16).n_bits
    128
    """
    if name not in MODEL_MODULES:
        raise ValueError(f"descriptor must be one of {tuple(MODEL_MODULES)}, got {name!r}")
    module, _, attribute = MODEL_MODULES[name].partition(":")
    model = getattr(importlib.import_module(module), attribute or "Model")
    try:
        return model(**params)
    except TypeError as error:  # a parameter the model does not take, e.g. from a feature file
        raise ValueError(f"{name} parameters {params!r} do not fit the model: {error}") from error
