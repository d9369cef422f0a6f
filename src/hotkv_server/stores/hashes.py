"""The hash value type: field -> value, both binary, as Redis 7.0 hashes.

A ``HashValue`` is a dict. OBJECT ENCODING answers ``listpack`` while the hash has at most
512 fields and no field or value longer than 64 bytes (Redis's ``hash-max-listpack-*``
defaults), then ``hashtable`` for good, as Redis never converts back (a restore decides
again from the contents, as Redis's RDB load does). A listpack-sized hash answers HSCAN
in one step with cursor 0, as Redis does; a larger one is walked by ``ScanOrder``.

Effects (the keyspace applies them to a key holding a hash; see ``stores/values.py``):

* ``["kv.hset", key, [field, value, ...]]`` - set fields; returns how many were new.
* ``["kv.hdel", key, [field, ...]]`` - remove fields; returns how many existed.

A hash is created by ``["kv.put", key, "hash", [field, value, ...], deadline]``.
HINCRBY, HINCRBYFLOAT and HSETNX become ``kv.hset`` (or ``kv.put``) of the result.
"""

from __future__ import annotations

from typing import Any, ClassVar

from hotkv_server.stores.base import Effect, EffectError
from hotkv_server.stores.scanorder import ScanOrder
from hotkv_server.stores.values import Applier, TypedValue, value_type

#: Redis 7.0's defaults of hash-max-listpack-entries and hash-max-listpack-value
LISTPACK_ENTRIES = 512
LISTPACK_VALUE = 64
#: bytes a field costs beyond its field and value bytes (dict slot, two bytes objects),
#: and a hash beyond its fields (object, empty dict): measured on CPython 3.11
FIELD_OVERHEAD = 118
HASH_OVERHEAD = 200


@value_type
class HashValue(TypedValue):
    """One hash: ``fields`` is the dict (read it; change it only through effects)."""

    __slots__ = ("_added", "_big", "_scan", "fields")

    type_name: ClassVar[str] = "hash"
    effects: ClassVar[dict[str, Applier]] = {}

    def __init__(self) -> None:
        super().__init__()
        self.fields: dict[bytes, bytes] = {}
        self.nbytes = HASH_OVERHEAD
        #: converted to hashtable (sticky, as in Redis)
        self._big = False
        self._added = 0
        self._scan: ScanOrder | None = None

    def __len__(self) -> int:
        return len(self.fields)

    def encoding(self) -> str:
        return "hashtable" if self._big else "listpack"

    def set_fields(self, pairs: list[bytes]) -> int:
        """Set ``field, value, ...``; returns how many fields were new."""
        fields = self.fields
        if len(pairs) == 2:  # one field: the common case, without the loop
            field, value = pairs
            old = fields.get(field)
            fields[field] = value
            if not self._big and (len(field) > LISTPACK_VALUE or len(value) > LISTPACK_VALUE
                                  or len(fields) > LISTPACK_ENTRIES):
                self._big = True
            if old is None:
                self._added += 1
                self.nbytes += len(field) + len(value) + FIELD_OVERHEAD
                return 1
            self.nbytes += len(value) - len(old)
            return 0
        if len(pairs) % 2:
            raise EffectError("kv.hset needs field, value pairs")
        new = 0
        grown = 0
        big = self._big
        for i in range(0, len(pairs), 2):
            field = pairs[i]
            value = pairs[i + 1]
            old = fields.get(field)
            if old is None:
                new += 1
                grown += len(field) + len(value) + FIELD_OVERHEAD
            else:
                grown += len(value) - len(old)
            fields[field] = value
            if not big and (len(field) > LISTPACK_VALUE or len(value) > LISTPACK_VALUE):
                big = True
        if len(fields) > LISTPACK_ENTRIES:
            big = True
        self._big = big
        self._added += new
        self.nbytes += grown
        return new

    def delete_fields(self, names: list[bytes]) -> int:
        """Remove fields; returns how many existed."""
        fields = self.fields
        removed = 0
        for field in names:
            old = fields.pop(field, None)
            if old is not None:
                removed += 1
                self.nbytes -= len(field) + len(old) + FIELD_OVERHEAD
        return removed

    def scan(self, cursor: int, count: int) -> tuple[int, list[bytes]]:
        """One HSCAN step over the field names: ``(next cursor, fields)``."""
        if not self._big:
            return 0, list(self.fields)
        if self._scan is None:
            self._scan = ScanOrder()
        next_cursor, names = self._scan.step(self.fields, self._added, cursor, count)
        fields = self.fields
        return next_cursor, [name for name in names if name in fields]

    def copy(self) -> HashValue:
        twin = HashValue()
        twin.fields = dict(self.fields)
        twin.nbytes = self.nbytes
        twin._big = self._big
        return twin

    def snapshot(self) -> list[bytes]:
        """``[field, value, ...]``"""
        out: list[bytes] = []
        for item in self.fields.items():
            out.extend(item)
        return out

    @classmethod
    def restore(cls, state: Any) -> HashValue:
        value = cls()
        value.set_fields(state)
        return value


def _apply_hset(value: HashValue, effect: Effect) -> int:
    return value.set_fields(effect[2])


def _apply_hdel(value: HashValue, effect: Effect) -> int:
    return value.delete_fields(effect[2])


HashValue.effects = {"kv.hset": _apply_hset, "kv.hdel": _apply_hdel}
HashValue.growing = frozenset({"kv.hset"})
