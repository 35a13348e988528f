"""Parsers of the text formats of OpenCV's ``cv::FileStorage``: YAML, XML and JSON, in linear time and bounded memory.

Only the subset OpenCV writes is read, by this package's own code: no pickle,
no ``eval``, no YAML anchors or aliases, XML without a DOCTYPE (so no entity
can expand), JSON with duplicate keys refused. Base64-encoded data
(``FileStorage::BASE64``) is refused with a message saying so.

What a file may cost is bounded before and while it is read: only a regular
file is opened (:func:`lbdviewer.io.files.open_regular`: a FIFO, a device or
a folder is refused by name, without blocking), one larger than
:data:`MAX_FILE_BYTES` is refused before it is read, and the
:class:`~lbdviewer.features.filestorage.values.Budget` is checked while
tokenising (values in one sequence, a matrix's declared ``rows x cols``,
bytes in all). Every step is linear in the text: YAML lines are taken one at
a time, a flow collection spanning many lines is joined once, numbers are
converted in bulk (:mod:`~lbdviewer.features.filestorage.values`).
:mod:`lbdviewer.features.filestorage.reader` turns the parsed nodes into features.
"""

from __future__ import annotations

import os
import re

from lbdviewer.features.filestorage.flow import parse_flow, parse_json
from lbdviewer.features.filestorage.values import (ITEM_BYTES, Budget, check_string, finish_sequence, item_size,
                                                   scalar)
from lbdviewer.features.filestorage.xml_stream import parse_xml
from lbdviewer.io.files import read_regular

__all__ = ["FORMATS", "MAX_FILE_BYTES", "SUFFIXES", "default_budget", "format_of", "parse_yaml", "read_tree"]

#: File suffixes read and written as FileStorage, and their format.
SUFFIXES = {".yml": "yaml", ".yaml": "yaml", ".xml": "xml", ".json": "json"}
FORMATS = ("yaml", "xml", "json")
#: Largest FileStorage file read (bytes): about 90,000 ORB keypoints of YAML, far past the default keypoint limit.
#: The text is held twice while it is decoded and a YAML line up to three times more (one line of flow: line,
#: its body, the value), so a file at the cap keeps a command under 300 MB.
MAX_FILE_BYTES = 24 * 2**20
_BOM = "\ufeff"


def format_of(path):
    """The FileStorage format of ``path`` from its suffix, or None for other files.

    Examples
    --------
    >>> format_of("a/features.yml"), format_of("f.JSON"), format_of("f.npz")
    ('yaml', 'json', None)
    """
    return SUFFIXES.get(os.path.splitext(os.fspath(path))[1].lower())


def default_budget():
    """A :class:`Budget` with generous limits (250,000 keypoints of 1024 bytes), for direct parser use."""
    return Budget(max_values=64 * 250_000, max_matrix_values=250_000 * 1024)


def read_tree(path, *, budget=None):
    """The top-level mapping of a FileStorage file as plain Python values.

    Matrices become dicts with ``type_id == "opencv-matrix"``; sequences of
    numbers become 1-D arrays, sequences of equal-length numeric rows 2-D
    arrays, other sequences lists; numbers int or float; other scalars str.

    Parameters
    ----------
    path : str or os.PathLike
        ``.yml``, ``.yaml``, ``.xml`` or ``.json``; a regular file.
    budget : Budget, optional
        What the parse may make (default :func:`default_budget`).

    Returns
    -------
    dict

    Raises
    ------
    ValueError
        If the file is not a regular file, cannot be read, is larger than
        :data:`MAX_FILE_BYTES`, holds more than ``budget`` allows, or is
        not well-formed in its format (the message names the line).
    """
    name = os.fspath(path)
    kind = format_of(name)
    if kind is None:
        raise ValueError(f"{name!r} is not a FileStorage file: its suffix must be one of {tuple(SUFFIXES)}")
    budget = default_budget() if budget is None else budget
    try:
        raw = read_regular(name, "FileStorage file", max_bytes=MAX_FILE_BYTES)
    except OSError as error:
        raise ValueError(f"cannot read FileStorage file {name!r}: {error}") from error
    try:
        if kind == "xml":
            tree = parse_xml(raw, budget)
        else:
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as error:
                raise ValueError(f"not UTF-8 text (gzip is not read): {error}") from None
            del raw
            text = text[1:] if text.startswith(_BOM) else text
            tree = parse_yaml(text, budget) if kind == "yaml" else parse_json(text, budget)
    except RecursionError:
        raise ValueError(f"FileStorage file {name!r} is nested too deeply to read") from None
    except ValueError as error:
        raise ValueError(f"FileStorage file {name!r}: {error}") from error
    if not isinstance(tree, dict):
        raise ValueError(f"FileStorage file {name!r} must hold a mapping at the top, got {type(tree).__name__}")
    return tree


def _is_item(text):
    return text == "-" or text.startswith("- ")


