"""WorkingStore as a data structure, and the MERGE arithmetic against a reference model."""

from __future__ import annotations

import json
from decimal import Decimal

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hotkv_server.stores.base import EffectError
from hotkv_server.stores.work import (
    MergeError,
    WorkingStore,
    format_number,
    merge,
    parse_number,
)

T0 = 1_700_000_000_000


def test_set_get_items_length() -> None:
    store = WorkingStore()
    store.apply(["work.set", b"s", b"a", b"1", None])
    store.apply(["work.set", b"s", b"b", b"2", None])
    store.apply(["work.set", b"s", b"a", b"3", None])
    assert store.get(b"s", b"a", T0) == b"3"
    assert store.get(b"s", b"zz", T0) is None
    assert store.get(b"other", b"a", T0) is None
    assert store.items(b"s", T0) == {b"a": b"3", b"b": b"2"}
    assert store.length(b"s", T0) == 2
    assert store.ttl(b"s", b"a", T0) == -1
    assert store.ttl(b"s", b"zz", T0) == -2


def test_key_ttl_is_lazy_and_set_without_ttl_removes_it() -> None:
    store = WorkingStore()
    store.apply(["work.set", b"s", b"a", b"1", T0 + 100])
    store.apply(["work.set", b"s", b"b", b"2", None])
    assert store.ttl(b"s", b"a", T0 + 40) == 60
    assert store.key_deadline(b"s", b"a", T0) == T0 + 100
    assert store.get(b"s", b"a", T0 + 100) is None
    assert store.items(b"s", T0 + 100) == {b"b": b"2"}
    assert store.length(b"s", T0 + 100) == 1
    assert store.ttl(b"s", b"a", T0 + 100) == -2
    store.apply(["work.set", b"s", b"b", b"3", T0 + 10])
    store.apply(["work.set", b"s", b"b", b"4", None])
    assert store.ttl(b"s", b"b", T0 + 50) == -1
    assert store.purge_expired(T0 + 50, 10) == 0
    assert store.get(b"s", b"b", T0 + 50) == b"4"


def test_session_deadline_caps_key_ttl_and_expires_everything() -> None:
    store = WorkingStore()
    store.apply(["work.set", b"s", b"a", b"1", T0 + 500])
    store.apply(["work.set", b"s", b"b", b"2", None])
    assert store.apply(["work.expire", b"s", T0 + 200]) == 1
    assert store.apply(["work.expire", b"missing", T0 + 200]) == 0
    assert store.ttl(b"s", b"a", T0) == 200
    assert store.ttl(b"s", b"b", T0) == 200
    store.apply(["work.set", b"s", b"a", b"1", T0 + 50])
    assert store.ttl(b"s", b"a", T0) == 50
    assert store.present_but_expired(b"s", T0 + 200)
    assert not store.present_but_expired(b"s", T0 + 199)
    assert store.items(b"s", T0 + 200) == {}
    assert store.length(b"s", T0 + 200) == 0
    assert not store.exists(b"s", T0 + 200)
    assert store.purge_expired(T0 + 200, 10) == 2
    assert store.objects == {}


def test_delete_and_empty_session_goes_with_its_deadline() -> None:
    store = WorkingStore()
    store.apply(["work.set", b"s", b"a", b"1", None])
    store.apply(["work.set", b"s", b"b", b"2", None])
    store.apply(["work.expire", b"s", T0 + 100])
    assert store.apply(["work.del", b"s", [b"a", b"zz"]]) == 1
    assert store.apply(["work.del", b"nope", [b"a"]]) == 0
    assert store.apply(["work.del", b"s", [b"b"]]) == 1
    assert b"s" not in store.objects
    store.apply(["work.set", b"s", b"c", b"3", None])
    # a new scratchpad does not inherit the deleted one's deadline
    assert store.ttl(b"s", b"c", T0 + 1000) == -1
    assert store.purge_expired(T0 + 1000, 10) == 0
    assert store.get(b"s", b"c", T0 + 1000) == b"3"


def test_clear_returns_key_count() -> None:
    store = WorkingStore()
    for k in (b"a", b"b", b"c"):
        store.apply(["work.set", b"s", k, b"v", None])
    assert store.apply(["work.clear", b"s"]) == 3
    assert store.apply(["work.clear", b"s"]) == 0
    assert store.items(b"s", T0) == {}


def test_purge_removes_due_keys_only_and_respects_limit() -> None:
    store = WorkingStore()
    for i in range(5):
        store.apply(["work.set", b"s", b"k%d" % i, b"v", T0 + i])
    store.apply(["work.set", b"s", b"keep", b"v", None])
    assert store.purge_expired(T0 + 10, 3) == 3
    assert sorted(store.objects[b"s"].names()) == [b"k3", b"k4", b"keep"]
    assert store.purge_expired(T0 + 10, 100) == 2
    assert store.objects[b"s"].names() == [b"keep"]


