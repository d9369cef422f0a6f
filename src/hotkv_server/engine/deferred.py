"""A reply that is not known yet (WAIT, a RECALL off the loop, a client blocked on keys).

It imports nothing of hotkv, so the blocked-clients registry (engine/blocking.py) and the
dispatch point (which re-exports it) can both use it without an import cycle.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class Deferred:
    """A reply that is not known yet, returned by a handler that must wait (WAIT).

    The handler cannot await: it returns a Deferred and whoever holds it later calls
    ``resolve(value)``. The connection sends nothing for it until then and runs none of
    the client's later (pipelined) commands before it, so replies keep their order. A
    Deferred resolved before the handler returns is answered at once. Resolving twice is
    ignored (a timeout racing an acknowledgement).

    Resolving runs two steps, in this order: ``completion``, the dispatch point's end of
    the call (its duration, command statistics, error counters and slowlog, as for a
    command answered at once; set by ``engine.dispatch.execute``), then ``callback``, what
    waits for the value (the connection's answer path, a suspended EXEC).
    """

    __slots__ = ("callback", "completion", "done", "failed", "idle", "keep_reading", "value")

    def __init__(self, keep_reading: bool = False, idle: bool = False) -> None:
        self.done = False
        self.value: Any = None
        #: the connection goes on reading while it waits (requests are held, up to a
        #: limit), so a client that closes is noticed: a client blocked on keys (BLPOP)
        #: may wait for ever and must leave the queue when it goes, as in Redis
        self.keep_reading = keep_reading
        #: the time until it resolves is spent waiting for an event (WAIT's replicas, a
        #: push to a blocking pop's key), not running the command: the call's duration
        #: leaves it out, as Redis times a blocked command by its execution only. Work
        #: done elsewhere (a search on the threads, an embedding) counts in full.
        self.idle = idle
        #: the call failed and its producer counted its error replies already (a script's:
        #: a redis.call error passed on, its own error tables): set before it resolves, so
        #: the dispatch point counts the call failed and its errors not again
        self.failed = False
        #: set by the dispatch point: the end of the call, run first when it resolves
        self.completion: Callable[[Deferred], None] | None = None
        #: set by the connection (or EXEC) that waits for the reply
        self.callback: Callable[[Deferred], None] | None = None

    def resolve(self, value: Any) -> None:
        if self.done:
            return
        self.done = True
        self.value = value
        completion, self.completion = self.completion, None
        if completion is not None:
            completion(self)
        callback, self.callback = self.callback, None
        if callback is not None:
            callback(self)
