"""cjson.decode's parser as plain data (``hotkv_server.scripting.cjson_decode``): numbers
against the C library's own ``strtod`` (through ctypes: the function lua-cjson calls), and
the token, string, depth and error rules of lua-cjson 2.1 that Redis 7 bundles. The whole
function is compared with redis-server in tests/e2e/test_differential_cjson_random.py."""

from __future__ import annotations

import ctypes
import ctypes.util
import math
import random
import struct
from typing import Any

import pytest

from hotkv_server.scripting.cjson_decode import MAX_DEPTH, DecodeError, decode, strtod

NULL = object()
_libc = ctypes.CDLL(ctypes.util.find_library("c"))
_libc.strtod.restype = ctypes.c_double
_libc.strtod.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_char_p)]


def c_strtod(text: bytes) -> tuple[float, int] | None:
    """libc's strtod of ``text``: (value, bytes read), None when it reads nothing."""
    buf = ctypes.create_string_buffer(text)
    end = ctypes.c_char_p()
    value = _libc.strtod(buf, ctypes.byref(end))
    used = ctypes.cast(end, ctypes.c_void_p).value - ctypes.addressof(buf)  # type: ignore[operator]
    return None if used == 0 else (value, used)


def bits(x: float) -> bytes:
    return struct.pack(">d", x)


def same_number(a: float, b: float) -> bool:
    """Equal as doubles: the sign of a zero and of a NaN count (Lua prints -0 and -nan)."""
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b) and math.copysign(1, a) == math.copysign(1, b)
    return bits(a) == bits(b)


def plain(text: bytes) -> Any:
    """decode with Python lists and dicts for tables."""
    return decode(text, NULL, lambda container: container)


def error_of(text: bytes) -> str:
    with pytest.raises(DecodeError) as caught:
        plain(text)
    return str(caught.value)


NUMBERS = [b"0", b"-0", b"+0", b"1", b"01", b"-01", b"+1", b"1.", b"-.5", b"1.5e3", b"1E-3", b"1e",
           b"1e+", b"1e+5x", b"0x10", b"0X1f", b"0x", b"0x.", b"0x.8", b"0x1.8p1", b"0x1p-3",
           b"0x1p99999", b"-0x10", b"inf", b"-Infinity", b"INFINITYx", b"infinit", b"nan",
           b"-NaN", b"nan(abc_1)", b"nan(", b"nan(a-b)", b"1e400", b"-1e400", b"1e-400",
           b"4.9e-324", b"123456789012345678901234567890", b"0.30000000000000004", b"-", b"+",
           b"--1", b"+-1", b"-x", b"1_0", b"9" * 400, b"0." + b"0" * 350 + b"1"]


@pytest.mark.parametrize("text", NUMBERS)
def test_numbers_read_as_the_c_library_strtod_reads_them(text: bytes) -> None:
    mine, theirs = strtod(text, 0), c_strtod(text)
    if theirs is None:
        assert mine is None
    else:
        assert mine is not None and mine[1] == theirs[1] and same_number(mine[0], theirs[0])


def test_random_numbers_read_as_strtod_reads_them() -> None:
    rnd = random.Random(7)
    pieces = [b"-", b"+", b"0", b"1", b"9", b"x", b"X", b"a", b"f", b"p", b"P", b"e", b"E", b".",
              b"inf", b"nan", b"(", b")", b"_", b"7", b"5", b" "]
    for _ in range(20_000):
        text = b"".join(rnd.choice(pieces) for _ in range(rnd.randint(1, 8)))
        if text[:1] == b" ":
            continue  # (lua-cjson never starts a number at a blank)
        mine, theirs = strtod(text, 0), c_strtod(text)
        if theirs is None:
            assert mine is None, text
        else:
            assert mine is not None and mine[1] == theirs[1], text
            assert same_number(mine[0], theirs[0]), text


