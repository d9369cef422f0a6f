"""HashValue and SetValue as plain data structures, against Python's dict and set as models:
effects, byte counts, encodings, SCAN walks, copies and snapshots."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from hotkv_server.stores.hashes import FIELD_OVERHEAD, HASH_OVERHEAD, HashValue
from hotkv_server.stores.sets import MEMBER_OVERHEAD, SET_OVERHEAD, SetValue

names = st.binary(min_size=0, max_size=6)
hash_ops = st.lists(st.tuples(st.sampled_from(["set", "del"]), st.lists(names, min_size=1, max_size=4),
                              st.binary(max_size=8)), max_size=40)
set_ops = st.lists(st.tuples(st.sampled_from(["add", "rem"]), st.lists(names, min_size=1, max_size=4)),
                   max_size=40)


def hash_bytes(model: dict[bytes, bytes]) -> int:
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
        assert value.fields == model
        assert value.nbytes == hash_bytes(model)
    assert len(value) == len(model)
    twin = HashValue.restore(value.snapshot())
    assert twin.fields == model and twin.nbytes == value.nbytes
    copy = value.copy()
    copy.set_fields([b"new-field", b"x"])
    assert value.fields == model  # the copy is independent


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
    assert sorted(walked) == sorted(big.fields) and len(walked) == 2000
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
