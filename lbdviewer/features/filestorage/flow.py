"""Flow collections (YAML's ``[..]`` and ``{..}``) and JSON, read in one pass in linear time.

One scanner serves both: OpenCV writes JSON and YAML's flow collections alike
(``{"rows": 2, "data": [1, 2]}``, ``[ 68., 84., 31. ]``). Each step matches a
regular expression at the current position, so the cost is linear in the
text; a sequence of numbers alone is converted in bulk by
:func:`~lbdviewer.features.filestorage.values.numbers` and never becomes one
Python object a number. The :class:`~lbdviewer.features.filestorage.values.Budget`
is checked as items are added; nesting deeper than
:data:`~lbdviewer.features.filestorage.values.MAX_DEPTH` is refused.
"""

from __future__ import annotations

import json
import re

from lbdviewer.features.filestorage.values import (ITEM_BYTES, MAX_DEPTH, check_string, finish_sequence, item_size,
                                                   numbers, scalar)

__all__ = ["parse_flow", "parse_json"]

_SPACE = re.compile(r"\s*")
_NUMBER_RUN = re.compile(r"\[([\s\d.,+\-eE]*)\]")
_DOUBLE = re.compile(r'"(?:[^"\\\n]|\\.)*"')
_SINGLE = re.compile(r"'(?:[^']|'')*'")
_PLAIN_VALUE = re.compile(r"[^,\[\]{}\s](?:[^,\[\]{}]*[^,\[\]{}\s])?")
_PLAIN_KEY = re.compile(r"[^,:\[\]{}\s](?:[^,:\[\]{}]*[^,:\[\]{}\s])?")
_JSON_WORDS = {"true": True, "false": False, "null": None}


class _Scanner:
    def __init__(self, text, budget, where, *, json_mode, stop=None):
        self.text, self.budget, self.where, self.json = text, budget, where, json_mode
        self.end = len(text) if stop is None else stop  # the scanner reads text[:end], in place

    def skip(self, i):
        return _SPACE.match(self.text, i, self.end).end()

    def fail(self, i, problem):
        snippet = self.text[i:min(i + 30, self.end)]
        line = self.text.count("\n", 0, i) + 1 if self.json else None
        place = f"on line {line}" if line is not None else self.where
        raise ValueError(f"{problem} at {snippet!r} {place}" + ("" if snippet else " (truncated?)"))

    def node(self, i, depth, *, matrix=None):
        """The value starting at ``i`` (after white space) and the index after it."""
        i = self.skip(i)
        if i >= self.end:
            self.fail(i, "the value ends early")
        char = self.text[i]
        if char == "[":
            if depth >= MAX_DEPTH:
                self.fail(i, f"collections nested deeper than {MAX_DEPTH}")
            run = _NUMBER_RUN.match(self.text, i, self.end)
            if run is not None:
                values = numbers(self.text, self.where, self.budget, matrix=matrix, start=run.start(1),
                                 stop=run.end(1))
                if values is not None:
                    return values, run.end()
            return self.sequence(i + 1, depth + 1)
        if char == "{":
            if depth >= MAX_DEPTH:
                self.fail(i, f"collections nested deeper than {MAX_DEPTH}")
            return self.mapping(i + 1, depth + 1)
        if char in "\"'":
            return self.string(i)
        if char in "&*!" and not self.json:
            self.fail(i, "YAML anchors, aliases and tags inside flow collections are refused")
        found = _PLAIN_VALUE.match(self.text, i, self.end)
        if found is None:
            self.fail(i, "expected a value")
        token = found.group()
        if self.json:
            if token in _JSON_WORDS:
                return _JSON_WORDS[token], found.end()
            value = scalar(token)
            if isinstance(value, str):
                self.fail(i, "not valid JSON")
            return value, found.end()
        value = scalar(token)
        return (check_string(value, self.where) if isinstance(value, str) else value), found.end()

    def string(self, i):
        pattern = _DOUBLE if self.text[i] == '"' else _SINGLE
        if self.json and self.text[i] == "'":
            self.fail(i, "not valid JSON (single quotes)")
        found = pattern.match(self.text, i, self.end)
        if found is None:
            self.fail(i, "unterminated string")
        token = found.group()
        if token[0] == "'":
            text = token[1:-1].replace("''", "'")
        else:
            try:
                text = json.loads(token)
            except json.JSONDecodeError:
                self.fail(i, "bad escape in a string")
        self.budget.spend(ITEM_BYTES + len(text), self.where)
        return check_string(text, self.where), found.end()

    def after_item(self, i, close):
        i = self.skip(i)
        if i < self.end and self.text[i] == ",":
            i = self.skip(i + 1)
            if self.json and i < self.end and self.text[i] == close:
                self.fail(i, "not valid JSON (a comma before the end)")
            return i
        if i >= self.end:
            self.fail(i, f"a '{'[' if close == ']' else '{'}' is not closed")
        if self.text[i] != close:
            self.fail(i, f"expected ',' or '{close}'")
        return i

    def sequence(self, i, depth):
        items, count = [], 0
        i = self.skip(i)
        while i < self.end and self.text[i] != "]":
            item, i = self.node(i, depth)
            items.append(item)
            count += item_size(item)
            self.budget.check_sequence(count, self.where)
            if not hasattr(item, "nbytes"):
                self.budget.spend(ITEM_BYTES, self.where)
            i = self.after_item(i, "]")
        if i >= self.end:
            self.fail(i, "a '[' is not closed")
        return finish_sequence(items), i + 1

    def key(self, i):
        i = self.skip(i)
        if i < self.end and self.text[i] in "\"'":
            return self.string(i)
        if self.json:
            self.fail(i, "not valid JSON (keys are strings)")
        found = _PLAIN_KEY.match(self.text, i, self.end)
        if found is None:
            self.fail(i, "expected a key")
        return found.group(), found.end()

    def mapping(self, i, depth):
        out = {}
        i = self.skip(i)
        while i < self.end and self.text[i] != "}":
            key, i = self.key(i)
            i = self.skip(i)
            if i >= self.end or self.text[i] != ":":
                self.fail(i, f"expected ':' after key {key!r}")
            if key in out:
                self.fail(i, f"duplicate key {key!r}")
            matrix = self.budget.check_matrix(out, self.where) if key == "data" else None
            out[key], i = self.node(i + 1, depth, matrix=matrix)
            self.budget.spend(ITEM_BYTES, self.where)
            i = self.after_item(i, "}")
        if i >= self.end:
            self.fail(i, "a '{' is not closed")
        return out, i + 1


