"""Effect records: the base class, their registration, and the wire form.

An *effect* is one small typed record of what a write changed, with every server-chosen
value fixed (absolute expiry deadlines in ms since the epoch, timestamps, sequence
numbers, event ids, evicted ids). Applying one never consults a clock and never decides
anything, so replay and replication reproduce the primary exactly. Each store lists its
records in one module beside it (``keyspace_effects.py``, ``conv_effects.py`` ...).

Declaring a record::

    class KvSet(Effect):
        '''SET: ``key`` holds ``value`` until ``expires_at`` (ms since epoch) or forever.'''

        op: ClassVar[str] = "kv.set"

        def __init__(self, key: bytes, value: bytes, expires_at: int | None) -> None:
            self.key, self.value, self.expires_at = key, value, expires_at

    RECORDS = declare(KvSet, ...)

The fields are the parameters of ``__init__``, in order, each stored under its own name in
that order (a compiled record lists its attributes in the order ``__init__`` assigns
them; tests/stores/test_effects.py holds every record to it). :func:`declare`, called
after the classes, registers each ``op`` for decoding and gives each class its field names.
The wire form is the msgpack-able list ``[op, field, field, ...]``, the AOF and
replication format (``["kv.set", key, value, expires_at]``). Several records of one
command or EXEC travel as ``["tx", [record, ...]]``, applied all or none. Records compare
equal by type and fields.

The record modules are compiled with the hot path (``_compiled.MODULES``): a record is
then a native class, made by one C call from compiled code and read as a C struct field,
where a dataclass's generated ``__init__`` is interpreted Python (about 0.2 us of every
write) and each field a slot lookup. That is why records are plain classes with an
``__init__`` of their own and no class decorator (a decorated class is interpreted).
``Effect`` is native and does not allow interpreted subclasses (allowing them made
interpreted records slower to build and to read), so every record lives in a compiled
module. From interpreted code a native record costs about what a dataclass did (made
from a tuple of arguments; each field read a few ns slower than a slot): the gain is where
compiled code makes and reads records, so a command module that makes records on a hot
path is compiled too (``commands/conv.py``; benchmarks/README.md, "Issue 16 speed,
session 10").

``keys()`` names the ids a record writes, for WATCH: by default its first field (the
object's id in its store's id space); records of several ids (or of a list of them)
override it, and ``None`` means "every id" (FLUSHALL).

``pack``/``unpack`` are the msgpack settings of every hotkv file and stream (bytes and str
kept apart: ids are bytes, ops are str). This module imports nothing of hotkv: stores sit
at the bottom of the import graph.
"""

from __future__ import annotations

import inspect
from operator import methodcaller
from typing import Any, ClassVar

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
    #: the field names in wire order (set by ``declare``)
    field_names: ClassVar[tuple[str, ...]] = ()

    def wire(self) -> list[Any]:
        """``[op, field, ...]``: the msgpack-able form written to the AOF and the replicas."""
        out: list[Any] = [self.op]
        for name in self.field_names:
            out.append(getattr(self, name))
        return out

    def keys(self) -> list[bytes] | None:
        """The ids this record writes (WATCH); None for all of them."""
        return [getattr(self, self.field_names[0])]

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and isinstance(other, Effect) and (
            self.wire() == other.wire())

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.field_names)
        return f"{type(self).__name__}({fields})"


#: op -> record class, filled by ``declare``
RECORDS: dict[str, type[Effect]] = {}


def declare(*classes: type[Effect]) -> tuple[type[Effect], ...]:
    """Register effect record classes (each with an ``op`` and an ``__init__`` of its own)
    for decoding, and give each its field names; returns them (a module's ``RECORDS``)."""
    for cls in classes:
        op = vars(cls).get("op")
        if not isinstance(op, str):
            raise TypeError(f"effect record {cls.__name__} has no op of its own")
        if op in RECORDS:
            raise TypeError(f"effect op {op!r} declared twice")
        cls.field_names = _field_names(cls)
        RECORDS[op] = cls
    return classes


def _field_names(cls: type[Effect]) -> tuple[str, ...]:
    # compiled: the native attributes, in the order __init__ assigns them; pure Python:
    # __init__'s parameters (the test of every record holds the two to the same order)
    native = vars(cls).get("__mypyc_attrs__")
    if native is not None:
        return tuple(str(name) for name in native if not name.startswith("__"))
    if "__init__" not in vars(cls):
        return ()
    return tuple(inspect.signature(vars(cls)["__init__"]).parameters)[1:]


class FlushAll(Effect):
    """FLUSHALL / FLUSHDB: every store forgets everything."""

    op: ClassVar[str] = "flushall"

    def keys(self) -> None:
        return None


class ObjLoad(Effect):
    """RESTORE / a migrated object: ``parts`` maps store names to their ``dump_id`` states
    of ``ident`` (deadlines inside are absolute)."""

    op: ClassVar[str] = "obj.load"

    def __init__(self, ident: bytes, parts: dict[str, Any]) -> None:
        self.ident, self.parts = ident, parts


class ObjDrop(Effect):
    """MIGRATE's source side (and RESTORE ... REPLACE): ``ident`` leaves every store."""

    op: ClassVar[str] = "obj.drop"

    def __init__(self, ident: bytes) -> None:
        self.ident = ident


declare(FlushAll, ObjLoad, ObjDrop)


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
    except TypeError as exc:
        if len(value) - 1 == len(cls.field_names):  # (a compiled record checks the types)
            raise EffectError(f"{op}: a field of the wrong type ({exc})") from None
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
