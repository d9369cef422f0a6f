"""String commands (GET SET MGET MSET INCR INCRBY DECR DECRBY STRLEN INCRBYFLOAT), as Redis 7.0.

The other ways to set and get a string (SETNX SETEX PSETEX GETEX GETDEL GETSET MSETNX)
are in commands/string_sets.py, the byte-range ones (APPEND SETRANGE GETRANGE LCS) in
commands/string_ranges.py.

Replies and error wording are Redis's own, so redis-py and redis-cli see no difference.
Every deadline is made absolute here (SET EX 10 is stored as PXAT now+10000, as Redis
rewrites it for its AOF), so the effect replays to the same state.
"""

from __future__ import annotations

from typing import Any

from hotkv_server.commands.floats import add_long_doubles, format_long_double, parse_long_double
from hotkv_server.engine import errors
from hotkv_server.engine.args import LLONG_MAX, LLONG_MIN, Args, parse_int
from hotkv_server.engine.context import Context
from hotkv_server.engine.errors import CommandError
from hotkv_server.engine.notify import KEY_MISS
from hotkv_server.engine.registry import SpecFields, family
from hotkv_server.engine.replies import OK
from hotkv_server.engine.write_options import KEEPTTL, NX, SET_TOKENS, XX, WriteOptions
from hotkv_server.stores.keyspace_effects import KvMset, KvSet

command = family(group="string")

NAN_OR_INF = "ERR increment would produce NaN or Infinity"

@command("get", arity=2, flags="readonly fast", key="RO access")
def get(ctx: Context, argv: list[bytes]) -> Any:
    """GET key
    Returns the string value of a key.
    """
    value = ctx.db.kv.get(argv[1], ctx.now_ms)
    stats = ctx.core.stats
    if value is None:
        stats.keyspace_misses += 1
        if ctx.core.notify_flags & KEY_MISS:
            ctx.core.notifier.missed(argv[1])
    else:
        stats.keyspace_hits += 1
    return value


@command("set", arity=-3, flags="write denyoom", key="RW access update variable_flags",
         key_notes="RW and ACCESS due to the optional `GET` argument")
def set_(ctx: Context, argv: list[bytes]) -> Any:
    """SET key value [NX|XX] [GET] [EX seconds|PX milliseconds|EXAT unix-time-seconds|PXAT
        unix-time-milliseconds|KEEPTTL]
    Sets the string value of a key, ignoring its type. The key is created if it doesn't exist.
    """
    key = argv[1]
    if len(argv) == 3:
        ctx.emit(KvSet(key, argv[2], None))
        return OK
    now = ctx.now_ms
    opts = WriteOptions(SET_TOKENS, redis=True).take_all(Args(argv, 3), now)
    kv = ctx.db.kv
    # Redis's order: the expire value is checked before the old value is looked at
    at = opts.redis_deadline(now, "set")
    # SET replaces a value of any type; only GET needs the old value to be a string
    get = opts.get
    old = kv.get(key, now) if get else kv.lookup(key, now)
    if get:
        stats = ctx.core.stats
        if old is None:
            stats.keyspace_misses += 1
            if ctx.core.notify_flags & KEY_MISS:
                ctx.core.notifier.missed(key)
        else:
            stats.keyspace_hits += 1
    condition = opts.condition
    if (condition == NX and old is not None) or (condition == XX and old is None):
        return old if get else None
    if opts.expiry == KEEPTTL and old is not None:
        at = kv.expiry(key)
    ctx.emit(KvSet(key, argv[2], at))
    return old if get else OK


@command("mget", arity=-2, flags="readonly fast", keys=(1, -1, 1), key_flags="RO access",
         tips="request_policy:multi_shard",
         complexity="O(N) where N is the number of keys to retrieve.")
