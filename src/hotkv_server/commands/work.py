"""AMEM.WORK.*: working memory, a flat key/value scratchpad per session.

Each key may have its own TTL, and the whole scratchpad a deadline (EXPIRE); a key's
effective TTL is the earlier of the two. SET follows Redis SET: without TTL/PX/KEEPTTL an
earlier TTL goes away. MERGE computes the new value from the current one here, in the
handler, and the effect stores the result, so replay never merges twice.
EXPIRE with a zero or negative time deletes the scratchpad at once, as Redis EXPIRE does.

In the HotKV dialect a scratchpad needs no creating: SET makes it on first use. SET's TTL
and PXAT (an absolute Unix time in ms), GET, DEL, CLEAR and LIST are the dialect; the rest
(PX, KEEPTTL, NX/XX, MERGE, DEFAULT, MGET, GETALL ...) are hotkv extensions.
"""

from __future__ import annotations

from typing import Any

from hotkv_server.engine import errors
from hotkv_server.engine.args import MAX_ID_LEN, Args
from hotkv_server.engine.context import Context
from hotkv_server.engine.errors import CommandError
from hotkv_server.engine.registry import family
from hotkv_server.engine.replies import OK
from hotkv_server.engine.write_options import AMEM_TTL_TOKENS, KEEPTTL, NX, XX, WriteOptions
from hotkv_server.stores.work import MERGE_MODES, MergeError, merge
from hotkv_server.stores.work_effects import WorkClear, WorkDel, WorkExpire, WorkSet

command = family(group="work")

_SET_OPTIONS = "TTL, PX, PXAT, KEEPTTL, NX, XX or MERGE"
_SET_TOKENS = AMEM_TTL_TOKENS | {KEEPTTL, NX, XX}
_MAX_MS = 2**63 - 1


@command("amem.work.set", arity=-4, flags="write denyoom", key="RW access update variable_flags",
         key_notes="ACCESS due to the optional `MERGE` argument (not REPLACE), whose reply is the merged value",
         complexity="O(1), O(N) for MERGE APPEND with N the array's size", dialect=True,
         extensions="PX KEEPTTL NX XX MERGE")
def work_set(ctx: Context, argv: list[bytes]) -> Any:
    """AMEM.WORK.SET session key value [TTL s|PX ms|PXAT unix-time-ms|KEEPTTL] [NX|XX] [MERGE
        REPLACE|APPEND|INCR|MAX|MIN]
    Sets (or merges into) a key of a session's scratchpad.
    """
    mode = b"REPLACE"
    if len(argv) == 4 and 0 < len(argv[1]) <= MAX_ID_LEN and 0 < len(argv[2]) <= MAX_ID_LEN:
        _, session, key, value = argv  # the plain form: nothing more to parse
        opts: WriteOptions | None = None
    else:
        opts = WriteOptions(_SET_TOKENS)
        args = Args(argv, 1)
        session = args.ident("session")
        key = args.ident("key")
        value = args.text("value")
        while args:
            raw = args.next("option")
            opt = raw.upper()
            if opt == b"MERGE":
                mode = args.choice("MERGE", MERGE_MODES)
            elif not opts.take(opt, args, ctx.now_ms):
                raise CommandError(errors.bad_argument("option", _SET_OPTIONS, raw))

    store = ctx.db.work
    now = ctx.now_ms
    condition = opts.condition if opts is not None else None
    if condition is not None or mode != b"REPLACE":  # only these read the current value
        current = store.get(session, key, now)
        if (condition == b"NX" and current is not None) or (condition == b"XX" and current is None):
            return None
        if mode != b"REPLACE":
            try:
                value = merge(mode, key, current, value)
            except MergeError as exc:
                raise CommandError(str(exc)) from None
    if opts is None:
        expires_at: int | None = None
    elif opts.expiry == KEEPTTL:
        expires_at = store.key_deadline(session, key, now)
    else:
        expires_at = opts.deadline(now)
    if store.present_but_expired(session, now):
        # the old scratchpad is gone for readers; do not let its other keys come back
        ctx.emit(WorkClear(session))
    ctx.emit(WorkSet(session, key, value, expires_at))
    return OK if mode == b"REPLACE" else value


@command("amem.work.get", arity=-3, flags="readonly fast", key="RO access", dialect=True,
         extensions="DEFAULT")
