"""Semantic memory: per namespace, facts with an embedding vector, recalled by meaning.

A namespace holds one hnswlib HNSW index (space ``cosine``, ``ip`` or ``l2``) and, beside
it, each fact's metadata. Vectors live only inside hnswlib (read back with ``get_items``
for WITHVECTORS); the Python side keeps one small slotted :class:`Fact` per id.

Labels (hnswlib's integer ids) are process-local: they never appear in effects (a
snapshot keeps them only because the saved index is keyed by them). A deleted fact is
``mark_deleted`` and its label goes to a free list; the next new fact takes it back and
hnswlib updates the element in place (``add_items`` on a deleted label un-marks it), so a
namespace under eviction churn never grows past its high-water mark. The index starts at
:data:`INITIAL_ELEMENTS` slots and grows with ``resize_index`` (doubling up to
:data:`DOUBLING_MAX` slots, then by a quarter: hnswlib keeps a 40-byte lock and more for
every slot, used or not); it is created on the first store and released when the
namespace becomes empty (an hnswlib index costs about 2.6 MB of fixed lock tables).

Effects (records in ``sem_effects``: SemCreate, SemUpdate, SemStore, SemDel, SemDrop;
every server-chosen value fixed by the handler), on the wire::

    ["sem.create", ns, dim, metric, m, ef_construction, ef, capacity, evict, embedder|None]
    ["sem.update", ns, {"ef": n, "capacity": n, "evict": policy}, [evicted ids]]
    ["sem.store", ns, id, text, fp32-le-bytes, kind, confidence, source|None,
     description|None, meta|None, created, updated, expires|None, [evicted ids]]
    ["sem.del", ns, [id, ...]]
    ["sem.drop", ns]

Recall quality: hnswlib's search breadth is ``max(EF, k)``; on unstructured data (random
vectors) that gives a poor recall@10 at EF 64 (about 0.65 for 10,000 random 128-d
vectors), so the breadth is also raised to :data:`BREADTH_PER_HIT` per requested hit (up
to :data:`AUTO_BREADTH_MAX`). EF therefore only ever widens a search.

Filters (KIND, MINCONF, PREFIX, not expired) run inside the search. Expired facts are
purged before a search. When few facts match (counted for KIND and PREFIX, judged from a
sample otherwise) the search is exact (numpy) over just those, because hnswlib would have
to walk most of the graph to find them; otherwise hnswlib's ``filter=`` callable keeps
non-matching facts out of the result while the graph walk goes on, and if it still finds
fewer than ``k`` the search falls back to an exact scan of every matching fact.

Text: each namespace also keeps a BM25 index (:mod:`hotkv_server.stores.text`) over every fact's
text and description, keyed by label and changed in the same places as the HNSW index
(store, replace, delete, expiry, eviction), so live writes, AOF replay and replicas hold the
same one. It is derived data: snapshots leave it out and :meth:`Namespace.from_snapshot`
rebuilds it from the facts. :meth:`Namespace.search` ranks by it alone or fuses it with
the HNSW ranking (RRF or LINEAR). :class:`RecallCheck` measures the HNSW search's recall
against exact search, a slice at a time, for INFO (per process, never in snapshots).

Searches off the event loop: :meth:`Namespace.recall_deferred` prepares a RECALL on the
loop thread (expiry, filters, the exact-search shortcuts) and, when hnswlib must search,
hands back a :class:`PendingSearch` whose :meth:`~PendingSearch.run` may run on another
thread (hnswlib's ``knn_query`` releases the GIL) and whose :meth:`~PendingSearch.finish`
builds the hits on the loop thread. hnswlib does not allow ``add_items``,
``mark_deleted`` or ``resize_index`` while a search runs, and ``set_ef`` is shared by
every search of an index, so the namespace keeps the futures of its searches in flight
(:meth:`Namespace.track`) and every path that changes the index or its ef first waits for
them (:meth:`Namespace.quiesce`: put, delete, snapshot, a synchronous search, the recall
self-check, drop, flush, restore). Searches take milliseconds, so that wait is short.
"""

from __future__ import annotations

import bisect
import concurrent.futures
import heapq
import math
import os
import random
from collections.abc import Callable, Iterable, Iterator
from typing import Any, NamedTuple, TypedDict, Unpack

import hnswlib
import numpy as np

from hotkv_server.stores.base import EffectError, Store
from hotkv_server.stores.sem_effects import SemCreate, SemDel, SemDrop, SemStore, SemUpdate
from hotkv_server.stores.text import TextIndex, doc_terms

METRICS: tuple[str, ...] = ("COSINE", "IP", "L2")
EVICT_POLICIES: tuple[str, ...] = ("LOWCONF", "OLDEST", "NONE")
_SPACES = {"COSINE": "cosine", "IP": "ip", "L2": "l2"}

DEFAULT_METRIC = "COSINE"
DEFAULT_M = 16
DEFAULT_EF_CONSTRUCTION = 200
DEFAULT_EF = 64
DEFAULT_EVICT = "LOWCONF"
DEFAULT_KIND = b"fact"
MAX_DIM = 4096

#: first size of an index; it doubles when full up to DOUBLING_MAX slots, then grows by a
#: quarter (each slot costs ~50 bytes of hnswlib lock, level and visited-list tables even
#: while unused: doubling at 65,536 left 100,000 facts paying for 131,072 slots)
INITIAL_ELEMENTS = 16
DOUBLING_MAX = 1 << 16
#: search breadth per requested hit, so recall@k stays high on unstructured data
BREADTH_PER_HIT = 32
AUTO_BREADTH_MAX = 1024
#: facts looked at to judge how selective a MINCONF-style filter is
_SAMPLE = 256
#: vectors read back from hnswlib at once by an exact search (bounds its memory)
EXACT_CHUNK = 8192
#: from this many vectors (and an eighth of the index) on, read them from one copy of the
#: whole index instead of one by one (see Namespace.vectors)
BULK_READ_MIN = 512

#: AMEM.SEM.SEARCH: the fusions, RRF's rank constant and LINEAR's default vector weight
FUSIONS: tuple[str, ...] = ("RRF", "LINEAR")
DEFAULT_FUSION = "RRF"
RRF_K = 60
DEFAULT_ALPHA = 0.7
#: hits taken from each side of a hybrid search before fusing: max(HYBRID_DEPTH, 2k)
HYBRID_DEPTH = 20
HYBRID_DEPTH_MAX = 2000

#: the recall self-check: hits compared per query, and queries per check
RECALL_K = 10
RECALL_SAMPLE = 32

_VECTOR_DTYPE = np.dtype("<f4")
_ONE = 1.0  # the default confidence, shared by every fact that has it
#: dtypes of the arrays in hnswlib's serialized index (``Index.__getstate__``)
_INDEX_ARRAYS: dict[str, np.dtype[Any]] = {
    "label_lookup_external": np.dtype(np.uint64),
    "label_lookup_internal": np.dtype(np.uint32),
    "element_levels": np.dtype(np.int32),
    "data_level0": np.dtype(np.int8),
    "link_lists": np.dtype(np.int8),
}


