"""Generic key commands over the whole keyspace, as Redis 7.0 answers them.

DEL UNLINK EXISTS TYPE KEYS SCAN EXPIRE PEXPIRE EXPIREAT PEXPIREAT TTL PTTL EXPIRETIME
PEXPIRETIME PERSIST DBSIZE RANDOMKEY, over the whole keyspace (strings and every value type). The memory stores
have their own commands (``AMEM.SCAN``, ``AMEM.CONV.DEL`` ...). Deadlines are made absolute
from the command's clock snapshot ``ctx.now_ms``; a deadline already passed deletes the key
(the effect is a ``kv.del``, as Redis propagates a DEL). For a user confined by ACL key
patterns, KEYS, SCAN, RANDOMKEY and DBSIZE see only the keys it may read (a hotkv
extension, ``tenancy.py``).
"""

from __future__ import annotations

import random
from typing import Any

from hotkv_server.commands.glob import glob_match
from hotkv_server.commands.scanning import scan_options_with_type
from hotkv_server.commands.tenancy import readable_filter, readable_ids
from hotkv_server.engine import errors
from hotkv_server.engine.args import parse_int
from hotkv_server.engine.context import Context
from hotkv_server.engine.errors import CommandError
from hotkv_server.engine.registry import SpecFields, alias, family
from hotkv_server.engine.replies import Simple
from hotkv_server.stores.keyspace_effects import KvDel, KvExpire, KvPersist

command = family(group="generic")

LLONG_MAX = 2**63 - 1
ULONG_MAX = 2**64 - 1

class _TypeWords(dict[str, Simple]):
    """TYPE's status replies, one Simple per type name (made on first use)."""

    def __missing__(self, name: str) -> Simple:
        word = self[name] = Simple(name)
        return word


_TYPE_WORDS = _TypeWords()
_SPACES = b" \t\n\v\f\r"


# --- removal and existence ------------------------------------------------------------
def _delete(ctx: Context, argv: list[bytes]) -> int:
    kv = ctx.db.kv
    now = ctx.now_ms
    if len(argv) == 2:
        live = [argv[1]] if kv.peek(argv[1], now) is not None else []
    else:
        # a key named twice is deleted once, as Redis counts it
        live = [key for key in dict.fromkeys(argv[1:]) if kv.peek(key, now) is not None]
    if not live:
        return 0
    removed: int = ctx.emit(KvDel(live))
    return removed


#: what DEL, UNLINK and EXISTS share
_KEYS = SpecFields(arity=-2, keys=(1, -1, 1),
                   tips="request_policy:multi_shard response_policy:agg_sum")


@command("del", _KEYS, flags="write", key_flags="RM delete",
         complexity="O(N) where N is the number of keys that will be removed.")
def del_(ctx: Context, argv: list[bytes]) -> Any:
    """DEL key [key ...]
    Deletes one or more keys.
    """
    return _delete(ctx, argv)


@command("unlink", _KEYS, flags="write fast", key_flags="RM delete",
         complexity="O(1) for each key removed.")
def unlink(ctx: Context, argv: list[bytes]) -> Any:
    """UNLINK key [key ...]
    Asynchronously deletes one or more keys.
    """
    # values are plain bytes, so freeing them is never slow enough to hand to a thread
    return _delete(ctx, argv)


@command("exists", _KEYS, flags="readonly fast", key_flags="RO",
         complexity="O(N) where N is the number of keys to check.")
def exists(ctx: Context, argv: list[bytes]) -> Any:
    """EXISTS key [key ...]
    Determines whether one or more keys exist.
    """
    kv_peek = ctx.db.kv.peek
    now = ctx.now_ms
    # a key named twice counts twice, as in Redis
    return sum(1 for key in argv[1:] if kv_peek(key, now) is not None)


@command("type", arity=2, flags="readonly fast", key="RO")
def type_(ctx: Context, argv: list[bytes]) -> Any:
    """TYPE key
    Determines the type of value stored at a key.
    """
    return _TYPE_WORDS[ctx.db.kv.type_name(argv[1], ctx.now_ms)]


@command("dbsize", arity=1, flags="readonly fast", group="server", acl="@keyspace",
         tips="request_policy:all_shards response_policy:agg_sum")
def dbsize(ctx: Context, argv: list[bytes]) -> Any:
    """DBSIZE
    Returns the number of keys in the string cache.
    """
    readable = readable_filter(ctx)
    if readable is not None:  # a tenant counts only the keys it may read (tenancy.py)
        return sum(1 for key in ctx.db.kv.ids(ctx.now_ms) if readable(key))
    # as in Redis, keys past their deadline count until expiry (lazy or active) removes them
    return len(ctx.db.kv)


