"""The sorted set value type's effect records (``hotkv_server.stores.zsetvalue`` applies them
through the keyspace). A sorted set is created by ``KvPut(key, "zset", [member, score,
...], deadline)`` (ZADD to a new key, ZUNIONSTORE, ZRANGESTORE ...)."""

from __future__ import annotations

from hotkv_server.stores.effect import Effect, effect


@effect("kv.zadd")
class KvZadd(Effect):
    """Set these scores, ``pairs`` being ``[member, score, ...]`` as the command decided them
    (ZADD's NX/XX/GT/LT/INCR never reach the record); returns how many members were new."""

    key: bytes
    pairs: list[object]


@effect("kv.zrem")
class KvZrem(Effect):
    """Remove ``members``; returns how many existed."""

    key: bytes
    members: list[bytes]


@effect("kv.zpop")
class KvZpop(Effect):
    """Pop up to ``count`` lowest (``highest``: highest) members; returns (member, score)s."""

    key: bytes
    count: int
    highest: bool


@effect("kv.zremrangebyrank")
class KvZremrangebyrank(Effect):
    """Remove the members of ranks ``start..stop``; returns how many went."""

    key: bytes
    start: int
    stop: int


@effect("kv.zremrangebyscore")
class KvZremrangebyscore(Effect):
    """Remove the members scoring within the range; returns how many went."""

    key: bytes
    min: float
    min_exclusive: bool
    max: float
    max_exclusive: bool


@effect("kv.zremrangebylex")
class KvZremrangebylex(Effect):
    """Remove the members within the lex range (kinds ``-``, ``+``, ``[``, ``(``)."""

    key: bytes
    min_kind: str
    min: bytes
    max_kind: str
    max: bytes


RECORDS = (KvZadd, KvZrem, KvZpop, KvZremrangebyrank, KvZremrangebyscore, KvZremrangebylex)
