"""The replication subsystem of one server (``core.replication``): the facade over its
three parts, which the commands in ``hotkv_server.commands.replication`` call.

* ``history`` (``History``): the replication ids, the offset and the backlog (PSYNC2);
* ``replicas`` (``Replicas``, ``replication.primary``): the replicas attached, the stream
  they are fed, PSYNC/REPLCONF and WAIT;
* ``follower`` (``Follower``, ``replication.replica``): the primary this server follows,
  its link, REPLICAOF and promotion, applying the primary's stream.

Roles as in Redis. A server is a primary (``core.role == "master"``) or a replica
(``"slave"``); either may have replicas of its own (chained replication). A primary turns
every applied unit of effect records (this object is a sink of ``core.effects``) into a
``HOTKV.EFFECT`` command of the stream; a replica applies what its primary sends and
forwards the very same bytes, so the whole chain shares one replication id and one offset
space. Everything runs on the event loop thread. ``views`` renders ROLE and INFO.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING, Any

from hotkv_server.engine.core import InfoSection, Subsystem
from hotkv_server.replication import state, views
from hotkv_server.replication.history import History
from hotkv_server.replication.primary import Replicas
from hotkv_server.replication.replica import Follower
from hotkv_server.replication.stream import effect_command

if TYPE_CHECKING:
    from hotkv_server.engine.context import Context
    from hotkv_server.engine.core import Host
    from hotkv_server.replication.backlog import Backlog
    from hotkv_server.replication.link import PrimaryLink
    from hotkv_server.replication.peers import Peer
    from hotkv_server.stores.effect import Effect

log = logging.getLogger("hotkv")


class Replication(Subsystem):
    """The replication subsystem of one server (see the module docstring)."""

    #: effect sink: every unit arrives packed (the stream carries it at once)
    wants_bytes = True

    def __init__(self, server: Host) -> None:
        self.server = server
        core = self.core = server.core
        self.history = History(lambda exists: core.effects.set_sink(self, exists))
        self.replicas = Replicas(core, self.history, self)
        self.follower = Follower(core, self.history, self.replicas)
        self.closed = False
        saved = state.take(core.config.values["dir"])
        if saved is not None:
            self.history.restored(*saved, core.config.values["repl-backlog-size"])
            log.info("Replication state restored: id %s, offset %d", *saved)
        if core.config.values["replicaof"] is not None:
            core.role = "slave"  # refuse writes from the first connection on

    # --- what the commands, the views and dispatch read ----------------------------------------
    @property
    def primary(self) -> tuple[str, int] | None:
        return self.follower.primary

    @property
    def link(self) -> PrimaryLink | None:
        return self.follower.link

    @property
    def offset(self) -> int:
        return self.history.offset

    @property
    def backlog(self) -> Backlog | None:
        return self.history.backlog

    @property
    def peers(self) -> dict[int, Peer]:
        return self.replicas.peers

    def link_up(self) -> bool:
        return self.follower.link_up()

    def send_ack(self) -> None:
        self.follower.send_ack()

    def good_replicas(self, max_lag: float) -> int:
        return self.replicas.good_replicas(max_lag)

    def replicaof(self, host: str, port: int, *, at_start: bool = False) -> None:
        self.follower.replicaof(host, port, at_start=at_start)

    def promote(self) -> None:
        self.follower.promote()

    def wait(self, ctx: Context, numreplicas: int, timeout_ms: int) -> Any:
        return self.replicas.wait(ctx, numreplicas, timeout_ms)

    def replconf(self, ctx: Context, argv: list[bytes]) -> Any:
        return self.replicas.replconf(ctx, argv)

    def psync(self, ctx: Context, replid: str, offset: int | None) -> Any:
        return self.replicas.psync(ctx, replid, offset)

    # --- life cycle (hotkv_server.server.app) -------------------------------------------------
    async def started(self) -> None:
        self.replicas.started(asyncio.get_running_loop())
        self.follower.start()

    def tick(self) -> None:
        """From the server's cron: ACKs, pings, timeouts, soft output limits."""
        now = time.monotonic()
        self.follower.tick(now)
        self.replicas.tick(now)

    async def close(self, save: bool | None = None) -> None:
        """Shutdown: stop the link, hand the last bytes to the replicas, save id and offset."""
        if self.closed:
            return
        self.closed = True
        self.replicas.fullsync.close()
        await self.follower.close()
        self.replicas.close()
        if self._data_survives(save):
            history = self.history
            state.save(self.core.config.values["dir"], history.replid, history.offset)
            log.info("Replication id %s and offset %d saved for the next start",
                     history.replid, history.offset)

    def _data_survives(self, save: bool | None) -> bool:
        """Will the data files hold exactly the current data once persistence has closed?"""
        if self.history.backlog is None and self.follower.primary is None:
            return False  # replication never used: nothing worth a file
        persistence = self.core.persistence
        if persistence is None or self.history.diverged or self.follower.files_stale:
            return False
        if persistence.aof_on:
            return True
        return save is True or (save is None and bool(str(self.core.config.values["save"]).split()))

    def client_gone(self, ctx: Context) -> None:
        self.replicas.client_gone(ctx)

    # --- the effect sink (listed while a backlog exists: History's callback) ----------------
    def write_effects(self, records: list[Effect], payload: bytes | None) -> None:
        """Effect sink: one applied unit of records (a whole EXEC as one ``tx``), packed."""
        if self.core.role == "slave" or payload is None:
            return  # a replica forwards its primary's bytes instead (Follower.apply_from_primary)
        self.replicas.feed(effect_command(payload))

    def effects_lost(self, reason: str) -> None:
        """Effect sink: applied records could not be encoded; the replicas can't follow
        this history any more and will resync fully."""
        if self.core.role == "slave":
            return
        log.error("Replicas will resync fully: %s", reason)
        self.replicas.drop_all(reason)
        self.history.restart()

    # --- views (replication/views.py) ----------------------------------------------------
    def info_sections(self) -> dict[str, InfoSection]:
        return {"replication": self.info_replication, "stats": self.info_stats}

    def role_reply(self) -> list[Any]:
        return views.role_reply(self)

    def info_replication(self) -> list[tuple[str, Any]]:
        return views.info_replication(self)

    def info_stats(self) -> list[tuple[str, Any]]:
        return views.info_stats(self)

    def reset_stats(self) -> None:
        self.replicas.reset_stats()
        self.follower.net_in = 0

    def config_changed(self, name: str, value: Any) -> None:
        backlog = self.history.backlog
        if name == "repl-backlog-size" and backlog is not None:
            backlog.resize(int(value))
