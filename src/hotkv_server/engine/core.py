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
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from hotkv_server import __version__
from hotkv_server.engine.clock import Clock
from hotkv_server.engine.config import Config, output_limits, short_header
from hotkv_server.engine.effects import EffectLog
from hotkv_server.engine.turn import RepliesWithheld, Turn
from hotkv_server.stores.database import Database, default_database

if TYPE_CHECKING:
    from hotkv_server.engine.registry import CommandSpec
    from hotkv_server.stores.effect import Effect

__all__ = ["Context", "Core", "Host", "RepliesWithheld", "SlowlogEntry", "Stats", "current_rss"]


@dataclass
class Stats:
    """Counters behind INFO stats (Redis field names where Redis has them)."""

    total_connections_received: int = 0
    rejected_connections: int = 0
    expired_keys: int = 0
    evicted_keys: int = 0
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
        self.slowlog: deque[SlowlogEntry] = deque()
        self.slowlog_next_id = 0
        #: key -> contexts watching it (WATCH); any write naming the key makes them dirty
        self.watchers: dict[bytes, set[Context]] = {}
        #: the one pipeline every write goes through (engine/effects.py)
        self.effects = EffectLog(self.db, self.watchers)
        #: the reply barrier of the current event-loop turn (engine/turn.py)
        self.turn = Turn()
        #: True while any of the dispatch point's gates may refuse a command (loading, a
        #: replica, MISCONF, maxmemory set): with it False, dispatch tests nothing else
        self.gated = False
        self._loading = False
        self._role = "master"
        self._write_error: str | None = None  # set when the AOF can't be written (MISCONF)
        self.shutdown_requested: Callable[[bool | None], None] | None = None
        self.used_memory_fn: Callable[[], int] | None = None
        self.info_sections: dict[str, Callable[[], list[tuple[str, Any]]]] = {}
        self.tcp_port = 0
        self.users: Any = None  # hotkv_server.commands.acl.UserTable, set by the ACL module
        self.extras: dict[str, Any] = {}  # room for subsystems (persistence, replication)
        #: the cluster subsystem, set only with cluster-enabled (hotkv_server.cluster)
        self._cluster: ClusterRouter | None = None
        #: slowlog-log-slower-than, kept here so the dispatch point reads one attribute
        self.slowlog_threshold: int = self.config.values["slowlog-log-slower-than"]
        #: the header of a read that needs no check (``engine.config.short_header``)
        self.short_header = short_header(self.config.values["proto-max-bulk-len"])
        self.extras["config_listeners"] = [self._config_changed]
        self.normal_output_hard_limit = self._normal_output_limit()
        self._update_gated()

    # --- the dispatch point's gates ---------------------------------------------------
    @property
    def loading(self) -> bool:
        """Data is being loaded: commands not flagged ``loading`` answer -LOADING."""
        return self._loading

    @loading.setter
    def loading(self, value: bool) -> None:
        self._loading = value
        self._update_gated()

    @property
    def role(self) -> str:
        """``"master"`` or ``"slave"`` (INFO's words)."""
        return self._role

    @role.setter
    def role(self, value: str) -> None:
        self._role = value
        self._update_gated()

    @property
    def write_error(self) -> str | None:
        """Why writes are refused with -MISCONF (the AOF can't be written), else None."""
        return self._write_error

    @write_error.setter
    def write_error(self, value: str | None) -> None:
        self._write_error = value
        self._update_gated()

    @property
    def cluster(self) -> ClusterRouter | None:
        """The cluster subsystem when ``cluster-enabled`` is on: commands with keys are routed."""
        return self._cluster

    @cluster.setter
    def cluster(self, value: ClusterRouter | None) -> None:
        self._cluster = value
        self._update_gated()

    def _update_gated(self) -> None:
        self.gated = bool(
            self._loading
            or getattr(self, "_cluster", None) is not None
            or self._role == "slave"
            or self._write_error is not None
            or self.config.values["maxmemory"]
        )

    def _normal_output_limit(self) -> int:
        return output_limits(self.config.values["client-output-buffer-limit"], "normal")[0]

    def _config_changed(self, name: str, value: Any) -> None:
        if name == "slowlog-log-slower-than":
            self.slowlog_threshold = int(value)
        elif name == "client-output-buffer-limit":
            self.normal_output_hard_limit = self._normal_output_limit()
        elif name == "proto-max-bulk-len":
            self.short_header = short_header(int(value))
        elif name == "maxmemory":
            self._update_gated()

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
            self.authenticated = not core.config.values["requirepass"]
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
        self.push: Callable[[Any], None] | None = None
        #: closes this client's connection (CLIENT KILL, timeout); set by the network layer
        self.closer: Callable[[], None] | None = None
        #: the connection's transport (the replication primary writes a replica's stream
        #: to it directly); None for contexts without a connection
        self.transport: Any = None

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


class ClusterRouter(Protocol):
    """What the dispatch point asks of the cluster subsystem (``hotkv_server.cluster``) when
    ``cluster-enabled`` is on."""

    def keys_of(self, spec: CommandSpec, argv: list[bytes]) -> list[bytes]: ...

    def route(self, ctx: Context, spec: CommandSpec, keys: list[bytes], asking: bool) -> str | None: ...


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