def mget(ctx: Context, argv: list[bytes]) -> Any:
    """MGET key [key ...]
    Atomically returns the string values of one or more keys.
    """
    kv_lookup = ctx.db.kv.lookup
    now = ctx.now_ms
    values = [kv_lookup(key, now) for key in argv[1:]]
    misses = values.count(None)
    stats = ctx.core.stats
    stats.keyspace_misses += misses
    if misses and ctx.core.notify_flags & KEY_MISS:
        for key, value in zip(argv[1:], values, strict=True):
            if value is None:
                ctx.core.notifier.missed(key)
    stats.keyspace_hits += len(values) - misses
    # a key of another type answers nil (it still counted as a hit, as in Redis)
    return [value if value.__class__ is bytes else None for value in values]


@command("mset", arity=-3, flags="write denyoom", keys=(1, -1, 2), key_flags="OW update",
         tips="request_policy:multi_shard response_policy:all_succeeded",
         complexity="O(N) where N is the number of keys to set.")
def mset(ctx: Context, argv: list[bytes]) -> Any:
    """MSET key value [key value ...]
    Atomically creates or modifies the string values of one or more keys.
    """
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


#: what INCR and DECR share
_STEP = SpecFields(arity=2, flags="write denyoom fast", key="RW access update")


@command("incr", _STEP)
def incr(ctx: Context, argv: list[bytes]) -> Any:
    """INCR key
    Increments the integer value of a key by one. Uses 0 as initial value if the key doesn't exist.
    """
    return _incr_by(ctx, argv[1], 1)


@command("decr", _STEP)
def decr(ctx: Context, argv: list[bytes]) -> Any:
    """DECR key
    Decrements the integer value of a key by one. Uses 0 as initial value if the key doesn't exist.
    """
    return _incr_by(ctx, argv[1], -1)


#: what INCRBY and DECRBY share
_STEP_BY = SpecFields(arity=3, flags="write denyoom fast", key="RW access update")


@command("incrby", _STEP_BY)
def incrby(ctx: Context, argv: list[bytes]) -> Any:
    """INCRBY key increment
    Increments the integer value of a key by a number. Uses 0 as initial value if the key doesn't
    exist.
    """
    return _incr_by(ctx, argv[1], _increment_arg(argv[2]))


@command("decrby", _STEP_BY)
def decrby(ctx: Context, argv: list[bytes]) -> Any:
    """DECRBY key decrement
    Decrements a number from the integer value of a key. Uses 0 as initial value if the key doesn't
    exist.
    """
    decrement = _increment_arg(argv[2])
    if decrement == LLONG_MIN:  # its negation does not fit in 64 bits
        raise CommandError(errors.DECR_OVERFLOW)
    return _incr_by(ctx, argv[1], -decrement)


@command("strlen", arity=2, flags="readonly fast", key="RO")
def strlen(ctx: Context, argv: list[bytes]) -> Any:
    """STRLEN key
    Returns the length of a string value.
    """
    value = ctx.db.kv.get(argv[1], ctx.now_ms)
    return 0 if value is None else len(value)


@command("incrbyfloat", arity=3, flags="write denyoom fast", key="RW access update")
def incrbyfloat(ctx: Context, argv: list[bytes]) -> Any:
    """INCRBYFLOAT key increment
    Increment the floating point value of a key by a number. Uses 0 as initial value if the key
    doesn't exist.
    """
    key = argv[1]
    kv = ctx.db.kv
    old = kv.get(key, ctx.now_ms)
    at = None
    current = parse_long_double(b"0")
    if old is not None:
        current = parse_long_double(old)
        at = kv.expiry(key)
    delta = parse_long_double(argv[2])
    if current is None or delta is None:
        raise CommandError(errors.NOT_FLOAT)
    total = add_long_doubles(current, delta)
    if total is None:
        raise CommandError(NAN_OR_INF)
    text = format_long_double(total)
    # the effect holds the result (Redis propagates a SET of it with KEEPTTL)
    ctx.emit(KvSet(key, text, at))
    return text
