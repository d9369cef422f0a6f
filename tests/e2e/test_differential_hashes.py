"""Differential tests of small hashes (Redis's listpack, hotkv's packed form): the order of
HGETALL, HKEYS, HVALS, HSCAN and HRANDFIELD is insertion order in both servers, so it is
compared exactly here (test_differential_types.py compares hash reads as unordered); binary
fields and values that hold the packed form's markers (0x00, 0x01, 0x02); the conversions
at 64 bytes and 512 fields, and a hash past the packed form's 1 KB (a dict inside, still
``listpack``); COPY, RENAME, SORT BY/GET of hash fields and scripts on such hashes;
CONFIG SET of hash-max-listpack-* (acting at the next write, never undoing a hashtable). The
same steps go to a real redis-server and to hotkv, in RESP2 and RESP3.
"""

from __future__ import annotations

import pytest

from e2e.test_differential_types import Step, run_steps
from helpers import HotkvProcess, RedisServer

#: bytes that are the packed form's markers and escape codes, alone and in runs
MARKED = [b"\x00", b"\x01", b"\x02", b"\x02\x03", b"a\x01b\x00c", b"\x00\x01\x02\x03\x04\x05", b""]
#: 20 fields of 60-byte values: over the packed form's 1 KB, within Redis's listpack limits
WIDE = [x for i in range(20) for x in (f"w{i:02d}", f"{i:02d}" * 30)]


def reads(key: str) -> list[Step]:
    """Every read whose order is the hash's, compared exactly."""
    return [["HGETALL", key], ["HKEYS", key], ["HVALS", key], ["HLEN", key],
            ["HSCAN", key, "0"], ["HSCAN", key, "0", "MATCH", "*1*"],
            ["HRANDFIELD", key, "100"], ["HRANDFIELD", key, "100", "WITHVALUES"],
            ["OBJECT", "ENCODING", key]]


ORDER: list[Step] = [
    ["HSET", "h", "c", "3", "a", "1", "b", "2"],
    *reads("h"),
    ["HSET", "h", "a", "one"],  # an existing field keeps its place
    ["HSET", "h", "a", "a much longer value than before"],
    ["HINCRBY", "h", "n", "5"],
    ["HINCRBYFLOAT", "h", "c", "0.5"],
    ["HSETNX", "h", "b", "x"],
    ["HSETNX", "h", "d", "4"],
    *reads("h"),
    ["HDEL", "h", "a", "zz"],
    ["HSET", "h", "a", "back"],  # deleted and set again: at the end
    *reads("h"),
    ["HMGET", "h", "a", "b", "zz", "n"],
    ["HSTRLEN", "h", "a"],
    ["HEXISTS", "h", "n"],
    ["HSET", "h", "e", "", "", "empty field"],
    ["HGET", "h", ""],
    ["HGET", "h", "e"],
    *reads("h"),
]

BINARY: list[Step] = [
    ["HSET", "b", *[x for i, m in enumerate(MARKED) for x in (m, b"v%d" % i + m)]],
    *reads("b"),
    *[["HGET", "b", m] for m in MARKED],
    ["HGET", "b", b"\x02\x05"],  # how 0x02 is written inside: not a field
    ["HGET", "b", b"v1\x01"],  # a value, not a field
    ["HGET", "b", b"\x00\x01"],  # would span two entries
    ["HEXISTS", "b", b"a\x01b\x00c"],
    ["HSTRLEN", "b", b"\x00\x01\x02\x03\x04\x05"],
    ["HSET", "b", b"\x01", b"\x00\x00\x00"],
    ["HDEL", "b", b"\x02", b"\x02\x03"],
    ["HINCRBY", "b", b"\x00count", "7"],
    *reads("b"),
]

LIMITS: list[Step] = [
    ["HSET", "v", "f", "x" * 64, "g" * 64, "1"],
    ["OBJECT", "ENCODING", "v"],
    ["HSET", "v", "f", "x" * 65],  # one value past 64 bytes: hashtable for good
    ["OBJECT", "ENCODING", "v"],
    ["HSET", "v", "f", "short"],
    ["OBJECT", "ENCODING", "v"],
    ["HSET", "k", "g" * 65, "1"],
    ["OBJECT", "ENCODING", "k"],
    ["HSET", "wide", *WIDE],  # past 1 KB: hotkv's dict inside, still a listpack
    *reads("wide"),
    ["HSET", "wide", "w00", "changed"],
    ["HDEL", "wide", "w01"],
    ["HSET", "wide", "w01", "again"],
    *reads("wide"),
    ["HSET", "grow", "a", "1"],
    *[["HSET", "grow", f"g{i:02d}", f"{i:02d}" * 31] for i in range(20)],  # grows past 1 KB
    *reads("grow"),
    ["HSET", "full", *[x for i in range(512) for x in (f"f{i}", "v")]],
    ["OBJECT", "ENCODING", "full"],
    ["HSET", "full", "f0", "w"],
    ["OBJECT", "ENCODING", "full"],
    ["HSET", "full", "f512", "v"],  # the 513th field: hashtable
    ["OBJECT", "ENCODING", "full"],
    ["HDEL", "full", *[f"f{i}" for i in range(1, 513)]],
    ["OBJECT", "ENCODING", "full"],
    ["HGETALL", "full"],
]

