"""The keyspace's effect records (``hotkv_server.stores.keyspace`` applies them); each value
type's own records (``KvHset``, ``KvSadd`` ...) sit beside its module (``hashes_effects``,
``sets_effects`` ...)."""

from __future__ import annotations

from hotkv_server.stores.effect import Effect, effect


@effect("kv.set")
class KvSet(Effect):
    """Store ``value`` at ``key``; ``expires_at`` (ms since epoch) or None for no deadline
    (KEEPTTL and INCR carry the existing deadline explicitly)."""

    key: bytes
    value: bytes
    expires_at: int | None


@effect("kv.mset")
class KvMset(Effect):
    """Store many values, none with a deadline: ``pairs`` is ``[key, value, key, value ...]``."""

    pairs: list[bytes]

    def keys(self) -> list[bytes]:
        return self.pairs[::2]


@effect("kv.del", keys="keys_")
class KvDel(Effect):
    """Remove ``keys`` (applying returns how many existed)."""

    keys_: list[bytes]


@effect("kv.expire")
class KvExpire(Effect):
    """Give an existing key the deadline ``at`` (ms since epoch); returns 1 if it existed."""

    key: bytes
    at: int


@effect("kv.persist")
class KvPersist(Effect):
    """Drop a key's deadline; returns 1 if it had one."""

    key: bytes


@effect("kv.put")
class KvPut(Effect):
    """Store a typed value at ``key`` in place of whatever it held: ``type_name`` (as TYPE
    answers it) and ``state`` (what that type's ``snapshot`` returns), until ``expires_at``
    or forever. Written for a key the handler found absent, so a copy still holding a
    stale (expired) value ends with exactly this one."""

    key: bytes
    type_name: str
    state: object
    expires_at: int | None


@effect("kv.rename")
class KvRename(Effect):
    """Move ``src``'s value and deadline to ``dst`` (replacing it); a ``src`` this copy has
    already expired removes ``dst``, as it would have expired with it."""

    src: bytes
    dst: bytes

    def keys(self) -> list[bytes]:
        return [self.src, self.dst]


@effect("kv.copy")
class KvCopy(Effect):
    """``dst`` becomes a copy of ``src``'s value and deadline (same rule as KvRename)."""

    src: bytes
    dst: bytes

    def keys(self) -> list[bytes]:
        return [self.dst]


RECORDS = (KvSet, KvMset, KvDel, KvExpire, KvPersist, KvPut, KvRename, KvCopy)
