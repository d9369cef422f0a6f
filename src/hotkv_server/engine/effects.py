"""The effect log: the one place where writes are applied, counted, WATCH-touched, packed
and handed to the AOF and the replicas.

Every change to the data goes through here:

* ``emit(record)`` (``ctx.emit``): a live write of a handler. The record is applied to the
  database, counted in ``dirty``, breaks the WATCH of the ids it names (``keys()``) and is
  queued in ``pending``.
* ``flush()`` (the dispatch point, after every command): the pending records leave as one
  unit, handed to every sink (the AOF buffer, the replication stream) and, record by
  record, to the observers (the memory estimate). Inside a group nothing leaves.
  A unit is packed once (msgpack of the record, or of ``["tx", [...]]`` for several): here,
  when a sink needs the bytes at once (``wants_bytes``: the replication stream), and the
  bytes go to every sink; otherwise the AOF packs its turn's units in one call at the end
  of the turn.
* ``begin()`` / ``commit()``: a group (EXEC) whose records leave as one ``tx`` when the
  outermost group commits, so a torn AOF tail or a replica never sees half of it.
* ``apply_replicated(payload)``: a record decided elsewhere (a primary's
  ``HOTKV.EFFECT``): applied, counted, WATCH-touched, and its bytes handed to the sinks as
  they came (our AOF), never packed again.
* ``replay(value)``: a record of our own AOF while loading: applied only.

Keyspace and memory notifications (``engine/notify.py``) hear every record applied by
``emit`` and ``apply_replicated`` through ``notify``, set while notify-keyspace-events is
on, at the moment it is applied (so a transaction's events come in its commands' order).

Sinks and observers are listed only while they have work to do (``set_sink``), so a write
with no AOF, no replica and no memory limit packs nothing. The reply barrier of the
event-loop turn is ``hotkv_server.engine.turn``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Set
from typing import Any, Protocol

from hotkv_server.stores.database import Database
from hotkv_server.stores.effect import Effect, decode, pack_unit, unit_value, unpack

log = logging.getLogger("hotkv")

#: takes each applied record
Observer = Callable[[Effect], None]


class Watcher(Protocol):
    """A client in WATCH (``Context``): a write to a watched id sets ``dirty_cas``."""

    dirty_cas: bool


class Notify(Protocol):
    """Hears each applied record (the keyspace notifier)."""

    def before(self, effect: Effect) -> Any:
        """Called before the record is applied; what it returns goes to ``applied``."""

    def applied(self, effect: Effect, before: Any) -> None:
        """Called once the record is applied."""

    def replicated(self, effect: Effect) -> None:
        """Called once a record decided elsewhere (a primary's) is applied."""


class Sink(Protocol):
    """Keeps a copy of every write: the AOF, the replication stream."""

    #: True: every unit must come packed (``payload`` is never None)
    wants_bytes: bool

    def write_effects(self, records: list[Effect], payload: bytes | None) -> None:
        """One unit of applied records (a command's, an EXEC's, a primary's), with its
        msgpack (``pack_unit``) when a sink wanted it or it came packed, else None. The
        list is the sink's to keep."""

    def effects_lost(self, reason: str) -> None:
        """Records were applied but could not be packed (a store bug): the copy can no
        longer follow the memory and must be rebuilt."""


class EffectLog:
    """See the module docstring; one per Core (``core.effects``)."""

    def __init__(self, db: Database, watchers: Mapping[bytes, Set[Watcher]]) -> None:
        self.db = db
        self._routes = db._routes
        #: key -> contexts watching it (WATCH), the Core's own dict
        self.watchers = watchers
        #: records emitted since the last flush
        self.pending: list[Effect] = []
        #: writes since the last save, as Redis counts them
        self.dirty = 0
        #: open groups (EXEC): records leave when the outermost commits
        self.depth = 0
        self.sinks: list[Sink] = []
        #: a listed sink wants bytes: units are packed in ``flush``
        self.eager = False
        self.observers: list[Observer] = []
        #: the keyspace notifier while notify-keyspace-events is on, else None
        self.notify: Notify | None = None

    # --- live writes --------------------------------------------------------------
    def emit(self, effect: Effect) -> Any:
        """Apply one record of a handler and queue it; returns what the store returned."""
        notify = self.notify
        before = notify.before(effect) if notify is not None else None
        present = None
        if self.watchers and effect.keys() is None:
            # as Redis: emptying the data breaks only the WATCHes of ids that existed
            present = [key for key in self.watchers if self.db.exists_any(key)]
        result = self._routes[type(effect)](effect)  # KeyError: a record no store lists
        self.pending.append(effect)
        self.dirty += 1
        if self.watchers:
            if present is not None:
                self.touch(present)
            else:
                self.touch(effect.keys())  # type: ignore[arg-type]
        if notify is not None:
            notify.applied(effect, before)
        return result

    @property
    def grouped(self) -> bool:
        """Inside a group (EXEC): nothing leaves until it commits."""
        return self.depth > 0

    def begin(self) -> None:
        """Open a group: the records emitted until ``commit`` leave as one unit."""
        self.depth += 1

    def commit(self) -> None:
        """Close a group; the outermost one hands its records out."""
        self.depth -= 1
        if not self.depth:
            self.flush()

    def flush(self) -> None:
        """Hand the pending records to the observers and (packed once) the sinks, unless
        a group is open."""
        pending = self.pending
        if not pending or self.depth:
            return
        self.pending = []
        for observe in self.observers:
            for record in pending:
                observe(record)
        sinks = self.sinks
        if sinks:
            payload = None
            if self.eager:
                try:
                    payload = pack_unit(unit_value(pending))
                except Exception as exc:  # a store bug: a record msgpack cannot encode
                    log.exception("Can't encode an effect for the AOF and the replicas")
                    for sink in sinks:
                        sink.effects_lost(f"an effect could not be encoded ({exc})")
                    return
            for sink in sinks:
                sink.write_effects(pending, payload)

    # --- records decided elsewhere -----------------------------------------------------
    def apply_replicated(self, payload: bytes) -> int:
        """Apply one unit of records from a primary; its bytes go to our sinks unchanged.
        Returns how many records it held. Raises on a record that does not apply."""
        records = decode(unpack(payload))
        self.db.apply_all(records)
        self.dirty += 1
        if self.notify is not None:
            for record in records:
                self.notify.replicated(record)
        if self.watchers:
            for record in records:
                keys = record.keys()
                if keys is None:
                    self.touch_all()
                else:
                    self.touch(keys)
        for observe in self.observers:
            for record in records:
                observe(record)
        for sink in self.sinks:
            sink.write_effects(records, payload)
        return len(records)

    def replay(self, value: Any) -> int:
        """Apply one unit of records read back from our own AOF (not counted, not written
        again); returns how many records it held."""
        records = decode(value)
        self.db.apply_all(records)
        return len(records)

    # --- sinks ---------------------------------------------------------------------
    def set_sink(self, sink: Sink, active: bool) -> None:
        """List ``sink`` while it has work to do (an AOF open, a backlog)."""
        _listed(self.sinks, sink, active)
        self.eager = any(s.wants_bytes for s in self.sinks)

    def set_observer(self, observer: Observer, active: bool) -> None:
        """List ``observer`` while it has work to do (a memory limit)."""
        _listed(self.observers, observer, active)

    # --- WATCH ---------------------------------------------------------------------
    def touch(self, keys: list[bytes]) -> None:
        watchers = self.watchers
        for key in keys:
            ctxs = watchers.get(key)
            if ctxs:
                for ctx in ctxs:
                    ctx.dirty_cas = True

    def touch_all(self) -> None:
        for ctxs in self.watchers.values():
            for ctx in ctxs:
                ctx.dirty_cas = True


def _listed(items: list[Any], item: Any, active: bool) -> None:
    listed = item in items
    if active and not listed:
        items.append(item)
    elif not active and listed:
        items.remove(item)
