"""INFO: the sections, their fields in Redis 7's order, and the text INFO answers.

Subsystems add or extend a section without this module knowing them:
``core.info_sections[name] = fn`` with ``fn() -> [(field, value), ...]``. A built-in section
of the same name (``persistence``, ``replication``) keeps its fields in place, the
subsystem's values replace them and its new fields follow.
"""

from __future__ import annotations

import asyncio
import logging
import os
import platform
import resource
import sys
import time
from collections.abc import Callable
from typing import Any

from hotkv_server import _compiled
from hotkv_server.commands.connection import REDIS_COMPAT_VERSION
from hotkv_server.engine.context import Context
from hotkv_server.engine.core import Core, current_rss
from hotkv_server.engine.dispatch import commands_processed
from hotkv_server.engine.registry import CommandSpec, all_specs, command
from hotkv_server.engine.replies import Verbatim

log = logging.getLogger("hotkv")

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

    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return "none"
    return type(loop).__module__.split(".")[0]


def _uptime_s(core: Core) -> int:
    return max(0, int(time.time() - core.started_s))


def lastsave_s(core: Core) -> int:
    """Unix time of the last successful save (the start time until one happened)."""
    persistence = core.persistence
    if persistence is not None and persistence.lastsave > 0:
        return int(persistence.lastsave)
    return int(core.started_s)


def section_server(core: Core) -> Fields:
    uname = platform.uname()
    uptime = _uptime_s(core)
    hz = core.config.hz
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
        # the mypyc-compiled hot path or its pure-Python sources (README, "the build")
        ("hot_path", "compiled" if _compiled.COMPILED else "pure"),
        ("process_id", core.pid),
        ("process_supervised", "no"),
        ("run_id", core.run_id),
        ("tcp_port", core.tcp_port or core.config.port),
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
    # waiting for a deferred reply: blocked on keys (BLPOP ...), in WAIT, or a RECALL
    blocked = sum(1 for c in clients if c.blocked or "b" in c.flags)
    return [
        ("connected_clients", len(clients) - replicas),
        ("cluster_connections", 0),
        ("maxclients", core.config.maxclients),
        ("client_recent_max_input_buffer", 0),
        ("client_recent_max_output_buffer", 0),
        ("blocked_clients", blocked),
        ("tracking_clients", 0),
        ("clients_in_timeout_table", 0),
    ]


def section_memory(core: Core) -> Fields:
    used = core.used_memory()
    peak = core.used_memory_peak = max(used, core.used_memory_peak)
    rss = current_rss()
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        total = 0
    maxmemory = core.config.maxmemory
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
        ("maxmemory_policy", core.config.maxmemory_policy),
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
        ("aof_enabled", int(core.config.appendonly)),
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
        ("evicted_clients", s.evicted_clients),
        ("keyspace_hits", s.keyspace_hits),
        ("keyspace_misses", s.keyspace_misses),
        ("pubsub_channels", len(core.pubsub.channels)),
        ("pubsub_patterns", len(core.pubsub.patterns)),
        ("pubsubshard_channels", len(core.pubsub.shard)),
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
        ("repl_backlog_size", core.config.repl_backlog_size),
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


def every_spec() -> list[CommandSpec]:
    """Every command and subcommand of the table (commandstats, CONFIG RESETSTAT)."""
    out: list[CommandSpec] = []
    for spec in all_specs():
        out.append(spec)
        out.extend(spec.subcommands[name] for name in sorted(spec.subcommands))
    return out


def section_commandstats(core: Core) -> Fields:
    fields: Fields = []
    for spec in every_spec():
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


#: built-in sections in the order INFO prints them (as Redis orders its own), each named by
#: its function's name without ``section_``
SECTIONS: dict[str, Callable[[Core], Fields]] = {
    fn.__name__.removeprefix("section_"): fn
    for fn in (section_server, section_clients, section_memory, section_persistence,
               section_stats, section_replication, section_cpu, section_commandstats,
               section_errorstats, section_cluster, section_keyspace, section_amem)
}
#: the title of a section whose name capitalized is not its title (Redis's ``# CPU``)
_TITLES = {"cpu": "CPU"}

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
    fields: Fields = builtin(core) if builtin else []
    plugins = core.info_sections.get(name)
    if plugins:
        added = [item for plugin in plugins for item in plugin()]
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
        title = _TITLES.get(name, name.capitalize())
        lines = [f"# {title}"]
        lines.extend(f"{field}:{_format(value)}" for field, value in section_fields(core, name))
        blocks.append("".join(line + "\r\n" for line in lines))
    return "\r\n".join(blocks)


@command("info", arity=-1, flags="loading stale", group="server", acl="dangerous",
         tips="nondeterministic_output request_policy:all_shards response_policy:special",
         complexity="O(1)")
def info(ctx: Context, argv: list[bytes]) -> Any:
    """INFO [section ...]
    Returns information and statistics about the server.
    """
    return Verbatim(info_text(ctx.core, argv[1:]))
