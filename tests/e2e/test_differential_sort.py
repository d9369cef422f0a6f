"""Differential tests of SORT and SORT_RO: the same steps to redis-server 7 and to hotkv, in
RESP2 and RESP3, replies compared with their RESP types (see test_differential.py).

Left out on purpose: orders Redis leaves to its quicksort (ALPHA ties, a BY nosort of a
set held as a hashtable outside a script), LIMIT counts that overflow C's long, and weights
out of a double's range (``1e400``): Redis tests a stale ``errno`` after ``strtod``, so once
one such weight was seen every later SORT of a non-integer text fails there too; hotkv
refuses just the call with that weight (``test_a_weight_out_of_range_is_not_a_double``)."""

from __future__ import annotations

import pytest
import redis

from e2e.test_differential import Step, run_scenario
from helpers import HotkvProcess, RedisServer

NOT_DOUBLE = "One or more scores can't be converted into double"

NUMBERS: list[Step] = [
    ["RPUSH", "l", "3", "1", "2", "10", "-5", "1.5", "1", "01", "1.0"],
    ["SORT", "l"],
    ["SORT", "l", "DESC"],
    ["SORT", "l", "ASC"],
    ["SORT", "l", "DESC", "ASC"],
    ["SORT", "l", "ALPHA"],
    ["SORT", "l", "ALPHA", "DESC"],
    *[["SORT", "l", "LIMIT", a, b] for a, b in [
        ("0", "2"), ("2", "3"), ("-1", "2"), ("-5", "-1"), ("0", "-1"), ("0", "0"), ("1", "0"),
        ("8", "5"), ("9", "1"), ("10", "2"), ("100", "-1"), ("5", "100"),
        ("0", "9223372036854775807"), ("-9223372036854775808", "3")]],
    ["SORT", "l", "LIMIT", "1", "3", "DESC"],
    ["SORT", "l", "DESC", "LIMIT", "1", "3", "LIMIT", "0", "1"],
    ["RPUSH", "odd", " 5", "0x10", "", "1e3", "-inf", "+3", ".5", "inf", "1e-3", "7."],
    ["SORT", "odd"],
    ["SORT", "odd", "DESC"],
    ["RPUSH", "bad", "1", "x", "2"],
    ["SORT", "bad"],
    ["SORT", "bad", "LIMIT", "0", "1"],
    ["SORT", "bad", "ALPHA"],
    ["SORT", "bad", "STORE", "dst"],
    ["EXISTS", "dst"],
    *[["SORT", key] for key in ("nan1", "nan2", "trail", "lead")],
    ["RPUSH", "nan1", "nan"],
    ["RPUSH", "nan2", "1", "-nan"],
    ["RPUSH", "trail", "5 "],
    *[["SORT", key] for key in ("nan1", "nan2", "trail")],
    ["SORT", "nope"],
    ["SORT", "nope", "BY", "w_*", "GET", "#", "DESC", "ALPHA", "LIMIT", "0", "5"],
    ["SORT_RO", "l", "DESC", "LIMIT", "0", "3"],
    ["SORT_RO", "nope"],
]

ERRORS: list[Step] = [
    ["RPUSH", "l", "2", "1"],
    ["SET", "str", "v"],
    ["HSET", "h", "f", "v"],
    ["SORT", "str"],
    ["SORT", "h"],
    ["SORT", "str", "ALPHA"],
    ["SORT", "str", "BY", "nosort", "STORE", "d"],
    ["SORT_RO", "h"],
    ["SORT", "str", "FOO"],  # the options are read before the key
    ["SORT", "l", "FOO"],
    ["SORT", "l", "LIMIT"],
    ["SORT", "l", "LIMIT", "0"],
    ["SORT", "l", "LIMIT", "a", "1"],
    ["SORT", "l", "LIMIT", "0", "b"],
    ["SORT", "l", "LIMIT", "0", "1.5"],
    ["SORT", "l", "BY"],
    ["SORT", "l", "GET"],
    ["SORT", "l", "STORE"],
    ["SORT", "l", "ALPHA", "DESC", "nonsense"],
    ["SORT", "l", "LIMIT", "x", "1", "FOO"],
    ["SORT_RO", "l", "STORE", "d"],
    ["SORT_RO", "l", "STORE"],
    ["SORT"],
    ["SORT_RO"],
    ["EXISTS", "d"],
]

