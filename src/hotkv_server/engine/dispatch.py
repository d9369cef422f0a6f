"""The single choke point every command passes through, live or queued in MULTI.

``dispatch(ctx, argv)`` does, in this order and for every command: lookup (unknown command
and unknown subcommand errors), arity, authentication, ACL, the OOM / MISCONF / NOREPLICAS
/ READONLY / MASTERDOWN / LOADING gates (Redis's order), RESP2 subscribed mode, MULTI
queueing, the clock snapshot, the handler call, handing the command's effects on
(``core.effects.flush``), MONITOR feed, and waking clients blocked on written keys
(engine/blocking.py). Every call ends in ``complete``: its duration, command statistics
(rejected and failed calls counted as Redis counts them) and the slowlog. A handler that
returns a ``Deferred`` (WAIT, a search on the threads, an embedding, a blocking pop) ends
its call when the Deferred resolves, through the same ``complete``, as Redis counts a
blocked command when it is unblocked: an error it resolves to counts in errorstats and
failed_calls as an error raised at once would.
Handlers never repeat these checks. Errors come back as ``ErrorReply`` values, never raised.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from hotkv_server.engine import errors
from hotkv_server.engine.context import Context
from hotkv_server.engine.core import Core, SlowlogEntry
from hotkv_server.engine.deferred import Deferred as Deferred  # re-exported: WAIT, RECALL
from hotkv_server.engine.errors import CommandError
from hotkv_server.engine.registry import COMMANDS, LOOKUP, CommandSpec
from hotkv_server.engine.replies import QUEUED, ErrorReply

#: commands executed at once even inside MULTI (everything else is queued)
_NOT_QUEUED = frozenset({"exec", "discard", "multi", "watch", "quit", "reset"})
#: commands a RESP2 client may run while subscribed (as Redis's processCommand allows)
_SUBSCRIBED_MODE = frozenset(
    {"ping", "subscribe", "ssubscribe", "unsubscribe", "sunsubscribe", "psubscribe",
     "punsubscribe", "quit", "reset"}
)

_time_ns = time.time_ns
log = logging.getLogger("hotkv")


class NoReply:
    """Returned by handlers that answer nothing (the replica link's REPLCONF ACK)."""

    __slots__ = ()


NO_REPLY = NoReply()


def resolve(ctx: Context, argv: list[bytes], *, count: bool = False) -> CommandSpec | str:
    """The spec of this call, or the error message for an unknown name or a bad arity
    (``count``: a bad arity counts as a rejected call of the command, as Redis counts it)."""
    name = argv[0]
    spec = LOOKUP.get(name)
    if spec is None:
        spec = LOOKUP.get(name.lower())
        if spec is None:
            return errors.unknown_command(name, argv[1:])
    if spec.subcommands:
        if len(argv) >= 2:
            sub = spec.subcommands.get(argv[1].lower().decode("utf-8", "replace"))
            if sub is None:
                return errors.unknown_subcommand(argv[1], spec.name)
            spec = sub
        elif spec.handler is None:
            if count:
                spec.rejected_calls += 1
            return errors.wrong_arity(spec.name)
        # else: a container with its own handler answers the bare form (COMMAND)
    arity = spec.arity
    n = len(argv)
    if (arity > 0 and n != arity) or n < -arity:
        if count:
            spec.rejected_calls += 1
        return errors.wrong_arity(spec.name)
    return spec


def dispatch(ctx: Context, argv: list[bytes]) -> Any:
    """Run one command from a client and return its reply value."""
    spec = LOOKUP.get(argv[0])
    if spec is None or spec.subcommands or (
        spec.arity != len(argv) and (spec.arity > 0 or len(argv) < -spec.arity)
    ):
        found = resolve(ctx, argv, count=True)
        if isinstance(found, str):
            if argv[0].lower() == b"exec" and not found.startswith("ERR unknown command"):
                return _abort_exec(ctx, found)
            return _reject(ctx, found, flag_multi=True)
        spec = found
    core = ctx.core

    if not ctx.authenticated and not spec.no_auth:
        if spec.name == "exec":
            return _abort_exec(ctx, errors.NOAUTH)
        return _reject_call(ctx, spec, errors.NOAUTH)
    user = ctx.user
    if user is not None and user.restricted:
        denial = user.check(ctx, spec, argv)
        if denial is not None:
            return _reject_call(ctx, spec, denial)
    if core.gated:  # loading, a replica, MISCONF or maxmemory: the rarer refusals
        denial = _gate(ctx, core, spec, argv)
        if denial is not None:
            if spec.name == "exec" and ctx.multi is not None:
                spec.rejected_calls += 1
                return _abort_exec(ctx, denial)
            return _reject_call(ctx, spec, denial)

    if ctx.pubsub is not None and ctx.proto == 2 and spec.name not in _SUBSCRIBED_MODE:
        return _reject_call(ctx, spec, errors.subscribed_mode(spec.name))

    if ctx.multi is not None and spec.name not in _NOT_QUEUED:
        if not spec.allowed_in_multi:
            return _reject(ctx, "ERR Command not allowed inside a transaction", flag_multi=True)
        ctx.multi.append((spec, argv))
        return QUEUED

    # one clock read: the command's time snapshot and the start of its duration (as Redis
    # times commands with the wall clock); Clock.now_ms for an injected (test) clock
    started = _time_ns()
    ctx.now_ms = started // 1_000_000 if core.wall_clock else core.clock.now_ms()
    reply = execute(ctx, spec, argv, started)
    if core.blocking.ready:  # a write reached keys clients block on: serve them now
        core.blocking.serve_ready()
    return reply


def _gate(ctx: Context, core: Any, spec: CommandSpec, argv: list[bytes]) -> str | None:
    """The refusal of a command: its cluster redirection, over maxmemory, after an AOF
    write error, without enough good replicas, on a read-only replica, with the primary's
    link down or while loading (Redis's order); None when it may run here. EXEC is judged
    by what it would run (a queued write makes it a write). While a script runs past
    busy-reply-threshold only ``allow_busy`` commands pass (-BUSY)."""
    if core.busy is not None and not spec.allowed_while_busy:
        return errors.BUSY_SCRIPT
    if ctx.is_master_link:
        return errors.LOADING if core.loading and not spec.allowed_while_loading else None
    if core.cluster is not None:
        moved = _route(ctx, core.cluster, spec, argv)
        if moved is not None:
            return moved
    queued = ctx.multi if spec.name == "exec" else None
    is_write = spec.is_write or bool(queued and any(q.is_write for q, _ in queued))
    config = core.config
    if config.maxmemory:
        # in MULTI, queueing anything costs memory: refused too (not EXEC/DISCARD/QUIT/RESET)
        denyoom = spec.is_denyoom or bool(queued and any(q.is_denyoom for q, _ in queued)) or (
            ctx.multi is not None and spec.name not in _QUEUE_UNDER_OOM)
        if denyoom:
            memory = core.memory
            if memory is not None and memory.enforce():
                return errors.OOM
    if is_write:
        if core.write_error is not None:
            return errors.MISCONF
        if config.min_replicas_to_write and core.role == "master" and not _enough_replicas(core):
            return errors.NOREPLICAS
        if core.role == "slave" and config.replica_read_only:
            return errors.READONLY
    if (core.role == "slave" and not config.replica_serve_stale_data and not spec.stale_ok
            and not _link_up(core)):
        return errors.MASTERDOWN
    if core.loading and not spec.allowed_while_loading:
        return errors.LOADING
    return None


def _link_up(core: Core) -> bool:
    repl = core.replication
    return repl is not None and repl.link_up()


#: what a client in MULTI may still send over maxmemory (as Redis's processCommand)
_QUEUE_UNDER_OOM = frozenset({"exec", "discard", "quit", "reset"})


def _enough_replicas(core: Core) -> bool:
    """min-replicas-to-write: replicas online that acknowledged within min-replicas-max-lag."""
    repl = core.replication
    if repl is None:
        return False
    good = repl.good_replicas(core.config.min_replicas_max_lag)
    return bool(good >= core.config.min_replicas_to_write)


def _route(ctx: Context, cluster: Any, spec: CommandSpec, argv: list[bytes]) -> str | None:
    """Cluster mode: None when this node serves the command's keys, else -MOVED, -ASK ...

    ASKING lets exactly one following command into an importing slot (a whole MULTI block
    when sent inside it), as Redis resets the flag after every other command.
    """
    asking = ctx.asking
    if spec.name != "asking" and ctx.multi is None:
        ctx.asking = False
    if spec.name == "exec":
        keys = [key for queued, qargv in (ctx.multi or ()) for key in cluster.keys_of(queued, qargv)]
    else:
        keys = cluster.keys_of(spec, argv)
    if not keys:
        return None
    result: str | None = cluster.route(ctx, spec, keys, asking)
    return result


def execute(ctx: Context, spec: CommandSpec, argv: list[bytes], started: int = 0) -> Any:
    """Call the handler with timing and bookkeeping (dispatch, and EXEC for each command).

    ``started`` is the ``time.time_ns()`` the command's duration counts from (dispatch
    passes the read it took the snapshot from; 0 reads the clock here). The call ends in
    :func:`complete`, now, or when a deferred reply resolves (:func:`_complete_later`).
    """
    core = ctx.core
    ctx.last_cmd = spec.name
    if core.notify_flags:
        core.notifier.call = (spec.name, argv)
    if not started:
        started = _time_ns()
    stats = core.stats
    try:
        reply = spec.handler(ctx, argv)  # type: ignore[misc]
    except CommandError as exc:
        reply = ErrorReply(exc.message)
        _count_error(core, reply)
    except Exception as bug:  # a bug must cost one reply, never the connection or the server
        reply = _internal_error(core, spec, bug)  # (not `exc`: mypyc types that name once)
    # as Redis: a call failed when an error reply was made since the last command ended
    # (so EXEC fails for its own errors, not for those of the commands it ran)
    errors_made = stats.total_error_replies
    failed = errors_made > core.error_mark
    core.error_mark = errors_made
    elapsed_us = (_time_ns() - started) // 1000
    if type(reply) is not Deferred:  # complete() written out: every command ends here
        if elapsed_us < 0:
            elapsed_us = 0
        spec.calls += 1
        spec.usec += elapsed_us
        if failed:
            spec.failed_calls += 1
        if elapsed_us >= core.slowlog_threshold >= 0 and not spec.skip_slowlog:
            _slowlog_add(ctx, argv, elapsed_us)
    elif reply.done:
        accounted = reply.failed  # (its producer counted its errors)
        reply = reply.value
        complete(ctx, spec, argv, elapsed_us,
                 accounted or _count_late_error(core, reply) or failed)
    else:  # counted when the reply is known, as Redis 7.2 counts a blocked command
        _complete_later(ctx, spec, argv, reply, started, elapsed_us, failed)
    effects = core.effects
    if effects.pending:  # a handler that failed may still have written
        effects.flush()  # (inside EXEC it waits for the commit)
        if spec.is_write and core.blocking.by_key:
            core.blocking.signal(spec.keys_of(argv))
    if core.monitors and not spec.skip_monitor:
        feed_monitors(ctx, argv)
    return reply


def complete(ctx: Context, spec: CommandSpec, argv: list[bytes], elapsed_us: int,
             failed: bool) -> None:
    """The end of a call, whether answered at once or later: its duration (a wall clock
    stepping back counts 0), INFO commandstats (calls, usec, failed_calls) and the
    slowlog. Its error replies were counted in errorstats as they were made."""
    if elapsed_us < 0:
        elapsed_us = 0
    spec.calls += 1
    spec.usec += elapsed_us
    if failed:
        spec.failed_calls += 1
    core = ctx.core
    if elapsed_us >= core.slowlog_threshold >= 0 and not spec.skip_slowlog:
        _slowlog_add(ctx, argv, elapsed_us)


def _complete_later(ctx: Context, spec: CommandSpec, argv: list[bytes], deferred: Deferred,
                    started: int, elapsed_us: int, failed: bool) -> None:
    """End the call of ``deferred`` when it resolves: an error reply it resolves to counts
    in errorstats and makes the call failed, as an error raised by a handler; its duration
    runs until then, except the time of an ``idle`` wait (WAIT, a blocking pop), which
    only its handler's run counts (``elapsed_us``), as Redis times blocked commands."""

    def finish(done: Deferred) -> None:
        took = elapsed_us if done.idle else (_time_ns() - started) // 1000
        late_failure = done.failed or _count_late_error(ctx.core, done.value)
        complete(ctx, spec, argv, took, failed or late_failure)

    deferred.completion = finish


def _count_late_error(core: Core, value: Any) -> bool:
    """Count ``value`` in errorstats when it is an error reply that no handler raised (a
    deferred reply's); True then. The error mark moves along: this error belongs to a
    call that has ended, not to the one running now (if any)."""
    if not isinstance(value, ErrorReply):
        return False
    _count_error(core, value)
    core.error_mark += 1
    return True


def returned_errors(core: Core, fresh: list[ErrorReply], late: bool) -> None:
    """A handler's reply holds error replies it made without raising (a script's error
    tables, nested ones included): count ``fresh`` in errorstats as raised ones are (those
    counted where they were made, a redis.call error passed on or a redis.pcall table, are
    not again, as in Redis 7), and make the call failed. ``late``: the call has returned a
    Deferred already, which carries its failure (``Deferred.failed``); the error mark moves
    along, as in :func:`_count_late_error`."""
    for reply in fresh:
        _count_error(core, reply)
    if late:
        core.error_mark += len(fresh)
    else:
        core.error_mark = -1  # execute: "an error reply was made since the last command"


def _internal_error(core: Core, spec: CommandSpec, exc: Exception) -> ErrorReply:
    """A bug in a handler: logged, and one error reply (counted) instead of the reply."""
    log.exception("internal error in %s", spec.name, exc_info=exc)
    core.stats.unexpected_error_replies += 1
    reply = ErrorReply(f"ERR internal error in '{spec.name}': {type(exc).__name__}")
    _count_error(core, reply)
    return reply


def dispatch_script(ctx: Context, argv: list[bytes], run: Any) -> Any:
    """Run one ``redis.call`` of a running script and return its reply value.

    The same steps as ``dispatch`` for a client, with Redis's words for a script's refusals:
    lookup and arity, commands flagged ``noscript``, the caller's ACL rules, writes from a
    read-only script (EVAL_RO, ``#!lua flags=no-writes``), then the replica / MISCONF /
    maxmemory gates; no MULTI queueing, and the clock stays the script's snapshot (as Redis 7
    freezes time for a script). ``run`` is the scripting engine's record of the script.
    """
    spec = LOOKUP.get(argv[0])  # the exact-name, plain-arity case first, as dispatch does
    if spec is None or spec.subcommands or (
        spec.arity != len(argv) and (spec.arity > 0 or len(argv) < -spec.arity)
    ):
        found = resolve(ctx, argv)
        if isinstance(found, str):
            if found.startswith("ERR wrong number"):
                return ErrorReply(errors.SCRIPT_WRONG_ARITY)
            return ErrorReply(errors.SCRIPT_UNKNOWN_COMMAND)
        spec = found
    if "noscript" in spec.flags:
        return ErrorReply(errors.SCRIPT_NOSCRIPT_COMMAND)
    user = ctx.user
    if user is not None and user.restricted:
        denied = user.denial(spec, argv)
        if denied is not None:
            reason, obj = denied
            users = ctx.core.users
            if users is not None:  # ACL LOG names the context "lua", as Redis does
                users.log_denial(ctx, reason, obj.decode("utf-8", "replace"), context="lua")
            spec.rejected_calls += 1
            return ErrorReply(errors.SCRIPT_NOPERM_COMMAND if reason == "command"
                              else errors.SCRIPT_NOPERM_KEY)
    if spec.is_write and run.readonly:
        spec.rejected_calls += 1
        return ErrorReply(errors.SCRIPT_WRITE_IN_READONLY)
    core = ctx.core
    if core.gated:
        saved, core.busy = core.busy, None  # the script's own commands are never BUSY
        try:
            denial = _gate(ctx, core, spec, argv)
        finally:
            core.busy = saved
        if denial is not None:
            spec.rejected_calls += 1
            return ErrorReply(denial)
    if spec.is_write:
        run.wrote = True
    return execute(ctx, spec, argv)


def run_later(ctx: Context, name: str, argv: list[bytes], step: Callable[[], Any]) -> Any:
    """The second half of a command whose handler returned a Deferred and finishes on a
    later turn (AMEM.SEM.STORE by text once the embedding is computed): ``step`` runs with
    what :func:`execute` gives a handler: a fresh clock snapshot, the write gates checked
    again (the server may have become a replica meanwhile: its refusal is the reply), a
    CommandError or a bug turned into one error reply, and the effects it emits handed
    out through the effect log (to the AOF and the replicas). The reply is the value the
    Deferred resolves to: the call is counted then, error replies included
    (:func:`_complete_later`), once."""
    core = ctx.core
    spec = LOOKUP[name.encode()]
    ctx.now_ms = core.clock.now_ms()
    if core.gated:
        denial = _gate(ctx, core, spec, argv)
        if denial is not None:
            return ErrorReply(denial)
    try:
        reply = step()
    except CommandError as exc:
        reply = ErrorReply(exc.message)
    except Exception as bug:  # (not `exc`: mypyc types that name once per function)
        log.exception("internal error in %s", spec.name)
        core.stats.unexpected_error_replies += 1
        reply = ErrorReply(f"ERR internal error in '{spec.name}': {type(bug).__name__}")
    effects = core.effects
    if effects.pending:  # WATCH was touched as they were emitted
        effects.flush()
    return reply


def commands_processed() -> int:
    """INFO's total_commands_processed: the calls of every command, as commandstats count
    them (one counter per command instead of a second global one on the hot path)."""
    total = 0
    for spec in COMMANDS.values():
        total += spec.calls
        for sub in spec.subcommands.values():
            total += sub.calls
    return total


def _reject_call(ctx: Context, spec: CommandSpec, message: str) -> ErrorReply:
    spec.rejected_calls += 1
    return _reject(ctx, message, flag_multi=True)


def _abort_exec(ctx: Context, message: str) -> ErrorReply:
    """A rejected EXEC discards the transaction, as Redis's execCommandAbort does."""
    ctx.multi = None
    ctx.multi_error = False
    ctx.unwatch()
    reason = message[4:] if message.startswith("ERR ") else message
    return _reject(ctx, f"EXECABORT Transaction discarded because of: {reason}", flag_multi=False)


def _reject(ctx: Context, message: str, *, flag_multi: bool) -> ErrorReply:
    if flag_multi and ctx.multi is not None:
        ctx.multi_error = True
    spec_stats = ctx.core.stats
    spec_stats.total_error_replies += 1
    code = message.split(" ", 1)[0]
    spec_stats.errorstats[code] = spec_stats.errorstats.get(code, 0) + 1
    ctx.core.error_mark = spec_stats.total_error_replies
    return ErrorReply(message)


def _count_error(core: Any, reply: ErrorReply) -> None:
    stats = core.stats
    stats.total_error_replies += 1
    code = reply.split(" ", 1)[0]
    stats.errorstats[code] = stats.errorstats.get(code, 0) + 1


def feed_monitors(ctx: Context, argv: list[bytes]) -> None:
    """Send ``+<time> [0 <addr>] "cmd" "arg"`` to every MONITOR client, as Redis does."""
    now = time.time()
    parts = " ".join('"' + _monitor_escape(a) + '"' for a in argv)
    line = f"+{now:.6f} [0 {ctx.addr or 'lua'}] {parts}\r\n".encode()
    for mon in list(ctx.core.monitors):
        if mon is not ctx and mon.writer is not None:
            mon.writer(line)


def _monitor_escape(raw: bytes) -> str:
    out = []
    for b in raw:
        if b == 0x22:
            out.append('\\"')
        elif b == 0x5C:
            out.append("\\\\")
        elif b == 0x0A:
            out.append("\\n")
        elif b == 0x0D:
            out.append("\\r")
        elif b == 0x09:
            out.append("\\t")
        elif 0x20 <= b < 0x7F:
            out.append(chr(b))
        else:
            out.append(f"\\x{b:02x}")
    return "".join(out)


def _slowlog_add(ctx: Context, argv: list[bytes], elapsed_us: int) -> None:
    core = ctx.core
    maxlen = core.config.slowlog_max_len
    if maxlen <= 0:
        return
    shown = argv[:32]
    if len(argv) > 32:
        shown = [*argv[:31], b"... (%d more arguments)" % (len(argv) - 31)]
    shown = [a if len(a) <= 128 else a[:128] + b"... (%d more bytes)" % (len(a) - 128) for a in shown]
    core.slowlog.appendleft(
        SlowlogEntry(core.slowlog_next_id, int(time.time()), elapsed_us, shown, ctx.addr,
                     ctx.name.decode("utf-8", "replace"))
    )
    core.slowlog_next_id += 1
    while len(core.slowlog) > maxlen:
        core.slowlog.pop()
