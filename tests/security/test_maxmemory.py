"""maxmemory and maxmemory-policy: the store's bookkeeping, the used-memory estimate, every
eviction policy through dispatch (deterministic: the RSS sample is frozen so the estimate
is the base plus the cache's own bytes), and real servers filled past their limit."""

from __future__ import annotations

import random
import time
from collections.abc import Iterator
from typing import Any

import msgpack
import pytest
import redis
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import HotkvProcess
from hotkv_server.commands import load_all
from hotkv_server.engine.clock import ManualClock
from hotkv_server.engine.config import Config
from hotkv_server.engine.context import Context
from hotkv_server.engine.core import Core
from hotkv_server.engine.dispatch import dispatch
from hotkv_server.server.memory import MemoryGuard, UsedMemory, install
from hotkv_server.server.resp import NULL_ARRAY, ErrorReply
from hotkv_server.stores.effect import FlushAll, decode, unpack
from hotkv_server.stores.keyspace import (
    ACCESS_OVERHEAD,
    DEADLINE_OVERHEAD,
    ENTRY_OVERHEAD,
    KeyValueStore,
)
from hotkv_server.stores.keyspace_effects import KvDel, KvSet
from hotkv_server.stores.summary_effects import SummarySet

OOM = "OOM command not allowed when used memory > 'maxmemory'."
#: redis-py strips the OOM code and raises OutOfMemoryError with the rest
OOM_TEXT = OOM[4:]
BASE = 50 * 1024 * 1024
NOW = 1_700_000_000_000

load_all()


# --- the store's bookkeeping ---------------------------------------------------------


def expected_bytes(store: KeyValueStore) -> int:
    total = 0
    for key in store.ids(0):
        total += store.entry_bytes(key)
    return total


_keys = st.sampled_from([b"a", b"bb", b"ccc", b"dddd", b"e" * 40])
_values = st.binary(max_size=64)
_ops = st.lists(
    st.one_of(
        st.tuples(st.just("set"), _keys, _values, st.sampled_from([None, NOW + 10, NOW + 5_000]),),
        st.tuples(st.just("mset"), st.lists(st.tuples(_keys, _values), min_size=1, max_size=3)),
        st.tuples(st.just("del"), st.lists(_keys, max_size=3)),
        st.tuples(st.just("expire"), _keys, st.sampled_from([NOW - 1, NOW + 100])),
        st.tuples(st.just("persist"), _keys),
        st.tuples(st.just("get"), _keys),
        st.tuples(st.just("purge"),),
        st.tuples(st.just("clear"),),
        st.tuples(st.just("restore"),),
        st.tuples(st.just("track"), st.booleans()),
    ),
    max_size=40,
)


@settings(max_examples=150, deadline=None)
@given(_ops)
def test_estimated_bytes_matches_the_keys_held(ops: list[tuple[Any, ...]]) -> None:
    store = KeyValueStore()
    for op in ops:
        kind = op[0]
        if kind == "set":
            store.apply(["kv.set", op[1], op[2], op[3]])
        elif kind == "mset":
            store.apply(["kv.mset", [x for pair in op[1] for x in pair]])
        elif kind == "del":
            store.apply(["kv.del", op[1]])
        elif kind == "expire":
            store.apply(["kv.expire", op[1], op[2]])
        elif kind == "persist":
            store.apply(["kv.persist", op[1]])
        elif kind == "get":
            store.get(op[1], NOW)
        elif kind == "purge":
            store.purge_expired(NOW, 100)
        elif kind == "clear":
            store.clear()
        elif kind == "restore":
            state = msgpack.unpackb(msgpack.packb(store.snapshot()))
            store.restore(state)
        else:
            store.track_access(op[1])
        # the running sum equals a recount, expired-but-unpurged keys included
        held = sum(store.entry_bytes(k) for k in list(store._values))
        assert store.estimated_bytes() == held


