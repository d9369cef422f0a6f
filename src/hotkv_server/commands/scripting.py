"""Scripting: EVAL EVALSHA EVAL_RO EVALSHA_RO and SCRIPT LOAD|EXISTS|FLUSH|KILL|DEBUG|HELP.

Scripts run on a real Lua 5.1 interpreter (``hotkv_server.scripting``) with Redis 7's
semantics; how they run (the script thread, BUSY, SCRIPT KILL) is described in
``scripting/engine.py`` and docs/scripting.md. Their writes are ordinary effects that leave
as one record after the script, so the AOF and replicas never run a script again.
"""

from __future__ import annotations

from typing import Any

from hotkv_server.engine import errors
from hotkv_server.engine.args import parse_int
from hotkv_server.engine.context import Context
from hotkv_server.engine.dispatch import feed_monitors
from hotkv_server.engine.errors import CommandError
from hotkv_server.engine.registry import KeySpec, SpecFields, container, family, help_lines
from hotkv_server.engine.replies import OK, Simple
from hotkv_server.scripting.engine import Script, ScriptEngine, engine_of

command = family(group="scripting")

_EVAL_SYNTAX = "script numkeys [key [key ...]] [arg [arg ...]]"
_EVALSHA_SYNTAX = "sha1 numkeys [key [key ...]] [arg [arg ...]]"
_EVAL_COMPLEXITY = "Depends on the script that is executed."


def _keys_and_args(argv: list[bytes]) -> tuple[list[bytes], list[bytes]]:
    raw = argv[2]
    if len(raw) == 1 and 48 <= raw[0] <= 57:  # one digit: the usual numkeys
        numkeys = raw[0] - 48
    else:
        parsed = parse_int(raw)
        if parsed is None:
            raise CommandError(errors.NOT_INTEGER)
        if parsed < 0:
            raise CommandError("ERR Number of keys can't be negative")
        numkeys = parsed
    if numkeys > len(argv) - 3:
        raise CommandError("ERR Number of keys can't be greater than number of args")
    end = 3 + numkeys
    return argv[3:end], argv[end:]


def _run(ctx: Context, argv: list[bytes], script: Script, readonly: bool,
         keys: list[bytes], args: list[bytes], engine: ScriptEngine) -> Any:
    if ctx.core.monitors:  # EVAL skips the usual feed (skip_monitor) to show itself first
        feed_monitors(ctx, argv)
    return engine.run(ctx, script, keys, args, readonly)


def _eval(ctx: Context, argv: list[bytes], readonly: bool) -> Any:
    keys, args = _keys_and_args(argv)  # Redis checks numkeys before compiling
    engine = engine_of(ctx.core)
    found = engine.load(argv[1])
    if isinstance(found, str):
        raise CommandError(found)
    return _run(ctx, argv, found, readonly, keys, args, engine)


def _evalsha(ctx: Context, argv: list[bytes], readonly: bool) -> Any:
    keys, args = _keys_and_args(argv)
    core = ctx.core
    engine = engine_of(core)
    found = engine.by_sha.get(argv[1])
    if found is None:
        found = engine.by_sha.get(argv[1].lower())
        if found is None:
            raise CommandError(errors.NOSCRIPT)
    if core.monitors:  # EVALSHA skips the usual feed (skip_monitor) to show itself first
        feed_monitors(ctx, argv)
    return engine.run(ctx, found, keys, args, readonly)


#: what EVAL and EVALSHA share
_EVAL = SpecFields(arity=-3, flags="noscript stale skip_monitor no_mandatory_keys", since="2.6.0",
                   complexity=_EVAL_COMPLEXITY)


@command("eval", _EVAL,
         key_specs=(KeySpec(2, ("RW", "access", "update"), keynum=True, arg="key",
                   notes="We cannot tell how the keys will be used so we assume the "
                   "worst, RW and UPDATE"),))
def eval_(ctx: Context, argv: list[bytes]) -> Any:
    """EVAL script numkeys [key [key ...]] [arg [arg ...]]
    Executes a server-side Lua script.
    """
    return _eval(ctx, argv, readonly=False)


@command("evalsha", _EVAL,
         key_specs=(KeySpec(2, ("RW", "access", "update"), keynum=True, arg="key"),))
def evalsha(ctx: Context, argv: list[bytes]) -> Any:
    """EVALSHA sha1 numkeys [key [key ...]] [arg [arg ...]]
    Executes a server-side Lua script by SHA1 digest.
    """
    return _evalsha(ctx, argv, readonly=False)


#: what EVAL_RO and EVALSHA_RO share
_EVAL_RO = SpecFields(arity=-3, flags="readonly noscript stale skip_monitor no_mandatory_keys",
                      since="7.0.0", complexity=_EVAL_COMPLEXITY)


