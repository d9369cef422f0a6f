"""The FILTER expression language of Redis 8's ``VSIM``: parsed once per query into a
predicate over an element's JSON attributes, evaluated inside the HNSW search.

Grammar (Redis's precedences, loosest first): ``or``/``||``; ``and``/``&&``; the
comparisons ``> >= < <= == !=`` and ``in``; ``+ -``; ``* / %``; ``**`` (right-associative);
the unary ``!``/``not`` and ``-``; then numbers, strings in single or double quotes
(backslash escapes), ``true``/``false`` (1 and 0), arrays ``[a, b, ...]`` for ``in``,
parentheses, and selectors ``.field`` (letters, digits, ``_`` and ``-``) naming a key at
the first level of the element's JSON object.

Values: numbers (floats), strings, tuples. JSON numbers are numbers, strings strings,
booleans 1/0, arrays of numbers and strings tuples; anything else (objects, null, mixed
arrays) cannot be used. An element whose attributes are missing or not a JSON object, or
whose expression touches a field that is missing or unusable, does not match; that is never
an error. ``in`` tests membership in a tuple, or a substring when both sides are strings.
A syntax error is ``FilterSyntaxError`` carrying the text from where the parser stopped.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from typing import Any

Value = float | str | tuple[Any, ...]
Node = Callable[[dict[str, Any]], Value]
Predicate = Callable[[dict[str, Any]], bool]

_TOKEN = re.compile(r"""
    \s*(?:
      (?P<num>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)
    | (?P<sel>\.[A-Za-z_][A-Za-z0-9_\-]*)
    | (?P<str>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')
    | (?P<op>\*\*|>=|<=|==|!=|&&|\|\||[-+*/%<>!()\[\],])
    | (?P<word>[A-Za-z_]+)
    )""", re.VERBOSE)
_WORDS = {"and": "and", "or": "or", "not": "!", "in": "in", "&&": "and", "||": "or"}
_BINARY = {"or": 0, "and": 1, ">": 2, ">=": 2, "<": 2, "<=": 2, "==": 2, "!=": 2, "in": 2,
           "+": 3, "-": 3, "*": 4, "/": 4, "%": 4, "**": 5}


class FilterSyntaxError(ValueError):
    """A FILTER expression that does not parse; ``near`` is the text where it stopped."""

    def __init__(self, near: str) -> None:
        super().__init__(near)
        self.near = near


class _NoMatch(Exception):
    """Evaluation met a missing field or a value it cannot use: the element fails."""


def _tokens(text: str) -> list[tuple[str, Any, int]]:
    out: list[tuple[str, Any, int]] = []
    pos = 0
    while True:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos >= len(text):
            break
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            raise FilterSyntaxError(text[pos:])
        start = m.start(m.lastgroup) if m.lastgroup else pos
        kind = m.lastgroup or ""
        raw = m.group(kind)
        if kind == "num":
            out.append(("val", float(raw), start))
        elif kind == "sel":
            out.append(("sel", raw[1:], start))
        elif kind == "str":
            out.append(("val", _unescape(raw[1:-1]), start))
        elif kind == "word":
            word = raw.lower()
            if word in ("true", "false"):
                out.append(("val", 1.0 if word == "true" else 0.0, start))
            elif word in _WORDS:
                out.append(("op", _WORDS[word], start))
            else:
                raise FilterSyntaxError(text[start:])
        else:
            out.append(("op", _WORDS.get(raw, raw), start))
        pos = m.end()
    return out


def _unescape(body: str) -> str:
    return re.sub(r"\\(.)", lambda m: {"n": "\n", "t": "\t", "r": "\r"}.get(m.group(1),
                                                                             m.group(1)), body)


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.toks = _tokens(text)
        self.i = 0

    def fail(self) -> FilterSyntaxError:
        at = self.toks[self.i][2] if self.i < len(self.toks) else 0
        return FilterSyntaxError(self.text[at:])

    def peek(self) -> tuple[str, Any, int] | None:
        return self.toks[self.i] if self.i < len(self.toks) else None

    def take_op(self, op: str) -> bool:
        tok = self.peek()
        if tok is not None and tok[0] == "op" and tok[1] == op:
            self.i += 1
            return True
        return False

    def expression(self, min_prec: int = 0) -> Node:
        left = self.unary()
        while True:
            tok = self.peek()
            if tok is None or tok[0] != "op" or tok[1] not in _BINARY:
                return left
            prec = _BINARY[tok[1]]
            if prec < min_prec:
                return left
            self.i += 1
            right = self.expression(prec if tok[1] == "**" else prec + 1)
            left = _binary(tok[1], left, right)

    def unary(self) -> Node:
        if self.take_op("!"):
            inner = self.unary()
            return lambda attrs: 0.0 if _truth(inner(attrs)) else 1.0
        if self.take_op("-"):
            inner = self.unary()
            return lambda attrs: -_num(inner(attrs))
        return self.power()

    def power(self) -> Node:
        base = self.primary()
        if self.take_op("**"):
            exponent = self.unary()  # right-associative, binds tighter than unary minus
            return _binary("**", base, exponent)
        return base

    def primary(self) -> Node:
        tok = self.peek()
        if tok is None:
            raise self.fail()
        kind, value, _ = tok
        if kind == "val":
            self.i += 1
            return lambda attrs: value
        if kind == "sel":
            self.i += 1
            return lambda attrs: _field(attrs, value)
        if self.take_op("("):
            inner = self.expression()
            if not self.take_op(")"):
                raise self.fail()
            return inner
        if self.take_op("["):
            items: list[Node] = []
            if not self.take_op("]"):
                while True:
                    items.append(self.expression())
                    if self.take_op("]"):
                        break
                    if not self.take_op(","):
                        raise self.fail()
            return lambda attrs: tuple(item(attrs) for item in items)
        raise self.fail()


def _field(attrs: dict[str, Any], name: str) -> Value:
    if name not in attrs:
        raise _NoMatch
    value = attrs[name]
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(
            isinstance(v, int | float | str) and not isinstance(v, bool) for v in value):
        return tuple(float(v) if not isinstance(v, str) else v for v in value)
    raise _NoMatch


def _num(value: Value) -> float:
    if isinstance(value, float):
        return value
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            raise _NoMatch from None
    raise _NoMatch


def _truth(value: Value) -> bool:
    if isinstance(value, float):
        return value != 0.0
    return len(value) > 0


def _equal(a: Value, b: Value) -> bool:
    if isinstance(a, str) and isinstance(b, str):
        return a == b
    if isinstance(a, tuple) or isinstance(b, tuple):
        return a == b
    return _num(a) == _num(b)


def _order(a: Value, b: Value) -> tuple[Any, Any]:
    if isinstance(a, str) and isinstance(b, str):
        return a, b
    return _num(a), _num(b)


def _contains(a: Value, b: Value) -> bool:
    if isinstance(b, tuple):
        return any(_safe_equal(a, item) for item in b)
    if isinstance(a, str) and isinstance(b, str):
        return a in b
    return False


def _safe_equal(a: Value, b: Value) -> bool:
    try:
        return _equal(a, b)
    except _NoMatch:
        return False


def _arith(op: str, x: float, y: float) -> float:
    try:
        if op == "+":
            return x + y
        if op == "-":
            return x - y
        if op == "*":
            return x * y
        if op == "/":
            return x / y
        if op == "%":
            return math.fmod(x, y)
        return float(x ** y)
    except (ZeroDivisionError, OverflowError, ValueError):
        raise _NoMatch from None


def _binary(op: str, left: Node, right: Node) -> Node:
    def as_float(flag: bool) -> float:
        return 1.0 if flag else 0.0

    if op == "and":
        return lambda attrs: as_float(_truth(left(attrs)) and _truth(right(attrs)))
    if op == "or":
        return lambda attrs: as_float(_truth(left(attrs)) or _truth(right(attrs)))
    if op == "==":
        return lambda attrs: as_float(_equal(left(attrs), right(attrs)))
    if op == "!=":
        return lambda attrs: as_float(not _equal(left(attrs), right(attrs)))
    if op == "in":
        return lambda attrs: as_float(_contains(left(attrs), right(attrs)))
    if op in (">", ">=", "<", "<="):
        def compare(attrs: dict[str, Any]) -> Value:
            a, b = _order(left(attrs), right(attrs))
            if op == ">":
                return as_float(a > b)
            if op == ">=":
                return as_float(a >= b)
            if op == "<":
                return as_float(a < b)
            return as_float(a <= b)
        return compare
    return lambda attrs: _arith(op, _num(left(attrs)), _num(right(attrs)))


def compile_filter(text: str) -> Predicate:
    """The predicate of a FILTER expression over parsed JSON attributes (a dict)."""
    parser = _Parser(text)
    if not parser.toks:
        raise FilterSyntaxError(text)
    node = parser.expression()
    if parser.i != len(parser.toks):
        raise parser.fail()

    def predicate(attrs: dict[str, Any]) -> bool:
        try:
            return _truth(node(attrs))
        except _NoMatch:
            return False

    return predicate


def parse_attributes(raw: bytes | None) -> dict[str, Any] | None:
    """An element's attributes as a dict, or None (absent, not JSON, not an object)."""
    if not raw:
        return None
    try:
        value = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return None
    return value if isinstance(value, dict) else None
