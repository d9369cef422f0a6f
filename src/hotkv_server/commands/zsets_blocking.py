"""The blocking sorted set pops: BZPOPMIN BZPOPMAX BZMPOP (engine/blocking.py).

As the blocking list commands: the non-blocking pop first, then a wait served first come
first served when a write (ZADD, ZUNIONSTORE, RENAME ...) gives one of the keys members;
inside MULTI/EXEC they answer at once as the timeout would.
"""

from __future__ import annotations

from typing import Any

from hotkv_server.commands.lists_blocking import BLOCKING_POP, blocking_mpop, pop_or_block
from hotkv_server.commands.numbers import parse_timeout_ms
from hotkv_server.commands.zsets import ZSET_POPS, pop_members
from hotkv_server.engine.context import Context
from hotkv_server.engine.registry import SpecFields, family, key_spec
from hotkv_server.engine.replies import Double

command = family(group="sorted-set")


#: what BZPOPMIN and BZPOPMAX share beyond the blocking pops' fields
_BZPOP = SpecFields(flags="write noscript blocking fast", since="5.0.0",
                    complexity="O(log(N)) with N being the number of elements in the sorted set.")
#: each by name: the highest score
_BZPOPS = {b"bzpopmin": False, b"bzpopmax": True}


# (stacked specs register bottom-up: BZPOPMIN first, as ACL CAT lists them)
@command("bzpopmax", BLOCKING_POP, _BZPOP)
@command("bzpopmin", BLOCKING_POP, _BZPOP)
def bzpop(ctx: Context, argv: list[bytes]) -> Any:
    """BZPOPMAX key [key ...] timeout
    Removes and returns the member with the highest score from one or more sorted sets. Blocks until
    a member available otherwise. Deletes the sorted set if the last element was popped.

    BZPOPMIN key [key ...] timeout
    Removes and returns the member with the lowest score from one or more sorted sets. Blocks until
    a member is available otherwise. Deletes the sorted set if the last element was popped.
    """
    highest = _BZPOPS[argv[0].lower()]
    timeout_ms = parse_timeout_ms(argv[-1])

    def pop(key: bytes) -> list[Any]:
        member, score = pop_members(ctx, key, 1, highest)[0]
        return [key, member, Double(score)]

    return pop_or_block(ctx, argv[1:-1], timeout_ms, ZSET_POPS, pop)


@command("bzmpop", arity=-5, flags="write blocking", since="7.0.0",
         key_specs=(key_spec(2, "RW access delete", keynum=True, arg="key"),), acl="@blocking",
         complexity="O(K) + O(M*log(N)) where K is the number of provided keys, N being the number "
                    "of elements in the sorted set, and M being the number of elements popped.")
def bzmpop(ctx: Context, argv: list[bytes]) -> Any:
    """BZMPOP timeout numkeys key [key ...] (MIN|MAX) [COUNT count]
    Removes and returns a member by score from one or more sorted sets. Blocks until a member is
    available otherwise. Deletes the sorted set if the last element was popped.
    """
    return blocking_mpop(ctx, argv, ZSET_POPS)
