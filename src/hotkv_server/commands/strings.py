"""String commands of the cache (GET SET MGET MSET INCR INCRBY DECR DECRBY STRLEN), as Redis 7.0.

Replies and error wording are Redis's own, so redis-py and redis-cli see no difference.
Every deadline is made absolute here (SET EX 10 is stored as PXAT now+10000, as Redis
rewrites it for its AOF), so the effect replays to the same state.
"""

from __future__ import annotations

from typing import Any

from hotkv_server.engine import errors
from hotkv_server.engine.args import parse_int
from hotkv_server.engine.context import Context
from hotkv_server.engine.errors import CommandError
from hotkv_server.engine.registry import command
from hotkv_server.engine.replies import OK
from hotkv_server.stores.keyspace_effects import KvMset, KvSet

LLONG_MAX = 2**63 - 1
LLONG_MIN = -(2**63)

# SET option bits
_NX = 1
_XX = 2
_GET = 4
_KEEPTTL = 8
_EX = 16
_PX = 32
_EXAT = 64
_PXAT = 128
_ANY_EXPIRE = _EX | _PX | _EXAT | _PXAT
_EXPIRE_TOKENS = {b"EX": _EX, b"PX": _PX, b"EXAT": _EXAT, b"PXAT": _PXAT}


@command("get", arity=2, flags="readonly fast", keys=(1, 1, 1), group="string",
         key_flags="RO access",
         summary="Returns the string value of a key.", syntax="key")
def get(ctx: Context, argv: list[bytes]) -> Any:
    """GET key"""
    value = ctx.db.kv.get(argv[1], ctx.now_ms)
    stats = ctx.core.stats
    if value is None:
        stats.keyspace_misses += 1
    else:
        stats.keyspace_hits += 1
    return value


@command("set", arity=-3, flags="write denyoom", keys=(1, 1, 1), group="string",
         key_flags="RW access update variable_flags",
         key_notes="RW and ACCESS due to the optional `GET` argument",
         summary="Sets the string value of a key, ignoring its type. The key is created if it doesn't exist.",
         syntax="key value [NX|XX] [GET] [EX seconds|PX milliseconds|EXAT unix-time-seconds|"
                "PXAT unix-time-milliseconds|KEEPTTL]")
def set_(ctx: Context, argv: list[bytes]) -> Any:
    """SET key value [NX|XX] [GET] [EX seconds|PX milliseconds|EXAT unix-time-seconds|PXAT unix-time-milliseconds|KEEPTTL]"""
    key = argv[1]
    if len(argv) == 3:
        ctx.emit(KvSet(key, argv[2], None))
        return OK
    flags, expire_raw = _parse_set_options(argv)
    kv = ctx.db.kv
    now = ctx.now_ms
    # Redis's order: the expire value is checked before the old value is looked at
    at = _set_deadline(expire_raw, flags, now) if expire_raw is not None else None
    old = kv.get(key, now)
    if flags & _GET:
        stats = ctx.core.stats
        if old is None:
            stats.keyspace_misses += 1
        else:
            stats.keyspace_hits += 1
    if (flags & _NX and old is not None) or (flags & _XX and old is None):
        return old if flags & _GET else None
    if flags & _KEEPTTL and old is not None:
        at = kv.expiry(key)
    ctx.emit(KvSet(key, argv[2], at))
    return old if flags & _GET else OK


def _parse_set_options(argv: list[bytes]) -> tuple[int, bytes | None]:
    """SET's options as Redis's parser takes them: the flag bits and the raw expire value.

    A repeated option is fine (``EX 1 EX 2``: the last wins); NX with XX, or two different
    expire options, or an expire option with KEEPTTL, is ``ERR syntax error``.
    """
    flags = 0
    expire_raw: bytes | None = None
    i = 3
    n = len(argv)
    while i < n:
        opt = argv[i].upper()
        bit = _EXPIRE_TOKENS.get(opt)
        if bit is not None:
            if i + 1 >= n or flags & (_KEEPTTL | (_ANY_EXPIRE & ~bit)):
                raise CommandError(errors.SYNTAX)
            flags |= bit
            expire_raw = argv[i + 1]
            i += 2
            continue
        if opt == b"NX" and not flags & _XX:
            flags |= _NX
        elif opt == b"XX" and not flags & _NX:
            flags |= _XX
        elif opt == b"GET":
            flags |= _GET
        elif opt == b"KEEPTTL" and not flags & _ANY_EXPIRE:
            flags |= _KEEPTTL
        else:
            raise CommandError(errors.SYNTAX)
        i += 1
    return flags, expire_raw


