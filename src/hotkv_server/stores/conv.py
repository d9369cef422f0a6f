"""Conversation memory: per session a bounded sliding window of role-tagged turns.

A session holds at most ``window`` turns (the oldest is dropped when a new one arrives),
numbers its turns 1, 2, 3 ... over its whole life, and may have an *idle* TTL: every
append restarts it. Effects (records in ``conv_effects``, every server-chosen value fixed
by the handler)::

    ConvCreate  ["conv.create", session, window, ttl_ms|None, expires_at|None, created_ms]
    ConvUpdate  ["conv.update", session, window, ttl_ms|None, expires_at|None, updated_ms]
    ConvAppend  ["conv.append", session, seq, role, content, ts, meta|None, expires_at|None]
    ConvClear   ["conv.clear", session, updated_ms]   (every turn goes; settings, counters stay)
    ConvDel     ["conv.del", [session, ...]]

Active expiry uses a heap of ``(deadline, session)`` with lazy invalidation: each session
keeps at most one live heap entry (``scheduled``); an append that only pushes the deadline
later does not touch the heap, and the entry is rescheduled when it comes due.
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

from hotkv_server.stores.base import DictStore, EffectError, applies
from hotkv_server.stores.conv_effects import ConvAppend, ConvClear, ConvCreate, ConvDel, ConvUpdate

DEFAULT_WINDOW = 50
MAX_WINDOW = 100_000
ROLES: tuple[bytes, ...] = (b"system", b"user", b"assistant", b"tool")


@dataclass(slots=True)
class Turn:
    """One message of a conversation."""

    seq: int
    role: bytes
    content: bytes
    ts: int
    meta: bytes | None = None

    def record(self) -> dict[str, Any]:
        """The reply record: seq, role, content, ts, meta (only if given)."""
        rec: dict[str, Any] = {
            "seq": self.seq,
            "role": self.role,
            "content": self.content,
            "ts": self.ts,
        }
        if self.meta is not None:
            rec["meta"] = self.meta
        return rec


@dataclass(slots=True)
class Conversation:
    """A session's settings, counters and its window of turns (oldest first)."""

    window: int
    ttl_ms: int | None
    expires_at: int | None
    created: int
    updated: int
    appended: int = 0
    turns: deque[Turn] = field(default_factory=deque)
    #: deadline of this session's entry in the expiry heap (None: no entry)
    scheduled: int | None = None

    def alive(self, now_ms: int) -> bool:
        return self.expires_at is None or self.expires_at > now_ms

    def ttl_left(self, now_ms: int) -> int:
        """Milliseconds until the idle deadline, -1 without one."""
        if self.expires_at is None:
            return -1
        return max(self.expires_at - now_ms, 0)

    def last(self, n: int | None = None) -> list[Turn]:
        """The last ``n`` turns (all when None), oldest first."""
        held = len(self.turns)
        if n is None or n >= held:
            return list(self.turns)
        return list(islice(self.turns, held - n, None))