def test_purge_skips_stale_heap_entries() -> None:
    store = WorkingStore()
    store.apply(["work.set", b"s", b"a", b"1", T0 + 10])
    store.apply(["work.set", b"s", b"a", b"2", T0 + 1000])  # the T0+10 entry is stale
    assert store.purge_expired(T0 + 500, 10) == 0
    assert store.get(b"s", b"a", T0 + 500) == b"2"
    assert store.purge_expired(T0 + 1000, 10) == 1


def test_heap_is_rebuilt_when_stale_entries_pile_up() -> None:
    store = WorkingStore()
    for i in range(5000):
        store.apply(["work.set", b"s", b"a", b"%d" % i, T0 + 10_000 + i])
    assert len(store._heap) <= 2100
    assert store.purge_expired(T0 + 20_000, 10) == 1


def test_many_live_deadlines_all_expire() -> None:
    store = WorkingStore()
    for i in range(3000):
        store.apply(["work.set", b"s%d" % (i % 7), b"k%d" % i, b"v", T0 + i])
    assert len(store._heap) == 3000  # rebuilds drop nothing that is still live
    assert store.purge_expired(T0 + 1499, 10_000) == 1500
    assert store.purge_expired(T0 + 5000, 10_000) == 1500
    assert store.objects == {}


def test_ids_exists_stats() -> None:
    store = WorkingStore()
    store.apply(["work.set", b"s1", b"a", b"1", None])
    store.apply(["work.set", b"s2", b"a", b"1", T0 + 5])
    store.apply(["work.set", b"s2", b"b", b"1", T0 + 5])
    assert sorted(store.ids(T0)) == [b"s1", b"s2"]
    assert list(store.ids(T0 + 5)) == [b"s1"]
    assert store.stats(T0) == {"objects": 2, "entries": 3}
    assert store.stats(T0 + 5) == {"objects": 1, "entries": 1}
    store.clear()
    assert store.stats(T0) == {"objects": 0, "entries": 0}


def test_snapshot_roundtrip_through_msgpack() -> None:
    store = WorkingStore()
    store.apply(["work.set", b"s", b"a", b"1", T0 + 100])
    store.apply(["work.set", b"s", b"b", b"\x00\xff", None])
    store.apply(["work.expire", b"s", T0 + 300])
    packed = msgpack.packb(store.snapshot(), use_bin_type=True)
    copy = WorkingStore()
    copy.restore(msgpack.unpackb(packed, raw=False))
    assert copy.items(b"s", T0) == {b"a": b"1", b"b": b"\x00\xff"}
    assert copy.ttl(b"s", b"a", T0) == 100
    assert copy.ttl(b"s", b"b", T0) == 300
    assert copy.purge_expired(T0 + 100, 10) == 1
    assert copy.purge_expired(T0 + 300, 10) == 1
    assert copy.objects == {}


def test_bad_effects_raise_effect_error() -> None:
    store = WorkingStore()
    with pytest.raises(EffectError):
        store.apply(["work.nope"])
    with pytest.raises(EffectError):
        store.apply(["work.set", b"s"])


# --- MERGE -----------------------------------------------------------------------


def test_merge_replace() -> None:
    assert merge(b"REPLACE", b"k", b"old", b"new") == b"new"
    assert merge(b"REPLACE", b"k", None, b"new") == b"new"


def test_merge_append() -> None:
    assert merge(b"APPEND", b"k", None, b"a") == b'["a"]'
    assert merge(b"APPEND", b"k", b'["a"]', b"2") == b'["a",2]'
    assert merge(b"APPEND", b"k", b"[1, 2]", b'{"x": [1]}') == b'[1,2,{"x":[1]}]'
    assert merge(b"APPEND", b"k", b"[]", b'"quoted"') == b'["quoted"]'
    assert merge(b"APPEND", b"k", b"[]", b"NaN") == b'["NaN"]'
    assert merge(b"APPEND", b"k", b"[]", "héllo".encode()) == '["héllo"]'.encode()
    assert merge(b"APPEND", b"k", b"[]", b"null") == b"[null]"
    with pytest.raises(
        MergeError, match=r"^ERR MERGE APPEND: the stored value of 'k' is not a JSON array$"
    ):
        merge(b"APPEND", b"k", b'{"a":1}', b"x")
    with pytest.raises(MergeError, match="not a JSON array"):
        merge(b"APPEND", b"k", b"plain", b"x")
    with pytest.raises(MergeError, match="not a JSON array"):
        merge(b"APPEND", b"k", b"\xff[", b"x")
    with pytest.raises(MergeError, match="UTF-8"):
        merge(b"APPEND", b"k", None, b"\xff")


