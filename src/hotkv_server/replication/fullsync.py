"""Full syncs produced off the event loop, as BGREWRITEAOF writes a base.

Packing ``Database.snapshot()`` for a replica takes time in proportion to the data (about
170 ms for 200k entries), and on the event loop every other client would wait for it. So,
as Redis forks for the RDB of a full sync, a forked child (``engine.child``'s
set-up) packs the copy-on-write image of the fork instant and writes it into a pipe,
``<length>\\n`` then the bytes; the parent reads the pipe when it is readable, a slice at a
time, and forwards the bytes to the replicas at once, so the loop never holds more than
one slice of work.

One child (a *job*) serves every replica that asked before its first byte was forwarded:
each gets ``+FULLRESYNC <replid> <offset of the fork>``, ``$<length>\\r\\n`` and the
snapshot, then the stream bytes fed since the fork (held meanwhile, and bounded by the
``replica`` output limit), and from then on the live stream. A replica that asks later
waits for the next job (as Redis waits for the next BGSAVE); until its job starts it gets
newline keep-alives, as Redis sends while it prepares. A child that fails drops its
replicas, which reconnect and ask again.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import signal
import time
from typing import TYPE_CHECKING, Any, NoReturn, Protocol

from hotkv_server.engine.child import fork_writer, prepare_child
from hotkv_server.engine.config import output_limits
from hotkv_server.stores.effect import pack

if TYPE_CHECKING:
    from hotkv_server.engine.core import Core
    from hotkv_server.stores.database import Database


class Peer(Protocol):
    """What this module uses of a replica (``replication.peers.Peer``)."""

    ctx: Any
    transport: Any
    state: str
    written: int
    bulk_end: int


class Replicas(Protocol):
    """What this module uses of the primary side (``replication.primary.Replicas``)."""

    core: Core
    loop: asyncio.AbstractEventLoop | None
    peers: dict[int, Any]
    net_out: int
    pending: list[bytes]  # stream bytes fed but not yet flushed to the peers

    @property
    def replid(self) -> str: ...

    @property
    def offset(self) -> int: ...

    def drop_peer(self, peer: Any, why: str) -> None: ...

log = logging.getLogger("hotkv")

#: bytes read from the child per read, and the most one readable event handles before it
#: lets the loop serve others (a slice costs well under a millisecond to copy)
READ_CHUNK = 1 << 20
SLICE_BYTES = 4 << 20
KEEPALIVE_S = 1.0


def spawn_snapshot(db: Database) -> tuple[int, int]:
    """Fork a child writing ``<length>\\n`` + ``msgpack(db.snapshot())`` into a pipe;
    return (pid, the non-blocking read end)."""
    # the collector stays frozen until the job ends (SnapshotJob._finish)
    return fork_writer(lambda fd, parent: _child(db, fd, parent))


def _child(db: Database, fd: int, parent: int) -> NoReturn:
    try:
        prepare_child(fd, parent)
        payload = pack(db.snapshot())
        view = memoryview(b"%d\n" % len(payload) + payload)
        while view:
            view = view[os.write(fd, view):]
        os._exit(0)
    except BaseException:
        os._exit(1)


class SnapshotJob:
    """One child and the replicas its snapshot is for."""

    def __init__(self, sync: FullSync, replid: str, offset: int) -> None:
        self.sync = sync
        self.replid = replid
        self.offset = offset
        self.peers: list[Peer] = []
        self.held: list[bytes] = []  # stream bytes fed since the fork
        self.held_bytes = 0
        #: stream bytes fed before the fork but not yet flushed (their writes are in the
        #: snapshot and counted in ``offset``): the next flush starts with them, and they
        #: must not reach the new replicas a second time
        self.skip: int = sum(map(len, sync.repl.pending))
        self.size: int | None = None
        self.header = b""
        self.forwarded = 0
        self.started = time.monotonic()
        self.pid, self.fd = spawn_snapshot(sync.repl.core.db)
        self.done = False
        loop = sync.repl.loop
        assert loop is not None
        self.loop: asyncio.AbstractEventLoop = loop
        loop.add_reader(self.fd, self._readable)

    def join(self, peer: Peer, with_head: bool) -> None:
        self.peers.append(peer)
        if with_head:
            self.sync.send(peer, b"+FULLRESYNC %s %d\r\n" % (self.replid.encode(), self.offset))

    def live_peers(self) -> list[Peer]:
        peers = self.sync.repl.peers
        return [p for p in self.peers if peers.get(p.ctx.id) is p and not p.transport.is_closing()]

    def _readable(self) -> None:
        budget = SLICE_BYTES
        while budget > 0:
            try:
                data = os.read(self.fd, READ_CHUNK)
            except BlockingIOError:
                return
            except OSError as exc:
                self._finish(f"reading the snapshot failed: {exc.strerror or exc}")
                return
            if not data:
                self._finish(None)
                return
            budget -= len(data)
            self._got(data)
            if self.done:
                return

    def _got(self, data: bytes) -> None:
        if self.size is None:
            self.header += data
            head, sep, rest = self.header.partition(b"\n")
            if not sep:
                return
            self.size = int(head)
            self.header = b""
            data = rest
            for peer in self.live_peers():
                self.sync.send(peer, b"$%d\r\n" % self.size)
        if not data:
            return
        self.forwarded += len(data)
        peers = self.live_peers()
        if not peers:
            self._finish("every replica waiting for it went away")
            return
        for peer in peers:
            self.sync.send(peer, data)

    def hold(self, data: bytes) -> None:
        """Stream bytes fed while the child runs: they follow the snapshot."""
        self.held.append(data)
        self.held_bytes += len(data)
        hard = output_limits(self.sync.repl.core.config.values["client-output-buffer-limit"], "replica")[0]
        if hard and self.held_bytes > hard:
            self._finish(f"the stream written meanwhile ({self.held_bytes} bytes) passed the "
                         f"replica output limit ({hard})")

    def _finish(self, error: str | None) -> None:
        if self.done:
            return
        self.done = True
        self.loop.remove_reader(self.fd)
        if error is not None:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            _, status = os.waitpid(self.pid, 0)
        except ChildProcessError:
            status = -1
        os.close(self.fd)
        gc.unfreeze()
        if error is None and (status != 0 or self.size is None or self.forwarded != self.size):
            error = f"the snapshot child ended with status {status} after {self.forwarded} bytes"
        sync = self.sync
        sync.job = None
        repl = sync.repl
        if error is not None:
            log.warning("Full sync snapshot failed: %s", error)
            for peer in self.live_peers():
                repl.drop_peer(peer, "the full sync snapshot failed")
        else:
            log.info("Full sync snapshot of %d bytes sent in %.3f s (produced off the event loop)",
                     self.forwarded, time.monotonic() - self.started)
            rest = b"".join(self.held)
            for peer in self.live_peers():
                peer.bulk_end = peer.written
                peer.state = "send_bulk"
                if rest:
                    sync.send(peer, rest)
        self.held = []
        sync.start_next()


class FullSync:
    """The full syncs of one server's replicas (``Replicas.fullsync``)."""

    def __init__(self, repl: Replicas) -> None:
        self.repl = repl
        self.job: SnapshotJob | None = None
        #: replicas that asked while a job was already forwarding: (peer, send the head)
        self.queued: list[tuple[Peer, bool]] = []
        self.last_keepalive = 0.0

    def add(self, peer: Peer, with_head: bool) -> None:
        """A replica needs a full sync (``with_head``: PSYNC, so +FULLRESYNC; SYNC: none)."""
        peer.state = "wait_bgsave"
        job = self.job
        if job is not None and job.forwarded == 0 and job.size is None \
                and (job.replid, job.offset) == (self.repl.replid, self.repl.offset):
            job.join(peer, with_head)  # the image of this very instant is being made
            return
        if job is not None:
            self.queued.append((peer, with_head))
            return
        self._start([(peer, with_head)])

    def _start(self, waiting: list[tuple[Peer, bool]]) -> None:
        repl = self.repl
        try:
            job = SnapshotJob(self, repl.replid, repl.offset)
        except OSError as exc:
            log.warning("Can't fork for a full sync: %s", exc.strerror or exc)
            for peer, _ in waiting:
                repl.drop_peer(peer, "the full sync could not start")
            return
        self.job = job
        for peer, with_head in waiting:
            job.join(peer, with_head)
        log.info("Full sync: snapshot child %d started at offset %d for %d replica(s)",
                 job.pid, job.offset, len(waiting))

    def start_next(self) -> None:
        peers = self.repl.peers
        waiting = [(p, h) for p, h in self.queued if peers.get(p.ctx.id) is p]
        self.queued = []
        if waiting:
            self._start(waiting)

    def hold(self, data: bytes) -> None:
        """From ``Replicas.flush``: stream bytes the waiting replicas get later."""
        job = self.job
        if job is None:
            return
        if job.skip:  # already in the snapshot (fed before the fork, flushed after it)
            cut = min(job.skip, len(data))
            job.skip -= cut
            data = data[cut:]
            if not data:
                return
        job.hold(data)

    def send(self, peer: Peer, data: bytes) -> None:
        transport = peer.transport
        if transport.is_closing():
            return
        transport.write(data)
        peer.written += len(data)
        self.repl.net_out += len(data)
        if peer.state == "wait_bgsave":  # the snapshot is not "output buffer" (as an RDB file)
            peer.bulk_end = peer.written

    def tick(self, now: float) -> None:
        """Keep-alives for replicas that wait before their ``$<length>`` line."""
        job = self.job
        # only once a replica has waited a while: a quick snapshot comes without them
        if job is None or now - job.started < KEEPALIVE_S or now - self.last_keepalive < KEEPALIVE_S:
            return
        self.last_keepalive = now
        if job.size is None:
            for peer in job.live_peers():
                self.send(peer, b"\n")
        for peer, _ in self.queued:
            if not peer.transport.is_closing():
                self.send(peer, b"\n")

    def close(self) -> None:
        """Shutdown: stop a child still running."""
        self.queued = []
        if self.job is not None:
            self.job._finish("the server is shutting down")
