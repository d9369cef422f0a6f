"""The contract every store follows: effects in, plain Python values out.

An *effect* is a typed record (``hotkv_server.stores.effect``) describing one change with
every server-chosen value fixed: absolute expiry deadlines in ms since the epoch,
timestamps, sequence numbers, event ids, evicted ids. Each store lists its records in a
module beside it and maps each record class to the method applying it (``appliers``); the
database routes a record to its store by its class. Applying an effect never consults a
clock and never decides anything, so replay and replication reproduce the primary exactly.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from typing import Any, ClassVar

from hotkv_server.stores.effect import Effect, EffectError, decode

__all__ = ["Effect", "EffectError", "Store"]


class Store(ABC):
    """Base class of the five memory stores and the string cache."""

    #: the id space's name, also the prefix of its effects' ops and the AMEM.SCAN TYPE
    name: ClassVar[str]

    @abstractmethod
    def appliers(self) -> dict[type[Any], Callable[[Any], Any]]:
        """Record class -> the method applying it (returning a handler-useful value), for
        every record of this store; ``Database`` routes by this table."""

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
    def stats(self, now_ms: int) -> dict[str, int]:
        """Counters for INFO amem: at least ``objects`` and ``entries``."""
