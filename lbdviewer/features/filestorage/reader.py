"""Read keypoints and descriptors from OpenCV's ``cv::FileStorage`` files (YAML, XML, JSON).

Programs built on OpenCV save features with ``cv::FileStorage``: ``cv::write``
stores a ``std::vector<cv::KeyPoint>`` as one flat sequence of seven numbers
per keypoint, ``x, y, size, angle, response, octave, class_id``, and the
descriptor ``cv::Mat`` as an ``opencv-matrix`` with ``rows``, ``cols``,
``dt`` (``u`` for 8-bit unsigned) and the row-major ``data``::

    %YAML:1.0
    ---
    keypoints: [ 68., 84., 31., 98.50, 2.29e-03, 0, -1 ]
    descriptors: !!opencv-matrix
       rows: 1
       cols: 32
       dt: u
       data: [ 18, 211, 231, ... ]

The top-level nodes ``keypoints`` and ``descriptors`` are read (a sequence of
seven-number sequences is accepted for ``keypoints`` too). What OpenCV does
not store comes from the optional top-level nodes lbdviewer writes
(``descriptor``, ``image_width``, ``image_height``, ``n_bits``, ``bitorder``,
``params`` as a JSON string), otherwise from the caller (``--descriptor``,
``--image-size``); the bit count and order are then the descriptor model's.

The parsers (:mod:`lbdviewer.features.filestorage.parser`) are our own, for the subset
OpenCV writes: no pickle, no ``eval``, no YAML anchors or aliases, no XML
entities. Sizes are checked before anything is allocated: the file
(:data:`~lbdviewer.features.filestorage.parser.MAX_FILE_BYTES`), the keypoint count
(:data:`MAX_KEYPOINTS`), ``rows x cols`` (:data:`MAX_DESCRIPTOR_BYTES`) against
the data actually present.
"""

from __future__ import annotations

import json
import os

import numpy as np

from lbdviewer.features.filestorage.parser import read_tree
from lbdviewer.features.keypoints import FORMAT, VERSION, FeatureSet, Keypoints
from lbdviewer.io.limits import check_keypoints, check_pixels
from lbdviewer.libraries.registry import DESCRIPTORS, get_model

__all__ = ["CV_KEYPOINT_FIELDS", "MAX_DESCRIPTOR_BYTES", "MAX_KEYPOINTS", "keypoint_table", "load", "matrix"]

#: Most keypoints (descriptor rows) a FileStorage file may declare.
MAX_KEYPOINTS = 250_000
#: Widest descriptor (bytes a row) a FileStorage file may declare.
MAX_DESCRIPTOR_BYTES = 1024
#: What ``cv::write`` stores per keypoint, in order.
CV_KEYPOINT_FIELDS = ("x", "y", "size", "angle", "response", "octave", "class_id")
#: ``dt`` codes of one-channel matrices (OpenCV's type letters).
DT_CODES = {"u": np.uint8, "c": np.int8, "w": np.uint16, "s": np.int16, "i": np.int32, "f": np.float32,
            "d": np.float64}


def _number_list(values, what):
    if not isinstance(values, list) or not all(type(v) in (int, float) for v in values):
        raise ValueError(f"{what} must be a sequence of numbers")
    return values


