"""The database: the id spaces side by side, and the one place records are routed.

``apply(effect)`` sends a typed record to the method of the store that declared it (each
store's ``appliers()``, gathered once here). ``FlushAll``, ``ObjLoad`` (RESTORE and the
target side of a slot migration: each store's ``load_id``) and ``ObjDrop`` (the id leaves
every store: MIGRATE's source side) belong to the database itself.
A wire list (``["kv.set", ...]`` or ``["tx", [...]]``, as the AOF and the replication
stream hold them) is decoded first and its records applied in order.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from hotkv_server.stores.base import Store

if TYPE_CHECKING:
    from hotkv_server.stores.conv import ConversationStore
    from hotkv_server.stores.dedup import DedupStore
    from hotkv_server.stores.epis import EpisodicStore
    from hotkv_server.stores.keyspace import KeyValueStore
    from hotkv_server.stores.sem import SemanticStore
    from hotkv_server.stores.summary import SummaryStore
    from hotkv_server.stores.vsnap import VsimSnapshotStore
    from hotkv_server.stores.work import WorkingStore
from hotkv_server.stores.effect import Effect, EffectError, FlushAll, ObjDrop, ObjLoad, decode

#: module, class of every store, in the order INFO and AMEM.SCAN list them
STORE_CLASSES: tuple[tuple[str, str], ...] = (
    ("hotkv_server.stores.keyspace", "KeyValueStore"),
    ("hotkv_server.stores.conv", "ConversationStore"),
    ("hotkv_server.stores.sem", "SemanticStore"),
    ("hotkv_server.stores.work", "WorkingStore"),
    ("hotkv_server.stores.epis", "EpisodicStore"),
    ("hotkv_server.stores.summary", "SummaryStore"),
    ("hotkv_server.stores.vsnap", "VsimSnapshotStore"),
    ("hotkv_server.stores.dedup", "DedupStore"),
)


class Database:
    """All stores of one server; ``db.kv``, ``db.conv``, ``db.sem`` ... by store name."""

    # set in __init__ by store name (STORE_CLASSES); declared for type checkers
    kv: KeyValueStore
    conv: ConversationStore
    sem: SemanticStore
    work: WorkingStore
    epis: EpisodicStore
    summary: SummaryStore
    vsnap: VsimSnapshotStore
    dedup: DedupStore

    def __init__(self, stores: Iterable[Store]) -> None:
        self.stores: dict[str, Store] = {}
        #: record class -> the function applying it
        self._routes: dict[type[Any], Callable[[Any], Any]] = {
            FlushAll: self._flushall, ObjLoad: self._load, ObjDrop: self._drop}
        for store in stores:
            self.stores[store.name] = store
            setattr(self, store.name, store)
            for record, applier in store.appliers().items():
                if record in self._routes:
                    raise TypeError(f"{record.__name__} is applied by two stores")
                self._routes[record] = applier

    def apply(self, effect: Effect | list[Any]) -> Any:
        """Apply one record (or a wire list); returns what the store's applier returns."""
        route = self._routes.get(type(effect))
        if route is not None:
            return route(effect)
        if type(effect) is list:
            result = None
            for record in decode(effect):
                result = self.apply(record)
            return result
        raise EffectError(f"no store applies {type(effect).__name__}")

    def apply_all(self, records: list[Effect]) -> None:
        routes = self._routes
        for record in records:
            route = routes.get(type(record))
            if route is None:
                raise EffectError(f"no store applies {type(record).__name__}")
            route(record)

    def _flushall(self, effect: FlushAll) -> None:
        self.clear()

    def exists_any(self, ident: bytes) -> bool:
        """Whether any store holds ``ident``, expired or not (``now`` 0: nothing is past its
        deadline, nothing is removed): what FLUSHALL removes, for WATCH."""
        return any(store.exists(ident, 0) for store in self.stores.values())

    def observe_expiry(self, observer: Any) -> None:
        """Tell ``observer(store, id, entry)`` of every entry any store expires."""
        for store in self.stores.values():
            store.on_expire = observer

    def _load(self, effect: ObjLoad) -> None:
        for name, state in effect.parts.items():
            store = self.stores.get(name)
            if store is None:
                raise EffectError(f"no store named {name!r}")
            store.load_id(effect.ident, state)

    def _drop(self, effect: ObjDrop) -> None:
        for store in self.stores.values():
            store.drop_id(effect.ident)

    def dump_id(self, ident: bytes) -> dict[str, Any]:
        """Every store's part of ``ident`` (DUMP, MIGRATE): ``{store name: state}``."""
        parts = {}
        for name, store in self.stores.items():
            state = store.dump_id(ident)
            if state is not None:
                parts[name] = state
        return parts

    def clear(self) -> None:
        for store in self.stores.values():
            store.clear()

    def purge_expired(self, now_ms: int, limit: int) -> int:
        return sum(store.purge_expired(now_ms, limit) for store in self.stores.values())

    def snapshot(self) -> dict[str, Any]:
        return {name: store.snapshot() for name, store in self.stores.items()}

    def restore(self, state: dict[str, Any]) -> None:
        for name, store in self.stores.items():
            if name in state:
                store.restore(state[name])
            else:
                store.clear()


def default_database() -> Database:
    """A database with every store of the product."""
    stores: list[Store] = []
    for module_name, class_name in STORE_CLASSES:
        module = importlib.import_module(module_name)
        stores.append(getattr(module, class_name)())
    return Database(stores)
