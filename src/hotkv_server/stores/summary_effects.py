"""The rolling summary's effect records (``hotkv_server.stores.summary`` applies them).

Records carry the new version and the update time, so replay never recounts.
"""

from __future__ import annotations

from hotkv_server.stores.effect import Effect, effect


@effect("summary.set")
class SummarySet(Effect):
    """Replace the summary; ``upto`` (the last episodic event id it covers) is exactly the
    new value, None clears it."""

    agent: bytes
    text: bytes
    version: int
    updated: int
    upto: bytes | None


@effect("summary.append")
class SummaryAppend(Effect):
    """Add ``line`` after a newline (none before the first line of an empty summary)."""

    agent: bytes
    line: bytes
    version: int
    updated: int


@effect("summary.del")
class SummaryDel(Effect):
    """Forget the agent's summary."""

    agent: bytes


RECORDS = (SummarySet, SummaryAppend, SummaryDel)
