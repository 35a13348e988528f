"""Read keypoints and descriptors from OpenCV's ``cv::FileStorage`` files (YAML, XML, JSON), one image or several.

Programs built on OpenCV save features with ``cv::FileStorage``. OpenCV 4's
C++ API (``fs << "keypoints" << kps``) stores a ``std::vector<cv::KeyPoint>``
as a sequence of seven-number sequences, ``x, y, size, angle, response,
octave, class_id``; older code (``cv::write``) and lbdviewer store one flat
sequence of seven numbers a keypoint; both are read. The descriptor
``cv::Mat`` is an ``opencv-matrix`` with ``rows``, ``cols``, ``dt`` (``u``
for 8-bit unsigned) and the row-major ``data``::

    %YAML:1.0
    ---
    image_size: [ 640, 480 ]
    keypoints:
       - [ 68., 84., 31., 98.50, 2.29e-03, 0, -1 ]
    descriptors: !!opencv-matrix
       rows: 1
       cols: 32
       dt: u
       data: [ 18, 211, 231, ... ]

**Entries.** A file holds one image's features (``keypoints`` and
``descriptors`` at the top) or several: a mapping of per-image nodes
(``frame_1: {keypoints, descriptors}``, the entry is called ``frame_1``) or a
sequence of them (``frames: [{...}, {...}]``, entries ``frames/0``,
``frames/1``). :func:`file_entries` lists them; :func:`read_entry` reads one.

**What OpenCV does not store** comes from optional nodes (in the entry, else
at the top): ``descriptor`` (lbdviewer's names, or ``ORB``, ``BRISK``,
``AKAZE``, ``BEBLID``, ``TEBLID``, ``BRIEF``, ``FREAK``), the image size
(a ``cv::Size`` node ``image_size``/``imageSize`` = ``[width, height]``, or
``image_width`` and ``image_height``), ``n_bits``, ``bitorder`` and
``params`` (a JSON string). What is still missing is settled by
:func:`lbdviewer.features.files.load_features` (:mod:`lbdviewer.features.infer`).

The parsers (:mod:`lbdviewer.features.filestorage.parser`) are our own and
bounded: the file's size is checked before it is read, and the keypoint
limit sets the :class:`~lbdviewer.features.filestorage.values.Budget` checked
while tokenising (a matrix's declared ``rows x cols`` before its data).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

import numpy as np

from lbdviewer.features.filestorage.parser import read_tree
from lbdviewer.features.filestorage.values import MATRIX_TYPES, Budget, cast_declared
from lbdviewer.features.keypoints import FORMAT, VERSION, Keypoints
from lbdviewer.io import limits
from lbdviewer.io.limits import check_keypoints, check_pixels
from lbdviewer.libraries.registry import DESCRIPTORS

__all__ = ["CV_KEYPOINT_FIELDS", "DESCRIPTOR_NAMES", "FileEntry", "MAX_DESCRIPTOR_BYTES", "file_entries",
           "keypoint_table", "matrix", "read_entries", "read_entry"]

#: Widest descriptor (bytes a row) a FileStorage file may declare.
MAX_DESCRIPTOR_BYTES = 1024
#: Values one sequence may hold, per keypoint of the limit (seven a keypoint, and room for other nodes).
VALUES_PER_KEYPOINT = 64
#: What ``cv::write`` stores per keypoint, in order.
CV_KEYPOINT_FIELDS = ("x", "y", "size", "angle", "response", "octave", "class_id")
#: ``descriptor`` node values understood, lower-cased, and the descriptor each names.
DESCRIPTOR_NAMES = {**{name: name for name in DESCRIPTORS}, "brief": "opencv-brief", "freak": "opencv-freak",
                    "opencv_brief": "opencv-brief", "opencv_freak": "opencv-freak"}
_SIZE_NODES = ("image_size", "imageSize", "img_size", "imgSize")


def _numbers(values, what):
    array = np.asarray(values) if isinstance(values, (list, np.ndarray)) else None
    if array is None or array.dtype.kind not in "iuf":
        raise ValueError(f"{what} must be a sequence of numbers")
    return array


def matrix(node, what):
    """An ``opencv-matrix`` node as an array, its declared size checked against its data.

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
        For a missing item, an unknown or multi-channel ``dt``, more than
        :data:`MAX_DESCRIPTOR_BYTES` columns, a data count other than
        ``rows x cols``, or data outside ``dt``'s range.

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
    for key, value, limit in (("rows", rows, None), ("cols", cols, MAX_DESCRIPTOR_BYTES)):
        if type(value) is not int or value < 0 or (limit is not None and value > limit):
            raise ValueError(f"{what!r} {key} must be an integer in [0, {limit or 'the keypoint limit'}], "
                             f"got {value!r}")
    if not isinstance(dt, str) or dt not in MATRIX_TYPES:
        raise ValueError(f"{what!r} dt {dt!r} is not a one-channel OpenCV type; expected one of "
                         f"{tuple(MATRIX_TYPES)}")
    data = node["data"]
    data = [data] if type(data) in (int, float) else ([] if data is None else data)
    count = len(data) if isinstance(data, (list, np.ndarray)) else type(data).__name__
    if count != rows * cols or (isinstance(data, np.ndarray) and data.ndim != 1):
        raise ValueError(f"{what!r} declares {rows} x {cols} = {rows * cols} values but holds {count}")
    values = _numbers(data, f"{what!r} data")
    return cast_declared(values, MATRIX_TYPES[dt], f"of {what!r} (dt {dt!r})").reshape(rows, cols)


