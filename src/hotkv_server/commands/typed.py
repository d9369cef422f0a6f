"""Reading a typed value for a command: WRONGTYPE, and the keyspace hit/miss counters.

Handlers of the hash, set, list ... families read through ``read`` (a read command's
lookup: counted in INFO's keyspace_hits/keyspace_misses, as Redis's lookupKeyRead does) or
``target`` (the key a write changes: not counted, as Redis's lookupKeyWrite).
"""

from __future__ import annotations

from typing import TypeVar

from hotkv_server.engine.context import Context
from hotkv_server.stores.values import TypedValue

T = TypeVar("T", bound=TypedValue)


def read(ctx: Context, key: bytes, cls: type[T]) -> T | None:
    """The ``cls`` value at ``key`` for a read (WRONGTYPE if the key holds another type)."""
    return counted(ctx, ctx.db.kv.typed(key, ctx.now_ms, cls))


V = TypeVar("V")


def counted(ctx: Context, value: V | None) -> V | None:
    """``value`` after counting a keyspace hit (a value) or miss (None) for INFO stats."""
    stats = ctx.core.stats
    if value is None:
        stats.keyspace_misses += 1
    else:
        stats.keyspace_hits += 1
    return value


def target(ctx: Context, key: bytes, cls: type[T]) -> T | None:
    """The ``cls`` value at ``key`` that a write is about to change (WRONGTYPE likewise)."""
    return ctx.db.kv.typed(key, ctx.now_ms, cls)