def test_entry_bytes_counts_key_value_deadline_and_access_stamp() -> None:
    store = KeyValueStore()
    store.apply(["kv.set", b"k", b"12345", None])
    assert store.entry_bytes(b"k") == 1 + 5 + ENTRY_OVERHEAD
    store.apply(["kv.expire", b"k", NOW + 1000])
    assert store.entry_bytes(b"k") == 1 + 5 + ENTRY_OVERHEAD + DEADLINE_OVERHEAD
    store.track_access(True)
    store.get(b"k", NOW)
    assert store.entry_bytes(b"k") == 1 + 5 + ENTRY_OVERHEAD + DEADLINE_OVERHEAD + ACCESS_OVERHEAD
    assert store.entry_bytes(b"missing") == 0
    store.apply(["kv.del", [b"k"]])
    assert store.estimated_bytes() == 0


def test_access_clock_get_and_writes_touch_peek_exists_scan_do_not() -> None:
    store = KeyValueStore()
    store.apply(["kv.set", b"old", b"v", None])
    assert not store.tracking_access
    store.get(b"old", NOW)
    store.track_access(True)
    assert store.last_access(b"old") == 0  # not used since tracking began: oldest
    store.apply(["kv.set", b"new", b"v", None])
    stamp_new = store.last_access(b"new")
    assert stamp_new > 0
    store.peek(b"old", NOW)
    store.exists(b"old", NOW)
    store.scan(0, 10, NOW)
    assert store.last_access(b"old") == 0
    store.get(b"old", NOW)
    assert store.last_access(b"old") > stamp_new
    assert store.access_clock == store.last_access(b"old")
    store.apply(["kv.mset", [b"new", b"w"]])
    assert store.last_access(b"new") > store.last_access(b"old")
    store.apply(["kv.del", [b"new"]])
    assert store.last_access(b"new") == 0
    store.track_access(False)
    assert store.last_access(b"old") == 0
    assert store.estimated_bytes() == store.entry_bytes(b"old")


def test_keys_by_deadline_walks_the_heap_in_order_past_stale_entries() -> None:
    store = KeyValueStore()
    rng = random.Random(7)
    deadlines = {}
    for i in range(300):
        key = b"k%d" % i
        at = NOW + rng.randrange(1, 100_000)
        store.apply(["kv.set", key, b"v", at])
        deadlines[key] = at
    for i in range(0, 300, 3):  # stale heap entries: new deadlines, deletions, persists
        key = b"k%d" % i
        at = NOW + rng.randrange(1, 100_000)
        store.apply(["kv.expire", key, at])
        deadlines[key] = at
    for i in range(1, 300, 7):
        store.apply(["kv.del", [b"k%d" % i]])
        deadlines.pop(b"k%d" % i)
    store.apply(["kv.persist", b"k2"])
    deadlines.pop(b"k2")
    store.apply(["kv.set", b"plain", b"v", None])
    walked = list(store.keys_by_deadline())
    assert sorted(walked) == sorted(deadlines)
    assert [deadlines[k] for k in walked] == sorted(deadlines.values())
    assert list(KeyValueStore().keys_by_deadline()) == []


def test_sample_keys_draws_live_keys_and_sees_keys_added_since() -> None:
    store = KeyValueStore()
    rng = random.Random(1)
    for i in range(100):
        store.apply(["kv.set", b"k%d" % i, b"v", NOW + 1000 if i % 2 else None])
    seen = set()
    for _ in range(200):
        seen.update(store.sample_keys(5, rng.randrange))
    assert len(seen) > 90
    volatile = set()
    for _ in range(200):
        volatile.update(store.sample_keys(5, rng.randrange, volatile=True))
    assert volatile == {b"k%d" % i for i in range(1, 100, 2)}
    # remove most keys, add many new ones: draws land only on live keys, new ones included
    store.apply(["kv.del", [b"k%d" % i for i in range(95)]])
    for i in range(100, 300):
        store.apply(["kv.set", b"k%d" % i, b"v", None])
    drawn = set()
    for _ in range(300):
        drawn.update(store.sample_keys(5, rng.randrange))
    assert drawn <= set(store.ids(NOW))
    assert any(int(k[1:]) >= 100 for k in drawn)
    assert store.sample_keys(5, rng.randrange, volatile=True) != []
    store.clear()
    assert store.sample_keys(5, rng.randrange) == []