def matrix(node, what):
    """An ``opencv-matrix`` node as an array, its declared size checked before allocation.

    Parameters
    ----------
    node : dict
        With ``rows``, ``cols``, ``dt`` and ``data``.
    what : str
        The node's name, for messages.

    Returns
    -------
    ndarray, shape (rows, cols)

    Raises
    ------
    ValueError
        For a missing item, an unknown or multi-channel ``dt``, sizes beyond
        :data:`MAX_KEYPOINTS` x :data:`MAX_DESCRIPTOR_BYTES`, or a data count
        other than ``rows x cols``.

    Examples
    --------
    >>> matrix({"type_id": "opencv-matrix", "rows": 1, "cols": 2, "dt": "u", "data": [3, 4]}, "m").tolist()
    [[3, 4]]
    """
    if not isinstance(node, dict) or node.get("type_id") != "opencv-matrix":
        raise ValueError(f"{what!r} must be an opencv-matrix (rows, cols, dt, data), got {type(node).__name__}")
    for key in ("rows", "cols", "dt", "data"):
        if key not in node:
            raise ValueError(f"{what!r} matrix is missing {key!r}")
    rows, cols, dt = node["rows"], node["cols"], node["dt"]
    for key, value, limit in (("rows", rows, MAX_KEYPOINTS), ("cols", cols, MAX_DESCRIPTOR_BYTES)):
        if type(value) is not int or not 0 <= value <= limit:
            raise ValueError(f"{what!r} {key} must be an integer in [0, {limit}], got {value!r}")
    if dt not in DT_CODES:
        raise ValueError(f"{what!r} dt {dt!r} is not a one-channel OpenCV type; expected one of {tuple(DT_CODES)}")
    data = node["data"]
    data = [data] if type(data) in (int, float) else ([] if data is None else data)
    if not isinstance(data, list) or len(data) != rows * cols:
        count = len(data) if isinstance(data, list) else type(data).__name__
        raise ValueError(f"{what!r} declares {rows} x {cols} = {rows * cols} values but holds {count}")
    _number_list(data, f"{what!r} data")
    kind = np.dtype(DT_CODES[dt])
    values = np.array(data, dtype=np.float64)
    if kind.kind in "iu":
        info = np.iinfo(kind)
        if np.any(values != np.round(values)) or np.any(values < info.min) or np.any(values > info.max):
            raise ValueError(f"{what!r} data do not fit dt {dt!r} ({kind})")
    return values.astype(kind).reshape(rows, cols)


def keypoint_table(node, what="keypoints"):
    """The ``(K, 7)`` table of ``cv::write``'s keypoints (see :data:`CV_KEYPOINT_FIELDS`).

    Examples
    --------
    >>> keypoint_table([68.0, 84.0, 31.0, 98.5, 0.002, 0, -1]).shape
    (1, 7)
    """
    width = len(CV_KEYPOINT_FIELDS)
    if node is None:
        node = []
    if isinstance(node, list) and node and all(isinstance(item, list) for item in node):
        if len(node) > MAX_KEYPOINTS:
            raise ValueError(f"{what!r} holds {len(node)} keypoints, more than {MAX_KEYPOINTS}")
        if any(len(item) != width for item in node):
            raise ValueError(f"every keypoint in {what!r} must have {width} values {CV_KEYPOINT_FIELDS}")
        node = [value for item in node for value in item]
    if type(node) in (int, float):
        node = [node]
    _number_list(node, f"{what!r}")
    if len(node) % width:
        raise ValueError(f"{what!r} holds {len(node)} numbers, not a multiple of {width} "
                         f"({', '.join(CV_KEYPOINT_FIELDS)} per keypoint): truncated?")
    if len(node) // width > MAX_KEYPOINTS:
        raise ValueError(f"{what!r} holds {len(node) // width} keypoints, more than {MAX_KEYPOINTS}")
    return np.array(node, dtype=np.float64).reshape(-1, width)


def _text_node(tree, key, name):
    value = tree.get(key)
    if value is not None and not isinstance(value, str):
        raise ValueError(f"FileStorage file {name!r}: {key!r} must be a string, got {value!r}")
    return value


def _int_node(tree, key, name, default):
    value = tree.get(key, default)
    if type(value) is not int or value < 1:
        raise ValueError(f"FileStorage file {name!r}: {key!r} must be a positive integer, got {value!r}")
    return value


def one_of(first, second, *, missing, conflict):
    """``first``, or ``second`` when ``first`` is None: two sources of one setting that must agree.

    Raises
    ------
    ValueError
        With ``missing`` when both are None, with ``conflict`` when both are
        given and differ.

    Examples
    --------
    >>> one_of(None, "orb", missing="say which", conflict="they differ")
    'orb'
    >>> one_of("orb", "freak", missing="say which", conflict="they differ")
    Traceback (most recent call last):
    ...
    ValueError: they differ
    """
    if first is None:
        if second is None:
            raise ValueError(missing)
        return second
    if second is not None and first != second:
        raise ValueError(conflict)
    return first


