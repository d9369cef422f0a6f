"""KeyValueStore (the string cache) as a data structure: effects, lazy and active expiry, SCAN."""

from __future__ import annotations

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hotkv_server.stores.base import EffectError
from hotkv_server.stores.database import default_database
from hotkv_server.stores.keyspace import KeyValueStore

T0 = 1_700_000_000_000


def full_scan(store: KeyValueStore, now: int, count: int = 3) -> list[bytes]:
    out: list[bytes] = []
    cursor = 0
    while True:
        cursor, found = store.scan(cursor, count, now)
        out.extend(found)
        if cursor == 0:
            return out


def test_set_get_overwrite_and_missing() -> None:
    store = KeyValueStore()
    assert store.apply(["kv.set", b"a", b"1", None]) is None
    store.apply(["kv.set", b"a", b"2", None])
    assert store.get(b"a", T0) == b"2"
    assert store.get(b"b", T0) is None
    assert store.exists(b"a", T0) and not store.exists(b"b", T0)
    assert len(store) == 1
    assert store.ttl_ms(b"a", T0) == -1
    assert store.ttl_ms(b"b", T0) == -2


def test_empty_value_is_a_value() -> None:
    store = KeyValueStore()
    store.apply(["kv.set", b"", b"", None])
    assert store.get(b"", T0) == b""
    assert store.exists(b"", T0)


def test_lazy_expiry_on_read_counts_and_removes() -> None:
    store = KeyValueStore()
    store.apply(["kv.set", b"k", b"v", T0 + 100])
    assert store.get(b"k", T0 + 99) == b"v"
    assert store.ttl_ms(b"k", T0 + 40) == 60
    assert store.expiry(b"k") == T0 + 100
    assert store.expired_count == 0
    # the deadline itself is already past
    assert store.get(b"k", T0 + 100) is None
    assert store.expired_count == 1
    assert len(store) == 0 and store.expiring() == 0


def test_dbsize_counts_expired_until_removed_like_redis() -> None:
    store = KeyValueStore()
    store.apply(["kv.set", b"k", b"v", T0 + 10])
    assert len(store) == 1  # nothing has looked at it yet
    assert store.ids(T0 + 10) == []
    assert len(store) == 0
    assert store.expired_count == 1


def test_set_without_deadline_drops_the_old_one() -> None:
    store = KeyValueStore()
    store.apply(["kv.set", b"k", b"v", T0 + 10])
    store.apply(["kv.set", b"k", b"w", None])
    assert store.ttl_ms(b"k", T0 + 1_000) == -1
    assert store.purge_expired(T0 + 1_000, 100) == 0
    assert store.get(b"k", T0 + 1_000) == b"w"


def test_mset_sets_many_and_clears_deadlines() -> None:
    store = KeyValueStore()
    store.apply(["kv.set", b"a", b"0", T0 + 10])
    store.apply(["kv.mset", [b"a", b"1", b"b", b"2", b"a", b"3"]])
    assert store.get(b"a", T0 + 100) == b"3"
    assert store.get(b"b", T0 + 100) == b"2"
    assert store.expiring() == 0
    with pytest.raises(EffectError):
        store.apply(["kv.mset", [b"a"]])


def test_del_returns_how_many_existed() -> None:
    store = KeyValueStore()
    store.apply(["kv.mset", [b"a", b"1", b"b", b"2"]])
    store.apply(["kv.expire", b"b", T0 + 5])
    assert store.apply(["kv.del", [b"a", b"b", b"c"]]) == 2
    assert len(store) == 0 and store.expiring() == 0


def test_expire_and_persist() -> None:
    store = KeyValueStore()
    assert store.apply(["kv.expire", b"nope", T0]) == 0
    store.apply(["kv.set", b"k", b"v", None])
    assert store.apply(["kv.expire", b"k", T0 + 50]) == 1
    assert store.ttl_ms(b"k", T0) == 50
    assert store.apply(["kv.persist", b"k"]) == 1
    assert store.apply(["kv.persist", b"k"]) == 0
    assert store.ttl_ms(b"k", T0 + 10_000) == -1
    # a deadline already passed makes the key expired at once, whatever the clock says
    store.apply(["kv.expire", b"k", T0 - 1])
    assert store.get(b"k", T0) is None


def test_unknown_effect_is_rejected() -> None:
    with pytest.raises(EffectError):
        KeyValueStore().apply(["kv.frobnicate", b"k"])


