"""Running a vector search on the search threads (semantic memory's ``SemanticService``
pool, shared by every user of the vector engine): the handler returns a ``Deferred`` that
resolves on the loop thread when the search is done.

The search runs off the loop only where that is safe and useful: not inside MULTI/EXEC or a
script (their replies are built at once), not on a replica's link to its master, not without
a running loop or an open service; :func:`search_elsewhere` answers None there and the
caller searches in place.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Callable
from typing import Any

from hotkv_server.engine.context import Context
from hotkv_server.engine.dispatch import Deferred
from hotkv_server.engine.replies import ErrorReply
from hotkv_server.stores.hnsw import HnswGraph


def search_elsewhere(
    ctx: Context,
    graph: HnswGraph,
    breadth: int,
    run: Callable[[], None],
    finish: Callable[[], Any],
    *,
    current: Callable[[], bool],
    gone: Any,
    name: str,
) -> Deferred | None:
    """Run ``run`` (the hnswlib search of ``graph`` at ``breadth``) on a search thread; the
    Deferred resolves to ``finish()`` (loop thread), or to ``gone`` when ``current()`` says
    the graph was dropped or replaced meanwhile. None: search in place instead."""
    core = ctx.core
    if core.effects.grouped or ctx.is_master_link:
        return None
    service = core.search
    if service is None or service.closed:
        return None
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return None
    graph.begin_breadth(breadth)
    future = service.submit(run)
    if future is None:
        return None
    graph.track(future)
    deferred = Deferred()

    def done_here(done: concurrent.futures.Future[Any]) -> None:
        graph.untrack(done)
        if done.cancelled():  # the server is shutting down
            deferred.resolve(ErrorReply("ERR server is shutting down"))
            return
        error = done.exception()
        if error is not None:
            core.stats.unexpected_error_replies += 1
            deferred.resolve(ErrorReply(f"ERR internal error in '{name}': {type(error).__name__}"))
            return
        deferred.resolve(finish() if current() else gone)

    def done_elsewhere(done: concurrent.futures.Future[Any]) -> None:
        try:
            loop.call_soon_threadsafe(done_here, done)
        except RuntimeError:  # the loop is closed: the server is shutting down
            pass

    future.add_done_callback(done_elsewhere)
    return deferred
