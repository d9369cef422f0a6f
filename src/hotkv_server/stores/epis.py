"""Episodic memory: an append-only, time-stamped event log per agent (AMEM.EPIS.*).

Event ids are ``<ms>-<seq>`` as Redis stream ids are, strictly increasing per agent. The
store keeps each id as one integer key ``ms << 64 | seq`` in a sorted list beside the
events, so range queries are two bisections and trimming the oldest events is one slice.

Effects (records in ``epis_effects``, every server-chosen value fixed by the handler):

* ``EpisLog`` ``["epis.log", agent, ms, seq, type, text, source|None, meta|None]`` appends one event.
* ``EpisTrim`` ``["epis.trim", agent, ms, seq]`` removes every event whose id is <= ``ms-seq``; carrying
  the boundary id (not a count or a MAXLEN) makes replay remove exactly the same events.
* ``EpisDel`` ``["epis.del", agent]`` forgets the agent's log.

A log trimmed to no events is kept (as a Redis stream is), so its ids keep increasing
from the last one issued; only ``epis.del`` forgets it. There is no TTL.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from typing import Any

from hotkv_server.stores.base import EffectError, TimelessStore, applies
from hotkv_server.stores.epis_effects import EpisDel, EpisLog, EpisTrim

SEQ_BITS = 64
SEQ_MASK = (1 << SEQ_BITS) - 1
#: the largest ms or seq part of an id (ids are parsed as signed 64-bit integers)
MAX_PART = 2**63 - 1
#: the smallest and largest possible id keys (``-`` and ``+`` in a range)
MIN_KEY = 0
MAX_KEY = (MAX_PART << SEQ_BITS) | SEQ_MASK

#: one event: (ms, seq, type, text, source, meta)
Event = tuple[int, int, bytes, bytes, bytes | None, bytes | None]


def event_key(ms: int, seq: int) -> int:
    """The sortable integer form of the id ``ms-seq``."""
    return (ms << SEQ_BITS) | seq


def key_parts(key: int) -> tuple[int, int]:
    """``(ms, seq)`` of an id key."""
    return key >> SEQ_BITS, key & SEQ_MASK


def format_id(ms: int, seq: int) -> bytes:
    return b"%d-%d" % (ms, seq)


class AgentLog:
    """One agent's events in id order, and the last id ever issued (survives trimming)."""

    __slots__ = ("events", "keys", "last_key")

    def __init__(self) -> None:
        self.keys: list[int] = []
        self.events: list[Event] = []
        self.last_key = -1  # set by the first event: a log never exists without one


class EpisodicStore(TimelessStore[AgentLog]):
    """Per agent an append-only event log, queried by type and id/time range."""

    name = "epis"

    def __init__(self) -> None:
        super().__init__()  # objects: agent -> its log
        self._entries = 0  # events over all agents, for INFO without a walk

    # --- ids --------------------------------------------------------------------------
    def next_id(self, agent: bytes, now_ms: int) -> tuple[int, int]:
        """The id a new event of ``agent`` gets at ``now_ms``: ``now-0``, or ``last-ms``
        with the next seq when the clock is at or behind the last id (so ids never repeat
        or go back, even if the wall clock does)."""
        log = self.objects.get(agent)
        if log is None:
            return now_ms, 0
        last_ms, last_seq = key_parts(log.last_key)
        if now_ms > last_ms:
            return now_ms, 0
        return last_ms, last_seq + 1

    # --- effects ----------------------------------------------------------------------
    @applies(EpisLog)
    def _log(self, e: EpisLog) -> int:
        """Append one event; returns the log's new length."""
        agent = e.agent
        ms = e.ms
        seq = e.seq
        key = event_key(ms, seq)
        log = self.objects.get(agent)
        if log is None:
            log = self.objects[agent] = AgentLog()
        if key <= log.last_key:
            raise EffectError(f"epis.log id {ms}-{seq} is not above the agent's last id")
        log.keys.append(key)
        log.events.append((ms, seq, e.type, e.text, e.source, e.meta))
        log.last_key = key
        self._entries += 1
        return len(log.keys)

    @applies(EpisTrim)
    def _trim(self, e: EpisTrim) -> int:
        """Remove every event up to and including the boundary id; returns how many."""
        log = self.objects.get(e.agent)
        if log is None:
            return 0
        cut = bisect_right(log.keys, event_key(e.ms, e.seq))
        if cut:
            del log.keys[:cut]
            del log.events[:cut]
            self._entries -= cut
        return cut

    @applies(EpisDel)
    def _delete(self, e: EpisDel) -> int:
        log = self.objects.pop(e.agent, None)
        if log is None:
            return 0
        self._entries -= len(log.keys)
        return 1

    # --- reads ------------------------------------------------------------------------
    def length(self, agent: bytes) -> int:
        log = self.objects.get(agent)
        return 0 if log is None else len(log.keys)

    def query(
        self,
        agent: bytes,
        start: int = MIN_KEY,
        end: int = MAX_KEY,
        type_: bytes | None = None,
        limit: int | None = None,
        rev: bool = False,
    ) -> list[Event]:
        """Events with ``start <= key <= end`` (id keys), of ``type_`` if given, ascending
        (newest first with ``rev``), at most ``limit``."""
        log = self.objects.get(agent)
        if log is None or start > end:
            return []
        lo = bisect_left(log.keys, start)
        hi = bisect_right(log.keys, end)
        if lo >= hi or limit == 0:
            return []
        events = log.events
        if type_ is None:
            count = hi - lo if limit is None else min(limit, hi - lo)
            return events[hi - count : hi][::-1] if rev else events[lo : lo + count]
        out: list[Event] = []
        indices = range(hi - 1, lo - 1, -1) if rev else range(lo, hi)
        for i in indices:
            event = events[i]
            if event[2] == type_:
                out.append(event)
                if len(out) == limit:
                    break
        return out

    def trim_boundary_maxlen(self, agent: bytes, maxlen: int) -> tuple[int, int] | None:
        """The id up to which to trim so at most ``maxlen`` events stay; None: nothing to do."""
        log = self.objects.get(agent)
        if log is None or len(log.keys) <= maxlen:
            return None
        return key_parts(log.keys[len(log.keys) - maxlen - 1])

    def trim_boundary_before(self, agent: bytes, start: int) -> tuple[int, int] | None:
        """The id up to which to trim so every event with a key below ``start`` goes."""
        log = self.objects.get(agent)
        if log is None:
            return None
        cut = bisect_left(log.keys, start)
        if cut == 0:
            return None
        return key_parts(log.keys[cut - 1])

    # --- the Store contract (ids, snapshot rows: TimelessStore) -------------------------
    def clear(self) -> None:
        super().clear()
        self._entries = 0

    def _row(self, obj: AgentLog) -> list[Any]:
        return [*key_parts(obj.last_key), [list(event) for event in obj.events]]

    def load_id(self, ident: bytes, state: Any) -> None:
        self.drop_id(ident)
        last_ms, last_seq, events = state
        log = self.objects[ident] = AgentLog()
        log.last_key = event_key(last_ms, last_seq)
        for ms, seq, type_, text, source, meta in events:
            log.keys.append(event_key(ms, seq))
            log.events.append((ms, seq, type_, text, source, meta))
        self._entries += len(events)

    def drop_id(self, ident: bytes) -> None:
        log = self.objects.pop(ident, None)
        if log is not None:
            self._entries -= len(log.events)

    def stats(self, now_ms: int) -> dict[str, int]:
        return {"objects": len(self.objects), "entries": self._entries}
