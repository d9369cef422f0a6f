"""The list value type's effect records (``hotkv_server.stores.listvalue`` applies them
through the keyspace). A list is created by ``KvPut(key, "list", [element, ...], deadline)``;
between two keys LMOVE is a pop and a push (or a ``KvPut`` of a new destination)."""

from __future__ import annotations

from hotkv_server.stores.effect import Effect, effect


@effect("kv.lpush")
class KvLpush(Effect):
    """LPUSH ``values`` in turn onto the head of the list at ``key``; returns the length."""

    key: bytes
    values: list[bytes]


@effect("kv.rpush")
class KvRpush(Effect):
    """RPUSH ``values`` onto the tail of the list at ``key``; returns the length."""

    key: bytes
    values: list[bytes]


@effect("kv.lpop")
class KvLpop(Effect):
    """Pop up to ``count`` elements from the head (LPOP, and a served BLPOP); returns them."""

    key: bytes
    count: int


@effect("kv.rpop")
class KvRpop(Effect):
    """Pop up to ``count`` elements from the tail; returns them."""

    key: bytes
    count: int


@effect("kv.lset")
class KvLset(Effect):
    """Replace the element at ``index`` (negative from the tail)."""

    key: bytes
    index: int
    value: bytes


@effect("kv.linsert")
class KvLinsert(Effect):
    """Insert ``value`` before (or after) the first ``pivot``; returns the length or -1."""

    key: bytes
    before: bool
    pivot: bytes
    value: bytes


@effect("kv.lrem")
class KvLrem(Effect):
    """Remove ``count`` occurrences of ``value`` (LREM's sign rule); returns how many went."""

    key: bytes
    count: int
    value: bytes


@effect("kv.ltrim")
class KvLtrim(Effect):
    """Keep only ``start..stop`` (inclusive, negative from the tail)."""

    key: bytes
    start: int
    stop: int


@effect("kv.lmove")
class KvLmove(Effect):
    """LMOVE of a list onto itself: take from one end, push back at the other; returns it."""

    key: bytes
    from_left: bool
    to_left: bool


RECORDS = (KvLpush, KvRpush, KvLpop, KvRpop, KvLset, KvLinsert, KvLrem, KvLtrim, KvLmove)
