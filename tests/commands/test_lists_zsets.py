"""List and sorted set commands: what the differential tests cannot compare (random picks,
ZSCAN walks of big sets, memory, expiry, eviction) through a real server, and the blocked
clients registry driven through the dispatch point without sockets."""

from __future__ import annotations

import time

import pytest
import redis

from hotkv_server.commands import load_all
from hotkv_server.engine.clock import ManualClock
from hotkv_server.engine.context import Context
from hotkv_server.engine.core import Core
from hotkv_server.engine.dispatch import Deferred, dispatch
from hotkv_server.engine.replies import NULL_ARRAY
from hotkv_server.stores.effect import unpack


def test_zrandmember_counts_repeats_and_members(r: redis.Redis) -> None:
    members = {f"m{i}".encode(): float(i) for i in range(20)}
    r.zadd("z", members)
    one = r.zrandmember("z")
    assert one in members
    distinct = r.zrandmember("z", 7)
    assert len(distinct) == 7 and len(set(distinct)) == 7 and set(distinct) <= set(members)
    assert sorted(r.zrandmember("z", 50)) == sorted(members)
    repeats = r.zrandmember("z", -60)
    assert len(repeats) == 60 and set(repeats) <= set(members)
    pairs = r.execute_command("ZRANDMEMBER", "z", 5, "WITHSCORES")
    if isinstance(pairs[0], list):  # RESP3: [member, score] pairs
        flat = [(m, float(s)) for m, s in pairs]
    else:
        flat = [(pairs[i], float(pairs[i + 1])) for i in range(0, len(pairs), 2)]
    assert len(flat) == 5 and all(members[m] == s for m, s in flat)


def test_zscan_walks_a_big_set_once_while_it_changes(r: redis.Redis) -> None:
    r.zadd("big", {f"m{i}": i for i in range(1000)})
    seen: list[bytes] = []
    cursor = 0
    steps = 0
    while True:
        cursor, chunk = r.zscan("big", cursor, count=50)
        seen.extend(m for m, _ in chunk)
        steps += 1
        if steps == 3:
            r.zadd("big", {f"new{i}": -1 for i in range(100)})
            r.zrem("big", "m999")
        if cursor == 0:
            break
    assert steps > 5
    stable = {f"m{i}".encode() for i in range(999)}
    assert stable <= set(seen)
    assert len([m for m in seen if m in stable]) == len(stable)  # none twice
    cursor, chunk = r.zscan("big", 0, match="m99*", count=10_000)
    assert cursor == 0 and {m for m, _ in chunk} == {b"m99", *{f"m99{i}".encode() for i in range(9)}}


def test_encoding_memory_and_copy(r: redis.Redis) -> None:
    r.rpush("l", *range(10))
    r.zadd("z", {"a": 1})
    assert r.object("ENCODING", "l") == b"quicklist"
    assert r.object("ENCODING", "z") == b"listpack"
    small = r.memory_usage("l")
    r.rpush("l", "x" * 10_000)
    assert r.memory_usage("l") >= small + 10_000
    r.zadd("z", {f"m{i}": i for i in range(200)})
    assert r.object("ENCODING", "z") == b"skiplist"
    r.zremrangebyrank("z", 0, 150)
    assert r.object("ENCODING", "z") == b"skiplist"  # no way back, as in Redis
    assert r.copy("z", "z-copy") is True
    r.zadd("z", {"only-in-z": 0})
    assert r.zscore("z-copy", "only-in-z") is None
    assert r.zcard("z-copy") == r.zcard("z") - 1
    assert r.rename("l", "l2") is True
    assert r.type("l2") == b"list" and r.lindex("l2", -1) == b"x" * 10_000


def test_lists_and_zsets_expire(r: redis.Redis) -> None:
    r.rpush("l", "a")
    r.zadd("z", {"a": 1})
    r.pexpire("l", 50)
    r.pexpire("z", 50)
    r.rpush("l", "b")  # a write keeps the deadline
    assert 0 < r.pttl("l") <= 50
    time.sleep(0.1)
    assert r.llen("l") == 0 and r.zcard("z") == 0
    assert r.exists("l", "z") == 0
    r.rpush("l", "fresh")
    assert r.ttl("l") == -1