def keypoint_table(node, what="keypoints"):
    """The ``(K, 7)`` table of stored keypoints (see :data:`CV_KEYPOINT_FIELDS`): flat or one sequence each.

    Examples
    --------
    >>> keypoint_table([68.0, 84.0, 31.0, 98.5, 0.002, 0, -1]).shape
    (1, 7)
    >>> keypoint_table(np.ones((3, 7))).shape
    (3, 7)
    """
    width = len(CV_KEYPOINT_FIELDS)
    if node is None or (isinstance(node, list) and not node):
        return np.empty((0, width))
    if type(node) in (int, float):
        node = [node]
    if isinstance(node, list) and all(isinstance(item, (list, np.ndarray)) for item in node):
        raise ValueError(f"every keypoint in {what!r} must have {width} values {CV_KEYPOINT_FIELDS}")
    table = _numbers(node, f"{what!r}")
    if table.ndim == 2:
        if table.shape[1] != width:
            raise ValueError(f"every keypoint in {what!r} must have {width} values {CV_KEYPOINT_FIELDS}, "
                             f"got {table.shape[1]}")
        return table.astype(np.float64)
    if table.shape[0] % width:
        raise ValueError(f"{what!r} holds {table.shape[0]} numbers, not a multiple of {width} "
                         f"({', '.join(CV_KEYPOINT_FIELDS)} per keypoint): truncated?")
    return table.astype(np.float64).reshape(-1, width)


@dataclass(frozen=True, eq=False)
class FileEntry:
    """One image's features as a FileStorage file holds them, before what it does not say is settled.

    ``descriptor``, ``image_shape``, ``params``, ``n_bits`` and ``bitorder``
    are None where the file does not give them; ``class_id`` is the
    keypoints' seventh column (AKAZE's levels; -1 elsewhere).
    """

    path: str
    name: str | None
    keypoints: Keypoints
    class_id: np.ndarray
    descriptors: np.ndarray
    descriptor: str | None
    image_shape: tuple | None
    params: dict | None
    n_bits: int | None
    bitorder: str | None

    @property
    def label(self):
        """How messages name the entry: the file, and the entry within it when there are several."""
        return f"{self.path!r}" + (f" entry {self.name!r}" if self.name is not None else "")


def _holds_features(node):
    return isinstance(node, dict) and "keypoints" in node and "descriptors" in node


