"""Semantic memory: per namespace, facts with an embedding vector, recalled by meaning.

One job per module: ``facts`` (the Fact record, constants, helpers; the design notes),
``core`` (a namespace's state, index labels, writes, eviction, snapshots), ``recall``
(k-NN search, in place or on a thread), ``fusion`` (text and hybrid SEARCH),
``selfcheck`` (the recall self-check), ``namespace`` (the whole Namespace), ``store``
(the SemanticStore and its effect appliers). The package exports the classes; the
constants and helpers are imported from ``facts``, where they are defined.
"""

from __future__ import annotations

from hotkv_server.stores.sem.facts import Fact, SearchHit
from hotkv_server.stores.sem.namespace import Namespace
from hotkv_server.stores.sem.recall import PendingSearch
from hotkv_server.stores.sem.selfcheck import RecallCheck
from hotkv_server.stores.sem.store import SemanticStore

__all__ = ["Fact", "Namespace", "PendingSearch", "RecallCheck", "SearchHit", "SemanticStore"]
