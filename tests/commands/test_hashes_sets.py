"""Hashes and sets through the dispatch point and through a real server: effects (one per
write, server-chosen picks fixed), MULTI/EXEC and WATCH, maxmemory and MEMORY USAGE, ACL key
specs of the multi-key commands, and redis-py's view in RESP2 and RESP3."""

from __future__ import annotations

import random
from typing import Any

import pytest
import redis

from hotkv_server.commands import load_all
from hotkv_server.engine.clock import ManualClock
from hotkv_server.engine.context import Context
from hotkv_server.engine.core import Core
from hotkv_server.engine.dispatch import dispatch
from hotkv_server.server.config import Config
from hotkv_server.server.memory import install
from hotkv_server.server.resp import NULL_ARRAY, ErrorReply
from hotkv_server.stores.database import default_database
from hotkv_server.stores.effect import decode, unpack

NOW = 1_700_000_000_000
BASE = 50 * 1024 * 1024
WRONGTYPE = "WRONGTYPE Operation against a key holding the wrong kind of value"

load_all()


class Rig:
    """A Core without sockets whose effects are recorded as the AOF would get them."""

    wants_bytes = True  # check the packed form too

    def __init__(self) -> None:
        self.core = Core(Config(), ManualClock(NOW))
        #: the wire value of every unit the AOF and the replicas got (``["tx", ...]`` groups)
        self.records: list[Any] = []
        self.core.effects.set_sink(self, True)
        self.ctx = Context(self.core, "127.0.0.1:1", "127.0.0.1:2")

    def write_effects(self, records: list[Any], payload: bytes | None) -> None:
        assert payload is not None and decode(unpack(payload)) == records
        self.records.append(unpack(payload))  # the wire value: a record or ["tx", [...]]

    def effects_lost(self, reason: str) -> None:
        raise AssertionError(reason)

    def run(self, *argv: Any, ctx: Context | None = None) -> Any:
        return dispatch(ctx or self.ctx, [a if isinstance(a, bytes) else str(a).encode() for a in argv])

    def replay(self) -> Any:
        """A fresh database fed the recorded effects: what an AOF load or a replica builds."""
        db = default_database()
        for record in self.records:
            db.apply(record)
        return db


def test_every_write_is_one_replayable_effect_with_random_picks_fixed() -> None:
    rig = Rig()
    random.seed(5)
    rig.run("SADD", "s", *[f"m{i}" for i in range(50)])
    rig.run("HSET", "h", "a", "1", "b", "2")
    rig.run("HINCRBYFLOAT", "h", "a", "0.5")
    rig.run("HINCRBY", "h", "b", "40")
    rig.run("SPOP", "s")
    rig.run("SPOP", "s", "7")
    rig.run("SMOVE", "s", "t", rig.run("SRANDMEMBER", "s"))
    rig.run("SINTERSTORE", "i", "s", "t")
    rig.run("SUNIONSTORE", "u", "s", "t")
    rig.run("PEXPIRE", "u", "5000")
    rig.run("COPY", "u", "u2")
    rig.run("RENAME", "h", "h2")
    rig.run("HDEL", "h2", "nope")  # changes nothing: no effect
    rig.run("SADD", "t", rig.run("SRANDMEMBER", "t"))  # already there: no effect
    flat = [e for record in rig.records for e in (record[1] if record[0] == "tx" else [record])]
    ops = [effect[0] for effect in flat]
    assert "tx" in [record[0] for record in rig.records]  # SMOVE: one record, two effects
    assert ops.count("kv.srem") == 3 and "kv.put" in ops and "kv.rename" in ops
    assert "kv.hset" in ops and "kv.copy" in ops
    assert rig.records[2] == ["kv.hset", b"h", [b"a", b"1.5"]]  # the result, not the increment
    replayed = rig.replay()
    live = rig.core.db
    assert replayed.kv.snapshot() == live.kv.snapshot()
    assert replayed.kv.estimated_bytes() == live.kv.estimated_bytes()
    assert replayed.kv.expiry(b"u2") == NOW + 5000


