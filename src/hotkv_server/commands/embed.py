"""Embedding for the commands: turn texts into vectors without blocking the event loop.

:func:`embed_then` is what AMEM.SEM.STORE, RECALL and SEARCH call when they need the
vector of a text: ``then(vectors)`` builds the reply (and emits the write's effect, which
carries the computed vector, so AOF replay and replicas never embed). When every text is
in the embedding cache ``then`` runs at once; otherwise the texts go to the embedding
worker pool and the handler returns a :class:`~hotkv_server.engine.dispatch.Deferred`,
the mechanism RECALL's threaded search uses: the client's later requests wait behind it
(replies keep their order) while every other client is served. ``then`` runs later on
the loop thread through :func:`~hotkv_server.engine.dispatch.run_later` (gates, errors,
WATCH and effect flushing as for any handler), and may itself return a Deferred (a RECALL
whose search then goes to a search thread), which the first one waits for.

A failing embedder, or one with no answer within ``embed-timeout-ms``, answers one error
line naming the embedder and the cause; nothing is stored. Inside MULTI/EXEC a text not in
the cache is refused (a transaction's replies are built at once, and embedding in place
would stop the server); without a running event loop (a Core driven in process) the
embedding runs in place.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Callable
from typing import Any

import numpy as np

from hotkv_server.embedding.base import EmbeddingError, to_blob
from hotkv_server.embedding.service import EmbeddingService
from hotkv_server.engine.context import Context
from hotkv_server.engine.dispatch import Deferred, run_later
from hotkv_server.engine.errors import CommandError
from hotkv_server.server.resp import ErrorReply


def service_of(ctx: Context) -> EmbeddingService | None:
    service: EmbeddingService | None = ctx.core.extras.get("embed")
    return service


def check_embedder(ctx: Context, name: str) -> int:
    """The dimension of the configured embedder ``name``; CommandError when there is none."""
    service = service_of(ctx)
    embedder = None if service is None else service.get(name)
    if embedder is None:
        configured = "none" if service is None else service.names()
        raise CommandError(
            f"ERR unknown embedder '{name}': this server has {configured} "
            "(see docs/embeddings.md for the embed-* directives)")
    return embedder.dim


def embed_then(ctx: Context, command: str, argv: list[bytes], embedder_name: str,
               texts: list[bytes], then: Callable[[list[bytes]], Any]) -> Any:
    """``then(vectors)`` with one FP32 blob per text, now or as a Deferred reply."""
    service = service_of(ctx)
    embedder = None if service is None else service.get(embedder_name)
    if service is None or embedder is None:
        raise CommandError(
            f"ERR embedder '{embedder_name}' is not configured on this server "
            f"(it has {'none' if service is None else service.names()}): send the vector")
    cache = service.cache
    model = embedder.model
    vectors: list[bytes | None] = [cache.get(model, text) for text in texts]
    missing = list(dict.fromkeys(text for text, vector in zip(texts, vectors, strict=True)
                                 if vector is None))
    if not missing:
        return then([v for v in vectors if v is not None])
    core = ctx.core
    if core.in_exec:
        raise CommandError(
            f"ERR {command.upper()} without a vector cannot embed inside MULTI/EXEC "
            "(the embedding would stop the server): send the vector, or run it outside the transaction")
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        loop = None
    if loop is None or service.pool.closed:
        try:
            computed = embedder.embed([text.decode("utf-8", "replace") for text in missing])
        except Exception as exc:
            raise CommandError(str(EmbeddingError(embedder_name, str(exc) or type(exc).__name__)))
        return then(_combine(cache, model, texts, vectors, missing, computed))

    future = service.pool.submit(embedder, [text.decode("utf-8", "replace") for text in missing])
    deferred = Deferred()
    timeout_ms = service.timeout_ms

    def expire() -> None:
        if deferred.done:
            return
        future.cancel()
        service.timeouts += 1
        service.failed += 1
        deferred.resolve(_failure(ctx, str(EmbeddingError(
            embedder_name, f"no vectors within {timeout_ms} ms (embed-timeout-ms)"))))

    timer = loop.call_later(timeout_ms / 1000, expire)

    def finish(done: concurrent.futures.Future[np.ndarray]) -> None:
        timer.cancel()
        if deferred.done or done.cancelled():
            return
        error = done.exception()
        if error is not None:
            service.failed += 1
            message = str(error) if isinstance(error, EmbeddingError) else str(
                EmbeddingError(embedder_name, str(error) or type(error).__name__))
            deferred.resolve(_failure(ctx, message))
            return
        blobs = _combine(cache, model, texts, vectors, missing, done.result())
        reply = run_later(ctx, command, argv, lambda: then(blobs))
        if type(reply) is Deferred:
            _chain(reply, deferred)
        else:
            deferred.resolve(reply)

    def done_elsewhere(done: concurrent.futures.Future[np.ndarray]) -> None:
        try:
            loop.call_soon_threadsafe(finish, done)
        except RuntimeError:  # the loop is closed: the server is shutting down
            pass

    future.add_done_callback(done_elsewhere)
    return deferred


def _combine(cache: Any, model: str, texts: list[bytes], vectors: list[bytes | None],
             missing: list[bytes], computed: np.ndarray) -> list[bytes]:
    fresh = {}
    for text, row in zip(missing, computed, strict=True):
        blob = to_blob(row)
        fresh[text] = blob
        cache.put(model, text, blob)
    return [vector if vector is not None else fresh[text]
            for text, vector in zip(texts, vectors, strict=True)]


def _chain(inner: Deferred, outer: Deferred) -> None:
    if inner.done:
        outer.resolve(inner.value)
    else:
        inner.callback = lambda d: outer.resolve(d.value)


def _failure(ctx: Context, message: str) -> ErrorReply:
    stats = ctx.core.stats
    stats.total_error_replies += 1
    code = message.split(" ", 1)[0]
    stats.errorstats[code] = stats.errorstats.get(code, 0) + 1
    return ErrorReply(message)