CONTAINERS: list[Step] = [
    ["SADD", "si", "30", "1", "-2", "20", "5"],
    ["OBJECT", "ENCODING", "si"],
    ["SORT", "si"],
    ["SORT", "si", "DESC", "LIMIT", "1", "2"],
    ["SORT", "si", "BY", "nosort"],  # an intset is walked in numeric order
    ["SORT", "si", "BY", "nosort", "LIMIT", "1", "3"],
    ["SORT", "si", "BY", "nosort", "STORE", "sd"],  # stored: sorted ALPHA
    ["LRANGE", "sd", "0", "-1"],
    ["SORT", "si", "BY", "nosort", "DESC", "STORE", "sd"],
    ["LRANGE", "sd", "0", "-1"],
    ["SADD", "ss", "banana", "apple", "cherry", "date"],
    ["SORT", "ss", "ALPHA"],
    ["SORT", "ss", "ALPHA", "DESC", "LIMIT", "0", "2"],
    ["SORT", "ss"],
    ["SORT", "ss", "BY", "nosort", "STORE", "sd"],
    ["LRANGE", "sd", "0", "-1"],
    ["SORT", "ss", "BY", "nosort", "LIMIT", "1", "2", "STORE", "sd"],
    ["LRANGE", "sd", "0", "-1"],
    ["EVAL", "return redis.call('SORT', KEYS[1], 'BY', 'nosort')", "1", "ss"],
    ["EVAL", "return redis.call('SORT', KEYS[1], 'BY', 'nosort', 'DESC')", "1", "ss"],
    ["EVAL", "return redis.call('SORT_RO', KEYS[1], 'BY', 'nosort', 'LIMIT', '0', '2')", "1", "ss"],
    ["ZADD", "z", "3", "c", "1", "a", "2", "b", "10", "x", "2", "bb"],
    ["SORT", "z"],
    ["SORT", "z", "ALPHA"],
    ["SORT", "z", "ALPHA", "DESC"],
    ["SORT", "z", "BY", "nosort"],
    ["SORT", "z", "BY", "nosort", "DESC"],
    ["SORT", "z", "BY", "nosort", "LIMIT", "1", "2"],
    ["SORT", "z", "BY", "nosort", "DESC", "LIMIT", "1", "3"],
    ["SORT", "z", "BY", "nosort", "LIMIT", "4", "10"],
    ["SORT", "z", "BY", "nosort", "LIMIT", "5", "1"],
    ["SORT", "z", "BY", "nosort", "STORE", "zd"],
    ["LRANGE", "zd", "0", "-1"],
    ["ZADD", "zn", "1", "30", "2", "20", "3", "10", "3", "5"],
    ["SORT", "zn"],
    ["SORT", "zn", "BY", "nosort"],
    ["SORT", "zn", "BY", "nosort", "DESC"],
    ["RPUSH", "l", "c", "a", "b"],
    ["SORT", "l", "BY", "nosort"],
    ["SORT", "l", "BY", "nosort", "DESC"],
    ["SORT", "l", "BY", "nosort", "LIMIT", "1", "1"],
    ["SORT", "l", "BY", "nosort", "DESC", "LIMIT", "1", "5"],
    ["SORT", "l", "BY", "nosort", "LIMIT", "3", "1"],
    ["SORT", "l", "BY", "nosort", "LIMIT", "-2", "-1", "DESC"],
    ["SORT", "l", "BY", "constant", "GET", "#", "GET", "#"],
]

PATTERNS: list[Step] = [
    ["RPUSH", "items", "a", "b", "c", "d"],
    ["MSET", "w_a", "3", "w_b", "1", "w_c", "2"],
    ["SORT", "items", "BY", "w_*"],  # d has no weight: 0
    ["SORT", "items", "BY", "w_*", "DESC"],
    ["SORT", "items", "BY", "w_*", "LIMIT", "1", "2"],
    ["SORT", "items", "BY", "w_*", "GET", "#", "GET", "w_*"],
    ["SORT", "items", "BY", "w_*", "ALPHA"],
    ["SORT", "items", "BY", "w_*", "ALPHA", "DESC"],
    ["SORT", "items", "GET", "nostar"],
    ["SORT", "items", "ALPHA", "GET", "w_*", "GET", "#", "GET", "w_*->"],
    ["HSET", "obj_a", "weight", "5", "name", "Alice"],
    ["HSET", "obj_b", "weight", "2", "name", "Bob"],
    ["HSET", "obj_c", "weight", "9", "name", "Carol"],
    ["SORT", "items", "BY", "obj_*->weight", "GET", "obj_*->name", "GET", "#"],
    ["SORT", "items", "BY", "obj_*->weight", "DESC", "GET", "obj_*->name"],
    ["SORT", "items", "BY", "obj_*->weight", "GET", "obj_*->nofield"],
    ["SORT", "items", "BY", "w_*->weight"],  # strings, not hashes: no weights
    ["SORT", "items", "ALPHA", "GET", "w_*->weight", "GET", "obj_*"],
    ["SORT", "items", "BY", "obj_*->name", "ALPHA", "GET", "obj_*->name"],
    ["SET", "w_d", "not-a-number"],
    ["SORT", "items", "BY", "w_*"],
    ["SORT", "items", "BY", "w_*", "ALPHA"],
    ["SORT", "items", "BY", "nosort", "BY", "w_*"],  # a constant BY stays: native order
    ["SORT", "items", "BY", "w_*", "BY", "nosort"],
    ["SET", "w_d", "0x10"],
    ["SORT", "items", "BY", "w_*", "GET", "w_*"],
    ["RPUSH", "ids", "1", "2", "3"],
    ["MSET", "k:1:v", "x", "k:2:v", "y"],
    ["SORT", "ids", "GET", "k:*:v", "DESC"],
    ["SORT", "ids", "BY", "k:*:v", "ALPHA", "GET", "k:*:v"],
    ["SORT_RO", "items", "BY", "obj_*->weight", "GET", "obj_*->name"],
    ["SADD", "members", "a", "b", "c"],
    ["SORT", "members", "BY", "obj_*->weight", "GET", "obj_*->name"],
    ["ZADD", "zm", "1", "c", "2", "b", "3", "a"],
    ["SORT", "zm", "BY", "w_*", "GET", "#", "GET", "w_*"],
]

