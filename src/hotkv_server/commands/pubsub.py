"""Pub/sub commands: (P|S)SUBSCRIBE, (P|S)UNSUBSCRIBE, PUBLISH, SPUBLISH, PUBSUB.

Subscriptions live in ``core.pubsub`` (engine/pubsub.py). A subscribe command answers one
confirmation per channel, written in order with the client's replies, and no reply of its
own. In RESP2 a subscribed client may only run the commands the dispatch point lets
through (``SUBSCRIBED_MODE``); in RESP3 messages arrive as push values beside ordinary
replies. hotkv is one shard, so shard channels are channels of their own on this server.
"""

from __future__ import annotations

from typing import Any

from hotkv_server.engine.context import Context
from hotkv_server.engine.dispatch import NO_REPLY
from hotkv_server.engine.glob import glob_match
from hotkv_server.engine.pubsub import CHANNEL, PATTERN, SHARD
from hotkv_server.engine.registry import SpecFields, container, family, help_lines
from hotkv_server.engine.replies import Simple

command = family(group="pubsub")

#: command -> (kind of its channel arguments, whether they are all arguments from 1 on):
#: what ACL channel permissions are checked against (as Redis's getChannelsFromCommand)
CHANNEL_ARGUMENTS: dict[str, tuple[str, bool]] = {
    "publish": (CHANNEL, False),
    "spublish": (CHANNEL, False),
    "subscribe": (CHANNEL, True),
    "ssubscribe": (CHANNEL, True),
    "psubscribe": (PATTERN, True),
}


def channels_of(name: str, argv: list[bytes]) -> tuple[str, list[bytes]] | None:
    """(kind, channel arguments) of a call that names channels, else None."""
    found = CHANNEL_ARGUMENTS.get(name)
    if found is None:
        return None
    kind, every = found
    return kind, (argv[1:] if every else argv[1:2])


#: the subscriptions each (UN)SUBSCRIBE command is about
_KIND_OF = {b"subscribe": CHANNEL, b"unsubscribe": CHANNEL, b"psubscribe": PATTERN,
            b"punsubscribe": PATTERN, b"ssubscribe": SHARD, b"sunsubscribe": SHARD}
_SUBSCRIBE = SpecFields(arity=-2, flags="pubsub noscript loading stale", since="2.0.0")
_SHARD = SpecFields(keys=(1, -1, 1), key_flags="not_key", since="7.0.0")


@command("subscribe", _SUBSCRIBE,
         complexity="O(N) where N is the number of channels to subscribe to.")
@command("psubscribe", _SUBSCRIBE,
         complexity="O(N) where N is the number of patterns to subscribe to.")
@command("ssubscribe", _SUBSCRIBE, _SHARD,
         complexity="O(N) where N is the number of shard channels to subscribe to.")
def subscribe(ctx: Context, argv: list[bytes]) -> Any:
    """SUBSCRIBE channel [channel ...]
    Listens for messages published to channels.

    PSUBSCRIBE pattern [pattern ...]
    Listens for messages published to channels that match one or more patterns.

    SSUBSCRIBE shardchannel [shardchannel ...]
    Listens for messages published to shard channels.
    """
    ctx.core.pubsub.subscribe(ctx, _KIND_OF[argv[0].lower()], argv[1:])
    return NO_REPLY


@command("unsubscribe", _SUBSCRIBE, arity=-1,
         complexity="O(N) where N is the number of channels to unsubscribe.")
@command("punsubscribe", _SUBSCRIBE, arity=-1,
         complexity="O(N) where N is the number of patterns to unsubscribe.")
@command("sunsubscribe", _SUBSCRIBE, _SHARD, arity=-1,
         complexity="O(N) where N is the number of shard channels to unsubscribe.")
def unsubscribe(ctx: Context, argv: list[bytes]) -> Any:
    """UNSUBSCRIBE [channel [channel ...]]
    Stops listening to messages posted to channels.

    PUNSUBSCRIBE [pattern [pattern ...]]
    Stops listening to messages published to channels that match one or more patterns.

    SUNSUBSCRIBE [shardchannel [shardchannel ...]]
    Stops listening to messages posted to shard channels.
    """
    ctx.core.pubsub.unsubscribe(ctx, _KIND_OF[argv[0].lower()], argv[1:])
    return NO_REPLY


@command("publish", arity=3, flags="pubsub loading stale fast", since="2.0.0",
         complexity="O(N+M) where N is the number of clients subscribed to the receiving "
                    "channel and M is the total number of subscribed patterns (by any client).")
def publish(ctx: Context, argv: list[bytes]) -> Any:
    """PUBLISH channel message
    Posts a message to a channel.
    """
    return ctx.core.pubsub.publish(argv[1], argv[2])


