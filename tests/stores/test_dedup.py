"""The EMBED.DEDUP store as a plain data structure: references, snapshot round trip."""

from __future__ import annotations

import pytest

from hotkv_server.stores.base import EffectError
from hotkv_server.stores.dedup import DedupStore


def test_references_and_snapshot() -> None:
    store = DedupStore()
    assert store.apply(["dedup.put", b"ns", b"h", b"m", b"e"]) == 1
    assert store.apply(["dedup.put", b"ns", b"h", b"m", b"x"]) == 0
    assert store.apply(["dedup.release", b"ns", b"h"]) == 1
    entry = store.lookup(b"ns", b"h")
    assert entry is not None and entry.embedding == b"e" and entry.refs == 1
    copy = DedupStore()
    copy.restore(store.snapshot())
    assert copy.namespaces[b"ns"].entries[b"h"].refs == 1
    assert copy.stats(0)["bytes"] == store.stats(0)["bytes"] == 3
    assert store.apply(["dedup.release", b"ns", b"h"]) == 1
    assert store.lookup(b"ns", b"h") is None
    assert store.stats(0)["bytes"] == 0
    store.apply(["dedup.put", b"ns", b"k", b"m", b"e"])
    store.namespaces[b"ns"].entries[b"k"].refs = 0  # as a hand-made snapshot could have it
    assert store.apply(["dedup.purge", b"ns"]) == 1 and store.lookup(b"ns", b"k") is None
    assert store.apply(["dedup.drop", b"ns"]) == 1
    with pytest.raises(EffectError):
        store.apply(["dedup.nope"])
