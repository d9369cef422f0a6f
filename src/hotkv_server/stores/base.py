"""The contract every store follows: effects in, plain Python values out.

An *effect* is a list ``[op, arg, ...]`` of msgpack-able values (bytes, str, int, float,
bool, None, list, dict) describing one change with every server-chosen value fixed:
absolute expiry deadlines in ms since the epoch, timestamps, sequence numbers, event ids,
evicted ids. ``op`` is ``"<store>.<verb>"`` (``"conv.append"``); the database routes an
effect to the store named before the dot. Applying an effect never consults a clock and
never decides anything, so replay and replication reproduce the primary exactly.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from typing import Any, ClassVar

Effect = list[Any]

#: told of each entry a store removes because its deadline passed: (store name, id, the
#: entry inside the id or None for the whole object); set by the core (engine/notify.py)
ExpiryObserver = Callable[[str, bytes, "bytes | None"], None]


class EffectError(ValueError):
    """An effect that does not fit the store (unknown op or bad shape): a bug or bad file."""


class Store(ABC):
    """Base class of the five memory stores and the string cache."""

    #: the id space's name, also the prefix of its effects' ops and the AMEM.SCAN TYPE
    name: ClassVar[str]
    #: who hears of expired entries (None: nobody); a callback, so the store stays pure
    on_expire: ExpiryObserver | None = None

    @abstractmethod
    def apply(self, effect: Effect) -> Any:
        """Apply one effect whose op starts with ``name + "."``; return a handler-useful value."""

    def appliers(self) -> dict[str, Callable[[Effect], Any]]:
        """Functions applying one op each, as ``apply`` would, for the hot ops (one call
        less per write); ``Database`` uses ``apply`` for the ops not listed."""
        return {}

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
