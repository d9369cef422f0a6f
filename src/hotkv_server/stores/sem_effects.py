"""Semantic memory's effect records (``hotkv_server.stores.sem`` applies them).

Every server-chosen value is fixed by the handler, evicted ids included.
"""

from __future__ import annotations

from typing import Any

from hotkv_server.stores.effect import Effect, effect


@effect("sem.create")
class SemCreate(Effect):
    """A new namespace with its index parameters."""

    name: bytes
    dim: int
    metric: str
    m: int
    ef_construction: int
    ef: int
    capacity: int
    evict: str
    #: the server embedder bound to the namespace (hotkv_server.embedding); a record of
    #: an older file has no such field
    embedder: str | None = None


@effect("sem.update")
class SemUpdate(Effect):
    """Changed settings (``{"ef": n, "capacity": n, "evict": policy}``, any subset), after
    removing the ``evicted`` ids a smaller capacity pushed out."""

    name: bytes
    changes: dict[str, Any]
    evicted: list[bytes]


@effect("sem.store")
class SemStore(Effect):
    """Store (or replace) one fact; ``vector`` is float32 little-endian bytes, ``expires``
    an absolute deadline (ms since epoch) or None; ``evicted`` ids go first."""

    name: bytes
    ident: bytes
    text: bytes
    vector: bytes
    kind: bytes
    confidence: float
    source: bytes | None
    description: bytes | None
    meta: Any
    created: int
    updated: int
    expires: int | None
    evicted: list[bytes]


@effect("sem.del")
class SemDel(Effect):
    """Remove facts ``ids`` (applying returns how many existed)."""

    name: bytes
    ids: list[bytes]


@effect("sem.drop")
class SemDrop(Effect):
    """Forget the whole namespace."""

    name: bytes


RECORDS = (SemCreate, SemUpdate, SemStore, SemDel, SemDrop)
