"""The replica's side: one outbound connection to the primary, kept up with backoff.

The handshake is Redis's: ``PING``, ``AUTH [masteruser] masterauth`` (if set),
``REPLCONF listening-port <port>``, ``REPLCONF capa eof capa psync2``, then
``PSYNC <replid> <offset+1>``. The answer is ``+FULLRESYNC <replid> <offset>`` followed
by the snapshot, or ``+CONTINUE [<replid>]`` followed by the missed part of the stream.
From then on every command read is applied (see ``Follower.apply_from_primary`` in ``replication.replica``),
``REPLCONF ACK <offset>`` goes back every second and whenever the primary sends
``REPLCONF GETACK *``.

While the link is down the replica keeps answering reads from what it has, and tries
again after 0.1 s, 0.2 s, 0.4 s ... at most ``RETRY_MAX_S`` apart.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import time
from typing import TYPE_CHECKING, Protocol

from hotkv_server.engine.context import Context
from hotkv_server.replication.stream import CommandParser, StreamError, encode_command

if TYPE_CHECKING:
    from hotkv_server.engine.core import Core

log = logging.getLogger("hotkv")

#: no byte from the primary for this long means the link is dead (Redis's repl-timeout)
REPL_TIMEOUT_S = 60.0
RETRY_MIN_S = 0.1
RETRY_MAX_S = 2.0
READ_SIZE = 256 * 1024


class LinkOwner(Protocol):
    """What the link needs of the replica side it serves (``replication.replica.Follower``): the link
    depends on this, not on the replication manager."""

    core: Core
    #: bytes read from the primary (INFO's total_net_repl_input_bytes)
    net_in: int

    @property
    def offset(self) -> int:
        """Stream bytes processed (our replication offset)."""

    def psync_request(self) -> tuple[str, int]: ...

    def load_snapshot(self, replid: str, offset: int, payload: bytes) -> None: ...

    def continue_from_primary(self, new_replid: str | None) -> None: ...

    def apply_from_primary(self, link_ctx: Context, argv: list[bytes], raw: bytes) -> bool: ...

    def after_primary_batch(self) -> None: ...


class LinkError(Exception):
    """The primary refused, closed the connection or sent something unexpected."""


class PrimaryLink:
    """The connection of a replica to its primary (``REPLICAOF host port``)."""

    def __init__(self, repl: LinkOwner, host: str, port: int) -> None:
        self.repl = repl
        self.host = host
        self.port = port
        #: Redis's names: connect, connecting, handshake, sync, connected
        self.state = "connect"
        self.task: asyncio.Task[None] | None = None
        self.writer: asyncio.StreamWriter | None = None
        self.ctx: Context | None = None
        self.last_io = time.monotonic()
        #: when a working link was lost (None: up, or never up since REPLICAOF), INFO's
        #: master_link_down_since_seconds
        self.down_since: float | None = None
        self.last_ack = 0.0
        self.sync_total = 0
        self.sync_read = 0
        self.sync_last_io = time.monotonic()
        self.stopped = False

    # --- life cycle -------------------------------------------------------------------
    def start(self) -> None:
        self.task = asyncio.get_running_loop().create_task(self._run(), name="hotkv-replica-link")

    def stop(self) -> None:
        """Close the link for good (REPLICAOF NO ONE, another primary, shutdown).

        The task is suspended at an await while this runs (one thread), and a cancelled
        task never resumes past that await, so nothing from this link is applied after.
        """
        self.stopped = True
        if self.task is not None:
            self.task.cancel()
        self._disconnected()

    async def wait_closed(self) -> None:
        task = self.task
        if task is not None and not task.done():
            try:
                await task
            except asyncio.CancelledError:
                pass

    def drop(self) -> None:
        """Close the current connection; the link reconnects (CLIENT KILL TYPE master)."""
        if self.writer is not None:
            self.writer.transport.abort()

    @property
    def connected(self) -> bool:
        return self.state == "connected"

    async def _run(self) -> None:
        delay = RETRY_MIN_S
        while not self.stopped:
            synced = False
            try:
                synced = await self._session()
            except asyncio.CancelledError:
                raise
            except (TimeoutError, OSError, EOFError, LinkError, StreamError, asyncio.IncompleteReadError) as exc:
                log.warning("Connection with MASTER %s:%d: %s", self.host, self.port, _describe(exc))
            except Exception:
                log.exception("Replication link to %s:%d failed", self.host, self.port)
            finally:
                self._disconnected()
            if synced:
                delay = RETRY_MIN_S
            await asyncio.sleep(delay)
            delay = min(delay * 2, RETRY_MAX_S)

    def _disconnected(self) -> None:
        was_connected = self.state == "connected"
        if self.writer is not None:
            self.writer.transport.abort()
            self.writer = None
        if self.ctx is not None:
            core = self.repl.core
            core.clients.pop(self.ctx.id, None)
            self.ctx.closer = None
            self.ctx = None
        if was_connected:
            self.down_since = time.monotonic()
            log.info("MASTER %s:%d link is down", self.host, self.port)
        self.state = "connect"

    # --- one connection -----------------------------------------------------------------
    async def _session(self) -> bool:
        """Connect, sync, then apply the stream until the connection ends.

        Returns whether a sync succeeded (so the retry delay starts small again).
        """
        repl = self.repl
        self.state = "connecting"
        log.info("Connecting to MASTER %s:%d", self.host, self.port)
        reader, writer = await asyncio.wait_for(
            asyncio.open_connection(self.host, self.port, limit=READ_SIZE), REPL_TIMEOUT_S
        )
        self.writer = writer
        sock = writer.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.state = "handshake"
        log.info("MASTER <-> REPLICA sync started")
        await self._handshake(reader, writer)
        replid, offset = repl.psync_request()
        reply = await self._call(reader, writer, b"PSYNC", replid.encode(), b"%d" % offset)
        if reply.startswith(b"+FULLRESYNC"):
            parts = reply.split()
            if len(parts) != 3:
                raise LinkError(f"bad FULLRESYNC reply {reply!r}")
            new_id = parts[1].decode("ascii", "replace")
            start = int(parts[2])
            log.info("Full resync from master: %s:%d", new_id, start)
            self.state = "sync"
            payload = await self._read_snapshot(reader)
            repl.load_snapshot(new_id, start, payload)
            log.info("MASTER <-> REPLICA sync: Finished with success")
        elif reply.startswith(b"+CONTINUE"):
            parts = reply.split()
            continued = parts[1].decode("ascii", "replace") if len(parts) > 1 else None
            log.info("MASTER <-> REPLICA sync: Master accepted a Partial Resynchronization.")
            repl.continue_from_primary(continued)
        elif reply.startswith((b"-NOMASTERLINK", b"-LOADING")):
            raise LinkError(f"master is not ready ({reply[1:].decode('utf-8', 'replace')}), retrying")
        else:
            raise LinkError(f"unexpected reply to PSYNC: {reply.decode('utf-8', 'replace')}")
        self._connected(writer)
        await self._stream(reader)
        return True

    async def _handshake(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        values = self.repl.core.config.values
        reply = await self._call(reader, writer, b"PING")
        # as Redis: an authentication error to PING is fine, AUTH comes next
        if reply.startswith(b"-") and not reply.startswith((b"-NOAUTH", b"-NOPERM", b"-ERR operation not permitted")):
            raise LinkError(f"error reply to PING from master: {reply.decode('utf-8', 'replace')}")
        if values["masterauth"]:
            args = [b"AUTH"]
            if values["masteruser"]:
                args.append(values["masteruser"].encode())
            args.append(values["masterauth"].encode())
            reply = await self._call(reader, writer, *args)
            if not reply.startswith(b"+"):
                raise LinkError(f"unable to AUTH to MASTER: {reply.decode('utf-8', 'replace')}")
        # what the primary shows of this replica in INFO (and so what Sentinel connects to):
        # replica-announce-port/ip when set, as Redis's replicationSendAck handshake does
        port = values["replica-announce-port"] or self.repl.core.tcp_port
        reply = await self._call(reader, writer, b"REPLCONF", b"listening-port", b"%d" % port)
        if reply.startswith(b"-"):
            log.info("(Non critical) Master does not understand REPLCONF listening-port: %s",
                     reply.decode("utf-8", "replace"))
        if values["replica-announce-ip"]:
            reply = await self._call(reader, writer, b"REPLCONF", b"ip-address",
                                     values["replica-announce-ip"].encode())
            if reply.startswith(b"-"):
                log.info("(Non critical) Master does not understand REPLCONF ip-address: %s",
                         reply.decode("utf-8", "replace"))
        reply = await self._call(reader, writer, b"REPLCONF", b"capa", b"eof", b"capa", b"psync2")
        if reply.startswith(b"-"):
            log.info("(Non critical) Master does not understand REPLCONF capa: %s", reply.decode("utf-8", "replace"))
        cluster = self.repl.core.cluster
        if cluster is not None:
            # no gossip: a node that comes back (an old primary Sentinel made a replica) learns
            # the topology written meanwhile from the primary it now follows
            writer.write(encode_command(b"CLUSTER", b"TOPOLOGY"))
            header = await self._call_reply_line(reader)
            if header.startswith(b"$") and header[1:].isdigit():
                body = await asyncio.wait_for(reader.readexactly(int(header[1:]) + 2), REPL_TIMEOUT_S)
                if cluster.adopt(body[:-2]):
                    log.info("Cluster topology taken from the master (it was newer)")
            else:
                log.info("(Non critical) Master did not send its cluster topology: %s",
                         header.decode("utf-8", "replace"))

    async def _call(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, *args: bytes) -> bytes:
        """Send one command and read its one-line reply (the handshake only needs those)."""
        writer.write(encode_command(*args))
        return await self._call_reply_line(reader)

    async def _call_reply_line(self, reader: asyncio.StreamReader) -> bytes:
        while True:
            line = await asyncio.wait_for(reader.readline(), REPL_TIMEOUT_S)
            if not line:
                raise LinkError("connection closed by master during the handshake")
            self.last_io = time.monotonic()
            if line.strip():  # Redis sends bare newlines as keep-alives while it prepares
                return line.rstrip(b"\r\n")

    async def _read_snapshot(self, reader: asyncio.StreamReader) -> bytes:
        while True:
            line = await asyncio.wait_for(reader.readline(), REPL_TIMEOUT_S)
            if not line:
                raise LinkError("connection closed by master before the snapshot")
            if line.strip():
                break
        if not line.startswith(b"$"):
            raise LinkError(f"bad snapshot header {line[:64]!r}")
        try:
            size = int(line[1:].strip())
        except ValueError:
            raise LinkError(f"bad snapshot length {line[:64]!r}") from None
        self.sync_total = size
        self.sync_read = 0
        chunks: list[bytes] = []
        while self.sync_read < size:
            chunk = await asyncio.wait_for(reader.read(min(size - self.sync_read, 1 << 20)), REPL_TIMEOUT_S)
            if not chunk:
                raise LinkError("connection closed by master during the snapshot transfer")
            chunks.append(chunk)
            self.sync_read += len(chunk)
            self.repl.net_in += len(chunk)
            self.last_io = self.sync_last_io = time.monotonic()
        log.info("MASTER <-> REPLICA sync: received %d bytes of snapshot", size)
        return b"".join(chunks)

    def _connected(self, writer: asyncio.StreamWriter) -> None:
        core = self.repl.core
        ctx = Context(core, f"{self.host}:{self.port}", _local_addr(writer))
        ctx.is_master_link = True  # dispatch lets the primary's writes through on a replica
        ctx.authenticated = True
        ctx.user = None  # the primary is trusted as Redis trusts its master client
        ctx.flags = "M"
        ctx.closer = self.drop
        core.clients[ctx.id] = ctx
        self.ctx = ctx
        self.state = "connected"
        self.down_since = None
        self.send_ack()

    async def _stream(self, reader: asyncio.StreamReader) -> None:
        repl = self.repl
        parser = CommandParser()
        while True:
            data = await asyncio.wait_for(reader.read(READ_SIZE), REPL_TIMEOUT_S)
            if not data:
                raise LinkError("connection closed by master")
            self.last_io = time.monotonic()
            repl.net_in += len(data)
            parser.feed(data)
            ack = False
            ctx = self.ctx
            assert ctx is not None
            while True:
                item = parser.next()
                if item is None:
                    break
                ack = repl.apply_from_primary(ctx, item[0], item[1]) or ack
            repl.after_primary_batch()
            if ack:
                self.send_ack()

    def send_ack(self) -> None:
        """``REPLCONF ACK <offset>``: how much of the stream this replica has processed."""
        writer = self.writer
        if writer is None or self.state != "connected":
            return
        self.last_ack = time.monotonic()
        writer.write(encode_command(b"REPLCONF", b"ACK", b"%d" % self.repl.offset))


def _local_addr(writer: asyncio.StreamWriter) -> str:
    info = writer.get_extra_info("sockname")
    if isinstance(info, tuple) and len(info) >= 2:
        return f"{info[0]}:{info[1]}"
    return "?:0"


def _describe(exc: BaseException) -> str:
    if isinstance(exc, asyncio.TimeoutError):
        return f"timeout: no data for {REPL_TIMEOUT_S:.0f} seconds"
    if isinstance(exc, asyncio.IncompleteReadError):
        return "connection closed by master"
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused"
    return str(exc) or type(exc).__name__
