"""EpisodicStore as a data structure: ids, effects, range queries, trimming, snapshots."""

from __future__ import annotations

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hotkv_server.stores.base import EffectError
from hotkv_server.stores.epis import (
    MAX_KEY,
    MIN_KEY,
    EpisodicStore,
    event_key,
    format_id,
    key_parts,
)

T0 = 1_700_000_000_000


def log(store: EpisodicStore, agent: bytes, now: int, type_: bytes = b"action",
        text: bytes = b"t", source: bytes | None = None, meta: bytes | None = None) -> bytes:
    """What AMEM.EPIS.LOG does: choose the id, apply the effect, return the id."""
    ms, seq = store.next_id(agent, now)
    store.apply(["epis.log", agent, ms, seq, type_, text, source, meta])
    return format_id(ms, seq)


def ids_of(events: list) -> list[bytes]:
    return [format_id(e[0], e[1]) for e in events]


def test_ids_increase_with_the_clock_and_never_repeat_or_go_back() -> None:
    s = EpisodicStore()
    assert log(s, b"a", T0) == b"%d-0" % T0
    assert log(s, b"a", T0) == b"%d-1" % T0  # same ms: next seq
    assert log(s, b"a", T0 - 50) == b"%d-2" % T0  # clock went back: stay on last ms
    assert log(s, b"a", T0 + 1) == b"%d-0" % (T0 + 1)
    # another agent has its own sequence
    assert log(s, b"b", T0 - 50) == b"%d-0" % (T0 - 50)


def test_ids_keep_increasing_after_a_trim_to_empty() -> None:
    s = EpisodicStore()
    log(s, b"a", T0)
    log(s, b"a", T0)
    ms, seq = s.trim_boundary_maxlen(b"a", 0)  # type: ignore[misc]
    assert s.apply(["epis.trim", b"a", ms, seq]) == 2
    assert s.length(b"a") == 0
    assert s.exists(b"a", T0)  # an emptied log stays, as a Redis stream does
    assert log(s, b"a", T0 - 1) == b"%d-2" % T0


def test_delete_forgets_the_log_and_its_last_id() -> None:
    s = EpisodicStore()
    log(s, b"a", T0)
    assert s.apply(["epis.del", b"a"]) == 1
    assert s.apply(["epis.del", b"a"]) == 0
    assert not s.exists(b"a", T0)
    assert list(s.ids(T0)) == []
    assert log(s, b"a", T0 - 5) == b"%d-0" % (T0 - 5)


def test_apply_rejects_an_id_that_does_not_increase() -> None:
    s = EpisodicStore()
    s.apply(["epis.log", b"a", 10, 1, b"x", b"t", None, None])
    with pytest.raises(EffectError):
        s.apply(["epis.log", b"a", 10, 1, b"x", b"t", None, None])
    with pytest.raises(EffectError):
        s.apply(["epis.log", b"a", 9, 5, b"x", b"t", None, None])
    with pytest.raises(EffectError):
        s.apply(["epis.nope", b"a"])
    with pytest.raises(EffectError):
        s.apply(["epis.log", b"a"])


def test_query_keeps_every_field() -> None:
    s = EpisodicStore()
    s.apply(["epis.log", b"a", T0, 0, b"decision", b"chose X", b"planner", b'{"k":1}'])
    assert s.query(b"a") == [(T0, 0, b"decision", b"chose X", b"planner", b'{"k":1}')]
    assert s.query(b"missing") == []


def test_query_ranges_type_limit_rev() -> None:
    s = EpisodicStore()
    for i in range(10):
        log(s, b"a", T0 + i * 10, type_=b"even" if i % 2 == 0 else b"odd", text=b"%d" % i)
    texts = lambda events: [e[3] for e in events]  # noqa: E731
    assert texts(s.query(b"a")) == [b"%d" % i for i in range(10)]
    assert texts(s.query(b"a", rev=True)) == [b"%d" % i for i in reversed(range(10))]
    assert texts(s.query(b"a", limit=3)) == [b"0", b"1", b"2"]
    assert texts(s.query(b"a", limit=3, rev=True)) == [b"9", b"8", b"7"]
    # inclusive bounds
    lo, hi = event_key(T0 + 20, 0), event_key(T0 + 50, 0)
    assert texts(s.query(b"a", lo, hi)) == [b"2", b"3", b"4", b"5"]
    assert texts(s.query(b"a", lo, hi, rev=True, limit=2)) == [b"5", b"4"]
    assert texts(s.query(b"a", lo, hi, type_=b"odd")) == [b"3", b"5"]
    assert texts(s.query(b"a", type_=b"even", rev=True, limit=2)) == [b"8", b"6"]
    assert texts(s.query(b"a", type_=b"none")) == []
    assert s.query(b"a", hi, lo) == []  # start after end
    assert s.query(b"a", limit=0) == []


def test_trim_boundaries() -> None:
    s = EpisodicStore()
    ids = [log(s, b"a", T0 + i) for i in range(5)]
    assert s.trim_boundary_maxlen(b"a", 5) is None
    assert s.trim_boundary_maxlen(b"missing", 0) is None
    assert s.trim_boundary_maxlen(b"a", 3) == (T0 + 1, 0)
    assert s.trim_boundary_before(b"a", event_key(T0, 0)) is None
    assert s.trim_boundary_before(b"a", event_key(T0 + 3, 0)) == (T0 + 2, 0)
    assert s.trim_boundary_before(b"missing", MAX_KEY) is None
    assert s.apply(["epis.trim", b"a", T0 + 1, 0]) == 2
    assert ids_of(s.query(b"a")) == ids[2:]
    # a trim replayed later removes nothing more: the boundary is an id, not a count
    assert s.apply(["epis.trim", b"a", T0 + 1, 0]) == 0
    assert s.apply(["epis.trim", b"missing", T0, 0]) == 0
    assert s.stats(T0) == {"objects": 1, "entries": 3}


