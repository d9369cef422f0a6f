"""More ways to set and get a string, as Redis 7.0: SETNX SETEX PSETEX GETEX GETDEL GETSET
MSETNX.

Each write is the same ``kv.set`` / ``kv.mset`` / ``kv.del`` / ``kv.expire`` /
``kv.persist`` effect SET, MSET, DEL and EXPIRE make, with the deadline made absolute here.
"""

from __future__ import annotations

from typing import Any

from hotkv_server.commands.typed import counted
from hotkv_server.engine import errors
from hotkv_server.engine.args import Args
from hotkv_server.engine.context import Context
from hotkv_server.engine.errors import CommandError
from hotkv_server.engine.registry import SpecFields, family
from hotkv_server.engine.replies import OK
from hotkv_server.engine.write_options import GETEX_TOKENS, PERSIST, WriteOptions, redis_deadline
from hotkv_server.stores.keyspace_effects import KvDel, KvExpire, KvMset, KvPersist, KvSet

command = family(group="string")


@command("setnx", arity=3, flags="write denyoom fast", key="OW insert")
def setnx(ctx: Context, argv: list[bytes]) -> Any:
    """SETNX key value
    Set the string value of a key only when the key doesn't exist.
    """
    if ctx.db.kv.lookup(argv[1], ctx.now_ms) is not None:
        return 0
    ctx.emit(KvSet(argv[1], argv[2], None))
    return 1


def _setex(ctx: Context, argv: list[bytes], option: bytes) -> Any:
    at = redis_deadline(argv[2], option, ctx.now_ms, argv[0].lower().decode())
    ctx.emit(KvSet(argv[1], argv[3], at))
    return OK


#: what SETEX and PSETEX share
_SETEX = SpecFields(arity=4, flags="write denyoom", key="OW update")


@command("setex", _SETEX)
def setex(ctx: Context, argv: list[bytes]) -> Any:
    """SETEX key seconds value
    Sets the string value and expiration time of a key. Creates the key if it doesn't exist.
    """
    return _setex(ctx, argv, b"EX")


@command("psetex", _SETEX)
def psetex(ctx: Context, argv: list[bytes]) -> Any:
    """PSETEX key milliseconds value
    Sets both string value and expiration time in milliseconds of a key. The key is created if it
    doesn't exist.
    """
    return _setex(ctx, argv, b"PX")


@command("getex", arity=-2, flags="write fast", key="RW access update",
         key_notes="RW and UPDATE because it changes the TTL")
def getex(ctx: Context, argv: list[bytes]) -> Any:
    """GETEX key [EX seconds|PX milliseconds|EXAT unix-time-seconds|PXAT
        unix-time-milliseconds|PERSIST]
    Returns the string value of a key after setting its expiration time.
    """
    opts = WriteOptions(GETEX_TOKENS, redis=True).take_all(Args(argv, 2), ctx.now_ms)
    key = argv[1]
    kv = ctx.db.kv
    now = ctx.now_ms
    value = counted(ctx, kv.get(key, now))
    if value is None:
        return None
    # as in Redis, the expire value is checked only once the key is found
    at = opts.redis_deadline(now, "getex")
    if at is not None:
        if at <= now:
            ctx.emit(KvDel([key]))
        else:
            ctx.emit(KvExpire(key, at))
    elif opts.expiry == PERSIST and kv.expiry(key) is not None:
        ctx.emit(KvPersist(key))
    return value


@command("getdel", arity=2, flags="write fast", key="RW access delete")
def getdel(ctx: Context, argv: list[bytes]) -> Any:
    """GETDEL key
    Returns the string value of a key after deleting the key.
    """
    key = argv[1]
    value = counted(ctx, ctx.db.kv.get(key, ctx.now_ms))
    if value is not None:
        ctx.emit(KvDel([key]))
    return value


@command("getset", arity=3, flags="write denyoom fast", key="RW access update")
def getset(ctx: Context, argv: list[bytes]) -> Any:
    """GETSET key value
    Returns the previous string value of a key after setting it to a new value.
    """
    old = counted(ctx, ctx.db.kv.get(argv[1], ctx.now_ms))
    ctx.emit(KvSet(argv[1], argv[2], None))
    return old


@command("msetnx", arity=-3, flags="write denyoom", keys=(1, -1, 2), key_flags="OW insert",
         tips="request_policy:multi_shard response_policy:agg_min",
         complexity="O(N) where N is the number of keys to set.")
def msetnx(ctx: Context, argv: list[bytes]) -> Any:
    """MSETNX key value [key value ...]
    Atomically modifies the string values of one or more keys only when all keys don't exist.
    """
    if len(argv) % 2 == 0:
        raise CommandError(errors.wrong_arity("msetnx"))
    kv = ctx.db.kv
    now = ctx.now_ms
    if any(kv.lookup(key, now) is not None for key in argv[1::2]):
        return 0
    ctx.emit(KvMset(argv[1:]))
    return 1
