"""Which history a server's data is a point of (PSYNC2): the replication ids, the offset and
the backlog of the stream's last bytes.

``replid`` names the current history and ``offset`` is the number of stream bytes produced
(a primary) or processed (a replica). When a replica is promoted (``REPLICAOF NO ONE``) or
its primary's id changes, the old id becomes ``replid2``, valid up to ``second_offset``,
so the other replicas of the old history can continue from this server with a partial
resync instead of a full copy. Plain state: no I/O, no clock.
"""

from __future__ import annotations

import os
from collections.abc import Callable

from hotkv_server.engine.watched import Watched
from hotkv_server.replication.backlog import Backlog

NO_REPLID2 = "0" * 40


def new_replid() -> str:
    return os.urandom(20).hex()


class History:
    """The ids, offset and backlog of one server (see the module docstring)."""

    def __init__(self, backlog_changed: Callable[[bool], None]) -> None:
        #: told whether a backlog exists whenever it comes or goes (the stream's effect sink
        #: is listed only while it does: as Redis, no history is kept before a replica comes)
        self._backlog_changed = backlog_changed
        self.replid = new_replid()
        self.replid2 = NO_REPLID2
        self.second_offset = -1
        #: master_repl_offset: stream bytes produced (primary) or processed (replica)
        self.offset = 0
        self._backlog: Backlog | None = None
        #: whether our data is a known point of ``replid``'s history (else PSYNC ? -1)
        self.known = False
        #: our copy can't be trusted: the next sync must be a full one
        self.diverged = False

    #: the replication backlog, None until the first replica comes (as in Redis)
    backlog: Watched[Backlog | None] = Watched("_backlog", "_backlog_set")

    def _backlog_set(self, backlog: Backlog | None) -> None:
        self._backlog_changed(backlog is not None)

    def ensure_backlog(self, size: int) -> Backlog:
        if self._backlog is None:
            self.backlog = Backlog(size, self.offset + 1)
        assert self._backlog is not None
        return self._backlog

    def restored(self, replid: str, offset: int, backlog_size: int) -> None:
        """The id and offset saved at the last shutdown: a replica (re)started at exactly
        this offset may continue without a snapshot."""
        self.replid, self.offset = replid, offset
        self.known = True
        self.backlog = Backlog(backlog_size, offset + 1)

    def append(self, data: bytes) -> None:
        """Stream bytes produced or processed: the offset moves, the backlog keeps them."""
        self.offset += len(data)
        if self._backlog is not None:
            self._backlog.append(data)

    def branch(self, new_id: str | None = None) -> None:
        """A new history that continues this one: the current id stays valid (as replid2)
        up to here. ``new_id``: the primary's new id; None: a fresh one (a promotion)."""
        self.replid2 = self.replid
        self.second_offset = self.offset + 1
        self.replid = new_id or new_replid()

    def restart(self) -> None:
        """Applied effects could not be encoded: no replica can follow this history."""
        self.backlog = None
        self.replid = new_replid()

    def adopt(self, replid: str, offset: int, backlog_size: int) -> None:
        """A full sync: our data is now ``offset`` of the primary's history ``replid``."""
        self.diverged = False
        self.known = True
        self.replid = replid
        self.replid2 = NO_REPLID2
        self.second_offset = -1
        self.offset = offset
        self.backlog = Backlog(backlog_size, offset + 1)

    def can_continue(self, replid: str, offset: int) -> bool:
        """Redis's rule: same history (or the previous one, up to where it ended), in the backlog."""
        if replid != self.replid and (replid != self.replid2 or offset > self.second_offset):
            return False
        return self._backlog is not None and self._backlog.covers(offset)

    def psync_request(self) -> tuple[str, int]:
        """What a replica asks for: our history and the next byte we need, or ``? -1``."""
        if self.diverged or not self.known:
            return "?", -1
        return self.replid, self.offset + 1
