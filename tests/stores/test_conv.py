"""ConversationStore as a data structure: effects in, turns out, expiry by deadline."""

from __future__ import annotations

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hotkv_server.stores.base import EffectError
from hotkv_server.stores.conv import ConversationStore

T0 = 1_700_000_000_000


def make(
    window: int = 50, ttl_ms: int | None = None, session: bytes = b"s1", now: int = T0
) -> ConversationStore:
    store = ConversationStore()
    expires = None if ttl_ms is None else now + ttl_ms
    store.apply(["conv.create", session, window, ttl_ms, expires, now])
    return store


def append(
    store: ConversationStore,
    session: bytes,
    content: bytes,
    ts: int = T0,
    role: bytes = b"user",
    meta: bytes | None = None,
) -> int:
    conv = store.objects[session]
    expires = None if conv.ttl_ms is None else ts + conv.ttl_ms
    seq = conv.appended + 1
    result: int = store.apply(["conv.append", session, seq, role, content, ts, meta, expires])
    return result


def test_create_sets_settings_and_counters() -> None:
    store = make(window=3, ttl_ms=1000)
    conv = store.get(b"s1", T0)
    assert conv is not None
    assert (conv.window, conv.ttl_ms, conv.expires_at) == (3, 1000, T0 + 1000)
    assert (conv.created, conv.updated, conv.appended) == (T0, T0, 0)
    assert store.length(b"s1", T0) == 0
    assert store.window(b"s1", T0) == []


def test_append_returns_seq_and_keeps_order() -> None:
    store = make()
    assert append(store, b"s1", b"hi", T0 + 1) == 1
    assert append(store, b"s1", b"hello", T0 + 2, role=b"assistant", meta=b'{"a":1}') == 2
    turns = store.window(b"s1", T0 + 3)
    assert [t.record() for t in turns] == [
        {"seq": 1, "role": b"user", "content": b"hi", "ts": T0 + 1},
        {"seq": 2, "role": b"assistant", "content": b"hello", "ts": T0 + 2, "meta": b'{"a":1}'},
    ]
    conv = store.get(b"s1", T0 + 3)
    assert conv is not None
    assert conv.updated == T0 + 2
    assert conv.appended == 2


def test_full_window_drops_oldest_and_seq_is_never_reused() -> None:
    store = make(window=3)
    for i in range(5):
        append(store, b"s1", b"m%d" % i)
    assert [t.seq for t in store.window(b"s1", T0)] == [3, 4, 5]
    assert [t.content for t in store.window(b"s1", T0)] == [b"m2", b"m3", b"m4"]
    assert store.length(b"s1", T0) == 3
    assert store.objects[b"s1"].appended == 5
    assert append(store, b"s1", b"m5") == 6


def test_window_last_n() -> None:
    store = make(window=10)
    for i in range(6):
        append(store, b"s1", b"m%d" % i)
    assert [t.seq for t in store.window(b"s1", T0, 2)] == [5, 6]
    assert [t.seq for t in store.window(b"s1", T0, 0)] == []
    assert [t.seq for t in store.window(b"s1", T0, 100)] == [1, 2, 3, 4, 5, 6]


def test_update_to_smaller_window_drops_oldest_at_once() -> None:
    store = make(window=5)
    for i in range(5):
        append(store, b"s1", b"m%d" % i)
    store.apply(["conv.update", b"s1", 2, None, None, T0 + 10])
    assert [t.seq for t in store.window(b"s1", T0 + 10)] == [4, 5]
    conv = store.objects[b"s1"]
    assert (conv.window, conv.updated) == (2, T0 + 10)
    append(store, b"s1", b"x")
    assert [t.seq for t in store.window(b"s1", T0 + 10)] == [5, 6]
    # a larger window keeps everything and lets it grow again
    store.apply(["conv.update", b"s1", 4, None, None, T0 + 11])
    append(store, b"s1", b"y")
    append(store, b"s1", b"z")
    assert [t.seq for t in store.window(b"s1", T0 + 11)] == [5, 6, 7, 8]


def test_idle_ttl_is_lazy_and_restarted_by_append() -> None:
    store = make(ttl_ms=100)
    assert store.exists(b"s1", T0 + 99)
    append(store, b"s1", b"a", ts=T0 + 90)  # new deadline T0 + 190
    assert store.exists(b"s1", T0 + 150)
    assert store.get(b"s1", T0 + 189) is not None
    assert store.get(b"s1", T0 + 190) is None
    assert store.window(b"s1", T0 + 200) == []
    assert store.length(b"s1", T0 + 200) == 0
    assert list(store.ids(T0 + 200)) == []


def test_purge_expired_reschedules_extended_deadlines() -> None:
    store = make(ttl_ms=100)
    append(store, b"s1", b"a", ts=T0 + 50)  # deadline T0 + 150, heap entry still T0 + 100
    assert store.purge_expired(T0 + 120, 10) == 0
    assert b"s1" in store.objects
    assert store.purge_expired(T0 + 150, 10) == 1
    assert b"s1" not in store.objects


def test_purge_expired_respects_limit_and_order() -> None:
    store = ConversationStore()
    for i in range(5):
        store.apply(["conv.create", b"s%d" % i, 10, 100, T0 + 100 + i, T0])
    store.apply(["conv.create", b"forever", 10, None, None, T0])
    assert store.purge_expired(T0 + 102, 2) == 2
    assert sorted(store.objects) == [b"forever", b"s2", b"s3", b"s4"]
    assert store.purge_expired(T0 + 1000, 100) == 3
    assert list(store.objects) == [b"forever"]


