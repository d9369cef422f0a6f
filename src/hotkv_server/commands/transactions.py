"""Transactions: MULTI EXEC DISCARD WATCH UNWATCH.

Queued commands were checked by the dispatch point when they were queued; EXEC runs them
with one clock snapshot, and their effects go to the AOF and the replicas as one record.
"""

from __future__ import annotations

from typing import Any

from hotkv_server.engine import errors
from hotkv_server.engine.context import Context
from hotkv_server.engine.dispatch import NO_REPLY, Deferred, execute
from hotkv_server.engine.errors import CommandError
from hotkv_server.engine.registry import family
from hotkv_server.engine.replies import NULL_ARRAY, OK, ErrorReply, Spliced

command = family(group="transactions")


@command("multi", arity=1, flags="noscript loading stale fast allow_busy")
def multi(ctx: Context, argv: list[bytes]) -> Any:
    """MULTI
    Starts a transaction.
    """
    if ctx.multi is not None:
        raise CommandError(errors.MULTI_NESTED)
    ctx.multi = []
    ctx.multi_error = False
    return OK


@command("discard", arity=1, flags="noscript loading stale fast allow_busy")
def discard(ctx: Context, argv: list[bytes]) -> Any:
    """DISCARD
    Discards a transaction.
    """
    if ctx.multi is None:
        raise CommandError(errors.DISCARD_WITHOUT_MULTI)
    ctx.multi = None
    ctx.multi_error = False
    ctx.unwatch()
    return OK


@command("exec", arity=1, flags="noscript loading stale skip_slowlog")
def exec_(ctx: Context, argv: list[bytes]) -> Any:
    """EXEC
    Executes all commands in a transaction.
    """
    queued = ctx.multi
    if queued is None:
        raise CommandError(errors.EXEC_WITHOUT_MULTI)
    ctx.multi = None
    if ctx.multi_error:
        ctx.multi_error = False
        ctx.unwatch()
        raise CommandError(errors.EXECABORT)
    if ctx.watched and not ctx.dirty_cas:
        # a watched key whose deadline passed since WATCH aborts, as in Redis: looking it
        # up removes it, and its removal (Core.expired) marks this client dirty
        kv = ctx.db.kv
        for key in ctx.watched:
            kv.peek(key, ctx.now_ms)
    if ctx.dirty_cas:
        ctx.unwatch()
        return NULL_ARRAY
    ctx.unwatch()
    return _run_queued(ctx, queued, 0, [], None)


def _run_queued(ctx: Context, queued: list[Any], start: int, replies: list[Any],
                waiting: Deferred | None) -> Any:
    """Run the queued commands from ``start``; a command whose reply is deferred (a script
    past busy-reply-threshold) suspends the block until it resolves, with the effect group kept
    open so the whole block still leaves as one record (one effects.begin/commit around it)."""
    core = ctx.core
    if start == 0 and (ctx.pubsub is not None or any(spec.is_pubsub for spec, _ in queued)):
        return _exec_with_pushes(ctx, queued)
    effects = core.effects
    user = ctx.user
    if start == 0:
        effects.begin()
    i = start
    try:
        while i < len(queued):
            spec, args = queued[i]
            i += 1
            if user is not None and user.restricted:
                # the rules may have changed since the command was queued: check again
                denied = user.denial(spec, args)
                if denied is not None:
                    replies.append(_revoked(ctx, denied))
                    continue
            reply = execute(ctx, spec, args)
            if type(reply) is Deferred:
                if not reply.done:
                    later = waiting if waiting is not None else Deferred()
                    resume_at = i

                    def resume(done: Deferred, later: Deferred = later, at: int = resume_at) -> None:
                        replies.append(done.value)
                        _run_queued(ctx, queued, at, replies, later)

                    reply.callback = resume
                    i = -1  # suspended: the finally below must not end the block
                    return later
                reply = reply.value
            replies.append(reply)
    finally:
        if i != -1:
            effects.commit()
    if waiting is not None:
        waiting.resolve(replies)
        return waiting
    return replies


def _exec_with_pushes(ctx: Context, queued: list[Any]) -> Spliced:
    """EXEC of a transaction that (un)subscribes or may hear its own messages: the pushes
    go inside EXEC's reply, where each command made them, as Redis writes them (in RESP2
    the array then holds more elements than its count says, exactly as redis-server's)."""
    effects = ctx.core.effects
    parts: list[Any] = []
    push = ctx.push
    ctx.push = parts.append
    user = ctx.user
    effects.begin()
    try:
        for spec, args in queued:
            denied = user.denial(spec, args) if user is not None and user.restricted else None
            reply = _revoked(ctx, denied) if denied is not None else execute(ctx, spec, args)
            if reply is not NO_REPLY:
                parts.append(reply)
    finally:
        ctx.push = push
        effects.commit()
    return Spliced(parts, len(queued))


_REVOKED = {
    "command": "no permission to execute the command or subcommand",
    "key": "no permission to touch the specified keys",
    "channel": "no permission to access one of the channels used as arguments",
}


def _revoked(ctx: Context, denied: tuple[str, bytes]) -> ErrorReply:
    """The reply of a queued command its user may no longer run (logged as ``multi``)."""
    reason, obj = denied
    users = ctx.core.users
    if users is not None:
        users.log_denial(ctx, reason, obj.decode("utf-8", "replace"), context="multi")
    message = ("NOPERM ACLs rules changed between the moment the transaction was accumulated "
               "and the EXEC call. This command is no longer allowed for the following "
               f"reason: {_REVOKED[reason]}")
    stats = ctx.core.stats
    stats.total_error_replies += 1
    stats.errorstats["NOPERM"] = stats.errorstats.get("NOPERM", 0) + 1
    return ErrorReply(message)


@command("watch", arity=-2, flags="noscript loading stale fast allow_busy", keys=(1, -1, 1))
def watch(ctx: Context, argv: list[bytes]) -> Any:
    """WATCH key [key ...]
    Watches keys: EXEC fails if any of them is written first.
    """
    if ctx.multi is not None:
        raise CommandError(errors.WATCH_INSIDE_MULTI)
    watchers = ctx.core.watchers
    kv = ctx.db.kv
    for key in argv[1:]:
        kv.peek(key, ctx.now_ms)  # a key already past its deadline is watched as missing
        if key not in ctx.watched:
            ctx.watched.add(key)
            watchers.setdefault(key, set()).add(ctx)
    return OK


@command("unwatch", arity=1, flags="noscript loading stale fast allow_busy")
def unwatch(ctx: Context, argv: list[bytes]) -> Any:
    """UNWATCH
    Forgets all watched keys.
    """
    ctx.unwatch()
    return OK