def _entry_nodes(tree):
    """``{name: node}`` of every image's features in ``tree`` (name None: the top level itself)."""
    if _holds_features(tree):
        return {None: tree}
    found = {}
    for key, value in tree.items():
        if _holds_features(value):
            found[key] = value
        elif isinstance(value, list) and value and all(_holds_features(item) for item in value):
            found.update({f"{key}/{i}": item for i, item in enumerate(value)})
    return found


def _budget(max_keypoints):
    max_keypoints = limits.max_keypoints(max_keypoints)
    return Budget(max_values=max(VALUES_PER_KEYPOINT * max_keypoints, 4096),
                  max_matrix_values=max_keypoints * MAX_DESCRIPTOR_BYTES)


def _read_nodes(path, max_keypoints):
    name = os.fspath(path)
    tree = read_tree(name, budget=_budget(max_keypoints))
    if tree.get("format") == FORMAT and tree.get("version") != VERSION:
        raise ValueError(f"FileStorage file {name!r} is lbdviewer-features version {tree.get('version')!r}; "
                         f"this lbdviewer reads {VERSION}")
    nodes = _entry_nodes(tree)
    if not nodes:
        raise ValueError(f"FileStorage file {name!r} holds no features: no 'keypoints' and 'descriptors' nodes "
                         f"at the top, in a mapping or in a sequence of mappings (top-level nodes: {sorted(tree)})")
    return name, tree, nodes


def file_entries(path, *, max_keypoints=None):
    """The names of the entries of a FileStorage file: ``[None]`` for a file of one image.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = os.path.join(folder, "two.yml")
    ...     with open(path, "w") as handle:
    ...         _ = handle.write("a: {keypoints: [], descriptors: []}\\nb: {keypoints: [], descriptors: []}\\n")
    ...     file_entries(path)
    ['a', 'b']
    """
    return list(_read_nodes(path, max_keypoints)[2])


def _choose(nodes, entry, name):
    if entry is None:
        if len(nodes) == 1:
            return next(iter(nodes.items()))
        shown = ", ".join(nodes if len(nodes) <= 12 else list(nodes)[:12] + ["..."])
        raise ValueError(f"FileStorage file {name!r} holds the features of {len(nodes)} images ({shown}): "
                         "choose one (--entry NAME; 'lbdviewer invert --list' lists them)")
    if entry not in nodes:
        if list(nodes) == [None]:
            raise ValueError(f"FileStorage file {name!r} holds one image's features: --entry {entry!r} does not "
                             "apply to it")
        raise ValueError(f"FileStorage file {name!r} has no entry {entry!r}; its entries: "
                         f"{', '.join(map(str, nodes))}")
    return entry, nodes[entry]


def _text(node, key, where):
    value = node.get(key)
    if value is not None and not isinstance(value, str):
        raise ValueError(f"{where}: {key!r} must be a string, got {value!r}")
    return value


def _positive_int(node, key, where):
    value = node.get(key)
    if value is None:
        return None
    if type(value) is not int or value < 1:
        raise ValueError(f"{where}: {key!r} must be a positive integer, got {value!r}")
    return value


def _image_shape(node, where):
    """``(height, width)`` the node gives, or None."""
    if "image_width" in node or "image_height" in node:
        shape = (_positive_int(node, "image_height", where), _positive_int(node, "image_width", where))
        if None in shape:
            given, missing = ("image_width", "image_height") if shape[0] is None else ("image_height", "image_width")
            raise ValueError(f"{where}: {given!r} without {missing!r}: give both, or neither (the size is then "
                             "inferred)")
        return shape
    for key in _SIZE_NODES:
        if key in node:
            size = node[key]
            if not (isinstance(size, np.ndarray) and size.shape == (2,) and size.dtype.kind in "iu"
                    and size.min() > 0):
                raise ValueError(f"{where}: {key!r} must be a cv::Size [width, height] of positive integers, "
                                 f"got {size!r}")
            return (int(size[1]), int(size[0]))
    return None


