"""The hash value type: field -> value, both binary, as Redis 7.0 hashes.

OBJECT ENCODING answers ``listpack`` while the hash has at most
``hash-max-listpack-entries`` fields (512) and no field or value longer than
``hash-max-listpack-value`` bytes (64), checked at each write (``set_listpack_limits``),
then ``hashtable`` for good, as Redis never converts back (a restore decides again from the
contents, as Redis's RDB load does; COPY keeps it, as Redis's ``hashTypeDup``). A
``listpack`` hash answers HSCAN in one step with cursor 0, as Redis does; a ``hashtable``
one is walked by ``ScanOrder``.

Inside, a hash is one of two forms:

* *packed*: the whole hash is ONE bytes object, its entries in insertion order (below). A
  field costs its bytes plus 2, where a dict costs about 118 more (two bytes objects and a
  slot). A lookup scans the buffer in C, so the form holds at most ``PACKED_BYTES``
  (1 KB: a lookup stays under a microsecond) and Redis's listpack limits.
* *dict*: for a hash past either; never packed again until a restore. The conversion
  keeps the order, so HGETALL answers alike before and after.

The packed form. ``0x00`` ends an entry and also starts the buffer, ``0x01`` separates a
field from its value, and ``0x02`` escapes those three bytes inside fields and values
(``0x02 0x03`` is 0x00, ``0x02 0x04`` is 0x01, ``0x02 0x05`` is 0x02), so::

    00 field 01 value 00 field 01 value 00

Since a 0x00 and a 0x01 are never data, ``00 <field> 01`` occurs in the buffer exactly at
that field's entry: a lookup is one ``bytes.partition`` on that probe plus one on 0x00 for
the end of the value, both in C, with no walk over the entries and no index to keep. A
write joins the new buffer from those pieces (as Redis's listpack moves its tail with
``memmove``). Text never needs escaping; binary data costs a byte more per escaped byte.

Effect records (``hashes_effects``; the keyspace applies them to a key holding a hash, see
``stores/values.py``):

* ``KvHset`` ``["kv.hset", key, [field, value, ...]]`` - set fields; returns how many were new.
* ``KvHdel`` ``["kv.hdel", key, [field, ...]]`` - remove fields; returns how many existed.

A hash is created by ``KvPut(key, "hash", [field, value, ...], deadline)``.
HINCRBY, HINCRBYFLOAT and HSETNX become ``KvHset`` (or ``KvPut``) of the result. The
records and the snapshot (``[field, value, ...]``) are the same for both encodings.
"""

from __future__ import annotations

from collections.abc import Mapping
from itertools import islice
from typing import Any, ClassVar, Final

from mypy_extensions import trait

from hotkv_server.stores.effect import Effect, EffectError
from hotkv_server.stores.hashes_effects import KvHdel, KvHset
from hotkv_server.stores.scanorder import ScanOrder
from hotkv_server.stores.values import Applier, TypedValue, value_type

#: hash-max-listpack-entries and hash-max-listpack-value (Redis 7.0's defaults; the
#: engine sets the configured ones with ``set_listpack_limits``)
LISTPACK_ENTRIES = 512
LISTPACK_VALUE = 64
#: hashtable: bytes a field costs beyond its field and value bytes (dict slot, two bytes
#: objects), and a hash beyond its fields (object, empty dict): measured on CPython 3.11
FIELD_OVERHEAD: Final = 118
HASH_OVERHEAD: Final = 200
#: packed: bytes a hash costs beyond its buffer's length (the object, the buffer's header)
PACKED_OVERHEAD: Final = 113
#: the longest packed form: a lookup scans the buffer (bytes.find, ~0.5 ns a byte here), so
#: a longer hash goes to a dict, still ``listpack`` to OBJECT ENCODING within Redis's limits
PACKED_BYTES = 1024
#: the packed length past which a write checks PACKED_BYTES and LISTPACK_ENTRIES
_CHECK_FROM = PACKED_BYTES

_END: Final = b"\x00"  # ends an entry; the buffer starts with one
_SEP: Final = b"\x01"  # between a field and its value
_EMPTY: Final = _END
#: the packed form with every separator made an end, for one split into [field, value ...]
_SEP_TO_END: Final = bytes.maketrans(_SEP, _END)


