"""``cjson.decode`` as Redis 7's bundled lua-cjson 2.1 decodes, byte for byte.

What a script can see, and where Python's json differs, all follow lua-cjson:

* **Tokens.** Blanks are space, tab, CR and LF; a NUL byte ends the text (Lua hands the C
  parser a NUL-terminated string), so ``[1]\\0junk`` is ``[1]``; a text whose first or
  second byte is NUL is refused as UTF-16/32. ``true``/``false``/``null`` are lowercase.
* **Numbers** are read by C's ``strtod`` with ``decode_invalid_numbers`` on (lua-cjson's
  default): ``+1``, ``01``, ``1.``, ``-.5``, hexadecimal (``0x10``, ``0x1p3``), ``Inf``,
  ``Infinity``, ``NaN`` (any case, ``nan(...)``) are numbers; ``-0`` stays -0; a number
  past a double's range is +-inf. Every number is a Lua number (a double).
* **Strings** keep any byte but NUL (raw control bytes, invalid UTF-8); ``\\uXXXX`` becomes
  UTF-8, a surrogate pair one code point, a lone or reversed surrogate an error.
* **Depth**: 1,000 nested arrays and objects at most (``decode_max_depth``); a duplicate
  object key keeps its last value.
* **Errors** are lua-cjson's texts: ``Expected <what> but found <token> at character <n>``
  (the token's type name, ``T_ARR_END`` ..., or its error: ``invalid token``, ``invalid
  number``, ``invalid escape code``, ``invalid unicode escape code``, ``unexpected end of
  string``), ``Found too many nested data structures (<depth>) at character <n>``.

The parser is iterative (no Python recursion at depth 1,000) and builds each array and
object into a Lua table as it closes (``make_table``: the runtime's ``table_from``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

#: lua-cjson's decode_max_depth default
MAX_DEPTH = 1000

# token types, in the order of lua-cjson's json_token_type_name (their names are shown)
T_OBJ_BEGIN, T_OBJ_END, T_ARR_BEGIN, T_ARR_END, T_STRING, T_NUMBER, T_BOOLEAN, T_NULL = range(8)
T_COLON, T_COMMA, T_END, T_ERROR = 8, 9, 10, 12
_NAMES = ("T_OBJ_BEGIN", "T_OBJ_END", "T_ARR_BEGIN", "T_ARR_END", "T_STRING", "T_NUMBER",
          "T_BOOLEAN", "T_NULL", "T_COLON", "T_COMMA", "T_END", "T_WHITESPACE", "T_ERROR")

_SINGLE = {ord("{"): T_OBJ_BEGIN, ord("}"): T_OBJ_END, ord("["): T_ARR_BEGIN,
           ord("]"): T_ARR_END, ord(","): T_COMMA, ord(":"): T_COLON, 0: T_END}
_BLANKS = frozenset(b" \t\n\r")
#: first bytes that need a closer look (lua-cjson's T_UNKNOWN): anything else is an error
_UNKNOWN = frozenset(b"fiInNt\"+-0123456789")
_ESCAPES = {ord('"'): b'"', ord("\\"): b"\\", ord("/"): b"/", ord("b"): b"\b",
            ord("t"): b"\t", ord("n"): b"\n", ord("f"): b"\f", ord("r"): b"\r"}
_DIGITS = frozenset(b"0123456789")
_HEX = frozenset(b"0123456789abcdefABCDEF")
_NAN_CHARS = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")


class DecodeError(Exception):
    """A text cjson.decode refuses; the message is lua-cjson's."""


def strtod(data: bytes, start: int) -> tuple[float, int] | None:
    """C's ``strtod`` from ``start`` (no leading blanks there): the value and where the
    number ends, or None when no number starts there."""
    n = len(data)
    i = start
    negative = False
    if i < n and data[i] in b"+-":
        negative = data[i] == 0x2D
        i += 1
    word = data[i : i + 8].lower()
    if word.startswith(b"inf"):
        return (-math.inf if negative else math.inf), i + (8 if word == b"infinity" else 3)
    if word.startswith(b"nan"):
        end = i + 3
        if end < n and data[end] == 0x28:  # nan(n-char-sequence)
            k = end + 1
            while k < n and data[k] in _NAN_CHARS:
                k += 1
            if k < n and data[k] == 0x29:
                end = k + 1
        return (-math.nan if negative else math.nan), end
    if data[i : i + 2] in (b"0x", b"0X"):
        k, digits = _mantissa(data, i + 2, _HEX)
        if not digits:  # "0x" alone: the 0 is the number
            return (-0.0 if negative else 0.0), i + 1
        k = _exponent(data, k, b"pP")
        try:
            return float.fromhex(data[start:k].decode("ascii")), k
        except OverflowError:
            return (-math.inf if negative else math.inf), k
    k, digits = _mantissa(data, i, _DIGITS)
    if not digits:
        return None
    k = _exponent(data, k, b"eE")
    return float(data[start:k]), k  # (out of range: +-inf or 0, as strtod)