def test_sample_keys_of_a_small_keyspace_is_every_key_in_a_random_order() -> None:
    # as Redis's sample of a small dict: an LRU choice among two keys always sees the idle
    # one (draws with repeats missed it one time in 16: allkeys-lru evicted the busy key)
    store = KeyValueStore()
    rng = random.Random(3)
    for key in (b"a", b"b", b"c"):
        store.apply(["kv.set", key, b"v", None])
    orders = set()
    for _ in range(60):
        drawn = store.sample_keys(5, rng.randrange)
        assert sorted(drawn) == [b"a", b"b", b"c"]
        orders.add(tuple(drawn))
    assert len(orders) == 6  # every order turns up: allkeys-random still picks at random
    assert store.sample_keys(3, rng.randrange, volatile=True) == []


# --- the estimate --------------------------------------------------------------------


class Scripted:
    """A process size and a monotonic clock moved by hand, to replay the estimate's cases."""

    def __init__(self, rss: int) -> None:
        self.rss = rss
        self.t = 0.0

    def measure(self) -> int:
        return self.rss

    def clock(self) -> float:
        return self.t


def fill(core: Core, prefix: bytes, n: int, size: int = 1000) -> int:
    before = core.db.kv.estimated_bytes()
    for i in range(n):
        core.effects.emit(KvSet(prefix + b"%d" % i, b"x" * size, None))
    core.effects.flush()
    return core.db.kv.estimated_bytes() - before


def test_estimate_follows_rss_but_not_its_stickiness() -> None:
    config = Config()
    config.values["maxmemory"] = 10**12  # writes to other stores are counted only under a limit
    core = Core(config, ManualClock())
    fake = Scripted(BASE)
    used = UsedMemory(core, fake.measure, fake.clock, interval=1.0)
    core.effects.observers.append(used.note_effect)
    assert used() == BASE
    # the cache grows and RSS with it: the estimate is the same as RSS
    grown = fill(core, b"a", 100)
    fake.rss += grown
    fake.t += 1
    assert used() == BASE + grown
    # RSS grows by more than the cache needed: the rest is someone else's
    fake.rss += 1000
    fake.t += 1
    assert used() == BASE + grown + 1000
    # an eviction frees at once, though RSS stays where it is
    freed = core.db.kv.entry_bytes(b"a0") * 10
    used.released += freed
    core.effects.emit(KvDel([b"a%d" % i for i in range(10)]))
    assert used() == BASE + grown + 1000 - freed
    fake.t += 1
    assert used() == BASE + grown + 1000 - freed
    assert used.free_pool == freed
    # the cache refills into the freed memory: no RSS growth, same estimate as before
    fill(core, b"b", 10)
    fake.t += 1
    assert used() == BASE + grown + 1000
    assert used.free_pool == 0
    # another store reuses memory the cache gave up: it counts although RSS did not move
    other_before = used.other
    used.released += freed
    core.effects.emit(KvDel([b"b%d" % i for i in range(10)]))
    core.effects.emit(SummarySet(b"agent", b"x" * 5000, 1, NOW, None))
    core.effects.flush()
    written = used.other_written
    assert 5000 < written < freed
    fake.t += 1
    assert used() == BASE + grown + 1000 - freed + written
    assert used.other == other_before + written
    assert used.free_pool == freed - written
    # growth nobody explains counts once, and the pool is not taken for it
    fake.rss += 500
    fake.t += 1
    assert used() == BASE + grown + 1000 - freed + written + 500
    assert used.free_pool == freed - written
    # FLUSHALL gives the cache's memory back to the pool
    core.effects.emit(FlushAll())
    fake.t += 1
    assert used() == used.other
    assert used.free_pool >= grown - freed