class _Lines:
    """The meaningful lines of a YAML text, one at a time: ``[number, indent, text]`` of the current one.

    Nothing is split ahead: the cost is one pass over the text, and only
    the current line is held apart from the text itself.
    """

    def __init__(self, text):
        self.text, self.offset, self.number, self.body = text, 0, 0, False
        self.current, self.start, self.body_end = None, 0, None
        self.advance()

    def take_flow(self, depth):
        """Where a flow collection continued on the current line ends, ``depth`` brackets still open.

        Found in the text in bulk, up to the bracket that closes it (one ``find`` and two ``count`` per
        closing bracket, not a step a line); the line after it becomes the current one. None where quotes
        or comments need the line-by-line path.
        """
        text, position = self.text, self.start
        while depth > 0:
            close = text.find("]", position) + 1
            if close == 0:
                return None
            segment = text[position:close]
            if "#" in segment or '"' in segment or "'" in segment or "{" in segment or "}" in segment:
                return None  # comments, strings and flow mappings: line by line
            depth += segment.count("[") - segment.count("]")
            position = close
        end = text.find("\n", position)
        end = len(text) if end < 0 else end
        if text[position:end].strip():
            return None
        self.number += text.count("\n", self.start, position)
        self.offset = end + 1
        self.advance()
        return position

    def advance(self):
        text = self.text
        while self.offset < len(text):
            self.start = self.offset
            end = text.find("\n", self.offset)
            end = len(text) if end < 0 else end
            line = text[self.offset:end].rstrip("\r")
            self.offset, self.number = end + 1, self.number + 1
            if not self.body and (line.startswith("%") or not line.strip()):
                continue
            shift = 0
            if not self.body and line.startswith("---"):
                self.body, line, shift = True, line[3:], 3
                if not line.strip():
                    continue
            self.body = True
            stripped = _strip_comment(line).rstrip()
            if not stripped or stripped.isspace() or (stripped.endswith("...") and stripped.strip() == "..."):
                continue  # (tested without copying a long line)
            body = stripped.lstrip()
            indent = len(stripped) - len(body)
            if "\t" in line[:indent]:
                raise ValueError(f"tab in the indentation on line {self.number}")
            self.current = [self.number, indent, body]
            # where the body ends in the text, when nothing (a comment) was cut from the line
            self.body_end = self.start + shift + len(stripped) if len(stripped) == len(line.rstrip()) else None
            return
        self.current = None


class _Yaml:
    """The YAML subset OpenCV writes: block mappings and sequences, flow ``[..]``/``{..}``, tags."""

    def __init__(self, text, budget):
        self.lines, self.budget = _Lines(text), budget

    def parse(self):
        if self.lines.current is None:
            return {}
        node = self.block(self.lines.current[1], 0)
        if self.lines.current is not None:
            raise ValueError(f"unexpected indentation on line {self.lines.current[0]}")
        return node

    def block(self, indent, depth):
        if _is_item(self.lines.current[2]):
            return self.block_sequence(indent, depth)
        return self.block_mapping(indent, depth)

    def _check_depth(self, depth):
        """Refuse nesting past 64 levels, however it nests (before Python's own recursion limit is reached)."""
        if depth > 64:
            raise ValueError(f"collections nested too deeply on line {self.lines.current[0]}")

    def block_mapping(self, indent, depth):
        self._check_depth(depth)
        out = {}
        while self.lines.current is not None and self.lines.current[1] == indent:
            number, _, text = self.lines.current
            if _is_item(text):
                break
            key, rest = _split_key(text, number)
            if key in out:
                raise ValueError(f"duplicate key {key!r} on line {number}")
            matrix = self.budget.check_matrix(out, f"on line {number}") if key == "data" else None
            end = self.lines.body_end
            self.lines.advance()
            out[key] = self.value(rest, indent, number, depth, in_mapping=True, matrix=matrix, end=end)
            self.budget.spend(ITEM_BYTES, f"line {number}")
        return out

    def block_sequence(self, indent, depth):
        self._check_depth(depth)
        items, count = [], 0
        while self.lines.current is not None and self.lines.current[1] == indent:
            number, _, text = self.lines.current
            if not _is_item(text):
                break
            rest = text[1:].lstrip()
            if rest and rest[0] not in "[{\"'!" and _key_split(rest) is not None:
                # "- key: value": a mapping whose first entry shares the dash's line
                self.lines.current = [number, indent + len(text) - len(rest), rest]
                item = self.block_mapping(self.lines.current[1], depth + 1)
            else:
                end = self.lines.body_end
                self.lines.advance()
                item = self.value(rest, indent, number, depth, in_mapping=False, end=end)
            items.append(item)
            count += item_size(item)
            self.budget.check_sequence(count, f"ending on line {number}")
            if not hasattr(item, "nbytes"):
                self.budget.spend(ITEM_BYTES, f"line {number}")
        return finish_sequence(items)

    def value(self, rest, indent, number, depth, *, in_mapping, matrix=None, end=None):
        """The node ``rest`` (the end of line ``number``, at ``end`` in the text when known) starts."""
        tag = None
        if rest.startswith("!"):
            tag, _, rest = rest.partition(" ")
            rest = rest.strip()
            if tag in ("!!binary", "!binary"):
                raise ValueError(f"base64-encoded data on line {number} is not supported: write the file "
                                 "without FileStorage::BASE64")
        if rest.startswith(("&", "*")):
            raise ValueError(f"YAML anchors and aliases are refused (line {number})")
        following = self.lines.current
        if not rest:
            if following is not None and following[1] > indent:
                node = self.block(following[1], depth + 1)
            elif following is not None and in_mapping and following[1] == indent and _is_item(following[2]):
                node = self.block_sequence(indent, depth + 1)
            else:
                node = None
        elif rest[0] in "[{":
            node = self.flow(rest, number, end, matrix)
        elif rest[0] in "\"'":
            node = parse_flow(rest, self.budget, f"on line {number}")
        else:
            node = scalar(rest)
        if isinstance(node, str):
            node = check_string(node, f"on line {number}")
        if tag is not None and isinstance(node, dict):
            node.setdefault("type_id", tag.lstrip("!"))
        return node

    def flow(self, rest, number, end, matrix):
        """A flow collection opened by ``rest`` on line ``number``, read in place in the text where it can be.

        In place when the line's end in the text is known and the collection closes on it, or further on
        where :meth:`_Lines.take_flow` finds its end; otherwise its lines are joined (:meth:`flow_text`).
        """
        where, depth = f"from line {number}", _depth(rest)
        if end is not None:
            stop = end if depth <= 0 else (self.lines.take_flow(depth) if self.lines.current is not None else None)
            if stop is not None:
                return parse_flow(self.lines.text, self.budget, where, matrix=matrix, start=end - len(rest),
                                  stop=stop)
        return parse_flow(self.flow_text(rest, number), self.budget, where, matrix=matrix)

    def flow_text(self, rest, number):
        """The text of a flow collection opened on line ``number``, its following lines joined once."""
        depth, pieces = _depth(rest), [rest]
        while depth > 0:
            line = self.lines.current
            if line is None:
                raise ValueError(f"the flow collection opened on line {number} is not closed (truncated?)")
            pieces.append(line[2])
            depth += _depth(line[2])
            self.lines.advance()
        return " ".join(pieces)


