"""The keyspace: Redis's keys, each a string or a typed value, with absolute deadlines.

A key maps to ``bytes`` (a string, kept bare so GET and SET stay cheap) or to a
``TypedValue`` (a hash, a set ... : ``stores/values.py`` is the protocol, one module per
type). State is two dicts, ``key -> value`` and ``key -> deadline`` (ms since the epoch,
only for keys that have one), plus a min-heap of ``(deadline, key)`` for active expiry.
The heap is lazily invalidated: an entry whose key no longer has exactly that deadline is
skipped when popped, and the heap is rebuilt from the deadline dict when stale entries
dominate it.

A key is expired once ``deadline <= now``. Reads (``get``, ``lookup``, ``exists`` ...)
remove an expired key they meet (lazy expiry) and ``purge_expired`` removes due keys in
the background (active expiry); both count into ``expired_count`` for INFO. ``get`` is the
string read and raises ``WrongTypeError`` (Redis's WRONGTYPE) on a typed value; ``typed``
is the same for one value type; ``lookup`` and ``peek`` return whatever the key holds.

Effects (records in ``keyspace_effects``; wire form in brackets):

* ``KvSet`` ``["kv.set", key, value, expires_at | None]`` - store a string; None drops
  any deadline (a KEEPTTL or an INCR carries the existing deadline explicitly).
* ``KvMset`` ``["kv.mset", [key, value, key, value ...]]`` - many strings, no deadline.
* ``KvPut`` ``["kv.put", key, type_name, state, expires_at | None]`` - store a typed value
  built from its snapshot ``state`` (a write to a key found absent, SINTERSTORE ...).
* ``KvDel`` ``["kv.del", [key ...]]`` - remove keys; returns how many existed.
* ``KvExpire`` ``["kv.expire", key, at]`` - give an existing key a deadline (one already
  passed makes the key expired at once); returns 1 if the key existed, else 0.
* ``KvPersist`` ``["kv.persist", key]`` - drop a key's deadline; returns 1 if it had one.
* ``KvRename`` ``["kv.rename", src, dst]`` - move src's value and deadline to dst (dst is
  replaced; a src this copy has already expired leaves dst removed, as it would have
  expired too).
* ``KvCopy`` ``["kv.copy", src, dst]`` - dst becomes a copy of src's value and deadline
  (same rule).
* each value type's own records (``KvHset``, ``KvSadd`` ...), listed in its ``effects``.

For ``maxmemory`` (``hotkv_server.server.memory``) the store also keeps, at little cost:

* ``estimated_bytes()``: the bytes of keys and values (a typed value's ``nbytes``) plus a
  fixed per-key overhead (measured on CPython 3.11), kept as a running sum so the
  eviction loop sees at once what an eviction freed;
* an access clock for approximate LRU, only while ``track_access(True)`` (an LRU policy
  is in force): reads stamp the key with a counter, writes stamp it too, and
  ``idle_rank`` tells how long ago a key was used (in accesses, as Redis's LRU clock);
* ``sample_keys``: keys drawn at random in O(1) each, from a key list rebuilt when keys
  were added or removed in numbers (Python dicts have no random access);
* ``keys_by_deadline``: keys in the order they expire, walked on the expiry heap.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Iterator
from heapq import heapify, heappop, heappush
from itertools import islice
from typing import Any, ClassVar, TypeVar

from hotkv_server.stores.base import EffectError, Store
from hotkv_server.stores.effect import Effect
from hotkv_server.stores.errors import WrongTypeError
from hotkv_server.stores.keyspace_effects import (
    KvCopy,
    KvDel,
    KvExpire,
    KvMset,
    KvPersist,
    KvPut,
    KvRename,
    KvSet,
)
from hotkv_server.stores.scanorder import ScanOrder
from hotkv_server.stores.values import Applier, TypedValue, load_value_types, string_encoding

#: the heap is rebuilt once it holds more than 2 * live deadlines + this many entries
_HEAP_SLACK = 1024
#: bytes a key costs beyond its key and value bytes (dict slot, two bytes objects), and
#: what a deadline adds (its dict slot, int and heap tuple): measured with 200k keys
ENTRY_OVERHEAD = 112
DEADLINE_OVERHEAD = 200
#: what a key's LRU access stamp adds (dict slot and int), while an LRU policy keeps them
ACCESS_OVERHEAD = 84

Value = bytes | TypedValue
_NO_MS = 2**63
T = TypeVar("T", bound=TypedValue)


def value_bytes(value: Value) -> int:
    """The bytes a value counts for (a string's length, a typed value's ``nbytes``)."""
    return len(value) if value.__class__ is bytes else value.nbytes  # type: ignore[union-attr]


def type_of(value: Value) -> str:
    """TYPE's word for a value."""
    return "string" if value.__class__ is bytes else value.type_name  # type: ignore[union-attr]


