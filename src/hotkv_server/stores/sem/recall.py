"""RECALL: k-NN search of a namespace, exact or HNSW, in place or on another thread."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Unpack

import numpy as np

from hotkv_server.stores.hnsw import knn
from hotkv_server.stores.sem.core import NamespaceCore
from hotkv_server.stores.sem.facts import (
    _SAMPLE,
    EXACT_CHUNK,
    Fact,
    RecallOptions,
    search_breadth,
)


class NamespaceRecall(NamespaceCore):
    """RECALL: k-NN search of a namespace (HNSW, or exact with numpy), in place or prepared
    for another thread (:class:`PendingSearch`)."""

    def begin_search(self, pending: PendingSearch) -> None:
        """Before ``pending`` runs on another thread: set hnswlib's ef for it (waiting first
        for searches in flight at another ef, since ef is one value per index)."""
        self.begin_breadth(pending.breadth)

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
            planned = self._nearest(query, k, breadth, kind, minconf, prefix, minsim)
            if isinstance(planned, PendingSearch):
                return planned
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
        minsim: float | None,
    ) -> list[tuple[Fact, float]] | PendingSearch:
        """The HNSW side of RECALL and SEARCH: up to ``k`` matching facts, nearest first,
        when an exact search over few matching facts is the cheaper way, else the hnswlib
        search of the graph, unrun (a :class:`PendingSearch` keeping hits of ``minsim``)."""
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
        if hits is None:
            return PendingSearch(self, query, k, breadth, check, minsim)
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
        ns: NamespaceRecall,
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
        allowed: Callable[[int], bool] | None = None
        if check is not None:

            def allowed(label: int) -> bool:
                fact = by_label[label]
                return fact is not None and check(fact)

        try:
            pairs = knn(index, self.query, self.k, allowed)
        finally:
            if synchronous:
                index.set_ef(self.ns.ef)
        if pairs is None:
            self.found = None  # fewer than k reachable: finish() scans exactly
            return
        found: list[tuple[Fact, float]] = []
        for label, dist in pairs:
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
