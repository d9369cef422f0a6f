"""SemanticStore as a data structure: effects in, facts and k-NN hits out."""

from __future__ import annotations

from typing import Any

import msgpack
import numpy as np
import pytest

from hotkv_server.stores.base import EffectError
from hotkv_server.stores.sem import SemanticStore
from hotkv_server.stores.sem.facts import (
    DOUBLING_MAX,
    INITIAL_ELEMENTS,
    fact_terms,
    grown_capacity,
    search_breadth,
)
from hotkv_server.stores.text import TextIndex

T0 = 1_700_000_000_000


def fp32(values: Any) -> bytes:
    return np.asarray(values, dtype="<f4").tobytes()


def make(
    dim: int = 3,
    metric: str = "COSINE",
    capacity: int = 0,
    evict: str = "LOWCONF",
    ns: bytes = b"kb",
) -> SemanticStore:
    store = SemanticStore()
    store.apply(["sem.create", ns, dim, metric, 16, 200, 64, capacity, evict])
    return store


def put(
    store: SemanticStore,
    ident: bytes,
    vector: Any,
    *,
    ns: bytes = b"kb",
    text: bytes = b"",
    kind: bytes = b"fact",
    confidence: float = 1.0,
    source: bytes | None = None,
    description: bytes | None = None,
    meta: bytes | None = None,
    now: int = T0,
    expires: int | None = None,
    evicted: list[bytes] | None = None,
) -> bool:
    namespace = store.namespaces[ns]
    old = namespace.get(ident, now)
    created = old.created if old is not None else now
    result: bool = store.apply(
        ["sem.store", ns, ident, text or ident, fp32(vector), kind, confidence, source,
         description, meta, created, now, expires, evicted or []]
    )
    return result


def ids(hits: list[Any]) -> list[bytes]:
    return [fact.id for fact, _ in hits]


# --- basic storage -------------------------------------------------------------------


def test_store_get_and_record_in_contract_order() -> None:
    store = make()
    assert put(store, b"vat-policy", [0.1, 0.2, 0.3], text=b"VAT within 30 days",
               source=b"wiki", meta=b'{"a":1}', now=T0) is True
    fact = store.namespaces[b"kb"].get(b"vat-policy", T0)
    assert fact is not None
    rec = fact.record()
    assert list(rec) == ["id", "text", "kind", "confidence", "source", "meta", "created",
                         "updated"]
    assert rec == {"id": b"vat-policy", "text": b"VAT within 30 days", "kind": b"fact",
                   "confidence": 1.0, "source": b"wiki", "meta": b'{"a":1}',
                   "created": T0, "updated": T0}
    with_sim = fact.record(0.5)
    assert list(with_sim)[:3] == ["id", "text", "similarity"]


def test_replacing_keeps_created_label_and_moves_to_newest() -> None:
    store = make()
    ns = store.namespaces[b"kb"]
    put(store, b"a", [1, 0, 0], kind=b"goal", now=T0)
    put(store, b"b", [0, 1, 0], now=T0 + 1)
    label = ns.facts[b"a"].label
    assert put(store, b"a", [0, 0, 1], text=b"new", kind=b"habit", confidence=0.5,
               now=T0 + 5) is False
    fact = ns.get(b"a", T0 + 5)
    assert fact is not None
    assert (fact.text, fact.kind, fact.confidence, fact.created, fact.updated) == (
        b"new", b"habit", 0.5, T0, T0 + 5)
    assert fact.label == label
    assert list(ns.facts) == [b"b", b"a"]  # least recently updated first
    assert ns.index_count() == 2
    # the vector was replaced in the index too
    assert ids(ns.recall(fp32([0, 0, 1]), 1, T0 + 5)) == [b"a"]
    assert ids(ns.recall(fp32([1, 0, 0]), 2, T0 + 5, kind=b"goal")) == []
    assert ids(ns.recall(fp32([1, 0, 0]), 2, T0 + 5, kind=b"habit")) == [b"a"]


def test_vector_comes_back_as_fp32_and_unit_length_under_cosine() -> None:
    store = make(metric="COSINE")
    put(store, b"a", [3, 0, 4])
    ns = store.namespaces[b"kb"]
    fact = ns.facts[b"a"]
    assert np.allclose(np.frombuffer(ns.vector(fact), "<f4"), [0.6, 0, 0.8])
    l2 = make(metric="L2")
    put(l2, b"a", [3, 0, 4])
    ns2 = l2.namespaces[b"kb"]
    assert np.frombuffer(ns2.vector(ns2.facts[b"a"]), "<f4").tolist() == [3, 0, 4]


def test_store_with_wrong_dim_is_an_effect_error() -> None:
    store = make(dim=3)
    with pytest.raises(EffectError):
        put(store, b"a", [1, 2])
    with pytest.raises(EffectError):
        store.apply(["sem.nope", b"kb"])
    with pytest.raises(EffectError):
        store.apply(["sem.store", b"missing", b"a", b"t", fp32([1, 2, 3]), b"fact", 1.0,
                     None, None, None, T0, T0, None, []])


# --- similarity per metric -------------------------------------------------------------


def expected_similarity(metric: str, query: list[float], vector: list[float]) -> float:
    q, v = np.asarray(query, dtype=np.float64), np.asarray(vector, dtype=np.float64)
    if metric == "COSINE":
        return float(q @ v / np.linalg.norm(q) / np.linalg.norm(v))
    if metric == "IP":
        return float(q @ v)
    return float(1 / (1 + np.linalg.norm(q - v)))


@pytest.mark.parametrize("metric", ["COSINE", "IP", "L2"])
def test_similarity_per_metric(metric: str) -> None:
    store = make(metric=metric)
    vectors = {b"same": [0.1, 0.2, 0.3], b"other": [-1.0, 0.5, 2.0], b"far": [3.0, -2.0, 0.0]}
    for ident, vector in vectors.items():
        put(store, ident, vector)
    ns = store.namespaces[b"kb"]
    query = [0.1, 0.2, 0.3]
    expected = {ident: expected_similarity(metric, query, v) for ident, v in vectors.items()}
    hits = ns.recall(fp32(query), 3, T0)
    assert {fact.id: sim for fact, sim in hits} == pytest.approx(expected, abs=1e-5)
    assert [sim for _, sim in hits] == pytest.approx(sorted(expected.values(), reverse=True),
                                                     abs=1e-5)
    # the exact path (a KIND filter with few candidates) agrees with hnswlib's distances
    exact = ns.recall(fp32(query), 3, T0, kind=b"fact")
    assert ids(exact) == ids(hits)
    assert {fact.id: sim for fact, sim in exact} == pytest.approx(expected, abs=1e-5)
    if metric == "COSINE":
        assert hits[0][1] == pytest.approx(1.0, abs=1e-6)


