"""Working memory's effect records (``hotkv_server.stores.work`` applies them).

The handler computes MERGE results from the current state; the record carries the final
value, so replay never re-merges.
"""

from __future__ import annotations

from typing import ClassVar

from hotkv_server.stores.effect import Effect, declare


class WorkSet(Effect):
    """``key`` of ``session`` holds ``value`` until ``expires_at`` (ms since epoch); None
    removes an earlier deadline of the key."""

    op: ClassVar[str] = "work.set"

    def __init__(self, session: bytes, key: bytes, value: bytes, expires_at: int | None) -> None:
        self.session, self.key, self.value, self.expires_at = session, key, value, expires_at


class WorkDel(Effect):
    """Remove ``keys`` of ``session`` (applying returns how many existed)."""

    op: ClassVar[str] = "work.del"

    def __init__(self, session: bytes, keys_: list[bytes]) -> None:
        self.session, self.keys_ = session, keys_


class WorkExpire(Effect):
    """The whole scratchpad's deadline ``at`` (ms since epoch)."""

    op: ClassVar[str] = "work.expire"

    def __init__(self, session: bytes, at: int) -> None:
        self.session, self.at = session, at


class WorkClear(Effect):
    """Forget the session's scratchpad."""

    op: ClassVar[str] = "work.clear"

    def __init__(self, session: bytes) -> None:
        self.session = session


RECORDS = declare(WorkSet, WorkDel, WorkExpire, WorkClear)