def test_writes_on_a_missing_key_create_it_replacing_what_a_copy_may_still_hold() -> None:
    rig = Rig()
    rig.run("SET", "k", "v", "PX", "10")
    rig.core.clock.advance(20)  # type: ignore[attr-defined]
    rig.run("SADD", "k", "m")  # k had expired: a new set, no deadline
    assert rig.records[-1] == ["kv.put", b"k", "set", [b"m"], None]
    db = rig.replay()  # the replay never ran the expiry: put replaces the stale string
    assert db.kv.type_name(b"k", NOW) == "set" and db.kv.expiry(b"k") is None


def test_wrongtype_leaves_everything_unchanged() -> None:
    rig = Rig()
    rig.run("SET", "str", "x")
    rig.run("HSET", "h", "f", "v")
    before = len(rig.records)
    for argv in (["HSET", "str", "f", "v"], ["SADD", "h", "m"], ["SINTERSTORE", "d", "h"],
                 ["SMOVE", "h", "d", "f"], ["HINCRBY", "str", "f", "1"], ["GET", "h"],
                 ["APPEND", "h", "x"], ["SPOP", "h"], ["HRANDFIELD", "str", "3"]):
        assert rig.run(*argv) == WRONGTYPE, argv
    assert len(rig.records) == before
    assert rig.run("LCS", "h", "str") == "ERR The specified keys must contain string values"


def test_multi_exec_and_watch() -> None:
    rig = Rig()
    other = Context(rig.core, "127.0.0.1:3", "127.0.0.1:4")
    rig.run("SADD", "s", "a", "b")
    rig.run("HSET", "h", "f", "1")
    assert rig.run("MULTI") == "OK"
    for argv in (["HINCRBY", "h", "f", "5"], ["SADD", "s", "c"], ["SMEMBERS", "s"], ["HGETALL", "h"]):
        assert rig.run(*argv) == "QUEUED"
    replies = rig.run("EXEC")
    assert replies[:2] == [6, 1] and replies[2] == {b"a", b"b", b"c"} and replies[3] == {b"f": b"6"}
    assert rig.records[-1][0] == "tx"  # one record for the whole block

    def watched_exec(watch: list[str], write: list[str]) -> Any:
        rig.run("WATCH", *watch)
        rig.run("MULTI")
        rig.run("GET", "unrelated")
        rig.run(*write, ctx=other)
        return rig.run("EXEC")

    assert watched_exec(["h"], ["HSET", "h", "g", "1"]) is NULL_ARRAY
    assert watched_exec(["s"], ["SREM", "s", "a"]) is NULL_ARRAY
    assert watched_exec(["dst"], ["SMOVE", "s", "dst", "b"]) is NULL_ARRAY  # the second key too
    assert watched_exec(["h2"], ["RENAME", "h", "h2"]) is NULL_ARRAY
    # writes that change nothing leave a WATCH alone, as in Redis
    assert watched_exec(["h2"], ["HDEL", "h2", "nope"]) == [None]
    assert watched_exec(["dst"], ["SADD", "dst", "b"]) == [None]


def test_maxmemory_counts_and_evicts_hashes_and_sets() -> None:
    core = Core(Config(), ManualClock(NOW))
    install(core, lambda: BASE, lambda: 0.0, random.Random(1))
    ctx = Context(core, "127.0.0.1:1", "127.0.0.1:2")
    core.config.values["maxmemory-policy"] = "allkeys-random"
    core.config.values["maxmemory"] = BASE + 200_000
    core.config_changed("maxmemory", BASE + 200_000)

    def run(*argv: Any) -> Any:
        return dispatch(ctx, [str(a).encode() for a in argv])

    for i in range(80):  # packed hashes are small: enough to pass maxmemory
        assert run("HSET", f"h{i}", *[x for j in range(20) for x in (f"f{j}", "v" * 50)]) == 20
        assert run("SADD", f"s{i}", *[f"member-{j}" for j in range(20)]) == 20
    kv = core.db.kv
    assert core.stats.evicted_keys > 0  # hashes and sets were evicted to stay under
    assert core.used_memory() <= BASE + 200_000 + kv.entry_bytes(b"h79") + kv.entry_bytes(b"s79")
    usage = run("MEMORY", "USAGE", "h79")
    assert usage == kv.entry_bytes(b"h79") > 20 * (2 + 50)
    grown = run("HSET", "h79", "big", "x" * 10_000)
    assert grown == 1 and run("MEMORY", "USAGE", "h79") >= usage + 10_000
    assert run("MEMORY", "USAGE", "nothing") is None


