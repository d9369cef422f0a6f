"""maxmemory: the used-memory estimate, and eviction from the string cache by policy.

**What "used memory" is.** Redis compares ``maxmemory`` with the bytes its allocator has
handed out. CPython has no such cheap counter, and the process RSS is no substitute on its
own: pymalloc and glibc keep freed memory for reuse instead of giving it back, so RSS does
not go down when keys are evicted, and an RSS test would evict the whole cache at the
first crossing. The estimate here is

    used = other + kv.estimated_bytes()

* ``kv.estimated_bytes()`` is a running sum kept by the string cache (key and value bytes
  plus a measured per-key overhead): an eviction shows in it at once.
* ``other`` is everything else (interpreter, AMEM stores, client buffers). It starts as
  RSS minus the cache and follows RSS, sampled at most every 100 ms: RSS growth that the
  cache's own growth does not explain is added to it. Memory the cache gave up (by
  eviction, DEL, expiry) goes to a *free pool* that later writes are taken to reuse
  before RSS grows; what the other stores write is taken from that pool too (an observer
  counts their effects' bytes), so room made for an AMEM write is not counted twice.
  When the cache grows without RSS growing, into memory counted as someone else's,
  ``other`` shrinks: the estimate corrects itself in both directions, and
  ``other + cache + pool`` always equals the last RSS sample.

The consequence worth knowing: memory freed by deleting AMEM data (never evicted) only
counts once the process reuses it or returns it to the OS.

**Eviction.** Before a ``denyoom`` command (dispatch calls ``core.memory.enforce``)
and from the server's cron, when ``used > maxmemory``, string-cache keys are removed per
``maxmemory-policy`` until the estimate is back under the limit:

* ``allkeys-lru`` / ``volatile-lru``: Redis's approximation: sample 5 keys, keep the 16
  least recently used seen so far in a pool, evict the oldest of the pool (the access
  clock lives in the store, kept only while an LRU policy is in force);
* ``allkeys-random`` / ``volatile-random``: random keys (``volatile-*``: with a deadline);
* ``volatile-ttl``: the nearest deadline first (exact, from the expiry heap);
* ``noeviction``: nothing; denyoom commands get the OOM error.

Evicted keys leave as ``KvDel`` effects, one per batch of victims (AOF and
replicas follow), and count in ``evicted_keys``; a pass stops after 10 ms and the next
command or the cron goes on, as Redis bounds its eviction loop. When nothing evictable is left and the estimate is still over the
limit, the command is refused with ``-OOM``. AMEM stores are never evicted. Replicas do
not evict (their master's deletions arrive through the link), as Redis's
``replica-ignore-maxmemory yes``.
"""

from __future__ import annotations

import random
import time
from bisect import insort
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from hotkv_server.engine.core import Subsystem, current_rss
from hotkv_server.stores.keyspace_effects import KvDel

if TYPE_CHECKING:
    from hotkv_server.engine.core import Core
    from hotkv_server.stores.effect import Effect
    from hotkv_server.stores.keyspace import KeyValueStore

#: RSS is read at most this often (a /proc read costs ~10 us; commands cost ~5 us)
SAMPLE_INTERVAL_S = 0.1
#: keys sampled per eviction round and size of the candidate pool (Redis's defaults)
MAXMEMORY_SAMPLES = 5
EVICTION_POOL_SIZE = 16
#: one eviction pass stops after this long even if still over (the next command or the
#: cron goes on), so one write never stalls the server for long
EVICTION_BUDGET_S = 0.010

POLICIES = ("noeviction", "volatile-ttl", "allkeys-lru", "volatile-lru", "allkeys-random",
            "volatile-random")


