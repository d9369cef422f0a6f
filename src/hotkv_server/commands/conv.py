"""AMEM.CONV.*: conversation memory, a bounded sliding window of role-tagged turns per session.

A session is created explicitly (CREATE) with a window size and an optional idle TTL that
every APPEND restarts; APPEND to a session never created is NOTFOUND, so a typo in a
session id does not silently start a new conversation. CREATE ... UPDATE changes only the
settings it names: WINDOW (a smaller window drops the oldest turns at once) and TTL/PX
(the idle deadline then restarts from now).
"""

from __future__ import annotations

from typing import Any

from hotkv_server.engine import errors
from hotkv_server.engine.args import MAX_ID_LEN, Args
from hotkv_server.engine.context import Context
from hotkv_server.engine.errors import CommandError
from hotkv_server.engine.registry import command
from hotkv_server.engine.replies import OK
from hotkv_server.stores.conv import DEFAULT_WINDOW, MAX_WINDOW, ROLES, ConversationStore
from hotkv_server.stores.conv_effects import ConvAppend, ConvCreate, ConvDel, ConvUpdate

_ROLES_TEXT = "one of " + "|".join(r.decode() for r in ROLES)
_CREATE_OPTIONS = "WINDOW, TTL, PX or UPDATE"


def _store(ctx: Context) -> ConversationStore:
    store: ConversationStore = ctx.db.conv
    return store


@command(
    "amem.conv.create",
    arity=-2,
    flags="write denyoom",
    keys=(1, 1, 1),
    key_flags="RW update",
    group="conv",
    summary="Creates a conversation (or with UPDATE changes its window and idle TTL).",
    syntax="session [WINDOW n] [TTL s|PX ms] [UPDATE]",
    complexity="O(1), O(N) when UPDATE shrinks the window by N turns",
)
def conv_create(ctx: Context, argv: list[bytes]) -> Any:
    """session [WINDOW n] [TTL s|PX ms] [UPDATE]"""
    args = Args(argv, 1)
    session = args.ident("session")
    window: int | None = None
    ttl_ms: int | None = None
    ttl_option: bytes | None = None
    update = False
    while args:
        raw = args.next("option")
        opt = raw.upper()
        if opt == b"WINDOW":
            window = args.int("WINDOW", 1, MAX_WINDOW)
        elif opt in (b"TTL", b"PX"):
            if ttl_option is not None and ttl_option != opt:
                raise CommandError(errors.exclusive_options("TTL", "PX"))
            ttl_option = opt
            ttl_ms = args.duration_ms(opt)
        elif opt == b"UPDATE":
            update = True
        else:
            raise CommandError(errors.bad_argument("option", _CREATE_OPTIONS, raw))

    store = _store(ctx)
    now = ctx.now_ms
    conv = store.get(session, now)
    if update:
        if conv is None:
            raise CommandError(errors.conv_not_found(session))
        new_window = conv.window if window is None else window
        if ttl_ms is None:  # the TTL is not named: keep it and its running deadline
            new_ttl, expires_at = conv.ttl_ms, conv.expires_at
        else:
            new_ttl, expires_at = ttl_ms, now + ttl_ms
        ctx.emit(ConvUpdate(session, new_window, new_ttl, expires_at, now))
        return OK
    if conv is not None:
        raise CommandError(errors.conv_exists(session))
    expires_at = None if ttl_ms is None else now + ttl_ms
    ctx.emit(ConvCreate(session, DEFAULT_WINDOW if window is None else window, ttl_ms,
                        expires_at, now))
    return OK


@command(
    "amem.conv.append",
    arity=-4,
    flags="write denyoom",
    keys=(1, 1, 1),
    key_flags="RW update",
    group="conv",
    summary="Appends a turn to a conversation and returns its sequence number.",
    syntax="session role content [META json-object]",
)
def conv_append(ctx: Context, argv: list[bytes]) -> int:
    """session role content [META json-object]"""
    meta: bytes | None = None
    if len(argv) == 4 and 0 < len(argv[1]) <= MAX_ID_LEN:  # no option: nothing to parse
        _, session, raw_role, content = argv
        role = _role(raw_role)
    else:
        args = Args(argv, 1)
        session = args.ident("session")
        role = _role(args.next("role"))  # named before any option error, as documented
        content = args.text("content")
        while args:
            raw = args.next("option")
            if raw.upper() == b"META":
                meta = args.json_object("META")
            else:
                raise CommandError(errors.bad_argument("option", "META", raw))

    now = ctx.now_ms
    conv = _store(ctx).get(session, now)
    if conv is None:
        raise CommandError(errors.conv_not_found(session))
    seq = conv.appended + 1
    expires_at = None if conv.ttl_ms is None else now + conv.ttl_ms  # idle TTL restarts
    ctx.emit(ConvAppend(session, seq, role, content, now, meta, expires_at))
    return seq


def _role(raw: bytes) -> bytes:
    """A turn's role, lower-cased; an error naming the roles otherwise."""
    role = raw.lower()
    if role not in ROLES:
        raise CommandError(errors.bad_argument("role", _ROLES_TEXT, raw))
    return role


@command(
    "amem.conv.window",
    arity=-2,
    flags="readonly",
    keys=(1, 1, 1),
    key_flags="RO access",
    group="conv",
    summary="Returns the last n turns of a conversation (default all held), oldest first.",
    syntax="session [n]",
    complexity="O(N) with N the turns returned",
)
def conv_window(ctx: Context, argv: list[bytes]) -> list[dict[str, Any]]:
    """session [n]"""
    args = Args(argv, 1)
    session = args.ident("session")
    n = args.int("n", 0, None) if args else None
    args.done()
    return [turn.record() for turn in _store(ctx).window(session, ctx.now_ms, n)]


@command(
    "amem.conv.len",
    arity=2,
    flags="readonly fast",
    keys=(1, 1, 1),
    key_flags="RO",
    group="conv",
    summary="Returns the number of turns a conversation holds (0 when missing).",
    syntax="session",
)
def conv_len(ctx: Context, argv: list[bytes]) -> int:
    """session"""
    session = Args(argv, 1).ident("session")
    return _store(ctx).length(session, ctx.now_ms)


@command(
    "amem.conv.info",
    arity=2,
    flags="readonly fast",
    keys=(1, 1, 1),
    key_flags="RO access",
    tips="nondeterministic_output",
    group="conv",
    summary="Returns a conversation's window, ttl, turns, appended, created and updated.",
    syntax="session",
)
def conv_info(ctx: Context, argv: list[bytes]) -> dict[str, Any] | None:
    """session"""
    session = Args(argv, 1).ident("session")
    now = ctx.now_ms
    conv = _store(ctx).get(session, now)
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


@command(
    "amem.conv.del",
    arity=-2,
    flags="write",
    keys=(1, -1, 1),
    key_flags="RM delete",
    tips="request_policy:multi_shard response_policy:agg_sum",
    group="conv",
    summary="Deletes conversations and returns how many existed.",
    syntax="session [session ...]",
    complexity="O(N) with N the sessions named",
)
def conv_del(ctx: Context, argv: list[bytes]) -> int:
    """session [session ...]"""
    args = Args(argv, 1)
    sessions = [args.ident("session") for _ in range(args.remaining())]
    store = _store(ctx)
    now = ctx.now_ms
    live = [s for s in dict.fromkeys(sessions) if store.exists(s, now)]
    if not live:
        return 0
    return int(ctx.emit(ConvDel(live)))
