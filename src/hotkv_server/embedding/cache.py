"""The embedding cache: (embedder model, text) -> vector, least recently used out first.

Bounded by ``embed-cache-max-memory`` bytes (the text, the vector and about 120 bytes of
bookkeeping per entry; 0 turns it off). Keyed by the embedder's ``model`` string (name,
model and dimension), so reconfiguring an embedder never answers from the old model's
vectors. Touched only on the event-loop thread (lookups before a request goes to the
pool, inserts when its vectors come back), so it needs no lock. Per process and not
persisted: it is derived data, and effects already carry every vector that was stored.
The counters appear in ``INFO amem`` as ``embed_cache_*``.
"""

from __future__ import annotations

from collections import OrderedDict

ENTRY_OVERHEAD = 120


class EmbeddingCache:
    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._entries: OrderedDict[tuple[str, bytes], bytes] = OrderedDict()
        self.bytes = 0
        self.hits = 0
        self.misses = 0
        self.evictions = 0
        #: entries put by a prefetch whose miss was counted then: their first use is no hit
        self._ahead: set[tuple[str, bytes]] = set()

    def __len__(self) -> int:
        return len(self._entries)

    @staticmethod
    def _cost(text: bytes, vector: bytes) -> int:
        return len(text) + len(vector) + ENTRY_OVERHEAD

    def get(self, model: str, text: bytes) -> bytes | None:
        key = (model, text)
        vector = self._entries.get(key)
        if vector is None:
            self.misses += 1
            return None
        self._entries.move_to_end(key)
        if key in self._ahead:
            self._ahead.discard(key)
        else:
            self.hits += 1
        return vector

    def peek(self, model: str, text: bytes) -> bool:
        """Whether the cache holds the text (counting nothing)."""
        return (model, text) in self._entries

    def put(self, model: str, text: bytes, vector: bytes, *, ahead: bool = False) -> None:
        cost = self._cost(text, vector)
        if cost > self.max_bytes:
            return
        key = (model, text)
        old = self._entries.pop(key, None)
        if old is not None:
            self.bytes -= self._cost(text, old)
        self._entries[key] = vector
        self.bytes += cost
        if ahead:
            self._ahead.add(key)
        self._shrink()

    def resize(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._shrink()

    def clear(self) -> None:
        self._entries.clear()
        self._ahead.clear()
        self.bytes = 0

    def _shrink(self) -> None:
        entries = self._entries
        while self.bytes > self.max_bytes and entries:
            key, vector = entries.popitem(last=False)
            self._ahead.discard(key)
            self.bytes -= self._cost(key[1], vector)
            self.evictions += 1

    def info(self) -> list[tuple[str, int]]:
        return [
            ("embed_cache_hits", self.hits),
            ("embed_cache_misses", self.misses),
            ("embed_cache_entries", len(self._entries)),
            ("embed_cache_bytes", self.bytes),
            ("embed_cache_max_bytes", self.max_bytes),
            ("embed_cache_evictions", self.evictions),
        ]
