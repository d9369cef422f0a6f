"""The value of a Redis sorted set key: members with float scores, ordered by (score, member).

Structure: a ``sortedcontainers.SortedList`` of *order keys* (a list of sorted sublists of
about 1000 items with a positional index, so insert, delete, bisect and "the element at
rank r" are O(log n)) beside a dict ``member -> score`` for O(1) ZSCORE. An order key is one
bytes object, ``score_key(score) + member``: 8 bytes whose bytewise order is the scores'
numeric order, then the member, so comparing two keys (one memcmp) orders by score and then
by the member's bytes, exactly Redis's order (memcmp of the members on a tie). A bisection
step touches one object (the key) where a ``(score, member)`` tuple would touch two or
three, which is most of the cost in a large set (cache misses). The member of a key is
``key[8:]``, its score ``scores[member]``. A score of -0.0 is stored as 0.0 while the set
is small and kept once it is big, as Redis's listpack (a whole score is an integer there)
and skiplist do; its order key is 0's.
``add`` and ``remove`` write SortedList's insert and delete out, calling its ``_expand`` /
``_delete`` only to split or merge sublists; they keep its positional index (built by the
first rank query, dropped by a split or merge) themselves, compiled (``_count``).

Measured per member (1M members of 14 bytes, CPython 3.11, tracemalloc): about 177 bytes
(order key 56, member bytes 48, float 24, dict slot ~40, list slot 8 and the index) against
about 110 bytes of ``used_memory`` in Redis 7's skiplist + dict (see benchmarks/README.md).

Ranges follow Redis's rules: ranks are inclusive with negative indexes; a score range is
``(min, min_exclusive, max, max_exclusive)`` with +-inf allowed; a lex range bound is
``LexBound`` (``-``/``+`` the infinities, or a member inclusive/exclusive). A lex range is only
meaningful when all scores are equal (as in Redis); with mixed scores it follows Redis's walk:
find the first member >= min by bisection, then go on while members stay <= max.

OBJECT ENCODING answers ``listpack`` while the set has at most 128 members of at most 64
bytes (``zset-max-listpack-*``, Redis 7.0's defaults, set by CONFIG SET through
``set_listpack_limits``), then ``skiplist`` for good.

Effects: the records of ``stores/zset_effects.py`` (``KvZadd`` carries the scores the
command decided, never ZADD's NX/XX/GT/LT/INCR; ``KvZrem``, ``KvZpop``, ``KvZremrangeby*``);
the keyspace applies them to a key holding a sorted set. A sorted set is created by
``KvPut(key, "zset", [member, score, ...], deadline)``.
"""

from __future__ import annotations

import math
import struct
from bisect import bisect_left, bisect_right, insort
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import islice
from operator import itemgetter
from typing import Any, ClassVar, Final

from sortedcontainers import SortedList

from hotkv_server.stores import zset_effects
from hotkv_server.stores.effect import Effect
from hotkv_server.stores.values import Applier, TypedValue, index_range, value_type

#: bytes a member costs beyond its payload (see the module docstring)
MEMBER_OVERHEAD: Final = 180
ZSET_OVERHEAD: Final = 900
#: zset-max-listpack-entries and zset-max-listpack-value (Redis 7.0's defaults; the engine
#: sets the configured ones with ``set_listpack_limits``: plain names, read at each write)
LISTPACK_ENTRIES = 128
LISTPACK_VALUE = 64


def set_listpack_limits(entries: int, value: int) -> None:
    """Redis's zset-max-listpack-entries and -value, for every sorted set of the process: a
    set applies them at its next insert (becoming big if it is then past them), a big set
    never converts back, and a restore decides with the limits of its time."""
    global LISTPACK_ENTRIES, LISTPACK_VALUE
    LISTPACK_ENTRIES = entries
    LISTPACK_VALUE = value


_INF: Final = math.inf
#: LIMIT offsets up to this are walked member by member (beyond, positions are cheaper)
WALK_OFFSET: Final = 256

#: the member of an order key (``key[8:]``, called from C by ``map``: ``members()``'s
#: lazy walk; a list of them is a compiled comprehension, ``_members``)
_member: Final = itemgetter(slice(8, None))
_pack_d: Final = struct.Struct(">d").pack
#: a byte with its top bit flipped, by value; and every bit of a byte flipped
_TOP_FLIPPED: Final = tuple(bytes([i ^ 0x80]) for i in range(256))
_INVERTED: Final = bytes(255 - i for i in range(256))


