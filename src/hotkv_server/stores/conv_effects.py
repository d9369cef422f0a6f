"""Conversation memory's effect records (``hotkv_server.stores.conv`` applies them)."""

from __future__ import annotations

from typing import Any

from hotkv_server.stores.effect import Effect, effect


@effect("conv.create")
class ConvCreate(Effect):
    """A new session (replacing an absent or expired one); ``ttl_ms`` is the idle TTL,
    ``expires_at`` its first deadline (ms since epoch)."""

    session: bytes
    window: int
    ttl_ms: int | None
    expires_at: int | None
    created: int


@effect("conv.update")
class ConvUpdate(Effect):
    """A new window or TTL for an existing session (a smaller window drops the oldest turns)."""

    session: bytes
    window: int
    ttl_ms: int | None
    expires_at: int | None
    updated: int


@effect("conv.append")
class ConvAppend(Effect):
    """One turn numbered ``seq``; ``expires_at`` is the session's new idle deadline."""

    session: bytes
    seq: int
    role: bytes
    content: bytes
    ts: int
    meta: Any
    expires_at: int | None


@effect("conv.del", keys="sessions")
class ConvDel(Effect):
    """Forget ``sessions`` (applying returns how many existed)."""

    sessions: list[bytes]


@effect("conv.clear")
class ConvClear(Effect):
    """Every turn of ``session`` goes; its window, TTL, deadline and turn count stay."""

    session: bytes
    updated: int


RECORDS = (ConvCreate, ConvUpdate, ConvAppend, ConvDel, ConvClear)