def work_get(ctx: Context, argv: list[bytes]) -> bytes | None:
    """AMEM.WORK.GET session key [DEFAULT value]
    Returns a key's value, else the DEFAULT value, else null.
    """
    if len(argv) == 3:
        session, key = argv[1], argv[2]
        if 0 < len(session) <= MAX_ID_LEN and 0 < len(key) <= MAX_ID_LEN:
            return ctx.db.work.get(session, key, ctx.now_ms)
    args = Args(argv, 1)
    session = args.ident("session")
    key = args.ident("key")
    default = args.only_option(b"DEFAULT")
    value = ctx.db.work.get(session, key, ctx.now_ms)
    return default if value is None else value


@command("amem.work.mget", arity=-3, flags="readonly fast", key="RO access",
         complexity="O(N) with N the keys named")
def work_mget(ctx: Context, argv: list[bytes]) -> list[bytes | None]:
    """AMEM.WORK.MGET session key [key ...]
    Returns the values of several keys of a session (null for missing ones).
    """
    args = Args(argv, 1)
    session = args.ident("session")
    keys = [args.ident("key") for _ in range(args.remaining())]
    store = ctx.db.work
    now = ctx.now_ms
    return [store.get(session, key, now) for key in keys]


@command("amem.work.del", arity=-3, flags="write", key="RW delete",
         complexity="O(N) with N the keys named", dialect=True)
def work_del(ctx: Context, argv: list[bytes]) -> int:
    """AMEM.WORK.DEL session key [key ...]
    Deletes keys of a session's scratchpad and returns how many existed.
    """
    args = Args(argv, 1)
    session = args.ident("session")
    keys = [args.ident("key") for _ in range(args.remaining())]
    store = ctx.db.work
    now = ctx.now_ms
    live = [k for k in dict.fromkeys(keys) if store.get(session, k, now) is not None]
    if not live:
        return 0
    return int(ctx.emit(WorkDel(session, live)))


@command("amem.work.getall", arity=2, flags="readonly", key="RO access",
         complexity="O(N) with N the keys held")
def work_getall(ctx: Context, argv: list[bytes]) -> dict[bytes, bytes]:
    """AMEM.WORK.GETALL session
    Returns every key and value of a session's scratchpad.
    """
    session = Args(argv, 1).ident("session")
    return ctx.db.work.items(session, ctx.now_ms)


@command("amem.work.len", arity=2, flags="readonly fast", key="RO")
def work_len(ctx: Context, argv: list[bytes]) -> int:
    """AMEM.WORK.LEN session
    Returns the number of keys in a session's scratchpad.
    """
    session = Args(argv, 1).ident("session")
    return ctx.db.work.length(session, ctx.now_ms)


@command("amem.work.ttl", arity=3, flags="readonly fast", key="RO access",
         tips="nondeterministic_output")
def work_ttl(ctx: Context, argv: list[bytes]) -> int:
    """AMEM.WORK.TTL session key
    Returns a key's time to live in ms (-1 none, -2 missing).
    """
    args = Args(argv, 1)
    session = args.ident("session")
    key = args.ident("key")
    return ctx.db.work.ttl(session, key, ctx.now_ms)


@command("amem.work.expire", arity=3, flags="write fast", key="RW update")
def work_expire(ctx: Context, argv: list[bytes]) -> int:
    """AMEM.WORK.EXPIRE session s
    Makes a session's whole scratchpad expire in s seconds.
    """
    args = Args(argv, 1)
    session = args.ident("session")
    seconds = args.int("s")
    store = ctx.db.work
    now = ctx.now_ms
    if seconds > (_MAX_MS - now) // 1000:
        raise CommandError(errors.invalid_expire("amem.work.expire"))
    if store.length(session, now) == 0:
        return 0
    if seconds <= 0:
        ctx.emit(WorkClear(session))
    else:
        ctx.emit(WorkExpire(session, now + seconds * 1000))
    return 1


@command("amem.work.clear", arity=2, flags="write", key="RM delete",
         complexity="O(N) with N the keys held", dialect=True)
def work_clear(ctx: Context, argv: list[bytes]) -> int:
    """AMEM.WORK.CLEAR session
    Removes every key of a session's scratchpad and returns how many there were.
    """
    session = Args(argv, 1).ident("session")
    store = ctx.db.work
    removed = store.length(session, ctx.now_ms)
    if removed:
        ctx.emit(WorkClear(session))
    return removed


@command("amem.work.list", arity=2, flags="readonly", key="RO access",
         complexity="O(N) with N the keys held", dialect=True)
def work_list(ctx: Context, argv: list[bytes]) -> list[bytes]:
    """AMEM.WORK.LIST session
    Returns the keys of a session's scratchpad (empty when it has none).
    """
    session = Args(argv, 1).ident("session")
    return list(ctx.db.work.items(session, ctx.now_ms))