# --- eviction through dispatch ---------------------------------------------------------


class Rig:
    """A Core with the guard installed and the RSS sample frozen: used = base + cache bytes."""

    def __init__(self, policy: str, budget: int, *, seed: int = 3) -> None:
        self.core = Core(Config(), ManualClock(NOW))
        self.guard: MemoryGuard = install(self.core, lambda: BASE, lambda: 0.0, random.Random(seed))
        self.records: list[Any] = []  # wire lists of what reached the AOF/replica sinks
        self.core.effects.set_sink(self, True)
        self.ctx = Context(self.core, "127.0.0.1:1", "127.0.0.1:2")
        self.core.config.values["maxmemory-policy"] = policy
        self.set_maxmemory(BASE + budget)

    def set_maxmemory(self, value: int) -> None:
        """As CONFIG SET does: store the value, then tell the listeners (the dispatch
        point's gate flag and the guard's sink follow maxmemory)."""
        self.core.config.values["maxmemory"] = value
        self.core.config_changed("maxmemory", value)

    def run(self, *argv: Any) -> Any:
        return dispatch(self.ctx, [a if isinstance(a, bytes) else str(a).encode() for a in argv])

    wants_bytes = True  # check the packed form too

    def write_effects(self, records: list[Any], payload: bytes | None) -> None:
        assert payload is not None and decode(unpack(payload)) == records
        self.records.extend(r.wire() for r in records)

    def effects_lost(self, reason: str) -> None:
        raise AssertionError(reason)

    @property
    def kv(self) -> KeyValueStore:
        kv: KeyValueStore = self.core.db.kv
        return kv

    def evicted_records(self) -> list[bytes]:
        keys: list[bytes] = []
        for rec in self.records:
            if rec[0] == "kv.del":
                keys.extend(rec[1])
        return keys


def entry(key: bytes, value_size: int, *, ttl: bool = False, lru: bool = False) -> int:
    size = len(key) + value_size + ENTRY_OVERHEAD
    return size + (DEADLINE_OVERHEAD if ttl else 0) + (ACCESS_OVERHEAD if lru else 0)


def test_noeviction_refuses_denyoom_commands_and_serves_the_rest() -> None:
    rig = Rig("noeviction", 10 * entry(b"k0", 100))
    for i in range(10):
        assert rig.run("SET", f"k{i}", "x" * 100) == "OK"
    assert rig.core.used_memory() <= rig.core.config.values["maxmemory"]
    assert rig.run("SET", "k10", "x" * 100) == "OK"  # goes over: the next write is refused
    for argv in (("SET", "k11", "v"), ("INCR", "n"), ("MSET", "a", "1"),
                 ("AMEM.WORK.SET", "s", "k", "v"), ("AMEM.EPIS.LOG", "agent", "action", "t")):
        reply = rig.run(*argv)
        assert isinstance(reply, ErrorReply) and reply == OOM, argv
    assert rig.run("GET", "k1") == b"x" * 100  # reads go on
    assert rig.run("DEL", "k1", "k2") == 2  # DEL is not denyoom
    assert rig.run("SET", "k11", "v") == "OK"
    assert rig.core.stats.evicted_keys == 0
    assert rig.core.stats.errorstats["OOM"] == 5


def test_oom_inside_multi_flags_the_transaction() -> None:
    rig = Rig("noeviction", 0)
    rig.run("SET", "k", "v")  # over from now on
    assert rig.run("MULTI") == "OK"
    assert rig.run("SET", "k2", "v") == OOM
    reply = rig.run("EXEC")
    assert isinstance(reply, ErrorReply) and reply.startswith("EXECABORT")


