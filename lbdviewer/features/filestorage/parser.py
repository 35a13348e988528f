"""Parsers of the text formats of OpenCV's ``cv::FileStorage``: YAML, XML and JSON.

Only the subset OpenCV writes is read, by this module's own code: no pickle,
no ``eval``, no YAML anchors or aliases, XML without a DOCTYPE (so no entity
can expand), JSON by :mod:`json` with duplicate keys refused. A file larger
than :data:`MAX_FILE_BYTES` is refused before it is read. Base64-encoded data
(``FileStorage::BASE64``) is refused with a message saying so.
:mod:`lbdviewer.features.filestorage.reader` turns the parsed nodes into features.
"""

from __future__ import annotations

import json
import math
import os
import re
import xml.etree.ElementTree as ElementTree

#: File suffixes read and written as FileStorage, and their format.
SUFFIXES = {".yml": "yaml", ".yaml": "yaml", ".xml": "xml", ".json": "json"}
FORMATS = ("yaml", "xml", "json")
#: Largest FileStorage file read (bytes): about 250 000 ORB keypoints in YAML.
MAX_FILE_BYTES = 64 * 2**20


def format_of(path):
    """The FileStorage format of ``path`` from its suffix, or None for other files.

    Examples
    --------
    >>> format_of("a/features.yml"), format_of("f.JSON"), format_of("f.npz")
    ('yaml', 'json', None)
    """
    return SUFFIXES.get(os.path.splitext(os.fspath(path))[1].lower())



def read_tree(path):
    """The top-level mapping of a FileStorage file as plain Python values.

    Matrices become dicts with ``type_id == "opencv-matrix"``; sequences
    become lists; numbers int or float; other scalars str.

    Parameters
    ----------
    path : str or os.PathLike
        ``.yml``, ``.yaml``, ``.xml`` or ``.json``.

    Returns
    -------
    dict

    Raises
    ------
    ValueError
        If the file cannot be read, is larger than :data:`MAX_FILE_BYTES`,
        or is not well-formed in its format (the message names the line).
    """
    name = os.fspath(path)
    kind = format_of(name)
    if kind is None:
        raise ValueError(f"{name!r} is not a FileStorage file: its suffix must be one of {tuple(SUFFIXES)}")
    try:
        size = os.path.getsize(name)
        if size > MAX_FILE_BYTES:
            raise ValueError(f"FileStorage file {name!r} has {size} bytes, more than the {MAX_FILE_BYTES} "
                             "this reader accepts")
        with open(name, "rb") as handle:
            raw = handle.read(MAX_FILE_BYTES + 1)
    except OSError as error:
        raise ValueError(f"cannot read FileStorage file {name!r}: {error}") from error
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ValueError(f"FileStorage file {name!r} is not UTF-8 text (gzip is not read): {error}") from error
    parse = {"yaml": parse_yaml, "xml": parse_xml, "json": parse_json}[kind]
    try:
        tree = parse(text)
    except ValueError as error:
        raise ValueError(f"FileStorage file {name!r}: {error}") from error
    if not isinstance(tree, dict):
        raise ValueError(f"FileStorage file {name!r} must hold a mapping at the top, got {type(tree).__name__}")
    return tree


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


def _unquote(text, where):
    quote = text[0]
    if len(text) < 2 or text[-1] != quote:
        raise ValueError(f"unterminated string {text[:40]!r} {where}")
    body = text[1:-1]
    if quote == "'":
        return body.replace("''", "'")
    try:
        return json.loads(f'"{body}"')
    except json.JSONDecodeError as error:
        raise ValueError(f"bad escape in string {text[:40]!r} {where}") from error


def _refuse_base64(value, where):
    if isinstance(value, str) and value.startswith("$base64$"):
        raise ValueError(f"base64-encoded data {where} is not supported: write the file without "
                         "FileStorage::BASE64")
    return value