def test_recreate_over_expired_session_ignores_stale_heap_entry() -> None:
    store = make(ttl_ms=100)
    append(store, b"s1", b"old")
    # expired at T0 + 100; recreated later without a TTL
    store.apply(["conv.create", b"s1", 5, None, None, T0 + 200])
    assert store.purge_expired(T0 + 300, 10) == 0
    conv = store.get(b"s1", T0 + 10_000)
    assert conv is not None
    assert conv.appended == 0
    assert store.window(b"s1", T0 + 300) == []


def test_update_removing_ttl_keeps_session() -> None:
    store = make(ttl_ms=100)
    store.apply(["conv.update", b"s1", 50, None, None, T0 + 10])
    assert store.purge_expired(T0 + 500, 10) == 0
    assert store.exists(b"s1", T0 + 10**9)


def test_update_shortening_ttl_schedules_earlier() -> None:
    store = make(ttl_ms=10_000)
    store.apply(["conv.update", b"s1", 50, 50, T0 + 50, T0])
    assert store.purge_expired(T0 + 50, 10) == 1


def test_delete_counts_only_present() -> None:
    store = make()
    store.apply(["conv.create", b"s2", 5, None, None, T0])
    assert store.apply(["conv.del", [b"s1", b"nope", b"s2"]]) == 2
    assert store.objects == {}


def test_clear_drops_turns_and_keeps_settings_counters_and_deadline() -> None:
    store = make(window=3, ttl_ms=10_000)
    append(store, b"s1", b"a", ts=T0 + 1)
    append(store, b"s1", b"b", ts=T0 + 2)
    deadline = store.objects[b"s1"].expires_at
    assert store.apply(["conv.clear", b"s1", T0 + 5]) == 2
    conv = store.objects[b"s1"]
    assert list(conv.turns) == [] and conv.window == 3 and conv.ttl_ms == 10_000
    assert conv.appended == 2 and conv.updated == T0 + 5 and conv.expires_at == deadline
    assert append(store, b"s1", b"c", ts=T0 + 6) == 3  # numbering goes on
    assert store.apply(["conv.clear", b"s1", T0 + 7]) == 1
    with pytest.raises(EffectError):
        store.apply(["conv.clear", b"nope", T0])


def test_stats_ids_exists_clear() -> None:
    store = make(session=b"a")
    store.apply(["conv.create", b"b", 5, 10, T0 + 10, T0])
    append(store, b"a", b"x")
    append(store, b"a", b"y")
    assert store.stats(T0) == {"objects": 2, "entries": 2}
    assert store.stats(T0 + 10) == {"objects": 1, "entries": 2}
    assert sorted(store.ids(T0)) == [b"a", b"b"]
    assert store.exists(b"a", T0) and not store.exists(b"zz", T0)
    store.clear()
    assert store.stats(T0) == {"objects": 0, "entries": 0}


def test_snapshot_roundtrip_through_msgpack() -> None:
    store = make(window=2, ttl_ms=500)
    append(store, b"s1", b"a", meta=b'{"k":"v"}')
    append(store, b"s1", b"b", role=b"tool")
    append(store, b"s1", b"c")
    packed = msgpack.packb(store.snapshot(), use_bin_type=True)
    copy = ConversationStore()
    copy.restore(msgpack.unpackb(packed, raw=False))
    assert [t.record() for t in copy.window(b"s1", T0)] == [
        t.record() for t in store.window(b"s1", T0)
    ]
    conv = copy.objects[b"s1"]
    assert (conv.window, conv.ttl_ms, conv.expires_at, conv.appended) == (2, 500, T0 + 500, 3)
    append(copy, b"s1", b"d")
    assert [t.seq for t in copy.window(b"s1", T0)] == [3, 4]
    assert copy.purge_expired(T0 + 500, 10) == 1


def test_bad_effects_raise_effect_error() -> None:
    store = ConversationStore()
    with pytest.raises(EffectError):
        store.apply(["conv.nope", b"s"])
    with pytest.raises(EffectError):
        store.apply(["conv.append", b"missing", 1, b"user", b"x", T0, None, None])
    with pytest.raises(EffectError):
        store.apply(["conv.create", b"s"])


# --- property: the window is the last N of everything appended ---------------------

ops = st.lists(
    st.one_of(
        st.tuples(st.just("append"), st.binary(max_size=8)),
        st.tuples(st.just("resize"), st.integers(min_value=1, max_value=12)),
    ),
    max_size=80,
)


@settings(max_examples=200, deadline=None)
@given(window=st.integers(min_value=1, max_value=12), script=ops, n=st.integers(0, 15))
def test_window_matches_last_n_model(window: int, script: list[tuple[str, object]], n: int) -> None:
    store = make(window=window)
    appended: list[tuple[int, bytes]] = []  # every turn ever appended: (seq, content)
    held: list[tuple[int, bytes]] = []  # the model: a plain list cut to the last `window`
    for op, arg in script:
        if op == "append":
            assert isinstance(arg, bytes)
            seq = append(store, b"s1", arg)
            appended.append((seq, arg))
            held = [*held, (seq, arg)][-window:]
        else:
            assert isinstance(arg, int)
            store.apply(["conv.update", b"s1", arg, None, None, T0])
            window = arg
            held = held[-window:]
        got = [(t.seq, t.content) for t in store.window(b"s1", T0)]
        assert got == held
        assert store.length(b"s1", T0) == len(held)
    last_n = [t.seq for t in store.window(b"s1", T0, n)]
    assert last_n == [seq for seq, _ in held][len(held) - min(n, len(held)) :]
    assert [seq for seq, _ in appended] == list(range(1, len(appended) + 1))