@command("eval_ro", _EVAL_RO,
         key_specs=(KeySpec(2, ("RO", "access"), keynum=True, arg="key",
                   notes="We cannot tell how the keys will be used so we assume the "
                   "worst, RO and ACCESS"),))
def eval_ro(ctx: Context, argv: list[bytes]) -> Any:
    """EVAL_RO script numkeys [key [key ...]] [arg [arg ...]]
    Executes a read-only server-side Lua script.
    """
    return _eval(ctx, argv, readonly=True)


@command("evalsha_ro", _EVAL_RO, key_specs=(KeySpec(2, ("RO", "access"), keynum=True, arg="key"),))
def evalsha_ro(ctx: Context, argv: list[bytes]) -> Any:
    """EVALSHA_RO sha1 numkeys [key [key ...]] [arg [arg ...]]
    Executes a read-only server-side Lua script by SHA1 digest.
    """
    return _evalsha(ctx, argv, readonly=True)


container("script", group="scripting", summary="A container for Lua scripts management commands.",
          since="2.6.0")


@command("script|load", arity=3, flags="noscript stale",
         tips="request_policy:all_nodes response_policy:all_succeeded", since="2.6.0",
         complexity="O(N) with N being the length in bytes of the script body.",
         help="LOAD <script>\n    Load a script into the scripts cache without executing it.")
def script_load(ctx: Context, argv: list[bytes]) -> Any:
    """SCRIPT LOAD script
    Loads a server-side Lua script to the script cache.
    """
    found = engine_of(ctx.core).load(argv[2])
    if isinstance(found, str):
        raise CommandError(found)
    return found.sha.encode()


@command("script|exists", arity=-3, flags="noscript",
         tips="request_policy:all_shards response_policy:agg_logical_and", since="2.6.0",
         complexity="O(N) with N being the number of scripts to check (so checking a single "
                    "script is an O(1) operation).",
         help="EXISTS <sha1> [<sha1> ...]\n    Return information about the existence of the scripts in the script cache.")
def script_exists(ctx: Context, argv: list[bytes]) -> Any:
    """SCRIPT EXISTS sha1 [sha1 ...]
    Determines whether server-side Lua scripts exist in the script cache.
    """
    cache = engine_of(ctx.core).cache
    return [1 if sha.decode("latin-1").lower() in cache else 0 for sha in argv[2:]]


@command("script|flush", arity=-2, flags="noscript",
         tips="request_policy:all_nodes response_policy:all_succeeded", since="2.6.0",
         complexity="O(N) with N being the number of scripts in cache",
         help="FLUSH [ASYNC|SYNC]\n    Flush the Lua scripts cache. Very dangerous on replicas.")
def script_flush(ctx: Context, argv: list[bytes]) -> Any:
    """SCRIPT FLUSH [ASYNC|SYNC]
    Removes all server-side Lua scripts from the script cache.
    """
    if len(argv) > 3 or (len(argv) == 3 and argv[2].upper() not in (b"ASYNC", b"SYNC")):
        raise CommandError("ERR SCRIPT FLUSH only support SYNC|ASYNC option")
    engine_of(ctx.core).flush()
    return OK


@command("script|kill", arity=2, flags="noscript allow_busy",
         tips="request_policy:all_shards response_policy:one_succeeded", since="2.6.0",
         help="KILL\n    Kill the currently executing Lua script.")
def script_kill(ctx: Context, argv: list[bytes]) -> Any:
    """SCRIPT KILL
    Terminates a server-side Lua script during execution.
    """
    engine = ctx.core.scripts
    if engine is None:
        raise CommandError(errors.NOTBUSY)
    refusal = engine.kill()
    if refusal is not None:
        raise CommandError(refusal)
    return OK


@command("script|debug", arity=3, flags="noscript", since="3.2.0", complexity="O(1)",
         help="DEBUG (YES|SYNC|NO)\n    Set the debug mode for subsequent scripts executed (hotkv: only NO).")
def script_debug(ctx: Context, argv: list[bytes]) -> Any:
    """SCRIPT DEBUG YES|SYNC|NO
    Sets the debug mode of server-side Lua scripts.
    """
    mode = argv[2].upper()
    if mode == b"NO":
        return OK
    if mode in (b"YES", b"SYNC"):
        raise CommandError("ERR hotkv has no Lua debugger: SCRIPT DEBUG YES and SYNC are not supported")
    raise CommandError("ERR Use SCRIPT DEBUG YES/SYNC/NO")


@command("script|help", arity=2, flags="loading stale", since="5.0.0",
         help="HELP\n    Prints this help.")
def script_help(ctx: Context, argv: list[bytes]) -> Any:
    """SCRIPT HELP
    Returns helpful text about the different subcommands.
    """
    return [Simple(line) for line in help_lines("script", ("debug", "exists", "flush", "kill", "load"))]

