"""The blocking list commands: BLPOP BRPOP BLMOVE BRPOPLPUSH BLMPOP (engine/blocking.py).

Each first tries its non-blocking form (LPOP, LMOVE, LMPOP ...) on the keys in order; with
nothing to pop it blocks, unless it runs inside MULTI/EXEC (or a script), where it answers
as the timeout would, as Redis does. A served waiter pops through the same list effects as
LPOP, so the AOF and the replicas never see the blocking command.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hotkv_server.commands.containers import list_if_any
from hotkv_server.commands.lists import (
    LIST_POPS,
    Poppable,
    move,
    parse_mpop,
    pop_first,
    pop_from,
    side_arg,
)
from hotkv_server.commands.numbers import parse_timeout_ms
from hotkv_server.engine.context import Context
from hotkv_server.engine.registry import SpecFields, family, key_spec
from hotkv_server.engine.replies import NULL_ARRAY

command = family(group="list")


def cannot_block(ctx: Context) -> bool:
    """Inside EXEC or a script (whose writes are grouped as an EXEC's) a blocking command
    answers at once, as its timeout would."""
    return ctx.core.effects.grouped


def pop_or_block(ctx: Context, keys: list[bytes], timeout_ms: int, kind: Poppable,
                 pop: Callable[[bytes], list[Any]]) -> Any:
    """The blocking pops: ``pop(key)`` of the first of ``keys`` that holds a value of the type
    (``kind.target``); with none, wait until a write makes one of them hold one
    (``kind.holds``) and answer ``pop(key)`` of it; inside EXEC a null array at once."""
    found = pop_first(ctx, keys, kind, pop)
    if found is not None:
        return found
    if cannot_block(ctx):
        return NULL_ARRAY

    def serve(key: bytes) -> tuple[Any, list[bytes]] | None:
        if kind.holds(ctx, key) is None:
            return None
        return pop(key), [key]

    return ctx.core.blocking.block(ctx, keys, timeout_ms, serve, NULL_ARRAY)


def blocking_mpop(ctx: Context, argv: list[bytes], kind: Poppable) -> Any:
    """BLMPOP and BZMPOP: ``timeout numkeys key [key ...] <side> [COUNT count]``."""
    timeout_ms = parse_timeout_ms(argv[1])
    keys, side, count = parse_mpop(argv, 2, kind.sides)
    return pop_or_block(ctx, keys, timeout_ms, kind, lambda key: kind.pop(ctx, key, side, count))


#: what the blocking pops of one element (BLPOP BRPOP BZPOPMIN BZPOPMAX) share
BLOCKING_POP = SpecFields(arity=-3, keys=(1, -2, 1), key_flags="RW access delete", acl="@blocking")
#: and BLPOP and BRPOP
_BPOP = SpecFields(flags="write noscript blocking", since="2.0.0",
                   complexity="O(N) where N is the number of provided keys.")
#: each by name: from the head
_BPOPS = {b"blpop": True, b"brpop": False}


# (stacked specs register bottom-up: BLPOP first, as ACL CAT lists them)
@command("brpop", BLOCKING_POP, _BPOP)
@command("blpop", BLOCKING_POP, _BPOP)
def blocking_pop(ctx: Context, argv: list[bytes]) -> Any:
    """BRPOP key [key ...] timeout
    Removes and returns the last element in a list. Blocks until an element is available otherwise.
    Deletes the list if the last element was popped.

    BLPOP key [key ...] timeout
    Removes and returns the first element in a list. Blocks until an element is available otherwise.
    Deletes the list if the last element was popped.
    """
    left = _BPOPS[argv[0].lower()]
    timeout_ms = parse_timeout_ms(argv[-1])

    def pop(key: bytes) -> list[bytes]:
        return [key, pop_from(ctx, key, left, 1)[0]]

    return pop_or_block(ctx, argv[1:-1], timeout_ms, LIST_POPS, pop)


def _blocking_move(ctx: Context, src: bytes, dst: bytes, from_left: bool, to_left: bool,
                   raw_timeout: bytes) -> Any:
    timeout_ms = parse_timeout_ms(raw_timeout)
    moved = move(ctx, src, dst, from_left, to_left)
    if moved is not None or cannot_block(ctx):
        return moved

    def serve(key: bytes) -> tuple[Any, list[bytes]] | None:
        if list_if_any(ctx, src) is None:
            return None
        value = move(ctx, src, dst, from_left, to_left)
        return None if value is None else (value, [src, dst])

    return ctx.core.blocking.block(ctx, [src], timeout_ms, serve, NULL_ARRAY)  # (Redis: a null array)


#: what BLMOVE and BRPOPLPUSH share
_BMOVE = SpecFields(flags="write denyoom noscript blocking", keys=(1, 2, 1),
                    key_specs=(key_spec(1, "RW access delete", arg="source"), key_spec(2, "RW insert", arg="destination")),
                    acl="@blocking", complexity="O(1)")


@command("blmove", _BMOVE, arity=6, since="6.2.0")
def blmove(ctx: Context, argv: list[bytes]) -> Any:
    """BLMOVE source destination (LEFT|RIGHT) (LEFT|RIGHT) timeout
    Pops an element from a list, pushes it to another list and returns it. Blocks until an element
    is available otherwise. Deletes the list if the last element was moved.
    """
    from_left, to_left = side_arg(argv[3]), side_arg(argv[4])
    return _blocking_move(ctx, argv[1], argv[2], from_left, to_left, argv[5])


@command("brpoplpush", _BMOVE, arity=4, since="2.2.0")
def brpoplpush(ctx: Context, argv: list[bytes]) -> Any:
    """BRPOPLPUSH source destination timeout
    Pops an element from a list, pushes it to another list and returns it. Block until an element is
    available otherwise. Deletes the list if the last element was popped.
    """
    return _blocking_move(ctx, argv[1], argv[2], False, True, argv[3])


@command("blmpop", arity=-5, flags="write blocking", since="7.0.0",
         key_specs=(key_spec(2, "RW access delete", keynum=True, arg="key"),), acl="@blocking",
         complexity="O(N+M) where N is the number of provided keys and M is the number of elements "
                    "returned.")
def blmpop(ctx: Context, argv: list[bytes]) -> Any:
    """BLMPOP timeout numkeys key [key ...] (LEFT|RIGHT) [COUNT count]
    Pops the first element from one of multiple lists. Blocks until an element is available
    otherwise. Deletes the list if the last element was popped.
    """
    return blocking_mpop(ctx, argv, LIST_POPS)