def test_minsim_cuts_off_results() -> None:
    store = make()
    put(store, b"x", [1, 0, 0])
    put(store, b"xy", [1, 1, 0])
    put(store, b"y", [0, 1, 0])
    ns = store.namespaces[b"kb"]
    hits = ns.recall(fp32([1, 0, 0]), 3, T0, minsim=0.5)
    assert ids(hits) == [b"x", b"xy"]
    assert ns.recall(fp32([1, 0, 0]), 3, T0, minsim=1.5) == []


def test_k_larger_than_the_namespace_returns_everything() -> None:
    store = make()
    for i in range(5):
        put(store, b"f%d" % i, [1, i, 0])
    hits = store.namespaces[b"kb"].recall(fp32([1, 0, 0]), 1000, T0)
    assert ids(hits) == [b"f0", b"f1", b"f2", b"f3", b"f4"]


def test_search_breadth_is_at_least_ef_and_k() -> None:
    assert search_breadth(64, 1) == 64
    assert search_breadth(64, 10) == 320
    assert search_breadth(2000, 10) == 2000
    assert search_breadth(10, 1000) == 1024
    assert search_breadth(2000, 1000) == 2000
    assert search_breadth(10, 500) == 1024


# --- recall quality (the required ones) ---------------------------------------------------


@pytest.fixture(scope="module")
def big() -> tuple[SemanticStore, np.ndarray]:
    """10,000 random 128-d vectors at default settings; every 50th fact is kind "rare"."""
    rng = np.random.default_rng(7)
    data = rng.standard_normal((10_000, 128)).astype("<f4")
    store = make(dim=128)
    for i, row in enumerate(data):
        store.apply(["sem.store", b"kb", b"f%05d" % i, b"t", row.tobytes(),
                     b"rare" if i % 50 == 0 else b"fact", 0.9 if i % 50 == 0 else 0.5,
                     None, None, None, T0, T0, None, []])
    return store, data


def exact_top(data: np.ndarray, query: np.ndarray, k: int, rows: np.ndarray | None = None) -> list[bytes]:
    unit = data / np.linalg.norm(data, axis=1, keepdims=True)
    sims = unit @ (query / np.linalg.norm(query))
    order = np.argsort(-sims)
    if rows is not None:
        order = order[np.isin(order, rows)]
    return [b"f%05d" % i for i in order[:k]]


@pytest.mark.slow
def test_recall_at_10_matches_brute_force_at_default_settings(big: tuple[SemanticStore, np.ndarray]) -> None:
    store, data = big
    ns = store.namespaces[b"kb"]
    assert (ns.m, ns.ef_construction, ns.ef) == (16, 200, 64)
    rng = np.random.default_rng(11)
    queries = rng.standard_normal((200, 128)).astype("<f4")
    found = 0
    for query in queries:
        hits = ns.recall(query.tobytes(), 10, T0)
        assert len(hits) == 10
        found += len(set(ids(hits)) & set(exact_top(data, query, 10)))
    assert found / 2000 >= 0.95


@pytest.mark.parametrize("how", ["kind", "minconf", "prefix"])
def test_filtered_recall_returns_k_hits_when_2_percent_match(
    big: tuple[SemanticStore, np.ndarray], how: str
) -> None:
    store, data = big
    ns = store.namespaces[b"kb"]
    rows = np.arange(0, 10_000, 50)  # the 2% that match
    rng = np.random.default_rng(12)
    found = 0
    for query in rng.standard_normal((20, 128)).astype("<f4"):
        if how == "kind":
            hits = ns.recall(query.tobytes(), 10, T0, kind=b"rare")
        elif how == "minconf":
            hits = ns.recall(query.tobytes(), 10, T0, minconf=0.8)
        else:  # PREFIX f00 keeps f00000..f00999: 10%, then KIND narrows to 20 facts
            hits = ns.recall(query.tobytes(), 10, T0, prefix=b"f00", kind=b"rare")
        assert len(hits) == 10
        assert all(fact.kind == b"rare" and fact.confidence == 0.9 for fact, _ in hits)
        want_rows = rows if how != "prefix" else rows[rows < 1000]
        assert all(int(fact.id[1:]) in set(want_rows.tolist()) for fact, _ in hits)
        found += len(set(ids(hits)) & set(exact_top(data, query, 10, want_rows)))
        sims = [sim for _, sim in hits]
        assert sims == sorted(sims, reverse=True)
    assert found / 200 >= 0.95


def test_prefix_filter_through_hnswlib_when_the_prefix_is_broad(
    big: tuple[SemanticStore, np.ndarray],
) -> None:
    store, _ = big
    ns = store.namespaces[b"kb"]
    query = np.ones(128, dtype="<f4").tobytes()
    hits = ns.recall(query, 10, T0, prefix=b"f0")  # 10,000 candidates: hnswlib walks
    assert len(hits) == 10 and all(fact.id.startswith(b"f0") for fact, _ in hits)
    hits = ns.recall(query, 10, T0, prefix=b"f09")  # 1,000 candidates
    assert len(hits) == 10 and all(fact.id.startswith(b"f09") for fact, _ in hits)


def test_a_broad_filter_goes_through_the_graph_walk(big: tuple[SemanticStore, np.ndarray]) -> None:
    store, data = big
    ns = store.namespaces[b"kb"]
    rows = np.array([i for i in range(10_000) if i % 50])  # kind "fact": 98%
    found = 0
    for query in np.random.default_rng(13).standard_normal((20, 128)).astype("<f4"):
        hits = ns.recall(query.tobytes(), 10, T0, kind=b"fact", minconf=0.5)
        assert len(hits) == 10 and all(fact.kind == b"fact" for fact, _ in hits)
        found += len(set(ids(hits)) & set(exact_top(data, query, 10, rows)))
    assert found / 200 >= 0.95