def load(path, *, descriptor=None, image_shape=None, max_pixels=None, max_keypoints=None):
    """Read keypoints and descriptors from a FileStorage file as a :class:`~lbdviewer.features.keypoints.FeatureSet`.

    Parameters
    ----------
    path : str or os.PathLike
        ``.yml``, ``.yaml``, ``.xml`` or ``.json`` with top-level nodes
        ``keypoints`` and ``descriptors`` (see the module notes).
    descriptor : str, optional
        The descriptor that wrote the file, when the file does not say
        (a file that says otherwise is an error).
    image_shape : (int, int), optional
        ``(height, width)`` of the described image, when the file does not say.
    max_pixels, max_keypoints : int, optional
        Limits on the image size and the keypoint count
        (:mod:`lbdviewer.io.limits`, checked before the arrays are made).

    Returns
    -------
    FeatureSet

    Raises
    ------
    ValueError
        Naming what is wrong or missing: unreadable or malformed file, no
        ``keypoints`` or ``descriptors`` node, a keypoint count or matrix size
        that does not add up, descriptors that are not ``dt: u``, a descriptor
        kind or image size neither the file nor the caller gives.
    """
    name = os.fspath(path)
    tree = read_tree(name)
    for key in ("keypoints", "descriptors"):
        if key not in tree:
            raise ValueError(f"FileStorage file {name!r} has no {key!r} node (top-level nodes: {sorted(tree)})")
    if tree.get("format") == FORMAT and tree.get("version") != VERSION:
        raise ValueError(f"FileStorage file {name!r} is lbdviewer-features version {tree.get('version')!r}; "
                         f"this lbdviewer reads {VERSION}")
    what = f"FileStorage file {name!r}"
    declared = tree["descriptors"].get("rows") if isinstance(tree["descriptors"], dict) else None
    if type(declared) is int:
        check_keypoints(declared, what, limit=max_keypoints)
    try:
        table = keypoint_table(tree["keypoints"])
        check_keypoints(len(table), what, limit=max_keypoints)
        codes = matrix(tree["descriptors"], "descriptors")
    except ValueError as error:
        raise ValueError(f"FileStorage file {name!r}: {error}") from error
    if codes.dtype != np.uint8:
        raise ValueError(f"FileStorage file {name!r}: binary descriptors are bytes (dt 'u'), "
                         f"got dt {tree['descriptors']['dt']!r}")
    if codes.shape[0] != len(table):
        raise ValueError(f"FileStorage file {name!r} holds {len(table)} keypoints but {codes.shape[0]} "
                         "descriptor rows")
    kind = _text_node(tree, "descriptor", name)
    kind = one_of(kind, descriptor,
                   missing=f"FileStorage file {name!r} does not say which descriptor wrote it: give it "
                           f"(--descriptor, one of {', '.join(DESCRIPTORS)})",
                   conflict=f"FileStorage file {name!r} holds {kind} descriptors, not {descriptor!r} as given")
    if kind not in DESCRIPTORS:
        raise ValueError(f"FileStorage file {name!r}: unknown descriptor {kind!r}; expected one of {DESCRIPTORS}")
    if "image_width" in tree or "image_height" in tree:
        shape = (_int_node(tree, "image_height", name, None), _int_node(tree, "image_width", name, None))
    elif image_shape is not None:
        shape = tuple(image_shape)
    else:
        raise ValueError(f"FileStorage file {name!r} does not give the image size (image_width, image_height): "
                         "give it (--image-size WIDTHxHEIGHT)")
    check_pixels(*shape, what, limit=max_pixels)
    params_text = _text_node(tree, "params", name)
    try:
        params = {} if params_text is None else json.loads(params_text)
    except json.JSONDecodeError as error:
        raise ValueError(f"FileStorage file {name!r}: 'params' is not a JSON object: {error}") from error
    if not isinstance(params, dict):
        raise ValueError(f"FileStorage file {name!r}: 'params' must be a JSON object, got {params_text!r}")
    if params_text is None and "n_bytes" in get_model(kind).params():
        params = {"n_bytes": codes.shape[1]}  # the descriptor length a program chose shows in the matrix
    model = get_model(kind, **{k: v for k, v in params.items() if k != "library"})
    n_bits = _int_node(tree, "n_bits", name, model.n_bits)
    bitorder = _text_node(tree, "bitorder", name) or model.bitorder
    if codes.shape[1] != (n_bits + 7) // 8:
        raise ValueError(f"FileStorage file {name!r}: descriptors have {codes.shape[1]} bytes a row; {kind} "
                         f"with {n_bits} bits has {(n_bits + 7) // 8}")
    columns = dict(zip(CV_KEYPOINT_FIELDS, table.T))
    keypoints = Keypoints(columns["x"], columns["y"], columns["size"], columns["angle"], columns["octave"],
                          columns["response"])
    return FeatureSet(descriptor=kind, params=params, image_shape=shape, keypoints=keypoints, descriptors=codes,
                      n_bits=n_bits, bitorder=bitorder)
