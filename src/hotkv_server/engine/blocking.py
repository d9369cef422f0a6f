"""Clients blocked on keys (BLPOP BRPOP BLMOVE BLMPOP BZPOPMIN BZPOPMAX BZMPOP), as Redis 7.0.

A blocking command that finds nothing to pop returns ``Blocking.block(...)``: a
``Deferred`` reply (the mechanism WAIT uses: the connection sends nothing and runs none of
the client's later commands until it resolves, and the other clients go on). The waiter is
queued on each of its keys, first come first served.

The dispatch point tells this registry which keys a write touched (``signal``), for every
write, queued in MULTI or not; after the top-level command (a whole EXEC, a whole script)
``serve_ready`` walks the keys that were signalled, in the order they were, and offers each
key to its waiters in the order they blocked. A waiter's ``serve(key)`` runs the
non-blocking form (LPOP, LMOVE, ZPOPMIN ...) through ``ctx.emit`` as an ordinary write, so
the AOF and the replicas see the pop and never the blocking command; a push it makes (BLMOVE
into its destination) signals that key in turn, so a chain of BLMOVEs drains in one go.
The late reply is handed to the blocked connection on the next loop iteration, so its held
requests never run nested inside another client's command.

Timeouts are loop timers (0 = forever). CLIENT UNBLOCK ends a wait with the timeout reply or
an ``UNBLOCKED`` error; a closed connection just leaves the queues.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any

from hotkv_server.engine.deferred import Deferred
from hotkv_server.engine.errors import CommandError
from hotkv_server.engine.replies import ErrorReply

#: the registry sits below the core (which owns it) and the contexts it holds: it names
#: their types without importing them, so no import cycle runs through it
Context = Any
Core = Any

#: ``serve(key)``: the reply and the keys it wrote, or None when ``key`` has nothing for it
Serve = Callable[[bytes], "tuple[Any, list[bytes]] | None"]

UNBLOCKED_BY_CLIENT = "UNBLOCKED client unblocked via CLIENT UNBLOCK"


class Waiter:
    """One blocked client: its keys, how to serve it, and its reply when it times out."""

    __slots__ = ("call", "ctx", "deferred", "keys", "serve", "timeout_reply", "timer")

    def __init__(self, ctx: Context, keys: list[bytes], serve: Serve, timeout_reply: Any,
                 deferred: Deferred) -> None:
        self.ctx = ctx
        self.keys = keys
        self.serve = serve
        self.timeout_reply = timeout_reply
        self.deferred = deferred
        self.timer: asyncio.TimerHandle | None = None
        #: the blocked command (name, argv) as the keyspace notifier names its writes
        self.call: tuple[str, list[bytes]] = (ctx.last_cmd, [])


class Blocking:
    """The blocked clients of one server (``core.blocking``)."""

    __slots__ = ("by_client", "by_key", "core", "loop", "ready", "scheduled", "served_total")

    def __init__(self, core: Core) -> None:
        self.core = core
        #: key -> waiters in the order they blocked
        self.by_key: dict[bytes, deque[Waiter]] = {}
        #: client id -> its waiter
        self.by_client: dict[int, Waiter] = {}
        #: keys written since the last serve_ready, in the order they were (a dict as an
        #: ordered set)
        self.ready: dict[bytes, None] = {}
        self.served_total = 0
        #: the event loop of the blocked clients, and whether a serve_ready is scheduled on
        #: it (for writes made outside a client's dispatch: a script on its own thread)
        self.loop: asyncio.AbstractEventLoop | None = None
        self.scheduled = False

    def __len__(self) -> int:
        """Clients blocked now (INFO clients ``blocked_clients``)."""
        return len(self.by_client)

    # --- blocking ---------------------------------------------------------------------
    def block(self, ctx: Context, keys: list[bytes], timeout_ms: int, serve: Serve,
              timeout_reply: Any) -> Deferred:
        """Park ``ctx`` until one of ``keys`` can serve it, or ``timeout_ms`` (0 = never)."""
        waiter = Waiter(ctx, list(dict.fromkeys(keys)), serve, timeout_reply,
                        Deferred(keep_reading=True, idle=True))
        for key in waiter.keys:
            queue = self.by_key.get(key)
            if queue is None:
                queue = self.by_key[key] = deque()
            queue.append(waiter)
        self.by_client[ctx.id] = waiter
        if self.core.notify_flags and self.core.notifier.call is not None:
            waiter.call = self.core.notifier.call
        loop = _loop()
        if loop is not None:
            self.loop = loop
            if timeout_ms > 0:
                waiter.timer = loop.call_later(timeout_ms / 1000, self._timed_out, waiter)
        return waiter.deferred

    def _forget(self, waiter: Waiter) -> bool:
        """Take ``waiter`` out of every queue; False when it was not waiting any more."""
        if self.by_client.get(waiter.ctx.id) is not waiter:
            return False
        del self.by_client[waiter.ctx.id]
        for key in waiter.keys:
            queue = self.by_key.get(key)
            if queue is not None:
                try:
                    queue.remove(waiter)
                except ValueError:
                    pass
                if not queue:
                    del self.by_key[key]
        if waiter.timer is not None:
            waiter.timer.cancel()
            waiter.timer = None
        return True

    def _finish(self, waiter: Waiter, reply: Any) -> None:
        if not self._forget(waiter):
            return
        loop = _loop()
        if loop is not None:
            loop.call_soon(waiter.deferred.resolve, reply)
        else:
            waiter.deferred.resolve(reply)

    def _timed_out(self, waiter: Waiter) -> None:
        waiter.timer = None
        self._finish(waiter, waiter.timeout_reply)

    def unblock(self, client_id: int, error: bool) -> bool:
        """CLIENT UNBLOCK: end the wait as a timeout, or with an UNBLOCKED error."""
        waiter = self.by_client.get(client_id)
        if waiter is None:
            return False
        self._finish(waiter, ErrorReply(UNBLOCKED_BY_CLIENT) if error else waiter.timeout_reply)
        return True

    def unblock_all(self, message: str) -> None:
        """End every wait with an error (the server became a replica)."""
        for waiter in list(self.by_client.values()):
            self._finish(waiter, ErrorReply(message))

    def client_gone(self, ctx: Context) -> None:
        waiter = self.by_client.get(ctx.id)
        if waiter is not None:
            self._forget(waiter)

    # --- waking -----------------------------------------------------------------------
    def signal(self, keys: Iterable[bytes]) -> None:
        """These keys were written: their waiters get a chance after the command."""
        by_key = self.by_key
        for key in keys:
            if key in by_key:
                self.ready[key] = None
        if self.ready and not self.scheduled and self.loop is not None:
            # the dispatch point serves at the end of the command; this covers a write that
            # did not come through it (a script's thread): the next loop iteration serves
            self.scheduled = True
            self.loop.call_soon_threadsafe(self._serve_scheduled)

    def _serve_scheduled(self) -> None:
        self.scheduled = False
        if self.ready:
            self.serve_ready()

    def serve_ready(self) -> None:
        """Offer every signalled key to its waiters, first come first served, until no key
        is left to offer (a served BLMOVE may signal its destination)."""
        core = self.core
        while self.ready:
            batch = list(self.ready)
            self.ready.clear()
            for key in batch:
                queue = self.by_key.get(key)
                if not queue:
                    continue
                for waiter in list(queue):
                    if self.by_client.get(waiter.ctx.id) is not waiter:
                        continue
                    outcome = self._try(core, waiter, key)
                    if outcome is None:
                        continue
                    self.served_total += 1
                    self._finish(waiter, outcome)

    def _try(self, core: Core, waiter: Waiter, key: bytes) -> Any:
        """Run one waiter's pop as an ordinary write; its reply, or None if nothing to pop."""
        ctx = waiter.ctx
        ctx.now_ms = core.clock.now_ms()
        if core.notify_flags:  # the pop's events are named after the blocked command
            core.notifier.call = waiter.call
        try:
            result = waiter.serve(key)
        except CommandError as exc:
            written: list[bytes] = []
            reply: Any = ErrorReply(exc.message)
        else:
            if result is None:
                return None
            reply, written = result
        # WATCHers of the keys were told by the effect log when the pop was emitted
        if core.effects.pending:
            core.effects.flush()  # (inside a group it leaves with the group)
        self.signal(written)
        return reply


def _loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None