KEYS: list[Step] = [
    ["HSET", "src", "z", "26", "y", "25", "x", "24"],
    ["COPY", "src", "dst"],
    *reads("dst"),
    ["HSET", "dst", "w", "23"],
    ["HGETALL", "src"],
    ["HSET", "wide", *WIDE],
    ["COPY", "wide", "wide2"],
    *reads("wide2"),
    ["HSET", "big", "f", "x" * 100, "g", "1"],
    ["COPY", "big", "big2"],
    ["HDEL", "big2", "f"],
    ["OBJECT", "ENCODING", "big2"],  # a copy of a hashtable stays one
    ["HGETALL", "big2"],
    ["RENAME", "src", "moved"],
    *reads("moved"),
    ["HGET", "src", "z"],
    ["RPUSH", "ids", "1", "2", "3"],
    ["HSET", "w_1", "weight", "30", "name", "one"],
    ["HSET", "w_2", "weight", "10", "name", "two"],
    ["HSET", "w_3", "name", "three", "weight", "20"],
    ["SORT", "ids", "BY", "w_*->weight", "GET", "#", "GET", "w_*->name"],
    ["SORT", "ids", "BY", "w_*->name", "ALPHA", "GET", "w_*->weight", "GET", "w_*->nope"],
    ["EVAL", "redis.call('HSET', KEYS[1], 'a', '1', 'b', '2'); "
             "redis.call('HSET', KEYS[1], 'a', ARGV[1]); return redis.call('HGETALL', KEYS[1])",
     "1", "lua", "\x00\x01"],
    ["EVAL", "return redis.call('HGET', KEYS[1], ARGV[1])", "1", "lua", "a"],
    ["MEMORY", "USAGE", "lua"],
]
KEYS[-1] = ("size", KEYS[-1])

DEFAULTS: list[Step] = [["CONFIG", "SET", "hash-max-listpack-entries", "512"],
                        ["CONFIG", "SET", "hash-max-listpack-value", "64"]]
CONFIG: list[Step] = [
    *DEFAULTS,
    ("pairs", ["CONFIG", "GET", "hash-max-listpack-*"]),
    ("pairs", ["CONFIG", "GET", "hash-max-ziplist-*"]),
    ["HSET", "a", "f1", "1", "f2", "2", "f3", "3"],
    ["HSET", "b", "f", "x" * 20],
    ["HSET", "c", "f", "x" * 20],
    ["CONFIG", "SET", "hash-max-listpack-entries", "2"],
    ["CONFIG", "SET", "hash-max-ziplist-value", "10"],  # the old name, as an alias
    ("pairs", ["CONFIG", "GET", "hash-max-listpack-*"]),
    ["OBJECT", "ENCODING", "a"],  # nothing converts until the hash's next write
    ["OBJECT", "ENCODING", "b"],
    ["HGET", "a", "f1"],
    ["OBJECT", "ENCODING", "a"],
    ["HSET", "a", "f1", "one"],  # an update of a 3-field hash: now past 2 entries
    ["OBJECT", "ENCODING", "a"],
    ("pairs", ["HGETALL", "a"]),  # a hashtable: in Redis's hash order
    ["HSET", "b", "g", "short"],  # the long value already there is not checked again
    ["OBJECT", "ENCODING", "b"],
    ["HSET", "c", "g", "y" * 11],
    ["OBJECT", "ENCODING", "c"],
    ["HSET", "d", "f", "1"],
    ["HSET", "d", "g", "2"],
    ["OBJECT", "ENCODING", "d"],
    ["HSET", "d", "h", "3"],
    ["OBJECT", "ENCODING", "d"],
    ["HINCRBY", "e", "n", "1"],
    ["HINCRBYFLOAT", "e", "n", "0.123456789"],  # a result past 10 bytes
    ["OBJECT", "ENCODING", "e"],
    ["HSET", "f", "a", "1", "b", "2"],
    ["HSETNX", "f", "c", "3"],
    ["OBJECT", "ENCODING", "f"],
    *DEFAULTS,
    ["OBJECT", "ENCODING", "a"],  # a hashtable never converts back
    ["HDEL", "a", "f2", "f3"],
    ["OBJECT", "ENCODING", "a"],
    ("pairs", ["CONFIG", "GET", "hash-max-listpack-*"]),
]

SCENARIOS: dict[str, list[Step]] = {"order": ORDER, "binary": BINARY, "limits": LIMITS, "keys": KEYS,
                                    "config": CONFIG}


@pytest.mark.parametrize("protocol", [2, 3], ids=["resp2", "resp3"])
@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_small_hashes_answer_as_redis_in_order(
    reference: RedisServer, server: HotkvProcess, scenario: str, protocol: int
) -> None:
    run_steps(reference.port, server.port, protocol, SCENARIOS[scenario])
