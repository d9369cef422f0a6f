"""AMEM.CONV.*: conversation memory, a bounded sliding window of role-tagged turns per session.

A session is created explicitly (CREATE) with a window size and an optional idle TTL that
every APPEND restarts (or PXAT, a fixed end that APPEND does not move); APPEND to a session
never created is ``NOTFOUND session not found``, so a typo in a session id does not silently
start a new conversation (the official hotkv-mcp creates the session on that error).
CREATE ... UPDATE changes only the settings it names: WINDOW (a smaller window drops the
oldest turns at once) and TTL/PX/PXAT (the deadline then starts anew).

The HotKV dialect's replies are the defaults: APPEND answers ``+OK`` (``WITHSEQ``, a hotkv
extension, answers the turn's sequence number), GET returns every turn held, CLEAR empties a
conversation and keeps it, DROP removes it.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from hotkv_server.commands.amem import Options, arg, delete_one, flag
from hotkv_server.engine import errors
from hotkv_server.engine.args import MAX_ID_LEN, Args
from hotkv_server.engine.context import Context
from hotkv_server.engine.errors import CommandError
from hotkv_server.engine.registry import family
from hotkv_server.engine.replies import OK
from hotkv_server.engine.write_options import AMEM_TTL_TOKENS, WriteOptions
from hotkv_server.stores.conv import DEFAULT_WINDOW, MAX_WINDOW, ROLES
from hotkv_server.stores.conv_effects import ConvAppend, ConvClear, ConvCreate, ConvDel, ConvUpdate

command = family(group="conv")

_ROLES_TEXT = "one of " + "|".join(r.decode() for r in ROLES)
_CREATE_OPTIONS = Options("WINDOW, TTL, PX, PXAT or UPDATE", {
    b"WINDOW": arg(Args.int, "WINDOW", 1, MAX_WINDOW),
    b"UPDATE": flag,
})


@command("amem.conv.create", arity=-2, flags="write denyoom", key="RW update",
         complexity="O(1), O(N) when UPDATE shrinks the window by N turns", dialect=True,
         extensions="PX UPDATE")
def conv_create(ctx: Context, argv: list[bytes]) -> Any:
    """AMEM.CONV.CREATE session [WINDOW n] [TTL s|PX ms|PXAT unix-time-ms] [UPDATE]
    Creates a conversation (or with UPDATE changes its window and idle TTL).
    """
    args = Args(argv, 1)
    session = args.ident("session")
    now = ctx.now_ms
    opts = WriteOptions(AMEM_TTL_TOKENS)  # TTL, PX: an idle TTL; PXAT: a fixed end
    given = _CREATE_OPTIONS.read(args, partial(opts.take, now_ms=now))
    window: int | None = given.get(b"WINDOW")
    update = b"UPDATE" in given

    store = ctx.db.conv
    conv = store.get(session, now)
    if update:
        if conv is None:
            raise CommandError(errors.conv_not_found(session))
        new_window = conv.window if window is None else window
        new_ttl: int | None
        if opts.expiry is None:  # the TTL is not named: keep it and its running deadline
            new_ttl, expires_at = conv.ttl_ms, conv.expires_at
        else:
            new_ttl, expires_at = opts.ttl_ms, opts.deadline(now)
        ctx.emit(ConvUpdate(session, new_window, new_ttl, expires_at, now))
        return OK
    if conv is not None:
        raise CommandError(errors.conv_exists(session))
    ctx.emit(ConvCreate(session, DEFAULT_WINDOW if window is None else window, opts.ttl_ms,
                        opts.deadline(now), now))
    return OK


@command("amem.conv.append", arity=-4, flags="write denyoom", key="RW update", dialect=True,
         extensions="META WITHSEQ")
def conv_append(ctx: Context, argv: list[bytes]) -> Any:
    """AMEM.CONV.APPEND session role content [META json-object] [WITHSEQ]
    Appends a turn to a conversation: OK, or with WITHSEQ its sequence number.
    """
    meta: bytes | None = None
    withseq = False
    if len(argv) == 4 and 0 < len(argv[1]) <= MAX_ID_LEN:  # no option: nothing to parse
        _, session, raw_role, content = argv
        role = _role(raw_role)
    else:
        args = Args(argv, 1)
        session = args.ident("session")
        role = _role(args.next("role"))  # named before any option error, as documented
        content = args.text("content")
        while args:  # not an Options table: APPEND is a hot command, a table costs it per call
            raw = args.next("option")
            opt = raw.upper()
            if opt == b"META":
                meta = args.json_object("META")
            elif opt == b"WITHSEQ":
                withseq = True
            else:
                raise CommandError(errors.bad_argument("option", "META or WITHSEQ", raw))

    now = ctx.now_ms
    conv = ctx.db.conv.get(session, now)
    if conv is None:
        raise CommandError(errors.conv_not_found(session))
    seq = conv.appended + 1
    # an idle TTL restarts; a fixed end (PXAT, or none) stays where it is
    expires_at = conv.expires_at if conv.ttl_ms is None else now + conv.ttl_ms
    ctx.emit(ConvAppend(session, seq, role, content, now, meta, expires_at))
    return seq if withseq else OK


def _role(raw: bytes) -> bytes:
    """A turn's role, lower-cased; an error naming the roles otherwise."""
    role = raw.lower()
    if role not in ROLES:
        raise CommandError(errors.bad_argument("role", _ROLES_TEXT, raw))
    return role


