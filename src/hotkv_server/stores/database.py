"""The database: the id spaces side by side, and the one place effects are routed.

``apply(effect)`` sends ``["conv.append", ...]`` to the store named before the dot.
Two ops belong to the database itself: ``["tx", [effect, ...]]`` (a MULTI/EXEC block, kept
whole in the AOF so a torn tail never applies half a transaction) and ``["flushall"]``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable
from typing import Any

from hotkv_server.stores.base import Effect, EffectError, Store

#: module, class of every store, in the order INFO and AMEM.SCAN list them
STORE_CLASSES: tuple[tuple[str, str], ...] = (
    ("hotkv_server.stores.keyspace", "KeyValueStore"),
    ("hotkv_server.stores.conv", "ConversationStore"),
    ("hotkv_server.stores.sem", "SemanticStore"),
    ("hotkv_server.stores.work", "WorkingStore"),
    ("hotkv_server.stores.epis", "EpisodicStore"),
    ("hotkv_server.stores.summary", "SummaryStore"),
    ("hotkv_server.stores.dedup", "DedupStore"),
)


class Database:
    """All stores of one server; ``db.kv``, ``db.conv``, ``db.sem`` ... by store name."""

    def __init__(self, stores: Iterable[Store]) -> None:
        self.stores: dict[str, Store] = {}
        #: op -> the function applying it (``Store.appliers``), filled as ops are first seen
        self._routes: dict[str, Callable[[Effect], Any]] = {}
        for store in stores:
            self.stores[store.name] = store
            setattr(self, store.name, store)

    def __getattr__(self, name: str) -> Any:  # for mypy: db.conv etc. are set in __init__
        raise AttributeError(name)

    def apply(self, effect: Effect) -> Any:
        route = self._routes.get(effect[0])
        if route is not None:
            return route(effect)
        op = effect[0]
        if op == "tx":
            for inner in effect[1]:
                self.apply(inner)
            return None
        if op == "flushall":
            self.clear()
            return None
        if not isinstance(op, str):
            raise EffectError(f"effect op {op!r} is not a string")
        prefix = op.partition(".")[0]
        found = self.stores.get(prefix)
        if found is None:
            raise EffectError(f"no store for effect op {op!r}")
        # the store's own applier of this op when it has one (the hot writes), else apply
        route = found.appliers().get(op, found.apply)
        self._routes[op] = route
        return route(effect)

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
