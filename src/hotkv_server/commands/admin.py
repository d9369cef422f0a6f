"""Server administration: INFO, CONFIG, FLUSHALL/FLUSHDB, TIME, LASTSAVE, SLOWLOG, MONITOR,
SHUTDOWN, SAVE/BGSAVE/BGREWRITEAOF and DEBUG SLEEP, with Redis 7's reply shapes and wording.

Subsystems plug in without this module knowing them:

* ``core.info_sections[name] = fn`` with ``fn() -> [(field, value), ...]``: a section of
  ``INFO``. A built-in section of the same name (``persistence``, ``replication``) keeps
  its fields in place, the subsystem's values replace them and its new fields follow.
* ``core.extras["persistence"]``: an object with ``save()``, ``bgsave()``, ``bgrewrite()``
  (each may return a status text or raise CommandError) and optionally ``lastsave`` (unix
  seconds of the last successful save).
* ``core.extras["config_listeners"]``: callables ``(name, value)`` run after CONFIG SET
  changed a directive; one raising ConfigError/ValueError undoes the whole CONFIG SET.
"""

from __future__ import annotations

import dataclasses
import os
import platform
import resource
import sys
import time
from collections.abc import Callable
from typing import Any

from hotkv_server.commands.connection import REDIS_COMPAT_VERSION
from hotkv_server.engine import errors
from hotkv_server.engine.args import parse_float, parse_int
from hotkv_server.engine.config import DIRECTIVES, ConfigError
from hotkv_server.engine.context import Context
from hotkv_server.engine.core import Core, Stats, current_rss
from hotkv_server.engine.dispatch import NO_REPLY, commands_processed
from hotkv_server.engine.errors import CommandError, RequestRefused
from hotkv_server.engine.registry import CommandSpec, all_specs, command, container
from hotkv_server.engine.replies import OK, Simple, Verbatim
from hotkv_server.stores.effect import FlushAll

# --- INFO ------------------------------------------------------------------------------

Fields = list[tuple[str, Any]]


def human_bytes(n: int) -> str:
    """``1139104`` -> ``1.09M``, as Redis's bytesToHuman writes memory sizes."""
    if n < 1024:
        return f"{n}B"
    value = float(n)
    for unit in "KMGTPE":
        value /= 1024
        if value < 1024 or unit == "E":
            return f"{value:.2f}{unit}"
    raise AssertionError("unreachable")


def _event_loop_name() -> str:
    import asyncio

    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return "none"
    return type(loop).__module__.split(".")[0]


def _uptime_s(core: Core) -> int:
    return max(0, int(time.time() - core.started_s))


def lastsave_s(core: Core) -> int:
    """Unix time of the last successful save (the start time until one happened)."""
    persistence = core.extras.get("persistence")
    last = getattr(persistence, "lastsave", None)
    if isinstance(last, int | float) and last > 0:
        return int(last)
    return int(core.started_s)