STORE: list[Step] = [
    ["RPUSH", "items", "c", "a", "b"],
    ["MSET", "w_a", "3", "w_b", "1"],
    ["SORT", "items", "ALPHA", "STORE", "out"],
    ["TYPE", "out"],
    ["LRANGE", "out", "0", "-1"],
    ["SORT", "items", "BY", "w_*", "GET", "w_*", "GET", "#", "STORE", "out"],
    ["LRANGE", "out", "0", "-1"],  # a missing GET is stored as ""
    ["SORT", "items", "ALPHA", "STORE", "items"],  # onto itself
    ["LRANGE", "items", "0", "-1"],
    ["SET", "str", "x", "EX", "100"],
    ["SORT", "items", "ALPHA", "DESC", "STORE", "str"],  # any type, its TTL dropped
    ["TYPE", "str"],
    ["TTL", "str"],
    ["LRANGE", "str", "0", "-1"],
    ["HSET", "h", "f", "v"],
    ["SORT", "items", "ALPHA", "LIMIT", "1", "1", "STORE", "h"],
    ["LRANGE", "h", "0", "-1"],
    ["SORT", "nope", "STORE", "out"],  # empty: the destination is deleted
    ["EXISTS", "out"],
    ["SORT", "nope", "STORE", "out"],
    ["SORT", "items", "ALPHA", "LIMIT", "10", "2", "STORE", "h"],
    ["EXISTS", "h"],
    ["SORT", "items", "ALPHA", "STORE", "a", "STORE", "b"],  # the last STORE wins
    ["EXISTS", "a"],
    ["LRANGE", "b", "0", "-1"],
    ["RPUSH", "bin", b"a\x00b", b"a", b"a\x00a", b"\xff", b""],
    ["SORT", "bin", "ALPHA", "STORE", "binout"],  # a store compares whole bytes
    ["LRANGE", "binout", "0", "-1"],
    ["SORT", "bin", "ALPHA", "GET", "#", "LIMIT", "0", "1", "DESC"],
    ["SADD", "s", "x", "y"],
    ["SORT", "s", "ALPHA", "STORE", "out"],
    ["LRANGE", "out", "0", "-1"],
    ["MULTI"],
    ["SORT", "items", "ALPHA", "STORE", "m"],
    ["SORT_RO", "m", "ALPHA", "DESC"],
    ["EXEC"],
    ["EVAL", "return redis.call('SORT', KEYS[1], 'ALPHA', 'STORE', KEYS[2])", "2", "items", "ev"],
    ["LRANGE", "ev", "0", "-1"],
    ["EVAL", "return redis.call('SORT_RO', KEYS[1], 'STORE', KEYS[2])", "2", "items", "ev"],
    ["EVAL_RO", "return redis.call('SORT', KEYS[1], 'ALPHA', 'STORE', KEYS[2])", "2", "items", "ev"],
    ["EVAL_RO", "return redis.call('SORT', KEYS[1], 'ALPHA')", "1", "items"],
    ["EVAL_RO", "return redis.call('SORT_RO', KEYS[1], 'ALPHA')", "1", "items"],
]