def test_merge_incr_ints_and_floats() -> None:
    assert merge(b"INCR", b"k", None, b"5") == b"5"
    assert merge(b"INCR", b"k", b"5", b"3") == b"8"
    assert merge(b"INCR", b"k", b"5", b"-7") == b"-2"
    assert merge(b"INCR", b"k", b"10.5", b"0.1") == b"10.6"
    assert merge(b"INCR", b"k", b"0.1", b"0.2") == b"0.3"
    assert merge(b"INCR", b"k", b"1.5", b"1.5") == b"3"
    assert merge(b"INCR", b"k", b"5", b"1e3") == b"1005"
    assert merge(b"INCR", b"k", None, b"2.50") == b"2.5"
    assert merge(b"INCR", b"k", b"3", b"-3.0") == b"0"
    with pytest.raises(MergeError, match=r"^ERR increment or decrement would overflow$"):
        merge(b"INCR", b"k", b"9223372036854775807", b"1")
    with pytest.raises(
        MergeError, match=r"^ERR MERGE INCR: the stored value of 'k' is not a number$"
    ):
        merge(b"INCR", b"k", b"abc", b"1")
    with pytest.raises(MergeError, match=r"^ERR invalid value 'x': MERGE INCR expects a number"):
        merge(b"INCR", b"k", b"1", b"x")
    with pytest.raises(MergeError, match="NaN or Infinity"):
        merge(b"INCR", b"k", b"1.7e308", b"1.7e308")
    for bad in (b"inf", b"nan", b" 1", b"1_000", b"", b"0x10", b"1e400"):
        with pytest.raises(MergeError):
            merge(b"INCR", b"k", None, bad)


def test_merge_max_min() -> None:
    assert merge(b"MAX", b"k", None, b"4") == b"4"
    assert merge(b"MAX", b"k", b"4", b"9") == b"9"
    assert merge(b"MAX", b"k", b"4", b"2") == b"4"
    assert merge(b"MAX", b"k", b"4", b"4.5") == b"4.5"
    assert merge(b"MIN", b"k", b"4", b"2") == b"2"
    assert merge(b"MIN", b"k", b"4", b"9") == b"4"
    assert merge(b"MIN", b"k", b"-1.25", b"-1") == b"-1.25"
    with pytest.raises(MergeError, match="MERGE MAX: the stored value of 'k' is not a number"):
        merge(b"MAX", b"k", b"[1]", b"1")


def test_parse_and_format_number() -> None:
    assert parse_number(b"42") == 42 and isinstance(parse_number(b"42"), int)
    assert parse_number(b"-0.5") == Decimal("-0.5")
    assert parse_number(b"007") == 7  # not a strict integer, still a number
    assert parse_number(b"abc") is None
    assert format_number(Decimal("1E+3")) == b"1000"
    assert format_number(Decimal("-0.0")) == b"0"
    assert format_number(Decimal("0.12345678901234567890")) == b"0.12345678901234568"


# --- property: MERGE against a reference model ------------------------------------

ints = st.integers(min_value=-(10**12), max_value=10**12)
decimals = st.decimals(min_value=-(10**6), max_value=10**6, places=3, allow_nan=False)


def text_of(value: int | Decimal) -> bytes:
    return str(value).encode()


@settings(max_examples=300, deadline=None)
@given(
    mode=st.sampled_from([b"INCR", b"MAX", b"MIN"]),
    values=st.lists(st.one_of(ints, decimals), min_size=1, max_size=20),
)
def test_numeric_merge_matches_model(mode: bytes, values: list[int | Decimal]) -> None:
    current: bytes | None = None
    model: Decimal | None = None
    all_ints = True
    for v in values:
        all_ints = all_ints and isinstance(v, int)
        current = merge(mode, b"k", current, text_of(v))
        d = Decimal(v)
        if model is None:
            model = d
        elif mode == b"INCR":
            model = model + d
        elif mode == b"MAX":
            model = max(model, d)
        else:
            model = min(model, d)
        assert Decimal(current.decode()) == model
        if all_ints:
            assert current == b"%d" % int(model)
        assert not current.endswith(b".") and (b"." not in current or not current.endswith(b"0"))


def _not_json(text: str) -> object:
    raise ValueError(text)


def _finite(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError(text)
    return value


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-1000, 1000) | st.text(max_size=5),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=3), children, max_size=3)
    ),
    max_leaves=8,
)


@settings(max_examples=200, deadline=None)
@given(
    items=st.lists(
        st.one_of(
            json_values,
            st.text(max_size=6),
            st.sampled_from(["NaN", "Infinity", "-Infinity", "1e400", "[1,", "007"]),
        ),
        max_size=10,
    )
)
def test_append_merge_matches_list_model(items: list[object]) -> None:
    current: bytes | None = None
    model: list[object] = []
    for item in items:
        raw = json.dumps(item).encode() if not isinstance(item, str) else item.encode()
        current = merge(b"APPEND", b"k", current, raw)
        if isinstance(item, str):
            try:  # a string that happens to be strict JSON is taken as JSON
                model.append(json.loads(item, parse_constant=_not_json, parse_float=_finite))
            except ValueError:
                model.append(item)
        else:
            model.append(item)
        assert json.loads(current) == model