def _strip_comment(line):
    """``line`` without its ``# comment``; a ``#`` inside a quoted string (with ``\\"`` or ``''`` in it) stays."""
    if "#" not in line:
        return line
    quote, i = None, 0
    while i < len(line):
        char = line[i]
        if quote:
            if char == "\\" and quote == '"':
                i += 1  # the escaped character cannot end the string
            elif char == quote and quote == "'" and line[i + 1:i + 2] == "'":
                i += 1  # '' is a quote inside a single-quoted string
            elif char == quote:
                quote = None
        elif char in "\"'" and (i == 0 or line[i - 1] in " [{,:"):
            quote = char
        elif char == "#" and (i == 0 or line[i - 1] in " \t"):
            return line[:i]
        i += 1
    return line


_KEY = re.compile(r"([^:\s][^:]*?)\s*:(?:\s+|$)")  # the spaces after the colon too: the value is not copied again


def _key_split(text):
    if text[0] in "\"'":
        end = text.find(text[0], 1)
        if end > 0 and text[end + 1:end + 2] == ":":
            return text[:end + 1], text[end + 2:]
        return None
    match = _KEY.match(text)
    if match is None:
        return None
    return match.group(1), text[match.end():]


def _split_key(text, number):
    found = _key_split(text)
    if found is None:
        raise ValueError(f"expected 'key: value' on line {number}, got {text[:60]!r}")
    key, rest = found
    if key[0] in "\"'":
        key = parse_flow(key, default_budget(), f"on line {number}")
    return key, rest.strip()


def _depth(text):
    """Brackets opened minus closed in ``text``, quotes respected (counted in C when there are none)."""
    if "'" not in text and '"' not in text:
        return text.count("[") + text.count("{") - text.count("]") - text.count("}")
    depth, quote = 0, None
    for char in text:
        if quote:
            if char == quote:
                quote = None
        elif char in "\"'":
            quote = char
        elif char in "[{":
            depth += 1
        elif char in "]}":
            depth -= 1
    return depth


def parse_yaml(text, budget=None):
    """Parse the YAML OpenCV's FileStorage writes (``%YAML:1.0`` or ``%YAML 1.2`` header, ``!!`` tags).

    Examples
    --------
    >>> tree = parse_yaml("%YAML:1.0\\n---\\nkp: [ 1., 2 ]\\nm: !!opencv-matrix\\n   rows: 1\\n   data: [ 3 ]\\n")
    >>> tree["kp"].tolist(), tree["m"]["rows"], tree["m"]["data"].tolist(), tree["m"]["type_id"]
    ([1.0, 2.0], 1, [3], 'opencv-matrix')
    """
    text = text[1:] if text.startswith(_BOM) else text
    return _Yaml(text, default_budget() if budget is None else budget).parse()
