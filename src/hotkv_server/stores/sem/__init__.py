"""Semantic memory: per namespace, facts with an embedding vector, recalled by meaning.

One job per module: ``facts`` (the Fact record, constants, helpers; the design notes),
``core`` (a namespace's state, index labels, writes, eviction, snapshots), ``recall``
(k-NN search, in place or on a thread), ``fusion`` (text and hybrid SEARCH),
``selfcheck`` (the recall self-check), ``namespace`` (the whole Namespace), ``store``
(the SemanticStore and its effect appliers).
"""

from __future__ import annotations

from hotkv_server.stores.sem.facts import (
    AUTO_BREADTH_MAX,
    BREADTH_PER_HIT,
    BULK_READ_MIN,
    DEFAULT_ALPHA,
    DEFAULT_EF,
    DEFAULT_EF_CONSTRUCTION,
    DEFAULT_EVICT,
    DEFAULT_FUSION,
    DEFAULT_KIND,
    DEFAULT_M,
    DEFAULT_METRIC,
    DOUBLING_MAX,
    EVICT_POLICIES,
    EXACT_CHUNK,
    FUSIONS,
    HYBRID_DEPTH,
    HYBRID_DEPTH_MAX,
    INITIAL_ELEMENTS,
    MAX_DIM,
    METRICS,
    RECALL_K,
    RECALL_SAMPLE,
    RRF_K,
    Fact,
    RecallOptions,
    SearchHit,
    fact_terms,
    grown_capacity,
    prefix_end,
    search_breadth,
)
from hotkv_server.stores.sem.namespace import Namespace
from hotkv_server.stores.sem.recall import PendingSearch
from hotkv_server.stores.sem.selfcheck import RecallCheck
from hotkv_server.stores.sem.store import SemanticStore

__all__ = [
    "AUTO_BREADTH_MAX",
    "BREADTH_PER_HIT",
    "BULK_READ_MIN",
    "DEFAULT_ALPHA",
    "DEFAULT_EF",
    "DEFAULT_EF_CONSTRUCTION",
    "DEFAULT_EVICT",
    "DEFAULT_FUSION",
    "DEFAULT_KIND",
    "DEFAULT_M",
    "DEFAULT_METRIC",
    "DOUBLING_MAX",
    "EVICT_POLICIES",
    "EXACT_CHUNK",
    "FUSIONS",
    "HYBRID_DEPTH",
    "HYBRID_DEPTH_MAX",
    "INITIAL_ELEMENTS",
    "MAX_DIM",
    "METRICS",
    "RECALL_K",
    "RECALL_SAMPLE",
    "RRF_K",
    "Fact",
    "Namespace",
    "PendingSearch",
    "RecallCheck",
    "RecallOptions",
    "SearchHit",
    "SemanticStore",
    "fact_terms",
    "grown_capacity",
    "prefix_end",
    "search_breadth",
]
