"""One connection's request reader: bytes in, argument lists (argv) out.

A client sends multibulk requests (``*2\\r\\n$3\\r\\nGET\\r\\n$1\\r\\nk\\r\\n``, parsed by
``hiredis.Reader``) or inline ones (a line of words, as telnet and redis-cli's inline mode
send, split by ``engine.words.split_args``), mixed freely and cut anywhere between reads.
``RequestReader.feed(data, client)`` gives the requests ``data`` completes, in order; a
malformed request ends them with a :class:`ProtocolError` value (Redis 7's words), after
which the reader reads nothing more. The limits are Redis's: ``proto-max-bulk-len``,
``client-query-buffer-limit``, the smaller ones of a client that has not authenticated,
and hotkv's cap on elements (``server/framing.py`` checks a request's header lines before
hiredis sees them whenever that matters: a request that spans reads, a header that looks
expensive, a client not authenticated).
"""

from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING, Any, Protocol, final

import hiredis

from hotkv_server.engine.words import UnbalancedQuotes, split_args
from hotkv_server.server.framing import (
    SUSPICIOUS_COUNT,
    UNAUTH_MAX_BULK,
    UNAUTH_MAX_MULTIBULK,
    Framer,
    Position,
    ProtocolViolation,
    drop_negative_counts,
)
from hotkv_server.server.resp import encode

if TYPE_CHECKING:
    from hotkv_server.engine.core import Core

log = logging.getLogger("hotkv")

MAX_INLINE = 64 * 1024


@final
class ProtocolError:
    """A malformed request, as the reader reports it: ``message`` is what follows
    ``ERR Protocol error: `` in the reply (``invalid multibulk length``)."""

    __slots__ = ("message",)

    def __init__(self, message: str) -> None:
        self.message = message

    @property
    def reply(self) -> str:
        return f"ERR Protocol error: {self.message}"

    def __repr__(self) -> str:
        return f"ProtocolError({self.message!r})"


#: what ``requests`` gives: one request's words, or the protocol error that ends them
Request = list[bytes] | ProtocolError


class Client(Protocol):
    """What the reader reads of the client it serves (``engine.core.Context``)."""

    addr: str
    authenticated: bool


#: stand-ins for the requests '*0' and '*-1' when telling where a read ended
_EMPTY_REQUEST: list[bytes] = []
_NULL_REQUEST: list[bytes] = []


def _canonical_size_tail(argv: list[bytes]) -> bytes:
    """The canonical RESP encoding of a request (to tell whether a read ended on it)."""
    if argv is _NULL_REQUEST:
        return b"*-1\r\n"
    return encode(argv, 2)  # an array of bulk strings: the same bytes as a reply of them


