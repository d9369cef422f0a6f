"""Commands that move or copy a whole key, whatever its type: RENAME RENAMENX COPY.

The value keeps its deadline (as in Redis). The effects are ``kv.rename`` and ``kv.copy``
(``stores/keyspace.py``): the keyspace moves or copies the value itself, so a big hash
costs the AOF one short record, not its contents.
"""

from __future__ import annotations

from typing import Any

from hotkv_server.engine import errors
from hotkv_server.engine.args import parse_int
from hotkv_server.engine.context import Context
from hotkv_server.engine.errors import CommandError
from hotkv_server.engine.registry import family, key_spec
from hotkv_server.engine.replies import OK
from hotkv_server.stores.keyspace_effects import KvCopy, KvRename

command = family(group="generic")

NO_SUCH_KEY = "ERR no such key"
SAME_OBJECT = "ERR source and destination objects are the same"


@command("rename", arity=3, flags="write", keys=(1, 2, 1),
         key_specs=(key_spec(1, "RW access delete", arg="key"), key_spec(2, "OW update", arg="newkey")))
def rename(ctx: Context, argv: list[bytes]) -> Any:
    """RENAME key newkey
    Renames a key and overwrites the destination.
    """
    src, dst = argv[1], argv[2]
    kv = ctx.db.kv
    if kv.lookup(src, ctx.now_ms) is None:
        raise CommandError(NO_SUCH_KEY)
    if src != dst:
        ctx.emit(KvRename(src, dst))
    return OK


@command("renamenx", arity=3, flags="write fast", keys=(1, 2, 1),
         key_specs=(key_spec(1, "RW access delete", arg="key"),
                   key_spec(2, "OW insert", arg="newkey")))
def renamenx(ctx: Context, argv: list[bytes]) -> Any:
    """RENAMENX key newkey
    Renames a key only when the target key name doesn't exist.
    """
    src, dst = argv[1], argv[2]
    kv = ctx.db.kv
    now = ctx.now_ms
    if kv.lookup(src, now) is None:
        raise CommandError(NO_SUCH_KEY)
    if src == dst or kv.peek(dst, now) is not None:
        return 0
    ctx.emit(KvRename(src, dst))
    return 1


@command("copy", arity=-3, flags="write denyoom", keys=(1, 2, 1),
         key_specs=(key_spec(1, "RO access", arg="source"), key_spec(2, "OW update", arg="destination")),
         complexity="O(N) worst case for collections, where N is the number of nested items. "
                    "O(1) for string values.")
def copy(ctx: Context, argv: list[bytes]) -> Any:
    """COPY source destination [DB destination-db] [REPLACE]
    Copies the value of a key to a new key.
    """
    src, dst = argv[1], argv[2]
    replace = False
    i = 3
    while i < len(argv):
        opt = argv[i].lower()
        if opt == b"replace":
            replace = True
            i += 1
        elif opt == b"db" and i + 1 < len(argv):
            db = parse_int(argv[i + 1])
            if db is None:
                raise CommandError(errors.NOT_INTEGER)
            if db != 0:  # one database, as SELECT allows
                raise CommandError(errors.DB_INDEX)
            i += 2
        else:
            raise CommandError(errors.SYNTAX)
    if src == dst:
        raise CommandError(SAME_OBJECT)
    kv = ctx.db.kv
    now = ctx.now_ms
    if kv.lookup(src, now) is None:
        return 0
    if kv.peek(dst, now) is not None and not replace:
        return 0
    ctx.emit(KvCopy(src, dst))
    return 1