@command("spublish", arity=3, flags="pubsub loading stale fast", key="not_key", since="7.0.0",
         complexity="O(N) where N is the number of clients subscribed to the receiving shard channel.")
def spublish(ctx: Context, argv: list[bytes]) -> Any:
    """SPUBLISH shardchannel message
    Post a message to a shard channel
    """
    return ctx.core.pubsub.spublish(argv[1], argv[2])


# --- PUBSUB ----------------------------------------------------------------------------

container("pubsub", group="pubsub", summary="A container for Pub/Sub commands", since="2.8.0")


def _visible(ctx: Context, kind: str, names: list[bytes]) -> list[bytes]:
    """The channels this client's user may know of (see ``User.channel_visible``)."""
    user = ctx.user
    if user is None or not user.restricted:
        return names
    return [name for name in names if user.channel_visible(name, pattern=kind == PATTERN)]


#: the subscriptions each listing subcommand is about (its handler looks it up by argv[1])
_LISTED = {b"channels": CHANNEL, b"numsub": CHANNEL, b"shardchannels": SHARD, b"shardnumsub": SHARD}
#: what PUBSUB CHANNELS, NUMSUB, SHARDCHANNELS and SHARDNUMSUB share
_LISTING = SpecFields(arity=-2, flags="pubsub loading stale")


@command("pubsub|channels", _LISTING, since="2.8.0",
         complexity="O(N) where N is the number of active channels, and assuming constant time "
                    "pattern matching (relatively short channels and patterns)",
         help="CHANNELS [<pattern>]\n    Return the currently active channels matching a <pattern> (default: '*').")
def pubsub_channels(ctx: Context, argv: list[bytes]) -> Any:
    """PUBSUB CHANNELS [pattern]
    Returns the active channels.

    PUBSUB SHARDCHANNELS [pattern]
    Returns the active shard channels.
    """
    kind = _LISTED[argv[1].lower()]
    table = ctx.core.pubsub.table(kind)
    names = list(table)
    if len(argv) == 3:
        names = [n for n in names if glob_match(argv[2], n)]
    return _visible(ctx, kind, names)


@command("pubsub|numsub", _LISTING, since="2.8.0",
         complexity="O(N) for the NUMSUB subcommand, where N is the number of requested channels",
         help="NUMSUB [<channel> ...]\n    Return the number of subscribers for the specified channels, excluding\n    pattern subscriptions(default: no channels).")
def pubsub_numsub(ctx: Context, argv: list[bytes]) -> Any:
    """PUBSUB NUMSUB [channel [channel ...]]
    Returns a count of subscribers to channels.

    PUBSUB SHARDNUMSUB [shardchannel [shardchannel ...]]
    Returns the count of subscribers of shard channels.
    """
    kind = _LISTED[argv[1].lower()]
    table = ctx.core.pubsub.table(kind)
    allowed = set(_visible(ctx, kind, argv[2:]))
    out: list[Any] = []
    for name in argv[2:]:
        out.append(name)
        out.append(len(table.get(name, ())) if name in allowed else 0)
    return out


@command("pubsub|numpat", arity=2, flags="pubsub loading stale", since="2.8.0",
         help="NUMPAT\n    Return number of subscriptions to patterns.")
def pubsub_numpat(ctx: Context, argv: list[bytes]) -> Any:
    """PUBSUB NUMPAT
    Returns a count of unique pattern subscriptions.
    """
    return len(ctx.core.pubsub.patterns)


command("pubsub|shardchannels", _LISTING, since="7.0.0",
        complexity="O(N) where N is the number of active shard channels, and assuming constant "
                   "time pattern matching (relatively short shard channels).",
        help="SHARDCHANNELS [<pattern>]\n    Return the currently active shard level channels matching a <pattern> (default: '*').")(pubsub_channels)
command("pubsub|shardnumsub", _LISTING, since="7.0.0",
        complexity="O(N) for the SHARDNUMSUB subcommand, where N is the number of requested "
                   "shard channels",
        help="SHARDNUMSUB [<shardchannel> ...]\n    Return the number of subscribers for the specified shard level channel(s)")(pubsub_numsub)


@command("pubsub|help", arity=2, flags="loading stale", group="server", since="6.2.0",
         help="HELP\n    Prints this help.")
def pubsub_help(ctx: Context, argv: list[bytes]) -> Any:
    """PUBSUB HELP
    Returns helpful text about the different subcommands.
    """
    return [Simple(line) for line in help_lines("pubsub", ("channels", "numpat", "numsub", "shardchannels", "shardnumsub"))]