def section_server(core: Core) -> Fields:
    uname = platform.uname()
    uptime = _uptime_s(core)
    hz = core.config.values["hz"]
    return [
        ("redis_version", REDIS_COMPAT_VERSION),
        ("hotkv_version", core.version),
        ("redis_git_sha1", "00000000"),
        ("redis_git_dirty", 0),
        ("redis_build_id", "0"),
        ("redis_mode", "standalone"),
        ("os", f"{uname.system} {uname.release} {uname.machine}"),
        ("arch_bits", 64 if sys.maxsize > 2**32 else 32),
        ("monotonic_clock", "POSIX clock_gettime"),
        ("multiplexing_api", _event_loop_name()),
        ("python_version", platform.python_version()),
        ("process_id", core.pid),
        ("process_supervised", "no"),
        ("run_id", core.run_id),
        ("tcp_port", core.tcp_port or core.config.values["port"]),
        ("server_time_usec", time.time_ns() // 1000),
        ("uptime_in_seconds", uptime),
        ("uptime_in_days", uptime // 86400),
        ("hz", hz),
        ("configured_hz", hz),
        ("executable", os.path.abspath(sys.argv[0]) if sys.argv and sys.argv[0] else ""),
        ("config_file", os.path.abspath(core.config.path) if core.config.path else ""),
        ("io_threads_active", 0),
    ]


def section_clients(core: Core) -> Fields:
    clients = list(core.clients.values())
    replicas = sum(1 for c in clients if "S" in c.flags)
    blocked = sum(1 for c in clients if "b" in c.flags)
    return [
        ("connected_clients", len(clients) - replicas),
        ("cluster_connections", 0),
        ("maxclients", core.config.values["maxclients"]),
        ("client_recent_max_input_buffer", 0),
        ("client_recent_max_output_buffer", 0),
        ("blocked_clients", blocked),
        ("tracking_clients", 0),
        ("clients_in_timeout_table", 0),
    ]


def section_memory(core: Core) -> Fields:
    used = core.used_memory()
    peak = max(used, int(core.extras.get("used_memory_peak", 0)))
    core.extras["used_memory_peak"] = peak
    rss = current_rss()
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        total = 0
    maxmemory = core.config.values["maxmemory"]
    return [
        ("used_memory", used),
        ("used_memory_human", human_bytes(used)),
        ("used_memory_rss", rss),
        ("used_memory_rss_human", human_bytes(rss)),
        ("used_memory_peak", peak),
        ("used_memory_peak_human", human_bytes(peak)),
        ("total_system_memory", total),
        ("total_system_memory_human", human_bytes(total)),
        ("maxmemory", maxmemory),
        ("maxmemory_human", human_bytes(maxmemory)),
        ("maxmemory_policy", core.config.values["maxmemory-policy"]),
        ("mem_allocator", "pymalloc"),
    ]


def section_persistence(core: Core) -> Fields:
    return [
        ("loading", int(core.loading)),
        ("async_loading", 0),
        ("rdb_changes_since_last_save", core.dirty),
        ("rdb_bgsave_in_progress", 0),
        ("rdb_last_save_time", lastsave_s(core)),
        ("rdb_last_bgsave_status", "ok"),
        ("aof_enabled", int(bool(core.config.values["appendonly"]))),
        ("aof_rewrite_in_progress", 0),
        ("aof_rewrite_scheduled", 0),
        ("aof_last_rewrite_time_sec", -1),
        ("aof_last_bgrewrite_status", "ok"),
        ("aof_last_write_status", "err" if core.write_error else "ok"),
    ]


def section_stats(core: Core) -> Fields:
    s = core.stats
    return [
        ("total_connections_received", s.total_connections_received),
        ("total_commands_processed", commands_processed()),
        # not sampled (Redis averages 100 ms samples in its cron); 0 rather than a guess
        ("instantaneous_ops_per_sec", 0),
        ("total_net_input_bytes", s.total_net_input_bytes),
        ("total_net_output_bytes", s.total_net_output_bytes),
        ("rejected_connections", s.rejected_connections),
        ("expired_keys", s.expired_keys),
        ("evicted_keys", s.evicted_keys),
        ("keyspace_hits", s.keyspace_hits),
        ("keyspace_misses", s.keyspace_misses),
        ("pubsub_channels", 0),
        ("pubsub_patterns", 0),
        ("total_error_replies", s.total_error_replies),
        ("unexpected_error_replies", s.unexpected_error_replies),
    ]


def section_replication(core: Core) -> Fields:
    return [
        ("role", "slave" if core.is_replica() else "master"),
        ("connected_slaves", 0),
        ("master_failover_state", "no-failover"),
        ("master_replid", core.run_id),
        ("master_replid2", "0" * 40),
        ("master_repl_offset", 0),
        ("second_repl_offset", -1),
        ("repl_backlog_active", 0),
        ("repl_backlog_size", core.config.values["repl-backlog-size"]),
        ("repl_backlog_first_byte_offset", 0),
        ("repl_backlog_histlen", 0),
    ]


def section_cpu(core: Core) -> Fields:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return [
        ("used_cpu_sys", f"{own.ru_stime:.6f}"),
        ("used_cpu_user", f"{own.ru_utime:.6f}"),
        ("used_cpu_sys_children", f"{children.ru_stime:.6f}"),
        ("used_cpu_user_children", f"{children.ru_utime:.6f}"),
    ]


def _every_spec() -> list[CommandSpec]:
    out: list[CommandSpec] = []
    for spec in all_specs():
        out.append(spec)
        out.extend(spec.subcommands[name] for name in sorted(spec.subcommands))
    return out


def section_commandstats(core: Core) -> Fields:
    fields: Fields = []
    for spec in _every_spec():
        if not (spec.calls or spec.failed_calls or spec.rejected_calls):
            continue
        per_call = spec.usec / spec.calls if spec.calls else 0.0
        fields.append((
            f"cmdstat_{spec.name}",
            f"calls={spec.calls},usec={spec.usec},usec_per_call={per_call:.2f},"
            f"rejected_calls={spec.rejected_calls},failed_calls={spec.failed_calls}",
        ))
    return fields


def section_errorstats(core: Core) -> Fields:
    return [(f"errorstat_{code}", f"count={n}") for code, n in sorted(core.stats.errorstats.items())]


def section_cluster(core: Core) -> Fields:
    return [("cluster_enabled", 0)]


def keyspace_counts(core: Core) -> tuple[int, int]:
    """(keys, keys with an expiry) of the string keyspace, which is what ``db0`` counts."""
    store = core.db.stores.get("kv")
    if store is None:
        return 0, 0
    stats = store.stats(core.clock.now_ms())
    return int(stats.get("objects", 0)), int(stats.get("expires", 0))


def section_keyspace(core: Core) -> Fields:
    keys, expires = keyspace_counts(core)
    if not keys:
        return []
    return [("db0", f"keys={keys},expires={expires},avg_ttl=0")]


def section_amem(core: Core) -> Fields:
    """Per store counters; ``hotkv_server.commands.amem.amem_info`` decides them when it exists."""
    import importlib

    amem_info = getattr(importlib.import_module("hotkv_server.commands.amem"), "amem_info", None)
    if amem_info is not None:
        return list(amem_info(core))
    now = core.clock.now_ms()
    fields: Fields = []
    for name, store in core.db.stores.items():
        if name != "kv":
            fields.extend((f"{name}_{stat}", value) for stat, value in store.stats(now).items())
    return fields


#: built-in sections in the order INFO prints them (as Redis orders its own)
SECTIONS: dict[str, tuple[str, Callable[[Core], Fields]]] = {
    "server": ("Server", section_server),
    "clients": ("Clients", section_clients),
    "memory": ("Memory", section_memory),
    "persistence": ("Persistence", section_persistence),
    "stats": ("Stats", section_stats),
    "replication": ("Replication", section_replication),
    "cpu": ("CPU", section_cpu),
    "commandstats": ("Commandstats", section_commandstats),
    "errorstats": ("Errorstats", section_errorstats),
    "cluster": ("Cluster", section_cluster),
    "keyspace": ("Keyspace", section_keyspace),
    "amem": ("Amem", section_amem),
}

#: what a bare ``INFO`` (or ``INFO default``) shows: everything but the per-command table
DEFAULT_SECTIONS = frozenset(SECTIONS) - {"commandstats"}


def _format(value: Any) -> str:
    if isinstance(value, bool):
        text = "1" if value else "0"
    elif isinstance(value, bytes):
        text = value.decode("utf-8", "replace")
    elif isinstance(value, float):
        text = f"{value:.2f}"
    else:
        text = str(value)
    return text.replace("\r", " ").replace("\n", " ")


def wanted_sections(core: Core, args: list[bytes]) -> list[str]:
    """The section names ``INFO args...`` prints, in print order."""
    extra = [name for name in core.info_sections if name not in SECTIONS]
    order = [*SECTIONS, *extra]
    if not args:
        chosen = set(DEFAULT_SECTIONS) | set(extra)
    else:
        chosen = set()
        for raw in args:
            name = raw.decode("utf-8", "replace").lower()
            if name == "default":
                chosen |= DEFAULT_SECTIONS | set(extra)
            elif name in ("all", "everything"):
                chosen |= set(order)
            else:
                chosen.add(name)
    return [name for name in order if name in chosen]


def section_fields(core: Core, name: str) -> Fields:
    builtin = SECTIONS.get(name)
    fields: Fields = builtin[1](core) if builtin else []
    plugin = core.info_sections.get(name)
    if plugin is not None:
        added = list(plugin())
        replaced = dict(added)
        known = {field for field, _ in fields}
        fields = [(f, replaced.get(f, v)) for f, v in fields]
        fields.extend((f, v) for f, v in added if f not in known)
        order = _REDIS_ORDER.get(name)
        if order is not None:  # subsystems' fields at Redis's places, hotkv's own after them
            rank = {field: i for i, field in enumerate(order)}
            fields.sort(key=lambda item: rank.get(item[0], len(order)))
    return fields


def _names(text: str) -> list[str]:
    return text.split()


#: Redis 7.0's field order of the sections that subsystems add fields to
_REDIS_ORDER = {
    "persistence": _names(
        "loading async_loading current_cow_peak current_cow_size current_cow_size_age "
        "current_fork_perc current_save_keys_processed current_save_keys_total "
        "rdb_changes_since_last_save rdb_bgsave_in_progress rdb_last_save_time "
        "rdb_last_bgsave_status rdb_last_bgsave_time_sec rdb_current_bgsave_time_sec rdb_saves "
        "rdb_last_cow_size rdb_last_load_keys_expired rdb_last_load_keys_loaded aof_enabled "
        "aof_rewrite_in_progress aof_rewrite_scheduled aof_last_rewrite_time_sec "
        "aof_current_rewrite_time_sec aof_last_bgrewrite_status aof_rewrites "
        "aof_rewrites_consecutive_failures aof_last_write_status aof_last_cow_size "
        "module_fork_in_progress module_fork_last_cow_size"
    ),
    "stats": _names(
        "total_connections_received total_commands_processed instantaneous_ops_per_sec "
        "total_net_input_bytes total_net_output_bytes total_net_repl_input_bytes "
        "total_net_repl_output_bytes instantaneous_input_kbps instantaneous_output_kbps "
        "instantaneous_input_repl_kbps instantaneous_output_repl_kbps rejected_connections "
        "sync_full sync_partial_ok sync_partial_err expired_keys expired_stale_perc "
        "expired_time_cap_reached_count expire_cycle_cpu_milliseconds evicted_keys "
        "evicted_clients total_eviction_exceeded_time current_eviction_exceeded_time "
        "keyspace_hits keyspace_misses pubsub_channels pubsub_patterns pubsubshard_channels "
        "latest_fork_usec total_forks migrate_cached_sockets slave_expires_tracked_keys "
        "active_defrag_hits active_defrag_misses active_defrag_key_hits "
        "active_defrag_key_misses total_active_defrag_time current_active_defrag_time "
        "tracking_total_keys tracking_total_items tracking_total_prefixes "
        "unexpected_error_replies total_error_replies dump_payload_sanitizations "
        "total_reads_processed total_writes_processed"
    ),
}


def info_text(core: Core, args: list[bytes]) -> str:
    """The INFO body: ``# Section`` blocks of ``field:value`` lines, CRLF, blank between."""
    blocks = []
    for name in wanted_sections(core, args):
        title = SECTIONS[name][0] if name in SECTIONS else name.capitalize()
        lines = [f"# {title}"]
        lines.extend(f"{field}:{_format(value)}" for field, value in section_fields(core, name))
        blocks.append("".join(line + "\r\n" for line in lines))
    return "\r\n".join(blocks)


@command("info", arity=-1, flags="loading stale", group="server", acl="dangerous",
         tips="nondeterministic_output request_policy:all_shards response_policy:special",
         summary="Returns information and statistics about the server.",
         syntax="[section ...]", complexity="O(1)")
def info(ctx: Context, argv: list[bytes]) -> Any:
    """INFO [section ...]"""
    return Verbatim(info_text(ctx.core, argv[1:]))


# --- CONFIG ----------------------------------------------------------------------------

container("config", group="server", summary="A container for server configuration commands.")


@command("config|get", arity=-3, flags="admin noscript loading stale", group="server",
         summary="Returns the effective values of configuration parameters.",
         syntax="parameter [parameter ...]", complexity="O(N) when N is the number of configuration parameters provided")
def config_get(ctx: Context, argv: list[bytes]) -> Any:
    """CONFIG GET parameter [parameter ...]"""
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


@command("config|set", arity=-4, flags="admin noscript loading stale", group="server",
         tips="request_policy:all_nodes response_policy:all_succeeded",
         summary="Sets configuration parameters in-flight.",
         syntax="parameter value [parameter value ...]",
         complexity="O(N) when N is the number of configuration parameters provided")
def config_set(ctx: Context, argv: list[bytes]) -> Any:
    """CONFIG SET parameter value [parameter value ...]"""
    if len(argv) % 2:
        raise CommandError(errors.wrong_arity("config|set"))
    config = ctx.core.config
    pairs: list[tuple[str, str]] = []
    seen: set[str] = set()
    # validate every pair before changing anything: CONFIG SET is all or nothing
    for i in range(2, len(argv), 2):
        raw_name = argv[i].decode("utf-8", "replace")
        name = raw_name.lower()
        value = argv[i + 1].decode("utf-8", "replace")
        directive = DIRECTIVES.get(name)
        if directive is None:
            raise CommandError(f"ERR Unknown option or number of arguments for CONFIG SET - '{raw_name}'")
        if name in seen:
            raise _set_failed(name, "duplicate parameter")
        seen.add(name)
        if not directive.mutable:
            raise _set_failed(name, "can't set immutable config")
        try:
            directive.parse([value])
        except ValueError as exc:
            raise _set_failed(name, str(exc)) from None
        pairs.append((name, value))
    before = {name: config.values[name] for name, _ in pairs}
    current = pairs[0][0]
    try:
        for name, value in pairs:
            current = name
            config.set(name, [value], where="CONFIG SET", initial=False)
        for name, _ in pairs:
            current = name
            for listener in ctx.core.extras.get("config_listeners", ()):
                listener(name, config.values[name])
    except (ConfigError, ValueError) as exc:
        config.values.update(before)
        raise _set_failed(current, str(exc)) from None
    return OK


@command("config|resetstat", arity=2, flags="admin noscript loading stale", group="server",
         summary="Resets the server's statistics.")
def config_resetstat(ctx: Context, argv: list[bytes]) -> Any:
    """CONFIG RESETSTAT"""
    reset_stats(ctx.core)
    return OK


def reset_stats(core: Core) -> None:
    """Zero INFO stats, commandstats and errorstats (the slowlog stays, as in Redis)."""
    fresh = Stats()
    for f in dataclasses.fields(Stats):
        setattr(core.stats, f.name, getattr(fresh, f.name))
    for spec in _every_spec():
        spec.calls = spec.usec = spec.failed_calls = spec.rejected_calls = 0
    core.extras.pop("used_memory_peak", None)
    for reset in core.extras.get("stat_resetters", ()):  # subsystems' counters (replication)
        reset()


@command("config|rewrite", arity=2, flags="admin noscript loading stale", group="server",
         summary="Persists the effective configuration to file.")
def config_rewrite(ctx: Context, argv: list[bytes]) -> Any:
    """CONFIG REWRITE"""
    config = ctx.core.config
    if not config.path:
        raise CommandError("ERR The server is running without a config file")
    tmp = f"{config.path}.tmp-{os.getpid()}"
    try:
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(config.render())
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


_CONFIG_HELP = [
    "CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "GET <pattern>",
    "    Return parameters matching the glob-like <pattern> and their values.",
    "SET <directive> <value>",
    "    Set the configuration <directive> to <value>.",
    "RESETSTAT",
    "    Reset statistics reported by the INFO command.",
    "REWRITE",
    "    Rewrite the configuration file.",
    "HELP",
    "    Print this help.",
]


@command("config|help", arity=2, flags="loading stale", group="server",
         summary="Returns helpful text about the different subcommands.")
def config_help(ctx: Context, argv: list[bytes]) -> Any:
    """CONFIG HELP"""
    return [Simple(line) for line in _CONFIG_HELP]


# --- data, time, saves -----------------------------------------------------------------


def _flush(ctx: Context, argv: list[bytes]) -> Any:
    if len(argv) > 2 or (len(argv) == 2 and argv[1].upper() not in (b"ASYNC", b"SYNC")):
        raise CommandError(errors.SYNTAX)
    ctx.emit(FlushAll())
    return OK


@command("flushall", arity=-1, flags="write", group="server", acl="keyspace dangerous",
         tips="request_policy:all_shards response_policy:all_succeeded",
         summary="Removes all keys and memories from every store.", syntax="[ASYNC|SYNC]",
         complexity="O(N) where N is the total number of keys and memories")
def flushall(ctx: Context, argv: list[bytes]) -> Any:
    """FLUSHALL [ASYNC|SYNC]"""
    return _flush(ctx, argv)


@command("flushdb", arity=-1, flags="write", group="server", acl="keyspace dangerous",
         tips="request_policy:all_shards response_policy:all_succeeded",
         summary="Removes all keys and memories (there is one database, so as FLUSHALL).",
         syntax="[ASYNC|SYNC]", complexity="O(N) where N is the total number of keys and memories")
def flushdb(ctx: Context, argv: list[bytes]) -> Any:
    """FLUSHDB [ASYNC|SYNC]"""
    return _flush(ctx, argv)


@command("time", arity=1, flags="loading stale fast", group="server", tips="nondeterministic_output",
         summary="Returns the server time.")
def time_(ctx: Context, argv: list[bytes]) -> Any:
    """TIME"""
    # the server's one clock has ms resolution; the microseconds are its ms * 1000
    now_ms = ctx.now_ms
    return [b"%d" % (now_ms // 1000), b"%d" % ((now_ms % 1000) * 1000)]


@command("lastsave", arity=1, flags="loading stale fast", group="server", acl="admin dangerous",
         tips="nondeterministic_output",
         summary="Returns the Unix timestamp of the last successful save to disk.")
def lastsave(ctx: Context, argv: list[bytes]) -> Any:
    """LASTSAVE"""
    return lastsave_s(ctx.core)


NO_PERSISTENCE = "ERR persistence is not available in this server"


def _persistence_call(ctx: Context, method: str, done: str) -> Any:
    persistence = ctx.core.extras.get("persistence")
    hook = getattr(persistence, method, None)
    if hook is None:
        raise CommandError(NO_PERSISTENCE)
    try:
        result = hook()
    except RequestRefused as exc:
        raise CommandError(exc.message) from None
    return Simple(result) if isinstance(result, str) and result else Simple(done)


@command("save", arity=1, flags="admin noscript no_async_loading no_multi", group="server",
         summary="Synchronously saves the whole state to disk.",
         complexity="O(N) where N is the total number of keys and memories")
def save(ctx: Context, argv: list[bytes]) -> Any:
    """SAVE"""
    return _persistence_call(ctx, "save", "OK")


@command("bgsave", arity=-1, flags="admin noscript no_async_loading", group="server",
         summary="Asynchronously saves the whole state to disk.", syntax="[SCHEDULE]",
         complexity="O(N) where N is the total number of keys and memories")
def bgsave(ctx: Context, argv: list[bytes]) -> Any:
    """BGSAVE [SCHEDULE]"""
    if len(argv) > 2 or (len(argv) == 2 and argv[1].upper() != b"SCHEDULE"):
        raise CommandError(errors.SYNTAX)
    return _persistence_call(ctx, "bgsave", "Background saving started")


@command("bgrewriteaof", arity=1, flags="admin noscript no_async_loading", group="server",
         summary="Asynchronously rewrites the append-only file to a compact base snapshot.",
         complexity="O(N) where N is the total number of keys and memories")
def bgrewriteaof(ctx: Context, argv: list[bytes]) -> Any:
    """BGREWRITEAOF"""
    return _persistence_call(ctx, "bgrewrite", "Background append only file rewriting started")


# --- SLOWLOG ---------------------------------------------------------------------------

container("slowlog", group="server", summary="A container for slow log commands.")


@command("slowlog|get", arity=-2, flags="admin loading stale", group="server",
         tips="request_policy:all_nodes nondeterministic_output",
         summary="Returns the slow log's entries.", syntax="[count]",
         complexity="O(N) where N is the number of entries returned")
def slowlog_get(ctx: Context, argv: list[bytes]) -> Any:
    """SLOWLOG GET [count]"""
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


@command("slowlog|len", arity=2, flags="admin loading stale", group="server",
         tips="request_policy:all_nodes response_policy:agg_sum nondeterministic_output",
         summary="Returns the number of entries in the slow log.")
def slowlog_len(ctx: Context, argv: list[bytes]) -> Any:
    """SLOWLOG LEN"""
    return len(ctx.core.slowlog)


@command("slowlog|reset", arity=2, flags="admin loading stale", group="server",
         tips="request_policy:all_nodes response_policy:all_succeeded",
         summary="Clears all entries from the slow log.",
         complexity="O(N) where N is the number of entries in the slowlog")
def slowlog_reset(ctx: Context, argv: list[bytes]) -> Any:
    """SLOWLOG RESET"""
    ctx.core.slowlog.clear()
    return OK


_SLOWLOG_HELP = [
    "SLOWLOG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "GET [<count>]",
    "    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
    "    Entries are made of:",
    "    id, timestamp, time in microseconds, arguments array, client IP and port,",
    "    client name",
    "LEN",
    "    Return the length of the slowlog.",
    "RESET",
    "    Reset the slowlog.",
    "HELP",
    "    Print this help.",
]


@command("slowlog|help", arity=2, flags="loading stale", group="server",
         summary="Returns helpful text about the different subcommands.")
def slowlog_help(ctx: Context, argv: list[bytes]) -> Any:
    """SLOWLOG HELP"""
    return [Simple(line) for line in _SLOWLOG_HELP]


# --- MONITOR, SHUTDOWN, DEBUG ----------------------------------------------------------


@command("monitor", arity=1, flags="admin noscript loading stale", group="server",
         summary="Listens for all requests received by the server in real time.")
def monitor(ctx: Context, argv: list[bytes]) -> Any:
    """MONITOR"""
    # dispatch writes every later command's line to this client through ctx.writer
    ctx.core.monitors.add(ctx)
    return OK


@command("shutdown", arity=-1, flags="admin noscript loading stale no_multi allow_busy",
         group="server", summary="Synchronously saves the state to disk and shuts down the server.",
         syntax="[NOSAVE|SAVE] [NOW] [FORCE]", complexity="O(N) when saving, where N is the total number of keys and memories")
def shutdown(ctx: Context, argv: list[bytes]) -> Any:
    """SHUTDOWN [NOSAVE|SAVE] [NOW] [FORCE]"""
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


@command("debug", arity=-2, flags="admin noscript loading stale", group="server",
         summary="A container for debugging commands (only SLEEP).", syntax="SLEEP seconds",
         complexity="Depends on subcommand.")
def debug(ctx: Context, argv: list[bytes]) -> Any:
    """DEBUG SLEEP seconds | DEBUG HELP"""
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
