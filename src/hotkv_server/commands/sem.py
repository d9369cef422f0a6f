"""AMEM.SEM.*: semantic memory, facts with an embedding vector recalled by meaning.

A namespace is created explicitly (CREATE) with its dimension and metric, which never
change; CREATE ... UPDATE changes EF, CAPACITY and EVICT (a lowered CAPACITY evicts the
excess at once, per EVICT; under EVICT NONE the facts stay and new ids are refused).

A vector is either exactly ``dim`` decimal numbers or the token FP32 and one blob of
``4*dim`` bytes (little-endian float32). After the fixed arguments, every argument that
reads as a number belongs to the vector, so too many or too few are ``DIM expected 3
values, got 4`` rather than a syntax error about the fourth number.

LIST's cursor is ``0`` to start and at the end; in between it is the hex spelling of the
last id returned, so a walk resumes after that id however the namespace changed.

SEARCH ranks by BM25 over each fact's text and description (``hotkv_server.stores.text``) and,
with a VECTOR, fuses that ranking with the HNSW one (docs/hybrid-search.md). RECALL EXACT
scans every matching fact with numpy instead of searching the graph, so the two can be
compared on one's own data; INFO's ``recall_*`` fields come from a periodic self-check of
each namespace (``commands/sem_service.py``), run on the event loop in short slices
between commands.

RECALL off the event loop: an HNSW search (not EXACT, not inside MULTI/EXEC, not a
command of a replica's master link, and only in a running server) is handed to the
SEARCH_THREADS threads of the server's :class:`SemanticService` and the handler returns a
:class:`Deferred`: the client's later requests wait for it, so replies keep their order,
while other clients are served and a second search runs on the other core (hnswlib
releases the GIL). The reply is built on the loop thread when the search is over
(``loop.call_soon_threadsafe``); writes to the namespace wait for its searches in flight
first (``Namespace.quiesce``). Without the service (a Core driven in process, or once the
server shut it down) the search runs in place.
"""

from __future__ import annotations

import logging
import re
from functools import partial
from typing import Any

from hotkv_server.commands.amem import Options, arg, delete_one, flag
from hotkv_server.commands.embed import (
    check_embedder,
    embed_then,
    embedder_of,
    embedding_text,
)
from hotkv_server.commands.sem_args import (
    FactFilter,
    read_cursor,
    read_kind,
    read_vector,
    vector_follows,
)
from hotkv_server.commands.vector_threads import search_elsewhere
from hotkv_server.engine import errors
from hotkv_server.engine.args import Args
from hotkv_server.engine.context import Context
from hotkv_server.engine.dispatch import Deferred
from hotkv_server.engine.errors import CommandError
from hotkv_server.engine.registry import family
from hotkv_server.engine.replies import OK
from hotkv_server.engine.write_options import AMEM_TTL_TOKENS, NX, XX, WriteOptions
from hotkv_server.stores.sem import Fact, Namespace, PendingSearch, SearchHit
from hotkv_server.stores.sem.facts import (
    DEFAULT_ALPHA,
    DEFAULT_EF,
    DEFAULT_EF_CONSTRUCTION,
    DEFAULT_EVICT,
    DEFAULT_FUSION,
    DEFAULT_KIND,
    DEFAULT_M,
    DEFAULT_METRIC,
    EVICT_POLICIES,
    FUSIONS,
    MAX_DIM,
    METRICS,
)
from hotkv_server.stores.sem_effects import SemCreate, SemDel, SemDrop, SemStore, SemUpdate

command = family(group="sem")

MAX_K = 1000
MAX_EF = 10_000
MAX_M = 128
MAX_CAPACITY = 1_000_000_000
MAX_LIST_COUNT = 1000
DEFAULT_LIST_COUNT = 100

_METRIC_TOKENS = tuple(m.encode() for m in METRICS)
_EVICT_TOKENS = tuple(p.encode() for p in EVICT_POLICIES)
_FUSION_TOKENS = tuple(f.encode() for f in FUSIONS)

_EMBEDDER_RE = re.compile(rb"[a-z0-9_-]{1,32}")
_STORE_TOKENS = AMEM_TTL_TOKENS | {NX, XX}


def _setting(args: Args, name: str, tokens: tuple[bytes, ...]) -> str:
    """A choice, as the str the stores keep (METRIC, FUSION)."""
    return args.choice(name, tokens).decode()