def parse_flow(text, budget, where, *, matrix=None, start=0, stop=None):
    """A YAML flow collection spanning the whole of ``text[start:stop]`` (read in place).

    ``matrix``: what :meth:`~lbdviewer.features.filestorage.values.Budget.check_matrix`
    returned when the collection is the ``data`` of an ``opencv-matrix``
    (its declared count and type), else None.

    Examples
    --------
    >>> from lbdviewer.features.filestorage.values import Budget
    >>> parse_flow("[ 1, 2., -3 ]", Budget(max_values=9, max_matrix_values=9), "here").tolist()
    [1.0, 2.0, -3.0]
    >>> parse_flow("{ a: [ [1, 2], [3, 4] ], b: 'x' }", Budget(max_values=9, max_matrix_values=9), "here")["a"].shape
    (2, 2)
    """
    scanner = _Scanner(text, budget, where, json_mode=False, stop=stop)
    node, end = scanner.node(start, 0, matrix=matrix)
    end = scanner.skip(end)
    if end < scanner.end:
        scanner.fail(end, "unexpected text after the flow collection")
    return node


def parse_json(text, budget):
    """The JSON OpenCV's FileStorage writes (a mapping at the top); duplicate keys are refused.

    Examples
    --------
    >>> from lbdviewer.features.filestorage.values import Budget
    >>> tree = parse_json('{"kp": [1.0, 2], "d": "orb"}', Budget(max_values=9, max_matrix_values=9))
    >>> tree["kp"].tolist(), tree["d"]
    ([1.0, 2.0], 'orb')
    """
    scanner = _Scanner(text, budget, "in the JSON", json_mode=True)
    start = scanner.skip(0)
    if start >= len(text) or text[start] != "{":
        scanner.fail(start, "not valid JSON (truncated?): the top must be a mapping '{'")
    node, end = scanner.node(start, 0)
    end = scanner.skip(end)
    if end < len(text):
        scanner.fail(end, "not valid JSON: text after the top-level mapping")
    return node