def test_active_expiry_in_deadline_order_with_limit() -> None:
    store = KeyValueStore()
    for i in range(10):
        store.apply(["kv.set", b"k%d" % i, b"v", T0 + 10 * (10 - i)])
    store.apply(["kv.set", b"forever", b"v", None])
    assert store.purge_expired(T0 + 5, 100) == 0
    # k9 (T0+10) k8 (T0+20) k7 (T0+30) are due; the limit stops at two
    assert store.purge_expired(T0 + 30, 2) == 2
    assert len(store) == 9
    assert store.ids(T0) == [b"k0", b"k1", b"k2", b"k3", b"k4", b"k5", b"k6", b"k7", b"forever"]
    assert store.purge_expired(T0 + 30, 100) == 1
    assert store.purge_expired(T0 + 1_000, 100) == 7
    assert store.ids(T0 + 1_000) == [b"forever"]
    assert store.expired_count == 10


def test_active_expiry_skips_stale_heap_entries() -> None:
    store = KeyValueStore()
    store.apply(["kv.set", b"moved", b"v", T0 + 10])
    store.apply(["kv.expire", b"moved", T0 + 1_000])  # the T0+10 entry is now stale
    store.apply(["kv.set", b"persisted", b"v", T0 + 10])
    store.apply(["kv.persist", b"persisted"])
    store.apply(["kv.set", b"deleted", b"v", T0 + 10])
    store.apply(["kv.del", [b"deleted"]])
    store.apply(["kv.set", b"deleted", b"again", None])
    assert store.purge_expired(T0 + 500, 100) == 0
    assert sorted(store.ids(T0 + 500)) == [b"deleted", b"moved", b"persisted"]
    assert store.purge_expired(T0 + 1_000, 100) == 1
    assert store.expired_count == 1


def test_heap_is_rebuilt_when_stale_entries_dominate() -> None:
    store = KeyValueStore()
    for i in range(20_000):
        store.apply(["kv.set", b"same", b"v", T0 + 1_000_000 - i])  # earlier every time
    assert len(store._heap) < 5_000  # stale entries were dropped on the way
    assert store.purge_expired(T0 + 1_000_000 - 19_999, 10) == 1
    assert len(store) == 0


def test_scan_returns_every_key_once_when_nothing_changes() -> None:
    store = KeyValueStore()
    keys = [b"key:%d" % i for i in range(500)]
    store.apply(["kv.mset", [x for k in keys for x in (k, b"v")]])
    for count in (1, 7, 10, 1000):
        seen = full_scan(store, T0, count)
        assert sorted(seen) == sorted(keys)
        assert len(seen) == len(keys)


def test_scan_guarantee_under_writes() -> None:
    """Every key present from start to end of a walk is returned, whatever happens in between."""
    store = KeyValueStore()
    stable = [b"stable:%d" % i for i in range(300)]
    store.apply(["kv.mset", [x for k in stable for x in (k, b"v")]])
    store.apply(["kv.mset", [x for i in range(300) for x in (b"doomed:%d" % i, b"v")]])
    seen: list[bytes] = []
    cursor, found = store.scan(0, 10, T0)
    seen.extend(found)
    step = 0
    while cursor:
        # interleave: delete some, create many, and start another walk that finishes
        store.apply(["kv.del", [b"doomed:%d" % step]])
        store.apply(["kv.set", b"new:%d" % step, b"v", None])
        full_scan(store, T0, 1000)
        cursor, found = store.scan(cursor, 10, T0)
        seen.extend(found)
        step += 1
    assert set(stable) <= set(seen)
    assert len(seen) == len(set(seen))  # hash order: a rebuilt list never repeats a key


def test_scan_skips_expired_and_handles_empty_store() -> None:
    store = KeyValueStore()
    assert store.scan(0, 10, T0) == (0, [])
    store.apply(["kv.set", b"a", b"v", T0 + 5])
    store.apply(["kv.set", b"b", b"v", None])
    assert full_scan(store, T0 + 5) == [b"b"]
    # an unknown cursor (from another process) is still a valid place to resume
    cursor, _ = store.scan(12345, 10, T0)
    assert cursor == 0


def test_key_at_walks_the_dict_order() -> None:
    store = KeyValueStore()
    store.apply(["kv.mset", [b"a", b"1", b"b", b"2"]])
    assert [store.key_at(0), store.key_at(1), store.key_at(2), store.key_at(-1)] == [
        b"a", b"b", None, None]