class _Yaml:
    """The YAML subset OpenCV writes: block mappings and sequences, flow ``[..]``/``{..}``, tags."""

    def __init__(self, text):
        self.lines = []  # (line number, indent, text without comment)
        body = False
        for number, line in enumerate(text.splitlines(), 1):
            if not body and (line.startswith("%") or not line.strip()):
                continue
            if not body and line.startswith("---"):
                body = True
                line = line[3:]
                if not line.strip():
                    continue
            body = True
            stripped = _strip_comment(line).rstrip()
            if stripped.strip() in ("", "..."):
                continue
            if "\t" in line[:len(line) - len(line.lstrip())]:
                raise ValueError(f"tab in the indentation on line {number}")
            self.lines.append([number, len(stripped) - len(stripped.lstrip()), stripped.strip()])
        self.pos = 0

    def parse(self):
        if not self.lines:
            return {}
        node = self.block(self.lines[0][1])
        if self.pos < len(self.lines):
            number = self.lines[self.pos][0]
            raise ValueError(f"unexpected indentation on line {number}")
        return node

    def block(self, indent):
        text = self.lines[self.pos][2]
        if text == "-" or text.startswith("- "):
            return self.block_sequence(indent)
        return self.block_mapping(indent)

    def block_mapping(self, indent):
        out = {}
        while self.pos < len(self.lines) and self.lines[self.pos][1] == indent:
            number, _, text = self.lines[self.pos]
            if text == "-" or text.startswith("- "):
                break
            key, rest = _split_key(text, number)
            if key in out:
                raise ValueError(f"duplicate key {key!r} on line {number}")
            self.pos += 1
            out[key] = self.value(rest, indent, number, in_mapping=True)
        return out

    def block_sequence(self, indent):
        out = []
        while self.pos < len(self.lines) and self.lines[self.pos][1] == indent:
            number, _, text = self.lines[self.pos]
            if not (text == "-" or text.startswith("- ")):
                break
            rest = text[1:].lstrip()
            if rest and rest[0] not in "[{\"'!" and _key_split(rest) is not None:
                # "- key: value": a mapping whose first entry shares the dash's line
                self.lines[self.pos] = [number, indent + len(text) - len(rest), rest]
                out.append(self.block_mapping(self.lines[self.pos][1]))
                continue
            self.pos += 1
            out.append(self.value(rest, indent, number, in_mapping=False))
        return out

    def value(self, rest, indent, number, *, in_mapping):
        tag = None
        if rest.startswith("!"):
            tag, _, rest = rest.partition(" ")
            rest = rest.strip()
            if tag in ("!!binary", "!binary"):
                raise ValueError(f"base64-encoded data on line {number} is not supported: write the file "
                                 "without FileStorage::BASE64")
            if tag.startswith("&") or tag.startswith("*"):
                raise ValueError(f"YAML anchors and aliases are refused (line {number})")
        if rest.startswith(("&", "*")):
            raise ValueError(f"YAML anchors and aliases are refused (line {number})")
        if not rest:
            following = self.lines[self.pos] if self.pos < len(self.lines) else None
            if following is not None and following[1] > indent:
                node = self.block(following[1])
            elif (following is not None and in_mapping and following[1] == indent
                  and (following[2] == "-" or following[2].startswith("- "))):
                node = self.block_sequence(indent)
            else:
                node = None
        elif rest[0] in "[{":
            while _depth(rest) > 0:
                if self.pos >= len(self.lines):
                    raise ValueError(f"the flow collection opened on line {number} is not closed (truncated?)")
                rest += " " + self.lines[self.pos][2]
                self.pos += 1
            node = _flow(rest, f"from line {number}")
        elif rest[0] in "\"'":
            node = _unquote(rest, f"on line {number}")
        else:
            node = scalar(rest)
        if tag is not None and isinstance(node, dict):
            node.setdefault("type_id", tag.lstrip("!"))
        return _refuse_base64(node, f"on line {number}")


def _strip_comment(line):
    quote = None
    for i, char in enumerate(line):
        if quote:
            if char == "\\" and quote == '"':
                continue
            if char == quote:
                quote = None
        elif char in "\"'" and (i == 0 or line[i - 1] in " [{,:"):
            quote = char
        elif char == "#" and (i == 0 or line[i - 1] in " \t"):
            return line[:i]
    return line


def _key_split(text):
    if text[0] in "\"'":
        end = text.find(text[0], 1)
        if end > 0 and text[end + 1:end + 2] == ":":
            return text[:end + 1], text[end + 2:]
        return None
    match = re.match(r"([^:\s][^:]*?)\s*:(\s|$)", text)
    if match is None:
        return None
    return match.group(1), text[match.end():]


def _split_key(text, number):
    found = _key_split(text)
    if found is None:
        raise ValueError(f"expected 'key: value' on line {number}, got {text[:60]!r}")
    key, rest = found
    if key[0] in "\"'":
        key = _unquote(key, f"on line {number}")
    return key, rest.strip()


def _depth(text):
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


_NUMBERS = re.compile(r"\[[\s\d.,+\-eE]*\]\Z")


def _flow(text, where):
    """A flow collection (``[a, b]`` or ``{k: v}``) spanning the whole of ``text``."""
    if _NUMBERS.match(text):  # the common case, a long list of numbers: split, no character loop
        inner = text[1:-1].strip()
        return [] if not inner else [scalar(item) for item in inner.split(",")]
    node, end = _flow_node(text, 0, where)
    if text[end:].strip():
        raise ValueError(f"unexpected {text[end:end + 20]!r} after the flow collection {where}")
    return node


def _skip(text, i):
    while i < len(text) and text[i] in " \t":
        i += 1
    return i


def _after_item(text, i, close, where):
    """Index after the ``,`` that follows an item of a flow collection ending in ``close``.

    At ``close`` (or the end of ``text``) the index stays where it is; any
    other character is an error.
    """
    i = _skip(text, i)
    if i < len(text) and text[i] == ",":
        return _skip(text, i + 1)
    if i < len(text) and text[i] != close:
        raise ValueError(f"expected ',' or '{close}' at {text[i:i + 20]!r} {where}")
    return i