def test_allkeys_lru_keeps_the_keys_in_use() -> None:
    size = entry(b"k000", 200, lru=True)
    rig = Rig("allkeys-lru", 100 * size)
    hot = [f"k{i:03d}" for i in range(0, 100, 10)]
    for i in range(100):
        rig.run("SET", f"k{i:03d}", "x" * 200)
    for i in range(100, 400):
        for key in hot:
            assert rig.run("GET", key) == b"x" * 200
        rig.run("SET", f"k{i:03d}", "x" * 200)
    assert rig.kv.estimated_bytes() <= 100 * size + size
    assert all(rig.kv.peek(k.encode(), NOW) is not None for k in hot)
    evicted = rig.evicted_records()
    assert rig.core.stats.evicted_keys == len(evicted) >= 290
    assert not {k.encode() for k in hot} & set(evicted)
    # evictions reach the AOF/replica sinks as kv.del effects
    assert all(rec[0] in ("kv.set", "kv.del") for rec in rig.records)
    # the oldest keys went first: none of the first writes (never read) survives
    assert not any(rig.kv.peek(b"k%03d" % i, NOW) for i in range(1, 50) if i % 10)


def test_volatile_lru_evicts_only_keys_with_a_deadline_then_refuses() -> None:
    size = entry(b"v00", 100, ttl=True, lru=True)
    rig = Rig("volatile-lru", 40 * size)
    for i in range(20):
        rig.run("SET", f"p{i:02d}", "x" * 100)  # no deadline: never evicted
    for i in range(20):
        rig.run("SET", f"v{i:02d}", "x" * 100, "EX", 1000)
    for i in range(20, 40):
        rig.run("SET", f"v{i:02d}", "x" * 100, "EX", 1000)
    assert all(k.startswith(b"v") for k in rig.evicted_records())
    assert all(rig.kv.peek(b"p%02d" % i, NOW) for i in range(20))
    # without volatile keys left, writes are refused
    rig.run("PERSIST", "v39")
    for key in list(rig.kv.ids(NOW)):
        if rig.kv.expiry(key) is not None:
            rig.run("PERSIST", key)
    results = [rig.run("SET", f"q{i}", "x" * 100) for i in range(200)]
    assert OOM in results
    assert all(rig.kv.peek(b"p%02d" % i, NOW) for i in range(20))


def test_volatile_ttl_evicts_the_nearest_deadline_first() -> None:
    size = entry(b"t000", 100, ttl=True)
    rig = Rig("volatile-ttl", 50 * size)
    order = list(range(200))
    random.Random(5).shuffle(order)
    for n, i in enumerate(order):
        rig.run("SET", f"t{i:03d}", "x" * 100, "PX", 10_000 + i * 100)
        if n == 100:
            rig.run("SET", "plain", "x" * 100)
    survivors = sorted(int(k[1:]) for k in rig.kv.ids(NOW) if k.startswith(b"t"))
    assert rig.kv.peek(b"plain", NOW) is not None
    evicted = rig.evicted_records()
    assert evicted and b"plain" not in evicted
    # every survivor expires later than any key evicted while it was held
    for key in evicted:
        i = int(key[1:])
        assert all(s > i for s in survivors if order.index(s) < order.index(i))


def test_random_policies_evict_and_volatile_random_spares_plain_keys() -> None:
    for policy in ("allkeys-random", "volatile-random"):
        size = entry(b"r000", 100, ttl=True)
        rig = Rig(policy, 60 * size)
        for i in range(200):
            if i % 2:
                rig.run("SET", f"r{i:03d}", "x" * 100, "EX", 100)
            else:
                rig.run("SET", f"r{i:03d}", "x" * 100)
        evicted = rig.evicted_records()
        assert len(evicted) == rig.core.stats.evicted_keys > 50
        assert rig.kv.estimated_bytes() <= 60 * size + size
        plain_evicted = [k for k in evicted if int(k[1:]) % 2 == 0]
        if policy == "volatile-random":
            assert not plain_evicted
        else:
            assert plain_evicted


