"""Request framing across reads: every header line is checked before hiredis sees it.

hiredis builds a request's argument list as soon as it reads the count line, sized by
that count; a count of two billion costs gigabytes before a single element arrives. The
connection therefore keeps a small ``Framer`` for any request that spans reads (and for
reads that look suspicious), and checks each count and bulk-length line as Redis does
(``invalid multibulk length``, ``unauthenticated bulk length`` ...) *before* feeding the
bytes that complete it. Reads made only of whole, ordinary requests never get here.
"""

from __future__ import annotations

import re
from enum import Enum

#: a count line of 7 or more digits somewhere in a read: the only counts that cost memory
SUSPICIOUS_COUNT = re.compile(rb"\*[0-9]{7}")


MAX_LINE = 32
INT_MAX = 2**31 - 1
#: Redis 7 accepts counts up to INT_MAX; hotkv refuses more than this many elements
MAX_MULTIBULK = 1024 * 1024
UNAUTH_MAX_MULTIBULK = 10
UNAUTH_MAX_BULK = 16384


class ProtocolViolation(Exception):
    """Malformed request: answered ``-ERR Protocol error: ...`` and the connection closes.

    ``complete``: how many bytes of the data being scanned hold whole requests before the
    malformed one (they are still answered first, as Redis answers them)."""

    def __init__(self, message: str, complete: int = 0) -> None:
        super().__init__(message)
        self.complete = complete


class Position(Enum):
    BOUNDARY = "boundary"  # the bytes so far end exactly where a request ends
    INSIDE = "inside"  # inside a request (a header line, the elements, a payload)
    UNTRACKED = "untracked"  # an inline request follows: framing gives up until a boundary


def printable(byte: int) -> str:
    """A byte to name in an error line: CR, LF and other controls become a space."""
    return chr(byte) if 32 <= byte < 127 else " "


class Framer:
    """Where the stream stands: elements left in the current request, payload bytes left
    (with their CRLF), and the start of a header line whose end has not arrived yet."""

    __slots__ = ("boundary", "elements", "line", "payload")

    def __init__(self) -> None:
        self.elements = 0
        self.payload = 0
        self.line = b""
        #: where the request being read started in the data scanned (after a scan that
        #: ended UNTRACKED: where the inline request starts)
        self.boundary = 0

    def at_boundary(self) -> bool:
        return not self.elements and not self.payload and not self.line

    def scan(self, data: bytes, *, authenticated: bool, max_bulk: int) -> Position:
        """Walk ``data`` from the current state; raise ProtocolViolation at a bad header
        (its ``complete``: where the last whole request before it ended in ``data``)."""
        prefix = len(self.line)
        if prefix:
            data = self.line + data
            self.line = b""
        self.boundary = prefix
        try:
            position = self._walk(data, authenticated, max_bulk)
        except ProtocolViolation as exc:
            exc.complete = max(self.boundary - prefix, 0)
            raise
        self.boundary -= prefix  # UNTRACKED: where in ``data`` the inline request starts
        return position

    def _walk(self, data: bytes, authenticated: bool, max_bulk: int) -> Position:
        pos = 0
        n = len(data)
        while True:
            if self.payload:
                take = min(self.payload, n - pos)
                pos += take
                self.payload -= take
                if self.payload:
                    return Position.INSIDE
            if pos >= n:
                return Position.INSIDE if self.elements else Position.BOUNDARY
            end = data.find(b"\r\n", pos, pos + MAX_LINE)
            if self.elements == 0:
                self.boundary = pos  # a request starts here: the ones before are whole
                if data[pos] != 42:  # '*': an inline request
                    return Position.UNTRACKED
                if end < 0:
                    self._keep_line(data, pos, "too big mbulk count string")
                    return Position.INSIDE
                count = _number(data[pos + 1 : end], "invalid multibulk length")
                if count > INT_MAX:
                    raise ProtocolViolation("invalid multibulk length")
                if not authenticated and count > UNAUTH_MAX_MULTIBULK:
                    raise ProtocolViolation("unauthenticated multibulk length")
                if count > MAX_MULTIBULK:
                    raise ProtocolViolation("invalid multibulk length")
                self.elements = max(count, 0)
                pos = end + 2
                continue
            if data[pos] != 36:  # '$'
                raise ProtocolViolation(f"expected '$', got '{printable(data[pos])}'")
            if end < 0:
                self._keep_line(data, pos, "too big bulk count string")
                return Position.INSIDE
            size = _number(data[pos + 1 : end], "invalid bulk length")
            if size < 0 or size > max_bulk:
                raise ProtocolViolation("invalid bulk length")
            if not authenticated and size > UNAUTH_MAX_BULK:
                raise ProtocolViolation("unauthenticated bulk length")
            self.elements -= 1
            self.payload = size + 2
            pos = end + 2

    def _keep_line(self, data: bytes, pos: int, too_long: str) -> None:
        if len(data) - pos >= MAX_LINE:
            raise ProtocolViolation(too_long)
        self.line = data[pos:]


def _number(raw: bytes, error: str) -> int:
    try:
        return int(raw)
    except ValueError:
        raise ProtocolViolation(error) from None


def drop_negative_counts(data: bytes) -> bytes:
    """Remove the ``*-N`` request headers of a read that starts at a request boundary.

    Redis skips a request whose count is <= 0 (``*-10\\r\\n`` is no error); hiredis refuses
    counts below -1, so they are cut out here before it sees them. The walk follows whole
    requests (bulk lengths tell where each ends) and stops at anything else (an inline
    request, an incomplete request): what follows is passed on unchanged.
    """
    kept: list[bytes] = []
    start = pos = 0
    n = len(data)
    while pos < n and data[pos] == 42:  # '*'
        end = data.find(b"\r\n", pos, pos + MAX_LINE)
        if end < 0:
            break
        try:
            count = int(data[pos + 1 : end])
        except ValueError:
            break
        if count < 0:
            kept.append(data[start:pos])
            pos = start = end + 2
            continue
        pos = end + 2
        for _ in range(count):
            end = data.find(b"\r\n", pos, pos + MAX_LINE)
            if end < 0 or data[pos] != 36:  # incomplete or malformed: leave it to hiredis
                pos = n
                break
            try:
                size = int(data[pos + 1 : end])
            except ValueError:
                pos = n
                break
            pos = end + 2 + size + 2
    if not kept:
        return data
    kept.append(data[start:])
    return b"".join(kept)
