"""The set value type's effect records (``hotkv_server.stores.sets`` applies them through the
keyspace). A set is created by ``KvPut(key, "set", [member, ...], deadline)``."""

from __future__ import annotations

from typing import ClassVar

from hotkv_server.stores.effect import Effect, declare


class KvSadd(Effect):
    """Add ``members`` to the set at ``key``; returns how many were new."""

    op: ClassVar[str] = "kv.sadd"

    def __init__(self, key: bytes, members: list[bytes]) -> None:
        self.key, self.members = key, members


class KvSrem(Effect):
    """Remove ``members`` from the set at ``key`` (SREM, and SPOP's drawn members); returns
    how many existed."""

    op: ClassVar[str] = "kv.srem"

    def __init__(self, key: bytes, members: list[bytes]) -> None:
        self.key, self.members = key, members


RECORDS = declare(KvSadd, KvSrem)