def test_amem_writes_are_refused_when_nothing_is_evictable() -> None:
    rig = Rig("allkeys-lru", 5000)
    rig.set_maxmemory(BASE - 1)  # over with an empty cache
    reply = rig.run("AMEM.CONV.CREATE", "s1")
    assert reply == OOM
    rig.set_maxmemory(BASE + 5000)
    assert rig.run("AMEM.CONV.CREATE", "s1") == "OK"
    # with cache keys around, an AMEM write evicts them (AMEM data is never evicted)
    rig.run("SET", "c1", "x" * 2000)
    rig.run("SET", "c2", "x" * 2000)
    rig.run("SET", "c3", "x" * 2000)  # over from here
    assert rig.core.stats.evicted_keys == 0
    assert rig.run("AMEM.CONV.APPEND", "s1", "user", "hello", "WITHSEQ") == 1
    assert rig.core.stats.evicted_keys >= 1
    assert rig.core.used_memory() <= BASE + 5000
    assert rig.run("AMEM.CONV.LEN", "s1") == 1


def test_eviction_breaks_a_watch_and_counts_in_info() -> None:
    rig = Rig("allkeys-random", 3 * entry(b"w1", 100))
    other = Context(rig.core, "127.0.0.1:3", "127.0.0.1:4")
    rig.run("SET", "w1", "x" * 100)
    dispatch(other, [b"WATCH", b"w1"])
    dispatch(other, [b"MULTI"])
    dispatch(other, [b"GET", b"w1"])
    for i in range(20):
        rig.run("SET", f"z{i}", "x" * 100)
        if rig.kv.peek(b"w1", NOW) is None:
            break
    assert rig.kv.peek(b"w1", NOW) is None
    assert dispatch(other, [b"EXEC"]) is NULL_ARRAY
    info = rig.run("INFO", "stats").text.decode()
    assert f"evicted_keys:{rig.core.stats.evicted_keys}\r\n" in info
    assert f"used_memory:{rig.core.used_memory()}\r\n" in rig.run("INFO", "memory").text.decode()


def test_config_set_follows_policy_and_lowering_maxmemory_evicts_at_once() -> None:
    rig = Rig("noeviction", 10**9)
    for i in range(50):
        rig.run("SET", f"k{i}", "x" * 100)
    assert not rig.kv.tracking_access
    assert rig.run("CONFIG", "SET", "maxmemory-policy", "allkeys-lru") == "OK"
    assert rig.kv.tracking_access
    target = BASE + 10 * entry(b"k10", 100, lru=True)
    assert rig.run("CONFIG", "SET", "maxmemory", str(target)) == "OK"
    assert rig.core.used_memory() <= target
    assert 10 <= len(rig.kv) <= 14  # keys not used since tracking began carry no stamp
    assert rig.run("CONFIG", "SET", "maxmemory", "0") == "OK"
    assert not rig.kv.tracking_access  # no limit, no access clock


def test_other_stores_writes_are_counted_only_while_a_limit_is_set() -> None:
    rig = Rig("allkeys-random", 0)
    rig.set_maxmemory(0)
    written = rig.guard.used.other_written
    assert rig.guard.used.note_effect not in rig.core.effects.observers
    assert rig.run("AMEM.WORK.SET", "s", "k", "v" * 1000) == "OK"
    assert rig.guard.used.other_written == written
    assert rig.run("CONFIG", "SET", "maxmemory", str(10**12)) == "OK"
    assert rig.guard.used.note_effect in rig.core.effects.observers
    assert rig.run("AMEM.WORK.SET", "s", "k2", "v" * 1000) == "OK"
    assert rig.guard.used.other_written >= written + 1000
    assert rig.run("CONFIG", "SET", "maxmemory", "0") == "OK"
    assert rig.guard.used.note_effect not in rig.core.effects.observers