class UsedMemory:
    """The used-memory estimate described in the module docstring.

    Between two RSS samples it is told what the cache released by eviction (``released``)
    and roughly how many bytes the other stores were given (``note_effect``); at a sample
    it replays the interval. Evictions run just before the write that needs the room
    (dispatch's OOM gate), so what they released is free for that interval's writes:

    1. the evicted bytes join the free pool;
    2. the cache's additions, then the other stores' writes, take from the pool;
    3. RSS growth beyond what the cache's additions needed goes to ``other``, plus what the
       other stores took from the pool (and the cache growing without RSS growth, into
       memory the estimate had counted as someone else's, takes from ``other``).

    ``other + cache + pool`` stays equal to the last RSS sample.
    """

    def __init__(
        self,
        core: Core,
        measure: Callable[[], int] = current_rss,
        clock: Callable[[], float] = time.monotonic,
        interval: float = SAMPLE_INTERVAL_S,
    ) -> None:
        self.core = core
        self.measure = measure
        self.clock = clock
        self.interval = interval
        self.rss = measure()
        self.kv_bytes = self._kv().estimated_bytes()
        self.other = max(0, self.rss - self.kv_bytes)
        self.free_pool = 0
        self.released = 0  # cache bytes evicted since the last sample
        self.other_written = 0  # bytes written to the other stores since the last sample
        self.next_sample = clock() + interval

    def _kv(self) -> KeyValueStore:
        kv: KeyValueStore = self.core.db.kv
        return kv

    def __call__(self) -> int:
        if self.clock() >= self.next_sample:
            self.sample()
        return self.other + self._kv().estimated_bytes()

    def note_effect(self, record: Effect) -> None:
        """Effect observer: count the payload of every write to a store other than the
        cache. Listed only while maxmemory is set (only the OOM gate needs it; without a
        limit the RSS samples correct the estimate later)."""
        if not record.op.startswith("kv."):
            self.other_written += _payload_bytes(record.wire())

    def sample(self) -> None:
        """Fold the interval since the last sample into ``other`` and the free pool."""
        rss = self.measure()
        kv_now = self._kv().estimated_bytes()
        growth = rss - self.rss
        pool = self.free_pool + self.released
        added = kv_now - self.kv_bytes + self.released  # net of DEL and expiry
        if added < 0:  # DEL, expiry or FLUSHALL gave memory back
            pool -= added
            added = 0
        from_pool = min(pool, added)
        pool -= from_pool
        fresh = added - from_pool  # what the cache's writes needed beyond the pool
        reused = min(pool, self.other_written)
        pool -= reused
        # RSS growth the cache does not explain belongs to the others (negative when the
        # cache grew into memory the estimate had counted as theirs)
        other = self.other + reused + growth - fresh
        if other < 0:  # the pool held memory that was not there: keep the sum equal to RSS
            pool += other
            other = 0
        self.other = other
        self.free_pool = max(0, pool)
        self.released = 0
        self.other_written = 0
        self.rss = rss
        self.kv_bytes = kv_now
        self.next_sample = self.clock() + self.interval


def _payload_bytes(record: Any) -> int:
    """The bytes an effect carries (texts, blobs, and 8 per other value), one level deep:
    cheap enough to run on every write."""
    total = 0
    for item in record:
        kind = type(item)
        if kind is bytes or kind is str or kind is memoryview:
            total += len(item)
        elif kind is list or kind is tuple:
            for inner in item:
                total += len(inner) if type(inner) is bytes or type(inner) is str else 8
        else:
            total += 8
    return total