def test_values_and_the_numbers_json_refuses_but_lua_cjson_reads() -> None:
    assert plain(b' {"a": [1, "x", true, false, null], "b": {}} ') == {
        b"a": [1.0, b"x", True, False, NULL], b"b": {}}
    assert plain(b"[+1, 01, 1., -.5, 0x10, 0x1p3]") == [1.0, 1.0, 1.0, -0.5, 16.0, 8.0]
    inf, neg = plain(b"[Infinity, -inf]")
    assert inf == math.inf and neg == -math.inf
    assert math.isnan(plain(b"NaN")) and math.copysign(1, plain(b"-nan")) == -1
    assert math.copysign(1, plain(b"-0")) == -1
    assert plain(b'{"k": 1, "k": 2}') == {b"k": 2.0}  # the last one wins
    assert plain(b"[1]\x00 anything after a NUL") == [1.0]


def test_strings_keep_their_bytes_and_escapes_become_utf8() -> None:
    assert plain(b'"tab\there \x01 \xff\xfe"') == b"tab\there \x01 \xff\xfe"
    assert plain(b'"\\"\\\\\\/\\b\\f\\n\\r\\t"') == b'"\\/\b\f\n\r\t'
    assert plain(b'"\\u0041\\u00e9\\u20ac\\ud83d\\ude00\\u0000"') == (
        b"A\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\x00")


@pytest.mark.parametrize(("text", "message"), [
    (b"", "Expected value but found T_END at character 1"),
    (b"  ", "Expected value but found T_END at character 3"),
    (b"[1,]", "Expected value but found T_ARR_END at character 4"),
    (b"[1 2]", "Expected comma or array end but found T_NUMBER at character 4"),
    (b'{"a":1 "b"}', "Expected comma or object end but found T_STRING at character 8"),
    (b"{1:2}", "Expected object key string but found T_NUMBER at character 2"),
    (b'{"a" 1}', "Expected colon but found T_NUMBER at character 6"),
    (b'{"a":}', "Expected value but found T_OBJ_END at character 6"),
    (b"[1]]", "Expected the end but found T_ARR_END at character 4"),
    (b"[-]", "Expected value but found invalid number at character 2"),
    (b"+x", "Expected value but found invalid number at character 1"),
    (b".5", "Expected value but found invalid token at character 1"),
    (b"tru", "Expected value but found invalid token at character 1"),
    (b"Infinit", "Expected the end but found invalid token at character 4"),
    (b"[1_0]", "Expected comma or array end but found invalid token at character 3"),
    (b'"abc', "Expected value but found unexpected end of string at character 5"),
    (b'["a\x00b"]', "Expected value but found unexpected end of string at character 4"),
    (b'"a\\', "Expected value but found invalid escape code at character 3"),
    (b'"\\x41"', "Expected value but found invalid escape code at character 2"),
    (b'"\\u12"', "Expected value but found invalid unicode escape code at character 2"),
    (b'"\\ud800"', "Expected value but found invalid unicode escape code at character 2"),
    (b'"\\udc00\\ud800"', "Expected value but found invalid unicode escape code at character 2"),
    (b'"\\ud800\\u0041"', "Expected value but found invalid unicode escape code at character 2"),
    (b"\x00[", "JSON parser does not support UTF-16 or UTF-32"),
    (b"1\x00", "JSON parser does not support UTF-16 or UTF-32"),
    (b"[" * (MAX_DEPTH + 1) + b"]" * (MAX_DEPTH + 1),
     f"Found too many nested data structures ({MAX_DEPTH + 1}) at character {MAX_DEPTH + 1}"),
])
def test_errors_are_lua_cjsons(text: bytes, message: str) -> None:
    assert error_of(text) == message


def test_a_thousand_levels_decode_without_python_recursion() -> None:
    value = plain(b"[" * MAX_DEPTH + b"7" + b"]" * MAX_DEPTH)
    for _ in range(MAX_DEPTH):
        (value,) = value
    assert value == 7.0
    deep = b'{"k":' * MAX_DEPTH + b"null" + b"}" * MAX_DEPTH
    value = plain(deep)
    for _ in range(MAX_DEPTH):
        value = value[b"k"]
    assert value is NULL
