"""AMEM.SEARCH: one query over an agent's semantic, episodic and working memory.

``AMEM.SEARCH agent k vector [TEXT query]`` looks in the three stores named ``agent``: the
semantic namespace, the episodic log and the working scratchpad (session) of that name, and
answers up to ``k`` hits, best first, each a record with ``source`` (``semantic``,
``episodic`` or ``working``), ``id``, ``text`` and ``similarity`` (0..1 for text matches):

* semantic facts are found by the vector, exactly as AMEM.SEM.RECALL finds them (same
  ``similarity``, same record, the HNSW search off the event loop);
* episodic events and working notes hold no vectors, so without an embedder they are found
  by ``TEXT`` (a hotkv extension; the HotKV dialect sends only the vector): an entry's
  ``similarity`` is the share of the query's distinct terms (the BM25 index's words:
  lower-cased, stemmed, stop words dropped) found in its text (a note's key and value).
  Without TEXT they contribute nothing. At most the newest ``SCAN_EVENTS`` events are looked at.
* :func:`text_embedder` is the hook for a configured embedder: when the agent's namespace
  has one, episodic and working texts are embedded and compared with the query vector by
  cosine similarity instead (and TEXT is not needed).

A missing store contributes no hits (an agent may keep only a log); a vector of the wrong
size for an existing namespace is the same DIM error as RECALL's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from hotkv_server.commands.epis import event_record
from hotkv_server.commands.sem import MAX_K, sem_recall
from hotkv_server.commands.sem_args import read_vector
from hotkv_server.engine import errors
from hotkv_server.engine.args import Args, parse_float
from hotkv_server.engine.context import Context
from hotkv_server.engine.dispatch import Deferred
from hotkv_server.engine.errors import CommandError
from hotkv_server.engine.registry import command
from hotkv_server.engine.replies import ErrorReply
from hotkv_server.stores.epis import EpisodicStore
from hotkv_server.stores.sem import Namespace, SemanticStore
from hotkv_server.stores.text import doc_terms, query_terms
from hotkv_server.stores.work import WorkingStore

#: the newest events of a log AMEM.SEARCH reads (a log is trimmed on purpose, not bounded)
SCAN_EVENTS = 10_000

#: texts -> one row per text (unit length not required); see :func:`text_embedder`
Embedder = Callable[[list[bytes]], np.ndarray]


def text_embedder(ns: Namespace | None) -> Embedder | None:
    """The embedder configured for the agent's namespace, if any: the hook server-side
    embedders plug into (a namespace object with an ``embedder`` that has ``embed(texts)``
    returning one vector per text, of the namespace's dimension)."""
    embedder = getattr(ns, "embedder", None) if ns is not None else None
    embed = getattr(embedder, "embed", None)
    return embed if callable(embed) else None


def _skip_vector(args: Args) -> None:
    """Without a namespace to check it against, step over the vector (FP32 blob or numbers)."""
    first = args.peek()
    if first is not None and first.upper() == b"FP32":
        args.next("FP32")
        args.next("FP32")
        return
    while (raw := args.peek()) is not None and parse_float(raw) is not None:
        args.next("vector")


def _text_score(query: list[str], text: bytes) -> float:
    if not query:
        return 0.0
    held = set(doc_terms(text))
    return sum(1 for term in query if term in held) / len(query)


def _cosines(embed: Embedder, query_vector: np.ndarray, texts: list[bytes]) -> list[float]:
    if not texts:
        return []
    rows = np.asarray(embed(texts), dtype=np.float32).reshape(len(texts), -1)
    q = query_vector / (np.linalg.norm(query_vector) or 1.0)
    norms = np.linalg.norm(rows, axis=1)
    norms[norms == 0] = 1.0
    return [float(x) for x in (rows @ q) / norms]


def _other_hits(ctx: Context, agent: bytes, text: bytes | None, ns: Namespace | None,
                vector: bytes | None) -> list[dict[str, Any]]:
    """Episodic and working hits with a similarity above 0."""
    epis: EpisodicStore = ctx.db.epis
    work: WorkingStore = ctx.db.work
    events = epis.query(agent, limit=SCAN_EVENTS, rev=True)
    notes = list(work.items(agent, ctx.now_ms).items())
    candidates: list[tuple[dict[str, Any], bytes]] = []
    for event in events:
        record = event_record(event)
        record["source"] = "episodic"
        candidates.append((record, event[3]))
    for key, value in notes:
        candidates.append(({"source": "working", "id": key, "text": value}, key + b" " + value))
    embed = text_embedder(ns)
    if embed is not None and vector is not None:
        query_vector = np.frombuffer(vector, dtype=np.float32)
        scores = _cosines(embed, query_vector, [t for _, t in candidates])
    elif text is not None:
        terms = query_terms(text)
        scores = [_text_score(terms, t) for _, t in candidates]
    else:
        return []
    hits = []
    for (record, _), score in zip(candidates, scores, strict=True):
        if score > 0:
            record["similarity"] = score
            hits.append(record)
    return hits


def _merge(semantic: list[dict[str, Any]], others: list[dict[str, Any]], k: int) -> list[Any]:
    for hit in semantic:
        hit["source"] = "semantic"
    # a stable sort: semantic hits first among equals, then the newest events
    ranked = sorted([*semantic, *others], key=lambda hit: -float(hit["similarity"]))
    return ranked[:k]


@command(
    "amem.search",
    arity=-4,
    flags="readonly",
    keys=(1, 1, 1),
    key_flags="RO access",
    group="amem",
    summary="Returns up to k hits across an agent's semantic (by vector), episodic and "
    "working memory (by TEXT or an embedder), best first, each with source and similarity.",
    syntax="agent k (FP32 blob | v1 ... vdim) [TEXT query]",
    complexity="O(log N) for the semantic search plus O(E + W) over the E events and W notes",
    dialect=True,
    extensions="FP32 TEXT",
)
def amem_search(ctx: Context, argv: list[bytes]) -> Any:
    """agent k (FP32 blob | v1 ... vdim) [TEXT query]"""
    args = Args(argv, 1)
    agent = args.ident("agent")
    k = args.int("k", 1, MAX_K)
    sem: SemanticStore = ctx.db.sem
    ns = sem.get(agent)
    vector_start = args.pos
    vector: bytes | None = None
    if ns is not None:
        vector = read_vector(args, ns)
    else:
        _skip_vector(args)
    if args.pos == vector_start:
        raise CommandError(errors.bad_argument("vector", "FP32 blob or v1 ... vdim"))
    vector_args = argv[vector_start : args.pos]
    text: bytes | None = None
    while args:
        raw = args.next("option")
        if raw.upper() == b"TEXT":
            text = args.text("TEXT")
        else:
            raise CommandError(errors.bad_argument("option", "TEXT", raw))
    others = _other_hits(ctx, agent, text, ns, vector)
    if ns is None:
        return _merge([], others, k)
    semantic = sem_recall(ctx, [b"amem.sem.recall", agent, str(k).encode(), *vector_args])
    if not isinstance(semantic, Deferred):
        return _merge(semantic, others, k)
    combined = Deferred()

    def finish(done: Deferred) -> None:
        value = done.value
        combined.resolve(value if isinstance(value, ErrorReply) else _merge(value, others, k))

    if semantic.done:
        finish(semantic)
    else:
        semantic.callback = finish
    return combined
