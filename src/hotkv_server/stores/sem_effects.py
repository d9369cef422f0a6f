"""Semantic memory's effect records (``hotkv_server.stores.sem`` applies them).

Every server-chosen value is fixed by the handler, evicted ids included.
"""

from __future__ import annotations

from typing import Any, ClassVar

from hotkv_server.stores.effect import Effect, declare


class SemCreate(Effect):
    """A new namespace with its index parameters."""

    op: ClassVar[str] = "sem.create"

    def __init__(self, name: bytes, dim: int, metric: str, m: int, ef_construction: int, ef: int,
                 capacity: int, evict: str, embedder: str | None = None) -> None:
        # ``embedder``: the server embedder bound to the namespace (hotkv_server.embedding);
        # a record of an older file has no such field
        (self.name, self.dim, self.metric, self.m, self.ef_construction, self.ef, self.capacity,
         self.evict, self.embedder) = (
            name, dim, metric, m, ef_construction, ef, capacity, evict, embedder)


class SemUpdate(Effect):
    """Changed settings (``{"ef": n, "capacity": n, "evict": policy}``, any subset), after
    removing the ``evicted`` ids a smaller capacity pushed out."""

    op: ClassVar[str] = "sem.update"

    def __init__(self, name: bytes, changes: dict[str, Any], evicted: list[bytes]) -> None:
        self.name, self.changes, self.evicted = name, changes, evicted


class SemStore(Effect):
    """Store (or replace) one fact; ``vector`` is float32 little-endian bytes, ``expires``
    an absolute deadline (ms since epoch) or None; ``evicted`` ids go first."""

    op: ClassVar[str] = "sem.store"

    def __init__(self, name: bytes, ident: bytes, text: bytes, vector: bytes, kind: bytes,
                 confidence: float, source: bytes | None, description: bytes | None, meta: Any,
                 created: int, updated: int, expires: int | None, evicted: list[bytes]) -> None:
        (self.name, self.ident, self.text, self.vector, self.kind, self.confidence, self.source,
         self.description, self.meta, self.created, self.updated, self.expires, self.evicted) = (
            name, ident, text, vector, kind, confidence, source, description, meta, created,
            updated, expires, evicted)


class SemDel(Effect):
    """Remove facts ``ids`` (applying returns how many existed)."""

    op: ClassVar[str] = "sem.del"

    def __init__(self, name: bytes, ids: list[bytes]) -> None:
        self.name, self.ids = name, ids


class SemDrop(Effect):
    """Forget the whole namespace."""

    op: ClassVar[str] = "sem.drop"

    def __init__(self, name: bytes) -> None:
        self.name = name


RECORDS = declare(SemCreate, SemUpdate, SemStore, SemDel, SemDrop)
