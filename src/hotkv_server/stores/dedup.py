"""The explicit embedding cache of EMBED.DEDUP.*: per namespace, content hash -> embedding.

A client that embeds on its own side stores each embedding once under the hash of the
content it came from (``EMBED.DEDUP.PUT ns hash model embedding``) and finds it again
with ``GET`` instead of paying for the model call. Every PUT of a hash takes a reference
(the first one stores the embedding, the later ones only count), every RELEASE gives one
back, and the entry is freed when none is left. Entries never expire.

Effects (records in ``dedup_effects``; nothing in them is decided at apply time, so
replay and replicas agree), on the wire::

    ["dedup.put", ns, hash, model, embedding]   first reference stores, later ones count
    ["dedup.release", ns, hash]                 one reference less, freed at zero
    ["dedup.purge", ns]                         entries of ns without references freed
    ["dedup.drop", ns]                          ns and its counters forgotten

``hits`` and ``misses`` count GETs in this process (as Redis's keyspace_hits do): they
are not effects, not in snapshots, and start at zero after a restart or on a replica.
"""

from __future__ import annotations

from typing import Any

from hotkv_server.stores.base import TimelessStore, applies
from hotkv_server.stores.dedup_effects import DedupDrop, DedupPurge, DedupPut, DedupRelease


class DedupEntry:
    __slots__ = ("embedding", "model", "refs")

    def __init__(self, model: bytes, embedding: bytes, refs: int) -> None:
        self.model = model
        self.embedding = embedding
        self.refs = refs


class DedupNamespace:
    __slots__ = ("bytes", "entries", "hits", "misses")

    def __init__(self) -> None:
        self.entries: dict[bytes, DedupEntry] = {}
        self.hits = 0
        self.misses = 0
        self.bytes = 0

    def stats(self) -> dict[str, int]:
        return {"hits": self.hits, "misses": self.misses, "entries": len(self.entries),
                "references": sum(e.refs for e in self.entries.values()), "bytes": self.bytes}


def _cost(ident: bytes, entry: DedupEntry) -> int:
    return len(ident) + len(entry.model) + len(entry.embedding)


class DedupStore(TimelessStore[DedupNamespace]):
    """Per namespace its entries; the snapshot is ``[[ns, [[hash, model, embedding,
    refs], ...]], ...]``."""

    name = "dedup"
    nested_rows = True

    @property
    def namespaces(self) -> dict[bytes, DedupNamespace]:
        """Namespace name -> its entries (the store's ``objects``)."""
        return self.objects

    # --- reads ---------------------------------------------------------------------
    def get(self, ns: bytes) -> DedupNamespace | None:
        return self.objects.get(ns)

    def lookup(self, ns: bytes, ident: bytes) -> DedupEntry | None:
        """GET: the entry, counting a hit or a miss in the namespace (when it exists)."""
        space = self.objects.get(ns)
        if space is None:
            return None
        entry = space.entries.get(ident)
        if entry is None:
            space.misses += 1
        else:
            space.hits += 1
        return entry

    # --- effects -------------------------------------------------------------------
    @applies(DedupPut)
    def _apply_put(self, e: DedupPut) -> int:
        space = self.objects.get(e.ns)
        if space is None:
            space = self.objects[e.ns] = DedupNamespace()
        entry = space.entries.get(e.ident)
        if entry is not None:
            entry.refs += 1
            return 0
        entry = space.entries[e.ident] = DedupEntry(e.model, e.embedding, 1)
        space.bytes += _cost(e.ident, entry)
        return 1

    @applies(DedupRelease)
    def _apply_release(self, e: DedupRelease) -> int:
        space = self.objects.get(e.ns)
        entry = None if space is None else space.entries.get(e.ident)
        if space is None or entry is None:
            return 0
        entry.refs -= 1
        if entry.refs <= 0:
            del space.entries[e.ident]
            space.bytes -= _cost(e.ident, entry)
        return 1

    @applies(DedupPurge)
    def _apply_purge(self, e: DedupPurge) -> int:
        space = self.objects.get(e.ns)
        if space is None:
            return 0
        gone = [ident for ident, entry in space.entries.items() if entry.refs <= 0]
        for ident in gone:
            space.bytes -= _cost(ident, space.entries.pop(ident))
        return len(gone)

    @applies(DedupDrop)
    def _apply_drop(self, e: DedupDrop) -> int:
        return 1 if self.objects.pop(e.ns, None) is not None else 0

    # --- the Store contract (ids, snapshot rows: TimelessStore) ----------------------
    def _row(self, obj: DedupNamespace) -> list[Any]:
        return [[key, e.model, e.embedding, e.refs] for key, e in obj.entries.items()]

    def load_id(self, ident: bytes, state: Any) -> None:
        space = self.objects[ident] = DedupNamespace()
        for key, model, embedding, refs in state:
            entry = space.entries[key] = DedupEntry(model, embedding, refs)
            space.bytes += _cost(key, entry)

    def stats(self, now_ms: int) -> dict[str, int]:
        spaces = self.objects.values()
        return {
            "objects": len(self.objects),
            "entries": sum(len(s.entries) for s in spaces),
            "bytes": sum(s.bytes for s in spaces),
            "hits": sum(s.hits for s in spaces),
            "misses": sum(s.misses for s in spaces),
        }
