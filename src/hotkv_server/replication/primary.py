"""The primary side of replication: the replicas attached to this server, the stream they
are fed (``HOTKV.EFFECT`` commands, pings, GETACKs), PSYNC/SYNC/REPLCONF, and WAIT.

Any server has this side: a primary feeds its own writes, a replica forwards its
primary's stream to replicas of its own (chained replication), so the whole chain shares
one history (``replication.history``). The side reaches the link to our own primary only
through the ``Upstream`` protocol it declares (``replication.replica`` implements it).
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING, Any, Protocol

from hotkv_server.engine.config import output_limits
from hotkv_server.engine.dispatch import NO_REPLY
from hotkv_server.engine.errors import CommandError
from hotkv_server.engine.replies import OK
from hotkv_server.replication.fullsync import FullSync
from hotkv_server.replication.link import REPL_TIMEOUT_S
from hotkv_server.replication.peers import Handshake, Peer, count_acked
from hotkv_server.replication.stream import GETACK, PING
from hotkv_server.replication.wait import Waits

if TYPE_CHECKING:
    from hotkv_server.engine.context import Context
    from hotkv_server.engine.core import Core
    from hotkv_server.replication.backlog import Backlog
    from hotkv_server.replication.history import History

log = logging.getLogger("hotkv")

#: a primary pings its replicas this often (Redis's repl-ping-replica-period)
PING_PERIOD_S = 10.0
NOMASTERLINK = "NOMASTERLINK Can't SYNC while not connected with my master"


class Upstream(Protocol):
    """What this side needs of the link to our own primary (a replica's)."""

    def link_up(self) -> bool: ...

    def send_ack(self) -> None: ...


class Replicas:
    """The replicas attached to one server and their stream (see the module docstring)."""

    def __init__(self, core: Core, history: History, upstream: Upstream) -> None:
        self.core = core
        self.history = history
        self.upstream = upstream
        self.peers: dict[int, Peer] = {}
        self.handshakes: dict[int, Handshake] = {}
        self.pending: list[bytes] = []  # stream bytes not yet written to the peers
        self.flush_scheduled = False
        self.getack_scheduled = False
        self.waits = Waits(self.peers)
        self.fullsync = FullSync(self)
        self.loop: asyncio.AbstractEventLoop | None = None
        self.last_ping = time.monotonic()
        self.net_out = 0
        self.sync_full = 0
        self.sync_partial_ok = 0
        self.sync_partial_err = 0

    # what fullsync reads of the history
    @property
    def replid(self) -> str:
        return self.history.replid

    @property
    def offset(self) -> int:
        return self.history.offset

    def started(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = self.waits.loop = loop

    def tick(self, now: float) -> None:
        """From the server's cron: pings, timeouts, soft output limits, keep-alives."""
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

    def close(self) -> None:
        self.fullsync.close()
        self.flush()
        self.waits.finish_all()

    # --- the stream ---------------------------------------------------------------------------
    def ensure_backlog(self) -> Backlog:
        return self.history.ensure_backlog(self.core.config.repl_backlog_size)

    def feed(self, data: bytes) -> None:
        """Append stream bytes: offset, backlog, and the replicas' output (written soon)."""
        self.history.append(data)
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

    def drop_all(self, why: str) -> None:
        """Our history changed: the replicas reconnect and learn it (mostly partially)."""
        self.flush()
        for peer in list(self.peers.values()):
            self.drop_peer(peer, why)

    # --- PSYNC / SYNC / REPLCONF --------------------------------------------------------------
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
                self.upstream.send_ack()
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
        # online only once the snapshot and the stream held behind it have all been written
        # (``send_bulk``): an ACK that comes while the child's pipe is still being read would
        # otherwise let the next flush write the stream directly *and* hold it for after
        # the snapshot, so the replica would apply those records twice
        if peer.state == "send_bulk":
            peer.state = "online"
            log.info("Synchronization with replica %s:%d succeeded", peer.ip, peer.port)
        if self.waits:
            self.waits.check()

    def psync(self, ctx: Context, replid: str, offset: int | None) -> Any:
        """Serve ``PSYNC replid offset`` (``offset`` None: the old ``SYNC``)."""
        if ctx.id in self.peers:
            return NO_REPLY  # as Redis: a replica repeating PSYNC is ignored
        if self.core.role == "slave" and not self.upstream.link_up():
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
        history = self.history
        if offset is not None and history.can_continue(replid, offset):
            backlog = history.backlog
            assert backlog is not None
            missing = backlog.read_from(offset)
            head = (b"+CONTINUE %s\r\n" % history.replid.encode() if "psync2" in info.capa
                    else b"+CONTINUE\r\n")
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
                             "full sync", name, replid, offset, history.replid, history.offset)
                else:
                    log.info("Full resync requested by replica %s", name)
            self.sync_full += 1
            self.ensure_backlog()
            self.peers[ctx.id] = peer
            # the snapshot is made by a forked child, off the loop (fullsync.py)
            self.fullsync.add(peer, with_head=offset is not None)
            log.info("Starting full sync with replica %s at offset %d", name, history.offset)
        self.peers[ctx.id] = peer
        return NO_REPLY

    def client_gone(self, ctx: Context) -> None:
        """A connection closed: a replica, a handshake in progress, or a client in WAIT."""
        self.handshakes.pop(ctx.id, None)
        peer = self.peers.pop(ctx.id, None)
        if peer is not None:
            log.info("Connection with replica %s:%d lost.", peer.ip, peer.port)
        if self.waits:
            self.waits.client_gone(ctx.id)

    # --- WAIT and min-replicas ----------------------------------------------------------------
    def good_replicas(self, max_lag: float) -> int:
        now = time.monotonic()
        return sum(1 for peer in self.peers.values()
                   if peer.state == "online" and now - peer.ack_time <= max_lag)

    def wait(self, ctx: Context, numreplicas: int, timeout_ms: int) -> Any:
        """WAIT: replicas that processed the stream up to now (which covers this client's writes)."""
        target = self.history.offset
        acked = count_acked(self.peers, target)
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

    def reset_stats(self) -> None:
        self.sync_full = self.sync_partial_ok = self.sync_partial_err = 0
        self.net_out = 0


def _int(value: bytes) -> int:
    try:
        return int(value)
    except ValueError:
        raise CommandError("ERR value is not an integer or out of range") from None
