"""Replication state of one server: its history (replid, offsets, backlog), the replicas
attached to it, its link to a primary, WAIT, and the INFO / ROLE views of all that.

One object per server, ``core.replication``; the commands in
``hotkv_server.commands.replication`` call it. Everything runs on the event loop thread.
Beside it: ``peers`` (the replicas attached), ``wait`` (clients in WAIT), ``views`` (ROLE
and INFO), ``link`` (the connection to our primary, typed against the ``LinkOwner``
protocol it declares), ``fullsync`` (snapshots from a forked child), ``backlog``.

Roles as in Redis. A server is a primary (``core.role == "master"``) or a replica
(``"slave"``); either may have replicas of its own (chained replication). A primary turns
every applied unit of effect records (it is a sink of ``core.effects``) into a ``HOTKV.EFFECT`` command of the
stream; a replica applies what its primary sends and forwards the very same bytes, so
the whole chain shares one replication id and one offset space.

History ids (PSYNC2): ``replid`` names the current history. When a replica is promoted
(``REPLICAOF NO ONE``) its old id becomes ``replid2``, valid up to ``second_repl_offset``,
so the other replicas of the lost primary can continue from the promoted one with a
partial resync instead of a full copy.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from typing import TYPE_CHECKING, Any

from hotkv_server.engine.config import output_limits
from hotkv_server.engine.core import InfoSection, Subsystem
from hotkv_server.engine.dispatch import NO_REPLY, dispatch
from hotkv_server.engine.errors import CommandError, RequestRefused
from hotkv_server.engine.replies import OK, ErrorReply
from hotkv_server.engine.turn import RepliesWithheld
from hotkv_server.replication import state, views
from hotkv_server.replication.backlog import Backlog
from hotkv_server.replication.fullsync import FullSync
from hotkv_server.replication.link import REPL_TIMEOUT_S, PrimaryLink
from hotkv_server.replication.peers import Handshake, Peer, count_acked
from hotkv_server.replication.stream import EFFECT, GETACK, PING, effect_command
from hotkv_server.replication.wait import Waits
from hotkv_server.stores.effect import unpack

if TYPE_CHECKING:
    from hotkv_server.engine.context import Context
    from hotkv_server.engine.core import Host
    from hotkv_server.stores.effect import Effect

log = logging.getLogger("hotkv")

#: a primary pings its replicas this often (Redis's repl-ping-replica-period)
PING_PERIOD_S = 10.0
#: a replica acknowledges its offset this often
ACK_PERIOD_S = 1.0
NO_REPLID2 = "0" * 40
UNBLOCKED = "UNBLOCKED force unblock from blocking operation, instance state changed (master -> replica?)"
NOMASTERLINK = "NOMASTERLINK Can't SYNC while not connected with my master"


def new_replid() -> str:
    return os.urandom(20).hex()


class Replication(Subsystem):
    """The replication subsystem of one server (see the module docstring)."""

    def __init__(self, server: Host) -> None:
        self.server = server
        core = self.core = server.core
        self.replid = new_replid()
        self.replid2 = NO_REPLID2
        self.second_offset = -1
        #: master_repl_offset: stream bytes produced (primary) or processed (replica)
        self.offset = 0
        self._backlog: Backlog | None = None
        self.peers: dict[int, Peer] = {}
        self.handshakes: dict[int, Handshake] = {}
        self.pending: list[bytes] = []  # stream bytes not yet written to the peers
        self.flush_scheduled = False
        self.getack_scheduled = False
        self.primary: tuple[str, int] | None = None
        self.link: PrimaryLink | None = None
        self.waits = Waits(self.peers)
        self.diverged = False  # our copy can't be trusted: the next sync must be a full one
        #: whether our data is a known point of ``replid``'s history (else PSYNC ? -1)
        self.known_history = False
        #: a full sync replaced the data but no new base could be written: the AOF is stale
        self.files_stale = False
        self.sync_full = 0
        self.sync_partial_ok = 0
        self.sync_partial_err = 0
        self.net_in = 0
        self.net_out = 0
        self.last_ping = time.monotonic()
        self.fullsync = FullSync(self)
        self.loop: asyncio.AbstractEventLoop | None = None
        self.closed = False
        saved = state.take(core.config.dir)
        if saved is not None:
            self.replid, self.offset = saved
            self.known_history = True
            log.info("Replication state restored: id %s, offset %d", self.replid, self.offset)
            # a replica (re)started at exactly this offset may continue without a snapshot
            self.backlog = Backlog(core.config.repl_backlog_size, self.offset + 1)
        target = core.config.replicaof
        if target is not None:
            core.role = "slave"  # refuse writes from the first connection on

    # --- life cycle (hotkv_server.server.app) -------------------------------------------------
    async def started(self) -> None:
        self.loop = self.waits.loop = asyncio.get_running_loop()
        target = self.core.config.replicaof
        if target is not None:
            self.replicaof(target[0], target[1], at_start=True)

    def tick(self) -> None:
        """From the server's cron: ACKs, pings, timeouts, soft output limits."""
        now = time.monotonic()
        link = self.link
        if link is not None and link.connected and now - link.last_ack >= ACK_PERIOD_S:
            link.send_ack()
        if self.peers:
            if self.core.role == "master" and now - self.last_ping >= PING_PERIOD_S:
                self.last_ping = now
                self.feed(PING)
                self.flush()
            for peer in list(self.peers.values()):
                # as Redis, only an online replica must acknowledge (a snapshot may take long)
                if peer.state == "online" and now - peer.ack_time > REPL_TIMEOUT_S:
                    self.drop_peer(peer, f"timeout: no acknowledgement for {REPL_TIMEOUT_S:.0f} seconds")
                else:
                    self.check_output_limit(peer, now)
        else:
            self.last_ping = now
        self.fullsync.tick(now)

    async def close(self, save: bool | None = None) -> None:
        """Shutdown: stop the link, hand the last bytes to the replicas, save id and offset."""
        if self.closed:
            return
        self.closed = True
        self.fullsync.close()
        if self.link is not None:
            self.link.stop()
            await self.link.wait_closed()
        self.flush()
        self.waits.finish_all()
        if self._data_survives(save):
            state.save(self.core.config.dir, self.replid, self.offset)
            log.info("Replication id %s and offset %d saved for the next start", self.replid, self.offset)

    def _data_survives(self, save: bool | None) -> bool:
        """Will the data files hold exactly the current data once persistence has closed?"""
        if self.backlog is None and self.primary is None:
            return False  # replication never used: nothing worth a file
        persistence = self.core.persistence
        if persistence is None or self.diverged or self.files_stale:
            return False
        config = self.core.config
        if persistence.aof_on:
            return True
        return save is True or (save is None and bool(config.save.split()))

    # --- the stream (primary side) -------------------------------------------------------
    @property
    def backlog(self) -> Backlog | None:
        """The replication backlog, None until the first replica comes (as in Redis)."""
        return self._backlog

    @backlog.setter
    def backlog(self, backlog: Backlog | None) -> None:
        # replicas are only added once a backlog exists, and dropped before it goes: while
        # there is none, no write needs to reach this sink
        self._backlog = backlog
        self.core.effects.set_sink(self, backlog is not None)

    #: effect sink: every unit arrives packed (the stream carries it at once)
    wants_bytes = True

    def write_effects(self, records: list[Effect], payload: bytes | None) -> None:
        """Effect sink: one applied unit of records (a whole EXEC as one ``tx``), packed."""
        if self.core.role == "slave" or payload is None:
            return  # a replica forwards its primary's bytes instead (apply_from_primary)
        # listed only while a backlog exists (the ``backlog`` setter): as Redis, no history
        # is kept before the first replica comes
        self.feed(effect_command(payload))

    def effects_lost(self, reason: str) -> None:
        """Effect sink: applied records could not be encoded; the replicas can't follow
        this history any more and will resync fully."""
        if self.core.role == "slave":
            return
        log.error("Replicas will resync fully: %s", reason)
        self.drop_all_peers(reason)
        self.backlog = None
        self.replid = new_replid()

    def feed(self, data: bytes) -> None:
        """Append stream bytes: offset, backlog, and the replicas' output (written soon)."""
        self.offset += len(data)
        if self.backlog is not None:
            self.backlog.append(data)
        if self.peers:
            self.pending.append(data)
            if not self.flush_scheduled:
                self.flush_scheduled = True
                if self.loop is not None:
                    # after the current batch of commands: one write per replica per batch
                    self.loop.call_soon(self._flush_after_aof)

    def _flush_after_aof(self) -> None:
        """The scheduled flush: when this turn's writes still wait for our AOF write, the
        replicas get them after it (``Turn.then``, run by the turn's end), as Redis
        writes the AOF in beforeSleep before any client output, replicas' included."""
        self.core.turn.then(self.flush)

    def flush(self) -> None:
        self.flush_scheduled = False
        if not self.pending:
            return
        data = b"".join(self.pending) if len(self.pending) > 1 else self.pending[0]
        self.pending.clear()
        self.fullsync.hold(data)
        now = time.monotonic()
        for peer in list(self.peers.values()):
            self._write(peer, data)
            self.check_output_limit(peer, now)

    def _write(self, peer: Peer, data: bytes) -> None:
        transport = peer.transport
        if transport.is_closing() or peer.state == "wait_bgsave":
            return  # (a replica waiting for its snapshot gets this from fullsync.hold)
        transport.write(data)
        peer.written += len(data)
        self.net_out += len(data)

    def check_output_limit(self, peer: Peer, now: float) -> None:
        """``client-output-buffer-limit replica <hard> <soft> <seconds>``: drop a slow replica.

        Only the stream waiting in the transport counts, not a snapshot still being sent
        (Redis sends its RDB from a file, outside the output buffer).
        """
        hard, soft, seconds = output_limits(self.core.config.client_output_buffer_limit, "replica")
        if not hard and not soft:
            return
        written = peer.written
        sent = written - peer.transport.get_write_buffer_size()
        waiting = written - max(sent, peer.bulk_end)
        if soft and waiting > soft:
            if not peer.soft_since:
                peer.soft_since = now
        else:
            peer.soft_since = 0.0
        if (hard and waiting > hard) or (peer.soft_since and now - peer.soft_since >= seconds):
            self.drop_peer(peer, f"output buffer of {waiting} bytes over the replica limit "
                                 f"(client-output-buffer-limit replica {hard} {soft} {seconds})")

    def drop_peer(self, peer: Peer, why: str) -> None:
        log.warning("Dropping replica %s:%d: %s", peer.ip, peer.port, why)
        self.peers.pop(peer.ctx.id, None)
        peer.transport.abort()  # close() would keep the unsent buffer for as long as it waits

    def drop_all_peers(self, why: str) -> None:
        """Our history changed: the replicas reconnect and learn it (mostly partially)."""
        self.flush()
        for peer in list(self.peers.values()):
            self.drop_peer(peer, why)

    def create_backlog(self) -> Backlog:
        if self.backlog is None:
            self.backlog = Backlog(self.core.config.repl_backlog_size, self.offset + 1)
        return self.backlog

    # --- PSYNC / SYNC / REPLCONF (the primary's commands) --------------------------------------
    def replconf(self, ctx: Context, argv: list[bytes]) -> Any:
        """REPLCONF option value [option value ...]"""
        if len(argv) % 2 == 0:
            raise CommandError("ERR syntax error")
        info = self.handshakes.get(ctx.id)
        for i in range(1, len(argv), 2):
            option = argv[i].lower()
            value = argv[i + 1]
            if option == b"ack":
                self.ack(ctx, value)
                return NO_REPLY
            if option == b"getack":
                if self.link is not None:
                    self.link.send_ack()
                return NO_REPLY
            if info is None:
                info = self.handshakes[ctx.id] = Handshake()
            if option == b"listening-port":
                info.port = _int(value)
            elif option == b"ip-address":
                info.ip = value.decode("utf-8", "replace")
            elif option == b"capa":
                info.capa.add(value.decode("utf-8", "replace").lower())
            elif option in (b"rdb-only", b"rdb-filter-only"):
                pass  # Redis options that only shape an RDB transfer: nothing to do here
            else:
                raise CommandError(f"ERR Unrecognized REPLCONF option: {argv[i].decode('utf-8', 'replace')}")
        return OK

    def ack(self, ctx: Context, value: bytes) -> None:
        peer = self.peers.get(ctx.id)
        if peer is None:
            return  # as Redis: only replicas may acknowledge
        try:
            offset = int(value)
        except ValueError:
            return
        if offset > peer.ack_offset:
            peer.ack_offset = offset
        peer.ack_time = time.monotonic()
        if peer.state != "online":
            peer.state = "online"
            log.info("Synchronization with replica %s:%d succeeded", peer.ip, peer.port)
        if self.waits:
            self.waits.check()

    def psync(self, ctx: Context, replid: str, offset: int | None) -> Any:
        """Serve ``PSYNC replid offset`` (``offset`` None: the old ``SYNC``)."""
        if ctx.id in self.peers:
            return NO_REPLY  # as Redis: a replica repeating PSYNC is ignored
        if self.core.role == "slave" and (self.link is None or not self.link.connected):
            raise CommandError(NOMASTERLINK)
        transport: asyncio.Transport | None = ctx.transport  # set by the network layer
        if transport is None:
            raise CommandError("ERR PSYNC needs a network connection")
        info = self.handshakes.pop(ctx.id, None) or Handshake()
        ip = info.ip or ctx.addr.rpartition(":")[0]
        self.flush()  # what is pending predates this replica's starting point
        peer = Peer(ctx, transport, ip, info.port, info.capa)
        ctx.flags = "S"
        name = f"{ip}:{info.port}"
        if offset is not None and self._can_continue(replid, offset):
            backlog = self.backlog
            assert backlog is not None
            missing = backlog.read_from(offset)
            head = b"+CONTINUE %s\r\n" % self.replid.encode() if "psync2" in info.capa else b"+CONTINUE\r\n"
            self._write(peer, head + missing)
            peer.state = "online"
            peer.ack_offset = offset - 1
            self.sync_partial_ok += 1
            log.info("Partial resynchronization request from %s accepted. Sending %d bytes of backlog "
                     "starting from offset %d.", name, len(missing), offset)
        else:
            if offset is not None:
                if replid != "?":
                    self.sync_partial_err += 1
                    log.info("Partial resynchronization not accepted for %s (asked %s:%d, have %s:%d): "
                             "full sync", name, replid, offset, self.replid, self.offset)
                else:
                    log.info("Full resync requested by replica %s", name)
            self.sync_full += 1
            self.create_backlog()
            self.peers[ctx.id] = peer
            # the snapshot is made by a forked child, off the loop (fullsync.py)
            self.fullsync.add(peer, with_head=offset is not None)
            log.info("Starting full sync with replica %s at offset %d", name, self.offset)
        self.peers[ctx.id] = peer
        return NO_REPLY

    def _can_continue(self, replid: str, offset: int) -> bool:
        """Redis's rule: same history (or the previous one, up to where it ended), in the backlog."""
        if replid != self.replid and (replid != self.replid2 or offset > self.second_offset):
            return False
        return self.backlog is not None and self.backlog.covers(offset)

    def client_gone(self, ctx: Context) -> None:
        """A connection closed: a replica, a handshake in progress, or a client in WAIT."""
        self.handshakes.pop(ctx.id, None)
        peer = self.peers.pop(ctx.id, None)
        if peer is not None:
            log.info("Connection with replica %s:%d lost.", peer.ip, peer.port)
        if self.waits:
            self.waits.client_gone(ctx.id)

    # --- WAIT -------------------------------------------------------------------------------
    def link_up(self) -> bool:
        link = self.link
        return link is not None and link.connected

    def good_replicas(self, max_lag: float) -> int:
        now = time.monotonic()
        return sum(1 for peer in self.peers.values()
                   if peer.state == "online" and now - peer.ack_time <= max_lag)

    def count_acked(self, target: int) -> int:
        return count_acked(self.peers, target)

    def wait(self, ctx: Context, numreplicas: int, timeout_ms: int) -> Any:
        """WAIT: replicas that processed the stream up to now (which covers this client's writes)."""
        target = self.offset
        acked = self.count_acked(target)
        if acked >= numreplicas or self.core.effects.grouped or ctx.multi is not None:
            return acked
        deferred = self.waits.add(ctx.id, target, numreplicas, timeout_ms)
        self.request_acks()
        return deferred

    def request_acks(self) -> None:
        """Ask every replica for an ACK, once per loop iteration however many clients WAIT."""
        if self.getack_scheduled or not self.peers:
            return
        self.getack_scheduled = True
        loop = self.loop or asyncio.get_running_loop()
        loop.call_soon(self._send_getack)

    def _send_getack(self) -> None:
        self.getack_scheduled = False
        if self.peers and self.core.role == "master":
            self.feed(GETACK)
            self.flush()

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
        core.config.replicaof = (host, port)
        self.waits.finish_all(ErrorReply(UNBLOCKED))
        core.blocking.unblock_all(UNBLOCKED)  # clients blocked on keys (BLPOP ...), as Redis
        self.drop_all_peers("this server follows a new primary")
        if was_primary:
            self.pending.clear()
            # as Redis, a primary turned replica offers its own history for a partial resync
            if not at_start:
                self.known_history = True
        self.create_backlog()
        log.info("Connecting to MASTER %s:%d (REPLICAOF)", host, port)
        self.link = PrimaryLink(self, host, port)
        if self.loop is not None:
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
        core.config.replicaof = None
        self.create_backlog()
        self.replid2 = self.replid
        self.second_offset = self.offset + 1
        self.replid = new_replid()
        log.info("Setting secondary replication ID to %s, valid up to offset: %d. New replication ID is %s",
                 self.replid2, self.second_offset, self.replid)
        self.drop_all_peers("the replication id changed (promoted to primary)")
        log.info("MASTER MODE enabled")

    # --- the replica side (called by PrimaryLink) ------------------------------------------------
    def psync_request(self) -> tuple[str, int]:
        """What to ask for: our history and the next byte we need, or ``? -1`` for a full sync."""
        if self.diverged or not self.known_history:
            return "?", -1
        return self.replid, self.offset + 1

    def load_snapshot(self, replid: str, offset: int, payload: bytes) -> None:
        """A full sync: replace the whole data set and adopt the primary's history."""
        core = self.core
        started = time.monotonic()
        self.diverged = True  # until the restore is complete
        snapshot = unpack(payload)
        core.db.restore(snapshot)
        self.diverged = False
        self.known_history = True
        self.replid = replid
        self.replid2 = NO_REPLID2
        self.second_offset = -1
        self.offset = offset
        self.backlog = Backlog(core.config.repl_backlog_size, offset + 1)
        self.pending.clear()
        core.dirty += 1
        core.touch_all()
        log.info("MASTER <-> REPLICA sync: loaded the snapshot in %.3f s", time.monotonic() - started)
        self.drop_all_peers("full resync with our primary")
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
        if new_replid and new_replid != self.replid:
            self.replid2 = self.replid
            self.second_offset = self.offset + 1
            self.replid = new_replid
            log.info("Master replication ID changed to %s", new_replid)
            self.drop_all_peers("the replication id changed")
        self.create_backlog()

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
                self.diverged = True
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
        self.feed(raw)
        return getack

    def after_primary_batch(self) -> None:
        """After a read from the primary: our AOF write (and fsync) and our replicas' copy."""
        try:
            self.core.turn.make_durable()
        except RepliesWithheld as exc:
            # the AOF could not take the writes (persistence now answers MISCONF); as in
            # Redis, ACK still means "processed", not "on disk"
            log.warning("Writes from the primary are not durable: %s", exc)
        self.flush()

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
        self.sync_full = self.sync_partial_ok = self.sync_partial_err = 0
        self.net_in = self.net_out = 0

    def config_changed(self, name: str, value: Any) -> None:
        if name == "repl-backlog-size" and self.backlog is not None:
            self.backlog.resize(int(value))


def _int(value: bytes) -> int:
    try:
        return int(value)
    except ValueError:
        raise CommandError("ERR value is not an integer or out of range") from None
