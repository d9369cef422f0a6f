"""The server's state apart from the network (Core) and each client's session (Context).

The two refer to each other (a Context belongs to its Core; the Core lists its clients),
so they share this module rather than importing each other.

Handlers reach everything through ``ctx.core``. Tests can build a Core with a
``ManualClock`` and drive ``dispatch`` without sockets.
"""

from __future__ import annotations

import os
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from mypy_extensions import mypyc_attr

from hotkv_server import __version__
from hotkv_server.engine.clock import Clock
from hotkv_server.engine.config import Config, output_limits, short_header
from hotkv_server.engine.effects import EffectLog
from hotkv_server.engine.notify import Notifier
from hotkv_server.engine.pubsub import Hub
from hotkv_server.engine.turn import RepliesWithheld, Turn
from hotkv_server.stores.database import Database, default_database
from hotkv_server.stores.hashes import set_listpack_limits
from hotkv_server.stores.sets import set_intset_limit
from hotkv_server.stores.zsetvalue import set_listpack_limits as set_zset_limits

if TYPE_CHECKING:
    from hotkv_server.engine.deferred import Deferred
    from hotkv_server.engine.registry import CommandSpec
    from hotkv_server.engine.services import (
        EmbeddingService,
        MemoryLimit,
        ScriptService,
        SearchThreads,
    )
    from hotkv_server.engine.topology import Node, Topology
    from hotkv_server.stores.effect import Effect

__all__ = ["ClusterService", "Context", "Core", "Host", "InfoSection", "PersistenceService",
           "ReplicationService", "RepliesWithheld", "SlowlogEntry", "Stats", "Subsystem",
           "current_rss"]

#: an INFO section's fields, as a subsystem computes them
InfoSection = Callable[[], list[tuple[str, Any]]]


@dataclass
class Stats:
    """Counters behind INFO stats (Redis field names where Redis has them)."""

    total_connections_received: int = 0
    rejected_connections: int = 0
    expired_keys: int = 0
    evicted_keys: int = 0
    evicted_clients: int = 0
    keyspace_hits: int = 0
    keyspace_misses: int = 0
    total_net_input_bytes: int = 0
    total_net_output_bytes: int = 0
    total_error_replies: int = 0
    unexpected_error_replies: int = 0
    errorstats: dict[str, int] = field(default_factory=dict)


@dataclass
class SlowlogEntry:
    id: int
    start_s: int
    duration_us: int
    argv: list[bytes]
    addr: str
    name: str