def test_maxmemory_evicts_lists_and_refuses_pushes_with_noeviction(r: redis.Redis) -> None:
    r.config_set("maxmemory-policy", "allkeys-random")
    try:
        for i in range(30):
            r.rpush(f"l{i}", "x" * 50_000)
        used = int(r.info("memory")["used_memory"])
        r.config_set("maxmemory", str(used + 200_000))
        for i in range(30, 80):
            r.rpush(f"l{i}", "x" * 50_000)
        assert r.dbsize() < 80
        assert int(r.info("stats")["evicted_keys"]) > 0
        r.config_set("maxmemory-policy", "noeviction")
        with pytest.raises(redis.exceptions.OutOfMemoryError):
            for _ in range(200):
                r.rpush("more", "x" * 50_000)
        r.lpop("l79")  # a pop is not denyoom: it still runs
    finally:
        r.config_set("maxmemory", "0")
        r.config_set("maxmemory-policy", "noeviction")


def test_reads_count_keyspace_hits_and_misses_writes_do_not(r: redis.Redis) -> None:
    def counts() -> tuple[int, int]:
        stats = r.info("stats")
        return int(stats["keyspace_hits"]), int(stats["keyspace_misses"])

    r.rpush("l", "a")
    r.zadd("z", {"a": 1})
    start = counts()
    r.lrange("l", 0, -1)
    r.zscore("z", "a")
    r.lrange("nope", 0, -1)
    r.zrange("nope", 0, -1)
    assert counts() == (start[0] + 2, start[1] + 2)
    r.rpush("l", "b")
    r.lpop("l")
    r.zadd("z", {"b": 2})
    r.zpopmin("z")
    assert counts() == (start[0] + 2, start[1] + 2)


# --- the blocked clients registry, through dispatch, without sockets -------------------


@pytest.fixture
def core() -> Core:
    load_all()
    return Core(clock=ManualClock(1_700_000_000_000))


def run(ctx: Context, *argv: str) -> object:
    return dispatch(ctx, [a.encode() for a in argv])


def test_waiters_are_served_first_come_first_served(core: Core) -> None:
    a, b, c, d = (Context(core) for _ in range(4))
    waits = [run(x, "BLPOP", "k", "0") for x in (a, b, c)]
    assert all(type(w) is Deferred and not w.done for w in waits)
    assert len(core.blocking) == 3
    assert run(d, "RPUSH", "k", "1", "2") == 2
    assert [w.value for w in waits if w.done] == [[b"k", b"1"], [b"k", b"2"]]  # type: ignore[attr-defined]
    assert not waits[2].done  # type: ignore[attr-defined]
    assert run(d, "LLEN", "k") == 0
    core.blocking.client_gone(c)
    assert len(core.blocking) == 0
    assert run(d, "RPUSH", "k", "3") == 1
    assert run(d, "LLEN", "k") == 1


def test_a_transaction_wakes_waiters_once_it_is_done(core: Core) -> None:
    a, d = Context(core), Context(core)
    wait = run(a, "BZPOPMAX", "z", "0")
    assert type(wait) is Deferred
    run(d, "MULTI")
    run(d, "ZADD", "z", "1", "low")
    run(d, "ZADD", "z", "5", "high")
    assert not wait.done
    assert run(d, "EXEC") == [1, 1]
    assert wait.done and wait.value[:2] == [b"z", b"high"]
    assert run(d, "ZRANGE", "z", "0", "-1") == [b"low"]


def test_blocking_inside_multi_answers_at_once(core: Core) -> None:
    a = Context(core)
    run(a, "MULTI")
    run(a, "BLPOP", "nothing", "0")
    run(a, "BZMPOP", "0", "1", "nothing", "MIN")
    assert run(a, "EXEC") == [NULL_ARRAY, NULL_ARRAY]
    assert len(core.blocking) == 0


def test_served_pops_are_ordinary_effects(core: Core) -> None:
    class Sink:
        wants_bytes = True

        def __init__(self) -> None:
            self.units: list[object] = []

        def write_effects(self, records: list[object], payload: bytes | None) -> None:
            assert payload is not None
            self.units.append(unpack(payload))

        def effects_lost(self, reason: str) -> None:
            raise AssertionError(reason)

    sink = Sink()
    core.effects.set_sink(sink, True)
    a, d = Context(core), Context(core)
    run(a, "BLMOVE", "src", "dst", "RIGHT", "LEFT", "0")
    run(d, "RPUSH", "src", "v")
    ops = [u[0] if u[0] != "tx" else [e[0] for e in u[1]] for u in sink.units]  # type: ignore[index]
    # the RPUSH, then the served pop as a move (its push written first, as Redis notifies)
    assert ops == ["kv.put", ["kv.put", "kv.rpop"]]
    assert not any(b"BLMOVE" in repr(u).encode().upper() for u in sink.units)
