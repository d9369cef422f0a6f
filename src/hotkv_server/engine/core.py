"""The server's state apart from the network: database, clients, statistics, effect sinks.

Handlers reach everything through ``ctx.core``. Tests can build a Core with a
``ManualClock`` and drive ``dispatch`` without sockets.
"""

from __future__ import annotations

import os
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hotkv_server import __version__
from hotkv_server.engine.clock import Clock
from hotkv_server.server.config import Config, output_limits
from hotkv_server.server.framing import short_header
from hotkv_server.stores.base import Effect
from hotkv_server.stores.database import Database, default_database

if TYPE_CHECKING:
    from hotkv_server.engine.context import Context

EffectSink = Callable[[Effect], None]


class RepliesWithheld(Exception):
    """Raised by a ``before_reply`` hook: this batch's replies must not leave.

    They would acknowledge writes that could not be made durable (a failed AOF write under
    ``appendfsync always``); the connection is closed without answering, so the client
    sees an error instead of a false acknowledgement.
    """


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
        #: who must hear about every applied effect (AOF writer, replication backlog): only
        #: the sinks with work to do are listed (``set_sink``), so a write with no AOF, no
        #: replica and no maxmemory builds no record at all
        self.sinks: list[EffectSink] = []
        #: run once at the end of an event-loop turn in which writes reached a sink that
        #: must be on disk before they are acknowledged (the AOF write, fsync under always)
        self.before_reply: list[Callable[[], None]] = []
        #: set by such a sink (the AOF buffer holds data): replies wait for the turn's end
        self.reply_barrier = False
        #: connections holding replies until the end of this turn (server/connection.py)
        self.turn_waiting: list[Any] = []
        #: run at the end of this turn, after the AOF write (the replication stream)
        self.after_turn: list[Callable[[], None]] = []
        self.pending_effects: list[Effect] = []
        self.in_exec = False
        #: key -> contexts watching it (WATCH); any write naming the key makes them dirty
        self.watchers: dict[bytes, set[Context]] = {}
        self.dirty = 0  # writes since the last save, as Redis counts them
        #: True while any of the dispatch point's gates may refuse a command (loading, a
        #: replica, MISCONF, maxmemory set): with it False, dispatch tests nothing else
        self.gated = False
        self._loading = False
        self._busy: Any = None
        self._role = "master"
        self._write_error: str | None = None  # set when the AOF can't be written (MISCONF)
        self.shutdown_requested: Callable[[bool | None], None] | None = None
        self.used_memory_fn: Callable[[], int] | None = None
        self.info_sections: dict[str, Callable[[], list[tuple[str, Any]]]] = {}
        self.tcp_port = 0
        self.users: Any = None  # hotkv_server.commands.acl.UserTable, set by the ACL module
        self.extras: dict[str, Any] = {}  # room for subsystems (persistence, replication)
        from hotkv_server.engine.blocking import Blocking

        #: clients blocked on keys (BLPOP ...): the dispatch point signals written keys
        self.blocking = Blocking(self)
        self.extras["client_gone"] = self.blocking.client_gone  # later hooks chain onto it
        #: slowlog-log-slower-than, kept here so the dispatch point reads one attribute
        self.slowlog_threshold: int = self.config.values["slowlog-log-slower-than"]
        #: the header of a read that needs no check (server/framing.py ``short_header``)
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
    def busy(self) -> Any:
        """The script running past busy-reply-threshold (scripting/engine.py ``Run``), else
        None: while set, commands not flagged ``allow_busy`` answer -BUSY."""
        return self._busy

    @busy.setter
    def busy(self, value: Any) -> None:
        self._busy = value
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

    def _update_gated(self) -> None:
        self.gated = bool(
            self._loading
            or self._busy is not None
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
    def set_sink(self, sink: EffectSink, active: bool) -> None:
        """List ``sink`` in ``sinks`` while it has work to do (an AOF open, a backlog, a
        memory limit); subsystems call this when that state changes."""
        listed = sink in self.sinks
        if active and not listed:
            self.sinks.append(sink)
        elif not active and listed:
            self.sinks.remove(sink)

    def emit(self, effect: Effect) -> Any:
        """Apply one effect to the database and queue it for the AOF and the replicas."""
        result = self.db.apply(effect)
        self.pending_effects.append(effect)
        self.dirty += 1
        return result

    def flush_effects(self) -> None:
        """Hand the effects of the last command (or EXEC) to the sinks as one record."""
        pending = self.pending_effects
        if not pending:
            return
        self.pending_effects = []
        if not self.sinks:
            return
        record = pending[0] if len(pending) == 1 else ["tx", pending]
        for sink in self.sinks:
            sink(record)

    # --- WATCH --------------------------------------------------------------------
    def touch(self, keys: list[bytes]) -> None:
        watchers = self.watchers
        for key in keys:
            ctxs = watchers.get(key)
            if ctxs:
                for ctx in ctxs:
                    ctx.dirty_cas = True

    def touch_all(self) -> None:
        for ctxs in self.watchers.values():
            for ctx in ctxs:
                ctx.dirty_cas = True

    # --- memory -------------------------------------------------------------------
    def used_memory(self) -> int:
        if self.used_memory_fn is not None:
            return self.used_memory_fn()
        return current_rss()

    def is_replica(self) -> bool:
        return self.role == "slave"


def current_rss() -> int:
    """Resident set size of this process in bytes (Linux), else the peak RSS."""
    try:
        with open("/proc/self/statm", "rb") as fh:
            pages = int(fh.read().split()[1])
        return pages * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