def test_acl_checks_each_key_spec_with_its_own_flags(r: redis.Redis, server: Any) -> None:
    r.execute_command("ACL", "SETUSER", "mover", "reset", "on", ">pw", "+@all", "%RW~a:*", "%W~b:*",
                      "%R~c:*")
    r.sadd("a:1", "m")
    r.sadd("c:1", "m")
    user = server.client(username="mover", password="pw")

    def call(*argv: Any) -> Any:
        try:
            return user.execute_command(*argv)
        except redis.ResponseError as exc:
            return str(exc)

    try:
        assert call("SINTERSTORE", "b:out", "a:1", "c:1") == 1  # W on b, R on a and c
        assert call("SMEMBERS", "b:out").startswith("this user has no permissions")  # no R on b
        assert call("SMOVE", "a:1", "b:out", "m") == 1  # RW on the source, W on b
        assert call("SMOVE", "c:1", "a:1", "m").startswith("this user has no permissions")  # c is read-only
        assert call("COPY", "c:1", "b:copy") == 1  # COPY reads c and writes b
        assert call("RENAME", "b:copy", "a:2").startswith("this user has no permissions")  # needs R on b
        # a keynum spec (SINTERCARD numkeys key ...) is checked like any other
        assert call("SINTERCARD", "2", "a:1", "c:1") == 0
        assert call("SINTERCARD", "2", "a:1", "secret").startswith("this user has no permissions")
        assert call("SUNION", "c:1", "secret").startswith("this user has no permissions")
    finally:
        user.close()
        r.execute_command("ACL", "DELUSER", "mover")


def test_read_commands_count_keyspace_hits_and_misses() -> None:
    rig = Rig()
    rig.run("HSET", "h", "f", "v")
    rig.run("SADD", "s", "m")
    stats = rig.core.stats
    hits, misses = stats.keyspace_hits, stats.keyspace_misses
    for argv in (["HGET", "h", "f"], ["SISMEMBER", "s", "m"], ["HGET", "nope", "f"], ["SCARD", "nope"]):
        rig.run(*argv)
    assert (stats.keyspace_hits - hits, stats.keyspace_misses - misses) == (2, 2)


def test_object_idletime_needs_an_lru_policy() -> None:
    rig = Rig()
    rig.run("HSET", "h", "f", "v")
    reply = rig.run("OBJECT", "IDLETIME", "h")
    assert isinstance(reply, ErrorReply) and "LRU" in reply
    rig.core.db.kv.track_access(True)
    rig.run("HGET", "h", "f")
    rig.core.clock.advance(5000)  # type: ignore[attr-defined]
    rig.run("GET", "other")  # the clock moves on with reads of other keys
    assert rig.run("OBJECT", "IDLETIME", "h") in (4, 5)
    rig.run("HGET", "h", "f")
    assert rig.run("OBJECT", "IDLETIME", "h") == 0
    assert rig.run("OBJECT", "IDLETIME", "nope") is None


# --- redis-py against a real server ---------------------------------------------------