@command("randomkey", arity=1, flags="readonly",
         tips="request_policy:all_shards nondeterministic_output",
         complexity="O(N): the key is picked by position in the key table.")
def randomkey(ctx: Context, argv: list[bytes]) -> Any:
    """RANDOMKEY
    Returns a random key name from the string cache.
    """
    kv = ctx.db.kv
    now = ctx.now_ms
    readable = readable_filter(ctx)
    if readable is not None:  # a tenant picks among the keys it may read (tenancy.py)
        mine = [key for key in kv.ids(now) if readable(key)]
        return random.choice(mine) if mine else None
    for _ in range(100):
        n = len(kv)
        if n == 0:
            return None
        key = kv.key_at(random.randrange(n))
        if key is not None and kv.peek(key, now) is not None:
            return key
    # mostly expired keys: pick among the live ones (this also removes the expired)
    live = kv.ids(now)
    return random.choice(live) if live else None


# --- listing ----------------------------------------------------------------------------
@command("keys", arity=2, flags="readonly", acl="@dangerous",
         tips="request_policy:all_shards nondeterministic_output_order",
         complexity="O(N) with N being the number of keys in the string cache.")
def keys(ctx: Context, argv: list[bytes]) -> Any:
    """KEYS pattern
    Returns all key names that match a pattern.
    """
    pattern = argv[1]
    names = readable_ids(ctx, ctx.db.kv.ids(ctx.now_ms))  # a tenant's keys only (tenancy.py)
    if pattern == b"*":
        return names
    return [name for name in names if glob_match(pattern, name)]


def parse_cursor(raw: bytes) -> int:
    """A SCAN cursor as Redis reads it (C ``strtoul``: a sign is allowed, ``-1`` wraps)."""
    if raw[:1] and raw[0] in _SPACES:
        raise CommandError(errors.INVALID_CURSOR)
    digits = raw
    negative = False
    if digits[:1] in (b"+", b"-"):
        negative = digits[:1] == b"-"
        digits = digits[1:]
        if not digits:
            raise CommandError(errors.INVALID_CURSOR)
    if not digits:
        return 0  # strtoul("") is 0 and leaves nothing unparsed
    if not digits.isdigit():
        raise CommandError(errors.INVALID_CURSOR)
    value = int(digits)
    if value > ULONG_MAX:
        raise CommandError(errors.INVALID_CURSOR)
    return (-value) & ULONG_MAX if negative else value


@command("scan", arity=-2, flags="readonly", tips="nondeterministic_output request_policy:special",
         complexity="O(1) for every call. O(N) for a complete iteration.")
def scan(ctx: Context, argv: list[bytes]) -> Any:
    """SCAN cursor [MATCH pattern] [COUNT count] [TYPE type]
    Iterates over the key names in the string cache.
    """
    cursor = parse_cursor(argv[1])
    pattern, count, type_name = scan_options_with_type(argv, 2)
    # an unknown type matches nothing, as in Redis 7.0; a tenant walks only the keys it may
    # read (tenancy.py)
    shown_type = type_name.decode("utf-8", "replace") if type_name is not None else None
    next_cursor, found = ctx.db.kv.scan(cursor, count, ctx.now_ms, shown_type, readable_filter(ctx))
    if pattern is not None:
        found = [name for name in found if glob_match(pattern, name)]
    return [b"%d" % next_cursor, found]


# --- expiry -----------------------------------------------------------------------------
_EXP_NX = 1
_EXP_XX = 2
_EXP_GT = 4
_EXP_LT = 8
_EXPIRE_OPTIONS = {b"nx": _EXP_NX, b"xx": _EXP_XX, b"gt": _EXP_GT, b"lt": _EXP_LT}


#: EXPIRE's names: whether the time is relative to now, whether it is in seconds
_EXPIRE_UNITS = {b"expire": (True, True), b"pexpire": (True, False),
                 b"expireat": (False, True), b"pexpireat": (False, False)}


