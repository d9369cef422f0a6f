"""Episodic memory's effect records (``hotkv_server.stores.epis`` applies them)."""

from __future__ import annotations

from typing import Any

from hotkv_server.stores.effect import Effect, effect


@effect("epis.log")
class EpisLog(Effect):
    """Append one event with id ``ms-seq`` (above the agent's last id)."""

    agent: bytes
    ms: int
    seq: int
    type: bytes
    text: bytes
    source: bytes | None
    meta: Any


@effect("epis.trim")
class EpisTrim(Effect):
    """Remove every event whose id is <= ``ms-seq``: the boundary id, not a count, so
    replay removes exactly the same events."""

    agent: bytes
    ms: int
    seq: int


@effect("epis.del")
class EpisDel(Effect):
    """Forget the agent's log."""

    agent: bytes


RECORDS = (EpisLog, EpisTrim, EpisDel)
