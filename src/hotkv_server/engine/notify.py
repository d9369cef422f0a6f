"""Keyspace and memory notifications: the one place that turns changes into pub/sub events.

Every change reaches ``Notifier`` from the effect pipeline: the effect log
(``engine/effects.py``) calls ``before``/``applied`` for each record it applies (a live
write, an eviction, a replica applying its primary's stream; not an AOF replay, when no
one listens), and ``expired`` comes for each entry a store removes because its deadline
passed (lazily on access or by active expiry). Records are read in their wire form
(``[op, field ...]``, the AOF's), so this module depends on no record class. What is published is chosen by ``notify-keyspace-events``:

* Redis's classes for the string keyspace: ``g`` generic (del, expire, persist), ``$``
  string (set, incrby, ...), ``x`` expired, ``e`` evicted, ``n`` new key, ``m`` keymiss,
  ``A`` the alias of ``g$lshzxetd``; ``K`` publishes on ``__keyspace@0__:<key>`` (message:
  the event), ``E`` on ``__keyevent@0__:<event>`` (message: the key). ``h l s z``: the
  hash, list, set and sorted-set events, named and ordered as Redis 7.0 does
  (``engine/notify_types.py``); ``t d`` are accepted for what hotkv does not have.
* ``a`` for agent memory, independent of K/E/A: ``__amem@0__:<store>:<id>`` with the event
  as message, followed by a space and a detail where one names an entry
  (``append 7``, ``store fact-1``, ``expired ticket``). See docs/notifications.md.

A subscriber whose user is confined by ACL key patterns receives only notifications about
keys and ids it may read (``may_see``), whatever its channel permissions.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hotkv_server.stores.effect import Effect

from hotkv_server.engine import notify_types
from hotkv_server.engine.notify_flags import (
    AMEM,
    EVICTED,
    EXPIRED,
    GENERIC,
    KEY_MISS,
    KEYEVENT,
    KEYSPACE,
    NEW,
    STRING,
    format_flags,
    parse_flags,
)

__all__ = ["Notifier", "format_flags", "key_in_channel", "may_see", "parse_flags"]

KEYSPACE_PREFIX = b"__keyspace@0__:"
KEYEVENT_PREFIX = b"__keyevent@0__:"
AMEM_PREFIX = b"__amem@0__:"
AMEM_STORES = (b"conv", b"sem", b"work", b"epis", b"summary")


def key_in_channel(channel: bytes) -> bytes | None:
    """The key or id a notification channel names (None for other channels): ACL uses it
    to keep a key-confined user from learning of other tenants' keys."""
    if channel.startswith(KEYSPACE_PREFIX):
        return channel[len(KEYSPACE_PREFIX):]
    if channel.startswith(AMEM_PREFIX):
        store, sep, ident = channel[len(AMEM_PREFIX):].partition(b":")
        if sep and store in AMEM_STORES:
            return ident
    return None


#: the kv.set event by the command that wrote it (as Redis names them)
_SET_EVENTS = {"incr": b"incrby", "decr": b"incrby", "incrby": b"incrby", "decrby": b"incrby",
               "incrbyfloat": b"incrbyfloat", "append": b"append", "setrange": b"setrange",
               "getdel": b"del"}
_EXPIRING_SETS = frozenset({"set", "setex", "psetex"})
#: the events of a memory record, in order: (event, the record's field its detail is, or
#: None; whether that field is a list, one event per item). A verb not listed announces
#: itself on its id (CONV.DEL and EPIS.LOG are ``_amem``'s own cases)
_AMEM_EVENTS: dict[tuple[str, str], tuple[tuple[str, int | None, bool], ...]] = {
    ("conv", "append"): (("append", 2, False),),
    ("sem", "store"): (("evicted", 13, True), ("store", 2, False)),
    ("sem", "update"): (("evicted", 3, True), ("update", None, False)),
    ("sem", "del"): (("forget", 2, True),),
    ("work", "set"): (("set", 2, False),),
    ("work", "del"): (("del", 2, True),),
    ("summary", "set"): (("set", 3, False),),
    ("summary", "append"): (("append", 3, False),),
}


def may_see(ctx: Any, key: bytes) -> bool:
    """Whether a subscriber's user may read ``key`` (a notification's subject)."""
    user = ctx.user
    return user is None or user.allkeys or user.key_allowed(key)


