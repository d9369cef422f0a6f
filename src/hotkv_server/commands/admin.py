"""Server administration: FLUSHALL/FLUSHDB, TIME, LASTSAVE, SLOWLOG, MONITOR,
SHUTDOWN, SAVE/BGSAVE/BGREWRITEAOF and DEBUG SLEEP, with Redis 7's reply shapes and wording.

INFO is ``commands/info.py``, CONFIG ``commands/config.py``.
``core.persistence`` (``engine.core.PersistenceService``) does SAVE, BGSAVE and
BGREWRITEAOF (each may return a status text or raise RequestRefused).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any

from hotkv_server.commands.info import lastsave_s
from hotkv_server.engine import errors
from hotkv_server.engine.args import parse_float, parse_int
from hotkv_server.engine.context import Context
from hotkv_server.engine.core import PersistenceService
from hotkv_server.engine.dispatch import NO_REPLY, Deferred
from hotkv_server.engine.errors import CommandError, RequestRefused
from hotkv_server.engine.registry import alias, container, family, help_lines
from hotkv_server.engine.replies import OK, Simple
from hotkv_server.stores.effect import FlushAll

command = family(group="server")

log = logging.getLogger("hotkv")

# --- data, time, saves -----------------------------------------------------------------


@command("flushall", arity=-1, flags="write", acl="keyspace dangerous",
         tips="request_policy:all_shards response_policy:all_succeeded",
         complexity="O(N) where N is the total number of keys and memories")
def flushall(ctx: Context, argv: list[bytes]) -> Any:
    """FLUSHALL [ASYNC|SYNC]
    Removes all keys and memories from every store.

    FLUSHDB [ASYNC|SYNC]
    Removes all keys and memories (there is one database, so as FLUSHALL).
    """
    if len(argv) > 2 or (len(argv) == 2 and argv[1].upper() not in (b"ASYNC", b"SYNC")):
        raise CommandError(errors.SYNTAX)
    ctx.emit(FlushAll())  # (the effect log breaks only the WATCHes of ids that existed)
    return OK


alias("flushdb", of="flushall")


@command("time", arity=1, flags="loading stale fast", tips="nondeterministic_output")
def time_(ctx: Context, argv: list[bytes]) -> Any:
    """TIME
    Returns the server time.
    """
    # the clock read now, not the call's snapshot (ctx.now_ms, which a whole script or
    # EXEC shares for expiry): a script that polls TIME sees it move, as in Redis
    now_us = ctx.core.clock.now_us()
    return [b"%d" % (now_us // 1_000_000), b"%d" % (now_us % 1_000_000)]


@command("lastsave", arity=1, flags="loading stale fast", acl="admin dangerous",
         tips="nondeterministic_output")
def lastsave(ctx: Context, argv: list[bytes]) -> Any:
    """LASTSAVE
    Returns the Unix timestamp of the last successful save to disk.
    """
    return lastsave_s(ctx.core)


NO_PERSISTENCE = "ERR persistence is not available in this server"


def _persistence(ctx: Context) -> PersistenceService:
    persistence = ctx.core.persistence
    if persistence is None:
        raise CommandError(NO_PERSISTENCE)
    return persistence


def _persistence_call(ctx: Context, call: Callable[[PersistenceService], str | Deferred | None],
                      done: str) -> Any:
    persistence = _persistence(ctx)
    try:
        result = call(persistence)
    except RequestRefused as exc:
        raise CommandError(exc.message) from None
    if isinstance(result, Deferred):  # answered after the fork (or the start's failure)
        return result
    return Simple(result) if isinstance(result, str) and result else Simple(done)


@command("save", arity=1, flags="admin noscript no_async_loading no_multi",
         complexity="O(N) where N is the total number of keys and memories")
def save(ctx: Context, argv: list[bytes]) -> Any:
    """SAVE
    Synchronously saves the whole state to disk.
    """
    return _persistence_call(ctx, lambda p: p.save(), "OK")


@command("bgsave", arity=-1, flags="admin noscript no_async_loading",
         complexity="O(N) where N is the total number of keys and memories")
def bgsave(ctx: Context, argv: list[bytes]) -> Any:
    """BGSAVE [SCHEDULE]
    Asynchronously saves the whole state to disk.
    """
    if len(argv) > 2 or (len(argv) == 2 and argv[1].upper() != b"SCHEDULE"):
        raise CommandError(errors.SYNTAX)
    # inside MULTI the block cannot stay open while the start's file steps run: answered
    # once they are under way, a failure after that only in the log and INFO
    wait = not ctx.core.effects.grouped
    return _persistence_call(ctx, lambda p: p.bgsave(wait), "Background saving started")


@command("bgrewriteaof", arity=1, flags="admin noscript no_async_loading",
         complexity="O(N) where N is the total number of keys and memories")
def bgrewriteaof(ctx: Context, argv: list[bytes]) -> Any:
    """BGREWRITEAOF
    Asynchronously rewrites the append-only file to a compact base snapshot.
    """
    if ctx.core.effects.grouped:
        # as Redis: inside a transaction the rewrite is scheduled for after it
        asyncio.get_running_loop().call_soon(_scheduled_rewrite, _persistence(ctx))
        return Simple("Background append only file rewriting scheduled")
    return _persistence_call(ctx, lambda p: p.bgrewrite(), "Background append only file rewriting started")


def _scheduled_rewrite(persistence: PersistenceService) -> None:
    try:
        persistence.bgrewrite(wait=False)  # nobody waits: a failure is in the log and INFO
    except RequestRefused as exc:  # one already running: it covers what this one asked for
        log.info("scheduled rewrite not started: %s", exc.message)


# --- SLOWLOG ---------------------------------------------------------------------------

container("slowlog", group="server", summary="A container for slow log commands.")


@command("slowlog|get", arity=-2, flags="admin loading stale",
         tips="request_policy:all_nodes nondeterministic_output",
         complexity="O(N) where N is the number of entries returned",
         help="GET [<count>]\n    Return top <count> entries from the slowlog (default: 10, -1 mean all).\n    Entries are made of:\n    id, timestamp, time in microseconds, arguments array, client IP and port,\n    client name")
def slowlog_get(ctx: Context, argv: list[bytes]) -> Any:
    """SLOWLOG GET [count]
    Returns the slow log's entries.
    """
    if len(argv) > 3:
        raise CommandError(errors.SYNTAX)
    count = 10
    if len(argv) == 3:
        parsed = parse_int(argv[2])
        if parsed is None or parsed < -1:
            raise CommandError("ERR count should be greater than or equal to -1")
        count = parsed
    entries = list(ctx.core.slowlog)
    if count >= 0:
        entries = entries[:count]
    return [[e.id, e.start_s, e.duration_us, list(e.argv), e.addr, e.name] for e in entries]


@command("slowlog|len", arity=2, flags="admin loading stale",
         tips="request_policy:all_nodes response_policy:agg_sum nondeterministic_output",
         help="LEN\n    Return the length of the slowlog.")
def slowlog_len(ctx: Context, argv: list[bytes]) -> Any:
    """SLOWLOG LEN
    Returns the number of entries in the slow log.
    """
    return len(ctx.core.slowlog)


@command("slowlog|reset", arity=2, flags="admin loading stale",
         tips="request_policy:all_nodes response_policy:all_succeeded",
         complexity="O(N) where N is the number of entries in the slowlog",
         help="RESET\n    Reset the slowlog.")
def slowlog_reset(ctx: Context, argv: list[bytes]) -> Any:
    """SLOWLOG RESET
    Clears all entries from the slow log.
    """
    ctx.core.slowlog.clear()
    return OK




@command("slowlog|help", arity=2, flags="loading stale")
def slowlog_help(ctx: Context, argv: list[bytes]) -> Any:
    """SLOWLOG HELP
    Returns helpful text about the different subcommands.
    """
    return [Simple(line) for line in help_lines("slowlog")]


# --- MONITOR, SHUTDOWN, DEBUG ----------------------------------------------------------


@command("monitor", arity=1, flags="admin noscript loading stale")
def monitor(ctx: Context, argv: list[bytes]) -> Any:
    """MONITOR
    Listens for all requests received by the server in real time.
    """
    # dispatch writes every later command's line to this client through ctx.writer
    ctx.core.monitors.add(ctx)
    return OK


@command("shutdown", arity=-1, flags="admin noscript loading stale no_multi allow_busy",
         complexity="O(N) when saving, where N is the total number of keys and memories")
def shutdown(ctx: Context, argv: list[bytes]) -> Any:
    """SHUTDOWN [NOSAVE|SAVE] [NOW] [FORCE]
    Synchronously saves the state to disk and shuts down the server.
    """
    save: bool | None = None
    for raw in argv[1:]:
        opt = raw.upper()
        if opt == b"NOSAVE" and save is None:
            save = False
        elif opt == b"SAVE" and save is None:
            save = True
        elif opt in (b"NOW", b"FORCE"):
            continue  # no replicas are waited for and a failed save never blocks the exit
        elif opt == b"ABORT" and len(argv) == 2:
            raise CommandError("ERR No shutdown in progress.")
        else:
            raise CommandError(errors.SYNTAX)
    if ctx.core.busy is not None and save is not False:
        # a script runs past its time limit: only SHUTDOWN NOSAVE may end the server now
        raise CommandError(errors.BUSY_SCRIPT)
    request = ctx.core.shutdown_requested
    if request is None:
        raise CommandError("ERR Errors trying to SHUTDOWN. Check logs.")
    request(save)
    # as Redis: no reply, the connection just closes while the server goes down
    ctx.close_after_reply = True
    return NO_REPLY


_DEBUG_HELP = [
    "DEBUG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "SLEEP <seconds>",
    "    Stop the server for <seconds>. Decimals allowed.",
    "HELP",
    "    Print this help.",
]


@command("debug", arity=-2, flags="admin noscript loading stale",
         complexity="Depends on subcommand.")
def debug(ctx: Context, argv: list[bytes]) -> Any:
    """DEBUG SLEEP seconds
    A container for debugging commands (only SLEEP).
    """
    sub = argv[1].upper()
    if sub == b"HELP" and len(argv) == 2:
        return [Simple(line) for line in _DEBUG_HELP]
    if sub == b"SLEEP" and len(argv) == 3:
        seconds = parse_float(argv[2])
        if seconds is None or seconds < 0 or seconds == float("inf"):
            raise CommandError(errors.bad_argument("seconds", "a number >= 0", argv[2]))
        # blocks the event loop on purpose, as Redis's does: slowlog and timeout tests use it
        time.sleep(seconds)
        return OK
    raise CommandError(errors.unknown_subcommand(argv[1], "debug"))
