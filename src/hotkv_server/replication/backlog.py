"""The replication backlog: the last ``repl-backlog-size`` bytes of the stream.

Offsets follow Redis: ``master_repl_offset`` is the number of stream bytes produced (or,
on a replica, processed) under the current history; the backlog holds the bytes from
``first`` (``repl_backlog_first_byte_offset``, 1-based) to ``master_repl_offset``. A
replica that asks ``PSYNC <replid> <n>`` with ``first <= n <= master_repl_offset + 1`` can
continue from byte ``n`` without a snapshot.
"""

from __future__ import annotations


class Backlog:
    """A byte window over the stream; appending past ``size`` drops the oldest bytes."""

    def __init__(self, size: int, next_offset: int) -> None:
        """``next_offset`` is the offset the next appended byte will have (offset + 1)."""
        self.size = max(size, 16 * 1024)  # Redis's minimum backlog
        self.buf = bytearray()
        self.first = next_offset

    @property
    def histlen(self) -> int:
        return len(self.buf)

    @property
    def end(self) -> int:
        """The offset the next byte will have."""
        return self.first + len(self.buf)

    def append(self, data: bytes) -> None:
        buf = self.buf
        buf += data
        excess = len(buf) - self.size
        if excess > 0:
            # deleting a bytearray's head only moves its start (no copy) in CPython
            del buf[:excess]
            self.first += excess

    def covers(self, offset: int) -> bool:
        """Whether the stream from byte ``offset`` on is still here."""
        return self.first <= offset <= self.end

    def read_from(self, offset: int) -> bytes:
        """The bytes from ``offset`` to the end (``covers(offset)`` must hold)."""
        return bytes(self.buf[offset - self.first :])

    def resize(self, size: int) -> None:
        """``CONFIG SET repl-backlog-size``: keep the newest bytes that still fit."""
        self.size = max(size, 16 * 1024)
        excess = len(self.buf) - self.size
        if excess > 0:
            del self.buf[:excess]
            self.first += excess
