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
* when the agent's namespace has an embedder (``AMEM.SEM.CREATE ... EMBEDDER``), ``TEXT
  query`` may stand alone in place of the vector (it is embedded), and the newest
  ``EMBED_EVENTS`` events and every note are embedded (through the embedding cache and
  the worker pool, never on the event loop) and compared with the query vector by cosine
  similarity instead of by terms.

A missing store contributes no hits (an agent may keep only a log); a vector of the wrong
size for an existing namespace is the same DIM error as RECALL's.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hotkv_server.commands.embed import embed_then, embedder_of
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
from hotkv_server.stores.sem import Namespace
from hotkv_server.stores.text import doc_terms, query_terms

#: the newest events of a log AMEM.SEARCH reads (a log is trimmed on purpose, not bounded)
SCAN_EVENTS = 10_000

#: the newest events AMEM.SEARCH embeds when the namespace has an embedder
EMBED_EVENTS = 2_000


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


def _cosines(query_vector: np.ndarray, rows: list[bytes]) -> list[float]:
    if not rows:
        return []
    matrix = np.frombuffer(b"".join(rows), dtype=np.float32).reshape(len(rows), -1)
    q = query_vector / (np.linalg.norm(query_vector) or 1.0)
    norms = np.linalg.norm(matrix, axis=1)
    norms[norms == 0] = 1.0
    return [float(x) for x in (matrix @ q) / norms]


def _candidates(ctx: Context, agent: bytes, limit: int) -> list[tuple[dict[str, Any], bytes]]:
    """The agent's newest events (up to ``limit``) and its notes, each with its text."""
    epis = ctx.db.epis
    work = ctx.db.work
    candidates: list[tuple[dict[str, Any], bytes]] = []
    for event in epis.query(agent, limit=limit, rev=True):
        record = event_record(event)
        record["source"] = "episodic"
        candidates.append((record, event[3]))
    for key, value in work.items(agent, ctx.now_ms).items():
        candidates.append(({"source": "working", "id": key, "text": value}, key + b" " + value))
    return candidates


def _scored(candidates: list[tuple[dict[str, Any], bytes]], scores: list[float]) -> list[dict[str, Any]]:
    hits = []
    for (record, _), score in zip(candidates, scores, strict=True):
        if score > 0:
            record["similarity"] = score
            hits.append(record)
    return hits


def _term_hits(ctx: Context, agent: bytes, text: bytes | None) -> list[dict[str, Any]]:
    """Episodic and working hits by the share of TEXT's terms they hold (no embedder)."""
    if text is None:
        return []
    candidates = _candidates(ctx, agent, SCAN_EVENTS)
    terms = query_terms(text)
    return _scored(candidates, [_text_score(terms, t) for _, t in candidates])


def _merge(semantic: list[dict[str, Any]], others: list[dict[str, Any]], k: int) -> list[Any]:
    for hit in semantic:
        hit["source"] = "semantic"
    # a stable sort: semantic hits first among equals, then the newest events
    ranked = sorted([*semantic, *others], key=lambda hit: -float(hit["similarity"]))
    return ranked[:k]


@command("amem.search", arity=-4, flags="readonly", key="RO access", group="amem",
         complexity="O(log N) for the semantic search plus O(E + W) over the E events and W notes",
         dialect=True, extensions="FP32 TEXT")
def amem_search(ctx: Context, argv: list[bytes]) -> Any:
    """AMEM.SEARCH agent k (FP32 blob | v1 ... vdim | TEXT query) [TEXT query]
    Returns up to k hits across an agent's semantic (by vector), episodic and working memory (by
    TEXT or an embedder), best first, each with source and similarity.
    """
    args = Args(argv, 1)
    agent = args.ident("agent")
    k = args.int("k", 1, MAX_K)
    sem = ctx.db.sem
    ns = sem.get(agent)
    vector_start = args.pos
    vector: bytes | None = None
    first = args.peek()
    if first is None or first.upper() != b"TEXT":
        if ns is not None:
            vector = read_vector(args, ns)
        else:
            _skip_vector(args)
        if args.pos == vector_start:
            raise CommandError(errors.bad_argument("vector", "FP32 blob, v1 ... vdim or TEXT query", first))
    vector_args = argv[vector_start : args.pos]
    text = args.only_option(b"TEXT")
    if ns is not None and (ns.embedder is not None or vector is None):
        return _search_embedded(ctx, argv, agent, k, ns, vector, text)
    others = _term_hits(ctx, agent, text)
    if ns is None or vector is None:  # no namespace: the log and the notes by TEXT
        return _merge([], others, k)
    return _with_semantic(ctx, agent, k, vector_args, others)


def _search_embedded(ctx: Context, argv: list[bytes], agent: bytes, k: int, ns: Namespace,
                     vector: bytes | None, text: bytes | None) -> Any:
    """With the namespace's embedder: the query text is embedded when no vector is given,
    and the newest ``EMBED_EVENTS`` events and the notes are compared by cosine similarity
    with the query vector (their vectors come from the embedding cache or the worker pool)."""
    embedder = embedder_of(ns, "AMEM.SEARCH without a vector")
    candidates = _candidates(ctx, agent, EMBED_EVENTS)
    texts = [t for _, t in candidates]
    if vector is None:
        assert text is not None
        texts.insert(0, text)

    def then(blobs: list[bytes]) -> Any:
        query = vector if vector is not None else blobs.pop(0)
        others = _scored(candidates, _cosines(np.frombuffer(query, dtype=np.float32), blobs))
        return _with_semantic(ctx, agent, k, [b"FP32", query], others)

    return embed_then(ctx, "amem.search", argv, embedder, texts, then)


def _with_semantic(ctx: Context, agent: bytes, k: int, vector_args: list[bytes],
                   others: list[dict[str, Any]]) -> Any:
    """RECALL's hits for the vector merged with ``others`` (a Deferred while it searches)."""
    semantic = sem_recall(ctx, [b"amem.sem.recall", agent, str(k).encode(), *vector_args])
    if not isinstance(semantic, Deferred):
        return semantic if isinstance(semantic, ErrorReply) else _merge(semantic, others, k)
    combined = Deferred()

    def finish(done: Deferred) -> None:
        value = done.value
        combined.resolve(value if isinstance(value, ErrorReply) else _merge(value, others, k))

    if semantic.done:
        finish(semantic)
    else:
        semantic.callback = finish
    return combined
