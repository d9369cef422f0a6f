"""WAIT's clients: each resolved once enough replicas acknowledged its offset, or at its timeout.

The primary side (``replication.manager``) adds a waiter, asks the replicas for an ACK and
calls ``check`` after every ``REPLCONF ACK``; the answer is the ``Deferred`` the WAIT
handler returned, resolved on a later loop iteration (never inside another client's
command).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from hotkv_server.engine.deferred import Deferred
from hotkv_server.replication.peers import Peer, count_acked


@dataclass
class Waiter:
    """A client in ``WAIT``: resolved once ``numreplicas`` acknowledged ``target``."""

    client_id: int
    deferred: Deferred
    target: int
    numreplicas: int
    timer: asyncio.TimerHandle | None = None


class Waits:
    """The clients in WAIT on one server."""

    def __init__(self, peers: dict[int, Peer]) -> None:
        self.peers = peers
        self.waiters: list[Waiter] = []
        self.loop: asyncio.AbstractEventLoop | None = None

    def __bool__(self) -> bool:
        return bool(self.waiters)

    def add(self, client_id: int, target: int, numreplicas: int, timeout_ms: int) -> Deferred:
        waiter = Waiter(client_id, Deferred(idle=True), target, numreplicas)
        loop = self.loop or asyncio.get_running_loop()
        if timeout_ms > 0:
            waiter.timer = loop.call_later(timeout_ms / 1000, self._timed_out, waiter)
        self.waiters.append(waiter)
        return waiter.deferred

    def check(self) -> None:
        """After an ACK: resolve every waiter whose replicas are now enough."""
        for waiter in list(self.waiters):
            count = count_acked(self.peers, waiter.target)
            if count >= waiter.numreplicas:
                self._finish(waiter, count)

    def finish_all(self, reply: Any = None) -> None:
        """Resolve every waiter: with ``reply``, or (None) with its current count."""
        for waiter in list(self.waiters):
            self._finish(waiter, count_acked(self.peers, waiter.target) if reply is None else reply)

    def client_gone(self, client_id: int) -> None:
        for waiter in [w for w in self.waiters if w.client_id == client_id]:
            self._forget(waiter)

    def _timed_out(self, waiter: Waiter) -> None:
        waiter.timer = None
        if waiter in self.waiters:
            self._finish(waiter, count_acked(self.peers, waiter.target))

    def _finish(self, waiter: Waiter, value: Any) -> None:
        self._forget(waiter)
        if self.loop is not None:
            # not from inside the REPLCONF ACK handler: the waiting client then runs its
            # held requests, which must not nest inside another client's command
            self.loop.call_soon(waiter.deferred.resolve, value)
        else:
            waiter.deferred.resolve(value)

    def _forget(self, waiter: Waiter) -> None:
        if waiter in self.waiters:
            self.waiters.remove(waiter)
        if waiter.timer is not None:
            waiter.timer.cancel()
            waiter.timer = None
