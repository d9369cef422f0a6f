"""The set value type's effect records (``hotkv_server.stores.sets`` applies them through the
keyspace). A set is created by ``KvPut(key, "set", [member, ...], deadline)``."""

from __future__ import annotations

from hotkv_server.stores.effect import Effect, effect


@effect("kv.sadd")
class KvSadd(Effect):
    """Add ``members`` to the set at ``key``; returns how many were new."""

    key: bytes
    members: list[bytes]


@effect("kv.srem")
class KvSrem(Effect):
    """Remove ``members`` from the set at ``key`` (SREM, and SPOP's drawn members); returns
    how many existed."""

    key: bytes
    members: list[bytes]


RECORDS = (KvSadd, KvSrem)