def test_a_misjudged_sample_still_returns_the_right_facts() -> None:
    # the selectivity sample looks at every 16th label: make exactly those fail the filter
    store = make(dim=8)
    rng = np.random.default_rng(4)
    data = rng.standard_normal((4096, 8))
    for i, row in enumerate(data):
        put(store, b"f%05d" % i, row, confidence=0.1 if i % 16 == 0 else 0.9)
    ns = store.namespaces[b"kb"]
    assert ns._estimated_matches(lambda f: f.confidence > 0.5) == 0
    query = rng.standard_normal(8)
    hits = ns.recall(fp32(query), 10, T0, minconf=0.5)
    assert len(hits) == 10 and all(fact.confidence == 0.9 for fact, _ in hits)
    exact = exact_top(data.astype("<f4"), query.astype("<f4"), 40)
    want = [ident for ident in exact if int(ident[1:]) % 16][:10]
    assert len(set(ids(hits)) & set(want)) >= 9


def test_a_filter_matching_fewer_than_k_returns_all_matches() -> None:
    store = make(dim=8)
    rng = np.random.default_rng(3)
    for i in range(300):
        put(store, b"f%03d" % i, rng.standard_normal(8), confidence=0.9 if i in (5, 77, 200) else 0.1)
    ns = store.namespaces[b"kb"]
    hits = ns.recall(fp32(rng.standard_normal(8)), 10, T0, minconf=0.5)
    assert sorted(ids(hits)) == [b"f005", b"f077", b"f200"]
    assert ns.recall(fp32(rng.standard_normal(8)), 10, T0, kind=b"none") == []
    assert ns.recall(fp32(rng.standard_normal(8)), 10, T0, prefix=b"zz") == []


# --- eviction ----------------------------------------------------------------------------


def test_lowconf_evicts_lowest_confidence_then_least_recently_updated() -> None:
    store = make(capacity=3, evict="LOWCONF")
    ns = store.namespaces[b"kb"]
    put(store, b"a", [1, 0, 0], confidence=0.5, now=T0)
    put(store, b"b", [0, 1, 0], confidence=0.2, now=T0 + 1)
    put(store, b"c", [0, 0, 1], confidence=0.2, now=T0 + 2)
    assert ns.evictions_for(b"a", T0 + 3) == []  # a replacement never evicts
    assert ns.evictions_for(b"d", T0 + 3) == [b"b"]  # 0.2 twice: b is older
    put(store, b"b", [0, 1, 0], confidence=0.2, now=T0 + 3)  # b is now newer than c
    assert ns.evictions_for(b"d", T0 + 4) == [b"c"]
    put(store, b"d", [1, 1, 0], confidence=0.9, now=T0 + 4, evicted=[b"c"])
    assert sorted(ns.facts) == [b"a", b"b", b"d"]
    assert ns.evictions_for(b"e", T0 + 5) == [b"b"]
    put(store, b"b", [0, 1, 0], confidence=0.95, now=T0 + 5)  # raised: a is lowest now
    assert ns.evictions_for(b"e", T0 + 6) == [b"a"]
    store.apply(["sem.del", b"kb", [b"a"]])
    assert ns.evictions_for(b"e", T0 + 6) == []


def test_oldest_evicts_least_recently_updated() -> None:
    store = make(capacity=2, evict="OLDEST")
    ns = store.namespaces[b"kb"]
    put(store, b"a", [1, 0, 0], confidence=0.1, now=T0)
    put(store, b"b", [0, 1, 0], confidence=1.0, now=T0 + 1)
    assert ns.evictions_for(b"c", T0 + 2) == [b"a"]
    put(store, b"a", [1, 0, 0], now=T0 + 2)
    assert ns.evictions_for(b"c", T0 + 3) == [b"b"]


def test_evict_none_refuses_and_expired_facts_do_not_count() -> None:
    store = make(capacity=2, evict="NONE")
    ns = store.namespaces[b"kb"]
    put(store, b"a", [1, 0, 0], now=T0, expires=T0 + 100)
    put(store, b"b", [0, 1, 0], now=T0)
    assert ns.evictions_for(b"c", T0 + 50) is None
    assert ns.evictions_for(b"b", T0 + 50) == []
    assert ns.evictions_for(b"c", T0 + 100) == []  # a expired: room again


def test_lowered_capacity_evicts_several_at_once() -> None:
    store = make()
    ns = store.namespaces[b"kb"]
    for i, conf in enumerate([0.5, 0.1, 0.5, 0.1, 0.9]):
        put(store, b"f%d" % i, [1, i, 0], confidence=conf, now=T0 + i)
    assert ns.victims(3, "LOWCONF") == [b"f1", b"f3", b"f0"]
    assert ns.victims(3, "OLDEST") == [b"f0", b"f1", b"f2"]
    assert ns.victims(1, "OLDEST") == [b"f0"]
    assert ns.victims(1, "NONE") is None
    assert ns.victims(0, "NONE") == []
    assert store.apply(["sem.update", b"kb", {"capacity": 2, "evict": "OLDEST", "ef": 99},
                        [b"f0", b"f1", b"f2"]]) == 3
    assert (ns.capacity, ns.evict, ns.ef) == (2, "OLDEST", 99)
    assert list(ns.facts) == [b"f3", b"f4"]
    with pytest.raises(EffectError):
        store.apply(["sem.update", b"kb", {"dim": 4}, []])


def test_lowconf_heap_survives_many_replacements() -> None:
    store = make(capacity=5)
    ns = store.namespaces[b"kb"]
    for i in range(5):
        put(store, b"f%d" % i, [1, i, 0], confidence=0.5, now=T0)
    assert ns.evictions_for(b"new", T0) == [b"f0"]
    for round_ in range(100):  # stale heap entries pile up and get compacted
        put(store, b"f%d" % (round_ % 5), [1, round_, 0], confidence=0.5 + round_ / 1000,
            now=T0 + round_)
    # confidences now: f0..f4 last set in rounds 95..99 -> f0 lowest
    assert ns.evictions_for(b"new", T0 + 200) == [b"f0"]


# --- labels, growth, deletion ----------------------------------------------------------------


