"""Key specs of the command table (engine/registry.py): where each kind finds its keys, as
Redis 7's getKeysUsingKeySpecs does, and a command's own key finder (``getkeys``)."""

from __future__ import annotations

from hotkv_server.commands import load_all
from hotkv_server.engine.registry import COMMANDS, key_spec

load_all()


def call(*words: str) -> list[bytes]:
    return [w.encode() for w in words]


def test_an_index_spec_takes_a_range_after_its_index() -> None:
    spec = key_spec(1, "RO access", lastkey=-1)
    assert spec.begin_search == "index"
    assert spec.keys(call("mget", "a", "b", "c")) == [b"a", b"b", b"c"]
    assert key_spec(2, "RW update").keys(call("x", "k")) == []


def test_a_keyword_spec_searches_backwards_from_a_negative_start() -> None:
    # MIGRATE host port "" db timeout ... KEYS k1 k2: the keys follow the last KEYS
    spec = key_spec(-2, "RW access delete", keyword="KEYS", lastkey=-1)
    assert spec.begin_search == "keyword"
    argv = call("migrate", "h", "6379", "", "0", "5000", "KEYS", "k1", "k2")
    assert spec.keys(argv) == [b"k1", b"k2"]
    assert spec.keys(call("migrate", "h", "6379", "key", "0", "5000")) == []
    # searched from argc-2 down to 1: a keyword in last place names no key
    assert spec.keys(call("migrate", "h", "6379", "", "0", "5000", "KEYS")) == []


def test_a_keyword_spec_searches_forwards_from_a_positive_start() -> None:
    spec = key_spec(2, "RO access", keyword="STREAMS", lastkey=0)
    assert spec.keys(call("x", "streams", "a", "STREAMS", "k", "s")) == [b"k"]
    assert spec.keys(call("x", "a", "b", "STREAMS")) == []  # the last argument is not searched


def test_an_unknown_spec_finds_nothing_itself() -> None:
    spec = key_spec(0, "OW update", unknown=True)
    assert spec.begin_search == "unknown"
    assert spec.keys(call("sort", "k", "STORE", "d")) == []


def test_sort_finds_its_keys_with_its_own_finder() -> None:
    sort, sort_ro = COMMANDS["sort"], COMMANDS["sort_ro"]
    assert "movablekeys" in sort.flags and "movablekeys" in sort_ro.flags
    assert sort.keys_of(call("sort", "k", "BY", "w_*", "STORE", "d")) == [b"k", b"d"]
    assert sort.keys_with_flags(call("sort", "k", "STORE", "a", "store", "b")) == [
        (b"k", ("RO", "access")), (b"b", ("OW", "update"))]
    # the arguments of LIMIT, BY and GET are skipped, STORE's own is not
    assert sort.keys_of(call("sort", "k", "GET", "STORE", "x")) == [b"k"]
    assert sort.keys_of(call("sort", "k", "LIMIT", "STORE", "x", "y")) == [b"k"]
    assert sort.keys_of(call("sort", "k", "STORE", "STORE", "d")) == [b"k", b"d"]
    assert sort.keys_of(call("sort", "k", "STORE")) == [b"k"]
    # SORT_RO has no STORE: only the sorted key
    assert sort_ro.keys_of(call("sort_ro", "k", "STORE", "d")) == [b"k"]
    assert sort.arguments[0].name == "key"
    assert {(a.name, a.type, a.key_spec_index) for a in sort.arguments} >= {
        ("key", "key", 0), ("destination", "key", 2)}
