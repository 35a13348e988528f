"""What the FileStorage parsers make of a file's values, in bounded memory: scalars, numeric runs as arrays, a budget.

Every parser (:mod:`~lbdviewer.features.filestorage.parser` for YAML,
:mod:`~lbdviewer.features.filestorage.flow` for flow collections and JSON,
:mod:`~lbdviewer.features.filestorage.xml_stream` for XML) hands its values to
this module:

* a run of numbers (``[ 1, 2, 3 ]``, the text of an XML element) becomes one
  NumPy array, converted a chunk at a time (:func:`numbers`), in the matrix's
  declared type when one was declared;
* a sequence whose items are numeric rows of one length becomes one 2-D array
  (:func:`finish_sequence`): keypoints written as ``[x, y, size, ...]`` rows
  cost 8 bytes a number, not a Python object each;
* a :class:`Budget` counts what is made and refuses, while tokenising, a
  sequence of more values than ``max_values``, a matrix that declares more
  than ``max_matrix_values`` and anything past ``max_bytes`` in all.
"""

from __future__ import annotations

import math
import re
import warnings

import numpy as np

__all__ = ["Budget", "MAX_DEPTH", "MAX_PARSED_BYTES", "MAX_STRING_CHARS", "finish_sequence", "numbers", "scalar"]

#: Most bytes of values one file may make (arrays, and about 64 bytes for every other item).
MAX_PARSED_BYTES = 96 * 2**20
#: Longest string value (characters).
MAX_STRING_CHARS = 2**20
#: Deepest nesting of collections.
MAX_DEPTH = 64
#: Characters of a numeric run converted at once.
CHUNK_CHARS = 2**20
#: What an item that is not an array is counted as (bytes).
ITEM_BYTES = 64

_INT = re.compile(r"[-+]?\d+\Z")
_FLOAT = re.compile(r"[-+]?(\d+\.?\d*([eE][-+]?\d+)?|\.\d+([eE][-+]?\d+)?)\Z")
_SPECIAL = {".nan": math.nan, ".inf": math.inf, "+.inf": math.inf, "-.inf": -math.inf}


def scalar(text):
    """An unquoted FileStorage scalar: int, float (OpenCV writes ``68.``, ``.Nan``, ``-.Inf``) or str.

    Examples
    --------
    >>> scalar("68."), scalar("-1"), scalar("1.5e-03"), scalar("-.Inf"), scalar("orb")
    (68.0, -1, 0.0015, -inf, 'orb')
    """
    text = text.strip()
    if _INT.match(text):
        return int(text)
    if _FLOAT.match(text):
        return float(text)
    return _SPECIAL.get(text.lower(), text)


class Budget:
    """What one parse may still make; every parser checks it while tokenising.

    Parameters
    ----------
    max_values : int
        Most values (numbers, strings, collections) in one sequence, nested
        rows counted by their numbers.
    max_matrix_values : int
        Most ``rows x cols`` an ``opencv-matrix`` may declare.
    max_bytes : int
        Most bytes of values in all (:data:`MAX_PARSED_BYTES`).

    Examples
    --------
    >>> budget = Budget(max_values=3, max_matrix_values=4)
    >>> budget.check_sequence(4, "in 'kp'")
    Traceback (most recent call last):
    ...
    ValueError: the sequence in 'kp' holds more than 3 values, the most this reader accepts
    """

    def __init__(self, *, max_values, max_matrix_values, max_bytes=MAX_PARSED_BYTES):
        self.max_values, self.max_matrix_values, self.max_bytes = int(max_values), int(max_matrix_values), max_bytes
        self.spent = 0

    def spend(self, nbytes, where):
        """Count ``nbytes`` more; ValueError past :attr:`max_bytes`."""
        self.spent += int(nbytes)
        if self.spent > self.max_bytes:
            raise ValueError(f"the file holds more than {self.max_bytes // 2**20} MB of values (at {where}), "
                             "more than this reader accepts")

    def check_sequence(self, count, where):
        """ValueError when one sequence holds more than :attr:`max_values` values."""
        if count > self.max_values:
            raise ValueError(f"the sequence {where} holds more than {self.max_values:,} values, the most this "
                             "reader accepts")

    def check_matrix(self, node, where):
        """The element count and type an ``opencv-matrix`` mapping declares before its data (None if it does not).

        ``node`` holds what was read of the mapping so far; ``rows x cols``
        beyond :attr:`max_matrix_values` is refused before any data is read,
        and the data's bytes are counted now.
        """
        rows, cols, dt = node.get("rows"), node.get("cols"), node.get("dt")
        if type(rows) is not int or type(cols) is not int:
            return None
        if rows < 0 or cols < 0 or rows * cols > self.max_matrix_values:
            raise ValueError(f"the matrix {where} declares {rows:,} x {cols:,} values, more than the "
                             f"{self.max_matrix_values:,} this reader accepts")
        dtype = MATRIX_TYPES.get(dt) if isinstance(dt, str) else None
        self.spend(rows * cols * (8 if dtype is None else np.dtype(dtype).itemsize), where)
        return rows * cols, dtype