class Notifier:
    """Publishes the events of applied effects and expiries, per ``notify-keyspace-events``."""

    def __init__(self, core: Any) -> None:
        self.core = core
        self.flags = 0
        #: (command name, argv) of the command running, set by the dispatch point while
        #: notifications are on (events are named after commands, as Redis names them)
        self.call: tuple[str, list[bytes]] | None = None
        #: why the next effects are made when no command makes them ("evicted")
        self.cause: str | None = None
        core.pubsub.visibility = may_see

    def configure(self, flags: int) -> None:
        self.flags = flags
        self.core.notify_flags = flags
        # the effect log tells us of each record it applies, only while something is on
        self.core.effects.notify = self if flags else None

    # --- publishing -----------------------------------------------------------------
    def keyspace(self, kind: int, event: bytes, key: bytes) -> None:
        flags = self.flags
        if not flags & kind:
            return
        hub = self.core.pubsub
        if flags & KEYSPACE:
            hub.publish(KEYSPACE_PREFIX + key, event, names=key)
        if flags & KEYEVENT:
            hub.publish(KEYEVENT_PREFIX + event, key, names=key)

    def amem(self, store: str, ident: bytes, event: str, detail: Any = None) -> None:
        if not self.flags & AMEM:
            return
        message = event.encode()
        if detail is not None:
            message += b" " + (detail if isinstance(detail, bytes) else str(detail).encode())
        self.core.pubsub.publish(AMEM_PREFIX + store.encode() + b":" + ident, message, names=ident)

    def missed(self, key: bytes) -> None:
        """A read found no such cache key (``m``: Redis's keymiss, published by the reads
        that count keyspace_misses: GET, MGET, SET ... GET)."""
        self.keyspace(KEY_MISS, b"keymiss", key)

    # --- the pipeline's two entry points --------------------------------------------
    def expired(self, store: str, ident: bytes, detail: bytes | None) -> None:
        """A store removed an entry whose deadline passed."""
        if store == "kv":
            self.keyspace(EXPIRED, b"expired", ident)
        else:
            self.amem(store, ident, "expired", detail)

    # --- the effect log's hooks (engine/effects.py Notify) ----------------------------
    def before(self, record: Effect) -> list[bytes] | None:
        return self.new_keys(record.wire()) if self.flags & NEW else None

    def applied(self, record: Effect, before: list[bytes] | None) -> None:
        self.effect(record.wire(), before)

    def replicated(self, record: Effect) -> None:
        """A primary's record: no command of ours wrote it, so its events are named after
        the record (a replica hears HINCRBY's ``kv.hset`` as ``hset``)."""
        call, self.call = self.call, None
        try:
            self.effect(record.wire(), None)
        finally:
            self.call = call

    def new_keys(self, effect: list[Any]) -> list[bytes]:
        """Before a write: the cache keys it will create (for ``n``, Redis's "new")."""
        op = effect[0]
        kv = self.core.db.kv
        now = self.core.clock.now_ms()
        if op == "kv.set":
            return [effect[1]] if kv.peek(effect[1], now) is None else []
        if op == "kv.mset":
            pairs = effect[1]
            return [pairs[i] for i in range(0, len(pairs), 2) if kv.peek(pairs[i], now) is None]
        if op == "kv.put":
            return [effect[1]] if kv.peek(effect[1], now) is None else []
        if op == "kv.rename" or op == "kv.copy":
            return [effect[2]]  # as Redis: the destination is deleted first, then added
        return []

    def effect(self, effect: list[Any], new: list[bytes] | None) -> None:
        """One applied effect; ``new``: the cache keys it created."""
        op = effect[0]
        if op == "tx":
            for inner in effect[1]:
                self.effect(inner, None)
            return
        store, _, verb = op.partition(".")
        if store == "kv":
            self._kv(verb, effect, self.cause, new or ())
        elif store == "obj":
            for event in notify_types.object_events(verb, effect, (self.call or ("",))[0]):
                self.keyspace(*event)
        elif self.flags & AMEM:
            self._amem(store, verb, effect)

    def _kv(self, verb: str, effect: list[Any], cause: str | None, new: Any) -> None:
        name, argv = self.call or ("", [])
        if verb == "set":
            if new:
                self.keyspace(NEW, b"new", effect[1])
            self.keyspace(STRING, _SET_EVENTS.get(name, b"set"), effect[1])
            if effect[3] is not None and name in _EXPIRING_SETS and (
                name != "set" or any(a.upper() in (b"EX", b"PX", b"EXAT", b"PXAT") for a in argv[3:])
            ):
                self.keyspace(GENERIC, b"expire", effect[1])
        elif verb == "mset":
            pairs = effect[1]
            for i in range(0, len(pairs), 2):
                if pairs[i] in new:  # as Redis: each key's "new" right before its "set"
                    self.keyspace(NEW, b"new", pairs[i])
                self.keyspace(STRING, b"set", pairs[i])
        elif verb == "del":
            kind, event = (EVICTED, b"evicted") if cause == "evicted" else (GENERIC, b"del")
            if name == "getdel":
                kind, event = GENERIC, b"del"
            for key in effect[1]:
                self.keyspace(kind, event, key)
        elif verb == "expire":
            self.keyspace(GENERIC, b"expire", effect[1])
        elif verb == "persist":
            self.keyspace(GENERIC, b"persist", effect[1])
        elif verb == "put":
            if new:
                self.keyspace(NEW, b"new", effect[1])
            found = notify_types.put(effect, name, argv)
            if found is not None:
                self.keyspace(*found)
        elif verb == "rename" or verb == "copy":
            if new:
                self.keyspace(NEW, b"new", effect[2])
            for moved in notify_types.generic(verb, effect):
                self.keyspace(*moved)
        else:
            self._typed(verb, effect, name, argv)

    def _typed(self, verb: str, effect: list[Any], name: str, argv: list[bytes]) -> None:
        """An in-place record of a data type: its events, then ``del`` if the key went."""
        found = notify_types.in_place(verb, effect, name, argv)
        if found is None:
            return
        events, emptied = found
        for event in events:
            self.keyspace(*event)
        if emptied is not None and self.core.db.kv.peek(emptied, self.core.clock.now_ms()) is None:
            self.keyspace(GENERIC, b"del", emptied)

    def _amem(self, store: str, verb: str, effect: list[Any]) -> None:
        if store.encode() not in AMEM_STORES:
            return
        ident = effect[1]
        if store == "conv" and verb == "del":  # one record, several conversations
            for session in ident:
                self.amem(store, session, "del")
        elif store == "epis" and verb == "log":
            self.amem(store, ident, "log", b"%d-%d" % (effect[2], effect[3]))
        else:
            for event, field, each in _AMEM_EVENTS.get((store, verb), ((verb, None, False),)):
                if field is None:
                    self.amem(store, ident, event)
                elif each:
                    for item in effect[field]:
                        self.amem(store, ident, event, item)
                else:
                    self.amem(store, ident, event, effect[field])
