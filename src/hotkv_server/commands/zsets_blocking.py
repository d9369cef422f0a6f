"""The blocking sorted set pops: BZPOPMIN BZPOPMAX BZMPOP (engine/blocking.py).

As the blocking list commands: the non-blocking pop first, then a wait served first come
first served when a write (ZADD, ZUNIONSTORE, RENAME ...) gives one of the keys members;
inside MULTI/EXEC they answer at once as the timeout would.
"""

from __future__ import annotations

from typing import Any

from hotkv_server.commands.containers import target_zset, zset_if_any
from hotkv_server.commands.lists import parse_mpop
from hotkv_server.commands.lists_blocking import block_to_pop
from hotkv_server.commands.numbers import parse_timeout_ms
from hotkv_server.commands.zsets import pop_members, zmpop_first
from hotkv_server.engine.context import Context
from hotkv_server.engine.registry import SpecFields, family, key_spec
from hotkv_server.engine.replies import Double

command = family(group="sorted-set")


def _pop_one(ctx: Context, key: bytes, highest: bool) -> list[Any]:
    member, score = pop_members(ctx, key, 1, highest)[0]
    return [key, member, Double(score)]


def _bzpop(ctx: Context, argv: list[bytes], highest: bool) -> Any:
    timeout_ms = parse_timeout_ms(argv[-1])
    keys = argv[1:-1]
    for key in keys:
        if target_zset(ctx, key) is not None:
            return _pop_one(ctx, key, highest)
    return block_to_pop(ctx, keys, timeout_ms, lambda key: zset_if_any(ctx, key),
                        lambda key: _pop_one(ctx, key, highest))


#: what BZPOPMIN and BZPOPMAX share
_BZPOP = SpecFields(arity=-3, flags="write noscript blocking fast", keys=(1, -2, 1),
                    key_flags="RW access delete", acl="@blocking", since="5.0.0",
                    syntax="key [key ...] timeout",
                    complexity="O(log(N)) with N being the number of elements in the sorted set.")


@command("bzpopmin", _BZPOP,
         summary="Removes and returns the member with the lowest score from one or more sorted "
                 "sets. Blocks until a member is available otherwise. Deletes the sorted set if "
                 "the last element was popped.")
def bzpopmin(ctx: Context, argv: list[bytes]) -> Any:
    """BZPOPMIN key [key ...] timeout"""
    return _bzpop(ctx, argv, False)


@command("bzpopmax", _BZPOP,
         summary="Removes and returns the member with the highest score from one or more sorted "
                 "sets. Blocks until a member available otherwise. Deletes the sorted set if the "
                 "last element was popped.")
def bzpopmax(ctx: Context, argv: list[bytes]) -> Any:
    """BZPOPMAX key [key ...] timeout"""
    return _bzpop(ctx, argv, True)


@command("bzmpop", arity=-5, flags="write blocking", since="7.0.0",
         key_specs=(key_spec(2, "RW access delete", keynum=True, arg="key"),), acl="@blocking",
         summary="Removes and returns a member by score from one or more sorted sets. Blocks until "
                 "a member is available otherwise. Deletes the sorted set if the last element was "
                 "popped.", syntax="timeout numkeys key [key ...] (MIN|MAX) [COUNT count]",
         complexity="O(K) + O(M*log(N)) where K is the number of provided keys, N being the number "
                    "of elements in the sorted set, and M being the number of elements popped.")
def bzmpop(ctx: Context, argv: list[bytes]) -> Any:
    """BZMPOP timeout numkeys key [key ...] MIN|MAX [COUNT count]"""
    timeout_ms = parse_timeout_ms(argv[1])
    keys, side, count = parse_mpop(argv, 2, (b"MIN", b"MAX"))
    highest = side == b"MAX"
    found = zmpop_first(ctx, keys, highest, count)
    if found is not None:
        return found

    def pop(key: bytes) -> list[Any]:
        return [key, [[m, Double(s)] for m, s in pop_members(ctx, key, count, highest)]]

    return block_to_pop(ctx, keys, timeout_ms, lambda key: zset_if_any(ctx, key), pop)