def _evict(args: Args, given: dict[bytes, Any]) -> str:
    if b"CAPACITY" not in given:
        raise CommandError("ERR syntax error: EVICT must follow CAPACITY n")
    return _setting(args, "EVICT", _EVICT_TOKENS)


def _embedder(args: Args, given: dict[bytes, Any]) -> str:
    raw_name = args.next("EMBEDDER")
    if _EMBEDDER_RE.fullmatch(raw_name) is None:
        raise CommandError(errors.bad_argument(
            "EMBEDDER", "an embedder name (1..32 characters of a-z 0-9 _ -)", raw_name))
    return raw_name.decode()


_CREATE_OPTIONS = Options("METRIC, M, EF_CONSTRUCTION, EF, CAPACITY, EVICT, EMBEDDER or UPDATE", {
    b"METRIC": arg(_setting, "METRIC", _METRIC_TOKENS),
    b"M": arg(Args.int, "M", 2, MAX_M),
    b"EF_CONSTRUCTION": arg(Args.int, "EF_CONSTRUCTION", 1, MAX_EF),
    b"EF": arg(Args.int, "EF", 1, MAX_EF),
    b"CAPACITY": arg(Args.int, "CAPACITY", 0, MAX_CAPACITY),
    b"EVICT": _evict,
    b"EMBEDDER": _embedder,
    b"UPDATE": flag,
})
_STORE_OPTIONS = Options(
    "NX, XX, TTL, PX, PXAT, KIND, CONFIDENCE, SOURCE, DESCRIPTION, META or WITHCREATED", {
        b"WITHCREATED": flag,
        b"KIND": arg(read_kind),
        b"CONFIDENCE": arg(Args.float, "CONFIDENCE", 0.0, 1.0),
        b"SOURCE": arg(Args.text, "SOURCE"),
        b"DESCRIPTION": arg(Args.text, "DESCRIPTION"),
        b"META": arg(Args.json_object, "META"),
    })
_RECALL_OPTIONS = Options("MINSIM, KIND, MINCONF, PREFIX, EF, EXACT or WITHVECTORS", {
    b"MINSIM": arg(Args.float, "MINSIM"),
    b"EF": arg(Args.int, "EF", 1, MAX_EF),
    b"EXACT": flag,
    b"WITHVECTORS": flag,
})
_SEARCH_OPTIONS = "TEXT, VECTOR, FUSION, ALPHA, MINSCORE, KIND, MINCONF or PREFIX"
_SEARCH_READERS = {
    b"TEXT": arg(Args.next, "TEXT"),
    b"FUSION": arg(_setting, "FUSION", _FUSION_TOKENS),
    b"ALPHA": arg(Args.float, "ALPHA", 0.0, 1.0),
    b"MINSCORE": arg(Args.float, "MINSCORE"),
}
_LIST_OPTIONS = Options("PREFIX, KIND, CURSOR or COUNT", {
    b"PREFIX": arg(Args.text, "PREFIX"),
    b"KIND": arg(read_kind),
    b"CURSOR": arg(read_cursor),
    b"COUNT": arg(Args.int, "COUNT", 1, MAX_LIST_COUNT),
})


log = logging.getLogger("hotkv")


def _namespace(ctx: Context, name: bytes) -> Namespace:
    ns = ctx.db.sem.get(name)
    if ns is None:
        raise CommandError(errors.sem_not_found(name))
    return ns


def _fact_record(ns: Namespace, fact: Fact, similarity: float | None, vector: bool) -> Any:
    rec = fact.record(similarity)
    if vector:
        rec["vector"] = ns.vector(fact)
    return rec


# --- commands ------------------------------------------------------------------------


@command("amem.sem.create", arity=-3, flags="write denyoom", key="RW update",
         complexity="O(1), O(N log N) when UPDATE lowers the capacity below the N facts held",
         dialect=True, extensions="METRIC M EF_CONSTRUCTION EF CAPACITY EVICT EMBEDDER UPDATE")
