"""HashValue and SetValue as plain data structures, against Python's dict and set as models:
effects, byte counts, encodings, SCAN walks, copies and snapshots. The packed (listpack)
form of a hash is tested also on its own: its escapes, lookups that must not match across
entries, and the conversion to a dict at the limits."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from unittest.mock import patch

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hotkv_server.stores import hashes
from hotkv_server.stores.hashes import (
    FIELD_OVERHEAD,
    HASH_OVERHEAD,
    LISTPACK_ENTRIES,
    LISTPACK_VALUE,
    PACKED_OVERHEAD,
    HashValue,
    escape,
    pack,
    unescape,
    unpack,
)
from hotkv_server.stores.sets import MEMBER_OVERHEAD, SET_OVERHEAD, SetValue

#: bytes heavy in the packed form's markers (0x00 0x01 0x02) and the escape codes after them
marked = st.lists(st.sampled_from([0, 1, 2, 3, 4, 5, 97]), max_size=6).map(bytes)
names = st.one_of(st.binary(min_size=0, max_size=6), marked)
hash_ops = st.lists(st.tuples(st.sampled_from(["set", "del"]), st.lists(names, min_size=1, max_size=4),
                              st.one_of(st.binary(max_size=8), marked)), max_size=40)
set_ops = st.lists(st.tuples(st.sampled_from(["add", "rem"]), st.lists(names, min_size=1, max_size=4)),
                   max_size=40)


@contextmanager
def limits(entries: int, value: int, packed_bytes: int = hashes.PACKED_BYTES) -> Iterator[None]:
    """hash-max-listpack-entries/-value (and the packed form's bytes) for the block."""
    saved = hashes.LISTPACK_ENTRIES, hashes.LISTPACK_VALUE
    try:
        with patch.object(hashes, "PACKED_BYTES", packed_bytes):
            hashes.set_listpack_limits(entries, value)
            yield
    finally:
        hashes.set_listpack_limits(*saved)


def hash_bytes(model: dict[bytes, bytes], packed: bool = False) -> int:
    if packed:
        return PACKED_OVERHEAD + len(pack([x for item in model.items() for x in item]))
    return HASH_OVERHEAD + sum(len(f) + len(v) + FIELD_OVERHEAD for f, v in model.items())


def set_bytes(model: set[bytes]) -> int:
    return SET_OVERHEAD + sum(len(m) + MEMBER_OVERHEAD for m in model)


def full_scan(value: HashValue | SetValue, count: int) -> list[bytes]:
    out: list[bytes] = []
    cursor = 0
    while True:
        cursor, found = value.scan(cursor, count)
        out.extend(found)
        if cursor == 0:
            return out


@settings(max_examples=200, deadline=None)
@given(hash_ops)
def test_hash_follows_a_dict(ops: list[tuple[str, list[bytes], bytes]]) -> None:
    value = HashValue()
    model: dict[bytes, bytes] = {}
    for op, fields, payload in ops:
        if op == "set":
            pairs = [x for f in fields for x in (f, payload)]
            expected_new = len({f for f in fields if f not in model})
            assert value.set_fields(pairs) == expected_new
            model.update(dict.fromkeys(fields, payload))
        else:
            expected_gone = len({f for f in fields if f in model})
            assert value.delete_fields(fields) == expected_gone
            for f in fields:
                model.pop(f, None)
        assert_same(value, model)
    twin = HashValue.restore(value.snapshot())
    assert_same(twin, model)
    copy = value.copy()
    copy.set_fields([b"new-field", b"x"])
    assert_same(value, model)  # the copy is independent
    assert copy.get(b"new-field") == b"x" and len(copy) == len(model) + 1


def assert_same(value: HashValue, model: dict[bytes, bytes]) -> None:
    """Every read of ``value`` agrees with the dict ``model``, its order included."""
    assert list(value.to_dict().items()) == list(model.items())
    assert value.flat() == [x for item in model.items() for x in item]
    assert value.names() == list(model) and value.values() == list(model.values())
    assert len(value) == len(model)
    for field, val in model.items():
        assert value.get(field) == val and field in value
    assert value.nbytes == hash_bytes(model, value.packed)
    if model:
        assert value.field_at(len(model) - 1) == list(model)[-1]


@settings(max_examples=200, deadline=None)
@given(hash_ops, st.integers(min_value=1, max_value=6), st.integers(min_value=1, max_value=6))
def test_hash_follows_a_dict_across_the_conversion(ops: list[tuple[str, list[bytes], bytes]],
                                                   entries: int, size: int) -> None:
    """With limits small enough to be passed, the hash converts at the first write past
    one, keeps its order and contents, and stays a dict; a restore decides again."""
    with limits(entries, size, 8 * entries):
        value = HashValue()
        model: dict[bytes, bytes] = {}
        big = False
        for op, fields, payload in ops:
            if op == "set":
                pairs = [x for f in fields for x in (f, payload)]
                value.set_fields(pairs)
                model.update(dict.fromkeys(fields, payload))
                big = big or len(model) > entries or any(len(x) > size for x in pairs)
            else:
                value.delete_fields(fields)
                for f in fields:
                    model.pop(f, None)
            assert value.encoding() == ("hashtable" if big else "listpack")
            assert not (big and value.packed)
            assert_same(value, model)
        fits = len(model) <= entries and all(len(x) <= size for item in model.items() for x in item)
        assert HashValue.restore(value.snapshot()).encoding() == ("listpack" if fits else "hashtable")
        assert value.copy().encoding() == value.encoding()  # COPY keeps it, as Redis's hashTypeDup


@given(st.lists(st.one_of(st.binary(max_size=8), marked), max_size=12))
def test_the_packed_form_round_trips_any_bytes(items: list[bytes]) -> None:
    pairs = [x for item in dict.fromkeys(items).items() for x in (item[0], b"v")]
    packed = pack(pairs)
    assert unpack(packed) == pairs
    for item in items:
        assert unescape(escape(item)) == item
        assert 0 not in escape(item) and 1 not in escape(item)
    # the two markers occur only where the form puts them
    assert packed.count(0) == len(pairs) // 2 + 1 and packed.count(1) == len(pairs) // 2


def test_a_lookup_matches_one_entry_never_a_span_or_an_escape() -> None:
    h = HashValue.restore([b"a", b"b", b"c", b"d", b"x\x00", b"1", b"\x02", b"2", b"", b"3"])
    assert h.encoding() == "listpack"
    # would span field a, value b and field c in an unescaped probe
    assert h.get(b"a\x01b\x00c") is None and b"a\x01b\x00c" not in h
    # is how x\x00 is written inside the buffer
    assert h.get(b"x\x02\x03") is None
    assert h.packed and h.get(b"x\x00") == b"1" and h.get(b"\x02") == b"2" and h.get(b"") == b"3"
    assert h.get(b"b") is None  # a value is not a field
    assert h.delete_fields([b"a\x01b\x00c", b"b", b"x\x00"]) == 1
    assert h.flat() == [b"a", b"b", b"c", b"d", b"\x02", b"2", b"", b"3"]


def test_the_limits_are_redis_7s_and_the_order_survives_the_conversion() -> None:
    pairs = [x for i in range(LISTPACK_ENTRIES) for x in (b"f%03d" % i, b"v")]
    h = HashValue.restore(pairs)
    assert h.encoding() == "listpack" and len(h) == 512 and not h.packed
    h.set_fields([b"f000", b"w"])  # an existing field: still 512, and keeps its place
    assert h.encoding() == "listpack" and h.field_at(0) == b"f000"
    h.set_fields([b"new", b"v"])
    assert h.encoding() == "hashtable" and len(h) == 513
    assert h.names() == [b"f%03d" % i for i in range(512)] + [b"new"] and h.get(b"f000") == b"w"
    assert h.nbytes == hash_bytes(h.to_dict())
    for field, value, encoding in [(b"f" * 64, b"v" * 64, "listpack"), (b"f" * 65, b"v", "hashtable"),
                                   (b"f", b"v" * 65, "hashtable")]:
        one = HashValue.restore([b"a", b"1"])
        one.set_fields([field, value])
        assert one.encoding() == encoding and one.get(field) == value and one.get(b"a") == b"1"
        assert HashValue.restore([field, value]).encoding() == encoding
    several = HashValue.restore([b"a", b"1"])
    assert several.set_fields([b"b", b"2", b"c", b"v" * 65, b"a", b"3"]) == 2
    assert several.encoding() == "hashtable"
    assert several.flat() == [b"a", b"3", b"b", b"2", b"c", b"v" * 65]
    assert LISTPACK_VALUE == 64


def test_past_packed_bytes_a_hash_is_a_dict_but_still_a_listpack_until_redis_limits() -> None:
    value = b"v" * 64
    h = HashValue()
    i = 0
    while h.packed:
        assert h.set_fields([b"f%02d" % i, value]) == 1
        i += 1
    assert 1 + 69 * (i - 1) <= hashes.PACKED_BYTES < 1 + 69 * i  # the field that passed 1 KB
    assert h.encoding() == "listpack" and h.scan(0, 1) == (0, h.names())
    assert h.nbytes == hash_bytes(h.to_dict())
    assert h.names() == [b"f%02d" % j for j in range(i)]
    # a dict form within Redis's limits packs again on a restore only if it fits
    assert not HashValue.restore(h.snapshot()).packed
    h.delete_fields([b"f%02d" % j for j in range(1, i)])
    assert not h.packed and HashValue.restore(h.snapshot()).packed
    h.set_fields([b"long", b"x" * 65])  # now past Redis's limits: hashtable for good
    assert h.encoding() == "hashtable" and h.copy().encoding() == "hashtable"
    h.delete_fields([b"long"])
    assert h.encoding() == "hashtable"
    # a value grown in place past 1 KB converts too
    g = HashValue.restore([x for j in range(40) for x in (b"f%02d" % j, b"v" * 20)])
    assert g.packed
    g.set_fields([b"f00", b"w" * 64])  # 1,001 B + 44
    assert not g.packed and g.encoding() == "listpack" and g.field_at(0) == b"f00"


def test_lowered_limits_act_at_the_next_write_and_never_undo_a_hashtable() -> None:
    h = HashValue.restore([b"a", b"1", b"b", b"x" * 20, b"c", b"3"])
    with limits(2, 10):
        assert h.encoding() == "listpack"  # nothing converts until a write
        h.set_fields([b"a", b"one"])  # an update: 3 fields > 2, as Redis checks after a write
        assert h.encoding() == "hashtable" and h.flat() == [b"a", b"one", b"b", b"x" * 20, b"c", b"3"]
    assert h.encoding() == "hashtable"  # raised again: stays
    g = HashValue.restore([b"a", b"x" * 20])
    with limits(512, 10):
        g.set_fields([b"b", b"short"])  # the old long value is not checked again, as in Redis
        assert g.encoding() == "listpack" and g.packed
        g.set_fields([b"c", b"y" * 11])
        assert g.encoding() == "hashtable"
        assert HashValue.restore([b"a", b"x" * 20]).encoding() == "hashtable"  # a restore decides
    with limits(0, 64):
        assert HashValue.restore([b"a", b"1"]).encoding() == "hashtable"
        empty = HashValue()
        empty.set_fields([b"a", b"1"])
        assert empty.encoding() == "hashtable"
    with limits(512, 64, 30):  # past the packed bytes only: a dict, still a listpack
        k = HashValue.restore([b"a", b"x" * 20])
        k.set_fields([b"b", b"y" * 20])
        assert not k.packed and k.encoding() == "listpack"


def test_a_packed_hash_costs_its_bytes_plus_two_per_field() -> None:
    h = HashValue.restore([x for i in range(10) for x in (b"field:%02d" % i, b"v" * 32)])
    assert h.nbytes == PACKED_OVERHEAD + 1 + 10 * (8 + 32 + 2)
    assert h.nbytes < HASH_OVERHEAD + 10 * (40 + FIELD_OVERHEAD)


def test_an_odd_number_of_items_is_refused_before_any_change() -> None:
    h = HashValue.restore([b"a", b"1"])
    with pytest.raises(hashes.EffectError):
        h.set_fields([b"b", b"2", b"c"])
    assert h.flat() == [b"a", b"1"]


@settings(max_examples=200, deadline=None)
@given(set_ops)
def test_set_follows_a_set(ops: list[tuple[str, list[bytes]]]) -> None:
    value = SetValue()
    model: set[bytes] = set()
    for op, members in ops:
        if op == "add":
            assert value.add(members) == len(set(members) - model)
            model.update(members)
        else:
            assert value.remove(members) == len(set(members) & model)
            model.difference_update(members)
        assert set(value.members) == model and len(value.members) == len(model)
        # the position index stays exact after swap-removals
        assert all(value.members[pos] == m for m, pos in value.index.items())
        assert value.nbytes == set_bytes(model)
    twin = SetValue.restore(value.snapshot())
    assert set(twin.members) == model and twin.nbytes == value.nbytes
    copy = value.copy()
    copy.add([b"only-in-copy"])
    assert b"only-in-copy" not in value


def test_small_values_scan_in_one_step_big_ones_walk_every_element_once() -> None:
    small = HashValue.restore([b"a", b"1", b"b", b"2"])
    assert small.scan(0, 1) == (0, [b"a", b"b"])
    big = HashValue.restore([x for i in range(2000) for x in (b"f%d" % i, b"v")])
    assert big.encoding() == "hashtable"
    walked = full_scan(big, 13)
    assert sorted(walked) == sorted(big.names()) and len(walked) == 2000
    ints = SetValue.restore([b"%d" % i for i in range(100)])
    assert ints.encoding() == "intset" and ints.scan(0, 5)[0] == 0
    words = SetValue.restore([b"w%d" % i for i in range(1000)])
    assert words.encoding() == "hashtable"
    assert sorted(full_scan(words, 7)) == sorted(words.members)


def test_a_scan_survives_writes_between_steps() -> None:
    big = SetValue.restore([b"w%d" % i for i in range(1000)])
    seen: list[bytes] = []
    cursor, found = big.scan(0, 50)
    seen.extend(found)
    big.remove([b"w%d" % i for i in range(0, 1000, 3)])  # removed: may or may not be seen
    big.add([b"new%d" % i for i in range(100)])  # added during the walk: may be missed
    while cursor:
        cursor, found = big.scan(cursor, 50)
        seen.extend(found)
    kept = {b"w%d" % i for i in range(1000) if i % 3}
    assert kept <= set(seen)  # every element present for the whole walk is returned
    assert len(seen) == len(set(seen))


def test_encodings_are_sticky_until_restore() -> None:
    h = HashValue.restore([b"f", b"v" * 65])
    assert h.encoding() == "hashtable"
    h.delete_fields([b"f"])
    h.set_fields([b"g", b"v"])
    assert h.encoding() == "hashtable"
    assert HashValue.restore(h.snapshot()).encoding() == "listpack"
    s = SetValue.restore([b"1", b"x"])
    s.remove([b"x"])
    assert s.encoding() == "hashtable"
    assert SetValue.restore(s.snapshot()).encoding() == "intset"
    assert SetValue.restore([b"-0"]).encoding() == "hashtable"
    assert SetValue.restore([b"-9223372036854775808"]).encoding() == "intset"
    assert SetValue.restore([b"9223372036854775808"]).encoding() == "hashtable"
