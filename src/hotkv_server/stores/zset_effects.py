"""The sorted set value type's effect records (``hotkv_server.stores.zsetvalue`` applies them
through the keyspace). A sorted set is created by ``KvPut(key, "zset", [member, score,
...], deadline)`` (ZADD to a new key, ZUNIONSTORE, ZRANGESTORE ...)."""

from __future__ import annotations

from typing import ClassVar

from hotkv_server.stores.effect import Effect, declare


class KvZadd(Effect):
    """Set these scores, ``pairs`` being ``[member, score, ...]`` as the command decided them
    (ZADD's NX/XX/GT/LT/INCR never reach the record); returns how many members were new."""

    op: ClassVar[str] = "kv.zadd"

    def __init__(self, key: bytes, pairs: list[object]) -> None:
        self.key, self.pairs = key, pairs


class KvZrem(Effect):
    """Remove ``members``; returns how many existed."""

    op: ClassVar[str] = "kv.zrem"

    def __init__(self, key: bytes, members: list[bytes]) -> None:
        self.key, self.members = key, members


class KvZpop(Effect):
    """Pop up to ``count`` lowest (``highest``: highest) members; returns (member, score)s."""

    op: ClassVar[str] = "kv.zpop"

    def __init__(self, key: bytes, count: int, highest: bool) -> None:
        self.key, self.count, self.highest = key, count, highest


class KvZremrangebyrank(Effect):
    """Remove the members of ranks ``start..stop``; returns how many went."""

    op: ClassVar[str] = "kv.zremrangebyrank"

    def __init__(self, key: bytes, start: int, stop: int) -> None:
        self.key, self.start, self.stop = key, start, stop


class KvZremrangebyscore(Effect):
    """Remove the members scoring within the range; returns how many went."""

    op: ClassVar[str] = "kv.zremrangebyscore"

    def __init__(self, key: bytes, min: float, min_exclusive: bool, max: float,
                 max_exclusive: bool) -> None:
        self.key, self.min, self.min_exclusive, self.max, self.max_exclusive = (
            key, min, min_exclusive, max, max_exclusive)


class KvZremrangebylex(Effect):
    """Remove the members within the lex range (kinds ``-``, ``+``, ``[``, ``(``)."""

    op: ClassVar[str] = "kv.zremrangebylex"

    def __init__(self, key: bytes, min_kind: str, min: bytes, max_kind: str, max: bytes) -> None:
        self.key, self.min_kind, self.min, self.max_kind, self.max = (
            key, min_kind, min, max_kind, max)


RECORDS = declare(KvZadd, KvZrem, KvZpop, KvZremrangebyrank, KvZremrangebyscore, KvZremrangebylex)
