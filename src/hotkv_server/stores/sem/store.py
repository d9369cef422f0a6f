"""The semantic store: every namespace by name, and the appliers of its effects."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from hotkv_server.stores.base import EffectError, Store, applies
from hotkv_server.stores.sem.namespace import Namespace
from hotkv_server.stores.sem_effects import SemCreate, SemDel, SemDrop, SemStore, SemUpdate


class SemanticStore(Store):
    """Every semantic namespace, by name."""

    name = "sem"

    def __init__(self) -> None:
        self.namespaces: dict[bytes, Namespace] = {}
        self._expiring: set[bytes] = set()  # namespaces that hold facts with a TTL

    # --- reads for the handlers ------------------------------------------------------
    def get(self, name: bytes) -> Namespace | None:
        return self.namespaces.get(name)

    # --- effects ------------------------------------------------------------------
    def _ns(self, name: bytes) -> Namespace:
        ns = self.namespaces.get(name)
        if ns is None:
            raise EffectError(f"no semantic namespace {name!r}")
        return ns

    @applies(SemCreate)
    def _apply_create(self, e: SemCreate) -> None:
        ns = Namespace(e.name, e.dim, e.metric, e.m, e.ef_construction, e.ef, e.capacity, e.evict,
                       e.embedder)
        ns.on_expire = self._fact_expired
        self.namespaces[e.name] = ns

    def _fact_expired(self, store: str, ns: bytes, fact: bytes | None) -> None:
        if self.on_expire is not None:
            self.on_expire(store, ns, fact)

    @applies(SemUpdate)
    def _apply_update(self, e: SemUpdate) -> int:
        ns = self._ns(e.name)
        removed = sum(ns.delete(ident) for ident in e.evicted)
        ns.change(e.changes)
        return removed

    @applies(SemStore)
    def _apply_store(self, e: SemStore) -> bool:
        ns = self._ns(e.name)
        for victim in e.evicted:
            ns.delete(victim)
        created_new = ns.put(e.ident, e.text, e.vector, e.kind, float(e.confidence), e.source,
                             e.description, e.meta, e.created, e.updated, e.expires)
        if e.expires is not None:
            self._expiring.add(e.name)
        return created_new

    @applies(SemDel)
    def _apply_del(self, e: SemDel) -> int:
        ns = self.namespaces.get(e.name)
        if ns is None:
            return 0
        return sum(ns.delete(ident) for ident in e.ids)

    @applies(SemDrop)
    def _apply_drop(self, e: SemDrop) -> bool:
        self._expiring.discard(e.name)
        ns = self.namespaces.pop(e.name, None)
        if ns is None:
            return False
        ns.quiesce()
        return True

    # --- the Store contract ------------------------------------------------------------
    def purge_expired(self, now_ms: int, limit: int) -> int:
        removed = 0
        for name in list(self._expiring):
            ns = self.namespaces.get(name)
            if ns is not None:
                removed += ns.purge_expired(now_ms, limit - removed)
            if ns is None or not ns.has_expiring():
                self._expiring.discard(name)
            if removed >= limit:
                break
        return removed

    def ids(self, now_ms: int) -> Iterator[bytes]:
        return iter(list(self.namespaces))

    def exists(self, ident: bytes, now_ms: int) -> bool:
        return ident in self.namespaces

    def clear(self) -> None:
        for ns in self.namespaces.values():
            ns.quiesce()
        self.namespaces.clear()
        self._expiring.clear()

    def snapshot(self) -> dict[bytes, Any]:
        return {name: ns.snapshot() for name, ns in self.namespaces.items()}

    def restore(self, state: Any) -> None:
        self.clear()
        for name, ns_state in state.items():
            self.load_id(name, ns_state)

    def dump_id(self, ident: bytes) -> Any:
        ns = self.namespaces.get(ident)
        if ns is None:
            return None
        state = ns.snapshot()
        if state["index"] is not None:  # the snapshot's views would outlive the index
            state["index"] = {k: bytes(v) if isinstance(v, memoryview) else v
                              for k, v in state["index"].items()}
        return state

    def load_id(self, ident: bytes, state: Any) -> None:
        self.drop_id(ident)
        ns = Namespace.from_snapshot(ident, state)
        ns.on_expire = self._fact_expired
        self.namespaces[ident] = ns
        if ns.has_expiring():
            self._expiring.add(ident)

    def drop_id(self, ident: bytes) -> None:
        ns = self.namespaces.pop(ident, None)
        if ns is not None:
            ns.quiesce()
        self._expiring.discard(ident)

    def stats(self, now_ms: int) -> dict[str, int]:
        vectors = 0
        vector_bytes = 0
        for ns in self.namespaces.values():
            count = ns.live_count(now_ms)
            vectors += count
            vector_bytes += count * ns.dim * 4
        return {
            "objects": len(self.namespaces),
            "entries": vectors,
            "vectors": vectors,
            "bytes": vector_bytes,
        }