def score_key(score: float) -> bytes:
    """8 bytes whose bytewise order is the scores' numeric order (-inf first, +inf last):
    the IEEE 754 bits big-endian, the sign bit flipped for a positive score and every bit
    for a negative one. -0.0 is taken as 0.0; NaN is never a score. (Bytes, not a 64-bit
    integer: a value past 2^62 is a boxed int in compiled code, which took twice as long.)"""
    raw: bytes = _pack_d(score + 0.0)
    first = raw[0]
    if first < 0x80:
        return _TOP_FLIPPED[first] + raw[1:]
    return raw.translate(_INVERTED)


def _members(keys: Iterable[bytes]) -> list[bytes]:
    """The members of order keys (a compiled loop: a third of ``list(map(_member, ...))``)."""
    return [key[8:] for key in keys]


@dataclass(slots=True)
class ScoreRange:
    """``min <= score <= max``, each end exclusive on request (``(1.5`` in Redis's syntax).
    Not frozen (a frozen dataclass's ``__init__`` costs three times as much, and every
    range read builds one); nothing changes one once made."""

    min: float
    max: float
    min_exclusive: bool = False
    max_exclusive: bool = False

    def empty(self) -> bool:
        return self.min > self.max or (
            self.min == self.max and (self.min_exclusive or self.max_exclusive)
        )

    def above_min(self, score: float) -> bool:
        return score > self.min if self.min_exclusive else score >= self.min

    def below_max(self, score: float) -> bool:
        return score < self.max if self.max_exclusive else score <= self.max


@dataclass(slots=True)
class LexBound:
    """One end of a lex range: ``kind`` is ``-`` (below all), ``+`` (above all), ``[`` or ``(``
    (not frozen, as ScoreRange)."""

    kind: str
    value: bytes = b""

    def gte_min(self, member: bytes) -> bool:
        """``member`` is at or above this bound taken as a minimum."""
        if self.kind == "-":
            return True
        if self.kind == "+":
            return False
        return member >= self.value if self.kind == "[" else member > self.value

    def lte_max(self, member: bytes) -> bool:
        """``member`` is at or below this bound taken as a maximum."""
        if self.kind == "+":
            return True
        if self.kind == "-":
            return False
        return member <= self.value if self.kind == "[" else member < self.value


def lex_range_empty(lo: LexBound, hi: LexBound) -> bool:
    """Redis's zslIsInLexRange pre-check: a range that cannot hold anything."""
    if lo.kind == "+" or hi.kind == "-":
        return True
    if lo.kind == "-" or hi.kind == "+":
        return False
    if lo.value > hi.value:
        return True
    return lo.value == hi.value and (lo.kind == "(" or hi.kind == "(")