def set_listpack_limits(entries: int, value: int) -> None:
    """Redis's hash-max-listpack-entries and -value, for every hash of the process. As in
    Redis a hash applies them at its next write (converting if it is then past them) and a
    hashtable never converts back; a restore decides with the limits of its time."""
    global LISTPACK_ENTRIES, LISTPACK_VALUE, _CHECK_FROM
    LISTPACK_ENTRIES = entries
    LISTPACK_VALUE = value
    # an entry is 2 bytes at least (01 and 00): a shorter buffer cannot hold too many
    _CHECK_FROM = min(PACKED_BYTES, 2 * entries + 2)


def escape(data: bytes) -> bytes:
    """``data`` as it is written in the packed form (unchanged unless it holds 0x00-0x02)."""
    if 0 in data or 1 in data or 2 in data:
        return data.replace(b"\x02", b"\x02\x05").replace(b"\x00", b"\x02\x03").replace(
            b"\x01", b"\x02\x04")
    return data


def unescape(data: bytes) -> bytes:
    """The bytes ``escape`` wrote as ``data``."""
    if 2 in data:
        # no pair overlaps another: a 0x02 always starts one and never ends one
        return data.replace(b"\x02\x03", b"\x00").replace(b"\x02\x04", b"\x01").replace(
            b"\x02\x05", b"\x02")
    return data


def pack(pairs: list[bytes]) -> bytes:
    """The packed form of ``field, value, ...`` (fields distinct)."""
    if not pairs:
        return _EMPTY
    joined = b"".join(pairs)
    if 0 in joined or 1 in joined or 2 in joined:
        pairs = [escape(item) for item in pairs]
    parts = [b""]
    for i in range(0, len(pairs), 2):
        parts.append(pairs[i] + _SEP + pairs[i + 1])
    parts.append(b"")
    return _END.join(parts)


def packed_get(packed: bytes, field: bytes) -> bytes | None:
    """The value of ``field`` in a packed buffer, None when absent (HGET's path)."""
    # the escapes are skipped when they cannot matter: a buffer without 0x02 escapes
    # nothing, and there a probe of a field without 0x01 can only match that field's entry
    # (a 0x00 or 0x02 in it matches nothing: a stored field holds neither, and from a 0x00
    # to the next 0x01 is one field)
    if 2 in packed or 1 in field:
        rest = packed.partition(b"\x00%b\x01" % escape(field))[2]
        return unescape(rest.partition(_END)[0]) if rest else None
    # partition, not find and slice: fewer calls, and copying 1 KB at most is cheaper; the
    # probe by %-formatting: one call where ``_END + field + _SEP`` is two (~18 ns)
    rest = packed.partition(b"\x00%b\x01" % field)[2]
    return rest.partition(_END)[0] if rest else None  # found: the value and its 0x00


def packed_has(packed: bytes, field: bytes) -> bool:
    return packed.find(b"\x00%b\x01" % escape(field)) >= 0


def packed_put(packed: bytes, field: bytes, value: bytes) -> tuple[bytes, bool]:
    """The buffer with ``field`` set to ``value`` (its place kept, else at the end), and
    whether the field is new. The same buffer when nothing changed."""
    if 0 in field or 1 in field or 2 in field:  # escape() written out: HSET's path
        field = escape(field)
    if 0 in value or 1 in value or 2 in value:
        value = escape(value)
    head, probe, rest = packed.partition(b"\x00%b\x01" % field)
    if not probe:
        # after the buffer's last 0x00 (one join: cheaper than ``packed + entry`` or a
        # %-format, measured)
        return b"".join((packed, field, _SEP, value, _END)), True
    old, end, tail = rest.partition(_END)
    if old == value:
        return packed, False
    return b"".join((head, probe, value, end, tail)), False


def packed_pop(packed: bytes, field: bytes) -> tuple[bytes, bytes | None]:
    """The buffer without ``field``, and its value (None, and the same buffer, if absent)."""
    at = packed.find(b"\x00%b\x01" % escape(field))
    if at < 0:
        return packed, None
    end = packed.find(_END, at + 1)
    return packed[:at] + packed[end:], unescape(packed[packed.find(_SEP, at + 1) + 1:end])


def unpack(packed: bytes) -> list[bytes]:
    """``[field, value, ...]`` in the order of the packed form."""
    flat = packed.translate(_SEP_TO_END).split(_END)
    del flat[-1], flat[0]
    if 2 in packed:
        return [unescape(item) for item in flat]
    return flat