def _mantissa(data: bytes, k: int, digit_set: frozenset[int]) -> tuple[int, int]:
    """Past the digits, a point and more digits at ``k``: where they end, and how many
    digits there were (none: no number)."""
    n = len(data)
    digits = 0
    while k < n and data[k] in digit_set:
        k += 1
        digits += 1
    if k < n and data[k] == 0x2E:
        k += 1
        while k < n and data[k] in digit_set:
            k += 1
            digits += 1
    return k, digits


def _exponent(data: bytes, k: int, marks: bytes) -> int:
    """Past an exponent (``e-7``, ``p3``) at ``k`` if a whole one is there, else ``k``."""
    n = len(data)
    if k < n and data[k] in marks:
        j = k + 1
        if j < n and data[j] in b"+-":
            j += 1
        if j < n and data[j] in _DIGITS:
            while j < n and data[j] in _DIGITS:
                j += 1
            return j
    return k


def _invalid_number(data: bytes, i: int) -> bool:
    """lua-cjson's json_is_invalid_number: a leading +, hex, a leading zero, inf or nan."""
    if data[i : i + 1] == b"+":
        return True
    if data[i : i + 1] == b"-":
        i += 1
    if data[i : i + 1] == b"0":
        follow = data[i + 1 : i + 2]
        return follow in (b"x", b"X") or (follow != b"" and follow[0] in _DIGITS)
    if i >= len(data) or data[i] <= 0x39:
        return False
    word = data[i : i + 3].lower()
    return word in (b"inf", b"nan")


class _Lexer:
    """lua-cjson's json_next_token over one text; ``pos`` is its ``ptr - data``."""

    __slots__ = ("data", "pos")

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def next(self) -> tuple[int, Any, int]:
        """(type, value or error text, index of the token)."""
        data = self.data
        n = len(data)
        pos = self.pos
        while pos < n and data[pos] in _BLANKS:
            pos += 1
        self.pos = pos
        if pos >= n:
            return T_END, None, pos
        ch = data[pos]
        single = _SINGLE.get(ch)
        if single is not None:
            if single != T_END:
                self.pos = pos + 1
            return single, None, pos
        if ch not in _UNKNOWN:
            return T_ERROR, "invalid token", pos
        if ch == 0x22:
            return self._string()
        if ch == 0x2D or ch in _DIGITS:
            return self._number()
        if data.startswith(b"true", pos):
            self.pos = pos + 4
            return T_BOOLEAN, True, pos
        if data.startswith(b"false", pos):
            self.pos = pos + 5
            return T_BOOLEAN, False, pos
        if data.startswith(b"null", pos):
            self.pos = pos + 4
            return T_NULL, None, pos
        if _invalid_number(data, pos):
            return self._number()
        return T_ERROR, "invalid token", pos

    def _number(self) -> tuple[int, Any, int]:
        pos = self.pos
        found = strtod(self.data, pos)
        if found is None:
            return T_ERROR, "invalid number", pos
        value, self.pos = found
        return T_NUMBER, value, pos

    def _string(self) -> tuple[int, Any, int]:
        data = self.data
        n = len(data)
        start = self.pos
        pos = start + 1
        out = bytearray()
        while True:
            if pos >= n or data[pos] == 0:
                self.pos = pos
                return T_ERROR, "unexpected end of string", pos
            ch = data[pos]
            if ch == 0x22:
                break
            if ch != 0x5C:  # a plain byte, whatever it is
                end = pos + 1
                while end < n and data[end] not in (0x22, 0x5C, 0):
                    end += 1
                out += data[pos:end]
                pos = end
                continue
            code = data[pos + 1] if pos + 1 < n else 0
            if code == 0x75:  # \u
                taken = _unicode_escape(data, pos, out)
                if taken < 0:
                    self.pos = pos
                    return T_ERROR, "invalid unicode escape code", pos
                pos += taken
                continue
            plain = _ESCAPES.get(code)
            if plain is None:
                self.pos = pos
                return T_ERROR, "invalid escape code", pos
            out += plain
            pos += 2
        self.pos = pos + 1
        return T_STRING, bytes(out), start