class SortedSetValue(TypedValue):
    """One sorted set: ``ordered`` holds the order keys (``score_key(score) + member``),
    ``scores`` member -> score (read them; change them only through effects)."""

    __slots__ = (
        "big",
        "lists",
        "load",
        "maxes",
        "ordered",
        "scan_order",
        "scores",
        "tree",
        "version",
    )

    type_name: ClassVar[str] = "zset"
    effects: ClassVar[dict[type[Effect], Applier]] = {}
    missing: ClassVar[Any] = None

    def __init__(self, pairs: Iterable[tuple[bytes, float]] = (), big: bool = False) -> None:
        super().__init__()
        self.scores: dict[bytes, float] = {}
        for member, score in pairs:
            self.scores[member] = score
        #: converted to skiplist (sticky, as in Redis; ``big``: made as one, COPY of one)
        self.big = big or len(self.scores) > LISTPACK_ENTRIES or any(
            len(m) > LISTPACK_VALUE for m in self.scores)
        if not self.big:  # a listpack keeps a whole score as an integer: -0 is 0
            for member, score in self.scores.items():
                if score == 0.0:
                    self.scores[member] = 0.0
        self.ordered: SortedList = SortedList(score_key(s) + m for m, s in self.scores.items())
        # SortedList's sublists, their maxima, its positional index and load: the lists are
        # made once by its constructor and only changed in place after, so these are the
        # same objects for good, read as fields (an attribute of a SortedList is a dict
        # lookup; add and _discard read four each, on every ZADD)
        self.lists: list[list[bytes]] = self.ordered._lists
        self.maxes: list[bytes] = self.ordered._maxes
        self.tree: list[int] = self.ordered._index
        self.load: int = self.ordered._load
        self.nbytes = ZSET_OVERHEAD + sum(len(m) + MEMBER_OVERHEAD for m in self.scores)
        #: members added since creation (ZSCAN rebuilds its order only when some were)
        self.version = 0
        self.scan_order: Any = None

    def __len__(self) -> int:
        return len(self.scores)

    def relayout(self, load: int) -> None:
        """Sublists of about ``load`` order keys from now on (tests: splits and merges
        with a few members); ``load`` is also read from the field set here."""
        self.ordered._reset(load)
        self.load = self.ordered._load

    def __iter__(self) -> Iterator[tuple[bytes, float]]:
        """(member, score) in order."""
        scores = self.scores
        return ((m, scores[m]) for m in self.members())

    def __repr__(self) -> str:
        return f"SortedSetValue({list(self)!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SortedSetValue) and self.scores == other.scores

    def copy(self) -> SortedSetValue:
        return SortedSetValue(iter(self), self.big)

    def encoding(self) -> str:
        return "skiplist" if self.big else "listpack"

    def snapshot(self) -> list[Any]:
        flat: list[Any] = []
        for member, score in self:
            flat.append(member)
            flat.append(score)
        return flat

    @classmethod
    def restore(cls, state: Any) -> SortedSetValue:
        return cls((state[i], state[i + 1]) for i in range(0, len(state), 2))

    def payload_bytes(self) -> int:
        """The bytes of the members alone."""
        return self.nbytes - ZSET_OVERHEAD - len(self.scores) * MEMBER_OVERHEAD

    def add_flat(self, flat: list[Any]) -> int:
        """``[member, score, ...]``: set each score; how many members were new."""
        added = 0
        for i in range(0, len(flat), 2):
            added += self.add(flat[i], flat[i + 1])
        return added

    def remove_many(self, members: Iterable[bytes]) -> int:
        return sum(self.remove(m) for m in members)

    # --- single members -------------------------------------------------------------
    def score(self, member: bytes) -> float | None:
        return self.scores.get(member)

    def add(self, member: bytes, score: float) -> bool:
        """Set ``member``'s score; True when the member is new. (ZADD's NX/XX/GT/LT rules
        are decided by the command: the effect carries the resulting scores.) -0 is kept
        once the set is big (Redis's skiplist), taken as 0 before (its listpack)."""
        scores = self.scores
        old = scores.get(member)
        if old is None:
            self.nbytes += len(member) + MEMBER_OVERHEAD
            self.version += 1
            if not self.big and (len(scores) >= LISTPACK_ENTRIES or len(member) > LISTPACK_VALUE):
                self.big = True  # (before the insert, as Redis converts)
        elif old == score:
            return False
        if not self.big:
            score += 0.0  # -0.0 -> 0.0
        scores[member] = score
        if old is not None:
            self._discard(old, member)
        key = score_key(score) + member
        # SortedList.add written out, its _expand called only for a sublist to split; a
        # positional index is kept here (``_count``): the same list, two calls fewer
        ordered = self.ordered
        maxes = self.maxes
        if not maxes:
            ordered.add(key)
            return old is None
        lists = self.lists
        pos = bisect_right(maxes, key)
        if pos == len(maxes):
            pos -= 1
            sub = lists[pos]
            sub.append(key)
            maxes[pos] = key
        else:
            sub = lists[pos]
            insort(sub, key)
        if len(sub) > self.load << 1:
            ordered._expand(pos)  # a split (it drops the positional index)
        elif self.tree:
            _count(self.tree, ordered._offset + pos, 1)
        ordered._len += 1
        return old is None

    def _discard(self, score: float, member: bytes) -> None:
        """Take a present member's order key out of ``ordered``: SortedList.remove written
        out, its _delete called only for a sublist at half the load (to merge); a
        positional index is kept here (``_count``)."""
        key = score_key(score) + member
        ordered = self.ordered
        maxes = self.maxes
        pos = bisect_left(maxes, key)
        sub = self.lists[pos]
        idx = bisect_left(sub, key)
        if len(sub) <= (self.load >> 1) + 1:
            ordered._delete(pos, idx)  # a merge, or the last sublist getting short
            return
        del sub[idx]
        maxes[pos] = sub[-1]
        if self.tree:
            _count(self.tree, ordered._offset + pos, -1)
        ordered._len -= 1

    def remove(self, member: bytes) -> bool:
        old = self.scores.pop(member, None)
        if old is None:
            return False
        self._discard(old, member)
        self.nbytes -= len(member) + MEMBER_OVERHEAD
        return True

    def rank(self, member: bytes, reverse: bool = False) -> int | None:
        score = self.scores.get(member)
        if score is None:
            return None
        at = self.ordered.index(score_key(score) + member)
        return len(self.scores) - 1 - at if reverse else at

    def _pairs(self, keys: Iterable[bytes]) -> list[tuple[bytes, float]]:
        """(member, score) of order keys."""
        scores = self.scores
        pairs = []
        for key in keys:
            member = key[8:]
            pairs.append((member, scores[member]))
        return pairs

    # --- positions ------------------------------------------------------------------
    def _clamp(self, start: int, stop: int) -> tuple[int, int] | None:
        return index_range(start, stop, len(self.scores))

    def range_by_rank(self, start: int, stop: int, reverse: bool = False,
                      members: bool = False) -> list[Any]:
        """ZRANGE start stop [REV]: ranks counted from the lowest (or, REV, highest) score;
        ``(member, score)`` pairs, or the members alone with ``members``."""
        span = self._clamp(start, stop)
        if span is None:
            return []
        lo, hi = span
        n = len(self.scores)
        keys = self._keys(n - hi, n - lo, True) if reverse else self._keys(lo, hi)
        return _members(keys) if members else self._pairs(keys)

    def _keys(self, lo: int, hi: int, reverse: bool = False) -> list[bytes]:
        """The order keys at positions ``lo`` to ``hi`` (half-open, 0 <= lo < hi <= len):
        one positional lookup, then slices of the sublists (SortedList.islice builds an
        iterator of maps over ranges and looks both ends up)."""
        ordered = self.ordered
        pos, idx = ordered._pos(lo)
        lists = self.lists
        need = hi - lo
        chunk = lists[pos][idx : idx + need]
        while len(chunk) < need:
            pos += 1
            chunk += lists[pos][: need - len(chunk)]
        if reverse:
            chunk.reverse()
        return chunk

    def _score_span(self, rng: ScoreRange) -> tuple[int, int]:
        """Half-open positions of the members inside ``rng``."""
        ordered = self.ordered
        if rng.empty():
            return 0, 0
        if rng.min_exclusive:
            if rng.min == _INF:
                return 0, 0
            lo = ordered.bisect_left(score_key(math.nextafter(rng.min, _INF)))
        else:
            lo = ordered.bisect_left(score_key(rng.min))
        if rng.max_exclusive:
            hi = ordered.bisect_left(score_key(rng.max))
        elif rng.max == _INF:
            hi = len(ordered)
        else:
            hi = ordered.bisect_left(score_key(math.nextafter(rng.max, _INF)))
        return lo, max(lo, hi)

    def count_by_score(self, rng: ScoreRange) -> int:
        lo, hi = self._score_span(rng)
        return hi - lo

    def range_by_score(self, rng: ScoreRange, reverse: bool = False, offset: int = 0,
                       count: int = -1, members: bool = False) -> list[Any]:
        """ZRANGEBYSCORE (REV walks from max to min); LIMIT offset count, count < 0 = all.
        ``(member, score)`` pairs, or the members alone with ``members`` (no WITHSCORES)."""
        if 0 <= offset <= WALK_OFFSET and count >= 0:
            return self._walk(rng, reverse, offset, count, members)
        lo, hi = self._score_span(rng)
        return self._slice(lo, hi, reverse, offset, count, members)

    def _walk(self, rng: ScoreRange, reverse: bool, offset: int, count: int,
              members: bool = False) -> list[Any]:
        """A LIMITed score range read straight off the sublists: two bisections and slices
        of the items wanted, without the positional index (which inserts keep invalidating)."""
        low_score, high_score = rng.min, rng.max
        if count == 0 or low_score > high_score:
            return []
        if rng.min_exclusive:
            if low_score in (_INF, high_score):
                return []
            low_score = math.nextafter(low_score, _INF)
        low = score_key(low_score)
        high: bytes | None  # members sort below this key (None: no bound)
        if rng.max_exclusive:
            if low_score == high_score:
                return []
            high = score_key(high_score)
        elif high_score == _INF:
            high = None
        else:
            high = score_key(math.nextafter(high_score, _INF))
        lists = self.lists  # sortedcontainers' sublists, read-only here
        if not lists:
            return []
        maxes = self.maxes
        need = offset + count  # items to read from the range's first one on
        if not reverse:
            chunk = _forward(lists, maxes, low, high, need)
            if offset:
                chunk = chunk[offset:]
        else:
            if high is None:
                pos, idx = len(lists) - 1, len(lists[-1])
            else:
                pos = bisect_left(maxes, high)
                if pos == len(maxes):
                    pos, idx = len(lists) - 1, len(lists[-1])
                else:
                    idx = bisect_left(lists[pos], high)
            chunk = lists[pos][max(idx - need, 0) : idx]  # ascending, the range's top end
            pos -= 1
            while len(chunk) < need and pos >= 0 and (not chunk or chunk[0] >= low):
                chunk = lists[pos][-(need - len(chunk)) :] + chunk
                pos -= 1
            if chunk and chunk[0] < low:
                chunk = chunk[bisect_left(chunk, low) :]
            chunk.reverse()
            if offset:
                chunk = chunk[offset:]
        if members:
            return _members(chunk)
        return self._pairs(chunk)

    def members_from(self, low_score: float, offset: int, count: int) -> list[bytes]:
        """``ZRANGEBYSCORE key <low_score> +inf LIMIT offset count`` (the paging form),
        0 <= offset <= WALK_OFFSET and count >= 0: ``_walk``'s forward walk without a
        ScoreRange or an upper bound."""
        lists = self.lists
        if not count or not lists:
            return []
        chunk = _forward(lists, self.maxes, score_key(low_score), None,
                         offset + count)
        return _members(chunk[offset:] if offset else chunk)

    def _slice(self, lo: int, hi: int, reverse: bool, offset: int, count: int,
               members: bool = False) -> list[Any]:
        if offset < 0:
            return []
        if reverse:
            hi -= offset
        else:
            lo += offset
        if count >= 0:
            if reverse:
                lo = max(lo, hi - count)
            else:
                hi = min(hi, lo + count)
        if lo >= hi:
            return []
        keys = self._keys(lo, hi, reverse)
        if members:
            return _members(keys)
        return self._pairs(keys)

    def _lex_span(self, lo: LexBound, hi: LexBound) -> tuple[int, int]:
        if lex_range_empty(lo, hi) or not self.scores:
            return 0, 0
        ordered = self.ordered
        n = len(ordered)
        prefix = ordered[0][:8]
        if prefix == ordered[-1][:8]:  # one score (the meaningful case): plain bisection
            start = 0 if lo.kind == "-" else (
                ordered.bisect_left(prefix + lo.value) if lo.kind == "[" else
                ordered.bisect_right(prefix + lo.value))
            if hi.kind == "+":
                end = n
            elif hi.kind == "[":
                end = ordered.bisect_right(prefix + hi.value)
            else:
                end = ordered.bisect_left(prefix + hi.value)
            return start, max(start, end)
        # mixed scores: Redis's walk, first position whose member passes the minimum...
        a, b = 0, n
        while a < b:
            mid = (a + b) // 2
            if lo.gte_min(ordered[mid][8:]):
                b = mid
            else:
                a = mid + 1
        # ...then onwards while members stay below the maximum
        end = a
        for key in ordered.islice(a, n):
            if not hi.lte_max(key[8:]):
                break
            end += 1
        return a, end

    def count_by_lex(self, lo: LexBound, hi: LexBound) -> int:
        start, end = self._lex_span(lo, hi)
        return end - start

    def range_by_lex(self, lo: LexBound, hi: LexBound, reverse: bool = False, offset: int = 0,
                     count: int = -1, members: bool = False) -> list[Any]:
        start, end = self._lex_span(lo, hi)
        return self._slice(start, end, reverse, offset, count, members)

    # --- removals by range ----------------------------------------------------------
    def _delete_span(self, lo: int, hi: int) -> list[tuple[bytes, float]]:
        if lo >= hi:
            return []
        ordered = self.ordered
        gone = self._pairs(self._keys(lo, hi))
        del ordered[lo:hi]
        scores = self.scores
        for member, _ in gone:
            del scores[member]
            self.nbytes -= len(member) + MEMBER_OVERHEAD
        return gone

    def pop(self, count: int, highest: bool = False) -> list[tuple[bytes, float]]:
        """ZPOPMIN/ZPOPMAX: up to ``count`` members, lowest (or highest) first."""
        n = len(self.scores)
        take = min(max(count, 0), n)
        if highest:
            gone = self._delete_span(n - take, n)
            gone.reverse()
            return gone
        return self._delete_span(0, take)

    def remove_range_by_rank(self, start: int, stop: int) -> int:
        span = self._clamp(start, stop)
        if span is None:
            return 0
        return len(self._delete_span(*span))

    def remove_range_by_score(self, rng: ScoreRange) -> int:
        return len(self._delete_span(*self._score_span(rng)))

    def remove_range_by_lex(self, lo: LexBound, hi: LexBound) -> int:
        return len(self._delete_span(*self._lex_span(lo, hi)))

    # --- random access ----------------------------------------------------------------
    def at(self, index: int) -> tuple[bytes, float]:
        """The (member, score) at rank ``index`` (0 <= index < len), O(log n)."""
        member = self.ordered[index][8:]
        return member, self.scores[member]

    def members(self) -> Iterator[bytes]:
        """The members in order."""
        return map(_member, self.ordered)

    def head(self, limit: int) -> list[tuple[bytes, float]]:
        return self._pairs(islice(self.ordered, limit))


