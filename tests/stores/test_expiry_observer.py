"""Stores tell their expiry observer of every entry removed because its deadline passed,
lazily (a read meets it) or actively (purge_expired), and of nothing else."""

from __future__ import annotations

from hotkv_server.stores.database import default_database

NOW = 1_700_000_000_000


def test_every_store_reports_expired_entries_once() -> None:
    db = default_database()
    seen: list[tuple[str, bytes, bytes | None]] = []
    db.observe_expiry(lambda store, ident, entry: seen.append((store, ident, entry)))
    db.apply(["kv.set", b"lazy", b"v", NOW + 10])
    db.apply(["kv.set", b"active", b"v", NOW + 10])
    db.apply(["kv.set", b"kept", b"v", None])
    db.apply(["kv.del", [b"kept"]])  # a deletion is no expiry
    db.apply(["work.set", b"s1", b"note", b"v", NOW + 10])
    db.apply(["work.set", b"s1", b"other", b"v", None])
    db.apply(["conv.create", b"c1", 10, 5, NOW + 10, NOW])
    assert db.kv.get(b"lazy", NOW + 20) is None
    assert seen == [("kv", b"lazy", None)]
    db.purge_expired(NOW + 20, 100)
    assert sorted(seen) == sorted([("kv", b"lazy", None), ("kv", b"active", None),
                                   ("work", b"s1", b"note"), ("conv", b"c1", None)])
    db.purge_expired(NOW + 30, 100)
    assert len(seen) == 4


def test_no_observer_is_the_default() -> None:
    db = default_database()
    db.apply(["kv.set", b"k", b"v", NOW + 1])
    assert db.kv.get(b"k", NOW + 2) is None  # nothing to call, nothing fails