def _set_deadline(raw: bytes, flags: int, now_ms: int) -> int:
    """The absolute deadline (ms) of SET's EX/PX/EXAT/PXAT value, with Redis's checks."""
    value = parse_int(raw)
    if value is None:
        raise CommandError(errors.NOT_INTEGER)
    seconds = flags & (_EX | _EXAT)
    if value <= 0 or (seconds and value > LLONG_MAX // 1000):
        raise CommandError(errors.invalid_expire("set"))
    if seconds:
        value *= 1000
    if flags & (_EX | _PX):
        value += now_ms
        if value > LLONG_MAX:  # Redis sees the 64-bit sum wrap below zero
            raise CommandError(errors.invalid_expire("set"))
    return value


@command("mget", arity=-2, flags="readonly fast", keys=(1, -1, 1), group="string",
         key_flags="RO access", tips="request_policy:multi_shard",
         summary="Atomically returns the string values of one or more keys.",
         syntax="key [key ...]", complexity="O(N) where N is the number of keys to retrieve.")
def mget(ctx: Context, argv: list[bytes]) -> Any:
    """MGET key [key ...]"""
    kv_get = ctx.db.kv.get
    now = ctx.now_ms
    values = [kv_get(key, now) for key in argv[1:]]
    misses = values.count(None)
    stats = ctx.core.stats
    stats.keyspace_misses += misses
    stats.keyspace_hits += len(values) - misses
    return values


@command("mset", arity=-3, flags="write denyoom", keys=(1, -1, 2), group="string",
         key_flags="OW update", tips="request_policy:multi_shard response_policy:all_succeeded",
         summary="Atomically creates or modifies the string values of one or more keys.",
         syntax="key value [key value ...]",
         complexity="O(N) where N is the number of keys to set.")
def mset(ctx: Context, argv: list[bytes]) -> Any:
    """MSET key value [key value ...]"""
    if len(argv) % 2 == 0:
        raise CommandError(errors.wrong_arity("mset"))
    ctx.emit(KvMset(argv[1:]))
    return OK


def _incr_by(ctx: Context, key: bytes, delta: int) -> int:
    kv = ctx.db.kv
    old = kv.get(key, ctx.now_ms)
    if old is None:
        current = 0
        at = None
    else:
        parsed = parse_int(old)
        if parsed is None:
            raise CommandError(errors.NOT_INTEGER)
        current = parsed
        at = kv.expiry(key)  # INCR keeps the key's TTL, as Redis does
    new = current + delta
    if new > LLONG_MAX or new < LLONG_MIN:
        raise CommandError(errors.INCR_OVERFLOW)
    ctx.emit(KvSet(key, b"%d" % new, at))
    return new


def _increment_arg(raw: bytes) -> int:
    value = parse_int(raw)
    if value is None:
        raise CommandError(errors.NOT_INTEGER)
    return value


@command("incr", arity=2, flags="write denyoom fast", keys=(1, 1, 1), group="string",
         key_flags="RW access update",
         summary="Increments the integer value of a key by one. Uses 0 as initial value if the key doesn't exist.",
         syntax="key")
def incr(ctx: Context, argv: list[bytes]) -> Any:
    """INCR key"""
    return _incr_by(ctx, argv[1], 1)


@command("decr", arity=2, flags="write denyoom fast", keys=(1, 1, 1), group="string",
         key_flags="RW access update",
         summary="Decrements the integer value of a key by one. Uses 0 as initial value if the key doesn't exist.",
         syntax="key")
def decr(ctx: Context, argv: list[bytes]) -> Any:
    """DECR key"""
    return _incr_by(ctx, argv[1], -1)


@command("incrby", arity=3, flags="write denyoom fast", keys=(1, 1, 1), group="string",
         key_flags="RW access update",
         summary="Increments the integer value of a key by a number. Uses 0 as initial value if the key doesn't exist.",
         syntax="key increment")
def incrby(ctx: Context, argv: list[bytes]) -> Any:
    """INCRBY key increment"""
    return _incr_by(ctx, argv[1], _increment_arg(argv[2]))


@command("decrby", arity=3, flags="write denyoom fast", keys=(1, 1, 1), group="string",
         key_flags="RW access update",
         summary="Decrements a number from the integer value of a key. Uses 0 as initial value if the key doesn't exist.",
         syntax="key decrement")
def decrby(ctx: Context, argv: list[bytes]) -> Any:
    """DECRBY key decrement"""
    decrement = _increment_arg(argv[2])
    if decrement == LLONG_MIN:  # its negation does not fit in 64 bits
        raise CommandError(errors.DECR_OVERFLOW)
    return _incr_by(ctx, argv[1], -decrement)


@command("strlen", arity=2, flags="readonly fast", keys=(1, 1, 1), group="string",
         key_flags="RO",
         summary="Returns the length of a string value.", syntax="key")
def strlen(ctx: Context, argv: list[bytes]) -> Any:
    """STRLEN key"""
    value = ctx.db.kv.get(argv[1], ctx.now_ms)
    return 0 if value is None else len(value)