def test_redis_py_sees_redis_shapes(r: redis.Redis) -> None:
    assert r.hset("h", mapping={"a": "1", "b": "2"}) == 2
    assert r.hgetall("h") == {b"a": b"1", b"b": b"2"}
    assert r.hmget("h", ["a", "zz"]) == [b"1", None]
    assert r.hincrbyfloat("h", "a", 0.25) == 1.25
    assert sorted(r.hkeys("h")) == [b"a", b"b"]
    pairs = r.hrandfield("h", 2, withvalues=True)
    if r.get_connection_kwargs().get("protocol") in (3, "3"):  # RESP3: [field, value] pairs
        assert sorted(pairs) == [[b"a", b"1.25"], [b"b", b"2"]]
    else:
        assert sorted(pairs) == sorted([b"a", b"1.25", b"b", b"2"])
    assert dict(r.hscan_iter("h")) == {b"a": b"1.25", b"b": b"2"}
    assert r.sadd("s", *[f"m{i}" for i in range(600)]) == 600
    assert r.smembers("s") == {f"m{i}".encode() for i in range(600)}
    assert set(r.sscan_iter("s", count=50)) == r.smembers("s")
    assert r.object("encoding", "s") == b"hashtable"
    assert r.type("s") == b"set" and r.type("h") == b"hash"
    assert r.smismember("s", ["m1", "nope"]) == [1, 0]
    assert r.sintercard(2, ["s", "s"], limit=10) == 10
    assert len(r.spop("s", 10)) == 10 and r.scard("s") == 590
    keys = set(r.scan_iter(_type="hash")) | set(r.scan_iter(_type="set"))
    assert keys == {b"h", b"s"}
    assert r.lcs("nokey", "nokey2") == b""
    with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
        r.get("h")


def test_a_huge_negative_count_is_refused_not_built() -> None:
    rig = Rig()
    rig.run("SADD", "s", "a")
    rig.run("HSET", "h", "f", "v")
    rig.run("ZADD", "z", "1", "m")
    for argv in (["SRANDMEMBER", "s", "-10000001"], ["HRANDFIELD", "h", "-10000001"],
                 ["ZRANDMEMBER", "z", "-10000001"], ["ZRANDMEMBER", "z", "-10000001", "WITHSCORES"]):
        reply = rig.run(*argv)
        assert isinstance(reply, ErrorReply) and reply.startswith("ERR count is too large"), argv
    assert rig.run("SRANDMEMBER", "s", "-3") == [b"a"] * 3
    assert rig.run("ZRANDMEMBER", "z", "-3") == [b"m"] * 3
    assert rig.run("ZRANDMEMBER", "nokey", "-1000000000000") == []  # no key: empty, as Redis
    assert rig.run("SRANDMEMBER", "s", "1000000000000") == [b"a"]  # distinct: at most all


def test_dump_restore_keeps_a_packed_hash_and_decides_its_encoding_again() -> None:
    rig = Rig()
    fields = [b"\x00", b"z", b"\x01\x02", b"a", b"", b"m"]
    rig.run("HSET", "h", *[x for f in fields for x in (f, b"v" + f)])
    assert rig.run("OBJECT", "ENCODING", "h") == b"listpack"
    payload = rig.run("DUMP", "h")
    rig.run("RESTORE", "copy", "0", payload)
    assert list(rig.run("HGETALL", "copy").items()) == [(f, b"v" + f) for f in fields]
    assert rig.run("OBJECT", "ENCODING", "copy") == b"listpack"
    assert rig.run("MEMORY", "USAGE", "copy") == rig.run("MEMORY", "USAGE", "h") + 3  # its longer key
    rig.run("HSET", "big", "f", "x" * 100, "g", "1")
    rig.run("HDEL", "big", "f")
    assert rig.run("OBJECT", "ENCODING", "big") == b"hashtable"
    rig.run("RESTORE", "big2", "0", rig.run("DUMP", "big"))
    # decided again from the contents, as Redis's RESTORE (an RDB load) does
    assert rig.run("OBJECT", "ENCODING", "big2") == b"listpack" and rig.run("HGETALL", "big2") == {b"g": b"1"}
    # the records are the same for either form: a replay builds the same keyspace
    replayed = rig.replay()
    assert replayed.kv.snapshot() == rig.core.db.kv.snapshot()
    assert replayed.kv.estimated_bytes() == rig.core.db.kv.estimated_bytes()
