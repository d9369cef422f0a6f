"""The one vector engine: an hnswlib HNSW index with its labels, deletes, searches in flight on
other threads, filtered k-NN, bulk vector reads and snapshots in hnswlib's own format.

Semantic memory (``stores/sem``), Redis 8 vector sets and HotKV's ``VSIM.*`` indexes
(``stores/vectorset.py``) all keep their vectors in an :class:`HnswGraph`; each adds its own
records beside the graph (a Fact, a vector-set element) in ``_by_label``.

Labels (hnswlib's integer ids) are process-local and never appear in effects. A deleted
element is ``mark_deleted`` and its label goes to a free list; the next new element takes it
back and hnswlib updates the element in place (``add_items`` on a deleted label un-marks it),
so churn never grows the index past its high-water mark. The index starts at
``INITIAL_ELEMENTS`` slots and grows with ``resize_index`` (:func:`grown_capacity`). It is
created on the first add and released when the owner becomes empty.

hnswlib allows no ``add_items``, ``mark_deleted`` or ``resize_index`` while a search runs,
and ``set_ef`` is one value per index, so the graph keeps the futures of its searches in
flight (:meth:`HnswGraph.track`) and every path that changes the index or its ef first waits
for them (:meth:`HnswGraph.quiesce`).
"""

from __future__ import annotations

import concurrent.futures
import os
from collections.abc import Callable
from typing import Any

import hnswlib
import numpy as np

#: first size of an index; it doubles when full up to DOUBLING_MAX slots, then grows by a
#: quarter (each slot costs ~50 bytes of hnswlib lock, level and visited-list tables even
#: while unused: doubling at 65,536 left 100,000 facts paying for 131,072 slots)
INITIAL_ELEMENTS = 16
DOUBLING_MAX = 1 << 16
#: from this many vectors (and an eighth of the index) on, read them from one copy of the
#: whole index instead of one by one (see HnswGraph.vectors)
BULK_READ_MIN = 512
#: hnswlib's bytes per slot beside data_level0 (lock, level, visited tables), measured
SLOT_OVERHEAD = 50
VECTOR_DTYPE = np.dtype("<f4")
#: dtypes of the arrays in hnswlib's serialized index (``Index.__getstate__``)
INDEX_ARRAYS: dict[str, np.dtype[Any]] = {
    "label_lookup_external": np.dtype(np.uint64),
    "label_lookup_internal": np.dtype(np.uint32),
    "element_levels": np.dtype(np.int32),
    "data_level0": np.dtype(np.int8),
    "link_lists": np.dtype(np.int8),
}


def grown_capacity(capacity: int) -> int:
    """The next size of a full index of ``capacity`` slots (see INITIAL_ELEMENTS)."""
    if capacity < DOUBLING_MAX:
        return 2 * capacity
    return capacity + capacity // 4


def knn(
    index: hnswlib.Index, query: np.ndarray, k: int, allowed: Callable[[int], bool] | None
) -> list[tuple[int, float]] | None:
    """hnswlib's k-NN of ``query``: (label, hnswlib distance) nearest first; None when the
    graph walk reached fewer than ``k`` allowed elements (the caller then scans exactly).

    Any thread: ``knn_query`` releases the GIL while it walks; ``allowed`` runs inside the
    walk (holding the GIL), so a filtered search still returns ``k`` matches whenever that
    many exist and the walk reaches them."""
    try:
        if allowed is None:
            labels, dists = index.knn_query(query, k=k)
        else:
            labels, dists = index.knn_query(query, k=k, filter=allowed)
    except RuntimeError:
        return None
    return list(zip(labels[0].tolist(), dists[0].tolist(), strict=True))