KEYS: list[Step] = [
    ["COMMAND", "GETKEYS", "SORT", "k"],
    ["COMMAND", "GETKEYS", "SORT", "k", "STORE", "d"],
    ["COMMAND", "GETKEYS", "SORT", "k", "BY", "x", "GET", "y", "STORE", "a", "STORE", "b"],
    ["COMMAND", "GETKEYS", "SORT", "k", "LIMIT", "0", "1", "STORE"],
    ["COMMAND", "GETKEYS", "SORT", "k", "STORE", "STORE", "d"],
    ["COMMAND", "GETKEYS", "SORT", "k", "GET", "STORE", "d"],
    ["COMMAND", "GETKEYS", "SORT", "k", "LIMIT", "STORE", "x", "d"],
    ["COMMAND", "GETKEYS", "SORT", "k", "store", "d", "BY", "STORE"],
    ["COMMAND", "GETKEYSANDFLAGS", "SORT", "k", "STORE", "d"],
    ["COMMAND", "GETKEYSANDFLAGS", "SORT", "k", "ALPHA"],
    ["COMMAND", "GETKEYS", "SORT_RO", "k", "STORE", "d"],
    ["COMMAND", "GETKEYSANDFLAGS", "SORT_RO", "k", "BY", "w_*"],
    ["COMMAND", "GETKEYS", "SORT"],
    ["COMMAND", "INFO", "SORT", "SORT_RO"],
]

#: BY and GET read keys the data names: only a user who may read every key may use them
ACL: list[Step] = [
    ["RPUSH", "items", "b", "a"],
    ["MSET", "w_a", "1", "w_b", "2"],
    ["ACL", "SETUSER", "sort-confined", "on", "nopass", "~items*", "~w_*", "+@all"],
    ["ACL", "SETUSER", "sort-reader", "on", "nopass", "%R~*", "%W~out*", "+@all"],
    ["ACL", "SETUSER", "sort-writer", "on", "nopass", "%W~*", "~items", "+@all"],
    ["ACL", "SETUSER", "sort-all", "on", "nopass", "allkeys", "+@all"],
    ("other", ["AUTH", "sort-confined", "x"]),
    ("other", ["SORT", "items", "ALPHA"]),
    ("other", ["SORT", "items", "BY", "w_*"]),
    ("other", ["SORT", "items", "BY", "nosort"]),  # no '*': reads no other key
    ("other", ["SORT", "items", "GET", "#"]),
    ("other", ["SORT", "items", "GET", "w_*"]),
    ("other", ["SORT_RO", "items", "BY", "w_*->f"]),
    ("other", ["SORT", "items", "BY", "w_*", "FOO"]),  # refused as the option is read
    ("other", ["SORT", "items", "FOO", "BY", "w_*"]),
    ("other", ["SORT", "items", "ALPHA", "STORE", "out"]),  # the destination's own check
    ("other", ["SORT", "items", "ALPHA", "STORE", "items2"]),
    ("other", ["LRANGE", "items2", "0", "-1"]),
    ("other", ["EVAL", "return redis.call('SORT', KEYS[1], 'BY', 'w_*')", "1", "items"]),
    ("other", ["EVAL", "return redis.call('SORT', KEYS[1], 'ALPHA')", "1", "items"]),
    ("other", ["AUTH", "sort-reader", "x"]),
    ("other", ["SORT", "items", "BY", "w_*", "GET", "#", "GET", "w_*", "STORE", "out"]),
    ("other", ["SORT", "items", "BY", "w_*", "STORE", "items3"]),
    ("other", ["AUTH", "sort-writer", "x"]),
    ("other", ["SORT", "items", "ALPHA"]),
    ("other", ["SORT", "items", "BY", "w_*"]),
    ("other", ["SORT", "items", "GET", "#"]),
    ("other", ["AUTH", "sort-all", "x"]),
    ("other", ["SORT", "items", "BY", "w_*", "GET", "w_*"]),
    ("other", ["AUTH", "default", "x"]),
    ["LRANGE", "out", "0", "-1"],
    ["ACL", "DELUSER", "sort-confined", "sort-reader", "sort-writer", "sort-all"],
]

SCENARIOS = {"numbers": NUMBERS, "errors": ERRORS, "containers": CONTAINERS,
             "patterns": PATTERNS, "store": STORE, "keys": KEYS, "acl": ACL}


@pytest.mark.parametrize("protocol", [2, 3], ids=["resp2", "resp3"])
@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_sort_same_as_redis(reference: RedisServer, server: HotkvProcess, scenario: str,
                            protocol: int) -> None:
    run_scenario(reference.port, server.port, protocol, SCENARIOS[scenario])


def test_a_weight_out_of_range_is_not_a_double(server: HotkvProcess) -> None:
    c = server.client(protocol=3)
    c.execute_command("FLUSHALL")
    c.rpush("big", "1", "1e400")
    c.rpush("tiny", "1", "1e-400")
    c.rpush("fine", "1.5", "0.5")
    for key in ("big", "tiny"):
        with pytest.raises(redis.ResponseError, match=NOT_DOUBLE):
            c.execute_command("SORT", key)
        assert c.execute_command("SORT", key, "ALPHA") == [b"1", b"1e%s400" % (b"" if key == "big" else b"-")]
    assert c.execute_command("SORT", "fine") == [b"0.5", b"1.5"]  # the next call is not affected