def sem_create(ctx: Context, argv: list[bytes]) -> Any:
    """AMEM.SEM.CREATE ns [dim] [METRIC COSINE|IP|L2] [M m] [EF_CONSTRUCTION n] [EF n] [CAPACITY n
        [EVICT LOWCONF|OLDEST|NONE]] [EMBEDDER name] [UPDATE]
    Creates a semantic namespace, bound to an embedder with EMBEDDER (or with UPDATE changes its EF,
    CAPACITY and EVICT).
    """
    args = Args(argv, 1)
    name = args.ident("ns")
    dim: int | None = None
    first = args.peek()
    if first is not None and first.upper() not in _CREATE_OPTIONS.readers:  # dim may be left to EMBEDDER
        dim = args.int("dim", 1, MAX_DIM)
    given = _CREATE_OPTIONS.read(args)
    embedder: str | None = given.get(b"EMBEDDER")
    metric: str | None = given.get(b"METRIC")
    m: int | None = given.get(b"M")
    ef_construction: int | None = given.get(b"EF_CONSTRUCTION")
    ef: int | None = given.get(b"EF")
    capacity: int | None = given.get(b"CAPACITY")
    evict: str | None = given.get(b"EVICT")
    update = b"UPDATE" in given

    store = ctx.db.sem
    ns = store.get(name)
    if not update:
        if ns is not None:
            raise CommandError(errors.sem_exists(name))
        if embedder is not None:
            made = check_embedder(ctx, embedder)
            if dim is not None and dim != made:
                raise CommandError(
                    f"ERR invalid dim '{dim}': embedder '{embedder}' makes vectors of {made} values")
            dim = made
        if dim is None:
            raise CommandError("ERR syntax error: AMEM.SEM.CREATE needs dim, or EMBEDDER name "
                               "(the namespace then takes the embedder's dimension)")
        ctx.emit(SemCreate(
            name, dim,
            metric or DEFAULT_METRIC,
            m or DEFAULT_M,
            ef_construction or DEFAULT_EF_CONSTRUCTION,
            ef or DEFAULT_EF,
            capacity or 0,
            evict or DEFAULT_EVICT,
            embedder,
        ))
        return OK

    if ns is None:
        raise CommandError(errors.sem_not_found(name))
    fixed = (("dim", dim, ns.dim), ("METRIC", metric, ns.metric), ("M", m, ns.m),
             ("EF_CONSTRUCTION", ef_construction, ns.ef_construction),
             ("EMBEDDER", embedder, ns.embedder))
    for label, wanted, held in fixed:
        if wanted is not None and wanted != held:
            raise CommandError(
                f"ERR invalid {label} '{wanted}': namespace '{name.decode('utf-8', 'replace')}' "
                f"has {label} {'none' if held is None else held}, which never changes after creation"
            )
    changes: dict[str, Any] = {}
    if ef is not None and ef != ns.ef:
        changes["ef"] = ef
    if capacity is not None and capacity != ns.capacity:
        changes["capacity"] = capacity
    if evict is not None and evict != ns.evict:
        changes["evict"] = evict
    evicted: list[bytes] = []
    new_capacity = ns.capacity if capacity is None else capacity
    if new_capacity:
        ns.purge_expired(ctx.now_ms)  # expired facts do not count against the capacity
        evicted = ns.victims(len(ns.facts) - new_capacity, evict or ns.evict) or []
    if changes or evicted:
        ctx.emit(SemUpdate(name, changes, evicted))
    return OK


@command("amem.sem.store", arity=-4, flags="write denyoom", key="RW update",
         complexity="O(log N) index insertion", dialect=True,
         extensions="FP32 NX XX PX KIND CONFIDENCE SOURCE DESCRIPTION META WITHCREATED")