def test_delete_marks_deleted_and_frees_the_label_for_reuse() -> None:
    store = make()
    ns = store.namespaces[b"kb"]
    for i in range(10):
        put(store, b"f%d" % i, [1, i, 1])
    labels = {ns.facts[b"f%d" % i].label for i in range(5)}
    assert store.apply(["sem.del", b"kb", [b"f%d" % i for i in range(5)] + [b"nope"]]) == 5
    assert ns.get(b"f0", T0) is None
    hits = ns.recall(fp32([1, 0, 1]), 10, T0)
    assert sorted(ids(hits)) == [b"f5", b"f6", b"f7", b"f8", b"f9"]
    for i in range(10, 15):
        put(store, b"f%d" % i, [1, i, 1])
    assert {ns.facts[b"f%d" % i].label for i in range(10, 15)} == labels
    assert ns.index_count() == 10  # no new hnswlib element: the slots were reused
    hits = ns.recall(fp32([1, 12, 1]), 1, T0)
    assert ids(hits) == [b"f12"]
    assert len(ns.recall(fp32([1, 0, 1]), 100, T0)) == 10


def test_eviction_churn_does_not_grow_the_index() -> None:
    store = make(capacity=20, evict="OLDEST")
    ns = store.namespaces[b"kb"]
    rng = np.random.default_rng(5)
    for i in range(500):
        ident = b"f%d" % i
        evicted = ns.evictions_for(ident, T0 + i)
        assert evicted is not None
        put(store, ident, rng.standard_normal(3), now=T0 + i, evicted=evicted)
    assert len(ns.facts) == 20
    assert ns.index_count() <= 21
    assert list(ns.facts) == [b"f%d" % i for i in range(480, 500)]


def test_index_starts_small_and_doubles() -> None:
    store = make(dim=4)
    ns = store.namespaces[b"kb"]
    assert ns.index_capacity() == 0  # no index until the first fact
    put(store, b"f0", [1, 0, 0, 0])
    assert ns.index_capacity() == INITIAL_ELEMENTS
    sizes = set()
    for i in range(1, 100):
        put(store, b"f%d" % i, [1, i, 0, 1])
        sizes.add(ns.index_capacity())
    assert sizes == {16, 32, 64, 128}
    assert len(ns.recall(fp32([1, 50, 0, 1]), 100, T0)) == 100