class Core:
    """Everything a command may touch, owned by the event-loop thread."""

    def __init__(
        self,
        config: Config | None = None,
        clock: Clock | None = None,
        db: Database | None = None,
    ) -> None:
        self.config = config or Config()
        self.clock = clock or Clock()
        #: the real wall clock (not a test's ManualClock): dispatch reads time.time_ns inline
        self.wall_clock = type(self.clock) is Clock
        self.db = db or default_database()
        self.version = __version__
        self.run_id = os.urandom(20).hex()
        self.started_s = time.time()
        self.pid = os.getpid()
        self.stats = Stats()
        self.clients: dict[int, Context] = {}
        self._next_client_id = 1
        self.monitors: set[Context] = set()
        #: channels, patterns and shard channels with their subscribers (engine/pubsub.py)
        self.pubsub = Hub()
        #: total_error_replies when the last command ended or was refused: a command failed
        #: if errors were replied since (Redis's incrCommandStatsOnError)
        self.error_mark = 0
        self.slowlog: deque[SlowlogEntry] = deque()
        self.slowlog_next_id = 0
        #: key -> contexts watching it (WATCH); any write naming the key makes them dirty
        self.watchers: dict[bytes, set[Context]] = {}
        #: the one pipeline every write goes through (engine/effects.py)
        self.effects = EffectLog(self.db, self.watchers)
        #: notify-keyspace-events as bits (0, the default, costs a write nothing): the
        #: notifier hears the effect log's records and the stores' expiries
        self.notify_flags = 0
        self.notifier = Notifier(self)
        self.db.observe_expiry(self.expired)
        #: the reply barrier of the current event-loop turn (engine/turn.py)
        self.turn = Turn()
        # --- the dispatch point's gates (``gated``) ---
        #: data is being loaded: commands not flagged ``loading`` answer -LOADING
        self.loading = False
        #: the script running past busy-reply-threshold (scripting/engine.py ``Run``), else
        #: None: while set, commands not flagged ``allow_busy`` answer -BUSY
        self.busy: Any = None
        #: ``"master"`` or ``"slave"`` (INFO's words)
        self.role = "master"
        #: why writes are refused with -MISCONF (the AOF can't be written), else None
        self.write_error: str | None = None
        #: maxmemory or min-replicas-to-write is set (kept by ``_config_changed``)
        self.limited = False
        self.shutdown_requested: Callable[[bool | None], None] | None = None
        self.used_memory_fn: Callable[[], int] | None = None
        #: INFO sections filled by subsystems: name -> each subsystem's fields, in the order
        #: they were attached (merged into a built-in section of the same name)
        self.info_sections: dict[str, list[InfoSection]] = {}
        #: the subsystems, in the order the app attached them (``attach``)
        self.subsystems: list[Subsystem] = []
        self.tcp_port = 0
        #: the port TLS clients connect to while one is served (server/app.py, rebind.py), else 0
        self.tls_port = 0
        self.users: UserDirectory | None = None  # the ACL module's UserTable (commands/acl.py's attach)
        # The subsystems' parts that others reach, each set by its subsystem when the app
        # attaches it (server/app.py, ``Server._open_subsystems``, in that order); None
        # while it is not attached. Each is typed against a protocol of the engine.
        #: protected-mode (commands/acl.py): a new connection's peer address -> the error
        #: that refuses it, or None to let it in
        self.connection_gate: Callable[[Any], str | None] | None = None
        #: the persistence and replication subsystems
        self.persistence: PersistenceService | None = None
        self.replication: ReplicationService | None = None
        #: the maxmemory guard (server/memory.py), asked before a denyoom command
        self.memory: MemoryLimit | None = None
        #: clients CLIENT NO-EVICT ON keeps out of maxmemory-clients' eviction, by id
        self.no_evict_clients: set[int] = set()
        #: the highest used_memory INFO or MEMORY STATS saw (CONFIG RESETSTAT forgets it)
        self.used_memory_peak = 0
        #: RECALL's search threads (commands/sem_service.py)
        self.search: SearchThreads | None = None
        #: sees each request held behind a deferred reply (sem_service: a pipelined store
        #: by text starts embedding)
        self.lookahead: Callable[[Context, list[bytes]], None] | None = None
        #: the embedders, their worker pool and cache (hotkv_server.embedding)
        self.embed: EmbeddingService | None = None
        #: the Lua script engine (scripting/engine.py ``engine_of``), made by the first
        #: script that runs (a Lua state costs ~1 MB), not by the app
        self.scripts: ScriptService | None = None
        from hotkv_server.engine.blocking import Blocking

        #: clients blocked on keys (BLPOP ...): the dispatch point signals written keys
        self.blocking = Blocking(self)
        #: the cluster subsystem when ``cluster-enabled`` is on (hotkv_server.cluster):
        #: commands with keys are routed
        self.cluster: ClusterService | None = None
        #: slowlog-log-slower-than, kept here so the dispatch point reads one attribute
        self.slowlog_threshold = self.config.slowlog_log_slower_than
        #: the header of a read that needs no check (``engine.config.short_header``)
        self.short_header = short_header(self.config.proto_max_bulk_len)
        self.notifier.configure(self.config.notify_keyspace_events)
        self._encoding_limits()
        self.normal_output_hard_limit = self._normal_output_limit()
        self._update_limited()

    @property
    def gated(self) -> bool:
        """True while any of the dispatch point's gates may refuse a command (loading, a
        cluster, a script past its busy time, a replica, MISCONF, maxmemory or
        min-replicas-to-write set): with it False, dispatch tests nothing else. (Computed
        from plain fields at each read: Core is a native class of the compiled hot path,
        whose fields are C fields, and a native class takes no other descriptor, such as
        engine/watched.py's ``Watched``.)"""
        return (
            self.loading
            or self.cluster is not None
            or self.busy is not None
            or self.role == "slave"
            or self.write_error is not None
            or self.limited
        )

    def _update_limited(self) -> None:
        self.limited = bool(self.config.maxmemory or self.config.min_replicas_to_write)

    def _normal_output_limit(self) -> int:
        return output_limits(self.config.client_output_buffer_limit, "normal")[0]

    def _config_changed(self, name: str, value: Any) -> None:
        if name == "slowlog-log-slower-than":
            self.slowlog_threshold = int(value)
        elif name == "client-output-buffer-limit":
            self.normal_output_hard_limit = self._normal_output_limit()
        elif name == "proto-max-bulk-len":
            self.short_header = short_header(int(value))
        elif name in ("maxmemory", "min-replicas-to-write"):
            self._update_limited()
        elif name == "notify-keyspace-events":
            self.notifier.configure(value)
        elif name.startswith(("hash-max-listpack-", "zset-max-listpack-", "set-max-intset-")):
            self._encoding_limits()

    def _encoding_limits(self) -> None:
        """Hand hash-max-listpack-*, zset-max-listpack-* and set-max-intset-entries to the
        value types (values the process shares, as Redis's server-wide limits: each value
        applies them at its next write)."""
        config = self.config
        set_listpack_limits(config.hash_max_listpack_entries, config.hash_max_listpack_value)
        set_zset_limits(config.zset_max_listpack_entries, config.zset_max_listpack_value)
        set_intset_limit(config.set_max_intset_entries)

    # --- subsystems ----------------------------------------------------------------
    def attach(self, sub: Subsystem) -> Subsystem:
        """Add a subsystem (once): its INFO sections now show, its hooks are called."""
        if sub not in self.subsystems:
            self.subsystems.append(sub)
            for name, fields in sub.info_sections().items():
                self.info_sections.setdefault(name, []).append(fields)
        return sub

    def detach(self, sub: Subsystem) -> None:
        """Remove a subsystem and its INFO sections (tests, a re-attached ACL table)."""
        if sub in self.subsystems:
            self.subsystems.remove(sub)
            for name, fields in sub.info_sections().items():
                found = self.info_sections.get(name, [])
                if fields in found:
                    found.remove(fields)

    def config_changed(self, name: str, value: Any) -> None:
        """After CONFIG SET stored a new value: the core's own settings, then every
        subsystem in order (ConfigError/ValueError from one undoes the CONFIG SET)."""
        self._config_changed(name, value)
        for sub in self.subsystems:
            sub.config_changed(name, value)

    def client_gone(self, ctx: Context) -> None:
        """A client's connection closed: its blocked command, then every subsystem."""
        self.blocking.client_gone(ctx)
        for sub in self.subsystems:
            sub.client_gone(ctx)

    # --- clients ------------------------------------------------------------------
    def new_client_id(self) -> int:
        cid = self._next_client_id
        self._next_client_id += 1
        return cid

    # --- effects ------------------------------------------------------------------
    @property
    def dirty(self) -> int:
        """Writes since the last save, as Redis counts them (``effects.dirty``)."""
        return self.effects.dirty

    @dirty.setter
    def dirty(self, value: int) -> None:
        self.effects.dirty = value

    def touch_all(self) -> None:
        """Every WATCH fails (the whole data set was replaced)."""
        self.effects.touch_all()

    def expired(self, store: str, ident: bytes, entry: bytes | None) -> None:
        """A store removed an entry whose deadline passed (lazily or actively)."""
        if store == "kv" and self.watchers:
            self.effects.touch([ident])  # an expired key breaks a WATCH, as in Redis
        if self.notify_flags:
            self.notifier.expired(store, ident, entry)

    # --- memory -------------------------------------------------------------------
    def used_memory(self) -> int:
        if self.used_memory_fn is not None:
            return self.used_memory_fn()
        return current_rss()

    def is_replica(self) -> bool:
        return self.role == "slave"


