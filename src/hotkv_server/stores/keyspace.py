"""The string cache: Redis's string keyspace (GET/SET ...) with per-key absolute deadlines.

State is two dicts, ``key -> value`` and ``key -> deadline`` (ms since the epoch, only for
keys that have one), plus a min-heap of ``(deadline, key)`` for active expiry. The heap is
lazily invalidated: an entry whose key no longer has exactly that deadline is skipped when
popped, and the heap is rebuilt from the deadline dict when stale entries dominate it.

A key is expired once ``deadline <= now``. Reads (``get``, ``exists`` ...) remove an
expired key they meet (lazy expiry) and ``purge_expired`` removes due keys in the
background (active expiry); both count into ``expired_count`` for INFO.

Effects (records in ``keyspace_effects``; wire form in brackets):

* ``KvSet`` ``["kv.set", key, value, expires_at | None]`` - store a value; None drops any
  deadline (a KEEPTTL or an INCR carries the existing deadline explicitly).
* ``KvMset`` ``["kv.mset", [key, value, key, value ...]]`` - many values, no deadline.
* ``KvDel`` ``["kv.del", [key ...]]`` - remove keys; returns how many existed.
* ``KvExpire`` ``["kv.expire", key, at]`` - give an existing key a deadline (one already
  passed makes the key expired at once); returns 1 if the key existed, else 0.
* ``KvPersist`` ``["kv.persist", key]`` - drop a key's deadline; returns 1 if it had one.

For ``maxmemory`` (``hotkv_server.server.memory``) the store also keeps, at little cost:

* ``estimated_bytes()``: the bytes of keys and values plus a fixed per-key overhead
  (measured on CPython 3.11), kept as a running sum so the eviction loop sees at once
  what an eviction freed;
* an access clock for approximate LRU, only while ``track_access(True)`` (an LRU policy
  is in force): ``get`` stamps the key with a counter, writes stamp it too, and
  ``idle_rank`` tells how long ago a key was used (in accesses, as Redis's LRU clock);
* ``sample_keys``: keys drawn at random in O(1) each, from a key list rebuilt when keys
  were added or removed in numbers (Python dicts have no random access);
* ``keys_by_deadline``: keys in the order they expire, walked on the expiry heap.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from heapq import heapify, heappop, heappush
from itertools import islice
from typing import Any, ClassVar

import numpy as np

from hotkv_server.stores.base import EffectError, Store
from hotkv_server.stores.keyspace_effects import KvDel, KvExpire, KvMset, KvPersist, KvSet

#: the heap is rebuilt once it holds more than 2 * live deadlines + this many entries
_HEAP_SLACK = 1024
#: bytes a key costs beyond its key and value bytes (dict slot, two bytes objects), and
#: what a deadline adds (its dict slot, int and heap tuple): measured with 200k keys
ENTRY_OVERHEAD = 112
DEADLINE_OVERHEAD = 200
#: what a key's LRU access stamp adds (dict slot and int), while an LRU policy keeps them
ACCESS_OVERHEAD = 84


class KeyValueStore(Store):
    """The string cache's id space: binary keys to binary values, each with an optional TTL."""

    name: ClassVar[str] = "kv"

    __slots__ = (
        "_access",
        "_added",
        "_data_bytes",
        "_expires",
        "_heap",
        "_heap_limit",
        "_pool_all",
        "_pool_volatile",
        "_scan_added",
        "_scan_cursors",
        "_scan_keys",
        "_tick",
        "_values",
        "expired_count",
    )

    def __init__(self) -> None:
        self._values: dict[bytes, bytes] = {}
        self._expires: dict[bytes, int] = {}
        self._heap: list[tuple[int, bytes]] = []
        self._heap_limit = _HEAP_SLACK
        #: keys removed because their deadline passed (lazily or actively), for INFO
        self.expired_count = 0
        # SCAN walks keys in hash order from a sorted list built at cursor 0. Keys created
        # after the list was built may be missed, which SCAN allows; the list is rebuilt at
        # the next cursor 0 only if a key was created since (``_added`` counts creations).
        self._added = 0
        self._scan_added = -1
        self._scan_cursors: np.ndarray[Any, np.dtype[np.uint64]] | None = None
        self._scan_keys: np.ndarray[Any, np.dtype[np.object_]] | None = None
        #: sum of len(key) + len(value) over the keys held
        self._data_bytes = 0
        #: key -> access clock at its last use, only while an LRU policy asks for it
        self._access: dict[bytes, int] | None = None
        self._tick = 0
        # key lists for random sampling (every key / keys with a deadline)
        self._pool_all: list[bytes] = []
        self._pool_volatile: list[bytes] = []

    # --- reads ----------------------------------------------------------------------
    def get(self, key: bytes, now_ms: int) -> bytes | None:
        """The value of a live key, else None (an expired key is removed on the way)."""
        value = self._values.get(key)
        if value is None:
            return None
        if self._expires:
            at = self._expires.get(key)
            if at is not None and at <= now_ms:
                self._expire_key(key)
                return None
        if self._access is not None:
            self._tick += 1
            self._access[key] = self._tick
        return value

    def peek(self, key: bytes, now_ms: int) -> bytes | None:
        """``get`` that does not count as a use for LRU (SCAN, EXISTS, as Redis's NOTOUCH)."""
        value = self._values.get(key)
        if value is None or not self._expires:
            return value
        at = self._expires.get(key)
        if at is not None and at <= now_ms:
            self._expire_key(key)
            return None
        return value

    def exists(self, ident: bytes, now_ms: int) -> bool:
        return self.peek(ident, now_ms) is not None

    def expiry(self, key: bytes) -> int | None:
        """The deadline of a key already found live by ``get``/``exists``; None if it has none."""
        return self._expires.get(key)

    def ttl_ms(self, key: bytes, now_ms: int) -> int:
        """Milliseconds left as PTTL reports them: -2 missing, -1 no deadline, else >= 0."""
        if self.get(key, now_ms) is None:
            return -2
        at = self._expires.get(key)
        if at is None:
            return -1
        return max(at - now_ms, 0)

    def __len__(self) -> int:
        """Keys held, counting expired ones active expiry has not reached yet (as DBSIZE)."""
        return len(self._values)

    def expiring(self) -> int:
        """Keys held that have a deadline (INFO keyspace ``expires=``)."""
        return len(self._expires)

    def ids(self, now_ms: int) -> list[bytes]:
        """Every live key (expired ones met on the way are removed)."""
        if self._expires:
            due = [key for key, at in self._expires.items() if at <= now_ms]
            for key in due:
                self._expire_key(key)
        return list(self._values)

    def key_at(self, index: int) -> bytes | None:
        """The key at position ``index`` of the dict's order (RANDOMKEY), live or not; O(index)."""
        if index < 0 or index >= len(self._values):
            return None
        return next(islice(self._values, index, None))

    def scan(self, cursor: int, count: int, now_ms: int) -> tuple[int, list[bytes]]:
        """One SCAN step: ``(next cursor, live keys)``; cursor 0 starts and ends a walk.

        Keys are visited in the order of their 64-bit hash and the cursor is the hash to
        resume at, so every key that exists for a whole walk is returned, whatever is
        written in between, and keys sharing a hash are never split across two steps.
        """
        if self._scan_cursors is None or (cursor == 0 and self._scan_added != self._added):
            self._build_scan_order()
        cursors = self._scan_cursors
        keys_in_order = self._scan_keys
        assert cursors is not None and keys_in_order is not None
        n = len(keys_in_order)
        start = int(np.searchsorted(cursors, np.uint64(cursor))) if cursor else 0
        end = min(start + max(count, 1), n)
        while 0 < end < n and cursors[end] == cursors[end - 1]:
            end += 1
        found = [key for key in keys_in_order[start:end].tolist() if self.peek(key, now_ms) is not None]
        if end < n:
            return int(cursors[end]), found
        # the walk is over: let go of the key list (a walk still running rebuilds it)
        self._scan_cursors = None
        self._scan_keys = None
        return 0, found

    def _build_scan_order(self) -> None:
        """Sort the keys by their hash as an unsigned 64-bit number (0 is taken as 1, since
        cursor 0 means "start"); numpy keeps this near 0.2 s per million keys."""
        keys = np.empty(len(self._values), dtype=object)
        keys[:] = list(self._values)
        hashes = np.fromiter(map(hash, keys), dtype=np.int64, count=len(keys)).view(np.uint64)
        hashes[hashes == 0] = 1
        order = np.argsort(hashes)
        self._scan_cursors = hashes[order]
        self._scan_keys = keys[order]
        self._scan_added = self._added

    # --- effects --------------------------------------------------------------------
    def appliers(self) -> dict[type[Any], Callable[[Any], Any]]:
        return {
            KvSet: self._apply_set,
            KvDel: self._apply_del,
            KvMset: self._apply_mset,
            KvExpire: self._apply_expire,
            KvPersist: self._apply_persist,
        }

    def _apply_set(self, effect: KvSet) -> None:
        key = effect.key
        value = effect.value
        at = effect.expires_at
        values = self._values
        old = values.get(key)
        if old is None:
            self._added += 1
            self._data_bytes += len(key) + len(value)
        else:
            self._data_bytes += len(value) - len(old)
        values[key] = value
        if self._access is not None:
            self._tick += 1
            self._access[key] = self._tick
        if at is None:
            if self._expires:
                self._expires.pop(key, None)
        else:
            self._expires[key] = at
            self._push_deadline(at, key)

    def _apply_del(self, effect: KvDel) -> int:
        return self._delete(effect.keys_)

    def _apply_mset(self, effect: KvMset) -> None:
        self._mset(effect.pairs)

    def _apply_expire(self, effect: KvExpire) -> int:
        return self._set_deadline(effect.key, effect.at)

    def _apply_persist(self, effect: KvPersist) -> int:
        return self._persist(effect.key)

    def _mset(self, pairs: list[bytes]) -> None:
        if len(pairs) % 2:
            raise EffectError("kv.mset needs key, value pairs")
        values = self._values
        expires = self._expires
        access = self._access
        grown = 0
        for i in range(0, len(pairs), 2):
            key = pairs[i]
            value = pairs[i + 1]
            old = values.get(key)
            if old is None:
                self._added += 1
                grown += len(key) + len(value)
            else:
                grown += len(value) - len(old)
            values[key] = value
            if expires:
                expires.pop(key, None)
            if access is not None:
                self._tick += 1
                access[key] = self._tick
        self._data_bytes += grown

    def _delete(self, keys: list[bytes]) -> int:
        values = self._values
        expires = self._expires
        access = self._access
        removed = 0
        for key in keys:
            old = values.pop(key, None)
            if old is not None:
                removed += 1
                self._data_bytes -= len(key) + len(old)
                if expires:
                    expires.pop(key, None)
                if access:
                    access.pop(key, None)
        return removed

    def _set_deadline(self, key: bytes, at: int) -> int:
        if key not in self._values:
            return 0
        self._expires[key] = at
        self._push_deadline(at, key)
        return 1

    def _persist(self, key: bytes) -> int:
        return 0 if self._expires.pop(key, None) is None else 1

    def _push_deadline(self, at: int, key: bytes) -> None:
        heap = self._heap
        heappush(heap, (at, key))
        if len(heap) > self._heap_limit:
            self._rebuild_heap()

    def _rebuild_heap(self) -> None:
        """Drop stale heap entries (overwritten, persisted or deleted keys)."""
        heap = [(at, key) for key, at in self._expires.items()]
        heapify(heap)
        self._heap = heap
        self._heap_limit = 2 * len(heap) + _HEAP_SLACK

    def _expire_key(self, key: bytes) -> None:
        value = self._values.pop(key)
        del self._expires[key]
        self._data_bytes -= len(key) + len(value)
        if self._access:
            self._access.pop(key, None)
        self.expired_count += 1

    # --- active expiry ----------------------------------------------------------------
    def purge_expired(self, now_ms: int, limit: int) -> int:
        heap = self._heap
        expires = self._expires
        removed = 0
        while heap and removed < limit and heap[0][0] <= now_ms:
            at, key = heappop(heap)
            if expires.get(key) == at:
                self._expire_key(key)
                removed += 1
        return removed

    # --- maxmemory ----------------------------------------------------------------------
    def estimated_bytes(self) -> int:
        """What the keys take in memory: their bytes plus the measured per-key overheads."""
        size = (
            self._data_bytes
            + len(self._values) * ENTRY_OVERHEAD
            + len(self._expires) * DEADLINE_OVERHEAD
        )
        return size + len(self._access) * ACCESS_OVERHEAD if self._access else size

    def track_access(self, on: bool) -> None:
        """Keep (or stop keeping) the LRU access clock; keys not used since count as oldest."""
        if on and self._access is None:
            self._access = {}
        elif not on:
            self._access = None

    @property
    def tracking_access(self) -> bool:
        return self._access is not None

    def last_access(self, key: bytes) -> int:
        """The access clock at the key's last use; 0 when unused since tracking began."""
        return self._access.get(key, 0) if self._access else 0

    @property
    def access_clock(self) -> int:
        """The current access clock: ``access_clock - last_access(key)`` is the key's idle time."""
        return self._tick

    def sample_keys(self, count: int, rand: Callable[[int], int], *, volatile: bool = False) -> list[bytes]:
        """Up to ``count`` keys drawn at random (with repeats), among all keys or, with
        ``volatile``, among keys with a deadline; expired ones not yet purged may appear.

        Draws index a list of the keys built when needed: it is rebuilt when the dict has
        grown by a quarter since (new keys would never be drawn) or when most draws land on
        keys removed since, so the O(n) rebuild is paid once per O(n) changes.
        """
        source: dict[bytes, Any] = self._expires if volatile else self._values
        if not source or count <= 0:
            return []
        pool = self._pool_volatile if volatile else self._pool_all
        if not pool or len(source) > len(pool) + len(pool) // 4 + 16:
            pool = self._rebuild_pool(volatile)
        out: list[bytes] = []
        misses = 0
        rebuilt = False
        while len(out) < count:
            key = pool[rand(len(pool))]
            if key in source:
                out.append(key)
                continue
            misses += 1
            if misses > 2 * count + 8:
                if rebuilt:
                    break
                pool = self._rebuild_pool(volatile)
                rebuilt = True
                misses = 0
        return out

    def _rebuild_pool(self, volatile: bool) -> list[bytes]:
        if volatile:
            self._pool_volatile = list(self._expires)
            return self._pool_volatile
        self._pool_all = list(self._values)
        return self._pool_all

    def keys_by_deadline(self) -> Iterator[bytes]:
        """Keys with a deadline, the nearest deadline first, read from the heap in place.

        The heap is walked as a tree (a small heap of positions, O(log k) per key), so
        the first k keys cost O(k log k) whatever the size; stale entries are passed over.
        Do not change the store while iterating.
        """
        heap = self._heap
        expires = self._expires
        frontier: list[tuple[int, int]] = [(heap[0][0], 0)] if heap else []
        n = len(heap)
        while frontier:
            _, i = heappop(frontier)
            at, key = heap[i]
            if expires.get(key) == at:
                yield key
            for child in (2 * i + 1, 2 * i + 2):
                if child < n:
                    heappush(frontier, (heap[child][0], child))

    def entry_bytes(self, key: bytes) -> int:
        """What removing this key would take off ``estimated_bytes()`` (0 when missing)."""
        value = self._values.get(key)
        if value is None:
            return 0
        size = len(key) + len(value) + ENTRY_OVERHEAD
        if key in self._expires:
            size += DEADLINE_OVERHEAD
        if self._access and key in self._access:
            size += ACCESS_OVERHEAD
        return size

    # --- whole state ------------------------------------------------------------------
    def clear(self) -> None:
        self._values = {}
        self._expires = {}
        self._heap = []
        self._heap_limit = _HEAP_SLACK
        self._added += 1
        self._scan_cursors = None
        self._scan_keys = None
        self._data_bytes = 0
        if self._access is not None:
            self._access = {}
        self._pool_all = []
        self._pool_volatile = []

    def snapshot(self) -> list[Any]:
        """A flat list ``[key, value, deadline | None, ...]``."""
        expires = self._expires
        out: list[Any] = []
        for key, value in self._values.items():
            out.extend((key, value, expires.get(key)))
        return out

    def restore(self, state: list[Any]) -> None:
        if len(state) % 3:
            raise EffectError("kv snapshot needs key, value, deadline triples")
        self.clear()
        values = self._values
        expires = self._expires
        size = 0
        for i in range(0, len(state), 3):
            key = state[i]
            value = state[i + 1]
            values[key] = value
            size += len(key) + len(value)
            at = state[i + 2]
            if at is not None:
                expires[key] = at
        self._data_bytes = size
        self._rebuild_heap()

    def stats(self, now_ms: int) -> dict[str, int]:
        n = len(self._values)
        return {
            "objects": n,
            "entries": n,
            "expires": len(self._expires),
            "expired": self.expired_count,
        }
