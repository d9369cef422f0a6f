"""The keyspace holding typed values (stores/values.py protocol): one key space for every
type, WRONGTYPE, put/rename/copy effects, byte accounting, snapshot and restore."""

from __future__ import annotations

import msgpack
import pytest

from hotkv_server.engine.errors import WrongTypeError
from hotkv_server.stores.base import EffectError
from hotkv_server.stores.hashes import HashValue
from hotkv_server.stores.keyspace import ENTRY_OVERHEAD, KeyValueStore
from hotkv_server.stores.sets import SetValue
from hotkv_server.stores.values import VALUE_TYPES, TypedValue, string_encoding

T0 = 1_700_000_000_000


def recount(store: KeyValueStore) -> int:
    """estimated_bytes computed from scratch, to hold the running sum against."""
    twin = KeyValueStore()
    twin.restore(msgpack.unpackb(msgpack.packb(store.snapshot(), use_bin_type=True), raw=False))
    return twin.estimated_bytes()


def test_every_type_is_registered_and_follows_the_protocol() -> None:
    assert {"hash", "set"} <= set(VALUE_TYPES)
    for name, cls in VALUE_TYPES.items():
        assert issubclass(cls, TypedValue) and cls.type_name == name
        for record in cls.effects:
            assert record.op.startswith("kv.") and record.field_names[0] == "key", record


def test_types_share_one_keyspace_and_answer_wrongtype() -> None:
    store = KeyValueStore()
    store.apply(["kv.put", b"h", "hash", [b"f", b"v"], None])
    store.apply(["kv.put", b"s", "set", [b"a", b"b"], None])
    store.apply(["kv.set", b"str", b"x", None])
    assert [store.type_name(k, T0) for k in (b"h", b"s", b"str", b"no")] == ["hash", "set", "string", "none"]
    with pytest.raises(WrongTypeError) as info:
        store.get(b"h", T0)
    assert info.value.message == "WRONGTYPE Operation against a key holding the wrong kind of value"
    with pytest.raises(WrongTypeError):
        store.typed(b"s", T0, HashValue)
    with pytest.raises(WrongTypeError):
        store.typed(b"str", T0, SetValue)
    assert store.typed(b"no", T0, SetValue) is None
    assert sorted(store.ids(T0)) == [b"h", b"s", b"str"]
    assert len(store) == 3


def test_scan_by_type_sees_every_key_once() -> None:
    store = KeyValueStore()
    for i in range(50):
        store.apply(["kv.put", b"h%d" % i, "hash", [b"f", b"v"], None])
        store.apply(["kv.put", b"s%d" % i, "set", [b"m"], None])
        store.apply(["kv.set", b"k%d" % i, b"v", None])
    for type_name, prefix in (("hash", b"h"), ("set", b"s"), ("string", b"k")):
        seen: list[bytes] = []
        cursor = 0
        while True:
            cursor, found = store.scan(cursor, 7, T0, type_name)
            seen.extend(found)
            if cursor == 0:
                break
        assert sorted(seen) == sorted(prefix + b"%d" % i for i in range(50))
    assert store.scan(0, 1000, T0, "nosuchtype") == (0, [])


def test_typed_ops_change_in_place_and_an_emptied_value_leaves() -> None:
    store = KeyValueStore()
    assert store.apply(["kv.hset", b"h", [b"f", b"v"]]) == 0  # a missing key: no-op
    assert not store.exists(b"h", T0)
    store.apply(["kv.put", b"h", "hash", [b"a", b"1"], T0 + 1000])
    assert store.apply(["kv.hset", b"h", [b"a", b"2", b"b", b"3"]]) == 1
    value = store.typed(b"h", T0, HashValue)
    assert value is not None and value.to_dict() == {b"a": b"2", b"b": b"3"}
    assert store.expiry(b"h") == T0 + 1000  # a field write keeps the key's deadline
    assert store.apply(["kv.hdel", b"h", [b"a", b"zz"]]) == 1
    assert store.apply(["kv.hdel", b"h", [b"b"]]) == 1
    assert not store.exists(b"h", T0) and store.expiring() == 0
    store.apply(["kv.set", b"str", b"x", None])
    with pytest.raises(EffectError):
        store.apply(["kv.sadd", b"str", [b"m"]])


def test_put_replaces_a_stale_value_of_any_type() -> None:
    store = KeyValueStore()
    store.apply(["kv.put", b"k", "set", [b"old"], T0 + 10])
    # the primary saw k expired and wrote a new hash there: a copy that has not purged
    # the set yet ends with exactly the new hash, without the old deadline
    store.apply(["kv.put", b"k", "hash", [b"f", b"v"], None])
    assert store.type_name(b"k", T0 + 100) == "hash" and store.expiry(b"k") is None
    assert store.estimated_bytes() == recount(store)


