"""The hash value type's effect records (``hotkv_server.stores.hashes`` applies them through
the keyspace). A hash is created by ``KvPut(key, "hash", [field, value, ...], deadline)``."""

from __future__ import annotations

from hotkv_server.stores.effect import Effect, effect


@effect("kv.hset")
class KvHset(Effect):
    """Set ``pairs`` (``[field, value, ...]``) in the hash at ``key``; returns how many fields
    were new. HINCRBY, HINCRBYFLOAT and HSETNX write their result this way."""

    key: bytes
    pairs: list[bytes]


@effect("kv.hdel")
class KvHdel(Effect):
    """Remove ``fields`` from the hash at ``key``; returns how many existed."""

    key: bytes
    fields: list[bytes]


RECORDS = (KvHset, KvHdel)