#: ``dt`` codes of one-channel matrices (OpenCV's type letters).
MATRIX_TYPES = {"u": np.uint8, "c": np.int8, "w": np.uint16, "s": np.int16, "i": np.int32, "f": np.float32,
                "d": np.float64}


def _chunks(text, separators, start=0, stop=None):
    """``text[start:stop]`` in pieces of about :data:`CHUNK_CHARS`, cut at separator characters (left out).

    Examples
    --------
    >>> list(_chunks("ab, 1, 2", (",",), start=3))
    [' 1, 2']
    """
    stop = len(text) if stop is None else stop
    while stop - start > CHUNK_CHARS:
        cut = max(text.rfind(sep, start, start + CHUNK_CHARS) for sep in separators)
        if cut <= start:  # no separator in the window: the first one after it
            cut = min((i for i in (text.find(sep, start + CHUNK_CHARS, stop) for sep in separators) if i >= 0),
                      default=-1)
            if cut < 0:
                break
        yield text[start:cut]
        start = cut + 1
    if start < stop:
        yield text[start:stop]


def _convert(piece, sep):
    """The numbers of ``piece`` as int64 or float64, or None if it holds anything else."""
    expected = (piece.count(",") + 1) if sep == "," else len(piece.split())
    if sep == "," and not piece.strip():
        return np.empty(0, dtype=np.int64)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for dtype in (np.int64, np.float64):
            try:
                values = np.fromstring(piece, dtype=dtype, sep=sep)
            except (ValueError, DeprecationWarning):
                continue
            if values.shape[0] == expected:
                return values
    tokens = piece.split(sep) if sep == "," else piece.split()
    values = [scalar(token) for token in tokens]  # OpenCV's .Nan and .Inf; None for any word
    if not all(type(v) in (int, float) for v in values):
        return None
    return np.array(values, dtype=np.float64)


def cast_declared(values, dtype, where):
    """``values`` as a matrix's declared ``dtype``; a ValueError for a fraction or a value out of an integer type's range.

    Examples
    --------
    >>> cast_declared(np.array([7.0, 255.0]), np.uint8, "of 'd'")
    array([  7, 255], dtype=uint8)
    >>> cast_declared(np.array([7.5]), np.uint8, "of 'd'")
    Traceback (most recent call last):
    ValueError: the data of 'd' do not fit their declared type uint8
    """
    kind = np.dtype(dtype)
    if kind.kind in "iu":
        info = np.iinfo(kind)
        if values.size and (values.dtype.kind == "f" and np.any(values != np.round(values))
                            or values.min() < info.min or values.max() > info.max):
            raise ValueError(f"the data {where} do not fit their declared type {kind}")
    return values.astype(kind)


