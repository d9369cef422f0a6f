"""What a user confined by ACL key patterns may see of an id space (a hotkv extension).

Redis checks key patterns only on the keys a command names; commands that list or count
keys (KEYS, SCAN, RANDOMKEY, DBSIZE) see every key whatever the patterns say. hotkv promises
that one tenant never learns another's ids, so for a user whose key patterns do not cover
everything these commands and AMEM.SCAN see only the ids the user may read: ids it could
``GET``. Unrestricted users (``allkeys``) see everything, as in Redis, at no extra cost.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from hotkv_server.engine.context import Context


def readable_filter(ctx: Context) -> Callable[[bytes], bool] | None:
    """A predicate telling which ids this client's user may read, or None when it may read
    every id (the common case: callers skip filtering altogether)."""
    user = ctx.user
    if user is None or user.allkeys:
        return None
    allowed = user.key_allowed

    def readable(ident: bytes) -> bool:
        return bool(allowed(ident, read=True, write=False))

    return readable


def readable_ids(ctx: Context, ids: Iterable[bytes]) -> list[bytes]:
    """``ids`` (in their order) less those this client's user may not read: what a command
    that lists an id space (KEYS, EMBED.DEDUP.LIST, AMEM.SUMMARY.LIST ...) shows a tenant."""
    readable = readable_filter(ctx)
    return list(ids) if readable is None else [ident for ident in ids if readable(ident)]
