"""Conversation memory's effect records (``hotkv_server.stores.conv`` applies them)."""

from __future__ import annotations

from typing import Any, ClassVar

from hotkv_server.stores.effect import Effect, declare


class ConvCreate(Effect):
    """A new session (replacing an absent or expired one); ``ttl_ms`` is the idle TTL,
    ``expires_at`` its first deadline (ms since epoch)."""

    op: ClassVar[str] = "conv.create"

    def __init__(self, session: bytes, window: int, ttl_ms: int | None, expires_at: int | None,
                 created: int) -> None:
        self.session, self.window, self.ttl_ms, self.expires_at, self.created = (
            session, window, ttl_ms, expires_at, created)


class ConvUpdate(Effect):
    """A new window or TTL for an existing session (a smaller window drops the oldest turns)."""

    op: ClassVar[str] = "conv.update"

    def __init__(self, session: bytes, window: int, ttl_ms: int | None, expires_at: int | None,
                 updated: int) -> None:
        self.session, self.window, self.ttl_ms, self.expires_at, self.updated = (
            session, window, ttl_ms, expires_at, updated)


class ConvAppend(Effect):
    """One turn numbered ``seq``; ``expires_at`` is the session's new idle deadline."""

    op: ClassVar[str] = "conv.append"

    def __init__(self, session: bytes, seq: int, role: bytes, content: bytes, ts: int, meta: Any,
                 expires_at: int | None) -> None:
        self.session, self.seq, self.role, self.content, self.ts, self.meta, self.expires_at = (
            session, seq, role, content, ts, meta, expires_at)


class ConvDel(Effect):
    """Forget ``sessions`` (applying returns how many existed)."""

    op: ClassVar[str] = "conv.del"

    def __init__(self, sessions: list[bytes]) -> None:
        self.sessions = sessions

    def keys(self) -> list[bytes]:
        return self.sessions


class ConvClear(Effect):
    """Every turn of ``session`` goes; its window, TTL, deadline and turn count stay."""

    op: ClassVar[str] = "conv.clear"

    def __init__(self, session: bytes, updated: int) -> None:
        self.session, self.updated = session, updated


RECORDS = declare(ConvCreate, ConvUpdate, ConvAppend, ConvDel, ConvClear)