class Fact:
    """One fact's metadata; its vector is in the namespace's index under ``label``."""

    __slots__ = (
        "confidence",
        "created",
        "description",
        "expires",
        "id",
        "kind",
        "label",
        "meta",
        "source",
        "text",
        "updated",
    )

    def __init__(
        self,
        ident: bytes,
        label: int,
        text: bytes,
        kind: bytes,
        confidence: float,
        source: bytes | None,
        description: bytes | None,
        meta: bytes | None,
        created: int,
        updated: int,
        expires: int | None,
    ) -> None:
        self.id = ident
        self.label = label
        self.text = text
        self.kind = kind
        self.confidence = confidence
        self.source = source
        self.description = description
        self.meta = meta
        self.created = created
        self.updated = updated
        self.expires = expires

    def alive(self, now_ms: int) -> bool:
        expires = self.expires
        return expires is None or expires > now_ms

    def record(
        self,
        similarity: float | None = None,
        *,
        score: float | None = None,
        text_score: float | None = None,
    ) -> dict[str, Any]:
        """The reply record in contract order; absent optional fields are left out.

        A SEARCH hit has ``score`` (fused) and ``text_score`` (BM25) after ``text`` and
        before ``similarity``."""
        rec: dict[str, Any] = {"id": self.id, "text": self.text}
        if score is not None:
            rec["score"] = score
        if text_score is not None:
            rec["text_score"] = text_score
        if similarity is not None:
            rec["similarity"] = similarity
        rec["kind"] = self.kind
        rec["confidence"] = self.confidence
        if self.source is not None:
            rec["source"] = self.source
        if self.description is not None:
            rec["description"] = self.description
        if self.meta is not None:
            rec["meta"] = self.meta
        rec["created"] = self.created
        rec["updated"] = self.updated
        if self.expires is not None:
            rec["expires"] = self.expires
        return rec

    def row(self) -> list[Any]:
        """The fact as snapshot data (without the vector, which is in the saved index)."""
        return [
            self.id,
            self.label,
            self.text,
            self.kind,
            self.confidence,
            self.source,
            self.description,
            self.meta,
            self.created,
            self.updated,
            self.expires,
        ]


def fact_terms(fact: Fact) -> list[str]:
    """The BM25 terms of a fact: its text and description."""
    if fact.description is None:
        return doc_terms(fact.text)
    return doc_terms(fact.text + b"\n" + fact.description)


class RecallOptions(TypedDict, total=False):
    """The options of :meth:`Namespace.recall_deferred` (and so of ``recall``)."""

    minsim: float | None
    kind: bytes | None
    minconf: float | None
    prefix: bytes | None
    ef: int | None
    exact: bool


class SearchHit(NamedTuple):
    """One AMEM.SEM.SEARCH hit: the fact, the fused score, BM25, similarity (hybrid only)."""

    fact: Fact
    score: float
    text_score: float
    similarity: float | None


def search_breadth(ef: int, k: int) -> int:
    """hnswlib's ``ef`` for a search of ``k`` hits with EF ``ef`` (see the module notes)."""
    return max(ef, k, min(BREADTH_PER_HIT * k, AUTO_BREADTH_MAX))


def grown_capacity(capacity: int) -> int:
    """The next size of a full index of ``capacity`` slots (see INITIAL_ELEMENTS)."""
    if capacity < DOUBLING_MAX:
        return 2 * capacity
    return capacity + capacity // 4


def prefix_end(prefix: bytes) -> bytes | None:
    """The smallest byte string greater than every string starting with ``prefix``."""
    stripped = prefix.rstrip(b"\xff")
    if not stripped:
        return None
    return stripped[:-1] + bytes([stripped[-1] + 1])


def _fact_id(fact: Fact) -> bytes:
    return fact.id


def _score_groups(
    docs: np.ndarray, scores: np.ndarray, first: int
) -> Iterator[tuple[np.ndarray, float]]:
    """``(docs, score)`` groups of equal score, best first. Only the top ``first`` (and
    whatever ties with them) are sorted up front; the rest only if the caller goes on."""
    if not len(docs):
        return
    if len(docs) > first > 0:
        threshold = scores[np.argpartition(-scores, first - 1)[first - 1]]
        top = scores >= threshold
        slices = [np.flatnonzero(top), np.flatnonzero(~top)]
    else:
        slices = [np.arange(len(docs))]
    for part in slices:
        if not len(part):
            continue
        order = part[np.argsort(-scores[part], kind="stable")]
        ordered = scores[order]
        cuts = np.flatnonzero(ordered[1:] != ordered[:-1]) + 1
        for group in np.split(order, cuts):
            yield docs[group], float(scores[group[0]])


def _min_max(values: dict[bytes, float]) -> dict[bytes, float]:
    """Scores scaled to 0..1 over the candidates (all equal: 1, or 0 when all are <= 0)."""
    lo = min(values.values())
    hi = max(values.values())
    if hi > lo:
        return {key: (value - lo) / (hi - lo) for key, value in values.items()}
    return dict.fromkeys(values, 1.0 if hi > 0 else 0.0)


