"""The list value type's effect records (``hotkv_server.stores.listvalue`` applies them
through the keyspace). A list is created by ``KvPut(key, "list", [element, ...], deadline)``;
between two keys LMOVE is a pop and a push (or a ``KvPut`` of a new destination)."""

from __future__ import annotations

from typing import ClassVar

from hotkv_server.stores.effect import Effect, declare


class KvLpush(Effect):
    """LPUSH ``values`` in turn onto the head of the list at ``key``; returns the length."""

    op: ClassVar[str] = "kv.lpush"

    def __init__(self, key: bytes, values: list[bytes]) -> None:
        self.key, self.values = key, values


class KvRpush(Effect):
    """RPUSH ``values`` onto the tail of the list at ``key``; returns the length."""

    op: ClassVar[str] = "kv.rpush"

    def __init__(self, key: bytes, values: list[bytes]) -> None:
        self.key, self.values = key, values


class KvLpop(Effect):
    """Pop up to ``count`` elements from the head (LPOP, and a served BLPOP); returns them."""

    op: ClassVar[str] = "kv.lpop"

    def __init__(self, key: bytes, count: int) -> None:
        self.key, self.count = key, count


class KvRpop(Effect):
    """Pop up to ``count`` elements from the tail; returns them."""

    op: ClassVar[str] = "kv.rpop"

    def __init__(self, key: bytes, count: int) -> None:
        self.key, self.count = key, count


class KvLset(Effect):
    """Replace the element at ``index`` (negative from the tail)."""

    op: ClassVar[str] = "kv.lset"

    def __init__(self, key: bytes, index: int, value: bytes) -> None:
        self.key, self.index, self.value = key, index, value


class KvLinsert(Effect):
    """Insert ``value`` before (or after) the first ``pivot``; returns the length or -1."""

    op: ClassVar[str] = "kv.linsert"

    def __init__(self, key: bytes, before: bool, pivot: bytes, value: bytes) -> None:
        self.key, self.before, self.pivot, self.value = key, before, pivot, value


class KvLrem(Effect):
    """Remove ``count`` occurrences of ``value`` (LREM's sign rule); returns how many went."""

    op: ClassVar[str] = "kv.lrem"

    def __init__(self, key: bytes, count: int, value: bytes) -> None:
        self.key, self.count, self.value = key, count, value


class KvLtrim(Effect):
    """Keep only ``start..stop`` (inclusive, negative from the tail)."""

    op: ClassVar[str] = "kv.ltrim"

    def __init__(self, key: bytes, start: int, stop: int) -> None:
        self.key, self.start, self.stop = key, start, stop


class KvLmove(Effect):
    """LMOVE of a list onto itself: take from one end, push back at the other; returns it."""

    op: ClassVar[str] = "kv.lmove"

    def __init__(self, key: bytes, from_left: bool, to_left: bool) -> None:
        self.key, self.from_left, self.to_left = key, from_left, to_left


RECORDS = declare(KvLpush, KvRpush, KvLpop, KvRpop, KvLset, KvLinsert, KvLrem, KvLtrim, KvLmove)
