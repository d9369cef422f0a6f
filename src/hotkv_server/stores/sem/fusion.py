"""SEARCH: BM25 text ranking of a namespace, alone or fused with its HNSW ranking."""

from __future__ import annotations

import heapq
from collections.abc import Callable

import numpy as np

from hotkv_server.stores.base import EffectError
from hotkv_server.stores.sem.facts import (
    DEFAULT_ALPHA,
    DEFAULT_FUSION,
    FUSIONS,
    HYBRID_DEPTH,
    HYBRID_DEPTH_MAX,
    RRF_K,
    Fact,
    SearchHit,
    _fact_id,
    _min_max,
    _score_groups,
    fact_terms,
    search_breadth,
)
from hotkv_server.stores.sem.recall import NamespaceRecall, PendingSearch


class NamespaceSearch(NamespaceRecall):
    """SEARCH: BM25 text ranking, alone or fused with the HNSW ranking (RRF or LINEAR)."""

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
            by_vector = self._nearest(query, depth, breadth, kind, minconf, prefix, None)
            if isinstance(by_vector, PendingSearch):
                by_vector = by_vector.run_in_place(now_ms)
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
