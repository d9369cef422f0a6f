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
    """Malformed request: answered ``-ERR Protocol error: ...`` and the connection closes."""


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

    __slots__ = ("elements", "line", "payload")

    def __init__(self) -> None:
        self.elements = 0
        self.payload = 0
        self.line = b""

    def at_boundary(self) -> bool:
        return not self.elements and not self.payload and not self.line

    def scan(self, data: bytes, *, authenticated: bool, max_bulk: int) -> Position:
        """Walk ``data`` from the current state; raise ProtocolViolation at a bad header."""
        if self.line:
            data = self.line + data
            self.line = b""
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