class ConversationStore(DictStore[Conversation]):
    """Every conversation of the server, by session id."""

    name = "conv"

    def __init__(self) -> None:
        super().__init__()  # objects: session -> its conversation
        self._heap: list[tuple[int, bytes]] = []

    # --- reads (lazy expiry: a passed deadline reads as absent) -------------------
    def get(self, session: bytes, now_ms: int) -> Conversation | None:
        conv = self.objects.get(session)
        if conv is None or not conv.alive(now_ms):
            return None
        return conv

    def window(self, session: bytes, now_ms: int, n: int | None = None) -> list[Turn]:
        conv = self.get(session, now_ms)
        return [] if conv is None else conv.last(n)

    def length(self, session: bytes, now_ms: int) -> int:
        conv = self.get(session, now_ms)
        return 0 if conv is None else len(conv.turns)

    # --- effects ------------------------------------------------------------------
    @applies(ConvCreate)
    def _apply_create(self, e: ConvCreate) -> None:
        self._create(e.session, e.window, e.ttl_ms, e.expires_at, e.created)

    @applies(ConvUpdate)
    def _apply_update(self, e: ConvUpdate) -> None:
        self._update(e.session, e.window, e.ttl_ms, e.expires_at, e.updated)

    @applies(ConvDel)
    def _apply_del(self, e: ConvDel) -> int:
        return self._delete(e.sessions)

    @applies(ConvClear)
    def _apply_clear(self, e: ConvClear) -> int:
        return self._clear(e.session, e.updated)

    def _create(
        self, session: bytes, window: int, ttl_ms: int | None, expires_at: int | None, created: int
    ) -> None:
        # Replaces whatever is there: the handler only creates over an absent or expired one.
        conv = Conversation(window, ttl_ms, None, created, created, 0, deque(maxlen=window))
        self.objects[session] = conv
        self._set_deadline(session, conv, expires_at)

    def _update(
        self, session: bytes, window: int, ttl_ms: int | None, expires_at: int | None, updated: int
    ) -> None:
        conv = self.objects.get(session)
        if conv is None:
            raise EffectError(f"conv.update of missing session {session!r}")
        if window != conv.window:
            # deque(iterable, maxlen) keeps the newest maxlen items: the oldest go at once
            conv.turns = deque(conv.turns, maxlen=window)
            conv.window = window
        conv.ttl_ms = ttl_ms
        conv.updated = updated
        self._set_deadline(session, conv, expires_at)

    @applies(ConvAppend)
    def _apply_append(self, effect: ConvAppend) -> int:
        session = effect.session
        seq = effect.seq
        ts = effect.ts
        conv = self.objects.get(session)
        if conv is None:
            raise EffectError(f"conv.append to missing session {session!r}")
        conv.turns.append(Turn(seq, effect.role, effect.content, ts, effect.meta))  # maxlen drops the oldest
        conv.appended += 1
        conv.updated = ts
        self._set_deadline(session, conv, effect.expires_at)
        return seq

    def _clear(self, session: bytes, updated: int) -> int:
        conv = self.objects.get(session)
        if conv is None:
            raise EffectError(f"conv.clear of missing session {session!r}")
        removed = len(conv.turns)
        conv.turns.clear()
        conv.updated = updated
        return removed

    def _delete(self, sessions: list[bytes]) -> int:
        removed = 0
        for session in sessions:
            if self.objects.pop(session, None) is not None:
                removed += 1
        return removed

    def _set_deadline(self, session: bytes, conv: Conversation, expires_at: int | None) -> None:
        conv.expires_at = expires_at
        if expires_at is None:
            return
        # A later deadline keeps the earlier heap entry: it is rescheduled when it comes due.
        if conv.scheduled is None or expires_at < conv.scheduled:
            conv.scheduled = expires_at
            heapq.heappush(self._heap, (expires_at, session))

    # --- expiry -------------------------------------------------------------------
    def purge_expired(self, now_ms: int, limit: int) -> int:
        heap = self._heap
        removed = 0
        while heap and heap[0][0] <= now_ms and removed < limit:
            deadline, session = heapq.heappop(heap)
            conv = self.objects.get(session)
            if conv is None or conv.scheduled != deadline:
                continue  # stale entry: the session went away or was rescheduled earlier
            conv.scheduled = None
            if conv.expires_at is None:
                continue
            if conv.expires_at <= now_ms:
                del self.objects[session]
                removed += 1
                if self.on_expire is not None:
                    self.on_expire("conv", session, None)
            else:
                conv.scheduled = conv.expires_at
                heapq.heappush(heap, (conv.expires_at, session))
        return removed

    # --- id space -----------------------------------------------------------------
    def ids(self, now_ms: int) -> Iterable[bytes]:
        return [s for s, conv in self.objects.items() if conv.alive(now_ms)]

    def exists(self, ident: bytes, now_ms: int) -> bool:
        return self.get(ident, now_ms) is not None

    def clear(self) -> None:
        self.objects.clear()
        self._heap.clear()

    def stats(self, now_ms: int) -> dict[str, int]:
        objects = entries = 0
        for conv in self.objects.values():
            if conv.alive(now_ms):
                objects += 1
                entries += len(conv.turns)
        return {"objects": objects, "entries": entries}

    # --- persistence (snapshot rows: DictStore) ------------------------------------
    def _row(self, obj: Conversation) -> list[Any]:
        return [obj.window, obj.ttl_ms, obj.expires_at, obj.created, obj.updated,
                obj.appended, [[t.seq, t.role, t.content, t.ts, t.meta] for t in obj.turns]]

    def load_id(self, ident: bytes, state: Any) -> None:
        window, ttl_ms, expires_at, created, updated, appended, turns = state
        conv = Conversation(window, ttl_ms, None, created, updated, appended,
                            deque((Turn(*t) for t in turns), maxlen=window))
        self.objects[ident] = conv
        self._set_deadline(ident, conv, expires_at)