@trait
class PackedPairs:
    """The reads of a mapping kept packed (``_packed``, the form above) while small, else
    as a dict (``_map``, None while packed): a hash, a working-memory scratchpad. The class
    using it declares both slots."""

    __slots__ = ()

    _packed: bytes
    _map: dict[bytes, bytes] | None

    def __len__(self) -> int:
        if self._map is not None:
            return len(self._map)
        return self._packed.count(0) - 1

    @property
    def packed(self) -> bool:
        """Whether the pairs are in the packed form (else a dict)."""
        return self._map is None

    def get(self, name: bytes) -> bytes | None:
        """The value of ``name``, None when absent."""
        pairs = self._map
        if pairs is not None:
            return pairs.get(name)
        return packed_get(self._packed, name)

    def __contains__(self, name: object) -> bool:
        pairs = self._map
        if pairs is not None:
            return name in pairs
        return isinstance(name, bytes) and packed_has(self._packed, name)

    def to_dict(self) -> dict[bytes, bytes]:
        """A new dict of the pairs, in their order."""
        pairs = self._map
        if pairs is not None:
            return dict(pairs)
        flat = unpack(self._packed)
        return dict(zip(flat[::2], flat[1::2], strict=True))

    def names(self) -> list[bytes]:
        """The names (a hash's fields, a scratchpad's keys), in order."""
        pairs = self._map
        return unpack(self._packed)[::2] if pairs is None else list(pairs)


