"""Write keypoints and descriptors as OpenCV's ``cv::FileStorage`` writes them (YAML, XML, JSON).

The layout is OpenCV's own (``cv2.FileStorage`` reads the files back), with the
top-level nodes lbdviewer adds so that nothing is lost: ``descriptor``,
``image_width``, ``image_height``, ``n_bits``, ``bitorder`` and ``params``
(see :mod:`lbdviewer.features.filestorage.reader`).
"""

from __future__ import annotations

import json
import os
import re
from xml.sax.saxutils import escape

import numpy as np

from lbdviewer.features.filestorage.parser import FORMATS, SUFFIXES, format_of
from lbdviewer.features.keypoints import FORMAT, VERSION, validate
from lbdviewer.io.files import atomic_write
from lbdviewer.io.strict_json import dumps_strict

__all__ = ["dumps", "save"]


def _rows(tokens, per_line, indent, separator):
    lines = [separator.join(tokens[i:i + per_line]) for i in range(0, len(tokens), per_line)]
    return (separator.rstrip() + "\n" + " " * indent).join(lines)


def _content(features):
    """Header items (key, str or int) and the keypoint and descriptor tokens of ``features``."""
    kp = features.keypoints
    keypoint_tokens = []
    for x, y, size, angle, response, octave in zip(kp.x, kp.y, kp.size, kp.angle, kp.response, kp.octave):
        keypoint_tokens += [repr(float(x)), repr(float(y)), repr(float(size)), repr(float(angle)),
                            repr(float(response)), str(int(octave)), "-1"]
    header = [("format", FORMAT), ("version", VERSION), ("descriptor", features.descriptor),
              ("image_width", features.image_shape[1]), ("image_height", features.image_shape[0]),
              ("n_bits", int(features.n_bits)), ("bitorder", features.bitorder),
              ("params", json.dumps(features.params, sort_keys=True))]
    codes = np.ascontiguousarray(features.descriptors, dtype=np.uint8)
    return header, keypoint_tokens, codes


def _quoted(value, quote):
    """``value`` as OpenCV writes it: identifiers and numbers plain, other strings by ``quote``."""
    if not isinstance(value, str) or re.fullmatch(r"[A-Za-z_][\w.\-]*", value):
        return str(value)
    return quote(value)


def dumps(features, fmt):
    """The text of a FileStorage file holding ``features``, in OpenCV's own layout.

    ``cv2.FileStorage`` reads it back (``getNode("descriptors").mat()``), and
    :func:`load` restores ``features`` exactly (keypoint values are written
    with every digit of their float64).

    Parameters
    ----------
    features : FeatureSet
    fmt : {"yaml", "xml", "json"}

    Returns
    -------
    str

    Examples
    --------
    >>> from lbdviewer.features.keypoints import FeatureSet, Keypoints
    >>> fs = FeatureSet("orb", {}, (64, 64), Keypoints([32.0], [30.5]), np.arange(32, dtype=np.uint8)[None], 256,
    ...                 "little")
    >>> print(dumps(fs, "yaml").splitlines()[10])
    keypoints: [ 32.0, 30.5, 31.0, -1.0, 0.0, 0, -1 ]
    """
    header, keypoint_tokens, codes = _content(features)
    rows, cols = codes.shape
    data = [str(v) for v in codes.reshape(-1).tolist()]
    if fmt == "yaml":
        lines = ["%YAML:1.0", "---"]
        lines += [f"{key}: {_quoted(value, json.dumps)}" for key, value in header]
        lines.append(f"keypoints: [ {_rows(keypoint_tokens, 7, 4, ', ')} ]")
        lines += ["descriptors: !!opencv-matrix", f"   rows: {rows}", f"   cols: {cols}", "   dt: u",
                  f"   data: [ {_rows(data, 16, 7, ', ')} ]"]
        return "\n".join(lines) + "\n"
    if fmt == "xml":
        lines = ['<?xml version="1.0"?>', "<opencv_storage>"]
        quote = (lambda text: '"' + escape(text, {'"': "&quot;"}) + '"')
        lines += [f"<{key}>{_quoted(value, quote)}</{key}>" for key, value in header]
        lines.append(f"<keypoints>\n  {_rows(keypoint_tokens, 7, 2, ' ')}</keypoints>")
        lines += ['<descriptors type_id="opencv-matrix">', f"  <rows>{rows}</rows>", f"  <cols>{cols}</cols>",
                  "  <dt>u</dt>", f"  <data>\n    {_rows(data, 16, 4, ' ')}</data></descriptors>",
                  "</opencv_storage>"]
        return "\n".join(lines) + "\n"
    if fmt == "json":
        tree = dict(header)
        tree["keypoints"] = [float(t) if "." in t or "e" in t else int(t) for t in keypoint_tokens]
        tree["descriptors"] = {"type_id": "opencv-matrix", "rows": rows, "cols": cols, "dt": "u",
                               "data": codes.reshape(-1).tolist()}
        return dumps_strict(tree, indent=None) + "\n"
    raise ValueError(f"format must be one of {FORMATS}, got {fmt!r}")


def save(path, features, *, fmt=None):
    """Write ``features`` as a FileStorage file, atomically (:func:`lbdviewer.io.files.atomic_write`).

    Parameters
    ----------
    path : str or os.PathLike
    features : FeatureSet
    fmt : {"yaml", "xml", "json"}, optional
        Default: from the suffix of ``path`` (:data:`SUFFIXES`).

    Raises
    ------
    ValueError
        If ``fmt`` is not given and the suffix is not a FileStorage one, or
        ``fmt`` contradicts the suffix.
    """
    validate(features)
    suffix_format = format_of(path)
    if fmt is not None and suffix_format is not None and fmt != suffix_format:
        raise ValueError(f"format {fmt!r} contradicts the suffix of {os.fspath(path)!r} ({suffix_format})")
    fmt = fmt or suffix_format
    if fmt is None:
        raise ValueError(f"cannot tell the FileStorage format of {os.fspath(path)!r}: use a suffix of "
                         f"{tuple(SUFFIXES)}")
    return atomic_write(path, dumps(features, fmt).encode("utf-8"))
