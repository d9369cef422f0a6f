"""Semantic memory (facts, constants and helpers of the ``stores.sem`` package): per namespace, facts with an embedding vector, recalled by meaning.

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

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, NamedTuple, TypedDict

import numpy as np

# the index's sizes and bulk reads are the shared vector engine's (stores/hnsw.py)
from hotkv_server.stores.hnsw import (  # noqa: F401 (re-exported by stores.sem)
    BULK_READ_MIN,
    DOUBLING_MAX,
    INITIAL_ELEMENTS,
    grown_capacity,
)
from hotkv_server.stores.text import doc_terms

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

#: search breadth per requested hit, so recall@k stays high on unstructured data
BREADTH_PER_HIT = 32
AUTO_BREADTH_MAX = 1024
#: facts looked at to judge how selective a MINCONF-style filter is
_SAMPLE = 256
#: vectors read back from hnswlib at once by an exact search (bounds its memory)
EXACT_CHUNK = 8192

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


@dataclass(slots=True, eq=False)
class Fact:
    """One fact's metadata; its vector is in the namespace's index under ``label``."""

    id: bytes
    label: int
    text: bytes
    kind: bytes
    confidence: float
    source: bytes | None
    description: bytes | None
    meta: bytes | None
    created: int
    updated: int
    expires: int | None

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
