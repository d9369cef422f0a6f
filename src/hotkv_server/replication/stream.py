"""The replication stream on the wire: RESP commands, one effect record per command.

After ``+FULLRESYNC <replid> <offset>`` and the snapshot, or after ``+CONTINUE <replid>``,
a primary sends its replicas nothing but RESP multibulk commands in canonical form
(``*<n>\\r\\n`` then ``$<len>\\r\\n<bytes>\\r\\n`` per argument)::

    HOTKV.EFFECT <msgpack record>    one applied write (an effect, or ["tx", [...]])
    PING                             keep-alive every 10 s (replicas time out after 60 s)
    REPLCONF GETACK *                "send REPLCONF ACK now" (WAIT asked for it)

As in Redis, every byte of this stream counts in the replication offset, a replica
forwards the exact bytes to its own replicas (so chained replicas share the primary's
replication id and offsets), and the backlog keeps the last ``repl-backlog-size`` bytes of
it for partial resynchronisation.

The snapshot of a full sync is ``$<len>\\r\\n`` followed by ``len`` bytes (no trailing CRLF),
as Redis sends an RDB: ``msgpack(Database.snapshot())``.
"""

from __future__ import annotations

EFFECT = b"HOTKV.EFFECT"
_EFFECT_HEAD = b"*2\r\n$%d\r\n%b\r\n" % (len(EFFECT), EFFECT)


class StreamError(Exception):
    """Bytes from the primary that are not a canonical RESP command."""


def encode_command(*args: bytes) -> bytes:
    """A command in canonical form: an array of bulk strings, as RESP encodes it."""
    return b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%b\r\n" % (len(a), a) for a in args)


def effect_command(payload: bytes) -> bytes:
    """The stream bytes of one packed unit of effect records (on every write: kept cheap).

    The payload is msgpack as the persistence files store records (the effect log packs it).
    """
    return _EFFECT_HEAD + b"$%d\r\n" % len(payload) + payload + b"\r\n"


PING = encode_command(b"PING")
GETACK = encode_command(b"REPLCONF", b"GETACK", b"*")


class CommandParser:
    """Cuts canonical RESP commands out of the bytes read from the primary.

    Unlike hiredis it reports how many bytes each command took, which is what the
    replication offset counts and what is forwarded to sub-replicas.
    """

    def __init__(self) -> None:
        self.buf = bytearray()
        self.pos = 0

    def feed(self, data: bytes) -> None:
        if self.pos and self.pos >= len(self.buf) // 2:
            del self.buf[: self.pos]
            self.pos = 0
        self.buf += data

    def pending(self) -> int:
        """Bytes read but not yet part of a whole command."""
        return len(self.buf) - self.pos

    def take_rest(self) -> bytes:
        """Everything not consumed yet (the bytes after a snapshot, say)."""
        rest = bytes(self.buf[self.pos :])
        self.buf.clear()
        self.pos = 0
        return rest

    def next(self) -> tuple[list[bytes], bytes] | None:
        """The next whole command and its raw bytes, or None until more bytes arrive."""
        buf = self.buf
        start = pos = self.pos
        end = len(buf)
        head = _header(buf, pos, end, b"*", "at the start of a command", "command")
        if head is None:
            return None
        count, pos = head
        argv: list[bytes] = []
        for _ in range(count):
            head = _header(buf, pos, end, b"$", "in a command", "bulk")
            if head is None:
                return None
            size, first = head
            last = first + size
            if last + 2 > end:
                return None
            argv.append(bytes(buf[first:last]))
            pos = last + 2
        self.pos = pos
        return argv, bytes(buf[start:pos])


def _header(buf: bytearray, pos: int, end: int, marker: bytes, where: str,
            what: str) -> tuple[int, int] | None:
    """The length after ``marker`` at ``pos`` and where the line after it starts, or None
    until the whole line is there."""
    if pos >= end:
        return None
    if buf[pos] != marker[0]:
        raise StreamError(f"expected {marker.decode()!r} {where}, got {bytes(buf[pos:pos + 1])!r}")
    nl = buf.find(b"\r\n", pos)
    if nl < 0:
        if end - pos > 32:
            raise StreamError(f"{what} header too long")
        return None
    return _number(buf, pos + 1, nl), nl + 2


def _number(buf: bytearray, start: int, end: int) -> int:
    try:
        value = int(buf[start:end])
    except ValueError:
        raise StreamError(f"bad length {bytes(buf[start:end])!r}") from None
    if value < 0:
        raise StreamError(f"negative length {value}")
    return value
