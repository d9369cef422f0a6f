"""SummaryStore as a data structure: set, append, delete, versions, snapshots."""

from __future__ import annotations

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hotkv_server.stores.base import EffectError
from hotkv_server.stores.summary import SummaryStore

T0 = 1_700_000_000_000


def test_set_replaces_text_and_upto() -> None:
    s = SummaryStore()
    assert s.get(b"a") is None
    assert s.version(b"a") == 0
    assert s.apply(["summary.set", b"a", b"first", 1, T0, b"5-0"]) == 1
    item = s.get(b"a")
    assert item is not None
    assert (item.text, item.version, item.updated, item.upto) == (b"first", 1, T0, b"5-0")
    s.apply(["summary.set", b"a", b"second", 2, T0 + 1, None])
    item = s.get(b"a")
    assert item is not None
    assert (item.text, item.version, item.updated, item.upto) == (b"second", 2, T0 + 1, None)


def test_append_adds_lines_after_a_newline_and_keeps_upto() -> None:
    s = SummaryStore()
    assert s.apply(["summary.append", b"a", b"one", 1, T0]) == 1
    s.apply(["summary.append", b"a", b"two", 2, T0 + 1])
    item = s.get(b"a")
    assert item is not None
    assert (item.text, item.version, item.updated, item.upto) == (b"one\ntwo", 2, T0 + 1, None)
    s.apply(["summary.set", b"a", b"", 3, T0 + 2, b"9-9"])
    s.apply(["summary.append", b"a", b"fresh", 4, T0 + 3])  # empty text: no leading newline
    item = s.get(b"a")
    assert item is not None
    assert (item.text, item.version, item.upto) == (b"fresh", 4, b"9-9")


def test_delete_and_store_contract() -> None:
    s = SummaryStore()
    s.apply(["summary.set", b"a", b"x", 1, T0, None])
    s.apply(["summary.set", b"b", b"y", 1, T0, None])
    assert s.exists(b"a", T0) and not s.exists(b"c", T0)
    assert sorted(s.ids(T0)) == [b"a", b"b"]
    assert s.stats(T0) == {"objects": 2, "entries": 2}
    assert s.purge_expired(T0 + 10**12, 10) == 0
    assert s.apply(["summary.del", b"a"]) == 1
    assert s.apply(["summary.del", b"a"]) == 0
    assert s.version(b"a") == 0
    s.clear()
    assert s.stats(T0) == {"objects": 0, "entries": 0}
    with pytest.raises(EffectError):
        s.apply(["summary.bump", b"a"])


def test_snapshot_round_trips_through_msgpack() -> None:
    s = SummaryStore()
    s.apply(["summary.set", b"a", b"x\ny", 7, T0, b"1-2"])
    s.apply(["summary.append", b"b", b"z", 1, T0 + 1])
    packed = msgpack.packb(s.snapshot(), use_bin_type=True)
    t = SummaryStore()
    t.apply(["summary.set", b"gone", b"q", 1, T0, None])
    t.restore(msgpack.unpackb(packed, raw=False))
    assert sorted(t.ids(T0)) == [b"a", b"b"]
    for agent in (b"a", b"b"):
        x, y = s.get(agent), t.get(agent)
        assert x is not None and y is not None
        assert (x.text, x.version, x.updated, x.upto) == (y.text, y.version, y.updated, y.upto)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.binary(max_size=5)), max_size=20))
def test_text_is_the_lines_joined_since_the_last_set(ops: list[tuple[bool, bytes]]) -> None:
    s = SummaryStore()
    lines: list[bytes] = []
    for version, (is_set, data) in enumerate(ops, start=1):
        if is_set:
            s.apply(["summary.set", b"a", data, version, T0, None])
            lines = [data] if data else []
        else:
            s.apply(["summary.append", b"a", data, version, T0])
            lines.append(data)
    item = s.get(b"a")
    if not ops:
        assert item is None
        return
    assert item is not None
    assert item.version == len(ops)
    # an empty text takes the next line without a newline, so empties before it vanish
    expected = b""
    for line in lines:
        expected = expected + b"\n" + line if expected else line
    assert item.text == expected
