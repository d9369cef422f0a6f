"""The contract every store follows: effects in, plain Python values out.

An *effect* is a typed record (``hotkv_server.stores.effect``) describing one change with
every server-chosen value fixed: absolute expiry deadlines in ms since the epoch,
timestamps, sequence numbers, event ids, evicted ids. Each store lists its records in a
module beside it and marks the method applying each one with ``@applies(Record)``; the
database routes a record to its store by its class. Applying an effect never consults a
clock and never decides anything, so replay and replication reproduce the primary exactly.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator
from typing import Any, ClassVar, Generic, TypeVar

from hotkv_server.stores.effect import Effect, EffectError, decode

__all__ = ["DictStore", "Effect", "EffectError", "ExpiryObserver", "Store", "TimelessStore", "applies"]

#: told of each entry a store removes because its deadline passed: (store name, id, the
#: entry inside the id or None for the whole object); set by the core (engine/notify.py)
ExpiryObserver = Callable[[str, bytes, "bytes | None"], None]


_APPLIES = "_applies_record"
_M = TypeVar("_M", bound=Callable[..., Any])


def applies(record: type[Effect]) -> Callable[[_M], _M]:
    """Mark a store method as the one applying ``record``: ``@applies(WorkSet)`` over
    ``def _apply_set(self, e: WorkSet)``. It must not read a clock or decide anything; its
    return value is what ``ctx.emit`` gives the handler."""

    def mark(method: _M) -> _M:
        setattr(method, _APPLIES, record)
        return method

    return mark


class Store(ABC):
    """Base class of the five memory stores and the string cache."""

    #: the id space's name, also the prefix of its effects' ops and the AMEM.SCAN TYPE
    name: ClassVar[str]
    #: who hears of expired entries (None: nobody); a callback, so the store stays pure
    on_expire: ExpiryObserver | None = None

    #: (record class, name of the method applying it): the methods marked ``@applies``
    _applier_names: ClassVar[tuple[tuple[type[Any], str], ...]] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        found: dict[type[Any], str] = {}
        for klass in reversed(cls.__mro__):
            for name, member in vars(klass).items():
                record = getattr(member, _APPLIES, None)
                if record is not None:
                    found[record] = name
        cls._applier_names = tuple(found.items())

    def appliers(self) -> dict[type[Any], Callable[[Any], Any]]:
        """Record class -> the method applying it (returning a handler-useful value), for
        every record of this store: its methods marked ``@applies(Record)``. ``Database``
        routes by this table (gathered once)."""
        return {record: getattr(self, name) for record, name in self._applier_names}

    def apply(self, effect: Effect | list[Any]) -> Any:
        """Apply one record of this store (or its wire list, as tests and tools write
        them); returns what its applier returns."""
        if type(effect) is list:
            records = decode(effect)
            result = None
            for record in records:
                result = self.apply(record)
            return result
        route = self.appliers().get(type(effect))
        if route is None:
            raise EffectError(f"the {self.name} store does not apply {type(effect).__name__}")
        return route(effect)

    @abstractmethod
    def purge_expired(self, now_ms: int, limit: int) -> int:
        """Drop up to ``limit`` entries whose deadline is <= now_ms; return how many went.

        Active expiry calls this from the background task. Removing expired entries is not an
        effect: deadlines are absolute, so every copy of the data reaches the same verdict.
        """

    @abstractmethod
    def ids(self, now_ms: int) -> Iterable[bytes]:
        """Every live id of this id space (for AMEM.SCAN, KEYS, DBSIZE), in any order."""

    @abstractmethod
    def exists(self, ident: bytes, now_ms: int) -> bool:
        """Whether a live object with this id exists."""

    @abstractmethod
    def clear(self) -> None:
        """Forget everything (FLUSHALL)."""

    @abstractmethod
    def snapshot(self) -> Any:
        """The whole state as msgpack-able data (see persistence); restore() takes it back."""

    @abstractmethod
    def restore(self, state: Any) -> None:
        """Replace the state with one produced by snapshot()."""

    @abstractmethod
    def dump_id(self, ident: bytes) -> Any:
        """The part of ``snapshot()`` that holds ``ident`` (None when it holds nothing of it),
        for DUMP and slot migration; ``load_id`` takes it back. Deadlines stay absolute."""

    @abstractmethod
    def load_id(self, ident: bytes, state: Any) -> None:
        """Replace whatever this store holds of ``ident`` with ``dump_id``'s output (RESTORE,
        the target side of a migration); applied by the database's ``obj.load`` effect."""

    @abstractmethod
    def drop_id(self, ident: bytes) -> None:
        """Forget ``ident`` entirely (RESTORE ... REPLACE, the source side of a migration)."""

    @abstractmethod
    def stats(self, now_ms: int) -> dict[str, int]:
        """Counters for INFO amem: at least ``objects`` and ``entries``."""


V = TypeVar("V")


class DictStore(Store, Generic[V]):
    """A store whose objects sit in one dict, ``objects`` (id -> object), each of which it
    writes as one row (``_row``, read back by ``load_id``): the snapshot is
    ``[[id, *row], ...]`` (``[[id, row], ...]`` with ``nested_rows``), ``dump_id`` is the
    row, and ``restore`` forgets everything, then loads each row."""

    #: the snapshot holds ``[id, row]`` (the row as one item) rather than ``[id, *row]``
    nested_rows: ClassVar[bool] = False

    def __init__(self) -> None:
        self.objects: dict[bytes, V] = {}

    @abstractmethod
    def _row(self, obj: V) -> Any:
        """``obj`` as ``dump_id`` gives it (a list unless ``nested_rows``)."""

    def snapshot(self) -> Any:
        row = self._row
        if self.nested_rows:
            return [[ident, row(obj)] for ident, obj in self.objects.items()]
        return [[ident, *row(obj)] for ident, obj in self.objects.items()]

    def restore(self, state: Any) -> None:
        self.clear()
        if self.nested_rows:
            for ident, row in state:
                self.load_id(ident, row)
        else:
            for ident, *cells in state:
                self.load_id(ident, cells)

    def dump_id(self, ident: bytes) -> Any:
        obj = self.objects.get(ident)
        return None if obj is None else self._row(obj)

    def drop_id(self, ident: bytes) -> None:
        self.objects.pop(ident, None)


class TimelessStore(DictStore[V]):
    """A ``DictStore`` whose objects have no deadline: every object held is live."""

    def purge_expired(self, now_ms: int, limit: int) -> int:
        return 0  # nothing here expires

    def ids(self, now_ms: int) -> Iterator[bytes]:
        return iter(self.objects)

    def exists(self, ident: bytes, now_ms: int) -> bool:
        return ident in self.objects

    def clear(self) -> None:
        self.objects.clear()