def test_large_indexes_grow_by_a_quarter() -> None:
    """Every slot costs hnswlib lock and level tables even unused: doubling stops at
    DOUBLING_MAX."""
    assert grown_capacity(INITIAL_ELEMENTS) == 2 * INITIAL_ELEMENTS
    assert grown_capacity(DOUBLING_MAX // 2) == DOUBLING_MAX
    assert grown_capacity(DOUBLING_MAX) == DOUBLING_MAX * 5 // 4
    assert grown_capacity(102_400) == 128_000


def test_text_postings_narrow_and_wide_give_the_same_scores() -> None:
    """Postings of tf 1 are kept as 4-byte document numbers, switched to 8-byte entries at
    the first tf above 1; adds, removals and both forms score as one rebuilt index."""
    docs: dict[int, list[str]] = {}
    index = TextIndex()
    for doc in range(200):
        terms = ["shared", f"id{doc}"] + (["shared"] if doc == 150 else [])
        if doc % 3 == 0:
            terms.append("third")
        docs[doc] = terms
        index.add(doc, terms)
    assert index._postings["third"].typecode == "I"  # type: ignore[union-attr]
    assert index._postings["shared"].typecode == "Q"  # type: ignore[union-attr]
    for doc in list(docs)[::2]:
        index.remove(doc, docs.pop(doc))
    index.remove(1, docs.pop(1))
    index.add(1, ["third", "third"])
    docs[1] = ["third", "third"]
    rebuilt = TextIndex.build(docs.items())
    for query in (["shared"], ["third"], ["id7", "third"], ["id150"]):
        got_docs, got = index.scores(query)
        want_docs, want = rebuilt.scores(query)
        assert dict(zip(got_docs.tolist(), got.tolist(), strict=True)) == pytest.approx(
            dict(zip(want_docs.tolist(), want.tolist(), strict=True)))
        assert index.df(query[-1]) == rebuilt.df(query[-1])
    for doc in list(docs):
        index.remove(doc, docs.pop(doc))
    assert index.terms() == 0 and index.docs == 0


def test_an_emptied_namespace_releases_its_index() -> None:
    store = make()
    ns = store.namespaces[b"kb"]
    put(store, b"a", [1, 0, 0])
    store.apply(["sem.del", b"kb", [b"a"]])
    assert ns.index_capacity() == 0
    assert ns.recall(fp32([1, 0, 0]), 3, T0) == []
    put(store, b"b", [0, 1, 0])
    assert ids(ns.recall(fp32([1, 0, 0]), 3, T0)) == [b"b"]


# --- expiry --------------------------------------------------------------------------------


def test_expired_facts_are_absent_to_every_read() -> None:
    store = make()
    ns = store.namespaces[b"kb"]
    put(store, b"a", [1, 0, 0], now=T0, expires=T0 + 100)
    put(store, b"b", [0.9, 0.1, 0], now=T0)
    assert ns.get(b"a", T0 + 99) is not None
    assert ns.live_count(T0 + 99) == 2
    assert ns.get(b"a", T0 + 100) is None
    assert ns.live_count(T0 + 100) == 1
    assert ns.list_facts(T0 + 100)[1] == [ns.facts[b"b"]]
    assert ids(ns.recall(fp32([1, 0, 0]), 5, T0 + 100)) == [b"b"]
    assert b"a" not in ns.facts  # recall purged it on the way
    assert store.stats(T0 + 100)["entries"] == 1


def test_purge_expired_respects_the_limit_and_skips_stale_deadlines() -> None:
    store = make()
    ns = store.namespaces[b"kb"]
    for i in range(10):
        put(store, b"f%d" % i, [1, i, 0], now=T0, expires=T0 + 10 + i)
    put(store, b"f0", [1, 0, 0], now=T0 + 1)  # re-stored without TTL: its deadline is stale
    assert store.purge_expired(T0 + 1000, 4) == 4
    assert store.purge_expired(T0 + 1000, 100) == 5
    assert sorted(ns.facts) == [b"f0"]
    assert store.purge_expired(T0 + 1000, 100) == 0
    assert ns.get(b"f0", T0 + 10**9) is not None


# --- listing ---------------------------------------------------------------------------------


def test_list_walks_in_id_order_with_prefix_kind_and_resume() -> None:
    store = make()
    ns = store.namespaces[b"kb"]
    for ident in [b"/prefs/b.md", b"/prefs/a.md", b"/notes/x", b"/prefs/c.md", b"zz"]:
        put(store, ident, [1, 1, 1], kind=b"preference" if ident.startswith(b"/prefs") else b"fact")
    after, page = ns.list_facts(T0, count=2)
    assert [f.id for f in page] == [b"/notes/x", b"/prefs/a.md"] and after == b"/prefs/a.md"
    after, page = ns.list_facts(T0, after=after, count=2)
    assert [f.id for f in page] == [b"/prefs/b.md", b"/prefs/c.md"] and after == b"/prefs/c.md"
    after, page = ns.list_facts(T0, after=after, count=2)
    assert [f.id for f in page] == [b"zz"] and after is None
    after, page = ns.list_facts(T0, prefix=b"/prefs/", count=3)
    assert [f.id for f in page] == [b"/prefs/a.md", b"/prefs/b.md", b"/prefs/c.md"]
    assert after is None  # exactly count left: no empty last page
    put(store, b"/prefs/aa.md", [1, 0, 0])  # inserted into the kept id order
    store.apply(["sem.del", b"kb", [b"/prefs/b.md"]])
    _, page = ns.list_facts(T0, prefix=b"/prefs/", kind=b"preference")
    assert [f.id for f in page] == [b"/prefs/a.md", b"/prefs/c.md"]
    _, page = ns.list_facts(T0, kind=b"fact")
    assert [f.id for f in page] == [b"/notes/x", b"/prefs/aa.md", b"zz"]


def test_prefix_of_high_bytes() -> None:
    store = make()
    ns = store.namespaces[b"kb"]
    for ident in [b"\xff\xff", b"\xff\xfe", b"\xff", b"a"]:
        put(store, ident, [1, 0, 0])
    assert [f.id for f in ns.list_facts(T0, prefix=b"\xff")[1]] == [b"\xff", b"\xff\xfe", b"\xff\xff"]
    assert [f.id for f in ns.list_facts(T0, prefix=b"\xff\xff")[1]] == [b"\xff\xff"]


# --- the store contract -----------------------------------------------------------------------


def test_namespaces_ids_exists_drop_clear_stats() -> None:
    store = make(dim=3)
    store.apply(["sem.create", b"other", 4, "L2", 8, 100, 10, 5, "NONE"])
    put(store, b"a", [1, 0, 0])
    assert sorted(store.ids(T0)) == [b"kb", b"other"]
    assert store.exists(b"other", T0) and not store.exists(b"nope", T0)
    assert store.stats(T0) == {"objects": 2, "entries": 1, "vectors": 1, "bytes": 12}
    assert store.namespaces[b"other"].settings() == [4, "L2", 8, 100, 10, 5, "NONE"]
    assert store.apply(["sem.drop", b"other"]) is True
    assert store.apply(["sem.drop", b"other"]) is False
    assert store.apply(["sem.del", b"other", [b"a"]]) == 0
    store.clear()
    assert list(store.ids(T0)) == []


def comparable(state: dict[str, Any]) -> dict[str, Any]:
    """A namespace snapshot with hnswlib's label table (an unordered map) as a dict."""
    index = dict(state["index"])
    keys = np.frombuffer(index.pop("label_lookup_external"), np.uint64).tolist()
    values = np.frombuffer(index.pop("label_lookup_internal"), np.uint32).tolist()
    return {**state, "index": index, "lookup": dict(zip(keys, values, strict=True))}


def test_snapshot_restore_round_trip_without_reinsert() -> None:
    store = make(dim=16, capacity=100, evict="LOWCONF")
    store.apply(["sem.create", b"empty", 2, "IP", 16, 200, 64, 0, "LOWCONF"])
    rng = np.random.default_rng(9)
    data = rng.standard_normal((60, 16))
    for i, row in enumerate(data):
        put(store, b"f%02d" % i, row, kind=b"k%d" % (i % 3), confidence=(i % 10) / 10,
            source=b"s" if i % 2 else None, now=T0 + i, expires=T0 + 10_000 if i % 7 == 0 else None)
    free_labels = {store.namespaces[b"kb"].facts[i].label for i in (b"f03", b"f04")}
    store.apply(["sem.del", b"kb", [b"f03", b"f04"]])  # a free list and deleted elements
    state = msgpack.unpackb(msgpack.packb(store.snapshot()), strict_map_key=False)

    copy = SemanticStore()
    copy.restore(state)
    assert sorted(copy.namespaces) == [b"empty", b"kb"]
    ns, orig = copy.namespaces[b"kb"], store.namespaces[b"kb"]
    assert ns.settings() == orig.settings()
    assert [f.row() for f in ns.facts.values()] == [f.row() for f in orig.facts.values()]
    # the graph itself came back byte for byte: nothing was re-inserted
    assert comparable(ns.snapshot()) == comparable(orig.snapshot())
    for row in rng.standard_normal((10, 16)):
        assert [(f.id, sim) for f, sim in ns.recall(fp32(row), 5, T0)] == [
            (f.id, sim) for f, sim in orig.recall(fp32(row), 5, T0)
        ]
    # the restored namespace keeps working: labels reused, expiry and eviction order kept
    put(copy, b"new", data[0])
    assert ns.facts[b"new"].label in free_labels
    assert ns.index_count() == orig.index_count()
    assert ns.evictions_for(b"x", T0) == orig.evictions_for(b"x", T0)
    assert copy.purge_expired(T0 + 10_000, 100) == store.purge_expired(T0 + 10_000, 100)
    assert ns.get(b"f07", T0 + 10_000) is None
    # restore() also takes the snapshot as it is, before any msgpack round trip
    direct = SemanticStore()
    direct.restore(store.snapshot())
    assert comparable(direct.namespaces[b"kb"].snapshot()) == comparable(orig.snapshot())


# --- text search, hybrid search, EXACT and the recall self-check -----------------------------

CUSTOMERS = [b"Acme", b"Globex", b"Initech", b"Umbrella", b"Hooli", b"Stark"]


def invoices(n: int = 300, dim: int = 32) -> tuple[SemanticStore, np.ndarray]:
    """``n`` invoice facts with random vectors; every 30th is kind "note"."""
    rng = np.random.default_rng(5)
    data = rng.standard_normal((n, dim)).astype("<f4")
    store = make(dim=dim)
    for i, row in enumerate(data):
        text = b"Invoice INV-%05d for %s totals %d.%02d EUR" % (
            i, CUSTOMERS[i % len(CUSTOMERS)], 100 + 7 * i, i % 100)
        put(store, b"inv/%05d" % i, row, text=text, kind=b"note" if i % 30 == 0 else b"fact",
            confidence=0.5 if i % 2 else 0.9)
    return store, data


def search_ids(hits: list[Any]) -> list[bytes]:
    return [hit.fact.id for hit in hits]


def test_text_search_ranks_by_bm25_and_finds_an_exact_id() -> None:
    store, _ = invoices()
    ns = store.namespaces[b"kb"]
    hits = ns.search(b"INV-00042", 5, T0)
    assert search_ids(hits) == [b"inv/00042"]  # the whole id is in one fact only
    hit = hits[0]
    assert hit.score == hit.text_score > 0 and hit.similarity is None
    assert hit.text_score == pytest.approx(
        ns.text_index.score(ns.text_index.query(b"INV-00042"), fact_terms(hit.fact)), rel=1e-12)
    # an amount, and a part of an id that no fact holds whole
    assert search_ids(ns.search(b"394.42", 5, T0)) == [b"inv/00042"]
    assert search_ids(ns.search(b"invoice 00042", 1, T0)) == [b"inv/00042"]
    # best first, ties in id order; words no fact has find nothing
    acme = ns.search(b"acme", 10, T0)
    assert len(acme) == 10 and all(b"Acme" in h.fact.text for h in acme)
    assert [h.text_score for h in acme] == sorted((h.text_score for h in acme), reverse=True)
    assert search_ids(acme) == sorted(search_ids(acme))  # equal scores: id order
    assert ns.search(b"nothing like it", 5, T0) == []
    assert ns.search(b"the of", 5, T0) == []  # stop words only


def test_record_of_a_search_hit_in_contract_order() -> None:
    store, _ = invoices(10)
    fact = store.namespaces[b"kb"].facts[b"inv/00001"]
    rec = fact.record(0.5, score=0.1, text_score=2.0)
    assert list(rec)[:6] == ["id", "text", "score", "text_score", "similarity", "kind"]
    assert list(fact.record(score=0.1, text_score=0.1))[:4] == ["id", "text", "score",
                                                                 "text_score"]


def test_text_index_follows_store_replace_delete_expiry_and_eviction() -> None:
    store = make(dim=2, capacity=3, evict="OLDEST")
    ns = store.namespaces[b"kb"]
    put(store, b"a", [1, 0], text=b"alpha invoice", now=T0)
    put(store, b"b", [0, 1], text=b"beta", description=b"billing alpha", now=T0 + 1)
    assert search_ids(ns.search(b"alpha", 5, T0 + 2)) == [b"a", b"b"]
    assert search_ids(ns.search(b"billing", 5, T0 + 2)) == [b"b"]  # the description counts
    # a replacement drops the old words at once
    put(store, b"a", [1, 0], text=b"gamma", now=T0 + 3)
    assert search_ids(ns.search(b"alpha", 5, T0 + 4)) == [b"b"]
    assert search_ids(ns.search(b"gamma", 5, T0 + 4)) == [b"a"]
    # DEL
    store.apply(["sem.del", b"kb", [b"b"]])
    assert ns.search(b"alpha", 5, T0 + 5) == [] and ns.text_index.docs == 1
    # expiry: absent once due, and gone from the index when purged
    put(store, b"c", [1, 1], text=b"delta", now=T0 + 6, expires=T0 + 100)
    assert search_ids(ns.search(b"delta", 5, T0 + 99)) == [b"c"]
    assert ns.search(b"delta", 5, T0 + 100) == [] and "delta" not in ns.text_index
    # eviction (the store's evicted ids ride in the effect)
    put(store, b"d", [1, 0], text=b"epsilon", now=T0 + 7)
    put(store, b"e", [1, 0], text=b"zeta", now=T0 + 8)
    put(store, b"f", [1, 0], text=b"eta", now=T0 + 9, evicted=[b"a"])
    assert ns.search(b"gamma", 5, T0 + 10) == [] and ns.text_index.docs == 3
    # an emptied namespace starts a new index
    store.apply(["sem.del", b"kb", [b"d", b"e", b"f"]])
    assert ns.text_index.docs == 0 and ns.text_index.terms() == 0
    put(store, b"g", [1, 0], text=b"eta", now=T0 + 11)
    assert search_ids(ns.search(b"eta", 5, T0 + 12)) == [b"g"]


def test_hybrid_finds_the_exact_id_a_noisy_embedding_misses() -> None:
    store, data = invoices()
    ns = store.namespaces[b"kb"]
    target, decoy = 42, 7
    unit = data / np.linalg.norm(data, axis=1, keepdims=True)
    # the agent's embedding of "what does INV-00042 total?" lands nearer another invoice
    noisy = unit[decoy] + 0.9 * unit[target]
    by_vector = ns.recall(fp32(noisy), 3, T0)
    assert ids(by_vector)[0] == b"inv/00007"
    assert ids(ns.recall(fp32(noisy), 1, T0)) == [b"inv/00007"]  # missed
    assert search_ids(ns.search(b"INV-00042", 1, T0)) == [b"inv/00042"]
    for fusion in ("RRF", "LINEAR"):
        hits = ns.search(b"INV-00042", 5, T0, vector=fp32(noisy), fusion=fusion)
        assert search_ids(hits)[0] == b"inv/00042", fusion
        assert b"inv/00007" in search_ids(hits)
        assert all(h.similarity is not None for h in hits)
        # every hit carries both scores, computed the same way as either search alone
        decoy_hit = next(h for h in hits if h.fact.id == b"inv/00007")
        assert decoy_hit.text_score == 0.0
        assert decoy_hit.similarity == pytest.approx(by_vector[0][1], abs=1e-6)
    # even when the vector side has never seen it (RRF tie of two rank-1 hits), text wins
    far = -unit[target]
    hits = ns.search(b"INV-00042", 3, T0, vector=fp32(far))
    assert search_ids(hits)[0] == b"inv/00042"


def test_rrf_and_linear_scores() -> None:
    store = make(dim=2)
    ns = store.namespaces[b"kb"]
    put(store, b"a", [1, 0], text=b"apple pie")
    put(store, b"b", [0.8, 0.6], text=b"apple")
    put(store, b"c", [0, 1], text=b"cherry")
    hits = ns.search(b"apple", 3, T0, vector=fp32([1, 0]))
    by_id = {h.fact.id: h for h in hits}
    # text ranks b (shorter) then a; the vector ranks a, b, c
    assert by_id[b"a"].score == pytest.approx(1 / 62 + 1 / 61)
    assert by_id[b"b"].score == pytest.approx(1 / 61 + 1 / 62)
    assert by_id[b"c"].score == pytest.approx(1 / 63)
    assert search_ids(hits) == [b"b", b"a", b"c"]  # tie on the fused score: higher BM25 first
    linear = ns.search(b"apple", 3, T0, vector=fp32([1, 0]), fusion="LINEAR", alpha=0.5)
    by_id = {h.fact.id: h for h in linear}
    tb, ta = by_id[b"b"].text_score, by_id[b"a"].text_score
    assert by_id[b"a"].score == pytest.approx(0.5 * 1.0 + 0.5 * ta / tb)
    assert by_id[b"b"].score == pytest.approx(0.5 * 0.8 + 0.5 * 1.0)
    assert by_id[b"c"].score == pytest.approx(0.0)
    only_vector = ns.search(b"apple", 3, T0, vector=fp32([1, 0]), fusion="LINEAR", alpha=1.0)
    assert search_ids(only_vector) == [b"a", b"b", b"c"]
    assert search_ids(ns.search(b"apple", 3, T0, vector=fp32([1, 0]), minscore=0.03)) == [
        b"b", b"a"]
    assert ns.search(b"apple", 3, T0, minscore=100.0) == []


@pytest.mark.parametrize("with_vector", [False, True])
@pytest.mark.parametrize("how", ["kind", "minconf", "prefix"])
def test_search_filters_return_k_hits_when_they_exist(how: str, with_vector: bool) -> None:
    store, data = invoices()
    ns = store.namespaces[b"kb"]
    choices: dict[str, dict[str, Any]] = {
        "kind": {"kind": b"note"},  # 10 of 300 facts
        "minconf": {"minconf": 0.8},  # half
        "prefix": {"prefix": b"inv/0029"},  # 10
    }
    options = choices[how]

    def passes(fact: Any) -> bool:
        if how == "kind":
            return bool(fact.kind == b"note")
        if how == "minconf":
            return bool(fact.confidence >= 0.8)
        return bool(fact.id.startswith(b"inv/0029"))

    vector = fp32(data[1]) if with_vector else None
    hits = ns.search(b"invoice acme", 8, T0, vector=vector, **options)
    assert len(hits) == 8 and all(passes(hit.fact) for hit in hits)
    if not with_vector:
        # the filtered hits are the best matching ones, in order
        every = ns.search(b"invoice acme", 300, T0)
        assert search_ids(hits) == [h.fact.id for h in every if passes(h.fact)][:8]


def test_search_of_an_empty_or_expired_namespace_and_bad_fusion() -> None:
    store = make(dim=2)
    ns = store.namespaces[b"kb"]
    assert ns.search(b"x", 3, T0) == []
    put(store, b"a", [1, 0], text=b"x", expires=T0 + 5)
    assert ns.search(b"x", 3, T0 + 5, vector=fp32([1, 0])) == []
    with pytest.raises(EffectError):
        ns.search(b"x", 3, T0, fusion="NOPE")


def test_snapshot_restore_rebuilds_the_text_index() -> None:
    store, data = invoices(120)
    store.apply(["sem.del", b"kb", [b"inv/00003"]])
    put(store, b"inv/00004", data[4], text=b"corrected: INV-00004 totals 1.00 EUR",
        description=b"credit note")
    state = msgpack.unpackb(msgpack.packb(store.snapshot()), strict_map_key=False)
    copy = SemanticStore()
    copy.restore(state)
    ns, orig = copy.namespaces[b"kb"], store.namespaces[b"kb"]
    assert ns.text_index.docs == orig.text_index.docs == 119
    assert ns.text_index.total_terms == orig.text_index.total_terms
    for query in (b"acme invoice", b"INV-00004", b"credit", b"INV-00003", b"totals EUR 100"):
        assert [(h.fact.id, h.score) for h in ns.search(query, 10, T0)] == [
            (h.fact.id, h.score) for h in orig.search(query, 10, T0)]
    put(copy, b"new", data[0], text=b"brand new words")
    assert search_ids(ns.search(b"brand", 3, T0)) == [b"new"]


@pytest.mark.parametrize("chunk", [8192, 7])
def test_exact_recall_is_brute_force(monkeypatch: pytest.MonkeyPatch, chunk: int) -> None:
    import hotkv_server.stores.sem.recall as recall

    # where the exact search reads it (patching the package's re-export changed nothing)
    monkeypatch.setattr(recall, "EXACT_CHUNK", chunk)
    store, data = invoices()
    ns = store.namespaces[b"kb"]
    rng = np.random.default_rng(3)
    for query in rng.standard_normal((5, 32)).astype("<f4"):
        exact = ns.recall(fp32(query), 10, T0, exact=True)
        assert ids(exact) == [b"inv/" + name[1:] for name in exact_top(data, query, 10)]
        sims = [s for _, s in exact]
        assert sims == sorted(sims, reverse=True)
        filtered = ns.recall(fp32(query), 4, T0, exact=True, kind=b"note", minsim=-1.0)
        assert ids(filtered) == [b"inv/" + name[1:] for name in
                                 exact_top(data, query, 4, rows=np.arange(0, 300, 30))]


def true_recall(ns: Any, labels: list[int], k: int) -> float:
    """Recall@k of RECALL against EXACT for the facts at ``labels`` as queries (self excluded)."""
    total = 0.0
    for label in labels:
        fact = ns._by_label[label]
        query = ns.vector(fact)
        hnsw = [f.id for f, _ in ns.recall(query, k + 1, T0) if f is not fact][:k]
        exact = [f.id for f, _ in ns.recall(query, k + 1, T0, exact=True) if f is not fact][:k]
        total += len(set(hnsw) & set(exact)) / k
    return total / len(labels)


def test_recall_self_check_equals_the_recall_measured_by_hand(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import random

    import hotkv_server.stores.sem as sem
    import hotkv_server.stores.sem.facts

    # a deliberately poor index (tiny M and breadth) so that recall is well below 1
    monkeypatch.setattr(hotkv_server.stores.sem.facts, "BREADTH_PER_HIT", 0)
    rng = np.random.default_rng(2)
    store = SemanticStore()
    store.apply(["sem.create", b"kb", 24, "COSINE", 2, 4, 1, 0, "LOWCONF"])
    for i, row in enumerate(rng.standard_normal((2000, 24)).astype("<f4")):
        put(store, b"f%04d" % i, row, text=b"t")
    ns = store.namespaces[b"kb"]
    check = sem.RecallCheck(ns, sample=40, k=10, rng=random.Random(1))
    steps = 1
    while not check.step(24 * 150):  # 150 facts a slice
        steps += 1
    assert steps == 14
    result = check.result()
    assert result is not None
    estimate, sample = result
    assert sample == 40
    want = true_recall(ns, check.query_labels.tolist(), 10)
    assert want < 0.95
    assert estimate == pytest.approx(want, abs=1e-9)
    assert ns.record_recall_check(check, T0 + 5)
    assert (ns.recall_estimate, ns.recall_sample, ns.recall_checked) == (estimate, 40, T0 + 5)
    assert ns.recall_version == ns.version


def test_recall_self_check_survives_writes_during_the_scan() -> None:
    import random

    from hotkv_server.stores.sem import RecallCheck

    store, data = invoices(400)
    ns = store.namespaces[b"kb"]
    check = RecallCheck(ns, sample=20, k=5, rng=random.Random(4))
    assert not check.step(32 * 100)
    store.apply(["sem.del", b"kb", [b"inv/%05d" % i for i in range(0, 100, 3)]])
    for i in range(20):
        put(store, b"new/%02d" % i, data[i] + 0.01, text=b"new")
    while not check.step(32 * 100):
        pass
    result = check.result()
    assert result is not None and 0.8 <= result[0] <= 1.0 and result[1] == 20
    # an emptied namespace abandons the check
    other = RecallCheck(ns, sample=5, k=3)
    store.apply(["sem.del", b"kb", list(ns.facts)])
    assert other.step(1000) is True and other.result() is None
    assert not ns.record_recall_check(other, T0)
    # too small to measure: one fact has no neighbour
    put(store, b"only", data[0])
    assert RecallCheck(ns).result() is None


@pytest.mark.parametrize("metric", ["COSINE", "L2"])
def test_bulk_vector_reads_equal_hnswlib_get_items(monkeypatch: pytest.MonkeyPatch,
                                                   metric: str) -> None:
    import hotkv_server.stores.hnsw as sem  # the shared vector engine reads in bulk

    monkeypatch.setattr(sem, "BULK_READ_MIN", 1)
    store = make(dim=8, metric=metric)
    rng = np.random.default_rng(8)
    data = rng.standard_normal((200, 8)).astype("<f4")
    for i, row in enumerate(data):
        put(store, b"f%03d" % i, row)
    store.apply(["sem.del", b"kb", [b"f%03d" % i for i in range(0, 200, 3)]])
    for i in range(5):  # reused labels, replaced vectors
        put(store, b"n%d" % i, data[i] * 2 + 1)
    put(store, b"f001", data[7])
    ns = store.namespaces[b"kb"]
    labels = [f.label for f in ns.facts.values()][::-1]
    bulk = ns.vectors(labels)
    one_by_one = ns.vectors(labels, bulk=False)
    assert bulk.shape == (len(labels), 8) and bulk.dtype == np.float32
    assert np.array_equal(bulk, one_by_one)
    assert ids(ns.recall(fp32(data[7]), 5, T0, exact=True))[0] in (b"f001", b"f007")


def test_hybrid_search_when_no_fact_passes_the_filters() -> None:
    store, data = invoices(50)
    ns = store.namespaces[b"kb"]
    for fusion in ("RRF", "LINEAR"):
        assert ns.search(b"invoice", 5, T0, vector=fp32(data[0]), fusion=fusion,
                         kind=b"missing") == []
        assert ns.search(b"invoice", 5, T0, vector=fp32(data[0]), fusion=fusion,
                         prefix=b"zzz") == []
    # a query without a term: the vector side alone
    hits = ns.search(b"", 3, T0, vector=fp32(data[4]))
    assert search_ids(hits)[0] == b"inv/00004" and all(h.text_score == 0 for h in hits)


# --- searches on another thread (PendingSearch, quiesce) ---------------------------------------


def test_a_pending_search_skips_facts_deleted_or_replaced_before_it_finishes() -> None:
    import concurrent.futures

    from hotkv_server.stores.sem import PendingSearch

    store = make(dim=8)
    rng = np.random.default_rng(3)
    data = rng.standard_normal((200, 8)).astype(np.float32)
    for i, vec in enumerate(data):
        put(store, b"f%d" % i, vec)
    ns = store.namespaces[b"kb"]
    pending = ns.recall_deferred(fp32(data[5]), 3, T0)
    assert isinstance(pending, PendingSearch)
    ns.begin_search(pending)
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        future = pool.submit(pending.run)
        ns.track(future)
        assert ns.searches_in_flight() == 1
        # a write waits for the search in flight, then changes the index
        store.apply(["sem.del", b"kb", [b"f5"]])
        assert future.done()
        assert ns.searches_in_flight() == 0
        found_before = [fact.id for fact, _ in pending.found or []]
        assert found_before[0] == b"f5"
        second = found_before[1]
        put(store, second, data[second_index := int(second[1:])] * -1)  # replaced: a new Fact
        ns.untrack(future)  # the loop thread's bookkeeping, after the quiesce: harmless
    hits = pending.finish(T0)
    assert [fact.id for fact, _ in hits] == found_before[2:]
    assert second_index != 5


def test_drop_and_snapshot_wait_for_searches_in_flight() -> None:
    import concurrent.futures

    from hotkv_server.stores.sem import PendingSearch

    store = make(dim=8)
    for i in range(100):
        put(store, b"f%d" % i, np.random.default_rng(i).standard_normal(8))
    ns = store.namespaces[b"kb"]
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        futures = []
        for i in range(4):
            pending = ns.recall_deferred(fp32(np.ones(8) * (i + 1)), 5, T0)
            assert isinstance(pending, PendingSearch)
            ns.begin_search(pending)
            futures.append(pool.submit(pending.run))
            ns.track(futures[-1])
        store.snapshot()
        assert all(f.done() for f in futures) and ns.searches_in_flight() == 0
        pending = ns.recall_deferred(fp32(np.ones(8)), 5, T0, ef=500)
        assert isinstance(pending, PendingSearch)
        ns.begin_search(pending)
        futures = [pool.submit(pending.run)]
        ns.track(futures[0])
        assert store.apply(["sem.drop", b"kb"]) is True
        assert futures[0].done()
    assert len(pending.finish(T0)) == 5