class KeyValueStore(Store):
    """The keyspace: binary keys to strings or typed values, each with an optional TTL."""

    name: ClassVar[str] = "kv"

    __slots__ = (
        "_access",
        "_added",
        "_data_bytes",
        "_expires",
        "_heap",
        "_heap_limit",
        "_ops",
        "_pool_all",
        "_pool_volatile",
        "_scan",
        "_tick",
        "_tick_times",
        "_values",
        "expired_count",
        "on_expire",
    )

    def __init__(self) -> None:
        self.on_expire = None
        self._values: dict[bytes, Value] = {}
        self._expires: dict[bytes, int] = {}
        self._heap: list[tuple[int, bytes]] = []
        self._heap_limit = _HEAP_SLACK
        #: keys removed because their deadline passed (lazily or actively), for INFO
        self.expired_count = 0
        #: keys created so far: SCAN rebuilds its order at cursor 0 only if this moved
        self._added = 0
        self._scan = ScanOrder()
        #: sum of len(key) + value_bytes(value) over the keys held
        self._data_bytes = 0
        #: key -> access clock at its last use, only while an LRU policy asks for it
        self._access: dict[bytes, int] | None = None
        self._tick = 0
        #: (access clock, ms) pairs, one per second of reads at most, while the access clock
        #: runs: they turn a key's access stamp into a time (OBJECT IDLETIME)
        self._tick_times: list[tuple[int, int]] = []
        # key lists for random sampling (every key / keys with a deadline)
        self._pool_all: list[bytes] = []
        self._pool_volatile: list[bytes] = []
        self._ops: dict[type[Any], Callable[[Any], Any]] = {
            KvSet: self._apply_set,
            KvMset: self._apply_mset,
            KvPut: self._apply_put,
            KvDel: self._apply_del,
            KvExpire: self._apply_expire,
            KvPersist: self._apply_persist,
            KvRename: self._apply_rename,
            KvCopy: self._apply_copy,
        }
        for cls in load_value_types().values():
            for record, fn in cls.effects.items():
                if record in self._ops:
                    raise EffectError(f"effect {record.op!r} declared twice")
                self._ops[record] = self._typed_applier(record, cls, fn)

    # --- reads ----------------------------------------------------------------------
    def get(self, key: bytes, now_ms: int) -> bytes | None:
        """The string at a live key, else None (an expired key is removed on the way);
        ``WrongTypeError`` if the key holds another type."""
        value = self._values.get(key)
        if value is None:
            return None
        if self._expires:
            at = self._expires.get(key)
            if at is not None and at <= now_ms:
                self._expire_key(key)
                return None
        if value.__class__ is not bytes:
            raise WrongTypeError()
        if self._access is not None:
            self._stamp_read(key, now_ms)
        return value

    def lookup(self, key: bytes, now_ms: int) -> Value | None:
        """Whatever a live key holds, counted as a use for LRU; None when missing."""
        value = self._values.get(key)
        if value is None:
            return None
        if self._expires:
            at = self._expires.get(key)
            if at is not None and at <= now_ms:
                self._expire_key(key)
                return None
        if self._access is not None:
            self._stamp_read(key, now_ms)
        return value

    def _stamp_read(self, key: bytes, now_ms: int) -> None:
        self._tick += 1
        self._access[key] = self._tick  # type: ignore[index]
        times = self._tick_times
        if not times or now_ms - times[-1][1] >= 1000:
            times.append((self._tick, now_ms))
            if len(times) > 8192:  # keep the log short: every other sample of the older half
                del times[:4096:2]

    def idle_ms(self, key: bytes, now_ms: int) -> int | None:
        """How long ago a live key was last read or written (to within a second), as the
        access clock knows it; None while no LRU policy keeps the clock running."""
        if self._access is None:
            return None
        times = self._tick_times
        stamp = self._access.get(key, 0)
        i = bisect_right(times, (stamp, _NO_MS)) - 1
        if i < 0:  # used before the first sample (or not since the clock started)
            return max(now_ms - times[0][1], 0) if times else 0
        return max(now_ms - times[i][1], 0)

    def typed(self, key: bytes, now_ms: int, cls: type[T]) -> T | None:
        """The value of type ``cls`` at a live key, None when missing, ``WrongTypeError``
        when the key holds another type. Handlers read it; they change it by effects."""
        # ``lookup`` written out: this is every hash and set command's first step
        value = self._values.get(key)
        if value is None:
            return None
        if self._expires:
            at = self._expires.get(key)
            if at is not None and at <= now_ms:
                self._expire_key(key)
                return None
        if value.__class__ is not cls:
            raise WrongTypeError()
        if self._access is not None:
            self._stamp_read(key, now_ms)
        return value

    def peek(self, key: bytes, now_ms: int) -> Value | None:
        """``lookup`` that does not count as a use for LRU (SCAN, EXISTS, as Redis's NOTOUCH)."""
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

    def type_name(self, key: bytes, now_ms: int) -> str:
        """TYPE's answer: ``string``, ``hash``, ``set`` ... or ``none``."""
        value = self.peek(key, now_ms)
        return "none" if value is None else type_of(value)

    def encoding(self, key: bytes, now_ms: int) -> str | None:
        """OBJECT ENCODING's answer, None for a missing key."""
        value = self.peek(key, now_ms)
        if value is None:
            return None
        if value.__class__ is bytes:
            return string_encoding(value)
        return value.encoding()  # type: ignore[union-attr]

    def expiry(self, key: bytes) -> int | None:
        """The deadline of a key already found live by ``get``/``exists``; None if it has none."""
        return self._expires.get(key)

    def ttl_ms(self, key: bytes, now_ms: int) -> int:
        """Milliseconds left as PTTL reports them: -2 missing, -1 no deadline, else >= 0."""
        if self.peek(key, now_ms) is None:
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

    def scan(
        self, cursor: int, count: int, now_ms: int, type_name: str | None = None,
        keep: Callable[[bytes], bool] | None = None,
    ) -> tuple[int, list[bytes]]:
        """One SCAN step: ``(next cursor, live keys)``; cursor 0 starts and ends a walk.

        Keys are visited in the order of their 64-bit hash (``ScanOrder``); with
        ``type_name`` only keys holding that type are returned. With ``keep`` (a tenant's
        key patterns) the walk sees only the keys it keeps: COUNT counts those and the
        cursor is the hash of the next one kept, so nothing in the reply depends on the
        other keys.
        """
        if keep is None:
            next_cursor, names = self._scan.step(self._values, self._added, cursor, count)
        else:
            next_cursor, names = self._scan.step_kept(self._values, self._added, cursor, count, keep)
        peek = self.peek
        found = [key for key in names if (value := peek(key, now_ms)) is not None
                 and (type_name is None or type_of(value) == type_name)]
        return next_cursor, found

    # --- effects --------------------------------------------------------------------
    def appliers(self) -> dict[type[Any], Callable[[Any], Any]]:
        return self._ops

    def _apply_set(self, effect: KvSet) -> None:
        key = effect.key
        value = effect.value
        at = effect.expires_at
        values = self._values
        old = values.get(key)
        if old is None:
            self._added += 1
            self._data_bytes += len(key) + len(value)
        elif old.__class__ is bytes:
            self._data_bytes += len(value) - len(old)
        else:  # SET replaces a value of any type
            self._data_bytes += len(value) - old.nbytes  # type: ignore[union-attr]
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

    def _apply_mset(self, effect: KvMset) -> None:
        pairs = effect.pairs
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
                grown += len(value) - value_bytes(old)
            values[key] = value
            if expires:
                expires.pop(key, None)
            if access is not None:
                self._tick += 1
                access[key] = self._tick
        self._data_bytes += grown

    def _apply_put(self, effect: KvPut) -> None:
        cls = load_value_types().get(effect.type_name)
        if cls is None:
            raise EffectError(f"kv.put of unknown type {effect.type_name!r}")
        self._store(effect.key, cls.restore(effect.state), effect.expires_at)

    def _store(self, key: bytes, value: Value, at: int | None) -> None:
        """Put any value at ``key`` in place of what it held (an empty typed value removes)."""
        if key in self._values:
            self._delete([key])
        if value.__class__ is not bytes and not len(value):
            return
        self._values[key] = value
        self._added += 1
        self._data_bytes += len(key) + value_bytes(value)
        if self._access is not None:
            self._tick += 1
            self._access[key] = self._tick
        if at is not None:
            self._expires[key] = at
            self._push_deadline(at, key)

    def _apply_del(self, effect: KvDel) -> int:
        return self._delete(effect.keys_)

    def _apply_expire(self, effect: KvExpire) -> int:
        return self._set_deadline(effect.key, effect.at)

    def _apply_persist(self, effect: KvPersist) -> int:
        return self._persist(effect.key)

    def _apply_rename(self, effect: KvRename) -> None:
        src, dst = effect.src, effect.dst
        value = self._values.get(src)
        at = self._expires.get(src)
        if value is not None and src != dst:
            self._delete([src])
        if value is None:
            self._delete([dst])
        elif src != dst:
            self._store(dst, value, at)

    def _apply_copy(self, effect: KvCopy) -> None:
        src, dst = effect.src, effect.dst
        value = self._values.get(src)
        if value is None:
            self._delete([dst])
            return
        copied = value if value.__class__ is bytes else value.copy()  # type: ignore[union-attr]
        self._store(dst, copied, self._expires.get(src))

    def _typed_applier(self, record: type[Effect], cls: type[TypedValue], fn: Applier
                       ) -> Callable[[Any], Any]:
        """Apply one of ``cls``'s records to the value at its ``key``, keeping the byte
        count, removing a value left empty, and doing nothing on a missing key."""
        missing = cls.missing
        # a record that never empties the value needs no emptiness check (a __len__ call)
        may_empty = record not in cls.growing
        op = record.op

        def apply(effect: Any) -> Any:
            key = effect.key
            value = self._values.get(key)
            if value is None:
                return missing
            if value.__class__ is not cls:
                raise EffectError(f"{op} on a key holding a {type_of(value)}")
            before = value.nbytes
            result = fn(value, effect)
            self._data_bytes += value.nbytes - before
            if may_empty and not len(value):
                self._delete([key])
            elif self._access is not None:
                self._tick += 1
                self._access[key] = self._tick
            return result

        return apply

    def _delete(self, keys: list[bytes]) -> int:
        values = self._values
        expires = self._expires
        access = self._access
        removed = 0
        for key in keys:
            old = values.pop(key, None)
            if old is not None:
                removed += 1
                self._data_bytes -= len(key) + value_bytes(old)
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
        self._data_bytes -= len(key) + value_bytes(value)
        if self._access:
            self._access.pop(key, None)
        self.expired_count += 1
        if self.on_expire is not None:
            self.on_expire("kv", key, None)

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
            self._tick_times = []
        elif not on:
            self._access = None
            self._tick_times = []

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
        With ``count`` keys or fewer to draw from, every one of them, in a random order (as
        Redis's sample sees every key of a small dict: with two keys, draws with repeats
        missed the idle one one time in 16, and allkeys-lru evicted the key being written).

        Draws index a list of the keys built when needed: it is rebuilt when the dict has
        grown by a quarter since (new keys would never be drawn) or when most draws land on
        keys removed since, so the O(n) rebuild is paid once per O(n) changes.
        """
        source: dict[bytes, Any] = self._expires if volatile else self._values
        if not source or count <= 0:
            return []
        if len(source) <= count:
            every = list(source)
            for i in range(len(every) - 1, 0, -1):  # Fisher-Yates, with the caller's draws
                j = rand(i + 1)
                every[i], every[j] = every[j], every[i]
            return every
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
        size = len(key) + value_bytes(value) + ENTRY_OVERHEAD
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
        self._scan.reset()
        self._data_bytes = 0
        if self._access is not None:
            self._access = {}
        self._pool_all = []
        self._pool_volatile = []

    def snapshot(self) -> list[Any]:
        """A flat list ``[key, value, deadline | None, ...]``; a typed value is written as
        ``[type_name, its snapshot]`` (a string stays bytes)."""
        expires = self._expires
        out: list[Any] = []
        for key, value in self._values.items():
            if isinstance(value, TypedValue):
                out.extend((key, [value.type_name, value.snapshot()], expires.get(key)))
            else:
                out.extend((key, value, expires.get(key)))
        return out

    def restore(self, state: list[Any]) -> None:
        if len(state) % 3:
            raise EffectError("kv snapshot needs key, value, deadline triples")
        self.clear()
        types = load_value_types()
        values = self._values
        expires = self._expires
        size = 0
        for i in range(0, len(state), 3):
            key = state[i]
            value = state[i + 1]
            if value.__class__ is not bytes:
                cls = types.get(value[0])
                if cls is None:
                    raise EffectError(f"kv snapshot holds a value of unknown type {value[0]!r}")
                value = cls.restore(value[1])
            values[key] = value
            size += len(key) + value_bytes(value)
            at = state[i + 2]
            if at is not None:
                expires[key] = at
        self._data_bytes = size
        self._rebuild_heap()

    def dump_id(self, ident: bytes) -> Any:
        """``[value, deadline]``; a typed value as ``[type_name, its snapshot]`` (as in
        ``snapshot``)."""
        value = self._values.get(ident)
        if value is None:
            return None
        if isinstance(value, TypedValue):
            return [[value.type_name, value.snapshot()], self._expires.get(ident)]
        return [value, self._expires.get(ident)]

    def load_id(self, ident: bytes, state: Any) -> None:
        value, at = state
        if value.__class__ is bytes:
            self._apply_set(KvSet(ident, value, at))
        else:
            self._apply_put(KvPut(ident, value[0], value[1], at))

    def drop_id(self, ident: bytes) -> None:
        self._delete([ident])

    def stats(self, now_ms: int) -> dict[str, int]:
        n = len(self._values)
        return {
            "objects": n,
            "entries": n,
            "expires": len(self._expires),
            "expired": self.expired_count,
        }
