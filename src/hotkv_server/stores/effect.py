"""Effect records: the base class, the ``@effect`` decorator, and the wire form.

An *effect* is one small typed record of what a write changed, with every server-chosen
value fixed (absolute expiry deadlines in ms since the epoch, timestamps, sequence
numbers, event ids, evicted ids). Applying one never consults a clock and never decides
anything, so replay and replication reproduce the primary exactly. Each store lists its
records in one module beside it (``keyspace_effects.py``, ``conv_effects.py`` ...).

Declaring a record::

    @effect("kv.set")
    class KvSet(Effect):
        '''SET: ``key`` holds ``value`` until ``expires_at`` (ms since epoch) or forever.'''

        key: bytes
        value: bytes
        expires_at: int | None

``@effect`` makes the class a slotted dataclass (construction is one plain ``__init__``
call: this is the write hot path), registers ``op`` for decoding, and gives it its wire
form: the msgpack-able list ``[op, field, field, ...]`` in declaration order, the AOF and
replication format (``["kv.set", key, value, expires_at]``). Several records of one
command or EXEC travel as ``["tx", [record, ...]]``, applied all or none.

``keys()`` names the ids a record writes, for WATCH: by default its first field (the
object's id in its store's id space); a record whose field is the list of its ids names
that field (``@effect("kv.del", keys="keys_")``), other records of several ids override
it, and ``None`` means "every id" (FLUSHALL).

``pack``/``unpack`` are the msgpack settings of every hotkv file and stream (bytes and str
kept apart: ids are bytes, ops are str). This module imports nothing of hotkv: stores sit
at the bottom of the import graph.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields
from operator import methodcaller
from typing import Any, ClassVar, TypeVar, dataclass_transform

import msgpack

#: the wire op of a group of records applied together (an EXEC, an event-loop turn)
TX = "tx"


class EffectError(ValueError):
    """An effect that does not fit the store (unknown op or bad shape): a bug or bad file."""


class Effect:
    """Base of every effect record (see the module docstring)."""

    __slots__ = ()

    #: ``"<store>.<verb>"``: the store named before the dot applies it
    op: ClassVar[str]
    #: the field names in wire order
    field_names: ClassVar[tuple[str, ...]]

    def wire(self) -> list[Any]:
        """``[op, field, ...]``: the msgpack-able form written to the AOF and the replicas."""
        raise NotImplementedError  # set by @effect

    def keys(self) -> list[bytes] | None:
        """The ids this record writes (WATCH); None for all of them."""
        return [getattr(self, self.field_names[0])]


#: op -> record class, filled by ``@effect``
RECORDS: dict[str, type[Effect]] = {}

E = TypeVar("E", bound=type[Effect])


@dataclass_transform()
def effect(op: str, *, keys: str | None = None) -> Callable[[E], E]:
    """Class decorator declaring an effect record of wire op ``op``; ``keys``: the field
    holding the list of ids the record writes, which ``keys()`` then returns."""

    def declare(cls: E) -> E:
        made: Any = dataclass(slots=True)(cls)
        names = tuple(f.name for f in fields(made))
        made.op = op
        made.field_names = names
        made.wire = _wire_method(op, names)
        if keys is not None:
            if keys not in names:
                raise TypeError(f"effect {op!r} has no field {keys!r} for its keys")
            made.keys = _keys_method(keys)
        if op in RECORDS:
            raise TypeError(f"effect op {op!r} declared twice")
        RECORDS[op] = made
        return made

    return declare


def _wire_method(op: str, names: tuple[str, ...]) -> Callable[[Any], list[Any]]:
    # generated as a plain function (``[op, self.a, self.b]``): the AOF and the replicas
    # ask for it on every write, and slot reads in one list display are the cheapest form
    for name in names:
        if not name.isidentifier():
            raise TypeError(f"bad field name {name!r}")
    body = ", ".join([repr(op), *(f"self.{name}" for name in names)])
    scope: dict[str, Any] = {}
    exec(f"def wire(self):\n    return [{body}]\n", scope)  # field names checked above
    wire: Callable[[Any], list[Any]] = scope["wire"]
    return wire


def _keys_method(name: str) -> Callable[[Any], list[bytes]]:
    def keys(self: Any) -> list[bytes]:
        ids: list[bytes] = getattr(self, name)
        return ids

    return keys


@effect("flushall")
class FlushAll(Effect):
    """FLUSHALL / FLUSHDB: every store forgets everything."""

    def keys(self) -> None:
        return None


@effect("obj.load")
class ObjLoad(Effect):
    """RESTORE / a migrated object: ``parts`` maps store names to their ``dump_id`` states
    of ``ident`` (deadlines inside are absolute)."""

    ident: bytes
    parts: dict[str, Any]


@effect("obj.drop")
class ObjDrop(Effect):
    """MIGRATE's source side (and RESTORE ... REPLACE): ``ident`` leaves every store."""

    ident: bytes


def decode(value: Any) -> list[Effect]:
    """The records of one wire value: an effect list or ``["tx", [value, ...]]`` (nested
    groups flattened). Raises EffectError for anything else."""
    out: list[Effect] = []
    _decode_into(value, out)
    return out


def _decode_into(value: Any, out: list[Effect]) -> None:
    if not isinstance(value, list) or not value:
        raise EffectError(f"an effect is a non-empty list, not {type(value).__name__}")
    op = value[0]
    if op == TX:
        if len(value) != 2 or not isinstance(value[1], list):
            raise EffectError("a tx record is ['tx', [effect, ...]]")
        for inner in value[1]:
            _decode_into(inner, out)
        return
    cls = RECORDS.get(op) if isinstance(op, str) else None
    if cls is None:
        raise EffectError(f"unknown effect op {op!r}")
    try:
        out.append(cls(*value[1:]))
    except TypeError:
        raise EffectError(
            f"{op} takes {len(cls.field_names)} fields ({', '.join(cls.field_names)}), "
            f"got {len(value) - 1}"
        ) from None


_packer = msgpack.Packer(use_bin_type=True)


def pack(value: Any) -> bytes:
    """msgpack with bytes and str kept apart. One Packer is reused: it is not thread-safe,
    so only the event loop thread (or a forked child) packs."""
    return _packer.pack(value)


def unpack(payload: bytes | memoryview) -> Any:
    return msgpack.unpackb(payload, raw=False, strict_map_key=False)


#: packs records in place of their wire lists (msgpack calls ``wire`` from C for each)
_record_packer = msgpack.Packer(use_bin_type=True, default=methodcaller("wire"))


def unit_value(records: list[Effect]) -> Any:
    """What ``pack_unit`` packs for records applied together: the record, or a tx of them
    (records stand for their wire lists)."""
    return records[0] if len(records) == 1 else [TX, records]


def pack_unit(value: Any) -> bytes:
    """msgpack of a ``unit_value`` (or a list of them, or ``[TX, [...]]`` of them): the
    same bytes as packing the wire lists, without building them."""
    return _record_packer.pack(value)


_TX_HEAD = b"\x92" + _packer.pack(TX)


def pack_group(payloads: list[bytes]) -> bytes:
    """The msgpack of ``["tx", [r1, r2 ...]]`` from the already packed ``r1, r2 ...``: the
    same bytes as packing the whole list, without packing anything twice."""
    if len(payloads) == 1:
        return payloads[0]
    return _TX_HEAD + _packer.pack_array_header(len(payloads)) + b"".join(payloads)
