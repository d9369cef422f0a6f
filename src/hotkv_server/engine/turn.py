"""The event-loop turn: replies that acknowledge writes wait until the AOF has them.

All requests read in one turn of the event loop run first; their writes reach the AOF
buffer (a *durable* sink). A sink that must be on disk before its writes are acknowledged
raises ``barrier``; from then on every connection holds its replies (``hold``) instead of
writing them. At the end of the turn (``end``, scheduled with ``call_soon`` by the first
holder) the durable work runs once for everybody (the AOF ``write(2)``, and ``fdatasync``
under ``appendfsync always``), then the held replies leave, then what waited for them
(the replicas' copy of the turn's writes, ``then``). Redis does the same in beforeSleep.

If the durable work fails under ``always`` it raises :class:`RepliesWithheld`: the held
replies would acknowledge writes that are not on disk, so their connections are closed
without them.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Protocol

# (defined in the pure engine/errors.py: this module is compiled, and a native exception
# class could not be a base of persistence's AofUnavailable(RepliesWithheld, OSError))
from hotkv_server.engine.errors import RepliesWithheld

__all__ = ["RepliesWithheld", "ReplyHolder", "Turn"]

log = logging.getLogger("hotkv")


class ReplyHolder(Protocol):
    """A connection holding replies until the end of the turn."""

    def release(self) -> None:
        """The writes are durable: send the held replies."""

    def withhold(self, exc: Exception) -> None:
        """The writes are not durable: drop the held replies and close."""


class Turn:
    """The reply barrier of the current event-loop turn (one per Core, reused)."""

    def __init__(self) -> None:
        #: set by a durable sink that took records this turn: replies wait for ``end``
        self.barrier = False
        #: connections holding replies until ``end``
        self.waiting: list[ReplyHolder] = []
        #: the durable work run once at ``end`` before any reply leaves (the AOF write);
        #: may raise RepliesWithheld
        self.durable: list[Callable[[], None]] = []
        #: run at ``end`` after the replies (``then``); emptied each turn
        self.after: list[Callable[[], None]] = []

    def hold(self, holder: ReplyHolder) -> None:
        """``holder`` keeps its replies until ``end``; the first one schedules it."""
        self.waiting.append(holder)
        if len(self.waiting) == 1:
            # call_soon runs after every read of this turn has been processed
            asyncio.get_running_loop().call_soon(self.end)

    def then(self, callback: Callable[[], None]) -> None:
        """Run ``callback`` once this turn's held replies have left (now if none wait)."""
        if self.barrier and self.waiting:
            self.after.append(callback)
        else:
            callback()

    def make_durable(self) -> None:
        """Run the durable work now (``end`` does it first); raises RepliesWithheld."""
        self.barrier = False
        for work in self.durable:
            work()

    def end(self) -> None:
        """The durable work once, then every held reply, then what waited for them."""
        waiting, self.waiting = self.waiting, []
        self.barrier = False
        try:
            for work in self.durable:  # (make_durable, inline: this runs every turn)
                work()
        except RepliesWithheld as exc:
            for holder in waiting:
                holder.withhold(exc)
        else:
            for holder in waiting:
                holder.release()
        after, self.after = self.after, []
        for callback in after:
            callback()
