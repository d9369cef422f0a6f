"""The recall self-check: a namespace's HNSW recall measured against exact search, a slice
at a time (INFO's ``recall_*``)."""

from __future__ import annotations

import random

import numpy as np

from hotkv_server.stores.sem.facts import (
    RECALL_K,
    RECALL_SAMPLE,
    search_breadth,
)
from hotkv_server.stores.sem.fusion import NamespaceSearch


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
        ns: NamespaceSearch,
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