def test_a_replica_does_not_evict() -> None:
    rig = Rig("allkeys-random", 0)
    rig.core.role = "slave"
    rig.core.config.values["replica-read-only"] = False
    for i in range(20):
        assert rig.run("SET", f"k{i}", "v") == "OK"
    assert rig.core.stats.evicted_keys == 0


# --- real servers --------------------------------------------------------------------


@pytest.fixture(scope="module")
def mm_server() -> Iterator[HotkvProcess]:
    proc = HotkvProcess().start()
    try:
        yield proc
    finally:
        proc.cleanup()


def limit_above_now(client: redis.Redis, extra: int) -> int:
    used = int(client.info("memory")["used_memory"])
    limit = used + extra
    client.config_set("maxmemory", limit)
    return limit


def write_values(client: redis.Redis, prefix: str, count: int, size: int, *, hot: tuple[str, ...] = (),
                 ex: int | None = None) -> list[Any]:
    replies: list[Any] = []
    # small pipelines: the server's request and reply buffers stay far below the headroom
    # the tests give, so RSS growth is the cache's (the estimate counts the rest as others')
    for start in range(0, count, 100):
        pipe = client.pipeline(transaction=False)
        for i in range(start, min(start + 100, count)):
            pipe.set(f"{prefix}{i}", b"%d" % i + b"x" * size, ex=ex)
        for key in hot:
            pipe.get(key)
        replies.extend(pipe.execute(raise_on_error=False))
    return replies


MB = 1024 * 1024


def test_server_allkeys_lru_stays_near_the_limit_and_keeps_hot_keys(mm_server: HotkvProcess) -> None:
    client = mm_server.client(protocol=3)
    client.flushall()
    client.config_resetstat()
    client.config_set("maxmemory-policy", "allkeys-lru")
    hot = [f"hot{i}" for i in range(20)]
    for key in hot:
        client.set(key, b"h" * 4000)
    rss_before = int(client.info("memory")["used_memory_rss"])
    limit = limit_above_now(client, 20 * MB)
    try:
        replies = write_values(client, "lru:", 15000, 4000, hot=tuple(hot))  # ~60 MB written
        assert not [r for r in replies if isinstance(r, Exception)]
        info = client.info()
        assert info["evicted_keys"] > 5000
        assert client.dbsize() < 15000
        assert info["used_memory"] <= limit + 64 * 1024
        # RSS holds what the estimate does plus memory kept for reuse; it does not run away
        assert info["used_memory_rss"] < rss_before + 20 * MB + 24 * MB
        assert all(client.get(key) == b"h" * 4000 for key in hot)
        assert client.get("lru:14999") is not None  # the newest survive
    finally:
        client.config_set("maxmemory", 0)
        client.close()


