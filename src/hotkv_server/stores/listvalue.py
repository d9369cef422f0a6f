"""The value of a Redis list key: a sequence of binary strings with O(1) pushes and pops at both ends.

The structure is ``collections.deque``: CPython keeps it as a doubly linked list of blocks of
64 pointers, so LPUSH/RPUSH/LPOP/RPOP are O(1), and reaching index ``i`` walks blocks from
the nearer end, O(min(i, n - i) / 64), as Redis's quicklist walks its nodes. Every element
is a ``bytes`` object (33 bytes of header + its length) plus 8 bytes of pointer in a block.

The methods take Redis's arguments as they are (negative indexes count from the tail, ranges
are inclusive and clamped) and return plain Python values; a method never creates or deletes
the key: the keyspace drops a list that became empty. Nothing here reads a clock.

Effects: the records of ``stores/list_effects.py`` (``KvLpush``, ``KvRpop``, ``KvLset`` ...;
the keyspace applies them to a key holding a list, see ``stores/values.py``). A list is
created by ``KvPut(key, "list", [element, ...], deadline)``.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator
from itertools import islice
from typing import Any, ClassVar, Final

from hotkv_server.stores import list_effects
from hotkv_server.stores.effect import Effect
from hotkv_server.stores.values import Applier, TypedValue, index_range, value_type

#: bytes one element costs beyond its payload: the bytes object header and its block slot
ELEMENT_OVERHEAD: Final = 41
#: bytes of an empty list value (the deque and this object)
LIST_OVERHEAD: Final = 700


class ListValue(TypedValue):
    """One list: ``items`` is the deque; ``nbytes`` the estimated bytes it holds."""

    __slots__ = ("items",)

    type_name: ClassVar[str] = "list"
    effects: ClassVar[dict[type[Effect], Applier]] = {}
    missing: ClassVar[Any] = None

    def __init__(self, values: Iterable[bytes] = ()) -> None:
        super().__init__()
        self.items: deque[bytes] = deque(values)
        self.nbytes = LIST_OVERHEAD + _cost(self.items)

    def __len__(self) -> int:
        return len(self.items)

    def __iter__(self) -> Iterator[bytes]:
        return iter(self.items)

    def __repr__(self) -> str:
        return f"ListValue({list(self.items)!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ListValue) and self.items == other.items

    def copy(self) -> ListValue:
        return ListValue(self.items)

    def encoding(self) -> str:
        return "quicklist"  # Redis 7.0 keeps every list as a quicklist

    def snapshot(self) -> list[bytes]:
        return list(self.items)

    @classmethod
    def restore(cls, state: Any) -> ListValue:
        return cls(state)

    def payload_bytes(self) -> int:
        """The bytes of the elements alone."""
        return self.nbytes - LIST_OVERHEAD - len(self.items) * ELEMENT_OVERHEAD

    # --- ends -----------------------------------------------------------------------
    def push(self, values: list[bytes], left: bool) -> int:
        """LPUSH (``left``: each value becomes the new head in turn, so they end up
        reversed) or RPUSH; the new length."""
        items = self.items
        if left:
            items.extendleft(values)
        else:
            items.extend(values)
        n = len(values)  # (one element, the usual push, without the sum)
        self.nbytes += (len(values[0]) if n == 1 else sum(map(len, values))) + n * ELEMENT_OVERHEAD
        return len(items)

    def pop(self, count: int, left: bool) -> list[bytes]:
        """Up to ``count`` elements from the head (``left``) or the tail, in the order they
        were taken."""
        items = self.items
        take = min(count, len(items))
        end = items.popleft if left else items.pop
        out = [end() for _ in range(take)]
        self.nbytes -= _cost(out)
        return out

    # --- positions ------------------------------------------------------------------
    def _clamp(self, start: int, stop: int) -> tuple[int, int] | None:
        return index_range(start, stop, len(self.items))

    def range(self, start: int, stop: int) -> list[bytes]:
        """LRANGE: the elements from ``start`` to ``stop`` inclusive."""
        items = self.items
        n = len(items)
        span = index_range(start, stop, n)
        if span is None:
            return []
        lo, hi = span
        if lo > n - hi:  # nearer the tail: walk from there
            part = list(islice(reversed(items), n - hi, n - lo))
            part.reverse()
            return part
        return list(islice(items, lo, hi))

    def index(self, index: int) -> bytes | None:
        """LINDEX: the element at ``index`` (negative from the tail), None when outside."""
        n = len(self.items)
        if index < 0:
            index += n
        if index < 0 or index >= n:
            return None
        return self.items[index]

    def set(self, index: int, value: bytes) -> bool:
        """LSET: replace the element at ``index``; False when the index is outside."""
        n = len(self.items)
        if index < 0:
            index += n
        if index < 0 or index >= n:
            return False
        old = self.items[index]
        self.items[index] = value
        self.nbytes += len(value) - len(old)
        return True

    def insert(self, pivot: bytes, value: bytes, before: bool) -> int:
        """LINSERT: put ``value`` before/after the first ``pivot``; the new length, or -1
        when the pivot is not in the list."""
        items = self.items
        try:
            at = items.index(pivot)
        except ValueError:
            return -1
        items.insert(at if before else at + 1, value)
        self.nbytes += len(value) + ELEMENT_OVERHEAD
        return len(items)

    def remove(self, count: int, value: bytes) -> int:
        """LREM: remove ``count`` occurrences from the head (count > 0), from the tail
        (count < 0) or all of them (0); how many went."""
        items = self.items
        limit = abs(count) if count else len(items)
        source = reversed(items) if count < 0 else iter(items)
        kept: list[bytes] = []
        removed = 0
        for item in source:
            if removed < limit and item == value:
                removed += 1
            else:
                kept.append(item)
        if not removed:
            return 0
        if count < 0:
            kept.reverse()
        self.items = deque(kept)
        self.nbytes -= removed * (len(value) + ELEMENT_OVERHEAD)
        return removed

    def trim(self, start: int, stop: int) -> None:
        """LTRIM: keep only ``start..stop`` (an empty range empties the list)."""
        span = self._clamp(start, stop)
        items = self.items
        if span is None:
            items.clear()
            self.nbytes = LIST_OVERHEAD
            return
        lo, hi = span
        n = len(items)
        if hi - lo < (n - (hi - lo)):  # keeping less than dropping: rebuild from the slice
            self.items = deque(self.range(lo, hi - 1))
            self.nbytes = LIST_OVERHEAD + _cost(self.items)
            return
        dropped = 0
        for _ in range(lo):
            dropped += len(items.popleft()) + ELEMENT_OVERHEAD
        for _ in range(n - hi):
            dropped += len(items.pop()) + ELEMENT_OVERHEAD
        self.nbytes -= dropped

    def positions(self, value: bytes, rank: int, count: int | None, maxlen: int) -> list[int]:
        """LPOS: indexes of ``value`` matches, skipping the first ``|rank| - 1`` matches,
        scanning from the tail for a negative rank, at most ``count`` of them (0 = all,
        None = one), comparing at most ``maxlen`` elements (0 = all)."""
        items = self.items
        n = len(items)
        wanted = 1 if count is None else (count or n)
        skip = abs(rank) - 1
        source = reversed(items) if rank < 0 else iter(items)
        if maxlen:
            source = islice(source, maxlen)
        out: list[int] = []
        for i, item in enumerate(source):
            if item == value:
                if skip:
                    skip -= 1
                    continue
                out.append(n - 1 - i if rank < 0 else i)
                if len(out) >= wanted:
                    break
        return out


_SEQUENCES = (list, deque)


def _cost(values: Iterable[bytes]) -> int:
    if not isinstance(values, _SEQUENCES):
        values = list(values)
    return sum(map(len, values)) + len(values) * ELEMENT_OVERHEAD


def rotate(lst: ListValue, from_left: bool, to_left: bool) -> bytes:
    """LMOVE of a list onto itself: the element taken and pushed back at the other end."""
    items = lst.items
    value = items.popleft() if from_left else items.pop()
    if to_left:
        items.appendleft(value)
    else:
        items.append(value)
    return value


value_type(ListValue)
ListValue.effects = {
    list_effects.KvLpush: lambda value, e: value.push(e.values, True),
    list_effects.KvRpush: lambda value, e: value.push(e.values, False),
    list_effects.KvLpop: lambda value, e: value.pop(e.count, True),
    list_effects.KvRpop: lambda value, e: value.pop(e.count, False),
    list_effects.KvLset: lambda value, e: value.set(e.index, e.value),
    list_effects.KvLinsert: lambda value, e: value.insert(e.pivot, e.value, e.before),
    list_effects.KvLrem: lambda value, e: value.remove(e.count, e.value),
    list_effects.KvLtrim: lambda value, e: value.trim(e.start, e.stop),
    list_effects.KvLmove: lambda value, e: rotate(value, e.from_left, e.to_left),
}
ListValue.growing = frozenset({list_effects.KvLpush, list_effects.KvRpush, list_effects.KvLset,
                               list_effects.KvLinsert, list_effects.KvLmove})
