"""The rolling summary's effect records (``hotkv_server.stores.summary`` applies them).

Records carry the new version and the update time, so replay never recounts.
"""

from __future__ import annotations

from typing import ClassVar

from hotkv_server.stores.effect import Effect, declare


class SummarySet(Effect):
    """Replace the summary; ``upto`` (the last episodic event id it covers) is exactly the
    new value, None clears it."""

    op: ClassVar[str] = "summary.set"

    def __init__(self, agent: bytes, text: bytes, version: int, updated: int,
                 upto: bytes | None) -> None:
        self.agent, self.text, self.version, self.updated, self.upto = (
            agent, text, version, updated, upto)


class SummaryAppend(Effect):
    """Add ``line`` after a newline (none before the first line of an empty summary)."""

    op: ClassVar[str] = "summary.append"

    def __init__(self, agent: bytes, line: bytes, version: int, updated: int) -> None:
        self.agent, self.line, self.version, self.updated = agent, line, version, updated


class SummaryDel(Effect):
    """Forget the agent's summary."""

    op: ClassVar[str] = "summary.del"

    def __init__(self, agent: bytes) -> None:
        self.agent = agent


RECORDS = declare(SummarySet, SummaryAppend, SummaryDel)
