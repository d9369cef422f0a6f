"""Array replies at the byte level, next to a real redis-server, in RESP2 and RESP3.

The reply encoder makes an array that starts with a bulk string in one join, and falls back
to element by element when an element is not a string (a miss, an integer, a nested array,
a status, an error, a RESP3 big number or double a script returns); a length of 1024 bytes
or more takes a slower header path. Each case here is sent to both servers and the reply
bytes must be the same.
"""

from __future__ import annotations

from typing import Any

import pytest

from helpers import RawConnection


@pytest.fixture
def pair(raw_pair: tuple[RawConnection, RawConnection]) -> tuple[RawConnection, RawConnection]:
    return raw_pair


def same(pair: tuple[RawConnection, RawConnection], *args: Any) -> bytes:
    hot, ref = pair
    expected = ref.call(*args)
    assert hot.call(*args) == expected, args
    return expected


#: element lengths around the header table's end (1024), empty, and one much longer
LENGTHS = [0, 1, 9, 10, 99, 100, 1023, 1024, 1025, 5000]


def test_lists_of_any_element_lengths_answer_as_redis(pair: tuple[RawConnection, RawConnection]) -> None:
    elements = [b"%d" % n + b"x" * max(0, n - len(b"%d" % n)) if n else b"" for n in LENGTHS]
    same(pair, "RPUSH", "l", *elements)
    same(pair, "LRANGE", "l", 0, -1)
    for start, stop in ((0, 0), (6, 6), (7, 8), (-1, -1), (5, 9), (0, 6)):
        same(pair, "LRANGE", "l", start, stop)
    same(pair, "RPUSH", "one", "x" * 1024)
    assert same(pair, "LRANGE", "one", 0, -1) == b"*1\r\n$1024\r\n" + b"x" * 1024 + b"\r\n"
    same(pair, "LRANGE", "nope", 0, -1)


def test_arrays_mixing_strings_and_misses_answer_as_redis(pair: tuple[RawConnection, RawConnection]) -> None:
    same(pair, "MSET", "a", "1", "b", "y" * 2000, "c", "")
    same(pair, "MGET", "a", "missing", "b")
    same(pair, "MGET", "a", "b", "c", "missing")
    same(pair, "MGET", "missing", "a")
    same(pair, "HSET", "h", "f", "v", "g", "w" * 1500)
    same(pair, "HMGET", "h", "f", "nope", "g")
    same(pair, "HMGET", "h", "f", "g")


@pytest.mark.parametrize("script", [
    "return {'a', 1, {'x', 'y'}, 'b'}",
    "return {'a', {ok='fine'}, 'b'}",
    "return {'a', {err='ERR bad'}, 'b'}",
    "return {'a', {double=1.5}, 'b'}",
    "return {'a', {big_number='123456789012345678901234567890'}, 'b'}",
    "return {'a', 'b', 'c'}",
    "return {'a', false, 'c'}",
], ids=["nested", "status", "error", "double", "big-number", "strings", "false"])
def test_script_arrays_starting_with_a_string_answer_as_redis(
        pair: tuple[RawConnection, RawConnection], script: str) -> None:
    same(pair, "EVAL", script, 0)
    same(pair, "EVAL", "redis.setresp(3); " + script, 0)
