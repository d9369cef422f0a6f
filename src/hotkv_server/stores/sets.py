"""The set value type: unordered distinct binary members, as Redis 7.0 sets.

A ``SetValue`` keeps its members in a list with a member -> position dict beside it, so
adding, removing (the last member moves into the hole) and drawing a member at random
(SPOP, SRANDMEMBER: the handler draws, the effect names the members) are all O(1).
OBJECT ENCODING answers ``intset`` while every member is a canonical 64-bit integer and
there are at most 512 (Redis's ``set-max-intset-entries``), then ``hashtable`` for good,
as Redis 7.0 never converts back (a restore decides again from the contents). An intset
answers SSCAN in one step with cursor 0, as Redis does; a hashtable is walked by
``ScanOrder``.

Effect records (``sets_effects``; the keyspace applies them to a key holding a set, see
``stores/values.py``):

* ``KvSadd`` ``["kv.sadd", key, [member, ...]]`` - add members; returns how many were new.
* ``KvSrem`` ``["kv.srem", key, [member, ...]]`` - remove members; returns how many existed.

A set is created by ``KvPut(key, "set", [member, ...], deadline)`` (SADD to a new key,
SMOVE to a new destination, SINTERSTORE ...).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, ClassVar, Final

from hotkv_server.stores.effect import Effect
from hotkv_server.stores.scanorder import ScanOrder
from hotkv_server.stores.sets_effects import KvSadd, KvSrem
from hotkv_server.stores.values import Applier, TypedValue, is_canonical_int, value_type

#: set-max-intset-entries (Redis 7.0's default; the engine sets the configured one with
#: ``set_intset_limit``: a plain name, read at each write, see docs/architecture.md)
INTSET_ENTRIES = 512


def set_intset_limit(entries: int) -> None:
    """Redis's set-max-intset-entries, for every set of the process: a set applies it at
    its next write (converting if it is then past it), a hashtable never converts back."""
    global INTSET_ENTRIES
    INTSET_ENTRIES = entries


#: bytes a member costs beyond its own bytes (list slot, dict slot, bytes object, position
#: int), and a set beyond its members (object, empty dict and list): measured on CPython 3.11
MEMBER_OVERHEAD: Final = 120
SET_OVERHEAD: Final = 250


class SetValue(TypedValue):
    """One set: ``index`` maps member -> position in ``members`` (read them; change them only
    through effects)."""

    __slots__ = ("_added", "_big", "_scan", "index", "members")

    type_name: ClassVar[str] = "set"
    effects: ClassVar[dict[type[Effect], Applier]] = {}

    def __init__(self) -> None:
        super().__init__()
        self.members: list[bytes] = []
        self.index: dict[bytes, int] = {}
        self.nbytes = SET_OVERHEAD
        self._big = False
        self._added = 0
        self._scan: ScanOrder | None = None

    def __len__(self) -> int:
        return len(self.members)

    def __contains__(self, member: object) -> bool:
        return member in self.index

    def encoding(self) -> str:
        return "hashtable" if self._big else "intset"

    def add(self, new_members: Iterable[bytes]) -> int:
        """Add members; returns how many were new."""
        index = self.index
        members = self.members
        added = 0
        grown = 0
        big = self._big
        for member in new_members:
            if member in index:
                continue
            index[member] = len(members)
            members.append(member)
            added += 1
            grown += len(member) + MEMBER_OVERHEAD
            if not big and not is_canonical_int(member):
                big = True
        if len(members) > INTSET_ENTRIES:
            big = True
        self._big = big
        self._added += added
        self.nbytes += grown
        return added

    def remove(self, gone: Iterable[bytes]) -> int:
        """Remove members; returns how many existed."""
        index = self.index
        members = self.members
        removed = 0
        for member in gone:
            pos = index.pop(member, None)
            if pos is None:
                continue
            last = members.pop()
            if pos < len(members):
                members[pos] = last
                index[last] = pos
            removed += 1
            self.nbytes -= len(member) + MEMBER_OVERHEAD
        return removed

    def scan(self, cursor: int, count: int) -> tuple[int, list[bytes]]:
        """One SSCAN step: ``(next cursor, members)``."""
        if not self._big:
            return 0, list(self.members)
        if self._scan is None:
            self._scan = ScanOrder()
        next_cursor, names = self._scan.step(self.index, self._added, cursor, count)
        index = self.index
        return next_cursor, [name for name in names if name in index]

    def copy(self) -> SetValue:
        twin = SetValue()
        twin.members = list(self.members)
        twin.index = dict(self.index)
        twin.nbytes = self.nbytes
        twin._big = self._big
        return twin

    def snapshot(self) -> list[bytes]:
        return list(self.members)

    @classmethod
    def restore(cls, state: Any) -> SetValue:
        value = cls()
        value.add(state)
        return value


def _apply_sadd(value: SetValue, effect: KvSadd) -> int:
    return value.add(effect.members)


def _apply_srem(value: SetValue, effect: KvSrem) -> int:
    return value.remove(effect.members)


value_type(SetValue)
SetValue.effects = {KvSadd: _apply_sadd, KvSrem: _apply_srem}
SetValue.growing = frozenset({KvSadd})
