"""Scratchpad (one session's notes, packed up to 1 KB, then a dict) against a dict model."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from hotkv_server.stores.hashes import PACKED_BYTES
from hotkv_server.stores.work import WorkingStore
from hotkv_server.stores.workpad import Scratchpad

T0 = 1_700_000_000_000

# the separators and the escape byte are the interesting ones
_BYTES = st.sampled_from([b"\x00", b"\x01", b"\x02", b"\x03", b"\x05", b"a", b"b", b"\xff"])
KEYS = st.lists(_BYTES, min_size=1, max_size=4).map(b"".join)
VALUES = st.one_of(st.lists(_BYTES, max_size=6).map(b"".join),
                   st.integers(0, 700).map(lambda n: b"v" * n))
OPS = st.lists(st.tuples(st.sampled_from(["set", "pop"]), KEYS, VALUES), max_size=40)


def _same(pad: Scratchpad, model: dict[bytes, bytes], probes: list[bytes]) -> None:
    assert pad.names() == list(model)
    assert pad.to_dict() == model
    assert list(pad.to_dict().items()) == list(model.items())  # same order
    assert list(pad.pairs()) == list(model.items())
    assert len(pad) == len(model)
    assert bool(pad) == bool(model)
    for key in probes:
        assert pad.get(key) == model.get(key)
        assert (key in pad) == (key in model)


@settings(max_examples=300, deadline=None)
@given(OPS)
def test_scratchpad_matches_a_dict(ops: list[tuple[str, bytes, bytes]]) -> None:
    pad = Scratchpad()
    model: dict[bytes, bytes] = {}
    probes = [key for _, key, _ in ops] + [b"\x00", b"a\x01", b"zz"]
    for op, key, value in ops:
        if op == "set":
            pad.set(key, value)
            model[key] = value
        else:
            assert pad.pop(key) == model.pop(key, None)
        _same(pad, model, probes)
        if pad.packed:
            assert pad.buffer_size() <= PACKED_BYTES
    row = [[k, v, None] for k, v in model.items()]
    _same(Scratchpad.loaded(None, row), model, probes)


def test_packed_until_1_kb_then_a_dict_in_the_same_order() -> None:
    pad = Scratchpad()
    for i in range(20):
        pad.set(b"note:%02d" % i, b"x" * 32)  # 2 + 7 + 32 = 41 B an entry
    assert pad.packed and pad.buffer_size() == 1 + 20 * 41
    pad.set(b"note:05", b"y" * 32)  # in place: the order stays
    for i in range(20, 25):
        pad.set(b"note:%02d" % i, b"x" * 32)
    assert not pad.packed  # 1 + 25 x 41 > 1024
    assert pad.names() == [b"note:%02d" % i for i in range(25)]
    assert pad.get(b"note:05") == b"y" * 32
    # a restore packs again what fits
    row = [[k, v, None] for k, v in pad.pairs()][:10]
    assert Scratchpad.loaded(None, row).packed


def test_deadlines_dict_exists_only_while_a_note_has_one() -> None:
    store = WorkingStore()
    store.apply(["work.set", b"s", b"a", b"1", None])
    pad = store.objects[b"s"]
    assert pad.deadlines is None
    store.apply(["work.set", b"s", b"b", b"2", T0 + 10])
    assert pad.deadlines == {b"b": T0 + 10}
    store.apply(["work.set", b"s", b"b", b"3", None])  # SET without a TTL drops it
    assert pad.deadlines is None
    store.apply(["work.set", b"s", b"c", b"4", T0 + 10])
    assert store.purge_expired(T0 + 10, 10) == 1
    assert pad.deadlines is None and pad.names() == [b"a", b"b"]


def test_big_values_and_binary_keys_through_the_store() -> None:
    store = WorkingStore()
    store.apply(["work.set", b"s", b"k\x00\x01\x02", b"\x02\x03\x00", None])
    store.apply(["work.set", b"s", b"big", b"z" * 5000, T0 + 100])
    store.apply(["work.set", b"s", b"after", b"1", None])
    assert not store.objects[b"s"].packed
    assert store.items(b"s", T0) == {b"k\x00\x01\x02": b"\x02\x03\x00", b"big": b"z" * 5000,
                                     b"after": b"1"}
    assert list(store.items(b"s", T0 + 100)) == [b"k\x00\x01\x02", b"after"]
    copy = WorkingStore()
    copy.restore(store.snapshot())
    assert store.snapshot() == copy.snapshot()
    assert copy.ttl(b"s", b"big", T0) == 100


def test_deadlines_set_while_packed_still_expire_after_the_move_to_a_dict() -> None:
    store = WorkingStore()
    for i in range(6):
        store.apply(["work.set", b"s", b"t%d" % i, b"v" * 40, T0 + 10 + i])
    store.apply(["work.set", b"s", b"big", b"z" * 2000, None])
    pad = store.objects[b"s"]
    assert not pad.packed
    assert store.ttl(b"s", b"t3", T0) == 13
    assert store.purge_expired(T0 + 12, 100) == 3
    assert pad.names() == [b"t3", b"t4", b"t5", b"big"]
    assert store.length(b"s", T0 + 14) == 2  # lazily: t3 and t4 are past
    assert store.purge_expired(T0 + 20, 100) == 3
    assert store.items(b"s", T0 + 20) == {b"big": b"z" * 2000}