def _count(tree: list[int], child: int, delta: int) -> None:
    """Add ``delta`` to a sublist's length in SortedList's positional index (``tree``, its
    ``_index``: a leaf per sublist at ``_offset + pos``, each node the sum of its two
    children) and to every node up to the root: what its ``_expand`` and ``_delete`` do
    when no sublist splits or merges, compiled here (interpreted there, 1-2 us per write
    to a set that has served a rank query)."""
    while child:
        tree[child] += delta
        child = (child - 1) >> 1
    tree[0] += delta


def _forward(lists: list[list[bytes]], maxes: list[bytes], low: bytes, high: bytes | None,
             need: int) -> list[bytes]:
    """Up to ``need`` order keys from the first one >= ``low`` on, below ``high`` (None:
    no bound), read off sortedcontainers' sublists (read-only here) by slices."""
    pos = bisect_left(maxes, low)
    if pos == len(maxes):
        return []
    idx = bisect_left(lists[pos], low)
    chunk = lists[pos][idx : idx + need]
    last = len(lists)
    pos += 1
    while len(chunk) < need and pos < last and (high is None or chunk[-1] < high):
        chunk += lists[pos][: need - len(chunk)]
        pos += 1
    if high is not None and chunk and chunk[-1] >= high:
        chunk = chunk[: bisect_left(chunk, high)]
    return chunk


def _apply_zadd(value: SortedSetValue, effect: zset_effects.KvZadd) -> int:
    pairs = effect.pairs
    if len(pairs) == 2:  # one member (ZADD's common form): no loop
        return 1 if value.add(pairs[0], pairs[1]) else 0  # type: ignore[arg-type]
    return value.add_flat(pairs)


value_type(SortedSetValue)
SortedSetValue.effects = {
    zset_effects.KvZadd: _apply_zadd,
    zset_effects.KvZrem: lambda value, e: value.remove_many(e.members),
    zset_effects.KvZpop: lambda value, e: value.pop(e.count, e.highest),
    zset_effects.KvZremrangebyrank: lambda value, e: value.remove_range_by_rank(e.start, e.stop),
    zset_effects.KvZremrangebyscore: lambda value, e: value.remove_range_by_score(
        ScoreRange(e.min, e.max, e.min_exclusive, e.max_exclusive)),
    zset_effects.KvZremrangebylex: lambda value, e: value.remove_range_by_lex(
        LexBound(e.min_kind, e.min), LexBound(e.max_kind, e.max)),
}
SortedSetValue.growing = frozenset({zset_effects.KvZadd})