def sem_store(ctx: Context, argv: list[bytes]) -> Any:
    """AMEM.SEM.STORE ns id text [FP32 blob | v1 ... vdim] [NX|XX] [TTL s|PX ms|PXAT unix-time-ms]
        [KIND kind] [CONFIDENCE c] [SOURCE s] [DESCRIPTION d] [META json-object] [WITHCREATED]
    Stores (or replaces) a fact with its vector (computed by the namespace's embedder when left
    out): OK (WITHCREATED: 1 created, 0 replaced), null if NX/XX blocked it.
    """
    args = Args(argv, 1)
    name = args.ident("ns")
    ns = _namespace(ctx, name)
    ident = args.ident("id")
    text = args.text("text")
    vector = None if ns.embedder is not None and not vector_follows(args) else read_vector(args, ns)
    opts = WriteOptions(_STORE_TOKENS)
    given = _STORE_OPTIONS.read(args, partial(opts.take, now_ms=ctx.now_ms))
    kind: bytes = given.get(b"KIND", DEFAULT_KIND)
    confidence: float = given.get(b"CONFIDENCE", 1.0)
    source: bytes | None = given.get(b"SOURCE")
    description: bytes | None = given.get(b"DESCRIPTION")
    meta: bytes | None = given.get(b"META")
    withcreated = b"WITHCREATED" in given

    def store(vector: bytes) -> Any:
        return _store_fact(ctx, name, ident, text, vector, opts, kind,
                           confidence, source, description, meta, withcreated)

    if vector is None:  # the namespace's embedder makes it (docs/embeddings.md)
        embedder = ns.embedder or ""
        return embed_then(ctx, "amem.sem.store", argv, embedder,
                          [embedding_text(text, description)], lambda vectors: store(vectors[0]))
    return store(vector)


