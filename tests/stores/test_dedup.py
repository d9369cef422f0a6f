"""The EMBED.DEDUP store as a plain data structure: references, snapshot round trip, and
its records' wire form (what the AOF and the replicas carry)."""

from __future__ import annotations

import pytest

from hotkv_server.stores.database import Database
from hotkv_server.stores.dedup import DedupStore
from hotkv_server.stores.dedup_effects import DedupDrop, DedupPurge, DedupPut, DedupRelease
from hotkv_server.stores.effect import EffectError, decode


def test_references_and_snapshot() -> None:
    store = DedupStore()
    db = Database([store])
    assert db.apply(DedupPut(b"ns", b"h", b"m", b"e")) == 1
    assert db.apply(DedupPut(b"ns", b"h", b"m", b"x")) == 0
    assert db.apply(DedupRelease(b"ns", b"h")) == 1
    entry = store.lookup(b"ns", b"h")
    assert entry is not None and entry.embedding == b"e" and entry.refs == 1
    copy = DedupStore()
    copy.restore(store.snapshot())
    assert copy.namespaces[b"ns"].entries[b"h"].refs == 1
    assert copy.stats(0)["bytes"] == store.stats(0)["bytes"] == 3
    assert db.apply(DedupRelease(b"ns", b"h")) == 1
    assert store.lookup(b"ns", b"h") is None
    assert store.stats(0)["bytes"] == 0
    db.apply(DedupPut(b"ns", b"k", b"m", b"e"))
    store.namespaces[b"ns"].entries[b"k"].refs = 0  # as a hand-made snapshot could have it
    assert db.apply(DedupPurge(b"ns")) == 1 and store.lookup(b"ns", b"k") is None
    assert db.apply(DedupDrop(b"ns")) == 1


def test_wire_form_round_trips() -> None:
    record = DedupPut(b"ns", b"h", b"m", b"\x00\x01")
    assert record.wire() == ["dedup.put", b"ns", b"h", b"m", b"\x00\x01"]
    assert decode(["dedup.release", b"ns", b"h"]) == [DedupRelease(b"ns", b"h")]
    with pytest.raises(EffectError):
        decode(["dedup.put", b"ns"])