def test_server_noeviction_answers_oom_then_recovers(mm_server: HotkvProcess) -> None:
    client = mm_server.client(protocol=2)
    client.flushall()
    client.config_resetstat()
    client.config_set("maxmemory-policy", "noeviction")
    limit_above_now(client, 8 * MB)
    try:
        replies = write_values(client, "no:", 6000, 4000)
        errors = [r for r in replies if isinstance(r, Exception)]
        assert errors
        assert all(isinstance(e, redis.exceptions.OutOfMemoryError) and str(e) == OOM_TEXT for e in errors)
        assert client.info("stats")["evicted_keys"] == 0
        written = client.dbsize()
        assert 500 < written < 6000
        assert client.get("no:0") is not None
        # at the limit every write that may grow memory is refused, the memory stores' too;
        # the calls go in one read so one estimate answers them all (the estimate may have
        # dropped since the loop above as the server's buffers were freed: fill up again)
        for attempt in range(400):
            pipe = client.pipeline(transaction=False)
            pipe.set(f"no:fill{attempt}", b"x" * 65536)
            pipe.execute_command("AMEM.WORK.SET", "s", "k", "v")
            pipe.set("one-more", "v")
            first, amem, more = pipe.execute(raise_on_error=False)
            if isinstance(first, redis.exceptions.OutOfMemoryError):
                break
        else:
            pytest.fail("writes were never refused again at the limit")
        assert isinstance(amem, redis.exceptions.OutOfMemoryError)
        assert isinstance(more, redis.exceptions.OutOfMemoryError)
        keys = client.keys("no:*")
        assert client.delete(*keys) == len(keys) >= written
        # freeing the cache makes room again (the RSS part of the estimate is resampled
        # every 100 ms, so give a loaded machine a moment)
        deadline = time.monotonic() + 3
        while True:
            try:
                assert client.set("one-more", "v") is True
                break
            except redis.exceptions.OutOfMemoryError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
    finally:
        client.config_set("maxmemory", 0)
        client.close()


def test_server_amem_growth_ends_in_oom_and_cache_is_evicted_first(mm_server: HotkvProcess) -> None:
    client = mm_server.client(protocol=3)
    client.flushall()
    client.config_resetstat()
    client.config_set("maxmemory-policy", "allkeys-random")
    for i in range(200):
        client.set(f"cache:{i}", b"c" * 1000)
    limit_above_now(client, 6 * MB)
    try:
        client.execute_command("AMEM.CONV.CREATE", "big", "WINDOW", "100000")
        refused = None
        for _ in range(40):
            pipe = client.pipeline(transaction=False)
            for _ in range(200):
                pipe.execute_command("AMEM.CONV.APPEND", "big", "user", b"t" * 2000)
            replies = pipe.execute(raise_on_error=False)
            errors = [r for r in replies if isinstance(r, Exception)]
            if errors:
                refused = errors[0]
                break
            time.sleep(0.12)  # let the 100 ms RSS sample see the growth
        assert isinstance(refused, redis.exceptions.OutOfMemoryError)
        assert str(refused) == OOM_TEXT
        assert client.dbsize() == 0  # every cache key went before the refusal
        assert client.info("stats")["evicted_keys"] == 200
        assert client.execute_command("AMEM.CONV.LEN", "big") > 0
    finally:
        client.config_set("maxmemory", 0)
        client.close()


def test_evictions_reach_the_aof_and_a_restart_keeps_them_evicted() -> None:
    proc = HotkvProcess("--appendonly", "yes", "--appendfsync", "always",
                        "--maxmemory-policy", "volatile-ttl").start()
    try:
        client = proc.client(protocol=3)
        client.set("keep", "plain value")
        limit_above_now(client, 8 * MB)
        write_values(client, "ttl:", 4000, 4000, ex=100_000)
        assert client.info("stats")["evicted_keys"] > 0
        before = sorted(client.keys("*"))
        assert b"keep" in before and len(before) < 4001
        client.close()
        proc.restart()
        client = proc.client(protocol=3)
        assert sorted(client.keys("*")) == before
        client.close()
    finally:
        proc.cleanup()


def test_random_eviction_can_empty_most_of_the_cache_in_one_pass() -> None:
    rig = Rig("allkeys-random", 10**9)
    rig.guard.budget_s = 60.0  # one pass, however slow a loaded machine is (the property
    # tested is that random picking finds every key, not the pass's time budget)
    for i in range(300):
        rig.run("SET", f"k{i:03d}", "x" * 100)
    target = BASE + 5 * entry(b"k000", 100)
    assert rig.run("CONFIG", "SET", "maxmemory", str(target)) == "OK"
    assert 1 <= len(rig.kv) <= 5
    assert rig.core.used_memory() <= target
    assert rig.core.stats.evicted_keys == 300 - len(rig.kv)
