"""Transactions: MULTI EXEC DISCARD WATCH UNWATCH.

Queued commands were checked by the dispatch point when they were queued; EXEC runs them
with one clock snapshot, and their effects go to the AOF and the replicas as one record.
"""

from __future__ import annotations

from typing import Any

from hotkv_server.engine import errors
from hotkv_server.engine.context import Context
from hotkv_server.engine.dispatch import execute
from hotkv_server.engine.errors import CommandError
from hotkv_server.engine.registry import command
from hotkv_server.engine.replies import NULL_ARRAY, OK


@command("multi", arity=1, flags="noscript loading stale fast allow_busy", group="transactions",
         summary="Starts a transaction.")
def multi(ctx: Context, argv: list[bytes]) -> Any:
    """MULTI"""
    if ctx.multi is not None:
        raise CommandError(errors.MULTI_NESTED)
    ctx.multi = []
    ctx.multi_error = False
    return OK


@command("discard", arity=1, flags="noscript loading stale fast allow_busy", group="transactions",
         summary="Discards a transaction.")
def discard(ctx: Context, argv: list[bytes]) -> Any:
    """DISCARD"""
    if ctx.multi is None:
        raise CommandError(errors.DISCARD_WITHOUT_MULTI)
    ctx.multi = None
    ctx.multi_error = False
    ctx.unwatch()
    return OK


@command("exec", arity=1, flags="noscript loading stale skip_slowlog", group="transactions",
         summary="Executes all commands in a transaction.")
def exec_(ctx: Context, argv: list[bytes]) -> Any:
    """EXEC"""
    queued = ctx.multi
    if queued is None:
        raise CommandError(errors.EXEC_WITHOUT_MULTI)
    ctx.multi = None
    if ctx.multi_error:
        ctx.multi_error = False
        ctx.unwatch()
        raise CommandError(errors.EXECABORT)
    if ctx.dirty_cas:
        ctx.unwatch()
        return NULL_ARRAY
    ctx.unwatch()
    effects = ctx.core.effects
    replies: list[Any] = []
    effects.begin()
    try:
        for spec, args in queued:
            replies.append(execute(ctx, spec, args))
    finally:
        effects.commit()
    return replies


@command("watch", arity=-2, flags="noscript loading stale fast allow_busy", keys=(1, -1, 1),
         group="transactions", summary="Watches keys: EXEC fails if any of them is written first.",
         syntax="key [key ...]")
def watch(ctx: Context, argv: list[bytes]) -> Any:
    """WATCH key [key ...]"""
    if ctx.multi is not None:
        raise CommandError(errors.WATCH_INSIDE_MULTI)
    watchers = ctx.core.watchers
    for key in argv[1:]:
        if key not in ctx.watched:
            ctx.watched.add(key)
            watchers.setdefault(key, set()).add(ctx)
    return OK


@command("unwatch", arity=1, flags="noscript loading stale fast allow_busy", group="transactions",
         summary="Forgets all watched keys.")
def unwatch(ctx: Context, argv: list[bytes]) -> Any:
    """UNWATCH"""
    ctx.unwatch()
    return OK