class HnswGraph:
    """An hnswlib index and its label bookkeeping; the owner's record of each label is in
    ``_by_label`` (None for a free label)."""

    def __init__(self, dim: int, space: str, m: int, ef_construction: int, ef: int) -> None:
        self.dim = dim
        self.space = space  # hnswlib's: "cosine", "ip" or "l2"
        self.m = m
        self.ef_construction = ef_construction
        self.ef = ef
        self._index: hnswlib.Index | None = None
        self._by_label: list[Any] = []
        self._free: list[int] = []
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
        """``future`` runs a search of this index (after :meth:`begin_breadth`)."""
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

    def begin_breadth(self, breadth: int) -> None:
        """Before a search at ``breadth`` runs on another thread: set hnswlib's ef for it
        (waiting first for searches in flight at another ef, since ef is one per index)."""
        if self._inflight and self._inflight_ef != breadth:
            self.quiesce()
        if not self._inflight and self._index is not None:
            self._index.set_ef(breadth)
            self._inflight_ef = breadth

    def knn_search(
        self, query: np.ndarray, k: int, breadth: int, allowed: Callable[[int], bool] | None
    ) -> list[tuple[int, float]] | None:
        """:func:`knn` at ``breadth``. On a search thread (after :meth:`begin_breadth`) ef is
        already set; in place (nothing in flight) it is set here and put back."""
        index = self._index
        assert index is not None
        synchronous = not self._inflight
        if synchronous:
            index.set_ef(breadth)
        try:
            return knn(index, query, min(k, index.get_current_count()), allowed)
        finally:
            if synchronous:
                index.set_ef(self.ef)

    # --- labels and writes --------------------------------------------------------------
    def new_label(self) -> int:
        """A label for a new element: a freed one, or the next (growing the index)."""
        if self._free:
            return self._free.pop()
        label = len(self._by_label)
        index = self._index
        if index is None:
            index = hnswlib.Index(space=self.space, dim=self.dim)
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

    def add_vector(self, label: int, vector: np.ndarray) -> None:
        """Index ``vector`` (float32, as the index holds it) under ``label``."""
        assert self._index is not None
        self._index.add_items(vector.reshape(1, -1), [label])

    def free_label(self, label: int) -> None:
        """The element of ``label`` is gone: mark it deleted, its label free for reuse."""
        assert self._index is not None
        self._by_label[label] = None
        self._index.mark_deleted(label)
        self._free.append(label)

    def reset_index(self) -> None:
        """Release the index (and its fixed lock tables): the owner is empty."""
        self._index = None
        self._by_label = []
        self._free = []

    # --- reads --------------------------------------------------------------------------
    def vector_of(self, label: int) -> np.ndarray:
        """The indexed float32 vector of ``label``."""
        assert self._index is not None
        return np.asarray(self._index.get_items([label]), dtype=VECTOR_DTYPE).reshape(-1)

    def vectors(self, labels: list[int], *, bulk: bool = True) -> np.ndarray:
        """The indexed vectors of ``labels`` as a (len, dim) float32 array.

        hnswlib's ``get_items`` hands each value back as a Python float (some 60 ns a
        value); for more than BULK_READ_MIN vectors and a good share of the index, one copy
        of the whole index (``__getstate__``, a memory copy) is much faster. ``bulk=False``
        never copies the index."""
        index = self._index
        assert index is not None
        if not labels:
            return np.zeros((0, self.dim), dtype=np.float32)
        if bulk and len(labels) >= BULK_READ_MIN and 8 * len(labels) >= index.get_current_count():
            return self._bulk_vectors(labels)
        return np.asarray(index.get_items(labels), dtype=np.float32).reshape(
            len(labels), self.dim)

    def _level0(self) -> tuple[dict[str, Any], np.ndarray]:
        """hnswlib's state and its level-0 memory as (elements, bytes per element) rows,
        each ``[links][vector][label]`` (the layout its own pickling uses)."""
        assert self._index is not None
        state = self._index.__getstate__()[0]
        size = state["size_data_per_element"]
        count = state["cur_element_count"]
        raw = np.asarray(state["data_level0"]).view(np.uint8)[: count * size].reshape(count, size)
        return state, raw

    def _bulk_vectors(self, labels: list[int]) -> np.ndarray:
        state, raw = self._level0()
        count = raw.shape[0]
        start, at = state["offset_data"], state["label_offset"]
        element_labels = np.ascontiguousarray(raw[:, at:at + 8]).view("<u8").reshape(count)
        row_of = np.full(len(self._by_label), -1, dtype=np.int64)
        row_of[element_labels.astype(np.int64)] = np.arange(count)
        rows = row_of[np.asarray(labels, dtype=np.int64)]
        return np.ascontiguousarray(raw[rows, start:start + 4 * self.dim]).view("<f4").reshape(
            len(labels), self.dim)

    def exact(self, query: np.ndarray, labels: list[int], k: int) -> list[tuple[int, float]]:
        """Exact top ``k`` of ``labels`` by hnswlib's distance to ``query`` (ties: earlier
        first): the ground truth a filtered or TRUTH search answers with."""
        if not labels:
            return []
        vecs = self.vectors(labels)
        if self.space == "l2":
            diff = vecs - query
            dists = np.einsum("ij,ij->i", diff, diff)
        else:
            dists = 1.0 - vecs @ query
        order = np.argsort(dists, kind="stable")[:k]
        return [(labels[i], float(dists[i])) for i in order.tolist()]

    def index_count(self) -> int:
        """Elements hnswlib holds, deleted ones included."""
        return 0 if self._index is None else self._index.get_current_count()

    def index_capacity(self) -> int:
        return 0 if self._index is None else self._index.get_max_elements()

    def index_nbytes(self) -> int:
        """What the index holds in memory: every slot's level-0 block (links, vector, label)
        and its lock/visited tables, plus the upper-level links of about 1/ln(M) elements."""
        if self._index is None:
            return 0
        level0 = 4 * (2 * self.m + 1) + 4 * self.dim + 8
        upper = (4 * (self.m + 1)) // max(1, int(np.log(max(self.m, 2))))
        return self._index.get_max_elements() * (level0 + SLOT_OVERHEAD) + \
            self._index.get_current_count() * upper

    # --- snapshots ----------------------------------------------------------------------
    def index_state(self) -> dict[str, Any] | None:
        """hnswlib's own serialized index (None without one), its arrays as buffers."""
        self.quiesce()
        if self._index is None:
            return None
        params = self._index.__getstate__()[0]  # already a copy of the index
        # views, not .tobytes(): msgpack writes buffers as bin, and a 100k x 768 index
        # is 300+ MB that need not be copied once more
        return {key: value.data if isinstance(value, np.ndarray) else value
                for key, value in params.items()}

    def load_index_state(self, state: dict[str, Any] | None, labels: int,
                         free: list[int]) -> None:
        """Rebuild the index from :meth:`index_state` (no re-insertion); the owner fills
        ``_by_label`` for ``labels`` labels afterwards."""
        self._index = None
        if state is not None:
            params = {
                key: np.frombuffer(value, dtype=INDEX_ARRAYS[key]) if key in INDEX_ARRAYS
                else value
                for key, value in state.items()
            }
            self._index = hnswlib.Index(params)
            self._index.set_num_threads(1)
            self._index.set_ef(self.ef)
        self._by_label = [None] * labels
        self._free = list(free)