def _closed(text, i, opener, where):
    """Index after the closing bracket at ``i`` of a flow collection opened by ``opener``."""
    if i >= len(text):
        raise ValueError(f"a '{opener}' {where} is not closed (truncated?)")
    return i + 1


def _flow_node(text, i, where, stop=",]}"):
    i = _skip(text, i)
    if i >= len(text):
        raise ValueError(f"the flow collection {where} ends early (truncated?)")
    char = text[i]
    if char == "[":
        items, i = [], _skip(text, i + 1)
        while i < len(text) and text[i] != "]":
            item, i = _flow_node(text, i, where)
            items.append(item)
            i = _after_item(text, i, "]", where)
        return items, _closed(text, i, "[", where)
    if char == "{":
        mapping, i = {}, _skip(text, i + 1)
        while i < len(text) and text[i] != "}":
            key, i = _flow_node(text, i, where, stop=":,}")
            i = _skip(text, i)
            if i >= len(text) or text[i] != ":":
                raise ValueError(f"expected ':' after key {key!r} {where}")
            if not isinstance(key, str) or key in mapping:
                raise ValueError(f"bad or duplicate key {key!r} {where}")
            value, i = _flow_node(text, i + 1, where)
            mapping[key] = _refuse_base64(value, where)
            i = _after_item(text, i, "}", where)
        return mapping, _closed(text, i, "{", where)
    if char in "\"'":
        end = i + 1
        while end < len(text) and text[end] != char:
            end += 2 if (text[end] == "\\" and char == '"') else 1
        if end >= len(text):
            raise ValueError(f"unterminated string {where}")
        return _unquote(text[i:end + 1], where), end + 1
    if char in "&*!":
        raise ValueError(f"YAML anchors, aliases and tags inside flow collections are refused {where}")
    end = i
    while end < len(text) and text[end] not in stop:
        end += 1
    token = text[i:end]
    return (token.strip() if ":" in stop else scalar(token)), end


def parse_yaml(text):
    """Parse the YAML OpenCV's FileStorage writes (``%YAML:1.0`` or ``%YAML 1.2`` header, ``!!`` tags).

    Examples
    --------
    >>> parse_yaml("%YAML:1.0\\n---\\nkp: [ 1., 2 ]\\nm: !!opencv-matrix\\n   rows: 1\\n   data: [ 3 ]\\n")
    {'kp': [1.0, 2], 'm': {'rows': 1, 'data': [3], 'type_id': 'opencv-matrix'}}
    """
    return _Yaml(text).parse()


def parse_xml(text):
    """Parse the XML OpenCV's FileStorage writes (``<opencv_storage>``); DOCTYPEs are refused.

    A node with children named ``_`` is a sequence, other children make a
    mapping, and text is split at white space into one scalar or a sequence.

    Examples
    --------
    >>> parse_xml('<?xml version="1.0"?><opencv_storage><kp>1. 2 3</kp><d>orb</d></opencv_storage>')
    {'kp': [1.0, 2, 3], 'd': 'orb'}
    """
    if re.search(r"<!(DOCTYPE|ENTITY)", text, re.IGNORECASE):
        raise ValueError("XML with a DOCTYPE or ENTITY declaration is refused (no entity is expanded)")
    try:
        root = ElementTree.fromstring(text)
    except ElementTree.ParseError as error:
        raise ValueError(f"not well-formed XML (truncated?): {error}") from error
    if root.tag != "opencv_storage":
        raise ValueError(f"the XML root must be <opencv_storage>, got <{root.tag}>")
    return _xml_node(root, mapping=True)


def _xml_node(element, *, mapping=False):
    children = list(element)
    where = f"in <{element.tag}>"
    if children:
        if not mapping and all(child.tag == "_" for child in children):
            return [_xml_node(child) for child in children]
        out = {}
        for child in children:
            if child.tag in out:
                raise ValueError(f"duplicate element <{child.tag}> {where}")
            out[child.tag] = _xml_node(child)
        if "type_id" in element.attrib:
            out.setdefault("type_id", element.attrib["type_id"])
        return out
    if mapping:
        return {}
    text = (element.text or "").strip()
    if len(text) >= 2 and text[0] == text[-1] == '"':  # one string; OpenCV writes its quotes as &quot;
        return _refuse_base64(text[1:-1], where)
    tokens = [scalar(t) for t in text.split()]
    tokens = [_refuse_base64(t, where) for t in tokens]
    return tokens[0] if len(tokens) == 1 else tokens


def parse_json(text):
    """Parse the JSON OpenCV's FileStorage writes; duplicate keys are refused.

    Examples
    --------
    >>> parse_json('{"kp": [1.0, 2], "d": "orb"}')
    {'kp': [1.0, 2], 'd': 'orb'}
    """
    def pairs(items):
        out = {}
        for key, value in items:
            if key in out:
                raise ValueError(f"duplicate key {key!r}")
            out[key] = _refuse_base64(value, f"at key {key!r}")
        return out

    try:
        return json.loads(text, object_pairs_hook=pairs)
    except json.JSONDecodeError as error:
        raise ValueError(f"not valid JSON (truncated?): {error}") from error