class RequestReader:
    """The request stream of one connection, read by read.

    The fast path feeds a read straight to hiredis: most reads are whole, ordinary
    requests. Whether a read ended exactly on a request boundary (where an inline request
    may start, where headers may be checked) is decided lazily, only when the next read
    needs to know. A request that spans reads is followed by a ``Framer`` from then on.
    """

    __slots__ = ("broken", "core", "frame", "fresh", "inline_buf", "parser", "partial_bytes",
                 "short", "short_of", "tail", "unread")

    def __init__(self, core: Core) -> None:
        self.core = core
        self.parser = hiredis.Reader()
        self.fresh = True  # the next byte read starts a new request
        #: (last read, last request in it) when that read may have ended on a boundary
        self.tail: tuple[bytes, list[bytes]] | None = None
        #: the request framing of a request that spans reads (None: at a boundary, fast path)
        self.frame: Framer | None = None
        self.inline_buf = b""
        #: bytes of the incomplete request read so far (CLIENT LIST's qbuf, the limits)
        self.partial_bytes = 0
        #: a protocol error was read: nothing after it ever is
        self.broken = False
        #: bytes read and left for the next ``feed``: multibulk requests after inline ones
        #: of a client not authenticated (an inline AUTH changes their limits)
        self.unread = b""
        #: the header of the last read that needed no check, and the pattern that said so
        #: (``_header_needs_check``)
        self.short = b""
        self.short_of: re.Pattern[bytes] | None = None

    @property
    def pending(self) -> int:
        """Bytes read and not yet part of a whole request."""
        return self.partial_bytes + len(self.inline_buf)

    def feed(self, data: bytes, client: Client) -> list[Request]:
        """The requests that ``data`` completes, in order; a malformed one ends them as a
        ProtocolError (the whole requests before it are still given), and the reader
        gives nothing after it.

        The limits are those ``client`` has as the read arrives (``authenticated``), as
        hiredis parses a whole read at once. Only a client not authenticated may change
        that within a read, by an inline AUTH: the multibulk part after inline requests
        is then left ``unread`` until they have run (feed again, with ``b""``)."""
        found: list[Request] = []
        if self.broken:
            return found
        if self.unread:
            data, self.unread = self.unread + data, b""
        try:
            # where the first '*' past the first byte is (another request, or one inside
            # a value): most reads, of one request, have none, and then a '*-' can only
            # start them and no count past the first can look suspicious. (find, never
            # bytes' `in`: that first tries its operand as an integer, raising and
            # clearing a TypeError on every call)
            checked, star = data, data.find(b"*", 1)
            if ((star > 0 and data.find(b"*-", star) >= 0)
                    or (len(data) > 1 and data[0] == 42 and data[1] == 45)) and (  # '*-'
                    self.frame is None and self._is_fresh()):
                data = drop_negative_counts(data)  # Redis ignores a count <= 0
            while data:
                if self.inline_buf or (data[0] != 42 and self.frame is None  # 42 == '*'
                                       and (self.fresh if self.tail is None else self._is_fresh())):
                    data = self._inline(data, found)
                    if not data:
                        break
                    if found and not client.authenticated:
                        self.unread = data  # the limits may change once these have run
                        break
                framer = self.frame
                late: ProtocolViolation | None = None
                inline = b""
                if data is not checked:  # (the same object: the same bytes)
                    checked, star = data, data.find(b"*", 1)
                if (
                    framer is not None
                    or (star >= 0 and SUSPICIOUS_COUNT.search(data) is not None)
                    or not client.authenticated
                    or (not (data.startswith(self.short) and self.short_of is self.core.short_header)
                        and self._header_needs_check(data))
                ):
                    try:
                        framer, inline_at = self._framer_for(client, data)
                    except ProtocolViolation as exc:
                        if exc.complete <= 0:
                            raise
                        # the whole requests before the bad one are read (and answered)
                        # first, then the error: hiredis gets only those
                        late, data, framer = exc, data[:exc.complete], None
                    else:
                        if inline_at > 0:  # hiredis gets the multibulk requests before it
                            data, inline = data[:inline_at], data[inline_at:]
                start_tail = self.tail
                start_fresh = self.fresh
                self.tail = None  # what it said is about the boundary this data starts at
                chunk = data
                parser = self.parser
                parser.feed(data)
                append = found.append
                got = None
                while True:
                    try:
                        argv = parser.gets()
                    except hiredis.ProtocolError:
                        rest = self._inline_after(chunk, got)
                        if rest is None:
                            raise
                        self.frame = None  # an inline request follows the multibulk ones
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
                    append(argv)
                if late is not None:
                    raise late
                if data:  # found by _inline_after: an inline request follows
                    continue
                if inline:  # an inline request follows the multibulk ones in the same read
                    self.frame = None
                    self.fresh = True
                    self.partial_bytes = 0
                    data = inline
                    continue
                if framer is not None:
                    # framed before feeding: the state is known exactly
                    self.fresh = framer.at_boundary()
                    self.frame = None if self.fresh else framer
                    self.partial_bytes = 0 if self.fresh else self.partial_bytes + len(chunk)
                    if not self.fresh:
                        self._check_partial(client)
                    break
                self.fresh = False
                if got is not None and not parser.has_data():
                    # whether this read ended exactly on a request boundary is decided
                    # only if the next read needs to know (see _is_fresh): most never ask
                    self.tail = (chunk, got)
                    self.partial_bytes = 0
                    break
                # this read ends inside a request (a big value, a slow client): from now
                # on its headers are checked before hiredis sees them; the headers in this
                # read passed the quick filter, and framing it now says where it stopped
                self.tail, self.fresh = start_tail, start_fresh
                if self._is_fresh():
                    framer = Framer()
                    self._scan(client, framer, chunk)  # (no inline part: hiredis took it all)
                    self.frame = framer
                self.tail, self.fresh = None, False
                self.partial_bytes = (len(chunk) if got is not None
                                      else self.partial_bytes + len(chunk))
                self._check_partial(client)
                break
        except hiredis.ProtocolError as error:  # (a name of its own: mypyc types exc once)
            self.broken = True
            found.append(ProtocolError(_translate(str(error))))
        except ProtocolViolation as exc:
            self.broken = True
            found.append(ProtocolError(str(exc)))
        return found

    def _framer_for(self, client: Client, data: bytes) -> tuple[Framer | None, int]:
        """The framer that checks ``data`` before it is fed, or None for the fast path, and
        where in ``data`` an inline request follows the multibulk ones (0: none).

        Reads inside a request are always framed; a read starting at a request boundary
        is framed when the client is not authenticated or its headers look expensive.
        """
        framer = self.frame
        if framer is not None:
            return framer, self._scan(client, framer, data)
        suspicious = SUSPICIOUS_COUNT.search(data) is not None
        if not (suspicious or not client.authenticated or self._header_needs_check(data)):
            return None, 0
        if not self._is_fresh():
            if suspicious:  # where requests begin is not known: refuse rather than allocate
                raise ProtocolViolation("invalid multibulk length")
            return None, 0
        framer = Framer()
        return framer, self._scan(client, framer, data)

    def _scan(self, client: Client, framer: Framer, data: bytes) -> int:
        """Check ``data``'s header lines; where an inline request follows in it (0: none)."""
        position = framer.scan(data, authenticated=client.authenticated,
                               max_bulk=self.core.config.proto_max_bulk_len)
        if position is Position.UNTRACKED:
            framer.elements = framer.payload = 0
            framer.line = b""
            return framer.boundary
        return 0

    def _is_fresh(self) -> bool:
        """Whether the next byte starts a new request (inline detection, header checks)."""
        tail = self.tail
        if tail is not None:
            self.tail = None
            chunk, got = tail
            self.fresh = chunk.endswith(b"\r\n") and chunk.endswith(_canonical_size_tail(got))
        return self.fresh

    def _header_needs_check(self, data: bytes) -> bool:
        """False for the common short header (of an authenticated client): nothing to check.

        A count of up to 6 digits is always allowed; a first bulk length with fewer digits
        than proto-max-bulk-len cannot exceed it (``core.short_header``). Anything else gets
        the full check. A header that passed (its count and first bulk length lines) is
        kept: a read starting with the very same bytes passes too, without the pattern
        (a client sends the same command again and again).
        """
        pattern = self.core.short_header
        found = pattern.match(data)
        if found is None:
            return True
        head = found.group()
        if head.count(b"\r\n") == 2:  # the count and the bulk length line, not the end of data
            self.short, self.short_of = head, pattern
        return False

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
        self.parser = hiredis.Reader()
        self.fresh = True
        return rest

    def _check_partial(self, client: Client) -> None:
        """An incomplete request that keeps growing: enforce the buffer limits."""
        limit = self.core.config.client_query_buffer_limit
        if not client.authenticated:
            limit = min(limit, UNAUTH_MAX_BULK * UNAUTH_MAX_MULTIBULK + 1024)
        bulk_limit = self.core.config.proto_max_bulk_len + 64 * 1024
        if self.partial_bytes > min(limit, max(bulk_limit, 64 * 1024)):
            log.warning("closing client %s: query buffer over the limit", client.addr)
            raise ProtocolViolation("query buffer limit exceeded")

    def _inline(self, data: bytes, found: list[Request]) -> bytes:
        """Add the inline requests at the start of ``data`` to ``found``; return what
        follows them (a multibulk request)."""
        buf = self.inline_buf + data if self.inline_buf else data
        self.inline_buf = b""
        if buf.find(b"\n") == len(buf) - 1 and len(buf) <= MAX_INLINE:
            # one whole line, the common case (telnet, redis-cli's inline mode): its CR LF are
            # blanks to split_args, so the line is split as it is
            argv = _words(buf)
            if argv:
                found.append(argv)
            self.fresh = True
            return b""
        if buf[-1] == 10 and len(buf) <= MAX_INLINE and buf.find(b"\n*") < 0:
            # whole lines, none too long, no multibulk request after them: the common case
            # (buf never starts with '*' here), one split
            for line in buf.split(b"\n"):  # (the last one is empty: no words)
                argv = _words(line)
                if argv:
                    found.append(argv)
            self.fresh = True
            return b""
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
            argv = _words(line)
            if argv:
                found.append(argv)
        self.fresh = True
        return b""


def _words(line: bytes) -> list[bytes]:
    """An inline request's words (its CR LF are blanks); split_args's own fast path
    without the call when there are no quotes."""
    if line.find(b'"') < 0 and line.find(b"'") < 0:  # (find: see RequestReader.feed)
        return line.split()
    try:
        return split_args(line)
    except UnbalancedQuotes:
        raise ProtocolViolation("unbalanced quotes in request") from None


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
