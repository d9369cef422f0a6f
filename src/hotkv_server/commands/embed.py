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

from collections.abc import Callable
from typing import Any

from hotkv_server.engine.context import Context
from hotkv_server.engine.dispatch import Deferred, run_later
from hotkv_server.engine.errors import CommandError
from hotkv_server.engine.replies import ErrorReply
from hotkv_server.engine.services import EmbeddingService


def service_of(ctx: Context) -> EmbeddingService | None:
    return ctx.core.embed


def check_embedder(ctx: Context, name: str) -> int:
    """The dimension of the configured embedder ``name``; CommandError when there is none."""
    service = service_of(ctx)
    dim = None if service is None else service.dimension(name)
    if dim is None:
        configured = "none" if service is None else service.names()
        raise CommandError(
            f"ERR unknown embedder '{name}': this server has {configured} "
            "(see docs/embeddings.md for the embed-* directives)")
    return dim


def embedder_of(ns: Any, what: str) -> str:
    """The name of the namespace's embedder; CommandError for a namespace without one."""
    if ns.embedder is None:
        raise CommandError(
            f"ERR {what} needs a namespace with an embedder: namespace "
            f"'{ns.name.decode('utf-8', 'replace')}' has none (AMEM.SEM.CREATE ns EMBEDDER "
            "name binds one at creation); send a vector instead")
    name: str = ns.embedder
    return name


def embedding_text(text: bytes, description: bytes | None) -> bytes:
    """What a store by text embeds: the text, and after a blank line the DESCRIPTION."""
    return text if not description else text + b"\n\n" + description


def embed_then(ctx: Context, command: str, argv: list[bytes], embedder_name: str,
               texts: list[bytes], then: Callable[[list[bytes]], Any]) -> Any:
    """``then(vectors)`` with one FP32 blob per text, now or as a Deferred reply."""
    service = service_of(ctx)
    if service is None or service.dimension(embedder_name) is None:
        raise CommandError(
            f"ERR embedder '{embedder_name}' is not configured on this server "
            f"(it has {'none' if service is None else service.names()}): send the vector")
    vectors = service.lookup(embedder_name, texts)
    missing = list(dict.fromkeys(text for text, vector in zip(texts, vectors, strict=True)
                                 if vector is None))
    if not missing:
        return then([v for v in vectors if v is not None])
    if ctx.core.effects.grouped:  # inside EXEC
        raise CommandError(
            f"ERR {command.upper()} without a vector cannot embed inside MULTI/EXEC "
            "(the embedding would stop the server): send the vector, or run it outside the transaction")
    if not service.running():  # a Core driven in process: embed in place
        try:
            made = service.embed_now(embedder_name, missing)
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        return then(_fill(texts, vectors, made))

    deferred = Deferred()

    def done(made: dict[bytes, bytes] | None, error: str | None) -> None:
        if made is None:
            # (counted in errorstats, and the call failed, by the dispatch point)
            deferred.resolve(ErrorReply(error or "ERR embedding failed"))
            return
        blobs = _fill(texts, vectors, made)
        reply = run_later(ctx, command, argv, lambda: then(blobs))
        if type(reply) is Deferred:
            _chain(reply, deferred)
        else:
            deferred.resolve(reply)

    service.embed(embedder_name, missing, done)
    return deferred


def warm_ahead(ctx: Context, argv: list[bytes]) -> None:
    """The connection holds ``argv`` behind a deferred reply: when it is a store or recall
    by text on a namespace with an embedder, start embedding its text now, so a client that
    pipelines many of them is embedded in batches while it waits, and each one finds its
    vector ready when its turn comes. Only a guess from the raw words: a wrong one costs an
    embedding, never a wrong result (the command embeds for itself when the cache misses)."""
    service = service_of(ctx)
    if service is None or len(argv) < 4:
        return
    name = argv[0].lower()
    text: bytes | None = None
    if name == b"amem.sem.store":
        rest = argv[4:]
        if rest and (rest[0].upper() == b"FP32" or _is_number(rest[0])):
            return  # an explicit vector
        description = None
        for i in range(len(rest) - 1):
            if rest[i].upper() == b"DESCRIPTION":
                description = rest[i + 1]
        text = embedding_text(argv[3], description)
    elif (name in (b"amem.sem.recall", b"amem.sem.search") and len(argv) >= 5
          and argv[3].upper() == b"TEXT"):
        if name == b"amem.sem.search" and any(a.upper() == b"VECTOR" for a in argv[5:]):
            return
        text = argv[4]
    if text is None:
        return
    ns = ctx.db.sem.get(argv[1])
    if ns is not None and ns.embedder is not None:
        service.prefetch(ns.embedder, text)


def _is_number(raw: bytes) -> bool:
    try:
        float(raw)
    except ValueError:
        return False
    return True


def _fill(texts: list[bytes], vectors: list[bytes | None], fresh: dict[bytes, bytes]) -> list[bytes]:
    return [vector if vector is not None else fresh[text]
            for text, vector in zip(texts, vectors, strict=True)]


def _chain(inner: Deferred, outer: Deferred) -> None:
    if inner.done:
        outer.resolve(inner.value)
    else:
        inner.callback = lambda d: outer.resolve(d.value)

