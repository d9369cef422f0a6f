"""Flow control of one connection's reading, as a set of reasons to pause it.

A connection stops reading while any reason holds and reads again once the last one is
gone, whatever order they come and go in: its output backs up in the transport
(``OUTPUT``, from asyncio's ``pause_writing``), a reply is not known yet and the requests
behind it wait (``DEFERRED``, WAIT, a threaded RECALL, a blocking pop), or too many
requests wait behind that reply (``HELD``, a ``keep_reading`` wait that reads on).
"""

from __future__ import annotations

import asyncio
from typing import Protocol

OUTPUT = "output"
DEFERRED = "deferred"
HELD = "held"


class Connection(Protocol):
    """What the flow reads of the connection it serves (``ClientProtocol``)."""

    transport: asyncio.Transport | None
    closed: bool


class ReadFlow:
    """The reasons one connection does not read now; the transport follows the set."""

    __slots__ = ("conn", "reasons")

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self.reasons: set[str] = set()

    def __contains__(self, reason: str) -> bool:
        return reason in self.reasons

    def pause(self, reason: str) -> None:
        """Stop reading (if this is the first reason) until ``reason`` is resumed."""
        if not self.reasons:
            conn = self.conn
            if conn.transport is not None and not conn.closed:
                conn.transport.pause_reading()
        self.reasons.add(reason)

    def resume(self, *reasons: str) -> None:
        """``reasons`` no longer hold; read again if no other does."""
        if not self.reasons:
            return
        self.reasons.difference_update(reasons)
        if not self.reasons:
            conn = self.conn
            if conn.transport is not None and not conn.closed:
                conn.transport.resume_reading()