class Context:
    """One client's session: protocol, identity, transaction state, and the clock snapshot.

    ``now_ms`` is set by the dispatch point before every handler call (once for a whole
    EXEC), so a handler and every effect it makes agree on the time.
    """

    __slots__ = (
        "addr",
        "asking",
        "authenticated",
        "blocked",
        "close_after_reply",
        "closer",
        "cluster_readonly",
        "conn",
        "core",
        "created_ms",
        "db",
        "dirty_cas",
        "emit",
        "flags",
        "id",
        "is_master_link",
        "killed",
        "laddr",
        "last_cmd",
        "last_interaction_ms",
        "lib_name",
        "lib_ver",
        "multi",
        "multi_error",
        "name",
        "now_ms",
        "proto",
        "pubsub",
        "push",
        "transport",
        "user",
        "username",
        "watched",
        "writer",
    )

    def __init__(self, core: Core, addr: str = "", laddr: str = "") -> None:
        self.core = core
        self.db = core.db
        #: ``ctx.emit(record)``: apply one effect record and queue it for the AOF and the
        #: replicas (``core.effects.emit`` itself, bound here: one call less per write)
        self.emit: Callable[[Effect], Any] = core.effects.emit
        self.id = core.new_client_id()
        self.addr = addr
        self.laddr = laddr
        self.proto = 2
        self.name = b""
        self.lib_name = b""
        self.lib_ver = b""
        users = core.users
        #: the ACL user whose rules apply (None only when the ACL module is not attached)
        self.user: Any = users.initial_user() if users is not None else None
        self.username = "default"
        if users is not None:
            self.authenticated = not users.default_needs_auth()
        else:
            self.authenticated = not core.config.requirepass
        self.multi: list[tuple[CommandSpec, list[bytes]]] | None = None
        self.multi_error = False
        self.watched: set[bytes] = set()
        self.dirty_cas = False
        self.now_ms = core.clock.now_ms()
        self.created_ms = self.now_ms
        self.last_interaction_ms = self.now_ms
        self.last_cmd = "NULL"
        self.close_after_reply = False
        #: waiting for a deferred reply (WAIT, RECALL off the loop): idle timeouts skip it
        self.blocked = False
        self.killed = False
        #: cluster mode: ASKING was sent (one command may enter an importing slot), and
        #: READONLY (a replica serves this client reads of its primary's slots)
        self.asking = False
        self.cluster_readonly = False
        self.is_master_link = False
        self.flags = ""
        #: writes out-of-band bytes (MONITOR feed, replication) to this client, if connected
        self.writer: Callable[[bytes], None] | None = None
        #: writes encoded out-of-band bytes (pub/sub messages) in order with the replies
        self.push: Callable[[Any], None] | None = None
        #: this client's subscriptions (engine/pubsub.py), None while it has none
        self.pubsub: Any = None
        #: closes this client's connection (CLIENT KILL, timeout); set by the network layer
        self.closer: Callable[[], None] | None = None
        #: the connection's transport (the replication primary writes a replica's stream
        #: to it directly); None for contexts without a connection
        self.transport: Any = None
        #: the network side (server/connection.py ClientProtocol): CLIENT LIST reads its
        #: buffer sizes; None for contexts without a connection
        self.conn: Any = None

    def unwatch(self) -> None:
        watchers = self.core.watchers
        for key in self.watched:
            ctxs = watchers.get(key)
            if ctxs is not None:
                ctxs.discard(self)
                if not ctxs:
                    del watchers[key]
        self.watched.clear()
        self.dirty_cas = False