@command("amem.conv.window", arity=-2, flags="readonly", key="RO access",
         complexity="O(N) with N the turns returned", dialect=True)
def conv_window(ctx: Context, argv: list[bytes]) -> list[dict[str, Any]]:
    """AMEM.CONV.WINDOW session [n]
    Returns the last n turns of a conversation (default all held), oldest first.
    """
    args = Args(argv, 1)
    session = args.ident("session")
    n = args.int("n", 0, None) if args else None
    args.done()
    return [turn.record() for turn in ctx.db.conv.window(session, ctx.now_ms, n)]


@command("amem.conv.len", arity=2, flags="readonly fast", key="RO")
def conv_len(ctx: Context, argv: list[bytes]) -> int:
    """AMEM.CONV.LEN session
    Returns the number of turns a conversation holds (0 when missing).
    """
    session = Args(argv, 1).ident("session")
    return ctx.db.conv.length(session, ctx.now_ms)


@command("amem.conv.info", arity=2, flags="readonly fast", key="RO access",
         tips="nondeterministic_output")
def conv_info(ctx: Context, argv: list[bytes]) -> dict[str, Any] | None:
    """AMEM.CONV.INFO session
    Returns a conversation's window, ttl, turns, appended, created and updated.
    """
    session = Args(argv, 1).ident("session")
    now = ctx.now_ms
    conv = ctx.db.conv.get(session, now)
    if conv is None:
        return None
    return {
        "window": conv.window,
        "ttl": conv.ttl_left(now),
        "turns": len(conv.turns),
        "appended": conv.appended,
        "created": conv.created,
        "updated": conv.updated,
    }


@command("amem.conv.del", arity=-2, flags="write", keys=(1, -1, 1), key_flags="RM delete",
         tips="request_policy:multi_shard response_policy:agg_sum",
         complexity="O(N) with N the sessions named")
def conv_del(ctx: Context, argv: list[bytes]) -> int:
    """AMEM.CONV.DEL session [session ...]
    Deletes conversations and returns how many existed.
    """
    args = Args(argv, 1)
    sessions = [args.ident("session") for _ in range(args.remaining())]
    store = ctx.db.conv
    now = ctx.now_ms
    live = [s for s in dict.fromkeys(sessions) if store.exists(s, now)]
    if not live:
        return 0
    return int(ctx.emit(ConvDel(live)))


@command("amem.conv.get", arity=2, flags="readonly", key="RO access",
         complexity="O(N) with N the turns held", dialect=True)
def conv_get(ctx: Context, argv: list[bytes]) -> list[dict[str, Any]]:
    """AMEM.CONV.GET session
    Returns every turn a conversation holds, oldest first (empty when missing).
    """
    session = Args(argv, 1).ident("session")
    return [turn.record() for turn in ctx.db.conv.window(session, ctx.now_ms, None)]


@command("amem.conv.clear", arity=2, flags="write", key="RW delete",
         complexity="O(N) with N the turns held", dialect=True)
def conv_clear(ctx: Context, argv: list[bytes]) -> int:
    """AMEM.CONV.CLEAR session
    Removes every turn of a conversation, keeping it and its settings; 1 if turns went.
    """
    session = Args(argv, 1).ident("session")
    now = ctx.now_ms
    conv = ctx.db.conv.get(session, now)
    if conv is None or not conv.turns:
        return 0
    ctx.emit(ConvClear(session, now))  # the deadline stays as it is
    return 1


@command("amem.conv.drop", arity=2, flags="write", key="RM delete", dialect=True)
def conv_drop(ctx: Context, argv: list[bytes]) -> int:
    """AMEM.CONV.DROP session
    Deletes a conversation with its settings; 1 if it existed, else 0.
    """
    session = Args(argv, 1).ident("session")
    return delete_one(ctx, ctx.db.conv, session, ConvDel([session]))
