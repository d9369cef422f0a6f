"""The keyspace events of the Redis data types, named and ordered as Redis 7.0 publishes them.

``engine/notify.py`` hands each applied keyspace record here (in its wire form,
``[op, key, ...]``) with the command that wrote it; the answer is the events to publish,
``(class bit, event, key)`` in order. The rules, as redis-server 7.0 notifies:

* an in-place record names its event (``kv.hdel`` -> ``hdel`` in class ``h``, ``kv.zpop``
  -> ``zpopmin``/``zpopmax`` in ``z`` ...); the command refines a few (HINCRBY writes
  ``kv.hset`` but notifies ``hincrby``, SPOP writes ``kv.srem`` but notifies ``spop``,
  ZADD INCR / ZINCRBY notify ``zincr``);
* a record that can empty its key (a pop, a removal, a trim) is followed by the generic
  ``del`` when the key went (the keyspace drops an empty value);
* ``kv.put`` (a key created or replaced whole) is named by the command (``sadd``,
  ``sinterstore``, ``lpush``/``rpush`` for LMOVE's side, ``zrangestore`` ...), or after the
  type when no command is known (a replica applying its primary's records);
* LMOVE of a list onto itself (``kv.lmove``) is its push, then its pop, as Redis's;
  ``kv.rename`` is ``rename_from`` then ``rename_to``, ``kv.copy`` is ``copy_to``; RESTORE
  (``obj.load``) is ``restore``.

Nothing here publishes or reads a store: the notifier asks the keyspace whether a key went.
"""

from __future__ import annotations

from typing import Any

from hotkv_server.engine.notify_flags import GENERIC, HASH, LIST, SET, ZSET

#: an event to publish: (class bit, event name, key)
Event = tuple[int, bytes, bytes]

#: in-place record verb -> (class, event, whether it can empty the key)
_IN_PLACE: dict[str, tuple[int, bytes, bool]] = {
    "hset": (HASH, b"hset", False),
    "hdel": (HASH, b"hdel", True),
    "lpush": (LIST, b"lpush", False),
    "rpush": (LIST, b"rpush", False),
    "lpop": (LIST, b"lpop", True),
    "rpop": (LIST, b"rpop", True),
    "lset": (LIST, b"lset", False),
    "linsert": (LIST, b"linsert", False),
    "lrem": (LIST, b"lrem", True),
    "ltrim": (LIST, b"ltrim", True),
    "sadd": (SET, b"sadd", False),
    "srem": (SET, b"srem", True),
    "zadd": (ZSET, b"zadd", False),
    "zrem": (ZSET, b"zrem", True),
    "zremrangebyrank": (ZSET, b"zremrangebyrank", True),
    "zremrangebyscore": (ZSET, b"zremrangebyscore", True),
    "zremrangebylex": (ZSET, b"zremrangebylex", True),
}

#: (record verb, command) -> the event Redis names it by instead
_BY_COMMAND: dict[tuple[str, str], bytes] = {
    ("hset", "hincrby"): b"hincrby",
    ("hset", "hincrbyfloat"): b"hincrbyfloat",
    ("srem", "spop"): b"spop",
    ("zadd", "zincrby"): b"zincr",
}

#: kv.put by command: (class, event) of the key it creates or replaces
_PUT_BY_COMMAND: dict[str, tuple[int, bytes]] = {
    "hset": (HASH, b"hset"), "hmset": (HASH, b"hset"), "hsetnx": (HASH, b"hset"),
    "hincrby": (HASH, b"hincrby"), "hincrbyfloat": (HASH, b"hincrbyfloat"),
    "lpush": (LIST, b"lpush"), "rpush": (LIST, b"rpush"),
    "rpoplpush": (LIST, b"lpush"), "brpoplpush": (LIST, b"lpush"),
    "sort": (LIST, b"sortstore"),
    "sadd": (SET, b"sadd"), "smove": (SET, b"sadd"),
    "sinterstore": (SET, b"sinterstore"), "sunionstore": (SET, b"sunionstore"),
    "sdiffstore": (SET, b"sdiffstore"),
    "zadd": (ZSET, b"zadd"), "zincrby": (ZSET, b"zincr"),
    "zunionstore": (ZSET, b"zunionstore"), "zinterstore": (ZSET, b"zinterstore"),
    "zdiffstore": (ZSET, b"zdiffstore"), "zrangestore": (ZSET, b"zrangestore"),
}

