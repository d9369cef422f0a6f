"""A semantic namespace's state and its writes: settings, the HNSW index and its labels,
the facts, eviction, expiry, snapshots (design notes: ``stores/sem/facts.py``)."""

from __future__ import annotations

import bisect
import concurrent.futures
import heapq
import os
from collections.abc import Callable
from typing import Any, Self

import hnswlib
import numpy as np

from hotkv_server.stores.base import EffectError
from hotkv_server.stores.sem.facts import (
    _INDEX_ARRAYS,
    _ONE,
    _SPACES,
    _VECTOR_DTYPE,
    DEFAULT_EF,
    DEFAULT_EF_CONSTRUCTION,
    DEFAULT_EVICT,
    DEFAULT_M,
    DEFAULT_METRIC,
    EVICT_POLICIES,
    INITIAL_ELEMENTS,
    Fact,
    fact_terms,
    grown_capacity,
    prefix_end,
)
from hotkv_server.stores.text import TextIndex


class NamespaceCore:
    """One namespace's state: settings, the HNSW index, the facts beside it, and the writes
    (only through effects), eviction and snapshots. Searches are the subclasses' job
    (``recall``, ``fusion``); :class:`~hotkv_server.stores.sem.namespace.Namespace` is the whole."""

    #: told of each fact removed by expiry: (store, namespace, fact id); set by the
    #: SemanticStore from its own observer
    on_expire: Callable[[str, bytes, bytes | None], None] | None = None

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
                if self.on_expire is not None:
                    self.on_expire("sem", self.name, ident)
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
    def from_snapshot(cls, name: bytes, state: dict[str, Any]) -> Self:
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

    def index_count(self) -> int:
        """Elements hnswlib holds, deleted ones included (for tests and INFO amem)."""
        return 0 if self._index is None else self._index.get_current_count()

    def index_capacity(self) -> int:
        return 0 if self._index is None else self._index.get_max_elements()
