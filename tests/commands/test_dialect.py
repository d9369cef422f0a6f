"""The HotKV dialect at the byte level: reply shapes next to a real redis-server, and bad input.

Where the dialect's reply has a Redis analogue (a write's ``+OK`` as SET's, a miss's null as
GET's, a delete's ``:1``/``:0`` as DEL's, an empty list as KEYS's), the same bytes go out in
RESP2 and RESP3 as redis-server sends for that analogue. Bad input to the dialect's commands
and options is one line naming the argument; the connection stays and nothing changes.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
import redis

from helpers import RawConnection


@pytest.fixture
def pair(raw_pair: tuple[RawConnection, RawConnection]) -> tuple[RawConnection, RawConnection]:
    return raw_pair


def test_writes_answer_as_redis_set_does(pair: tuple[RawConnection, RawConnection]) -> None:
    hot, ref = pair
    ok = ref.call("SET", "k", "v")
    assert ok == b"+OK\r\n"
    assert hot.call("AMEM.CONV.CREATE", "s", "WINDOW", 5) == ok
    assert hot.call("AMEM.CONV.APPEND", "s", "user", "hi") == ok
    assert hot.call("AMEM.WORK.SET", "s", "k", "v") == ok
    assert hot.call("AMEM.WORK.SET", "s", "k2", "v", "PXAT", int(time.time() * 1000) + 9000) == ok
    assert hot.call("AMEM.SEM.CREATE", "kb", 2) == ok
    assert hot.call("AMEM.SEM.STORE", "kb", "f", "t", 1, 0) == ok
    assert hot.call("AMEM.EPIS.LOG", "a", "action", "did", "METADATA", "free text") == ok
    # hotkv's richer replies on request
    assert hot.call("AMEM.CONV.APPEND", "s", "user", "again", "WITHSEQ") == b":2\r\n"
    assert hot.call("AMEM.SEM.STORE", "kb", "f", "t", 1, 0, "WITHCREATED") == b":0\r\n"
    assert hot.call("AMEM.EPIS.LOG", "a", "action", "did", "WITHID").startswith(b"$")


def test_misses_deletes_and_empty_lists_answer_as_redis_does(pair: tuple[RawConnection, RawConnection]) -> None:
    hot, ref = pair
    nil = ref.call("GET", "missing")
    assert hot.call("AMEM.WORK.GET", "s", "missing") == nil
    assert hot.call("AMEM.SUMMARY.GET", "nobody") == nil
    empty = ref.call("KEYS", "nothing*")
    assert empty == b"*0\r\n"
    for command in (("AMEM.WORK.LIST", "s"), ("AMEM.CONV.GET", "s"), ("AMEM.SEM.LIST", "kb"),
                    ("AMEM.SUMMARY.LIST",), ("AMEM.SEARCH", "nobody", 3, 1, 0)):
        assert hot.call(*command) == empty, command
    ref.call("SET", "k", "v")
    one, zero = ref.call("DEL", "k"), ref.call("DEL", "k")
    hot.call("AMEM.CONV.CREATE", "s")
    hot.call("AMEM.CONV.APPEND", "s", "user", "x")
    hot.call("AMEM.WORK.SET", "s", "k", "v")
    hot.call("AMEM.EPIS.LOG", "s", "obs", "x")
    hot.call("AMEM.SUMMARY.SET", "s", "x")
    hot.call("AMEM.SEM.CREATE", "s", 2)
    hot.call("AMEM.SEM.STORE", "s", "f", "t", 1, 0)
    for command in (("AMEM.CONV.CLEAR", "s"), ("AMEM.CONV.DROP", "s"), ("AMEM.WORK.DEL", "s", "k"),
                    ("AMEM.EPIS.CLEAR", "s"), ("AMEM.SUMMARY.DROP", "s"), ("AMEM.SEM.FORGET", "s", "f")):
        assert hot.call(*command) == one, command
        assert hot.call(*command) == zero, command


def test_records_are_maps_in_resp3_and_flat_arrays_in_resp2(pair: tuple[RawConnection, RawConnection]) -> None:
    hot, ref = pair
    config = ref.call("CONFIG", "GET", "maxmemory")  # a map reply of Redis 7
    stats = hot.call("AMEM.EPIS.STATS", "a")
    assert stats[:1] == config[:1]  # % in RESP3, * in RESP2
    assert stats.split(b"\r\n")[0][1:] == (b"3" if config.startswith(b"%") else b"6")
    hot.call("AMEM.SUMMARY.SET", "a", "text")
    # [text, version, updated_unix]: a bulk string and two integers, in both protocols
    reply = hot.call("AMEM.SUMMARY.GET", "a").split(b"\r\n")
    assert reply[:4] == [b"*3", b"$4", b"text", b":1"]
    assert reply[4].startswith(b":") and abs(int(reply[4][1:]) - time.time()) < 60


ORIGINAL = [
    ("AMEM.CONV.CREATE", "s", "WINDOW", 5), ("AMEM.CONV.APPEND", "s", "user", "hi"),
    ("AMEM.WORK.SET", "s", "k", "v"), ("AMEM.EPIS.LOG", "s", "obs", "seen"),
    ("AMEM.SUMMARY.SET", "s", "sum"), ("AMEM.SEM.CREATE", "kb", 2),
    ("AMEM.SEM.STORE", "kb", "f", "t", 1, 0),
]

#: past the 100-year limit whenever the test runs (a constant: parallel workers must
#: collect the same test ids)
FAR = str(9_999_999_999_999)

BAD = [
    (("AMEM.CONV.CREATE", "n", "PXAT", "soon"), "invalid PXAT 'soon': expected an integer"),
    (("AMEM.CONV.CREATE", "n", "PXAT", "-1"), "invalid PXAT '-1': expected an integer 0.."),
    (("AMEM.CONV.CREATE", "n", "PXAT", FAR), f"invalid PXAT '{FAR}'"),
    (("AMEM.CONV.CREATE", "n", "TTL", 5, "PXAT", 1), "TTL and PXAT cannot be used together"),
    (("AMEM.CONV.APPEND", "s", "user", "x", "WITHSEQ", "x"), "invalid option 'x'"),
    (("AMEM.CONV.APPEND", "nope", "user", "x"), "NOTFOUND session not found: 'nope'"),
    (("AMEM.CONV.GET", ""), "invalid session: expected 1..512 bytes, got 0"),
    (("AMEM.CONV.GET", "s", "10"), "wrong number of arguments for 'amem.conv.get' command"),
    (("AMEM.CONV.CLEAR",), "wrong number of arguments for 'amem.conv.clear' command"),
    (("AMEM.CONV.DROP", "s", "t"), "wrong number of arguments for 'amem.conv.drop' command"),
    (("AMEM.SEM.STORE", "kb", "g", "t", 1, 0, "PXAT", "x"), "invalid PXAT 'x'"),
    (("AMEM.SEM.STORE", "kb", "g", "t", 1, 0, "PX", 5, "PXAT", 1), "PX and PXAT cannot be used"),
    (("AMEM.SEM.FORGET", "kb"), "wrong number of arguments for 'amem.sem.forget' command"),
    (("AMEM.SEM.FORGET", "kb", ""), "invalid id: expected 1..512 bytes, got 0"),
    (("AMEM.SEM.LIST", "kb", "CURSOR", "zz"), "invalid CURSOR 'zz'"),
    (("AMEM.WORK.SET", "s", "k", "w", "PXAT", "1.5"), "invalid PXAT '1.5'"),
    (("AMEM.WORK.SET", "s", "k", "w", "KEEPTTL", "PXAT", 1), "KEEPTTL and PXAT cannot be used"),
    (("AMEM.WORK.LIST", "s", "x"), "wrong number of arguments for 'amem.work.list' command"),
    (("AMEM.EPIS.LOG", "s", "obs", "x", "METADATA"), "syntax error: METADATA needs a value"),
    (("AMEM.EPIS.LOG", "s", "obs", "x", "META", "not json"), "invalid META: expected a JSON object"),
    (("AMEM.EPIS.LOG", "s", "Bad Type", "x"), "invalid type 'Bad Type'"),
    (("AMEM.EPIS.CLEAR", ""), "invalid agent: expected 1..512 bytes, got 0"),
    (("AMEM.EPIS.STATS",), "wrong number of arguments for 'amem.epis.stats' command"),
    (("AMEM.SUMMARY.GET", "s", "RECORDS"), "invalid option 'RECORDS': expected RECORD"),
    (("AMEM.SUMMARY.LIST", "x"), "wrong number of arguments for 'amem.summary.list' command"),
    (("AMEM.SUMMARY.DROP", ""), "invalid agent: expected 1..512 bytes, got 0"),
    (("AMEM.SEARCH", "kb", 0, 1, 0), "invalid k '0': expected an integer 1..1000"),
    (("AMEM.SEARCH", "kb", 3, 1, 0, 0), "DIM expected 2 values, got 3"),
    (("AMEM.SEARCH", "kb", 3, 1, 0, "TEXT"), "syntax error: TEXT needs a value"),
    (("AMEM.SEARCH", "kb", 3, 1, 0, "LIMIT", 2), "invalid option 'LIMIT': expected TEXT"),
    (("AMEM.SEARCH", "nobody", 3), "wrong number of arguments for 'amem.search' command"),
    (("AMEM.SEARCH", "nobody", 3, "x"), "invalid vector 'x': expected FP32 blob, v1 ... vdim or TEXT query"),
    (("AMEM.SEARCH", "kb", 3, "TEXT", "x"),
     "AMEM.SEARCH without a vector needs a namespace with an embedder: namespace 'kb' has none"),
]


def _state(r: redis.Redis) -> list[Any]:
    return [r.execute_command(*c) for c in (
        ("AMEM.CONV.GET", "s"), ("AMEM.CONV.INFO", "n"), ("AMEM.WORK.GETALL", "s"),
        ("AMEM.EPIS.QUERY", "s"), ("AMEM.SUMMARY.GET", "s", "RECORD"),
        ("AMEM.SEM.LIST", "kb", "CURSOR", 0), ("AMEM.SUMMARY.LIST",), ("DBSIZE",))]


@pytest.mark.parametrize(("command", "expected"), BAD, ids=[" ".join(map(str, c))[:60] for c, _ in BAD])
def test_bad_input_is_one_line_and_changes_nothing(r: redis.Redis, command: tuple[Any, ...],
                                                   expected: str) -> None:
    for setup in ORIGINAL:
        r.execute_command(*setup)
    before = _state(r)
    with pytest.raises(redis.ResponseError) as info:
        r.execute_command(*command)
    message = str(info.value)
    assert expected in message, message
    assert "\n" not in message and "internal error" not in message
    assert r.ping() is True  # the same connection goes on
    assert _state(r) == before