def test_rename_and_copy_move_value_and_deadline() -> None:
    store = KeyValueStore()
    store.apply(["kv.put", b"src", "set", [b"1", b"2"], T0 + 500])
    store.apply(["kv.set", b"dst", b"old", None])
    store.apply(["kv.rename", b"src", b"dst"])
    assert not store.exists(b"src", T0)
    dst = store.typed(b"dst", T0, SetValue)
    assert dst is not None and sorted(dst.members) == [b"1", b"2"] and store.expiry(b"dst") == T0 + 500
    store.apply(["kv.copy", b"dst", b"twin"])
    store.apply(["kv.sadd", b"twin", [b"3"]])
    assert len(store.typed(b"dst", T0, SetValue) or []) == 2  # the copy is independent
    assert store.expiry(b"twin") == T0 + 500
    # a source this copy already purged: the destination goes too (it would have expired)
    store.apply(["kv.set", b"other", b"v", None])
    store.apply(["kv.rename", b"gone", b"other"])
    assert not store.exists(b"other", T0)
    store.apply(["kv.set", b"other", b"v", None])
    store.apply(["kv.copy", b"gone", b"other"])
    assert not store.exists(b"other", T0)
    assert store.estimated_bytes() == recount(store)


def test_byte_accounting_follows_every_change() -> None:
    store = KeyValueStore()
    assert store.estimated_bytes() == 0
    store.apply(["kv.put", b"h", "hash", [b"f" * 10, b"v" * 20], None])
    one = store.estimated_bytes()
    assert one > 30 + ENTRY_OVERHEAD
    assert store.entry_bytes(b"h") == one
    store.apply(["kv.hset", b"h", [b"g", b"x" * 1000]])
    assert store.estimated_bytes() > one + 1000
    assert store.estimated_bytes() == recount(store)
    store.apply(["kv.set", b"h", b"plain", None])  # SET over a hash
    assert store.estimated_bytes() == len(b"h") + len(b"plain") + ENTRY_OVERHEAD
    store.apply(["kv.put", b"s", "set", [b"%d" % i for i in range(100)], None])
    store.apply(["kv.srem", b"s", [b"%d" % i for i in range(50)]])
    assert store.estimated_bytes() == recount(store)
    store.apply(["kv.del", [b"s", b"h"]])
    assert store.estimated_bytes() == 0


def test_lazy_and_active_expiry_remove_typed_values() -> None:
    store = KeyValueStore()
    store.apply(["kv.put", b"h", "hash", [b"f", b"v"], T0 + 10])
    store.apply(["kv.put", b"s", "set", [b"m"], T0 + 10])
    assert store.typed(b"h", T0 + 10, HashValue) is None
    assert store.purge_expired(T0 + 10, 100) == 1
    assert len(store) == 0 and store.estimated_bytes() == 0 and store.expired_count == 2


def test_snapshot_round_trip_through_msgpack_keeps_types_and_deadlines() -> None:
    store = KeyValueStore()
    store.apply(["kv.set", b"str", b"v", T0 + 5])
    store.apply(["kv.put", b"h", "hash", [b"a", b"1", b"b", b"2"], None])
    store.apply(["kv.put", b"s", "set", [b"x", b"y"], T0 + 9])
    data = msgpack.unpackb(msgpack.packb(store.snapshot(), use_bin_type=True), raw=False)
    twin = KeyValueStore()
    twin.restore(data)
    assert twin.get(b"str", T0) == b"v" and twin.expiry(b"str") == T0 + 5
    h = twin.typed(b"h", T0, HashValue)
    assert h is not None and h.to_dict() == {b"a": b"1", b"b": b"2"}
    s = twin.typed(b"s", T0, SetValue)
    assert s is not None and set(s.members) == {b"x", b"y"} and twin.expiry(b"s") == T0 + 9
    assert twin.estimated_bytes() == store.estimated_bytes()
    with pytest.raises(EffectError):
        twin.restore([b"k", ["nosuchtype", []], None])


def test_encodings_follow_redis_thresholds() -> None:
    assert [string_encoding(v) for v in (b"123", b"-5", b"0", b"007", b"-0", b"x" * 44, b"x" * 45,
                                         b"9223372036854775808")] == [
        "int", "int", "int", "embstr", "embstr", "embstr", "raw", "embstr"]
    store = KeyValueStore()
    store.apply(["kv.put", b"h", "hash", [b"f", b"v"], None])
    assert store.encoding(b"h", T0) == "listpack"
    store.apply(["kv.hset", b"h", [b"big", b"v" * 65]])
    assert store.encoding(b"h", T0) == "hashtable"
    store.apply(["kv.hdel", b"h", [b"big"]])
    assert store.encoding(b"h", T0) == "hashtable"  # never back, as in Redis
    store.apply(["kv.put", b"s", "set", [b"1", b"2"], None])
    assert store.encoding(b"s", T0) == "intset"
    store.apply(["kv.sadd", b"s", [b"a"]])
    assert store.encoding(b"s", T0) == "hashtable"
    store.apply(["kv.put", b"n", "set", [b"%d" % i for i in range(513)], None])
    assert store.encoding(b"n", T0) == "hashtable"
    assert store.encoding(b"missing", T0) is None