#: kv.put with no command known to name it: after the type
_PUT_BY_TYPE: dict[str, tuple[int, bytes]] = {
    "hash": (HASH, b"hset"), "list": (LIST, b"rpush"), "set": (SET, b"sadd"),
    "zset": (ZSET, b"zadd"),
}

#: the commands that move an element between lists (the side pushed to is argv[4])
_LMOVES = frozenset({"lmove", "blmove"})


_ZADD_OPTIONS = frozenset({b"NX", b"XX", b"GT", b"LT", b"CH", b"INCR"})


def _zadd_incr(name: str, argv: list[bytes]) -> bool:
    """ZADD ... INCR: read as ZADD reads its options, the words before the first score (a
    member may be called INCR: ``ZADD z 1 INCR`` adds it and notifies ``zadd``)."""
    if name != "zadd":
        return False
    for arg in argv[2:]:
        word = arg.upper()
        if word == b"INCR":
            return True
        if word not in _ZADD_OPTIONS:
            return False
    return False


def in_place(verb: str, effect: list[Any], name: str,
             argv: list[bytes]) -> tuple[list[Event], bytes | None] | None:
    """The events of an in-place record, and the key to check for ``del`` (None when the
    record cannot empty it); None for a verb that is not a data-type record."""
    if verb == "lmove":  # a rotation of one list: its push, then its pop
        key = effect[1]
        return [(LIST, b"lpush" if effect[3] else b"rpush", key),
                (LIST, b"lpop" if effect[2] else b"rpop", key)], None
    if verb == "zpop":
        return [(ZSET, b"zpopmax" if effect[3] else b"zpopmin", effect[1])], effect[1]
    found = _IN_PLACE.get(verb)
    if found is None:
        return None
    kind, event, shrinks = found
    if name:
        event = _BY_COMMAND.get((verb, name), event)
        if verb == "zadd" and _zadd_incr(name, argv):
            event = b"zincr"
    key = effect[1]
    return [(kind, event, key)], key if shrinks else None


def put(effect: list[Any], name: str, argv: list[bytes]) -> Event | None:
    """The event of ``kv.put [key, type_name, state, expires_at]`` (None: a type without
    events here, a string RESTORE is ``obj.load``)."""
    type_name = effect[2]
    found = _PUT_BY_COMMAND.get(name)
    if name in _LMOVES and len(argv) > 4:
        found = (LIST, b"lpush" if argv[4].upper() == b"LEFT" else b"rpush")
    elif found is not None and _zadd_incr(name, argv):
        found = (ZSET, b"zincr")
    if found is None or _PUT_BY_TYPE.get(type_name, found)[0] != found[0]:
        found = _PUT_BY_TYPE.get(type_name)  # no command known, or one of another type
    if found is None:
        return None
    return found[0], found[1], effect[1]


def generic(verb: str, effect: list[Any]) -> list[Event]:
    """The generic events of the records that move or copy whole keys."""
    if verb == "rename":
        return [(GENERIC, b"rename_from", effect[1]), (GENERIC, b"rename_to", effect[2])]
    if verb == "copy":
        return [(GENERIC, b"copy_to", effect[2])]
    return []


def object_events(verb: str, effect: list[Any], name: str) -> list[Event]:
    """RESTORE's ``obj.load`` (``restore``) and MIGRATE's ``obj.drop`` of its keys (``del``)."""
    if verb == "load" and "kv" in effect[2]:
        return [(GENERIC, b"restore", effect[1])]
    if verb == "drop" and name == "migrate":
        return [(GENERIC, b"del", effect[1])]
    return []