class Namespace:
    """One namespace: settings, the HNSW index, and the facts beside it."""

    def __init__(
        self,
        name: bytes,
        dim: int,
        metric: str = DEFAULT_METRIC,
        m: int = DEFAULT_M,
        ef_construction: int = DEFAULT_EF_CONSTRUCTION,
        ef: int = DEFAULT_EF,
        capacity: int = 0,
        evict: str = DEFAULT_EVICT,
        embedder: str | None = None,
    ) -> None:
        if metric not in _SPACES:
            raise EffectError(f"unknown metric {metric!r}")
        if evict not in EVICT_POLICIES:
            raise EffectError(f"unknown eviction policy {evict!r}")
        self.name = name
        self.dim = dim
        self.metric = metric
        self.m = m
        self.ef_construction = ef_construction
        self.ef = ef
        self.capacity = capacity
        self.evict = evict
        #: the name of the embedder that turns this namespace's texts into vectors (a
        #: server subsystem, hotkv_server.embedding; the store only keeps the name)
        self.embedder = embedder
        #: id -> fact, least recently updated first (a store moves its id to the end)
        self.facts: dict[bytes, Fact] = {}
        self._index: hnswlib.Index | None = None
        self._by_label: list[Fact | None] = []
        self._free: list[int] = []
        self._kind_counts: dict[bytes, int] = {}  # facts per kind, to judge KIND filters
        self._kind_names: dict[bytes, bytes] = {}  # one shared bytes object per kind
        self._sorted: list[bytes] | None = None  # ids in order, built on first need
        self._expiry: list[tuple[int, bytes]] = []  # (deadline, id), stale entries skipped
        # LOWCONF eviction order, built on first need: (confidence, tick, id) + id -> tick
        self._lowconf: list[tuple[float, int, bytes]] | None = None
        self._ticks: dict[bytes, int] = {}
        self._tick = 0
        #: BM25 over each fact's text and description, documents keyed by label
        self.text_index = TextIndex()
        #: bumped by every change of the facts (tells the recall self-check what is new)
        self.version = 0
        # the last recall self-check (derived, per process: not in snapshots)
        self.recall_estimate: float | None = None
        self.recall_sample = 0
        self.recall_checked = 0
        self.recall_version = -1
        #: searches running on other threads (futures), all at hnswlib ef _inflight_ef
        self._inflight: list[concurrent.futures.Future[Any]] = []
        self._inflight_ef = 0
        self._inflight_pid = 0

    # --- searches on other threads ------------------------------------------------------
    def quiesce(self) -> None:
        """Wait for the searches in flight on other threads; then the index may change.

        In a forked child (a rewrite writing the base) the threads do not exist: nothing to
        wait for, the copy of the index is not being searched."""
        if not self._inflight:
            return
        if self._inflight_pid == os.getpid():
            concurrent.futures.wait(self._inflight)
        self._inflight = []
        if self._index is not None:
            self._index.set_ef(self.ef)

    def begin_search(self, pending: PendingSearch) -> None:
        """Before ``pending`` runs on another thread: set hnswlib's ef for it (waiting first
        for searches in flight at another ef, since ef is one value per index)."""
        if self._inflight and self._inflight_ef != pending.breadth:
            self.quiesce()
        if not self._inflight and self._index is not None:
            self._index.set_ef(pending.breadth)
            self._inflight_ef = pending.breadth

    def track(self, future: concurrent.futures.Future[Any]) -> None:
        """``future`` runs a search of this namespace (after :meth:`begin_search`)."""
        self._inflight.append(future)
        self._inflight_pid = os.getpid()

    def untrack(self, future: concurrent.futures.Future[Any]) -> None:
        """The search of ``future`` is over (called on the loop thread)."""
        try:
            self._inflight.remove(future)
        except ValueError:
            return  # a quiesce already waited for it
        if not self._inflight and self._index is not None:
            self._index.set_ef(self.ef)

    def searches_in_flight(self) -> int:
        return len(self._inflight)

    # --- settings -----------------------------------------------------------------
    def settings(self) -> list[Any]:
        settings = [self.dim, self.metric, self.m, self.ef_construction, self.ef,
                    self.capacity, self.evict]
        if self.embedder is not None:
            settings.append(self.embedder)
        return settings

    def change(self, changes: dict[str, Any]) -> None:
        """Apply the changeable settings (EF, CAPACITY, EVICT) of a ``sem.update``."""
        for key, value in changes.items():
            if key == "ef":
                self.ef = int(value)
            elif key == "capacity":
                self.capacity = int(value)
            elif key == "evict":
                if value not in EVICT_POLICIES:
                    raise EffectError(f"unknown eviction policy {value!r}")
                self.evict = value
            else:
                raise EffectError(f"setting {key!r} cannot change")
        if self.capacity == 0 or self.evict != "LOWCONF":
            self._drop_lowconf()

    # --- reads --------------------------------------------------------------------
    def get(self, ident: bytes, now_ms: int) -> Fact | None:
        fact = self.facts.get(ident)
        if fact is None or not fact.alive(now_ms):
            return None
        return fact

    def live_count(self, now_ms: int) -> int:
        """Facts not expired at ``now_ms`` (expired ones may still wait for the purge)."""
        return len(self.facts) - len(self._due(now_ms))

    def _due(self, now_ms: int) -> set[bytes]:
        """Ids held whose deadline has passed: a walk of the heap's due top only."""
        heap = self._expiry
        facts = self.facts
        due: set[bytes] = set()
        stack = [0] if heap else []
        while stack:
            i = stack.pop()
            deadline, ident = heap[i]
            if deadline > now_ms:
                continue
            fact = facts.get(ident)
            if fact is not None and fact.expires == deadline:
                due.add(ident)
            for child in (2 * i + 1, 2 * i + 2):
                if child < len(heap):
                    stack.append(child)
        return due

    def vector(self, fact: Fact) -> bytes:
        """The stored vector as FP32 little-endian bytes (unit length under COSINE)."""
        assert self._index is not None
        data = self._index.get_items([fact.label])
        return np.asarray(data, dtype=_VECTOR_DTYPE).reshape(-1).tobytes()

    def sorted_ids(self) -> list[bytes]:
        if self._sorted is None:
            self._sorted = sorted(self.facts)
        return self._sorted

    def list_facts(
        self,
        now_ms: int,
        *,
        after: bytes | None = None,
        prefix: bytes | None = None,
        kind: bytes | None = None,
        count: int = 100,
    ) -> tuple[bytes | None, list[Fact]]:
        """Up to ``count`` live facts in id order after ``after``; the id to resume after
        (None when the walk is complete)."""
        ids = self.sorted_ids()
        start, end = self._prefix_range(prefix)
        if after is not None:
            start = max(start, bisect.bisect_right(ids, after))
        facts = self.facts
        out: list[Fact] = []
        for i in range(start, end):
            fact = facts[ids[i]]
            if not fact.alive(now_ms) or (kind is not None and fact.kind != kind):
                continue
            if len(out) == count:
                return out[-1].id, out  # one more match exists: the walk goes on
            out.append(fact)
        return None, out

    def _prefix_range(self, prefix: bytes | None) -> tuple[int, int]:
        """Where the ids starting with ``prefix`` are in :meth:`sorted_ids`."""
        ids = self.sorted_ids()
        if not prefix:
            return 0, len(ids)
        lo = bisect.bisect_left(ids, prefix)
        bound = prefix_end(prefix)
        return lo, len(ids) if bound is None else bisect.bisect_left(ids, bound, lo)

    # --- recall -------------------------------------------------------------------
    def _as_indexed(self, vector: bytes) -> np.ndarray:
        """FP32 bytes -> the vector as the index holds it (unit length under COSINE)."""
        vec = np.frombuffer(vector, dtype=_VECTOR_DTYPE)
        if vec.shape[0] != self.dim:
            raise EffectError(f"vector of {vec.shape[0]} values in a namespace of dim {self.dim}")
        if self.metric == "COSINE":  # normalised in float64 so huge values cannot overflow
            wide = vec.astype(np.float64)
            vec = (wide / np.linalg.norm(wide)).astype(np.float32)
        return vec

    def recall(
        self, vector: bytes, k: int, now_ms: int, **options: Unpack[RecallOptions]
    ) -> list[tuple[Fact, float]]:
        """Up to ``k`` live facts passing the filters, most similar first, with similarity
        (the options are :meth:`recall_deferred`'s).

        ``exact``: a brute-force (numpy) scan of every matching fact instead of HNSW."""
        planned = self.recall_deferred(vector, k, now_ms, **options)
        if isinstance(planned, PendingSearch):
            return planned.run_in_place(now_ms)
        return planned

    def recall_deferred(
        self,
        vector: bytes,
        k: int,
        now_ms: int,
        *,
        minsim: float | None = None,
        kind: bytes | None = None,
        minconf: float | None = None,
        prefix: bytes | None = None,
        ef: int | None = None,
        exact: bool = False,
    ) -> list[tuple[Fact, float]] | PendingSearch:
        """:meth:`recall`, except that when the answer needs an hnswlib search, that search
        comes back unrun, as a :class:`PendingSearch` (see the module notes)."""
        self.purge_expired(now_ms)  # the search then never meets an expired fact
        if self._index is None or not self.facts:
            return []
        query = self._as_indexed(vector)
        if exact:
            check = self._filter(kind, minconf, prefix)
            facts: Iterable[Fact] = self.facts.values()
            hits = self._exact(query, list(facts if check is None else filter(check, facts)), k)
        else:
            breadth = search_breadth(self.ef if ef is None else ef, k)
            planned = self._plan_nearest(query, k, breadth, kind, minconf, prefix)
            if planned is None:
                return PendingSearch(self, query, k, breadth,
                                     self._filter(kind, minconf, prefix), minsim)
            hits = planned
        if minsim is not None:
            hits = [hit for hit in hits if hit[1] >= minsim]
        return hits

    def _nearest(
        self,
        query: np.ndarray,
        k: int,
        breadth: int,
        kind: bytes | None,
        minconf: float | None,
        prefix: bytes | None,
        now_ms: int,
    ) -> list[tuple[Fact, float]]:
        """The HNSW side of SEARCH: up to ``k`` matching facts, nearest first."""
        hits = self._plan_nearest(query, k, breadth, kind, minconf, prefix)
        if hits is None:
            check = self._filter(kind, minconf, prefix)
            hits = PendingSearch(self, query, k, breadth, check, None).run_in_place(now_ms)
        return hits

    def _plan_nearest(
        self,
        query: np.ndarray,
        k: int,
        breadth: int,
        kind: bytes | None,
        minconf: float | None,
        prefix: bytes | None,
    ) -> list[tuple[Fact, float]] | None:
        """The hits when an exact search over few matching facts is the cheaper way, or
        None when hnswlib must search the graph."""
        check = self._filter(kind, minconf, prefix)
        hits: list[tuple[Fact, float]] | None = None
        if check is not None:
            pool_size, pool = self._pool(prefix)
            bound = pool_size if kind is None else min(pool_size, self._kind_counts.get(kind, 0))
            counted = minconf is None and (kind is None or not prefix)  # bound is exact
            estimate = bound if counted else min(bound, self._estimated_matches(check))
            if bound == 0:
                hits = []
            elif self._exact_is_cheaper(estimate, breadth):
                # few match: hnswlib would walk much of the graph to find them
                limit = bound if counted else max(4 * breadth, 2 * int(estimate))
                matches = self._matching(pool(), check, limit)
                if matches is not None:
                    hits = self._exact(query, matches, k)
        return hits

    def _filter(
        self, kind: bytes | None, minconf: float | None, prefix: bytes | None
    ) -> Callable[[Fact], bool] | None:
        if kind is None and minconf is None and not prefix:
            return None

        def check(fact: Fact) -> bool:
            return (
                (kind is None or fact.kind == kind)
                and (minconf is None or fact.confidence >= minconf)
                and (not prefix or fact.id.startswith(prefix))
            )

        return check

    def _pool(self, prefix: bytes | None) -> tuple[int, Callable[[], Iterable[Fact]]]:
        """The facts a filter with ``prefix`` looks at: how many, and a function listing them."""
        if not prefix:
            facts = self.facts
            return len(facts), facts.values
        ids = self.sorted_ids()
        lo, hi = self._prefix_range(prefix)
        by_id = self.facts

        def in_range() -> Iterable[Fact]:
            return [by_id[ident] for ident in ids[lo:hi]]

        return hi - lo, in_range

    def _estimated_matches(self, check: Callable[[Fact], bool]) -> float:
        """How many facts pass ``check``, judged from up to SAMPLE evenly spaced ones."""
        by_label = self._by_label
        step = max(1, len(by_label) // _SAMPLE)
        seen = passed = 0
        for label in range(0, len(by_label), step):
            fact = by_label[label]
            if fact is not None:
                seen += 1
                passed += check(fact)
        return len(self.facts) * passed / seen if seen else 0.0

    @staticmethod
    def _matching(
        pool: Iterable[Fact], check: Callable[[Fact], bool], limit: int
    ) -> list[Fact] | None:
        """The facts of ``pool`` passing ``check``; None once more than ``limit`` do (the
        sample misjudged it and the graph search is the cheaper way after all)."""
        out: list[Fact] = []
        for fact in pool:
            if check(fact):
                out.append(fact)
                if len(out) > limit:
                    return None
        return out

    def _exact_is_cheaper(self, matches: float, breadth: int) -> bool:
        # Fewer matches than the breadth make hnswlib walk the whole graph; beyond that,
        # reading a vector back (get_items) costs about 30 graph steps, and the walk
        # visits about breadth * n / matches facts before it has enough.
        return matches <= breadth or matches * matches <= breadth * len(self.facts) / 32

    def _similarity_of_distance(self, dist: float) -> float:
        if self.metric == "L2":  # hnswlib's l2 distance is squared
            return 1.0 / (1.0 + math.sqrt(max(dist, 0.0)))
        return 1.0 - dist  # cosine and ip distances are 1 - dot

    def vectors(self, labels: list[int], *, bulk: bool = True) -> np.ndarray:
        """The indexed vectors of ``labels`` as a (len, dim) float32 array.

        hnswlib's ``get_items`` hands each value back as a Python float (some 60 ns a
        value); for more than BULK_READ_MIN vectors and a good share of the index, one copy
        of the whole index (``__getstate__``, a memory copy) is much faster. ``bulk=False``
        never copies the index (the self-check reads small slices between commands)."""
        index = self._index
        assert index is not None
        if not labels:
            return np.zeros((0, self.dim), dtype=np.float32)
        if bulk and len(labels) >= BULK_READ_MIN and 8 * len(labels) >= index.get_current_count():
            return self._bulk_vectors(labels)
        return np.asarray(index.get_items(labels), dtype=np.float32).reshape(
            len(labels), self.dim)

    def _bulk_vectors(self, labels: list[int]) -> np.ndarray:
        """``labels``' vectors read out of one copy of hnswlib's level-0 memory, whose
        elements are ``[links][vector][label]`` (the layout its own pickling uses)."""
        assert self._index is not None
        state = self._index.__getstate__()[0]
        size = state["size_data_per_element"]
        count = state["cur_element_count"]
        raw = np.asarray(state["data_level0"]).view(np.uint8)[: count * size].reshape(count, size)
        start, at = state["offset_data"], state["label_offset"]
        element_labels = np.ascontiguousarray(raw[:, at:at + 8]).view("<u8").reshape(count)
        row_of = np.full(len(self._by_label), -1, dtype=np.int64)
        row_of[element_labels.astype(np.int64)] = np.arange(count)
        rows = row_of[np.asarray(labels, dtype=np.int64)]
        return np.ascontiguousarray(raw[rows, start:start + 4 * self.dim]).view("<f4").reshape(
            len(labels), self.dim)

    def similarities(self, vectors: np.ndarray, queries: np.ndarray) -> np.ndarray:
        """Similarity of each row of ``vectors`` to a query (1-d) or to each query (2-d:
        one column per query), as RECALL reports it."""
        if self.metric != "L2":
            return vectors @ queries.T
        if queries.ndim == 1:
            diff = vectors - queries
            return 1.0 / (1.0 + np.sqrt(np.einsum("ij,ij->i", diff, diff)))
        # |v - q|^2 = |v|^2 - 2 v.q + |q|^2, clipped at 0 against rounding
        squared = (np.einsum("ij,ij->i", vectors, vectors)[:, None] - 2.0 * (vectors @ queries.T)
                   + np.einsum("ij,ij->i", queries, queries)[None, :])
        return 1.0 / (1.0 + np.sqrt(np.maximum(squared, 0.0)))

    def _exact(self, query: np.ndarray, facts: list[Fact], k: int) -> list[tuple[Fact, float]]:
        """Exact top ``k`` of ``facts`` by similarity to ``query`` (ties: earlier first),
        reading at most EXACT_CHUNK vectors back at a time."""
        if not facts:
            return []
        index = self._index
        assert index is not None
        if len(facts) <= EXACT_CHUNK or 8 * len(facts) >= index.get_current_count():
            # one read: few vectors, or enough of the index for one bulk copy of it
            sims = self.similarities(self.vectors([f.label for f in facts]), query)
            order = np.argsort(-sims, kind="stable")[:k]
            return [(facts[i], float(sims[i])) for i in order.tolist()]
        best_sims = np.zeros(0, dtype=np.float32)
        best_pos = np.zeros(0, dtype=np.intp)
        for start in range(0, len(facts), EXACT_CHUNK):
            chunk = facts[start:start + EXACT_CHUNK]
            sims = np.concatenate(
                [best_sims, self.similarities(self.vectors([f.label for f in chunk]), query)])
            pos = np.concatenate([best_pos, np.arange(start, start + len(chunk))])
            if len(sims) > k:
                keep = np.argpartition(-sims, k - 1)[:k]
                sims, pos = sims[keep], pos[keep]
            best_sims, best_pos = sims, pos
        order = np.lexsort((best_pos, -best_sims))
        return [(facts[int(best_pos[i])], float(best_sims[i])) for i in order.tolist()]

    # --- text search and hybrid search --------------------------------------------------
    def search(
        self,
        text: bytes,
        k: int,
        now_ms: int,
        *,
        vector: bytes | None = None,
        fusion: str = DEFAULT_FUSION,
        alpha: float = DEFAULT_ALPHA,
        minscore: float | None = None,
        kind: bytes | None = None,
        minconf: float | None = None,
        prefix: bytes | None = None,
    ) -> list[SearchHit]:
        """Up to ``k`` live facts passing the filters, best first. Without ``vector`` by
        BM25 alone (only facts sharing a term with ``text``); with it, the BM25 and the
        HNSW rankings (each ``max(HYBRID_DEPTH, 2k)`` deep, filtered inside) fused by RRF
        (sum of ``1 / (RRF_K + rank)``) or LINEAR (``alpha * vector + (1 - alpha) * text``,
        each min-max normalised over the candidates). Ties: higher BM25, then higher
        similarity, then id."""
        if fusion not in FUSIONS:
            raise EffectError(f"unknown fusion {fusion!r}")
        self.purge_expired(now_ms)
        if not self.facts:
            return []
        check = self._filter(kind, minconf, prefix)
        terms = self.text_index.query(text)
        if vector is None:
            hits = [SearchHit(fact, score, score, None)
                    for fact, score in self._text_ranked(terms, k, check)]
        else:
            query = self._as_indexed(vector)
            depth = min(HYBRID_DEPTH_MAX, max(HYBRID_DEPTH, 2 * k))
            by_text = self._text_ranked(terms, depth, check)
            breadth = max(search_breadth(self.ef, k), depth)
            by_vector = self._nearest(query, depth, breadth, kind, minconf, prefix, now_ms)
            hits = self._fuse(terms, query, by_text, by_vector, fusion, alpha, k)
        if minscore is not None:
            hits = [hit for hit in hits if hit.score >= minscore]
        return hits[:k]

    def _text_ranked(
        self, terms: list[str], want: int, check: Callable[[Fact], bool] | None
    ) -> list[tuple[Fact, float]]:
        """Up to ``want`` facts passing ``check`` by BM25, best first (ties: id order)."""
        docs, scores = self.text_index.scores(terms)
        by_label = self._by_label
        out: list[tuple[Fact, float]] = []
        for group_docs, score in _score_groups(docs, scores, 4 * want):
            facts = [by_label[doc] for doc in group_docs.tolist()]
            passing = [f for f in facts if f is not None and (check is None or check(f))]
            room = want - len(out)
            if len(passing) > room:  # a tie across the cut: the lowest ids go in
                passing = heapq.nsmallest(room, passing, key=_fact_id)
            else:
                passing.sort(key=_fact_id)
            out.extend((fact, score) for fact in passing)
            if len(out) >= want:
                break
        return out

    def _fuse(
        self,
        terms: list[str],
        query: np.ndarray,
        by_text: list[tuple[Fact, float]],
        by_vector: list[tuple[Fact, float]],
        fusion: str,
        alpha: float,
        k: int,
    ) -> list[SearchHit]:
        """The candidates of both rankings, best first: at least the top ``k`` and all that
        tie with the k-th."""
        facts: dict[bytes, Fact] = {}
        text_scores: dict[bytes, float] = {}
        sims: dict[bytes, float] = {}
        for fact, score in by_text:
            facts[fact.id] = fact
            text_scores[fact.id] = score
        for fact, sim in by_vector:
            facts[fact.id] = fact
            sims[fact.id] = sim
        if not facts:
            return []
        fused: dict[bytes, float]
        if fusion == "RRF":
            fused = dict.fromkeys(facts, 0.0)
            for ranking in (by_text, by_vector):
                for rank, (fact, _) in enumerate(ranking, start=1):
                    fused[fact.id] += 1.0 / (RRF_K + rank)
            # ranks decide: only the hits that can make the reply need the other score
            cutoff = sorted(fused.values(), reverse=True)[min(k, len(fused)) - 1]
            facts = {ident: fact for ident, fact in facts.items() if fused[ident] >= cutoff}
        # every hit reports both scores: fill in what the other side did not rank
        for ident, fact in facts.items():
            if ident not in text_scores:
                text_scores[ident] = self.text_index.score(terms, fact_terms(fact))
        unranked = [fact for ident, fact in facts.items() if ident not in sims]
        if unranked:
            values = self.similarities(self.vectors([f.label for f in unranked]), query)
            for fact, sim in zip(unranked, values.tolist(), strict=True):
                sims[fact.id] = float(sim)
        if fusion != "RRF":
            text_norm = _min_max(text_scores)
            vector_norm = _min_max(sims)
            fused = {ident: alpha * vector_norm[ident] + (1.0 - alpha) * text_norm[ident]
                     for ident in facts}
        order = sorted(facts, key=lambda i: (-fused[i], -text_scores[i], -sims[i], i))
        return [SearchHit(facts[i], fused[i], text_scores[i], sims[i]) for i in order]

    # --- eviction -----------------------------------------------------------------
    def evictions_for(self, ident: bytes, now_ms: int) -> list[bytes] | None:
        """Ids to evict so that storing ``ident`` fits the capacity; None means FULL."""
        if self.capacity == 0:
            return []
        self.purge_expired(now_ms)  # expired facts do not count against the capacity
        if ident in self.facts:
            return []  # a replacement does not grow the namespace
        return self.victims(len(self.facts) + 1 - self.capacity, self.evict)

    def victims(self, need: int, policy: str) -> list[bytes] | None:
        """The ``need`` facts ``policy`` evicts first ([] for none, None under NONE)."""
        if need <= 0:
            return []
        if policy == "NONE":
            return None
        if policy == "OLDEST":
            ids = iter(self.facts)
            return [next(ids) for _ in range(min(need, len(self.facts)))]
        if need == 1 and policy == self.evict:
            heap = self._lowconf_heap()
            ticks = self._ticks
            while heap:
                _conf, tick, ident = heap[0]
                if ticks.get(ident) == tick:
                    return [ident]
                heapq.heappop(heap)  # stale: replaced or deleted since
            return []
        # several at once (a lowered capacity): rank every fact, oldest first on ties
        ranked = sorted(enumerate(self.facts.values()), key=lambda p: (p[1].confidence, p[0]))
        return [fact.id for _, fact in ranked[:need]]

    def _lowconf_heap(self) -> list[tuple[float, int, bytes]]:
        if self._lowconf is None:
            self._ticks = {ident: tick for tick, ident in enumerate(self.facts)}
            self._tick = len(self._ticks)
            self._lowconf = [(f.confidence, self._ticks[f.id], f.id) for f in self.facts.values()]
            heapq.heapify(self._lowconf)
        return self._lowconf

    def _drop_lowconf(self) -> None:
        self._lowconf = None
        self._ticks = {}

    # --- writes (only through effects) ---------------------------------------------
    def put(
        self,
        ident: bytes,
        text: bytes,
        vector: bytes,
        kind: bytes,
        confidence: float,
        source: bytes | None,
        description: bytes | None,
        meta: bytes | None,
        created: int,
        updated: int,
        expires: int | None,
    ) -> bool:
        """Store or replace the fact under ``ident``; True when the id was not held."""
        self.quiesce()  # add_items / resize_index must not run beside a search
        vec = self._as_indexed(vector)
        old = self.facts.pop(ident, None)
        if old is not None:
            label = old.label
            self._unindex_kind(old)
            self.text_index.remove(label, fact_terms(old))
        else:
            label = self._new_label()
            if self._sorted is not None:
                bisect.insort(self._sorted, ident)
        assert self._index is not None
        self._index.add_items(vec.reshape(1, -1), [label])
        fact = Fact(ident, label, text, self._kind_name(kind),
                    _ONE if confidence == 1.0 else confidence, source, description, meta,
                    created, created if updated == created else updated, expires)
        self.facts[ident] = fact
        self._by_label[label] = fact
        self._kind_counts[fact.kind] += 1
        self.text_index.add(label, fact_terms(fact))
        self.version += 1
        if expires is not None:
            heapq.heappush(self._expiry, (expires, ident))
            if len(self._expiry) > 2 * len(self.facts) + 64:
                self._rebuild_expiry()
        if self._lowconf is not None:
            self._tick += 1
            self._ticks[ident] = self._tick
            heapq.heappush(self._lowconf, (confidence, self._tick, ident))
            if len(self._lowconf) > 2 * len(self.facts) + 64:
                self._drop_lowconf()  # mostly stale entries: rebuilt on the next need
        return old is None

    def _kind_name(self, kind: bytes) -> bytes:
        """One shared bytes object per kind (most facts share a handful of kinds)."""
        name = self._kind_names.get(kind)
        if name is None:
            self._kind_names[kind] = name = kind
            self._kind_counts[kind] = 0
        return name

    def _new_label(self) -> int:
        if self._free:
            return self._free.pop()
        label = len(self._by_label)
        index = self._index
        if index is None:
            index = hnswlib.Index(space=_SPACES[self.metric], dim=self.dim)
            index.init_index(
                max_elements=INITIAL_ELEMENTS, M=self.m, ef_construction=self.ef_construction
            )
            index.set_num_threads(1)  # the server is single-threaded; no thread start-up
            index.set_ef(self.ef)
            self._index = index
        elif label >= index.get_max_elements():
            index.resize_index(grown_capacity(index.get_max_elements()))
        self._by_label.append(None)
        return label

    def delete(self, ident: bytes) -> bool:
        """Remove a fact (live or expired); its label is free for the next new fact."""
        if ident not in self.facts:
            return False
        self.quiesce()  # mark_deleted must not run beside a search
        fact = self.facts.pop(ident)
        label = fact.label
        self._unindex_kind(fact)
        self._by_label[label] = None
        self.version += 1
        if self._sorted is not None:
            i = bisect.bisect_left(self._sorted, ident)
            del self._sorted[i]
        self._ticks.pop(ident, None)
        if not self.facts:
            self._reset()  # release the index (and its fixed lock tables)
        else:
            assert self._index is not None
            self._index.mark_deleted(label)
            self._free.append(label)
            self.text_index.remove(label, fact_terms(fact))
        return True

    def _unindex_kind(self, fact: Fact) -> None:
        left = self._kind_counts[fact.kind] - 1
        if left:
            self._kind_counts[fact.kind] = left
        else:
            del self._kind_counts[fact.kind]
            del self._kind_names[fact.kind]

    def _reset(self) -> None:
        self.facts.clear()
        self._index = None
        self._by_label = []
        self._free = []
        self._kind_counts = {}
        self._kind_names = {}
        self._sorted = None
        self._expiry = []
        self.text_index = TextIndex()
        if self._lowconf is not None:
            self._drop_lowconf()

    def purge_expired(self, now_ms: int, limit: int | None = None) -> int:
        heap = self._expiry
        facts = self.facts
        removed = 0
        while heap and heap[0][0] <= now_ms and (limit is None or removed < limit):
            deadline, ident = heapq.heappop(heap)
            fact = facts.get(ident)
            if fact is not None and fact.expires == deadline:
                self.delete(ident)
                removed += 1
                heap = self._expiry  # delete() may have reset the namespace
        return removed

    def has_expiring(self) -> bool:
        return bool(self._expiry)

    def _rebuild_expiry(self) -> None:
        self._expiry = [(f.expires, f.id) for f in self.facts.values() if f.expires is not None]
        heapq.heapify(self._expiry)

    # --- snapshot -----------------------------------------------------------------
    def snapshot(self) -> dict[str, Any]:
        self.quiesce()
        index_state: dict[str, Any] | None = None
        if self._index is not None:
            params = self._index.__getstate__()[0]  # already a copy of the index
            # views, not .tobytes(): msgpack writes buffers as bin, and a 100k x 768 index
            # is 300+ MB that need not be copied once more
            index_state = {
                key: value.data if isinstance(value, np.ndarray) else value
                for key, value in params.items()
            }
        return {
            "settings": self.settings(),
            "index": index_state,
            "labels": len(self._by_label),
            "free": list(self._free),
            "facts": [fact.row() for fact in self.facts.values()],
        }

    @classmethod
    def from_snapshot(cls, name: bytes, state: dict[str, Any]) -> Namespace:
        ns = cls(name, *state["settings"])
        index_state = state["index"]
        if index_state is not None:
            params = {
                key: np.frombuffer(value, dtype=_INDEX_ARRAYS[key]) if key in _INDEX_ARRAYS
                else value
                for key, value in index_state.items()
            }
            ns._index = hnswlib.Index(params)
            ns._index.set_num_threads(1)
            ns._index.set_ef(ns.ef)
        ns._by_label = [None] * state["labels"]
        ns._free = list(state["free"])
        for row in state["facts"]:
            fact = Fact(*row)
            fact.kind = ns._kind_name(fact.kind)
            ns.facts[fact.id] = fact
            ns._by_label[fact.label] = fact
            ns._kind_counts[fact.kind] += 1
        ns._rebuild_expiry()
        # the text index is derived data: rebuilt from the facts, not kept in snapshots
        ns.text_index = TextIndex.build(
            (fact.label, fact_terms(fact)) for fact in ns.facts.values())
        return ns

    def record_recall_check(self, check: RecallCheck, now_ms: int) -> bool:
        """Keep the result of a finished self-check (INFO's recall fields); False when the
        check was abandoned."""
        result = check.result()
        if result is None:
            return False
        self.recall_estimate, self.recall_sample = result
        self.recall_checked = now_ms
        self.recall_version = check.version
        return True

    def index_count(self) -> int:
        """Elements hnswlib holds, deleted ones included (for tests and INFO amem)."""
        return 0 if self._index is None else self._index.get_current_count()

    def index_capacity(self) -> int:
        return 0 if self._index is None else self._index.get_max_elements()


class PendingSearch:
    """A RECALL's hnswlib search, prepared on the loop thread: :meth:`run` it anywhere
    (once :meth:`Namespace.begin_search` set the index up), then :meth:`finish` it on the
    loop thread.

    :meth:`run` reads the facts of the labels found right after the search, before any
    write can change the namespace (writes wait for it, see :meth:`Namespace.quiesce`);
    :meth:`finish` leaves out facts deleted, replaced or expired since. The filter runs in
    :meth:`run`'s thread, holding the GIL: it only reads.
    """

    __slots__ = ("breadth", "check", "found", "index", "k", "minsim", "ns", "query")

    def __init__(
        self,
        ns: Namespace,
        query: np.ndarray,
        k: int,
        breadth: int,
        check: Callable[[Fact], bool] | None,
        minsim: float | None,
    ) -> None:
        self.ns = ns
        self.index = ns._index
        self.query = query
        self.k = min(k, len(ns.facts))
        self.breadth = breadth
        self.check = check
        self.minsim = minsim
        #: (fact, hnswlib distance) best first; None when hnswlib found fewer than k
        self.found: list[tuple[Fact, float]] | None = None

    def run(self) -> None:
        """The search itself (any thread; ``knn_query`` releases the GIL)."""
        index = self.index
        assert index is not None
        by_label = self.ns._by_label
        check = self.check
        synchronous = not self.ns._inflight
        if synchronous:  # run in place (no other thread): set ef here
            index.set_ef(self.breadth)
        try:
            if check is None:
                labels, dists = index.knn_query(self.query, k=self.k)
            else:

                def allowed(label: int) -> bool:
                    fact = by_label[label]
                    return fact is not None and check(fact)

                labels, dists = index.knn_query(self.query, k=self.k, filter=allowed)
        except RuntimeError:
            self.found = None  # fewer than k reachable: finish() scans exactly
            return
        finally:
            if synchronous:
                index.set_ef(self.ns.ef)
        found: list[tuple[Fact, float]] = []
        for label, dist in zip(labels[0].tolist(), dists[0].tolist(), strict=True):
            fact = by_label[label]
            if fact is not None:
                found.append((fact, float(dist)))
        self.found = found

    def run_in_place(self, now_ms: int) -> list[tuple[Fact, float]]:
        """:meth:`run` on this thread, then :meth:`finish` (no search of the index may run
        elsewhere meanwhile: it waits for them first)."""
        self.ns.quiesce()
        self.run()
        return self.finish(now_ms)

    def finish(self, now_ms: int) -> list[tuple[Fact, float]]:
        """The hits (loop thread): facts still current and alive, with their similarity."""
        ns = self.ns
        if self.found is None:
            if ns._index is None or not ns.facts:
                return []
            facts: Iterable[Fact] = ns.facts.values()
            if self.check is not None:
                facts = filter(self.check, facts)
            hits = ns._exact(self.query, [f for f in facts if f.alive(now_ms)], self.k)
        else:
            current = ns.facts
            to_similarity = ns._similarity_of_distance
            hits = [(fact, to_similarity(dist)) for fact, dist in self.found
                    if current.get(fact.id) is fact and fact.alive(now_ms)]
        if self.minsim is not None:
            minsim = self.minsim
            hits = [hit for hit in hits if hit[1] >= minsim]
        return hits


class RecallCheck:
    """One self-check of a namespace's HNSW recall: ``sample`` of its own vectors are the
    queries, and the HNSW top ``k`` of each (itself left out) is compared with the exact
    top ``k``. The exact side is a scan of the whole index done a slice at a time by
    :meth:`step`, so a caller can spread it over many short ticks between commands.

    Writes may land between slices. A fact changed or removed after its slice was read is
    dropped from the exact candidates (a few spare candidates per query cover for it) and
    the HNSW hits are always scored exactly and added to them, so a hit never counts as a
    miss; only a fact written during the scan *and* missed by HNSW goes unnoticed. The
    result is an estimate of recall@k, as RECALL with the namespace's EF searches.
    """

    def __init__(
        self,
        ns: Namespace,
        sample: int = RECALL_SAMPLE,
        k: int = RECALL_K,
        rng: random.Random | None = None,
    ) -> None:
        self.ns = ns
        self.index = ns._index
        self.version = ns.version
        live = [fact for fact in ns._by_label if fact is not None]
        self.k = min(k, len(live) - 1)
        picks = (rng or random.Random()).sample(live, min(sample, len(live))) if self.k > 0 else []
        self.query_labels = np.array([f.label for f in picks], dtype=np.int64)
        self.queries = ns.vectors([f.label for f in picks])
        self.cursor = 0
        self.keep = 2 * self.k  # candidates kept per query (spares for facts changed later)
        count = len(picks)
        self.best_sims = np.zeros((count, 0), dtype=np.float32)
        self.best_labels = np.zeros((count, 0), dtype=np.int64)
        self.best_facts = np.empty((count, 0), dtype=object)
        self.abandoned = self.index is None or not count

    def step(self, budget: int) -> bool:
        """Scan about ``budget`` vector values (facts x dim) more; True when the scan is
        over (then :meth:`result`) or abandoned (the namespace was emptied meanwhile)."""
        ns = self.ns
        if self.abandoned or ns._index is not self.index:
            self.abandoned = True
            return True
        by_label = ns._by_label
        end = min(len(by_label), self.cursor + max(1, budget // ns.dim))
        facts = [f for f in by_label[self.cursor:end] if f is not None]
        self.cursor = end
        if facts:
            labels = np.array([f.label for f in facts], dtype=np.int64)
            vectors = ns.vectors(labels.tolist(), bulk=False)
            sims = ns.similarities(vectors, self.queries).T.astype(np.float32)
            sims[self.query_labels[:, None] == labels[None, :]] = -np.inf  # not itself
            rows = len(self.queries)
            all_sims = np.concatenate([self.best_sims, sims], axis=1)
            all_labels = np.concatenate(
                [self.best_labels, np.broadcast_to(labels, (rows, len(facts)))], axis=1)
            fact_row = np.empty(len(facts), dtype=object)
            fact_row[:] = facts
            all_facts = np.concatenate(
                [self.best_facts, np.broadcast_to(fact_row, (rows, len(facts)))], axis=1)
            if all_sims.shape[1] > self.keep:
                top = np.argpartition(-all_sims, self.keep - 1, axis=1)[:, :self.keep]
                all_sims = np.take_along_axis(all_sims, top, axis=1)
                all_labels = np.take_along_axis(all_labels, top, axis=1)
                all_facts = np.take_along_axis(all_facts, top, axis=1)
            self.best_sims, self.best_labels, self.best_facts = all_sims, all_labels, all_facts
        return self.cursor >= len(by_label)

    def result(self) -> tuple[float, int] | None:
        """``(mean recall@k, queries)`` once the scan is over; None if abandoned."""
        ns = self.ns
        if self.abandoned or ns._index is not self.index or not ns.facts:
            return None
        k = min(self.k, len(ns.facts) - 1)
        if k <= 0:
            return None
        by_label = ns._by_label
        found = self._hnsw(k + 1)
        total = 0.0
        for row, query in enumerate(self.queries):
            own = int(self.query_labels[row])
            hnsw = [label for label in found[row] if label != own and label >= 0][:k]
            hnsw_sims = ns.similarities(ns.vectors(hnsw), query) if hnsw else np.zeros(0)
            exact = {
                int(label): float(sim)
                for label, sim, fact in zip(self.best_labels[row], self.best_sims[row],
                                            self.best_facts[row], strict=True)
                if np.isfinite(sim) and by_label[int(label)] is fact
            }
            exact.update(zip(hnsw, hnsw_sims.tolist(), strict=True))
            ranked = sorted(exact.values(), reverse=True)
            if not ranked:
                continue
            kth = ranked[min(k, len(ranked)) - 1]
            total += sum(1 for sim in hnsw_sims.tolist() if sim >= kth - 1e-6) / k
        return total / len(self.queries), len(self.queries)

    def _hnsw(self, k: int) -> list[list[int]]:
        """The labels RECALL's HNSW search (no filter) finds for each query, best first."""
        index = self.index
        assert index is not None
        self.ns.quiesce()  # ef is shared with any search in flight
        index.set_ef(search_breadth(self.ns.ef, k))
        try:
            try:
                labels, _ = index.knn_query(self.queries, k=k)
                return [[int(x) for x in row] for row in labels.tolist()]
            except RuntimeError:  # fewer than k reachable for some query: one at a time
                out: list[list[int]] = []
                for query in self.queries:
                    for width in range(k, 0, -1):
                        try:
                            labels, _ = index.knn_query(query, k=width)
                        except RuntimeError:
                            continue
                        out.append([int(x) for x in labels[0].tolist()])
                        break
                    else:
                        out.append([])
                return out
        finally:
            index.set_ef(self.ns.ef)


class SemanticStore(Store):
    """Every semantic namespace, by name."""

    name = "sem"

    def __init__(self) -> None:
        self.namespaces: dict[bytes, Namespace] = {}
        self._expiring: set[bytes] = set()  # namespaces that hold facts with a TTL

    # --- reads for the handlers ------------------------------------------------------
    def get(self, name: bytes) -> Namespace | None:
        return self.namespaces.get(name)

    # --- effects ------------------------------------------------------------------
    def appliers(self) -> dict[type[Any], Callable[[Any], Any]]:
        return {
            SemCreate: self._apply_create,
            SemUpdate: self._apply_update,
            SemStore: self._apply_store,
            SemDel: self._apply_del,
            SemDrop: self._apply_drop,
        }

    def _ns(self, name: bytes) -> Namespace:
        ns = self.namespaces.get(name)
        if ns is None:
            raise EffectError(f"no semantic namespace {name!r}")
        return ns

    def _apply_create(self, e: SemCreate) -> None:
        self.namespaces[e.name] = Namespace(e.name, e.dim, e.metric, e.m, e.ef_construction,
                                            e.ef, e.capacity, e.evict, e.embedder)

    def _apply_update(self, e: SemUpdate) -> int:
        ns = self._ns(e.name)
        removed = sum(ns.delete(ident) for ident in e.evicted)
        ns.change(e.changes)
        return removed

    def _apply_store(self, e: SemStore) -> bool:
        ns = self._ns(e.name)
        for victim in e.evicted:
            ns.delete(victim)
        created_new = ns.put(e.ident, e.text, e.vector, e.kind, float(e.confidence), e.source,
                             e.description, e.meta, e.created, e.updated, e.expires)
        if e.expires is not None:
            self._expiring.add(e.name)
        return created_new

    def _apply_del(self, e: SemDel) -> int:
        ns = self.namespaces.get(e.name)
        if ns is None:
            return 0
        return sum(ns.delete(ident) for ident in e.ids)

    def _apply_drop(self, e: SemDrop) -> bool:
        self._expiring.discard(e.name)
        ns = self.namespaces.pop(e.name, None)
        if ns is None:
            return False
        ns.quiesce()
        return True

    # --- the Store contract ------------------------------------------------------------
    def purge_expired(self, now_ms: int, limit: int) -> int:
        removed = 0
        for name in list(self._expiring):
            ns = self.namespaces.get(name)
            if ns is not None:
                removed += ns.purge_expired(now_ms, limit - removed)
            if ns is None or not ns.has_expiring():
                self._expiring.discard(name)
            if removed >= limit:
                break
        return removed

    def ids(self, now_ms: int) -> Iterator[bytes]:
        return iter(list(self.namespaces))

    def exists(self, ident: bytes, now_ms: int) -> bool:
        return ident in self.namespaces

    def clear(self) -> None:
        for ns in self.namespaces.values():
            ns.quiesce()
        self.namespaces.clear()
        self._expiring.clear()

    def snapshot(self) -> dict[bytes, Any]:
        return {name: ns.snapshot() for name, ns in self.namespaces.items()}

    def restore(self, state: Any) -> None:
        self.clear()
        for name, ns_state in state.items():
            ns = Namespace.from_snapshot(name, ns_state)
            self.namespaces[name] = ns
            if ns.has_expiring():
                self._expiring.add(name)

    def stats(self, now_ms: int) -> dict[str, int]:
        vectors = 0
        vector_bytes = 0
        for ns in self.namespaces.values():
            count = ns.live_count(now_ms)
            vectors += count
            vector_bytes += count * ns.dim * 4
        return {
            "objects": len(self.namespaces),
            "entries": vectors,
            "vectors": vectors,
            "bytes": vector_bytes,
        }