@command("expire", arity=-3, flags="write fast", key="RW update")
def expire(ctx: Context, argv: list[bytes]) -> Any:
    """EXPIRE key seconds [NX|XX|GT|LT]
    Sets the expiration time of a key in seconds.

    PEXPIRE key milliseconds [NX|XX|GT|LT]
    Sets the expiration time of a key in milliseconds.

    EXPIREAT key unix-time-seconds [NX|XX|GT|LT]
    Sets the expiration time of a key to a Unix timestamp.

    PEXPIREAT key unix-time-milliseconds [NX|XX|GT|LT]
    Sets the expiration time of a key to a Unix milliseconds timestamp.

    The four are one handler, told apart by their name: the same checks, in the same order,
    as Redis 7.0.
    """
    command_name = argv[0].lower()
    relative, seconds = _EXPIRE_UNITS[command_name]
    flags = 0
    for raw in argv[3:]:
        bit = _EXPIRE_OPTIONS.get(raw.lower())
        if bit is None:
            raise CommandError(errors.unsupported_option(raw))
        flags |= bit
    if flags & _EXP_NX and flags & (_EXP_XX | _EXP_GT | _EXP_LT):
        raise CommandError(errors.EXPIRE_NX_CONFLICT)
    if flags & _EXP_GT and flags & _EXP_LT:
        raise CommandError(errors.EXPIRE_GT_LT_CONFLICT)
    when = parse_int(argv[2])
    if when is None:
        raise CommandError(errors.NOT_INTEGER)
    name = command_name.decode()
    if seconds:
        # C's LLONG_MIN / 1000 truncates toward zero
        if when > LLONG_MAX // 1000 or when < -(LLONG_MAX // 1000):
            raise CommandError(errors.invalid_expire(name))
        when *= 1000
    now = ctx.now_ms
    base = now if relative else 0
    if when > LLONG_MAX - base:
        raise CommandError(errors.invalid_expire(name))
    when += base
    key = argv[1]
    kv = ctx.db.kv
    if kv.lookup(key, now) is None:
        return 0
    if flags:
        current = kv.expiry(key)
        if flags & _EXP_NX and current is not None:
            return 0
        if flags & _EXP_XX and current is None:
            return 0
        # no deadline counts as an infinite one
        if flags & _EXP_GT and (current is None or when <= current):
            return 0
        if flags & _EXP_LT and current is not None and when >= current:
            return 0
    if when <= now:
        ctx.emit(KvDel([key]))
    else:
        ctx.emit(KvExpire(key, when))
    return 1


alias("pexpire", of="expire")
alias("expireat", of="expire")
alias("pexpireat", of="expire")


#: what TTL, PTTL, EXPIRETIME and PEXPIRETIME share
_TTL = SpecFields(arity=2, flags="readonly fast", key="RO access")


@command("ttl", _TTL, tips="nondeterministic_output")
def ttl(ctx: Context, argv: list[bytes]) -> Any:
    """TTL key
    Returns the expiration time in seconds of a key.
    """
    ms = ctx.db.kv.ttl_ms(argv[1], ctx.now_ms)
    return ms if ms < 0 else (ms + 500) // 1000


@command("pttl", _TTL, tips="nondeterministic_output")
def pttl(ctx: Context, argv: list[bytes]) -> Any:
    """PTTL key
    Returns the expiration time in milliseconds of a key.
    """
    return ctx.db.kv.ttl_ms(argv[1], ctx.now_ms)


def _deadline(ctx: Context, key: bytes) -> int:
    """The key's deadline in ms, -1 without one, -2 when missing (EXPIRETIME's codes)."""
    kv = ctx.db.kv
    if kv.peek(key, ctx.now_ms) is None:
        return -2
    at = kv.expiry(key)
    return -1 if at is None else at


@command("expiretime", _TTL)
def expiretime(ctx: Context, argv: list[bytes]) -> Any:
    """EXPIRETIME key
    Returns the expiration time of a key as a Unix timestamp.
    """
    at = _deadline(ctx, argv[1])
    return at if at < 0 else at // 1000


@command("pexpiretime", _TTL)
def pexpiretime(ctx: Context, argv: list[bytes]) -> Any:
    """PEXPIRETIME key
    Returns the expiration time of a key as a Unix milliseconds timestamp.
    """
    return _deadline(ctx, argv[1])


@command("persist", arity=2, flags="write fast", key="RW update")
def persist(ctx: Context, argv: list[bytes]) -> Any:
    """PERSIST key
    Removes the expiration time of a key.
    """
    kv = ctx.db.kv
    key = argv[1]
    if kv.lookup(key, ctx.now_ms) is None or kv.expiry(key) is None:
        return 0
    persisted: int = ctx.emit(KvPersist(key))
    return persisted
