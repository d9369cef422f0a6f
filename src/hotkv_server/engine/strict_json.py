"""Strict JSON for the ``META`` arguments: what every language's JSON parser accepts.

Python's ``json`` takes ``NaN``, ``Infinity`` and ``-Infinity`` (not JSON; other clients'
parsers choke on them when the metadata comes back) and recurses once per nesting level,
so a request nested a thousand levels deep ends in ``RecursionError``. ``load_object``
refuses both with one line naming the argument: nesting is counted before parsing (a scan
that costs nothing for the usual flat objects), and non-finite numbers are refused while
parsing (``1e999`` included, which Python reads as infinity).
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

#: how deep objects and arrays may nest in a META value (RedisJSON allows 128; metadata
#: needs far fewer, and the limit keeps every parser's recursion well within its stack)
MAX_DEPTH = 64

_STRUCTURE = re.compile(rb'[\[\]{}"\\]')


class JSONRejected(ValueError):
    """The value is not strict JSON; ``reason`` says why (``expected ...`` text)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _not_json(text: str) -> Any:
    raise JSONRejected(f"a JSON object without {text} (not valid JSON)")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise JSONRejected(f"a JSON object with finite numbers, got {text}")
    return value


def nesting_depth(raw: bytes) -> int:
    """How deep ``[`` and ``{`` nest in ``raw``, outside strings (for valid or broken JSON)."""
    depth = deepest = 0
    in_string = escaped = False
    escape_at = -2
    for match in _STRUCTURE.finditer(raw):
        char = match.group()
        if in_string:
            if escaped:
                # the escaped character is this one only if it follows the backslash at once
                escaped = False
                if match.start() == escape_at + 1:
                    continue
            if char == b"\\":
                escaped = True
                escape_at = match.start()
            elif char == b'"':
                in_string = False
            continue
        if char == b'"':
            in_string = True
        elif char in (b"[", b"{"):
            depth += 1
            if depth > deepest:
                deepest = depth
        elif char in (b"]", b"}"):
            depth -= 1
    return deepest


def load_object(raw: bytes) -> dict[str, Any]:
    """The JSON object in ``raw``; JSONRejected (with the ``expected ...`` reason) if it is
    not one, nests deeper than MAX_DEPTH, or holds NaN/Infinity."""
    # a flat object cannot be too deep: only count when there are enough brackets to be
    if raw.count(b"[") + raw.count(b"{") > MAX_DEPTH and nesting_depth(raw) > MAX_DEPTH:
        raise JSONRejected(f"a JSON object nested at most {MAX_DEPTH} levels deep")
    try:
        value = json.loads(raw, parse_constant=_not_json, parse_float=_finite)
    except JSONRejected:
        raise
    except (ValueError, UnicodeDecodeError, RecursionError):
        raise JSONRejected("a JSON object") from None
    if not isinstance(value, dict):
        raise JSONRejected("a JSON object")
    return value
