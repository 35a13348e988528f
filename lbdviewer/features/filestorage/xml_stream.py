"""The XML OpenCV's FileStorage writes, read as a stream (expat) in linear time and bounded memory.

``<opencv_storage>`` holds the top-level nodes; an element whose children are
all named ``_`` is a sequence, other children make a mapping, and the text of
a leaf is one scalar, a quoted string or a white-space separated run of
numbers. Text is converted to numbers while it streams in, a chunk at a time
(:func:`~lbdviewer.features.filestorage.values.numbers`), so a long ``<data>``
never sits in memory as text; the
:class:`~lbdviewer.features.filestorage.values.Budget` is checked as values
arrive. A DOCTYPE (and so any entity declaration) is refused as soon as the
parser meets it: no entity is ever expanded.
"""

from __future__ import annotations

import xml.parsers.expat as expat

import numpy as np

from lbdviewer.features.filestorage.values import (CHUNK_CHARS, ITEM_BYTES, MAX_DEPTH, check_string,
                                                   finish_sequence, item_size, numbers, scalar)

__all__ = ["parse_xml"]

#: Bytes handed to the XML parser at once.
FEED_BYTES = 2**20


class _Element:
    """One open element: its text so far (numbers converted as they come) or its children."""

    def __init__(self, tag, attributes, matrix):
        self.tag, self.attributes, self.matrix = tag, attributes, matrix
        self.pending, self.pending_chars = [], 0
        self.converted, self.count = [], 0
        self.items, self.mapping, self.names = [], {}, set()

    def where(self):
        return f"in <{self.tag}>"

    def add_text(self, text, budget):
        if self.items:
            if text.strip():
                raise ValueError(f"text {text.strip()[:20]!r} beside child elements {self.where()}")
            return
        self.pending.append(text)
        self.pending_chars += len(text)
        if self.pending_chars > CHUNK_CHARS:
            joined = "".join(self.pending)
            cut = max(joined.rfind(" "), joined.rfind("\n"), joined.rfind("\t"))
            if cut <= 0:
                raise ValueError(f"a word of more than {CHUNK_CHARS:,} characters {self.where()}")
            self._convert(joined[:cut], budget)
            self.pending, self.pending_chars = [joined[cut:]], len(joined) - cut

    def _convert(self, text, budget):
        matrix = None if self.matrix is None else (self.matrix[0] - self.count, self.matrix[1])
        values = numbers(text, self.where(), budget, sep=" ", matrix=matrix)
        if values is None:
            raise ValueError(f"the text {self.where()} is more than {CHUNK_CHARS:,} characters and not numbers")
        self.converted.append(values)
        self.count += values.shape[0]
        if self.matrix is None:
            budget.check_sequence(self.count, self.where())

    def add_child(self, tag, value, budget):
        text = "".join(self.pending)
        if text.strip() or self.converted:
            raise ValueError(f"text {text.strip()[:20]!r} beside child elements {self.where()}")
        self.pending, self.pending_chars = [], 0
        self.items.append(value)
        self.names.add(tag)
        if tag != "_":
            if tag in self.mapping:
                raise ValueError(f"duplicate element <{tag}> {self.where()}")
            self.mapping[tag] = value
        else:  # an item of a sequence: counted against the values one sequence may hold
            self.count += item_size(value)
            budget.check_sequence(self.count, self.where())
        budget.spend(ITEM_BYTES, self.where())

    def value(self, budget, *, top):
        if self.items:
            if not top and self.names == {"_"}:
                return finish_sequence(self.items)
            if "_" in self.names:
                raise ValueError(f"unnamed <_> elements beside named ones {self.where()}")
            if "type_id" in self.attributes:
                self.mapping.setdefault("type_id", self.attributes["type_id"])
            return self.mapping
        text = "".join(self.pending).strip()
        if self.converted:
            if text:
                self._convert(text, budget)
            return np.concatenate(self.converted)
        if top:
            if text:
                raise ValueError(f"text {text[:20]!r} directly in <{self.tag}>")
            return {}
        if len(text) >= 2 and text[0] == text[-1] == '"':  # one string; OpenCV writes its quotes as &quot;
            return check_string(text[1:-1], self.where())
        if not text:
            return None if self.matrix is None else np.empty(0, dtype=self.matrix[1] or np.int64)
        values = numbers(text, self.where(), budget, sep=" ", matrix=self.matrix)
        if values is not None:
            return values if values.shape[0] != 1 or self.matrix is not None else values[0].item()
        tokens = [scalar(token) for token in text.split()]
        tokens = [check_string(t, self.where()) if isinstance(t, str) else t for t in tokens]
        return tokens[0] if len(tokens) == 1 else tokens


def parse_xml(data, budget):
    """Parse the XML OpenCV's FileStorage writes (bytes; a BOM and any declared encoding are understood).

    Examples
    --------
    >>> from lbdviewer.features.filestorage.values import Budget
    >>> tree = parse_xml(b'<?xml version="1.0"?><opencv_storage><kp>1. 2 3</kp><d>orb</d></opencv_storage>',
    ...                  Budget(max_values=9, max_matrix_values=9))
    >>> tree["kp"].tolist(), tree["d"]
    ([1.0, 2.0, 3.0], 'orb')
    """
    parser = expat.ParserCreate()
    stack, result = [], []

    def refuse(*_):
        raise ValueError("XML with a DOCTYPE or ENTITY declaration is refused (no entity is expanded)")

    def start(tag, attributes):
        if not stack and tag != "opencv_storage":
            raise ValueError(f"the XML root must be <opencv_storage>, got <{tag}>")
        if len(stack) > MAX_DEPTH:
            raise ValueError(f"XML elements nested deeper than {MAX_DEPTH}")
        matrix = budget.check_matrix(stack[-1].mapping, stack[-1].where()) if stack and tag == "data" else None
        stack.append(_Element(tag, attributes, matrix))

    def end(tag):
        element = stack.pop()
        value = element.value(budget, top=not stack)
        if stack:
            stack[-1].add_child(tag, value, budget)
        else:
            result.append(value)

    def text(chunk):
        if stack:
            stack[-1].add_text(chunk, budget)

    parser.buffer_text = True
    parser.buffer_size = 1 << 16
    parser.StartDoctypeDeclHandler = refuse
    parser.EntityDeclHandler = refuse
    parser.StartElementHandler = start
    parser.EndElementHandler = end
    parser.CharacterDataHandler = text
    parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
    try:
        for offset in range(0, len(data), FEED_BYTES):
            parser.Parse(data[offset:offset + FEED_BYTES], False)
        parser.Parse(b"", True)
    except expat.ExpatError as error:
        raise ValueError(f"not well-formed XML (truncated?): {expat.ErrorString(error.code)}: line "
                         f"{error.lineno}, column {error.offset}") from None
    if not result:
        raise ValueError("not well-formed XML (truncated?): no <opencv_storage> element")
    return result[0]
