"""Episodic memory's effect records (``hotkv_server.stores.epis`` applies them)."""

from __future__ import annotations

from typing import Any, ClassVar

from hotkv_server.stores.effect import Effect, declare


class EpisLog(Effect):
    """Append one event with id ``ms-seq`` (above the agent's last id)."""

    op: ClassVar[str] = "epis.log"

    def __init__(self, agent: bytes, ms: int, seq: int, type: bytes, text: bytes,
                 source: bytes | None, meta: Any) -> None:
        self.agent, self.ms, self.seq, self.type, self.text, self.source, self.meta = (
            agent, ms, seq, type, text, source, meta)


class EpisTrim(Effect):
    """Remove every event whose id is <= ``ms-seq``: the boundary id, not a count, so
    replay removes exactly the same events."""

    op: ClassVar[str] = "epis.trim"

    def __init__(self, agent: bytes, ms: int, seq: int) -> None:
        self.agent, self.ms, self.seq = agent, ms, seq


class EpisDel(Effect):
    """Forget the agent's log."""

    op: ClassVar[str] = "epis.del"

    def __init__(self, agent: bytes) -> None:
        self.agent = agent


RECORDS = declare(EpisLog, EpisTrim, EpisDel)