class HashValue(TypedValue, PackedPairs):
    """One hash, packed or a dict. Read it through its methods; change it only through
    effects."""

    __slots__ = ("_added", "_big", "_map", "_packed", "_scan")

    type_name: ClassVar[str] = "hash"
    effects: ClassVar[dict[type[Effect], Applier]] = {}

    def __init__(self) -> None:
        super().__init__()
        #: the packed form; ``_EMPTY`` once ``_map`` holds the hash
        self._packed = _EMPTY
        #: the dict form, None while packed (a conversion is for good)
        self._map: dict[bytes, bytes] | None = None
        #: past Redis's limits once: ``hashtable`` for good, as in Redis
        self._big = False
        self.nbytes = PACKED_OVERHEAD + 1
        self._added = 0
        self._scan: ScanOrder | None = None

    # PackedPairs' dunders, named here: compiled, a trait's reach no slot of a class with a
    # native base (and TypedValue's abstract __len__ comes first)
    def __len__(self) -> int:
        return PackedPairs.__len__(self)

    def __contains__(self, name: object) -> bool:
        return PackedPairs.__contains__(self, name)

    def encoding(self) -> str:
        return "hashtable" if self._big else "listpack"

    # --- reads ---------------------------------------------------------------------

    def flat(self) -> list[bytes]:
        """``[field, value, ...]`` in the hash's order."""
        fields = self._map
        if fields is None:
            return unpack(self._packed)
        out: list[bytes] = []
        for item in fields.items():
            out.extend(item)
        return out

    def mapping(self) -> Mapping[bytes, bytes]:
        """The fields as a mapping to read at once: the dict itself (hashtable) or a new
        one (listpack)."""
        fields = self._map
        return self.to_dict() if fields is None else fields

    def field_at(self, index: int) -> bytes:
        """The field at position ``index`` of the hash's order (O(index) for a dict: it has
        no random access; walked in C)."""
        fields = self._map
        if fields is None:
            return unpack(self._packed)[2 * index]
        return next(islice(fields, index, None))

    def values(self) -> list[bytes]:
        """The values, in the fields' order."""
        fields = self._map
        return unpack(self._packed)[1::2] if fields is None else list(fields.values())

    # --- writes (the appliers') ------------------------------------------------------

    def set_fields(self, pairs: list[bytes]) -> int:
        """Set ``field, value, ...``; returns how many fields were new."""
        if len(pairs) == 2:
            return self.set_field(pairs[0], pairs[1])
        if len(pairs) % 2:
            raise EffectError("kv.hset needs field, value pairs")
        if self._map is None:
            if all(len(item) <= LISTPACK_VALUE for item in pairs):
                new = 0
                for i in range(0, len(pairs), 2):
                    new += self.set_field(pairs[i], pairs[i + 1])
                    # past a limit: the rest into the dict (``packed`` re-reads _map, which
                    # compiled code would check against the None it was narrowed to above)
                    if not self.packed:
                        return new + self._set_map(pairs[i + 2:])
                return new
            self._convert()  # a long field or value: as Redis, before any is set
        return self._set_map(pairs)

    def set_field(self, field: bytes, value: bytes) -> int:
        """Set one field (HSET's path: KvHset of one pair comes here); 1 if it was new."""
        packed = self._packed
        if self._map is not None:
            return self._set_one(field, value)
        if len(field) > LISTPACK_VALUE or len(value) > LISTPACK_VALUE:
            self._convert()
            return self._set_one(field, value)
        packed, added = packed_put(packed, field, value)
        self._packed = packed
        size = len(packed)
        self.nbytes = PACKED_OVERHEAD + size
        if size > _CHECK_FROM:  # after every write, as Redis checks the length
            self._check_size()
        return 1 if added else 0

    def _check_size(self) -> None:
        """To a dict if the packed form is past PACKED_BYTES or LISTPACK_ENTRIES."""
        packed = self._packed
        too_many = packed.count(0) > LISTPACK_ENTRIES + 1
        if too_many or len(packed) > PACKED_BYTES:
            self._convert(big=too_many)

    def _set_one(self, field: bytes, value: bytes) -> int:
        """Set one field of the dict form (HSET's path on a big hash: no pair list)."""
        fields = self._map
        assert fields is not None
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

    def _set_map(self, pairs: list[bytes]) -> int:
        fields = self._map
        assert fields is not None
        if len(pairs) == 2:  # one field: the common case, without the loop
            return self._set_one(pairs[0], pairs[1])
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
        self._big = big or len(fields) > LISTPACK_ENTRIES
        self._added += new
        self.nbytes += grown
        return new

    def _convert(self, big: bool = False) -> None:
        """From packed to a dict (the order kept), for good; ``big``: ``hashtable`` too (the
        write passed Redis's limits, not only PACKED_BYTES; a write of a long field or value
        says so itself, in ``_set_map``)."""
        flat = unpack(self._packed)
        fields = self._map = dict(zip(flat[::2], flat[1::2], strict=True))
        self._packed = _EMPTY
        self._added = len(fields)
        self._big = big
        self.nbytes = HASH_OVERHEAD + sum(map(len, flat)) + FIELD_OVERHEAD * len(fields)

    def delete_fields(self, names: list[bytes]) -> int:
        """Remove fields; returns how many existed."""
        fields = self._map
        removed = 0
        if fields is None:
            packed = self._packed
            for field in names:
                packed, old = packed_pop(packed, field)
                if old is not None:
                    removed += 1
            self._packed = packed
            self.nbytes = PACKED_OVERHEAD + len(packed)
            return removed
        for field in names:
            old = fields.pop(field, None)
            if old is not None:
                removed += 1
                self.nbytes -= len(field) + len(old) + FIELD_OVERHEAD
        return removed

    # --- the rest of the protocol ------------------------------------------------------

    def scan(self, cursor: int, count: int) -> tuple[int, list[bytes]]:
        """One HSCAN step over the field names: ``(next cursor, fields)``."""
        fields = self._map
        if not self._big:
            return 0, self.names()
        assert fields is not None
        if self._scan is None:
            self._scan = ScanOrder()
        next_cursor, names = self._scan.step(fields, self._added, cursor, count)
        return next_cursor, [name for name in names if name in fields]

    def copy(self) -> HashValue:
        twin = HashValue()
        twin._packed = self._packed  # immutable: shared until either side writes
        if self._map is not None:
            twin._map = dict(self._map)
            twin._added = len(twin._map)
        twin._big = self._big
        twin.nbytes = self.nbytes
        return twin

    def snapshot(self) -> list[bytes]:
        """``[field, value, ...]``"""
        return self.flat()

    @classmethod
    def restore(cls, state: Any) -> HashValue:
        value = cls()
        n = len(state)
        if (n % 2 == 0 and n <= 2 * LISTPACK_ENTRIES and len(set(state[::2])) * 2 == n
                and all(len(item) <= LISTPACK_VALUE for item in state)):
            # distinct small fields (a snapshot's, a new hash's): packed in one go
            packed = pack(state)
            if len(packed) <= PACKED_BYTES:
                value._packed = packed
                value.nbytes = PACKED_OVERHEAD + len(packed)
                return value
        value._convert()  # an empty dict, then the fields
        value.set_fields(state)
        return value


def _apply_hset(value: HashValue, effect: KvHset) -> int:
    pairs = effect.pairs
    if len(pairs) == 2:  # HSET of one field: one call less
        return value.set_field(pairs[0], pairs[1])
    return value.set_fields(pairs)


def _apply_hdel(value: HashValue, effect: KvHdel) -> int:
    return value.delete_fields(effect.fields)


value_type(HashValue)
HashValue.effects = {KvHset: _apply_hset, KvHdel: _apply_hdel}
HashValue.growing = frozenset({KvHset})
