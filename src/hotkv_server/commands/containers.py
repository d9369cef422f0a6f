"""How the list, set and sorted-set commands read their values and write their effects.

Reads go through ``kv.typed`` (WRONGTYPE for a key of another type, None for a missing or
expired key): ``read_*`` for a read command (counted as a keyspace hit or miss), ``target_*``
for the key a write changes; ``*_if_any`` variants answer None for another type instead (a blocked client
is not served from a key that became a string). Writes are effects (``stores/values.py``):
a key found absent is created by ``kv.put``, an existing one changed by the type's ops.
"""

from __future__ import annotations

from typing import Any

from hotkv_server.commands.typed import read
from hotkv_server.engine.args import parse_int
from hotkv_server.engine.context import Context
from hotkv_server.engine.errors import CommandError
from hotkv_server.stores.keyspace_effects import KvDel, KvPut
from hotkv_server.stores.listvalue import ListValue
from hotkv_server.stores.zsetvalue import SortedSetValue

MUST_BE_POSITIVE = "ERR value is out of range, must be positive"


def pop_count(raw: bytes) -> int:
    """The ``count`` of LPOP, RPOP, SPOP, ZPOPMIN and ZPOPMAX: a negative or non-integer one is
    Redis's one error for both."""
    count = parse_int(raw)
    if count is None or count < 0:
        raise CommandError(MUST_BE_POSITIVE)
    return count


def read_list(ctx: Context, key: bytes) -> ListValue | None:
    """The list a read command reads (counted in keyspace_hits/misses)."""
    return read(ctx, key, ListValue)


def read_zset(ctx: Context, key: bytes) -> SortedSetValue | None:
    """The sorted set a read command reads (counted in keyspace_hits/misses)."""
    found = ctx.db.kv.typed(key, ctx.now_ms, SortedSetValue)
    stats = ctx.core.stats  # read() written out: every sorted-set read starts here
    if found is None:
        stats.keyspace_misses += 1
    else:
        stats.keyspace_hits += 1
    return found


def target_list(ctx: Context, key: bytes) -> ListValue | None:
    """The list a write is about to change (not counted, as Redis's lookupKeyWrite)."""
    return ctx.db.kv.typed(key, ctx.now_ms, ListValue)


def target_zset(ctx: Context, key: bytes) -> SortedSetValue | None:
    return ctx.db.kv.typed(key, ctx.now_ms, SortedSetValue)


def list_if_any(ctx: Context, key: bytes) -> ListValue | None:
    value = ctx.db.kv.lookup(key, ctx.now_ms)
    return value if value.__class__ is ListValue else None


def zset_if_any(ctx: Context, key: bytes) -> SortedSetValue | None:
    value = ctx.db.kv.lookup(key, ctx.now_ms)
    return value if value.__class__ is SortedSetValue else None


def put_list(ctx: Context, key: bytes, elements: list[bytes]) -> None:
    """Create (or replace) ``key`` as a list of ``elements`` without a deadline."""
    ctx.emit(KvPut(key, "list", elements, None))


def put_zset(ctx: Context, key: bytes, flat: list[Any]) -> None:
    """Create (or replace) ``key`` as a sorted set of ``[member, score, ...]``."""
    ctx.emit(KvPut(key, "zset", flat, None))


def store_zset(ctx: Context, key: bytes, flat: list[Any]) -> None:
    """The sorted-set ``*STORE`` commands: the destination becomes this set (see ``store``)."""
    store(ctx, key, "zset", flat)


def store(ctx: Context, key: bytes, kind: str, contents: list[Any]) -> None:
    """The ``*STORE`` commands: the destination becomes a ``kind`` value of ``contents``,
    or goes when they are empty (as Redis deletes the destination of an empty result)."""
    if contents:
        ctx.emit(KvPut(key, kind, contents, None))
    elif ctx.db.kv.peek(key, ctx.now_ms) is not None:
        ctx.emit(KvDel([key]))
