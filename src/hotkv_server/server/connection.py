"""One asyncio.Protocol per client: bytes -> commands -> replies, with flow control.

Requests are parsed by ``hiredis.Reader`` (multibulk) or by ``split_inline`` (a line of
words, as telnet and redis-cli's inline mode send). All commands found in one read are
executed in order and their replies leave in one write. Reading pauses while the client's
output is backed up, so a client that never reads cannot make the server buffer forever.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from typing import TYPE_CHECKING, Any

import hiredis

from hotkv_server.engine.config import output_limits
from hotkv_server.engine.context import Context
from hotkv_server.engine.dispatch import NO_REPLY, Deferred, dispatch
from hotkv_server.engine.words import UnbalancedQuotes, split_args
from hotkv_server.server.flow import DEFERRED, HELD, OUTPUT, ReadFlow
from hotkv_server.server.framing import (
    SUSPICIOUS_COUNT,
    UNAUTH_MAX_BULK,
    UNAUTH_MAX_MULTIBULK,
    Framer,
    Position,
    ProtocolViolation,
    drop_negative_counts,
)
from hotkv_server.server.resp import OK, OK_BYTES, encode, encode_error

if TYPE_CHECKING:
    from hotkv_server.engine.core import Core

log = logging.getLogger("hotkv")

MAX_INLINE = 64 * 1024
#: pause reading from a client once this much output waits in its transport
WRITE_HIGH_WATER = 4 * 1024 * 1024
#: requests held behind a deferred reply that keeps reading, before reading pauses
MAX_HELD = 1024


def split_inline(line: bytes) -> list[bytes]:
    """Split an inline request into words (see ``hotkv_server.engine.words.split_args``)."""
    try:
        return split_args(line)
    except UnbalancedQuotes:
        raise ProtocolViolation("unbalanced quotes in request") from None


#: stand-ins for the requests '*0' and '*-1' when telling where a read ended
_EMPTY_REQUEST: list[bytes] = []
_NULL_REQUEST: list[bytes] = []


def _canonical_size_tail(argv: list[bytes]) -> bytes:
    """The canonical RESP encoding of a request (to tell whether a read ended on it)."""
    if argv is _NULL_REQUEST:
        return b"*-1\r\n"
    return encode(argv, 2)  # an array of bulk strings: the same bytes as a reply of them


class ClientProtocol(asyncio.Protocol):
    """The network side of one client."""

    def __init__(self, core: Core, tls: bool = False) -> None:
        self.core = core
        self.tls = tls
        self.transport: asyncio.Transport | None = None
        self.ctx: Context | None = None
        self.reader = hiredis.Reader()
        self.fresh = True  # the next byte read starts a new request
        #: (last read, last request in it) when that read may have ended on a boundary
        self.tail: tuple[bytes, list[bytes]] | None = None
        #: the request framing of a request that spans reads (None: at a boundary, fast path)
        self.frame: Framer | None = None
        self.inline_buf = b""
        self.partial_bytes = 0
        #: why reading is paused now (server/flow.py): output backed up, a deferred reply
        self.flow = ReadFlow(self)
        self.closed = False
        self.soft_since = 0
        #: a reply not known yet (WAIT): until it resolves, reading pauses and the requests
        #: already read wait in ``held`` (argv lists; bytes = a protocol error to answer last)
        self.deferred: Deferred | None = None
        self.held: deque[list[bytes] | bytes] = deque()
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
        if self.held and type(self.held[-1]) is bytes:
            return  # a protocol error waits behind a deferred reply: the rest is never read
        out: list[bytes] = []
        self.current_out = out
        self.reading = len(data)
        try:
            self._process(ctx, data, out)
        except hiredis.ProtocolError as exc:
            self._protocol_error(ctx, out, f"ERR Protocol error: {_translate(str(exc))}")
        except ProtocolViolation as exc:
            self._protocol_error(ctx, out, f"ERR Protocol error: {exc}")
        except Exception:  # a bug in the request layer: say so and close, never stay silent
            log.exception("internal error reading from client %s", ctx.addr)
            out.append(encode_error("ERR internal error while reading the request"))
            ctx.close_after_reply = True
        self.current_out = None
        self.reading = 0
        ctx.last_interaction_ms = ctx.now_ms
        self._send(out)

    def _process(self, ctx: Context, data: bytes, out: list[bytes]) -> None:
        if b"*-" in data and self.frame is None and self._is_fresh():
            data = drop_negative_counts(data)  # Redis ignores a count <= 0
        while data:
            if self.inline_buf or (data[0] != 42 and self.frame is None and self._is_fresh()):
                data = self._inline(data, out)  # 42 == '*'
                if not data or ctx.close_after_reply:
                    return
            framer = self.frame
            if (
                framer is not None
                or (data.find(b"*", 1) >= 0 and SUSPICIOUS_COUNT.search(data) is not None)
                or self._header_needs_check(ctx, data)
            ):
                framer = self._framer_for(ctx, data)
            start_tail = self.tail
            start_fresh = self.fresh
            self.tail = None  # what it said is about the boundary this data starts at
            chunk = data
            reader = self.reader
            reader.feed(data)
            got = None
            out_limit = (self._hard_output_limit(ctx) if ctx.flags or ctx.pubsub is not None
                         else self.core.normal_output_hard_limit)
            out_size = 0
            proto = ctx.proto
            while True:
                try:
                    argv = reader.gets()
                except hiredis.ProtocolError:
                    rest = self._inline_after(chunk, got)
                    if rest is None:
                        raise
                    data = rest
                    break
                if argv is False:
                    data = b""
                    break
                if type(argv) is not list:
                    if argv is None:  # '*-1': Redis skips counts <= 0
                        got = _NULL_REQUEST
                        continue
                    raise ProtocolViolation(_type_error(argv))
                if not argv:  # '*0'
                    got = _EMPTY_REQUEST
                    continue
                for arg in argv:
                    if type(arg) is not bytes:
                        raise ProtocolViolation(_element_error(arg))
                got = argv
                if self.deferred is not None:  # behind a deferred reply: run it afterwards
                    self._hold_request(ctx, argv)
                    continue
                reply = dispatch(ctx, argv)
                if reply is not NO_REPLY:
                    if type(reply) is Deferred:
                        if not reply.done:
                            self._park(reply)
                            continue
                        reply = reply.value
                    if ctx.proto != proto:
                        proto = ctx.proto
                    # +OK (SET, the AMEM writes) without a call; anything else via encode
                    encoded = OK_BYTES if reply is OK else encode(reply, proto)
                    out.append(encoded)
                    if out_limit:
                        out_size += len(encoded)
                        if out_size > out_limit and self._over_output_limit(ctx, out, out_size):
                            return
                if ctx.close_after_reply:
                    return
            if data:  # an inline request follows the multibulk ones in the same read
                self.frame = None
                continue
            if framer is not None:
                # framed before feeding: the state is known exactly
                self.fresh = framer.at_boundary()
                self.frame = None if self.fresh else framer
                self.partial_bytes = 0 if self.fresh else self.partial_bytes + len(chunk)
                if not self.fresh:
                    self._check_partial(ctx)
                continue
            self.fresh = False
            if got is not None and not reader.has_data():
                # whether this read ended exactly on a request boundary is decided only if
                # the next read needs to know (see _is_fresh): most reads never ask
                self.tail = (chunk, got)
                self.partial_bytes = 0
                continue
            # this read ends inside a request (a big value, a slow client): from now on
            # its headers are checked before hiredis sees them; the headers in this read
            # passed the quick filter, and framing it now says where it stopped
            self.tail, self.fresh = start_tail, start_fresh
            if self._is_fresh():
                framer = Framer()
                self._scan(ctx, framer, chunk)
                self.frame = framer
            self.tail, self.fresh = None, False
            self.partial_bytes = len(chunk) if got is not None else self.partial_bytes + len(chunk)
            self._check_partial(ctx)

    def _framer_for(self, ctx: Context, data: bytes) -> Framer | None:
        """The framer that checks ``data`` before it is fed, or None for the fast path.

        Reads inside a request are always framed; a read starting at a request boundary
        is framed when the client is not authenticated or its headers look expensive.
        """
        framer = self.frame
        if framer is not None:
            self._scan(ctx, framer, data)
            return framer
        suspicious = SUSPICIOUS_COUNT.search(data) is not None
        if not (suspicious or self._header_needs_check(ctx, data)):
            return None
        if not self._is_fresh():
            if suspicious:  # where requests begin is not known: refuse rather than allocate
                raise ProtocolViolation("invalid multibulk length")
            return None
        framer = Framer()
        self._scan(ctx, framer, data)
        return framer

    def _scan(self, ctx: Context, framer: Framer, data: bytes) -> None:
        position = framer.scan(data, authenticated=ctx.authenticated,
                               max_bulk=self.core.config.proto_max_bulk_len)
        if position is Position.UNTRACKED:
            framer.elements = framer.payload = 0
            framer.line = b""

    def _is_fresh(self) -> bool:
        """Whether the next byte starts a new request (inline detection, header checks)."""
        tail = self.tail
        if tail is not None:
            self.tail = None
            chunk, got = tail
            self.fresh = chunk.endswith(b"\r\n") and chunk.endswith(_canonical_size_tail(got))
        return self.fresh

    def _header_needs_check(self, ctx: Context, data: bytes) -> bool:
        """False for the common short header of an authenticated client: nothing to check.

        A count of up to 6 digits is always allowed; a first bulk length with fewer digits
        than proto-max-bulk-len cannot exceed it (``core.short_header``). Anything else gets
        the full check.
        """
        return not ctx.authenticated or self.core.short_header.match(data) is None

    def _inline_after(self, data: bytes, got: list[bytes] | None) -> bytes | None:
        """After a multibulk request, the rest of the read is an inline request: find it.

        hiredis rejects a line that does not start with a RESP type byte; Redis allows
        inline and multibulk requests to follow each other, so locate the end of the last
        complete request in this read and restart parsing there with a fresh reader.
        """
        if got is None:
            return None
        encoded = _canonical_size_tail(got)
        pos = data.rfind(encoded)
        if pos < 0:
            return None
        rest = data[pos + len(encoded) :]
        if not rest or rest[0] == 42:
            return None
        self.reader = hiredis.Reader()
        self.fresh = True
        return rest

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

    def _over_output_limit(self, ctx: Context, out: list[bytes], size: int) -> bool:
        """Replies of one read passed the hard limit before being written: drop the client
        now rather than build them all (a read of many GETs of a big value)."""
        assert self.transport is not None
        pending = size + self.transport.get_write_buffer_size()
        if pending <= self._hard_output_limit(ctx):
            return False
        out.clear()
        self._drop_over_limit(ctx, pending)
        return True

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

    def _check_partial(self, ctx: Context) -> None:
        """An incomplete request that keeps growing: enforce the buffer limits."""
        limit = self.core.config.client_query_buffer_limit
        if not ctx.authenticated:
            limit = min(limit, UNAUTH_MAX_BULK * UNAUTH_MAX_MULTIBULK + 1024)
        bulk_limit = self.core.config.proto_max_bulk_len + 64 * 1024
        if self.partial_bytes > min(limit, max(bulk_limit, 64 * 1024)):
            log.warning("closing client %s: query buffer over the limit", ctx.addr)
            raise ProtocolViolation("query buffer limit exceeded")

    def _inline(self, data: bytes, out: list[bytes]) -> bytes:
        """Run inline requests at the start of ``data``; return what follows them (RESP)."""
        ctx = self.ctx
        assert ctx is not None
        buf = self.inline_buf + data if self.inline_buf else data
        self.inline_buf = b""
        pos = 0
        while pos < len(buf):
            if buf[pos] == 42 and pos > 0:  # a multibulk request follows the inline ones
                self.fresh = True
                return buf[pos:]
            nl = buf.find(b"\n", pos)
            if nl < 0:
                rest = buf[pos:]
                if len(rest) > MAX_INLINE:
                    raise ProtocolViolation("too big inline request")
                if rest[:1] == b"*":
                    self.fresh = True
                    return rest
                self.inline_buf = rest
                return b""
            if nl - pos > MAX_INLINE:
                raise ProtocolViolation("too big inline request")
            if buf[pos] == 42:
                self.fresh = True
                return buf[pos:]
            line = buf[pos:nl]
            pos = nl + 1
            argv = split_inline(line)
            if not argv:
                continue
            reply = self._run(ctx, argv)
            if reply is not NO_REPLY:
                out.append(encode(reply, ctx.proto))
            if ctx.close_after_reply:
                return b""
        self.fresh = True
        return b""

    # --- deferred replies (WAIT) ---------------------------------------------------------
    def _run(self, ctx: Context, argv: list[bytes]) -> Any:
        """Dispatch one request, or hold it while an earlier reply is deferred (the
        multibulk loop of ``_process`` does the same inline, once per command)."""
        if self.deferred is not None:
            self._hold_request(ctx, argv)
            return NO_REPLY
        reply = dispatch(ctx, argv)
        if type(reply) is Deferred:
            if reply.done:
                return reply.value
            self._park(reply)
            return NO_REPLY
        return reply

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
        """Send the late reply, then run the held requests (which may park again)."""
        self.deferred = None
        ctx = self.ctx
        if ctx is None or self.closed:
            return
        ctx.blocked = False
        ctx.last_interaction_ms = ctx.core.clock.now_ms()
        out: list[bytes] = []
        if deferred.value is not NO_REPLY:
            out.append(encode(deferred.value, ctx.proto))
        self.current_out = out
        held = self.held
        while held and self.deferred is None and not ctx.close_after_reply:
            item = held.popleft()
            if type(item) is bytes:  # the protocol error that came after the parked request
                out.append(item)
                ctx.close_after_reply = True
                break
            reply = self._run(ctx, item)  # type: ignore[arg-type]
            if reply is not NO_REPLY:
                out.append(encode(reply, ctx.proto))
        self.current_out = None
        # the snapshot of the parked command is old: never move the idle clock back to it
        ctx.last_interaction_ms = max(ctx.last_interaction_ms, ctx.now_ms)
        self._send(out)
        if self.deferred is None:
            self.flow.resume(DEFERRED, HELD)

    def _protocol_error(self, ctx: Context, out: list[bytes], message: str) -> None:
        """Answer a malformed request and close, after any deferred reply still owed."""
        if self.deferred is not None:
            self.held.append(encode_error(message))
            return
        out.append(encode_error(message))
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
        qbuf = self.reading or self.partial_bytes + len(self.inline_buf)
        held = (self.turn_out or []) + (self.current_out or [])
        obl = sum(len(chunk) for chunk in held)
        return {"fd": fd, "qbuf": qbuf, "qbuf-free": max(0, 65536 - qbuf), "obl": obl,
                "oll": len(held), "omem": obl + pending}

    def write_reply(self, value: Any) -> None:
        """Send one reply outside a request (used by subsystems such as replication)."""
        if self.ctx is not None:
            self._write_out_of_band(encode(value, self.ctx.proto))


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


def _type_error(value: Any) -> str:
    kind = {int: ":", bytes: "+", str: "+", type(None): "$"}.get(type(value), "?")
    return f"expected '*', got '{kind}'"


def _element_error(value: Any) -> str:
    kind = {int: ":", list: "*", type(None): "$", float: ","}.get(type(value), "?")
    return f"expected '$', got '{kind}'"


def _translate(message: str) -> str:
    """hiredis's words -> Redis's words for the same protocol error."""
    lowered = message.lower()
    if "bulk string length" in lowered or "bad bulk" in lowered:
        return "invalid bulk length"
    if "multi-bulk" in lowered or "multibulk" in lowered or "aggregate" in lowered:
        return "invalid multibulk length"
    if "reply type byte" in lowered:
        start = message.find('"')
        got = message[start + 1 : start + 2] if start >= 0 else "?"
        return f"expected '$', got '{got}'"
    return message.replace("\r", " ").replace("\n", " ")
