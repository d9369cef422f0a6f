"""Pub/sub state: who listens to which channel, pattern and shard channel; message delivery.

The hub maps each channel (pattern, shard channel) to the clients subscribed to it, in
subscription order, and each client keeps its own sets in ``ctx.pubsub`` (None while it
has no subscription, so the dispatch point tests one attribute for RESP2 subscribed mode).

A message is one ``Push`` value handed to each receiver's ``ctx.push``, which the network
layer sets: it encodes it (once per protocol for all receivers of one message), and the
bytes join that client's output in order with its replies and count against its
output-buffer limit (class ``pubsub``). Keyspace and memory
notifications (``engine/notify.py``) are published here too, filtered by ``may_see`` so a
user confined by ACL key patterns never hears of another tenant's keys.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hotkv_server.engine.glob import glob_match
from hotkv_server.engine.replies import Push

#: a client (``engine.core.Context``; not imported: the Core imports this module)
Context = Any

#: kinds of subscription: (field of Subscriptions, confirmation word, unsubscribe word)
CHANNEL, PATTERN, SHARD = "channels", "patterns", "shard"
WORDS = {
    CHANNEL: (b"subscribe", b"unsubscribe"),
    PATTERN: (b"psubscribe", b"punsubscribe"),
    SHARD: (b"ssubscribe", b"sunsubscribe"),
}

#: who may receive one notification: (subscriber, the key or id it names) -> bool
Visibility = Callable[[Any, bytes], bool]


class Subscriptions:
    """One client's subscriptions (dicts keep subscription order, as Redis lists them)."""

    __slots__ = ("channels", "patterns", "shard")

    def __init__(self) -> None:
        self.channels: dict[bytes, None] = {}
        self.patterns: dict[bytes, None] = {}
        self.shard: dict[bytes, None] = {}

    def of(self, kind: str) -> dict[bytes, None]:
        found: dict[bytes, None] = getattr(self, kind)
        return found

    def count(self, kind: str) -> int:
        """The count a confirmation reports: channels + patterns, or shard channels alone."""
        if kind == SHARD:
            return len(self.shard)
        return len(self.channels) + len(self.patterns)

    def empty(self) -> bool:
        return not (self.channels or self.patterns or self.shard)


class Hub:
    """Every subscription of the server."""

    def __init__(self) -> None:
        self.channels: dict[bytes, dict[Context, None]] = {}
        self.patterns: dict[bytes, dict[Context, None]] = {}
        self.shard: dict[bytes, dict[Context, None]] = {}
        #: set when any subscriber's user is confined by key patterns (see ``may_see``)
        self.visibility: Visibility | None = None

    def table(self, kind: str) -> dict[bytes, dict[Context, None]]:
        found: dict[bytes, dict[Context, None]] = getattr(self, kind)
        return found

    # --- subscribing -----------------------------------------------------------------
    def subscribe(self, ctx: Context, kind: str, names: list[bytes]) -> None:
        """Subscribe ``ctx`` and confirm each name, as Redis does (one reply per name)."""
        subs = ctx.pubsub
        if subs is None:
            subs = ctx.pubsub = Subscriptions()
        mine = subs.of(kind)
        table = self.table(kind)
        word = WORDS[kind][0]
        for name in names:
            if name not in mine:
                mine[name] = None
                table.setdefault(name, {})[ctx] = None
            send(ctx, Push([word, name, subs.count(kind)]))

    def unsubscribe(self, ctx: Context, kind: str, names: list[bytes], *, confirm: bool = True) -> None:
        """Unsubscribe from ``names`` (every subscription of the kind when empty)."""
        subs = ctx.pubsub
        word = WORDS[kind][1]
        mine = subs.of(kind) if subs is not None else {}
        if not names:
            names = list(mine)
            if not names:
                if confirm:
                    send(ctx, Push([word, None, subs.count(kind) if subs is not None else 0]))
                return
        table = self.table(kind)
        for name in names:
            if name in mine:
                del mine[name]
                listeners = table.get(name)
                if listeners is not None:
                    listeners.pop(ctx, None)
                    if not listeners:
                        del table[name]
            if confirm:
                send(ctx, Push([word, name, subs.count(kind) if subs is not None else 0]))
        if subs is not None and subs.empty():
            ctx.pubsub = None

    def drop(self, ctx: Context) -> None:
        """Forget every subscription of a client (gone, RESET) without confirmations."""
        if ctx.pubsub is None:
            return
        for kind in (CHANNEL, PATTERN, SHARD):
            self.unsubscribe(ctx, kind, list(ctx.pubsub.of(kind)) if ctx.pubsub else [],
                             confirm=False)
        ctx.pubsub = None

    # --- publishing ------------------------------------------------------------------
    def publish(self, channel: bytes, message: bytes, *, names: bytes | None = None) -> int:
        """Deliver to the channel's and the matching patterns' subscribers; how many got it.

        ``names`` is the key or id a notification is about: subscribers whose user may
        not read it are skipped (and not counted).
        """
        receivers = 0
        visible = self.visibility if names is not None else None
        listeners = self.channels.get(channel)
        if listeners:
            value = Push([b"message", channel, message])
            for ctx in list(listeners):
                if visible is not None and not visible(ctx, names):  # type: ignore[arg-type]
                    continue
                send(ctx, value)
                receivers += 1
        if self.patterns:
            for pattern, subscribers in list(self.patterns.items()):
                if not glob_match(pattern, channel):
                    continue
                value = Push([b"pmessage", pattern, channel, message])
                for ctx in list(subscribers):
                    if visible is not None and not visible(ctx, names):  # type: ignore[arg-type]
                        continue
                    send(ctx, value)
                    receivers += 1
        return receivers

    def spublish(self, channel: bytes, message: bytes) -> int:
        listeners = self.shard.get(channel)
        if not listeners:
            return 0
        value = Push([b"smessage", channel, message])
        for ctx in list(listeners):
            send(ctx, value)
        return len(listeners)

    def listened(self, channel: bytes) -> bool:
        """Whether publishing on ``channel`` could reach anyone (cheap test for notifications)."""
        return channel in self.channels or bool(self.patterns)


def send(ctx: Context, value: Any) -> None:
    """Hand one out-of-band value (a confirmation, a message) to a client, in order."""
    push = ctx.push
    if push is not None:
        push(value)
