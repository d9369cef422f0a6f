"""The replica side of replication: the primary this server follows, the link to it
(``replication.link``, typed against the ``LinkOwner`` protocol it declares, which this
class implements), REPLICAOF and promotion, and applying the primary's stream.

A replica applies what its primary sends through ``core.effects.apply_replicated`` (the
same appliers as live writes and AOF replay) and forwards the very same bytes to its own
replicas through the primary side (``replication.primary``).
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from hotkv_server.engine.dispatch import dispatch
from hotkv_server.engine.errors import RequestRefused
from hotkv_server.engine.replies import ErrorReply
from hotkv_server.engine.turn import RepliesWithheld
from hotkv_server.replication.link import PrimaryLink
from hotkv_server.replication.stream import EFFECT
from hotkv_server.stores.effect import unpack

if TYPE_CHECKING:
    from hotkv_server.engine.context import Context
    from hotkv_server.engine.core import Core
    from hotkv_server.replication.history import History
    from hotkv_server.replication.primary import Replicas

log = logging.getLogger("hotkv")

#: a replica acknowledges its offset this often
ACK_PERIOD_S = 1.0
UNBLOCKED = "UNBLOCKED force unblock from blocking operation, instance state changed (master -> replica?)"


class Follower:
    """This server as a replica of another (see the module docstring)."""

    def __init__(self, core: Core, history: History, replicas: Replicas) -> None:
        self.core = core
        self.history = history
        self.replicas = replicas
        self.primary: tuple[str, int] | None = None
        self.link: PrimaryLink | None = None
        self.started = False
        #: a full sync replaced the data but no new base could be written: the AOF is stale
        self.files_stale = False
        #: bytes read from the primary (INFO's total_net_repl_input_bytes)
        self.net_in = 0

    @property
    def offset(self) -> int:
        """Stream bytes processed (the link acknowledges it)."""
        return self.history.offset

    # --- the primary side's Upstream -----------------------------------------------------------
    def link_up(self) -> bool:
        link = self.link
        return link is not None and link.connected

    def send_ack(self) -> None:
        if self.link is not None:
            self.link.send_ack()

    # --- life cycle ---------------------------------------------------------------------------
    def start(self) -> None:
        self.started = True
        target = self.core.config.values["replicaof"]
        if target is not None:
            self.replicaof(target[0], target[1], at_start=True)

    def tick(self, now: float) -> None:
        link = self.link
        if link is not None and link.connected and now - link.last_ack >= ACK_PERIOD_S:
            link.send_ack()

    async def close(self) -> None:
        if self.link is not None:
            self.link.stop()
            await self.link.wait_closed()

    # --- roles ------------------------------------------------------------------------------
    def replicaof(self, host: str, port: int, *, at_start: bool = False) -> None:
        """Follow ``host:port`` from now on (keeping our data and history for a PSYNC).

        ``at_start``: the ``replicaof`` directive; only saved state gives a history then.
        REPLICAOF answers a repeat of the current primary itself, without calling this.
        """
        core = self.core
        was_primary = self.primary is None
        if self.link is not None:
            self.link.stop()
            self.link = None
        self.primary = (host, port)
        core.role = "slave"
        core.config.values["replicaof"] = (host, port)
        replicas = self.replicas
        replicas.waits.finish_all(ErrorReply(UNBLOCKED))
        core.blocking.unblock_all(UNBLOCKED)  # clients blocked on keys (BLPOP ...), as Redis
        replicas.drop_all("this server follows a new primary")
        if was_primary:
            replicas.pending.clear()
            # as Redis, a primary turned replica offers its own history for a partial resync
            if not at_start:
                self.history.known = True
        replicas.ensure_backlog()
        log.info("Connecting to MASTER %s:%d (REPLICAOF)", host, port)
        self.link = PrimaryLink(self, host, port)
        if self.started:
            self.link.start()

    def promote(self) -> None:
        """``REPLICAOF NO ONE``: a new history that continues this one (replid2)."""
        if self.primary is None:
            return
        core = self.core
        if self.link is not None:
            self.link.stop()
            self.link = None
        self.primary = None
        core.role = "master"
        core.config.values["replicaof"] = None
        self.replicas.ensure_backlog()
        history = self.history
        history.branch()
        log.info("Setting secondary replication ID to %s, valid up to offset: %d. New replication ID is %s",
                 history.replid2, history.second_offset, history.replid)
        self.replicas.drop_all("the replication id changed (promoted to primary)")
        log.info("MASTER MODE enabled")

    # --- LinkOwner: called by PrimaryLink -----------------------------------------------------
    def psync_request(self) -> tuple[str, int]:
        """What to ask for: our history and the next byte we need, or ``? -1`` for a full sync."""
        return self.history.psync_request()

    def load_snapshot(self, replid: str, offset: int, payload: bytes) -> None:
        """A full sync: replace the whole data set and adopt the primary's history."""
        core = self.core
        started = time.monotonic()
        self.history.diverged = True  # until the restore is complete
        snapshot = unpack(payload)
        core.db.restore(snapshot)
        self.history.adopt(replid, offset, core.config.values["repl-backlog-size"])
        self.replicas.pending.clear()
        core.dirty += 1
        core.touch_all()
        log.info("MASTER <-> REPLICA sync: loaded the snapshot in %.3f s", time.monotonic() - started)
        self.replicas.drop_all("full resync with our primary")
        self._dataset_replaced()

    def _dataset_replaced(self) -> None:
        """Make the AOF start again from the new data set (its old files describe the old one)."""
        persistence = self.core.persistence
        if persistence is None or not persistence.aof_on:
            return
        self.files_stale = True
        try:
            persistence.dataset_replaced()
        except RequestRefused as exc:
            log.warning("Can't write a new base after the full sync: %s", exc.message)
        except OSError as exc:
            log.warning("Can't write a new base after the full sync: %s", exc)
        else:
            self.files_stale = False

    def continue_from_primary(self, new_replid: str | None) -> None:
        """``+CONTINUE [replid]``: keep our data; switch history if the primary's changed."""
        history = self.history
        if new_replid and new_replid != history.replid:
            history.branch(new_replid)
            log.info("Master replication ID changed to %s", new_replid)
            self.replicas.drop_all("the replication id changed")
        self.replicas.ensure_backlog()

    def apply_from_primary(self, link_ctx: Context, argv: list[bytes], raw: bytes) -> bool:
        """Apply one command of the stream, then pass its bytes on; True for GETACK."""
        getack = False
        name = argv[0].upper()
        if name == EFFECT and len(argv) == 2:
            try:
                # applied, counted, WATCH-touched, notified, its bytes to our AOF (our own
                # stream sink ignores it on a replica: the raw bytes are forwarded below)
                self.core.effects.apply_replicated(argv[1])
            except Exception:
                self.history.diverged = True
                log.exception("Can't apply an effect from the primary: a full resync follows")
                raise
        elif name == b"PING":
            pass
        elif name == b"REPLCONF" and len(argv) >= 2 and argv[1].lower() == b"getack":
            getack = True
        else:
            link_ctx.now_ms = self.core.clock.now_ms()
            reply = dispatch(link_ctx, argv)  # anything else runs as a command of the primary
            if isinstance(reply, ErrorReply):
                log.warning("Command from the primary failed: %s", reply)
        self.replicas.feed(raw)
        return getack

    def after_primary_batch(self) -> None:
        """After a read from the primary: our AOF write (and fsync) and our replicas' copy."""
        try:
            self.core.turn.make_durable()
        except RepliesWithheld as exc:
            # the AOF could not take the writes (persistence now answers MISCONF); as in
            # Redis, ACK still means "processed", not "on disk"
            log.warning("Writes from the primary are not durable: %s", exc)
        self.replicas.flush()