def test_snapshot_restore_roundtrip_through_msgpack() -> None:
    store = KeyValueStore()
    store.apply(["kv.set", b"a", b"1", None])
    store.apply(["kv.set", b"b", b"\x00\xff", T0 + 100])
    state = msgpack.unpackb(msgpack.packb(store.snapshot(), use_bin_type=True), raw=False)
    copy = KeyValueStore()
    copy.apply(["kv.set", b"old", b"x", None])
    copy.restore(state)
    assert copy.ids(T0) == [b"a", b"b"]
    assert copy.get(b"b", T0) == b"\x00\xff"
    assert copy.ttl_ms(b"b", T0) == 100
    assert copy.purge_expired(T0 + 100, 10) == 1  # the heap came back too
    with pytest.raises(EffectError):
        copy.restore([b"a", b"1"])


def test_clear_forgets_everything_but_keeps_counters() -> None:
    store = KeyValueStore()
    store.apply(["kv.set", b"a", b"1", T0])
    store.get(b"a", T0)
    store.apply(["kv.set", b"b", b"1", T0 + 5])
    store.clear()
    assert len(store) == 0 and store.expiring() == 0
    assert store.purge_expired(T0 + 10, 10) == 0
    assert store.stats(T0) == {"objects": 0, "entries": 0, "expires": 0, "expired": 1}


def test_database_routes_kv_effects() -> None:
    db = default_database()
    db.apply(["kv.set", b"k", b"v", None])
    assert db.kv.get(b"k", T0) == b"v"
    assert db.apply(["kv.del", [b"k"]]) == 1


# --- against a reference model ---------------------------------------------------------
KEYS = st.sampled_from([b"a", b"b", b"c", b"d"])
TIMES = st.integers(0, 50)
OPS = st.one_of(
    st.tuples(st.just("set"), KEYS, st.binary(max_size=3), st.one_of(st.none(), TIMES)),
    st.tuples(st.just("mset"), st.lists(st.tuples(KEYS, st.binary(max_size=3)), min_size=1, max_size=3)),
    st.tuples(st.just("del"), st.lists(KEYS, max_size=3)),
    st.tuples(st.just("expire"), KEYS, TIMES),
    st.tuples(st.just("persist"), KEYS),
    st.tuples(st.just("get"), KEYS),
    st.tuples(st.just("tick"), st.integers(0, 10), st.integers(1, 3)),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(OPS, max_size=40))
def test_matches_a_reference_model(ops: list[tuple]) -> None:  # type: ignore[type-arg]
    store = KeyValueStore()
    model: dict[bytes, tuple[bytes, int | None]] = {}
    now = 0

    def live() -> dict[bytes, tuple[bytes, int | None]]:
        return {k: (v, at) for k, (v, at) in model.items() if at is None or at > now}

    for op in ops:
        kind = op[0]
        if kind == "set":
            _, key, value, at = op
            store.apply(["kv.set", key, value, at])
            model[key] = (value, at)
        elif kind == "mset":
            flat = [x for pair in op[1] for x in pair]
            store.apply(["kv.mset", flat])
            for key, value in op[1]:
                model[key] = (value, None)
        elif kind == "del":
            removed = store.apply(["kv.del", op[1]])
            assert removed == len({k for k in op[1] if k in model})
            for key in op[1]:
                model.pop(key, None)
        elif kind == "expire":
            _, key, at = op
            assert store.apply(["kv.expire", key, at]) == (1 if key in model else 0)
            if key in model:
                model[key] = (model[key][0], at)
        elif kind == "persist":
            key = op[1]
            had = key in model and model[key][1] is not None
            assert store.apply(["kv.persist", key]) == (1 if had else 0)
            if key in model:
                model[key] = (model[key][0], None)
        elif kind == "get":
            expected = live().get(op[1])
            assert store.get(op[1], now) == (expected[0] if expected else None)
            if expected is None:
                model.pop(op[1], None)
        else:
            now += op[1]
            store.purge_expired(now, op[2])
        # whatever was purged or not, reads agree with the model, and nothing live is lost
        alive = live()
        assert sorted(full_scan(store, now)) == sorted(alive)
        model = alive
        assert sorted(store.ids(now)) == sorted(alive)
        for key, (_, at) in alive.items():
            assert store.ttl_ms(key, now) == (-1 if at is None else at - now)