def numbers(text, where, budget, *, sep=",", matrix=None, start=0, stop=None):
    """The numbers of a run (``"1, 2., -3"`` or, with ``sep=" "``, white-space separated) as one array.

    Converted :data:`CHUNK_CHARS` at a time with NumPy; each chunk is counted
    against ``budget`` (and the matrix's declared count) before the next is read.

    Parameters
    ----------
    text : str
    where : str
        For messages.
    budget : Budget
    sep : {",", " "}
    matrix : (int, numpy dtype or None), optional
        What :meth:`Budget.check_matrix` returned for the matrix whose data
        these are: at most that many values (their bytes were counted
        then), in the declared type (range checked). Otherwise int64 if
        every number is an integer, else float64.
    start, stop : int, optional
        The run is ``text[start:stop]``, read in place: a long run in a long
        text is never copied whole.

    Returns
    -------
    ndarray, shape (n,), or None
        None when the run holds anything but numbers.

    Examples
    --------
    >>> budget = Budget(max_values=10, max_matrix_values=10)
    >>> numbers(" 1, 2., -3 ", "here", budget).tolist(), numbers("1 2", "here", budget, sep=" ").tolist()
    ([1.0, 2.0, -3.0], [1, 2])
    >>> numbers("1, b", "here", budget) is None
    True
    """
    limit, dtype = (budget.max_values, None) if matrix is None else matrix
    parts, count = [], 0
    for piece in _chunks(text, (",",) if sep == "," else (" ", "\n", "\t", "\r"), start, stop):
        values = _convert(piece, sep)
        if values is None:
            return None
        count += values.shape[0]
        if count > limit:
            raise ValueError(f"the sequence {where} holds more than {limit:,} values, the most this reader "
                             "accepts here")
        if dtype is not None:
            values = cast_declared(values, dtype, where)
        if matrix is None:
            budget.spend(values.nbytes, where)
        parts.append(values)
    if not parts:
        return np.empty(0, dtype=np.int64 if dtype is None else dtype)
    if len(parts) == 1:
        return parts[0]
    kinds = {p.dtype for p in parts}
    return np.concatenate(parts).astype(np.float64 if len(kinds) > 1 else parts[0].dtype, copy=False)


def item_size(value):
    """How many values ``value`` counts for in a sequence (an array: its size; anything else: 1)."""
    return value.size if isinstance(value, np.ndarray) else 1


def finish_sequence(items):
    """A parsed sequence: an array when its items allow, else the list.

    Numbers make a 1-D array (int64 if all are integers, else float64);
    1-D numeric arrays of one length make a 2-D array, one row each.

    Examples
    --------
    >>> finish_sequence([1, 2.5]).tolist(), finish_sequence([np.array([1, 2]), np.array([3.5, 4])]).shape
    ([1.0, 2.5], (2, 2))
    >>> finish_sequence(["a", 1])
    ['a', 1]
    """
    if not items:
        return []
    first = items[0]
    if isinstance(first, np.ndarray):
        if first.ndim == 1 and first.dtype.kind in "iuf" and all(
                isinstance(i, np.ndarray) and i.ndim == 1 and i.shape == first.shape and i.dtype.kind in "iuf"
                for i in items):
            return np.stack(items)
        return items
    if all(type(i) is int for i in items):
        return np.array(items, dtype=np.int64)
    if all(type(i) in (int, float) for i in items):
        return np.array(items, dtype=np.float64)
    return items


def check_string(text, where):
    """``text``, or ValueError when it is longer than :data:`MAX_STRING_CHARS` or base64 data."""
    if len(text) > MAX_STRING_CHARS:
        raise ValueError(f"a string {where} is longer than {MAX_STRING_CHARS:,} characters")
    if text.startswith("$base64$"):
        raise ValueError(f"base64-encoded data {where} is not supported: write the file without "
                         "FileStorage::BASE64")
    return text