def _store_fact(ctx: Context, name: bytes, ident: bytes, text: bytes, vector: bytes,
                opts: WriteOptions, kind: bytes,
                confidence: float, source: bytes | None, description: bytes | None,
                meta: bytes | None, withcreated: bool) -> Any:
    ns = _namespace(ctx, name)  # again: a store by text finishes turns later
    if len(vector) != 4 * ns.dim:  # dropped and created again meanwhile with another dim
        raise CommandError(errors.dim_count(ns.dim, len(vector) // 4))
    now = ctx.now_ms
    existing = ns.get(ident, now)
    condition = opts.condition
    if (condition == b"NX" and existing is not None) or (condition == b"XX" and existing is None):
        return None
    evicted = ns.evictions_for(ident, now)
    if evicted is None:
        raise CommandError(errors.sem_full(name, ns.capacity))
    created = now if existing is None else existing.created
    expires = opts.deadline(now)
    ctx.emit(SemStore(name, ident, text, vector, kind, confidence, source, description,
                      meta, created, now, expires, evicted))
    if not withcreated:
        return OK
    return 1 if existing is None else 0


@command("amem.sem.recall", arity=-4, flags="readonly", key="RO access",
         complexity="O(log N) for the HNSW search, O(N) with EXACT", dialect=True,
         extensions="FP32 TEXT MINSIM KIND MINCONF PREFIX EF EXACT WITHVECTORS")
def sem_recall(ctx: Context, argv: list[bytes]) -> Any:
    """AMEM.SEM.RECALL ns k (FP32 blob | v1 ... vdim | TEXT query) [MINSIM x] [KIND kind] [MINCONF c]
        [PREFIX p] [EF n] [EXACT] [WITHVECTORS]
    Returns up to k facts nearest to a vector (or to a text, embedded by the namespace's embedder),
    best first, filtered inside the search.
    """
    args = Args(argv, 1)
    name = args.ident("ns")
    ns = _namespace(ctx, name)
    k = args.int("k", 1, MAX_K)
    query: bytes | None = None
    first = args.peek()
    if first is not None and first.upper() == b"TEXT":
        args.next("TEXT")
        query = args.text("TEXT")
        vector = b""
    else:
        vector = read_vector(args, ns)
    filters = FactFilter()
    given = _RECALL_OPTIONS.read(args, filters.take)
    minsim: float | None = given.get(b"MINSIM")
    ef: int | None = given.get(b"EF")
    exact = b"EXACT" in given
    withvectors = b"WITHVECTORS" in given

    def recall(vector: bytes) -> Any:
        return _recall(ctx, name, vector, k, minsim, filters, ef, exact, withvectors)

    if query is not None:
        return embed_then(ctx, "amem.sem.recall", argv, embedder_of(ns, "RECALL ... TEXT"),
                          [query], lambda vectors: recall(vectors[0]))
    return recall(vector)


def _recall(ctx: Context, name: bytes, vector: bytes, k: int, minsim: float | None,
            filters: FactFilter, ef: int | None, exact: bool, withvectors: bool) -> Any:
    ns = _namespace(ctx, name)
    if len(vector) != 4 * ns.dim:  # dropped and created again meanwhile with another dim
        raise CommandError(errors.dim_count(ns.dim, len(vector) // 4))
    planned = ns.recall_deferred(vector, k, ctx.now_ms, minsim=minsim, kind=filters.kind,
                                 minconf=filters.minconf, prefix=filters.prefix, ef=ef,
                                 exact=exact)
    if isinstance(planned, PendingSearch):
        deferred = _search_elsewhere(ctx, ns, planned, withvectors)
        if deferred is not None:
            return deferred
        hits = planned.run_in_place(ctx.now_ms)
    else:
        hits = planned
    return [_fact_record(ns, fact, similarity, withvectors) for fact, similarity in hits]


def _search_elsewhere(ctx: Context, ns: Namespace, pending: PendingSearch,
                      withvectors: bool) -> Deferred | None:
    """Run ``pending`` on a search thread (``commands/vector_threads.py``, shared with the
    vector sets); the Deferred resolves on the loop thread. None when the search must run
    in place (inside MULTI/EXEC, on a replica's link, without a loop or service)."""
    store = ctx.db.sem

    def finish() -> list[Any]:
        hits = pending.finish(ctx.core.clock.now_ms())
        return [_fact_record(ns, fact, sim, withvectors) for fact, sim in hits]

    return search_elsewhere(ctx, ns, pending.breadth, pending.run, finish,
                            current=lambda: store.get(ns.name) is ns, gone=[],
                            name="amem.sem.recall")


@command("amem.sem.search", arity=-5, flags="readonly", key="RO access",
         complexity="O(P) with P the postings of the query's terms, plus O(log N) for the HNSW "
                    "search with VECTOR")
def sem_search(ctx: Context, argv: list[bytes]) -> Any:
    """AMEM.SEM.SEARCH ns k TEXT query [VECTOR (FP32 blob | v1 ... vdim)] [FUSION RRF|LINEAR] [ALPHA a]
        [MINSCORE x] [KIND kind] [MINCONF c] [PREFIX p]
    Returns up to k facts by BM25 text search, or hybrid: BM25 fused with a vector search (RRF or
    LINEAR; the namespace's embedder embeds the query when VECTOR is left out), best first.
    """
    args = Args(argv, 1)
    ns = _namespace(ctx, args.ident("ns"))
    k = args.int("k", 1, MAX_K)
    filters = FactFilter()
    options = Options(_SEARCH_OPTIONS,
                      {**_SEARCH_READERS, b"VECTOR": lambda args, given: read_vector(args, ns)})
    given = options.read(args, filters.take)
    text: bytes | None = given.get(b"TEXT")
    vector: bytes | None = given.get(b"VECTOR")
    fusion: str | None = given.get(b"FUSION")
    alpha: float | None = given.get(b"ALPHA")
    minscore: float | None = given.get(b"MINSCORE")
    if text is None:
        raise CommandError("ERR syntax error: AMEM.SEM.SEARCH needs TEXT query")
    embeds = vector is None and ns.embedder is not None  # hybrid with the text's embedding
    if vector is None and not embeds and (fusion is not None or alpha is not None):
        raise CommandError("ERR syntax error: FUSION and ALPHA need VECTOR (nothing to fuse)")
    if alpha is not None and fusion != "LINEAR":
        raise CommandError("ERR syntax error: ALPHA applies to FUSION LINEAR only")
    name = ns.name
    query = text

    def search(vector: bytes | None) -> list[Any]:
        ns = _namespace(ctx, name)
        if vector is not None and len(vector) != 4 * ns.dim:
            raise CommandError(errors.dim_count(ns.dim, len(vector) // 4))
        hits = ns.search(query, k, ctx.now_ms, vector=vector, fusion=fusion or DEFAULT_FUSION,
                         alpha=DEFAULT_ALPHA if alpha is None else alpha, minscore=minscore,
                         kind=filters.kind, minconf=filters.minconf, prefix=filters.prefix)
        return [_search_record(hit) for hit in hits]

    if embeds:
        return embed_then(ctx, "amem.sem.search", argv, ns.embedder or "", [query],
                          lambda vectors: search(vectors[0]))
    return search(vector)


def _search_record(hit: SearchHit) -> Any:
    return hit.fact.record(hit.similarity, score=hit.score, text_score=hit.text_score)


@command("amem.sem.get", arity=-3, flags="readonly fast", key="RO access")
def sem_get(ctx: Context, argv: list[bytes]) -> Any:
    """AMEM.SEM.GET ns id [WITHVECTOR]
    Returns one fact (without similarity), or null.
    """
    args = Args(argv, 1)
    name = args.ident("ns")
    ident = args.ident("id")
    withvector = args.only_flag(b"WITHVECTOR")
    ns = ctx.db.sem.get(name)
    fact = None if ns is None else ns.get(ident, ctx.now_ms)
    if ns is None or fact is None:
        return None
    return _fact_record(ns, fact, None, withvector)


@command("amem.sem.del", arity=-3, flags="write", key="RW delete",
         complexity="O(N) with N the ids named")
def sem_del(ctx: Context, argv: list[bytes]) -> int:
    """AMEM.SEM.DEL ns id [id ...]
    Deletes facts and returns how many existed.
    """
    args = Args(argv, 1)
    name = args.ident("ns")
    wanted = [args.ident("id")]
    while args:
        wanted.append(args.ident("id"))
    ns = ctx.db.sem.get(name)
    if ns is None:
        return 0
    now = ctx.now_ms
    held = [ident for ident in dict.fromkeys(wanted) if ns.get(ident, now) is not None]
    if held:
        ctx.emit(SemDel(name, held))
    return len(held)


@command("amem.sem.list", arity=-2, flags="readonly", key="RO access",
         complexity="O(log N + M) with M the facts looked at", dialect=True,
         extensions="PREFIX KIND CURSOR COUNT")
def sem_list(ctx: Context, argv: list[bytes]) -> list[Any]:
    """AMEM.SEM.LIST ns [PREFIX p] [KIND kind] [CURSOR c] [COUNT n]
    Lists the ids of a namespace's facts in id order; with CURSOR or COUNT a page of facts at a
    time: [next-cursor, [facts]].
    """
    args = Args(argv, 1)
    name = args.ident("ns")
    given = _LIST_OPTIONS.read(args)
    prefix: bytes | None = given.get(b"PREFIX")
    kind: bytes | None = given.get(b"KIND")
    after: bytes | None = given.get(b"CURSOR")
    count: int = given.get(b"COUNT", DEFAULT_LIST_COUNT)
    paged = b"CURSOR" in given or b"COUNT" in given  # hotkv's paged form
    ns = ctx.db.sem.get(name)
    if not paged:  # the dialect's form: every id, no cursor
        if ns is None:
            return []
        _, every = ns.list_facts(ctx.now_ms, prefix=prefix, kind=kind, count=len(ns.facts))
        return [fact.id for fact in every]
    if ns is None:
        return [b"0", []]
    resume, facts = ns.list_facts(ctx.now_ms, after=after, prefix=prefix, kind=kind, count=count)
    cursor = b"0" if resume is None else resume.hex().encode()
    return [cursor, [fact.record() for fact in facts]]


@command("amem.sem.info", arity=2, flags="readonly fast", key="RO access")
def sem_info(ctx: Context, argv: list[bytes]) -> dict[str, Any] | None:
    """AMEM.SEM.INFO ns
    Returns a namespace's dim, metric, count, capacity, evict, m, ef_construction, ef and its last
    recall self-check.
    """
    ns = ctx.db.sem.get(Args(argv, 1).ident("ns"))
    if ns is None:
        return None
    info: dict[str, Any] = {
        "dim": ns.dim,
        "metric": ns.metric,
        "count": ns.live_count(ctx.now_ms),
        "capacity": ns.capacity,
        "evict": ns.evict,
        "m": ns.m,
        "ef_construction": ns.ef_construction,
        "ef": ns.ef,
    }
    if ns.embedder is not None:
        info["embedder"] = ns.embedder
    if ns.recall_estimate is not None:  # left out until a self-check has run
        info["recall_estimate"] = ns.recall_estimate
        info["recall_sample"] = ns.recall_sample
        info["recall_checked"] = ns.recall_checked
    return info


@command("amem.sem.drop", arity=2, flags="write", key="RM delete",
         complexity="O(N) with N the facts held")
def sem_drop(ctx: Context, argv: list[bytes]) -> int:
    """AMEM.SEM.DROP ns
    Drops a namespace and all its facts; 1 if it existed, else 0.
    """
    name = Args(argv, 1).ident("ns")
    return delete_one(ctx, ctx.db.sem, name, SemDrop(name))