class MemoryGuard(Subsystem):
    """Installed on a Core: answers ``oom_check`` and evicts; also a server subsystem."""

    def __init__(
        self,
        core: Core,
        measure: Callable[[], int] | None = None,
        clock: Callable[[], float] = time.monotonic,
        rng: random.Random | None = None,
    ) -> None:
        self.core = core
        self.used = UsedMemory(core, measure or current_rss, clock)
        self.rng = rng or random.Random()
        #: how long one eviction pass may run before the cron finishes it
        self.budget_s = EVICTION_BUDGET_S
        #: LRU candidates (last access, key), least recently used first
        self.pool: list[tuple[int, bytes]] = []
        self.policy = ""
        self.reconcile()

    # --- configuration ------------------------------------------------------------
    def reconcile(self) -> None:
        """Follow the current maxmemory / maxmemory-policy (CONFIG SET may change them)."""
        config = self.core.config
        policy = config.maxmemory_policy
        if policy != self.policy:
            self.policy = policy
            self.pool = []
        kv = self.core.db.kv
        want = bool(config.maxmemory) and policy.endswith("-lru")
        if kv.tracking_access != want:
            kv.track_access(want)

    def config_changed(self, name: str, value: Any) -> None:
        if name in ("maxmemory", "maxmemory-policy"):
            self.core.effects.set_observer(self.used.note_effect,
                                           bool(self.core.config.maxmemory))
            self.reconcile()
            if self.core.config.maxmemory:
                self.enforce()  # as Redis, lowering maxmemory evicts at once

    # --- the gate -----------------------------------------------------------------
    def enforce(self) -> bool:
        """Evict while over the limit; True when still over with nothing left to evict.

        The dispatch point's ``oom_check`` before every denyoom command: it does not
        reconcile the policy (config_changed does on CONFIG SET, the cron's tick too)."""
        limit = self.core.config.maxmemory
        if not limit or self.core.loading or self.core.is_replica():
            return False
        used = self.used()
        if used <= limit:
            return False
        if self.policy == "noeviction":
            return True
        _, exhausted = self.evict(used - limit)
        if not exhausted:
            return False  # enough freed, or out of time: let the command run (Redis too)
        return self.used() > limit

    def tick(self) -> None:
        """Server cron: keep the estimate fresh and finish an eviction left over budget."""
        self.reconcile()
        if self.core.config.maxmemory and self.policy != "noeviction":
            self.enforce()
        else:
            self.used()

    # --- eviction -----------------------------------------------------------------
    def evict(self, need: int) -> tuple[int, bool]:
        """Remove about ``need`` bytes of cache keys; ``(keys evicted, ran out of keys)``.

        Victims are picked in batches, each removed by one ``kv.del`` effect; a new batch
        starts when the picker can find no key outside the current one (random draws that
        keep landing on chosen keys), so a pass only gives up when the store has none left.
        """
        core = self.core
        kv = core.db.kv
        freed = 0
        evicted = 0
        deadline = time.perf_counter() + self.budget_s
        while freed < need:
            pick = self._picker(kv)  # afresh: the heap walk must not outlive a change
            batch: dict[bytes, None] = {}
            batch_bytes = 0
            out_of_time = False
            while freed + batch_bytes < need:
                key = pick(batch)
                if key is None:
                    break
                batch[key] = None
                batch_bytes += kv.entry_bytes(key)
                if len(batch) % 64 == 0 and time.perf_counter() > deadline:
                    out_of_time = True
                    break
            if not batch:
                return evicted, True
            self._remove(list(batch), batch_bytes)
            freed += batch_bytes
            evicted += len(batch)
            if out_of_time or time.perf_counter() > deadline:
                break
        return evicted, False

    def _remove(self, keys: list[bytes], size: int) -> None:
        core = self.core
        self.used.released += size
        effects = core.effects
        core.notifier.cause = "evicted"  # notified as evicted, not deleted
        try:
            effects.emit(KvDel(keys))  # an evicted key breaks a WATCH, as in Redis
        finally:
            core.notifier.cause = None
        effects.flush()  # its own record, not one with the command that needed the room
        core.stats.evicted_keys += len(keys)

    def _picker(self, kv: KeyValueStore) -> Callable[[dict[bytes, None]], bytes | None]:
        policy = self.policy
        if policy == "volatile-ttl":
            order = kv.keys_by_deadline()

            def nearest(chosen: dict[bytes, None]) -> bytes | None:
                return next(order, None)  # each key comes once, so ``chosen`` never repeats

            return nearest
        volatile = policy.startswith("volatile-")
        if policy.endswith("-random"):
            return lambda chosen: self._random_key(kv, chosen, volatile)
        return lambda chosen: self._lru_key(kv, chosen, volatile)

    def _random_key(self, kv: KeyValueStore, chosen: dict[bytes, None], volatile: bool) -> bytes | None:
        for _ in range(8):
            found = kv.sample_keys(MAXMEMORY_SAMPLES, self.rng.randrange, volatile=volatile)
            for key in found:
                if key not in chosen:
                    return key
            if not found:
                return None
        return None  # every draw was a key already chosen: the set is (nearly) used up

    def _lru_key(self, kv: KeyValueStore, chosen: dict[bytes, None], volatile: bool) -> bytes | None:
        pool = self.pool
        for _ in range(8):
            found = kv.sample_keys(MAXMEMORY_SAMPLES, self.rng.randrange, volatile=volatile)
            if not found and not pool:
                return None
            self._fill_pool(kv, found, chosen)
            while pool:
                stamp, key = pool.pop(0)
                if key in chosen or kv.entry_bytes(key) == 0 or kv.last_access(key) != stamp:
                    continue  # gone, already taken, or used since it was sampled
                if volatile and kv.expiry(key) is None:
                    continue
                return key
        return None

    def _fill_pool(self, kv: KeyValueStore, keys: list[bytes], chosen: dict[bytes, None]) -> None:
        """Keep the EVICTION_POOL_SIZE least recently used keys seen in samples."""
        pool = self.pool
        for key in keys:
            if key in chosen:
                continue
            stamp = kv.last_access(key)
            entry = (stamp, key)
            if len(pool) >= EVICTION_POOL_SIZE and entry >= pool[-1]:
                continue
            if entry in pool:
                continue
            insort(pool, entry)
            if len(pool) > EVICTION_POOL_SIZE:
                pool.pop()


def install(
    core: Core,
    measure: Callable[[], int] | None = None,
    clock: Callable[[], float] = time.monotonic,
    rng: random.Random | None = None,
) -> MemoryGuard:
    """Wire the guard into a Core: the OOM gate, INFO's used_memory, CONFIG SET, and a
    observer counting writes to the other stores. ``measure`` reads the process size (RSS)."""
    guard = MemoryGuard(core, measure or core.used_memory_fn or current_rss, clock, rng)
    core.memory = guard
    core.used_memory_fn = guard.used
    # the observer is listed only while maxmemory is set (MemoryGuard.config_changed)
    core.effects.set_observer(guard.used.note_effect, bool(core.config.maxmemory))
    core.attach(guard)  # CONFIG SET maxmemory ..., the cron's eviction
    return guard


def attach(server: Any) -> MemoryGuard:
    """Subsystem hook (``Server._open_subsystems``): install on the server's core; the
    returned guard's ``tick`` runs in the server cron."""
    return install(server.core)
