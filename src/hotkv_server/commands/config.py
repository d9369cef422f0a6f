"""CONFIG GET, SET, RESETSTAT, REWRITE and HELP.

After CONFIG SET changed a directive, ``core.config_changed`` tells the core and every
subsystem (``Subsystem.config_changed``); one raising ConfigError/ValueError undoes the
whole CONFIG SET.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any

from hotkv_server.commands.info import every_spec
from hotkv_server.engine import errors
from hotkv_server.engine.config import DIRECTIVES, ConfigError, canonical
from hotkv_server.engine.context import Context
from hotkv_server.engine.core import Core, Stats
from hotkv_server.engine.errors import CommandError
from hotkv_server.engine.registry import container, family, help_lines
from hotkv_server.engine.replies import OK, Simple

command = family(group="server")

container("config", group="server", summary="A container for server configuration commands.")


@command("config|get", arity=-3, flags="admin noscript loading stale",
         complexity="O(N) when N is the number of configuration parameters provided",
         help="GET <pattern>\n    Return parameters matching the glob-like <pattern> and their values.")
def config_get(ctx: Context, argv: list[bytes]) -> Any:
    """CONFIG GET parameter [parameter ...]
    Returns the effective values of configuration parameters.
    """
    core = ctx.core
    found: dict[str, str] = {}
    for raw in argv[2:]:
        for name, value in core.config.matching(raw.decode("utf-8", "replace")):
            found.setdefault(name, value)
    if "port" in found and core.tcp_port:
        found["port"] = str(core.tcp_port)  # ``--port 0`` picks a free port: report that one
    return found


def _set_failed(name: str, reason: str) -> CommandError:
    return CommandError(f"ERR CONFIG SET failed (possibly related to argument '{name}') - {reason}")


@command("config|set", arity=-4, flags="admin noscript loading stale",
         tips="request_policy:all_nodes response_policy:all_succeeded",
         complexity="O(N) when N is the number of configuration parameters provided",
         help="SET <directive> <value>\n    Set the configuration <directive> to <value>.")
def config_set(ctx: Context, argv: list[bytes]) -> Any:
    """CONFIG SET parameter value [parameter value ...]
    Sets configuration parameters in-flight.
    """
    if len(argv) % 2:
        raise CommandError(errors.wrong_arity("config|set"))
    config = ctx.core.config
    pairs: list[tuple[str, str]] = []
    seen: set[str] = set()
    # validate every pair before changing anything: CONFIG SET is all or nothing
    for i in range(2, len(argv), 2):
        raw_name = argv[i].decode("utf-8", "replace")
        name = canonical(raw_name)
        value = argv[i + 1].decode("utf-8", "replace")
        directive = DIRECTIVES.get(name)
        if directive is None:
            raise CommandError(f"ERR Unknown option or number of arguments for CONFIG SET - '{raw_name}'")
        shown = raw_name.lower()  # errors name the parameter as written (an alias too)
        if name in seen:
            raise _set_failed(shown, "duplicate parameter")
        seen.add(name)
        if not directive.mutable:
            raise _set_failed(shown, "can't set immutable config")
        try:
            directive.parse([value])
        except ValueError as exc:
            raise _set_failed(shown, str(exc)) from None
        pairs.append((name, value))
    before = {name: config.get(name) for name, _ in pairs}
    current = pairs[0][0]
    try:
        for name, value in pairs:
            current = name
            config.set(name, [value], where="CONFIG SET", initial=False)
        for name, _ in pairs:
            current = name
            ctx.core.config_changed(name, config.get(name))
    except (ConfigError, ValueError) as exc:
        config.restore(before)
        raise _set_failed(current, str(exc)) from None
    return OK


@command("config|resetstat", arity=2, flags="admin noscript loading stale",
         help="RESETSTAT\n    Reset statistics reported by the INFO command.")
def config_resetstat(ctx: Context, argv: list[bytes]) -> Any:
    """CONFIG RESETSTAT
    Resets the server's statistics.
    """
    reset_stats(ctx.core)
    return OK


def reset_stats(core: Core) -> None:
    """Zero INFO stats, commandstats and errorstats (the slowlog stays, as in Redis)."""
    fresh = Stats()
    for f in dataclasses.fields(Stats):
        setattr(core.stats, f.name, getattr(fresh, f.name))
    for spec in every_spec():
        spec.calls = spec.usec = spec.failed_calls = spec.rejected_calls = 0
    core.used_memory_peak = 0
    for sub in core.subsystems:  # their counters (replication's)
        sub.reset_stats()


@command("config|rewrite", arity=2, flags="admin noscript loading stale",
         help="REWRITE\n    Rewrite the configuration file.")
def config_rewrite(ctx: Context, argv: list[bytes]) -> Any:
    """CONFIG REWRITE
    Persists the effective configuration to file.
    """
    config = ctx.core.config
    if not config.path:
        raise CommandError("ERR The server is running without a config file")
    current: dict[str, Any] = {}
    table = ctx.core.users
    if table is not None and not config.aclfile:
        users = table.users
        # as Redis: the users as they are now (ACL SETUSER included), passwords as their
        # SHA-256 (#...), never in clear; with an aclfile the users live there instead
        current["user"] = [users[name].describe().split()[1:] for name in sorted(users)]
    tmp = f"{config.path}.tmp-{os.getpid()}"
    try:
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(config.render(current))
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, config.path)
    except OSError as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise CommandError(f"ERR Rewriting config file: {exc.strerror}") from None
    return OK




@command("config|help", arity=2, flags="loading stale")
def config_help(ctx: Context, argv: list[bytes]) -> Any:
    """CONFIG HELP
    Returns helpful text about the different subcommands.
    """
    return [Simple(line) for line in help_lines("config")]
