"""Working memory's effect records (``hotkv_server.stores.work`` applies them).

The handler computes MERGE results from the current state; the record carries the final
value, so replay never re-merges.
"""

from __future__ import annotations

from hotkv_server.stores.effect import Effect, effect


@effect("work.set")
class WorkSet(Effect):
    """``key`` of ``session`` holds ``value`` until ``expires_at`` (ms since epoch); None
    removes an earlier deadline of the key."""

    session: bytes
    key: bytes
    value: bytes
    expires_at: int | None


@effect("work.del")
class WorkDel(Effect):
    """Remove ``keys`` of ``session`` (applying returns how many existed)."""

    session: bytes
    keys_: list[bytes]


@effect("work.expire")
class WorkExpire(Effect):
    """The whole scratchpad's deadline ``at`` (ms since epoch)."""

    session: bytes
    at: int


@effect("work.clear")
class WorkClear(Effect):
    """Forget the session's scratchpad."""

    session: bytes


RECORDS = (WorkSet, WorkDel, WorkExpire, WorkClear)