def test_no_expiry_and_stats_and_clear() -> None:
    s = EpisodicStore()
    log(s, b"a", T0)
    log(s, b"a", T0)
    log(s, b"b", T0)
    assert s.purge_expired(T0 + 10**12, 100) == 0
    assert s.stats(T0) == {"objects": 2, "entries": 3}
    assert sorted(s.ids(T0)) == [b"a", b"b"]
    s.apply(["epis.del", b"a"])
    assert s.stats(T0) == {"objects": 1, "entries": 1}
    s.clear()
    assert s.stats(T0) == {"objects": 0, "entries": 0}


def test_snapshot_round_trips_through_msgpack_with_the_last_id() -> None:
    s = EpisodicStore()
    log(s, b"a", T0, source=b"src", meta=b"{}")
    log(s, b"a", T0)
    log(s, b"b", T0 + 5, type_=b"obs")
    s.apply(["epis.trim", b"b", T0 + 5, 0])  # b is empty but keeps its last id
    packed = msgpack.packb(s.snapshot(), use_bin_type=True)
    t = EpisodicStore()
    t.restore(msgpack.unpackb(packed, raw=False))
    assert t.query(b"a") == s.query(b"a")
    assert t.length(b"b") == 0
    assert t.stats(T0) == s.stats(T0)
    assert log(t, b"b", T0) == b"%d-1" % (T0 + 5)


def test_key_helpers() -> None:
    assert key_parts(event_key(123, 456)) == (123, 456)
    assert event_key(1, 0) > event_key(0, 2**63 - 1)
    assert event_key(0, 0) >= MIN_KEY and event_key(2**63 - 1, 2**63 - 1) <= MAX_KEY


# --- property: range queries agree with a plain sorted list filtered linearly ------------

_events = st.lists(
    st.tuples(st.integers(0, 30), st.sampled_from([b"a", b"b", b"c"])), max_size=40
)
_bound = st.one_of(
    st.none(), st.integers(0, 60).map(lambda d: ("ms", d)),
    st.tuples(st.integers(0, 60), st.integers(0, 3)).map(lambda t: ("id", t)),
)


def _key_of(bound: tuple | None, end: bool) -> int:
    if bound is None:
        return MAX_KEY if end else MIN_KEY
    kind, value = bound
    if kind == "ms":
        return event_key(T0 + value, 2**64 - 1 if end else 0)
    return event_key(T0 + value[0], value[1])


@settings(max_examples=300, deadline=None)
@given(
    steps=_events,
    start=_bound,
    end=_bound,
    type_=st.one_of(st.none(), st.sampled_from([b"a", b"b", b"c"])),
    limit=st.one_of(st.none(), st.integers(1, 10)),
    rev=st.booleans(),
    trim=st.one_of(st.none(), st.integers(0, 10)),
)
def test_query_matches_a_linear_reference(
    steps: list[tuple[int, bytes]],
    start: tuple | None,
    end: tuple | None,
    type_: bytes | None,
    limit: int | None,
    rev: bool,
    trim: int | None,
) -> None:
    s = EpisodicStore()
    reference: list[tuple[int, int, bytes]] = []  # (ms, seq, type) in log order
    now = T0
    for delta, kind in steps:
        now += delta - 10  # the clock may stand still or go back
        ms, seq = s.next_id(b"ag", now)
        if reference:
            assert (ms, seq) > reference[-1][:2]
        s.apply(["epis.log", b"ag", ms, seq, kind, b"x", None, None])
        reference.append((ms, seq, kind))
    if trim is not None:
        boundary = s.trim_boundary_maxlen(b"ag", trim)
        if boundary is not None:
            assert s.apply(["epis.trim", b"ag", *boundary]) == len(reference) - trim
            reference = reference[len(reference) - trim:]
    assert reference == sorted(reference)
    lo, hi = _key_of(start, False), _key_of(end, True)
    expected = [
        (ms, seq) for ms, seq, kind in reference
        if lo <= event_key(ms, seq) <= hi and (type_ is None or kind == type_)
    ]
    if rev:
        expected.reverse()
    if limit is not None:
        expected = expected[:limit]
    got = s.query(b"ag", lo, hi, type_, limit, rev)
    assert [(e[0], e[1]) for e in got] == expected
    assert s.length(b"ag") == len(reference)


@settings(max_examples=200, deadline=None)
@given(
    stamps=st.lists(st.integers(0, 20), min_size=1, max_size=30),
    cut=st.tuples(st.integers(-1, 25), st.integers(0, 3)),
)
def test_trim_before_matches_a_linear_reference(
    stamps: list[int], cut: tuple[int, int]
) -> None:
    s = EpisodicStore()
    keys = []
    for stamp in sorted(stamps):
        ms, seq = s.next_id(b"ag", T0 + stamp)
        s.apply(["epis.log", b"ag", ms, seq, b"t", b"x", None, None])
        keys.append(event_key(ms, seq))
    start = event_key(T0 + cut[0], cut[1])
    boundary = s.trim_boundary_before(b"ag", start)
    kept = [k for k in keys if k >= start]
    if boundary is None:
        assert kept == keys
    else:
        assert s.apply(["epis.trim", b"ag", *boundary]) == len(keys) - len(kept)
    assert [event_key(e[0], e[1]) for e in s.query(b"ag")] == kept