def _descriptor_name(value, where):
    if value is None:
        return None
    known = DESCRIPTOR_NAMES.get(value.strip().lower())
    if known is None:
        raise ValueError(f"{where}: unknown descriptor {value!r}; expected one of {DESCRIPTORS}")
    return known


def read_entry(path, *, entry=None, max_pixels=None, max_keypoints=None):
    """Read one image's keypoints and descriptors from a FileStorage file, as the file gives them.

    Parameters
    ----------
    path : str or os.PathLike
        ``.yml``, ``.yaml``, ``.xml`` or ``.json`` (see the module notes).
    entry : str, optional
        Which image of a file that holds several (:func:`file_entries`);
        refused for a file of one image.
    max_pixels, max_keypoints : int, optional
        Limits on a given image size and the keypoint count
        (:mod:`lbdviewer.io.limits`; the keypoint limit also bounds the parse).

    Returns
    -------
    FileEntry

    Raises
    ------
    ValueError
        Naming what is wrong or missing: unreadable or malformed file, no
        features, several entries and none chosen, a keypoint count or
        matrix size that does not add up, descriptors that are not ``dt: u``.
    """
    name, tree, nodes = _read_nodes(path, max_keypoints)
    entry, node = _choose(nodes, entry, name)
    return _entry(name, tree, entry, node, max_pixels, max_keypoints)


def read_entries(path, *, max_pixels=None, max_keypoints=None):
    """Every entry of a FileStorage file (see :func:`read_entry`), from one parse.

    Returns
    -------
    list of FileEntry
    """
    name, tree, nodes = _read_nodes(path, max_keypoints)
    return [_entry(name, tree, entry, node, max_pixels, max_keypoints) for entry, node in nodes.items()]


def _entry(name, tree, entry, node, max_pixels, max_keypoints):
    where = f"FileStorage file {name!r}" + (f" entry {entry!r}" if entry is not None else "")
    declared = node["descriptors"].get("rows") if isinstance(node["descriptors"], dict) else None
    if type(declared) is int:
        check_keypoints(declared, where, limit=max_keypoints)
    try:
        table = keypoint_table(node["keypoints"])
        check_keypoints(len(table), where, limit=max_keypoints)
        codes = matrix(node["descriptors"], "descriptors")
    except ValueError as error:
        raise ValueError(f"{where}: {error}") from error
    if codes.dtype != np.uint8:
        raise ValueError(f"{where}: binary descriptors are bytes (dt 'u'), got dt {node['descriptors']['dt']!r}")
    if codes.shape[0] != len(table):
        raise ValueError(f"{where} holds {len(table)} keypoints but {codes.shape[0]} descriptor rows")
    context = [node] if node is tree else [node, tree]
    pick = (lambda read, key: next((v for v in (read(n, key, where) for n in context) if v is not None), None))
    shape = next((s for s in (_image_shape(n, where) for n in context) if s is not None), None)
    if shape is not None:
        check_pixels(*shape, where, limit=max_pixels)
    params_text = pick(_text, "params")
    try:
        params = None if params_text is None else json.loads(params_text)
    except json.JSONDecodeError as error:
        raise ValueError(f"{where}: 'params' is not a JSON object: {error}") from error
    if params is not None and not isinstance(params, dict):
        raise ValueError(f"{where}: 'params' must be a JSON object, got {params_text!r}")
    columns = dict(zip(CV_KEYPOINT_FIELDS, table.T))
    try:
        keypoints = Keypoints(columns["x"], columns["y"], columns["size"], columns["angle"], columns["octave"],
                              columns["response"])
    except ValueError as error:
        raise ValueError(f"{where}: {error}") from error
    bitorder = pick(_text, "bitorder")
    return FileEntry(path=name, name=entry, keypoints=keypoints, class_id=columns["class_id"].copy(),
                     descriptors=codes, descriptor=_descriptor_name(pick(_text, "descriptor"), where),
                     image_shape=shape, params=params, n_bits=pick(_positive_int, "n_bits"), bitorder=bitorder)