def _hex4(data: bytes, at: int) -> int:
    """The value of 4 hex digits at ``at``, or -1."""
    digits = data[at : at + 4]
    if len(digits) != 4 or any(d not in _HEX for d in digits):
        return -1
    return int(digits, 16)


def _unicode_escape(data: bytes, pos: int, out: bytearray) -> int:
    """Append the UTF-8 of the ``\\u`` escape at ``pos`` (a surrogate pair as one code
    point): the bytes it took, or -1 for an invalid one."""
    code = _hex4(data, pos + 2)
    if code < 0:
        return -1
    taken = 6
    if code & 0xF800 == 0xD800:  # a surrogate: a high one, then \u and a low one
        if code & 0x400 or data[pos + 6 : pos + 8] != b"\\u":
            return -1
        low = _hex4(data, pos + 8)
        if low < 0 or low & 0xFC00 != 0xDC00:
            return -1
        code = (((code & 0x3FF) << 10) | (low & 0x3FF)) + 0x10000
        taken = 12
    out += chr(code).encode("utf-8")
    return taken


def _fail(expected: str, token: tuple[int, Any, int]) -> DecodeError:
    kind, value, index = token
    found = value if kind == T_ERROR else _NAMES[kind]
    return DecodeError(f"Expected {expected} but found {found} at character {index + 1}")


def decode(data: bytes, null: Any, make_table: Callable[[Any], Any]) -> Any:
    """The Lua value of a JSON text (tables made by ``make_table`` from a list or a dict,
    JSON null as ``null``); DecodeError with lua-cjson's message for a bad one."""
    if len(data) >= 2 and (data[0] == 0 or data[1] == 0):
        raise DecodeError("JSON parser does not support UTF-16 or UTF-32")
    lexer = _Lexer(data)
    value = _value(lexer, lexer.next(), null, make_table)
    token = lexer.next()
    if token[0] != T_END:
        raise _fail("the end", token)
    return value


def _value(lexer: _Lexer, token: tuple[int, Any, int], null: Any,
           make_table: Callable[[Any], Any]) -> Any:
    """lua-cjson's json_process_value and its array and object contexts, with a stack of
    open containers instead of recursion: [list] for an array, [dict, key] for an object."""
    stack: list[list[Any]] = []
    while True:
        kind = token[0]
        value: Any
        if kind in (T_ARR_BEGIN, T_OBJ_BEGIN):
            if len(stack) + 1 > MAX_DEPTH:
                raise DecodeError(f"Found too many nested data structures ({len(stack) + 1}) "
                                  f"at character {lexer.pos}")
            token = lexer.next()
            if kind == T_ARR_BEGIN:
                if token[0] != T_ARR_END:
                    stack.append([[]])
                    continue  # the token is the first item
                value = make_table([])
            else:
                if token[0] != T_OBJ_END:
                    key = _object_key(lexer, token)
                    stack.append([{}, key])
                    token = lexer.next()
                    continue  # the token is the first value
                value = make_table({})
        elif kind in (T_STRING, T_NUMBER, T_BOOLEAN):
            value = token[1]
        elif kind == T_NULL:
            value = null
        else:
            raise _fail("value", token)
        # a value is complete: it goes into the open container, which may close in turn
        while True:
            if not stack:
                return value
            frame = stack[-1]
            container = frame[0]
            token = lexer.next()
            if len(frame) == 1:
                container.append(value)
                if token[0] == T_ARR_END:
                    stack.pop()
                    value = make_table(container)
                    continue
                if token[0] != T_COMMA:
                    raise _fail("comma or array end", token)
                token = lexer.next()
                break
            container[frame[1]] = value
            if token[0] == T_OBJ_END:
                stack.pop()
                value = make_table(container)
                continue
            if token[0] != T_COMMA:
                raise _fail("comma or object end", token)
            frame[1] = _object_key(lexer, lexer.next())
            token = lexer.next()
            break


def _object_key(lexer: _Lexer, token: tuple[int, Any, int]) -> bytes:
    """An object's key string and the colon after it (lua-cjson checks them in turn)."""
    if token[0] != T_STRING:
        raise _fail("object key string", token)
    colon = lexer.next()
    if colon[0] != T_COLON:
        raise _fail("colon", colon)
    key: bytes = token[1]
    return key
