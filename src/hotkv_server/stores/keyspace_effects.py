"""The keyspace's effect records (``hotkv_server.stores.keyspace`` applies them); each value
type's own records (``KvHset``, ``KvSadd`` ...) sit beside its module (``hashes_effects``,
``sets_effects`` ...)."""

from __future__ import annotations

from typing import ClassVar

from hotkv_server.stores.effect import Effect, declare


class KvSet(Effect):
    """Store ``value`` at ``key``; ``expires_at`` (ms since epoch) or None for no deadline
    (KEEPTTL and INCR carry the existing deadline explicitly)."""

    op: ClassVar[str] = "kv.set"

    def __init__(self, key: bytes, value: bytes, expires_at: int | None) -> None:
        self.key, self.value, self.expires_at = key, value, expires_at


class KvMset(Effect):
    """Store many values, none with a deadline: ``pairs`` is ``[key, value, key, value ...]``."""

    op: ClassVar[str] = "kv.mset"

    def __init__(self, pairs: list[bytes]) -> None:
        self.pairs = pairs

    def keys(self) -> list[bytes]:
        return self.pairs[::2]


class KvDel(Effect):
    """Remove ``keys`` (applying returns how many existed)."""

    op: ClassVar[str] = "kv.del"

    def __init__(self, keys_: list[bytes]) -> None:
        self.keys_ = keys_

    def keys(self) -> list[bytes]:
        return self.keys_


class KvExpire(Effect):
    """Give an existing key the deadline ``at`` (ms since epoch); returns 1 if it existed."""

    op: ClassVar[str] = "kv.expire"

    def __init__(self, key: bytes, at: int) -> None:
        self.key, self.at = key, at


class KvPersist(Effect):
    """Drop a key's deadline; returns 1 if it had one."""

    op: ClassVar[str] = "kv.persist"

    def __init__(self, key: bytes) -> None:
        self.key = key


class KvPut(Effect):
    """Store a typed value at ``key`` in place of whatever it held: ``type_name`` (as TYPE
    answers it) and ``state`` (what that type's ``snapshot`` returns), until ``expires_at``
    or forever. Written for a key the handler found absent, so a copy still holding a
    stale (expired) value ends with exactly this one."""

    op: ClassVar[str] = "kv.put"

    def __init__(self, key: bytes, type_name: str, state: object, expires_at: int | None) -> None:
        self.key, self.type_name, self.state, self.expires_at = key, type_name, state, expires_at


class KvRename(Effect):
    """Move ``src``'s value and deadline to ``dst`` (replacing it); a ``src`` this copy has
    already expired removes ``dst``, as it would have expired with it."""

    op: ClassVar[str] = "kv.rename"

    def __init__(self, src: bytes, dst: bytes) -> None:
        self.src, self.dst = src, dst

    def keys(self) -> list[bytes]:
        return [self.src, self.dst]


class KvCopy(Effect):
    """``dst`` becomes a copy of ``src``'s value and deadline (same rule as KvRename)."""

    op: ClassVar[str] = "kv.copy"

    def __init__(self, src: bytes, dst: bytes) -> None:
        self.src, self.dst = src, dst

    def keys(self) -> list[bytes]:
        return [self.dst]


RECORDS = declare(KvSet, KvMset, KvDel, KvExpire, KvPersist, KvPut, KvRename, KvCopy)