class ClusterService(Protocol):
    """``hotkv_server.cluster.state.ClusterState``, ``core.cluster`` when ``cluster-enabled``
    is on: the dispatch point routes commands with keys by it (``keys_of``, ``route``) and
    a replica adopts its primary's topology; the CLUSTER commands, ASKING, READONLY and
    MIGRATE use the rest (the topology itself is ``engine.topology.Topology``)."""

    myid: str
    topology: Topology
    migrating: dict[int, str]
    importing: dict[int, str]

    def keys_of(self, spec: CommandSpec, argv: list[bytes]) -> list[bytes]: ...

    def route(self, ctx: Context, spec: CommandSpec, keys: list[bytes], asking: bool) -> str | None: ...

    def adopt(self, text: bytes) -> bool:
        """Take a newer topology document heard from this node's primary."""
        ...

    def me(self) -> Node: ...

    def state_ok(self) -> bool: ...

    def set_topology(self, topo: Topology) -> None: ...

    def ids_in_slot(self, ctx: Context, slot: int) -> list[bytes]: ...

    def migrating_changed(self) -> None: ...

    def reset(self, hard: bool) -> None: ...

    def save(self) -> None: ...

    def save_soon(self) -> None: ...


@mypyc_attr(allow_interpreted_subclasses=True)
class Subsystem:
    """A part of the server the app builds and attaches in order (``server/app.py``):
    persistence, replication, ACL, the memory guards, the semantic service, cluster mode.
    The engine calls these hooks at fixed moments; each does nothing here, a subsystem
    overrides the ones it needs."""

    async def started(self) -> None:
        """Once every subsystem is attached and the server listens (persistence loads)."""

    def tick(self) -> None:
        """From the server's cron, ``hz`` times a second."""

    def close(self, save: bool | None) -> Awaitable[None] | None:
        """Shutdown, in the reverse order of attaching; ``save`` is SHUTDOWN's SAVE/NOSAVE."""
        return None

    def info_sections(self) -> dict[str, InfoSection]:
        """The INFO sections this subsystem fills (read once, when it is attached)."""
        return {}

    def config_changed(self, name: str, value: Any) -> None:
        """CONFIG SET changed ``name``; ConfigError or ValueError undoes the whole CONFIG SET."""

    def client_gone(self, ctx: Context) -> None:
        """A client's connection closed."""

    def reset_stats(self) -> None:
        """CONFIG RESETSTAT: zero this subsystem's counters."""


