"""One asyncio.Protocol per client: bytes -> requests -> replies, with flow control.

Three jobs, three parts. The request reader (``server/reader.py``) turns the bytes read
into argument lists, inline and multibulk alike, and reports a malformed request as a
value. The flow (``server/flow.py``) pauses reading while any reason holds: the client's
output backed up, a reply not known yet, too many requests held behind it. And one answer
path (``_serve``, then ``_send``) takes every reply, made at once or later (a
``Deferred``: WAIT, a search on the threads, an embedding, a blocking pop): encoded in the
client's protocol, in order with the others, held to the output limit, then written (the
replies of one read in one write) or held until the turn's AOF write. A deferred reply has
been counted by the dispatch point (its timing, command statistics, errors, slowlog)
before it gets here, as any command's.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from hotkv_server.engine.config import output_limits
from hotkv_server.engine.context import Context
from hotkv_server.engine.dispatch import NO_REPLY, Deferred, dispatch
from hotkv_server.server.flow import DEFERRED, HELD, OUTPUT, ReadFlow
from hotkv_server.server.reader import ProtocolError, Request, RequestReader
from hotkv_server.server.resp import INT_REPLIES, OK, OK_BYTES, encode, encode_error

if TYPE_CHECKING:
    from hotkv_server.engine.core import Core

log = logging.getLogger("hotkv")

#: pause reading from a client once this much output waits in its transport
WRITE_HIGH_WATER = 4 * 1024 * 1024
#: requests held behind a deferred reply that keeps reading, before reading pauses
MAX_HELD = 1024


class ClientProtocol(asyncio.Protocol):
    """The network side of one client."""

    def __init__(self, core: Core, tls: bool = False) -> None:
        self.core = core
        self.tls = tls
        self.transport: asyncio.Transport | None = None
        self.ctx: Context | None = None
        #: bytes -> requests (server/reader.py)
        self.reader = RequestReader(core)
        #: why reading is paused now (server/flow.py): output backed up, a deferred reply
        self.flow = ReadFlow(self)
        self.closed = False
        self.soft_since = 0
        #: a reply not known yet (WAIT): until it resolves, reading pauses and the requests
        #: already read wait in ``held`` (a protocol error last, when one came)
        self.deferred: Deferred | None = None
        self.held: deque[Request] = deque()
        #: replies held until the end of this event-loop turn (see ``_send``), else None
        self.turn_out: list[bytes] | None = None
        #: the replies of the read being processed: pushes (pub/sub) join them in order
        self.current_out: list[bytes] | None = None
        #: bytes of the read being processed (CLIENT LIST's qbuf counts them)
        self.reading = 0

    # --- lifecycle ----------------------------------------------------------------
    def connection_made(self, base: asyncio.BaseTransport) -> None:
        # uvloop's transports do not subclass asyncio.Transport, but behave as one
        transport: asyncio.Transport = base  # type: ignore[assignment]
        self.transport = transport
        core = self.core
        core.stats.total_connections_received += 1
        peer = transport.get_extra_info("peername")
        local = transport.get_extra_info("sockname")
        addr = _format_addr(peer)
        laddr = _format_addr(local)
        if len(core.clients) >= core.config.maxclients:
            core.stats.rejected_connections += 1
            transport.write(b"-ERR max number of clients reached\r\n")
            transport.close()
            self.closed = True
            return
        denial = core.connection_gate
        if denial is not None:
            message = denial(peer)
            if message:
                core.stats.rejected_connections += 1
                transport.write(encode_error(message))
                transport.close()
                self.closed = True
                return
        ctx = Context(core, addr, laddr)
        ctx.writer = self._write_out_of_band
        ctx.closer = self._close_from_server
        ctx.push = self._push
        ctx.transport = transport
        ctx.conn = self
        self.ctx = ctx
        core.clients[ctx.id] = ctx
        transport.set_write_buffer_limits(high=WRITE_HIGH_WATER)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        ctx = self.ctx
        if ctx is None:
            return
        core = self.core
        core.clients.pop(ctx.id, None)
        core.monitors.discard(ctx)
        core.pubsub.drop(ctx)
        ctx.unwatch()
        core.client_gone(ctx)
        ctx.writer = None
        ctx.closer = None
        ctx.push = None
        ctx.transport = None
        ctx.conn = None

    def pause_writing(self) -> None:
        self.flow.pause(OUTPUT)

    def resume_writing(self) -> None:
        self.flow.resume(OUTPUT)

    # --- input --------------------------------------------------------------------
    def data_received(self, data: bytes) -> None:
        ctx = self.ctx
        if ctx is None or self.closed or ctx.close_after_reply:
            return  # (closing once its held replies leave: the rest is never read)
        self.core.stats.total_net_input_bytes += len(data)
        reader = self.reader  # (after a protocol error it gives nothing: the rest is unread)
        out: list[bytes] = []
        self.current_out = out
        self.reading = len(data)
        limit = (self._hard_output_limit(ctx) if ctx.flags or ctx.pubsub is not None
                 else self.core.normal_output_hard_limit)
        try:
            self._serve(ctx, reader.feed(data, ctx), out, limit)
            while reader.unread and not ctx.close_after_reply:  # (after an inline AUTH)
                self._serve(ctx, reader.feed(b"", ctx), out, limit)
        except Exception:  # a bug in the request layer: say so and close, never stay silent
            log.exception("internal error reading from client %s", ctx.addr)
            out.append(encode_error("ERR internal error while reading the request"))
            ctx.close_after_reply = True
        self.current_out = None
        self.reading = 0
        ctx.last_interaction_ms = ctx.now_ms
        self._send(out)

    def _serve(self, ctx: Context, items: Iterable[Request | Late], out: list[bytes],
               limit: int) -> None:
        """The one answer path: run the requests in ``items`` in order and answer each,
        and answer the value of a deferred reply (a ``Late`` item) the same way. Used for
        the requests of a read, and for a late reply and the requests held behind it.

        A reply is encoded in the client's protocol as it is then (HELLO may just have
        changed it; +OK without a call), after the replies before it in ``out`` (which
        ``_send`` writes, or holds for the turn's AOF write), and held to the client's
        hard output limit ``limit`` (0: none). A reply not known yet (a Deferred) parks
        the connection: the requests after it are held, and its value comes back here
        when it resolves (``_deferred_resolved``). A protocol error is answered after
        everything before it.
        """
        size = 0
        for item in items:
            if type(item) is list:
                if self.deferred is not None:  # behind a deferred reply: run it afterwards
                    self._hold_request(ctx, item)
                    continue
                reply = dispatch(ctx, item)
            elif type(item) is Late:
                reply = item.value  # (counted by the dispatch point as it resolved)
            else:
                assert isinstance(item, ProtocolError)
                self._protocol_error(ctx, out, item)
                return
            kind = type(reply)  # the replies of the hot commands encoded here, without a call
            if reply is OK:
                encoded = OK_BYTES
            elif kind is bytes:  # (resp.encode's own first case)
                encoded = b"$%d\r\n%b\r\n" % (len(reply), reply)
            elif kind is int and 0 <= reply < 1024:
                encoded = INT_REPLIES[reply]
            elif reply is NO_REPLY:
                continue
            elif kind is Deferred:
                self._park(reply)
                continue
            else:
                encoded = encode(reply, ctx.proto)
            out.append(encoded)
            if limit:
                size += len(encoded)
                if size > limit:
                    self._over_output_limit(ctx, out, size)
            if ctx.close_after_reply:
                return

    def _send(self, out: list[bytes]) -> None:
        """Write the replies of one read, or hold them until the end of this loop turn.

        While writes of this turn wait in the AOF buffer (``core.turn.barrier``), replies
        are held: at the end of the turn the AOF is written once (and fsynced under
        ``always``) for every client of the turn, then the held replies leave, as Redis
        does in beforeSleep (``hotkv_server.engine.turn``). Once a client holds replies,
        its later ones queue behind them.
        """
        if self.turn_out is not None or self.core.turn.barrier:
            if out or (self.ctx is not None and self.ctx.close_after_reply):
                self._hold(out)
            return
        self._deliver(out)

    def _hold(self, out: list[bytes]) -> None:
        held = self.turn_out
        if held is None:
            held = self.turn_out = []
            self.core.turn.hold(self)
        held.extend(out)

    def release(self) -> None:
        """End of the turn: the AOF has the writes these replies acknowledge."""
        out, self.turn_out = self.turn_out, None
        if out is not None and not self.closed:
            self._deliver(out)

    def withhold(self, exc: Exception) -> None:
        """End of the turn: the writes could not be made durable; answer nothing, close."""
        self.turn_out = None
        if self.ctx is not None and self.transport is not None and not self.closed:
            log.warning("closing client %s without replies: %s", self.ctx.addr, exc)
            self.closed = True
            self.transport.abort()

    def _deliver(self, out: list[bytes]) -> None:
        ctx = self.ctx
        core = self.core
        transport = self.transport
        assert transport is not None and ctx is not None
        if out:
            payload = out[0] if len(out) == 1 else b"".join(out)
            core.stats.total_net_output_bytes += len(payload)
            if not self.closed:
                transport.write(payload)
                pending = transport.get_write_buffer_size()
                if pending:
                    self._check_output_limit(ctx, pending)
        if ctx.close_after_reply and not self.closed:
            self.closed = True
            transport.close()

    def _hard_output_limit(self, ctx: Context) -> int:
        if ctx.flags or ctx.pubsub is not None:
            return output_limits(self.core.config.client_output_buffer_limit,
                                 limit_class(ctx))[0]
        return self.core.normal_output_hard_limit

    def _over_output_limit(self, ctx: Context, out: list[bytes], size: int) -> None:
        """Replies of one read passed the hard limit before being written: drop the client
        now rather than build them all (a read of many GETs of a big value)."""
        assert self.transport is not None
        pending = size + self.transport.get_write_buffer_size()
        if pending > self._hard_output_limit(ctx):
            out.clear()
            self._drop_over_limit(ctx, pending)

    def _check_output_limit(self, ctx: Context, pending: int) -> None:
        """Enforce ``client-output-buffer-limit normal <hard> <soft> <seconds>``."""
        hard, soft, seconds = output_limits(self.core.config.client_output_buffer_limit,
                                            limit_class(ctx))
        now = self.core.clock.now_ms()  # not ctx.now_ms: a subscriber runs no commands
        over_soft = soft > 0 and pending > soft
        if not over_soft:
            self.soft_since = 0
        elif not self.soft_since:
            self.soft_since = now
        if (hard > 0 and pending > hard) or (over_soft and now - self.soft_since >= seconds * 1000):
            self._drop_over_limit(ctx, pending)

    def _drop_over_limit(self, ctx: Context, pending: int) -> None:
        """Close a client whose output passed its limit, without sending what waits."""
        log.warning("closing client %s: output buffer of %d bytes over the limit", ctx.addr, pending)
        ctx.close_after_reply = True
        if self.transport is not None:
            self.closed = True
            self.transport.abort()

    def _park(self, deferred: Deferred) -> None:
        """Wait for ``deferred``; stop reading so at most one read's requests are held
        (a ``keep_reading`` wait reads on, so a close is seen, up to ``MAX_HELD``)."""
        self.deferred = deferred
        deferred.callback = self._deferred_resolved
        if self.ctx is not None:
            self.ctx.blocked = True
        if not deferred.keep_reading:
            self.flow.pause(DEFERRED)

    def _hold_request(self, ctx: Context, argv: list[bytes]) -> None:
        held = self.held
        held.append(argv)
        ahead = self.core.lookahead
        if ahead is not None:  # e.g. start embedding a held store by text
            ahead(ctx, argv)
        if len(held) >= MAX_HELD:
            self.flow.pause(HELD)

    def _deferred_resolved(self, deferred: Deferred) -> None:
        """The late reply (counted already by the dispatch point's completion step) goes
        the one answer path, then the held requests run (and may park again)."""
        self.deferred = None
        ctx = self.ctx
        if ctx is None or self.closed:
            return
        ctx.blocked = False
        ctx.last_interaction_ms = ctx.core.clock.now_ms()
        out: list[bytes] = []
        self.current_out = out
        self._serve(ctx, self._late_then_held(deferred.value), out, self._hard_output_limit(ctx))
        self.current_out = None
        # the snapshot of the parked command is old: never move the idle clock back to it
        ctx.last_interaction_ms = max(ctx.last_interaction_ms, ctx.now_ms)
        self._send(out)
        self._resume_unless_parked()

    def _resume_unless_parked(self) -> None:
        """Read again, unless a held request parked the connection again. (A method of its
        own: compiled, a read of ``deferred`` in the function that assigned it None would
        be checked against that None, while ``_serve`` may have parked it meanwhile.)"""
        if self.deferred is None:
            self.flow.resume(DEFERRED, HELD)

    def _late_then_held(self, value: Any) -> Iterator[Request | Late]:
        """A deferred reply's value, then the held requests in order, until one of them
        parks the connection again."""
        yield Late(value)
        held = self.held
        while held and self.deferred is None:
            yield held.popleft()

    def _protocol_error(self, ctx: Context, out: list[bytes], error: ProtocolError) -> None:
        """Answer a malformed request and close, after any deferred reply still owed."""
        if self.deferred is not None:
            self.held.append(error)
            return
        out.append(encode_error(error.reply))
        ctx.close_after_reply = True

    # --- out of band ----------------------------------------------------------------
    def _push(self, value: Any) -> None:
        """A pub/sub value for this client: after the replies already made for its current
        read, else as a reply of their own (held with the turn's replies when those wait).
        One message goes to many subscribers in turn: encoded once per protocol."""
        proto = self.ctx.proto if self.ctx is not None else 2
        last = _LAST_PUSH.get(proto)
        if last is not None and last[0] is value:
            payload = last[1]
        else:
            payload = encode(value, proto)
            _LAST_PUSH[proto] = (value, payload)
        out = self.current_out
        if out is not None:
            out.append(payload)
        elif not self.closed and self.transport is not None:
            self._send([payload])

    def _write_out_of_band(self, payload: bytes) -> None:
        if self.transport is not None and not self.closed:
            self.core.stats.total_net_output_bytes += len(payload)
            self.transport.write(payload)

    def _close_from_server(self) -> None:
        if self.transport is not None and not self.closed:
            self.closed = True
            self.transport.close()

    def buffers(self) -> dict[str, int]:
        """CLIENT LIST's buffer fields, measured: ``fd``; ``qbuf`` the request bytes read and
        not yet consumed (the read being run, or a partial request); ``qbuf-free`` what the
        next read may add (asyncio reads 64 KiB); ``obl`` replies made and not yet handed to
        the socket (held for the AOF at the end of the turn); ``oll`` how many of them;
        ``omem`` those plus what waits in the transport's write buffer."""
        transport = self.transport
        fd = -1
        pending = 0
        if transport is not None and not self.closed:
            sock = transport.get_extra_info("socket")
            fd = sock.fileno() if sock is not None else -1
            pending = transport.get_write_buffer_size()
        qbuf = self.reading or self.reader.pending
        held = (self.turn_out or []) + (self.current_out or [])
        obl = sum(len(chunk) for chunk in held)
        return {"fd": fd, "qbuf": qbuf, "qbuf-free": max(0, 65536 - qbuf), "obl": obl,
                "oll": len(held), "omem": obl + pending}

    def write_reply(self, value: Any) -> None:
        """Send one reply outside a request (used by subsystems such as replication)."""
        if self.ctx is not None:
            self._write_out_of_band(encode(value, self.ctx.proto))


class Late:
    """The value a deferred reply resolved to, on its way through ``_serve``."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


#: protocol -> (the last pushed value, its bytes): a message published to many subscribers
#: is the same value for each of them
_LAST_PUSH: dict[int, tuple[Any, bytes]] = {}


def limit_class(ctx: Context) -> str:
    """The client-output-buffer-limit class of a client, as Redis's getClientType picks it."""
    if "S" in ctx.flags:
        return "replica"
    if ctx.pubsub is not None:
        return "pubsub"
    return "normal"


def end_turn(core: Core) -> None:
    """End the event-loop turn now (``core.turn.end``; benchmarks and tests call it)."""
    core.turn.end()


def _format_addr(info: Any) -> str:
    if isinstance(info, tuple) and len(info) >= 2:
        host = info[0]
        return f"{host}:{info[1]}"
    if isinstance(info, str):
        return f"{info}:0"
    return "?:0"
