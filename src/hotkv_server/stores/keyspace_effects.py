"""The string cache's effect records (``hotkv_server.stores.keyspace`` applies them)."""

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


@effect("kv.del")
class KvDel(Effect):
    """Remove ``keys`` (applying returns how many existed)."""

    keys_: list[bytes]

    def keys(self) -> list[bytes]:
        return self.keys_


@effect("kv.expire")
class KvExpire(Effect):
    """Give an existing key the deadline ``at`` (ms since epoch); returns 1 if it existed."""

    key: bytes
    at: int


@effect("kv.persist")
class KvPersist(Effect):
    """Drop a key's deadline; returns 1 if it had one."""

    key: bytes


RECORDS = (KvSet, KvMset, KvDel, KvExpire, KvPersist)