class PersistenceService(Protocol):
    """``hotkv_server.persistence.manager.Persistence`` as SAVE, BGSAVE, BGREWRITEAOF,
    LASTSAVE, INFO and replication's full sync use it."""

    @property
    def aof_on(self) -> bool: ...

    @property
    def lastsave(self) -> float: ...

    def save(self) -> str | None: ...

    def bgsave(self, wait: bool = True) -> str | Deferred | None:
        """A Deferred (``wait``) when the answer comes after the start's file steps."""
        ...

    def bgrewrite(self, wait: bool = True) -> str | Deferred | None:
        """As ``bgsave``."""
        ...

    def dataset_replaced(self) -> None: ...


class UserDirectory(Protocol):
    """``hotkv_server.commands.acl_table.UserTable`` (``core.users``) as dispatch, AUTH,
    HELLO, RESET, EXEC and CLIENT use it: the users by name, logging in, the ACL log."""

    #: every user by name (``commands.acl_user.User``, opaque to the engine)
    users: dict[str, Any]

    def initial_user(self) -> Any:
        """The user a new connection starts as (default)."""

    def default_needs_auth(self) -> bool: ...

    def authenticate(self, ctx: Context, username: bytes | None, password: bytes) -> str | None:
        """Log ``ctx`` in; None on success, else the error reply's text."""

    def log_denial(self, ctx: Context, reason: str, obj: str, *, context: str | None = None) -> None:
        """An ACL LOG entry: ``reason`` command/key/channel/auth, ``context`` toplevel,
        multi or lua (None: toplevel or multi, from the client's state)."""


class ReplicationService(Protocol):
    """``hotkv_server.replication.manager.Replication`` as REPLICAOF, ROLE, WAIT, REPLCONF,
    PSYNC and SYNC use it."""

    @property
    def primary(self) -> tuple[str, int] | None:
        """The primary followed, or None on a primary."""

    @property
    def offset(self) -> int:
        """master_repl_offset."""

    def link_up(self) -> bool:
        """A replica: whether the link to its primary is up."""

    def good_replicas(self, max_lag: float) -> int:
        """Replicas online that acknowledged within ``max_lag`` seconds (min-replicas-*)."""

    def replicaof(self, host: str, port: int, *, at_start: bool = False) -> None: ...

    def promote(self) -> None: ...

    def role_reply(self) -> list[Any]: ...

    def wait(self, ctx: Context, numreplicas: int, timeout_ms: int) -> Any: ...

    def replconf(self, ctx: Context, argv: list[bytes]) -> Any: ...

    def psync(self, ctx: Context, replid: str, offset: int | None) -> Any: ...


class Host(Protocol):
    """What a subsystem is attached to (the Server): it reaches the engine through ``core``."""

    core: Core


def current_rss() -> int:
    """Resident set size of this process in bytes (Linux), else the peak RSS."""
    try:
        with open("/proc/self/statm", "rb") as fh:
            pages = int(fh.read().split()[1])
        return pages * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
