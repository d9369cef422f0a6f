"""The hash value type's effect records (``hotkv_server.stores.hashes`` applies them through
the keyspace). A hash is created by ``KvPut(key, "hash", [field, value, ...], deadline)``."""

from __future__ import annotations

from typing import ClassVar

from hotkv_server.stores.effect import Effect, declare


class KvHset(Effect):
    """Set ``pairs`` (``[field, value, ...]``) in the hash at ``key``; returns how many fields
    were new. HINCRBY, HINCRBYFLOAT and HSETNX write their result this way."""

    op: ClassVar[str] = "kv.hset"

    def __init__(self, key: bytes, pairs: list[bytes]) -> None:
        self.key, self.pairs = key, pairs


class KvHdel(Effect):
    """Remove ``fields`` from the hash at ``key``; returns how many existed."""

    op: ClassVar[str] = "kv.hdel"

    def __init__(self, key: bytes, fields: list[bytes]) -> None:
        self.key, self.fields = key, fields


RECORDS = declare(KvHset, KvHdel)
