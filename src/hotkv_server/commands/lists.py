"""List commands (LPUSH RPUSH LPUSHX RPUSHX LPOP RPOP LLEN LRANGE LINDEX LSET LINSERT LREM
LTRIM LPOS LMOVE RPOPLPUSH LMPOP), as Redis 7.0 answers them.

The value is ``stores.listvalue.ListValue`` in the keyspace (``commands.containers``); every
change is a list effect record (``KvLpush``, ``KvLpop`` ...; a new list is a ``KvPut``), so the
AOF and the replicas apply the same change. The blocking
forms are in ``commands.lists_blocking`` and reuse the pops defined here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hotkv_server.commands.containers import (
    list_if_any,
    pop_count,
    put_list,
    read_list,
    target_list,
)
from hotkv_server.engine import errors
from hotkv_server.engine.args import parse_int
from hotkv_server.engine.context import Context
from hotkv_server.engine.errors import CommandError
from hotkv_server.engine.registry import SpecFields, family, key_spec
from hotkv_server.engine.replies import NULL_ARRAY, OK
from hotkv_server.stores.list_effects import (
    KvLinsert,
    KvLmove,
    KvLpop,
    KvLpush,
    KvLrem,
    KvLset,
    KvLtrim,
    KvRpop,
    KvRpush,
)
from hotkv_server.stores.listvalue import ListValue

command = family(group="list")

NO_SUCH_KEY = "ERR no such key"
INDEX_RANGE = "ERR index out of range"
NUMKEYS_POSITIVE = "ERR numkeys should be greater than 0"
COUNT_POSITIVE = "ERR count should be greater than 0"
LONG_MAX = 2**63 - 1


def int_arg(raw: bytes) -> int:
    value = parse_int(raw)
    if value is None:
        raise CommandError(errors.NOT_INTEGER)
    return value


def side_arg(raw: bytes) -> bool:
    """LEFT -> True, RIGHT -> False (LMOVE, LMPOP), else a syntax error."""
    upper = raw.upper()
    if upper == b"LEFT":
        return True
    if upper == b"RIGHT":
        return False
    raise CommandError(errors.SYNTAX)


# --- pushes ---------------------------------------------------------------------------
def push_to(ctx: Context, key: bytes, values: list[bytes], left: bool, exists: bool) -> int:
    """Push onto ``key`` (a list when ``exists``, else absent: it is created); the length."""
    if exists:
        return int(ctx.emit(KvLpush(key, values) if left else KvRpush(key, values)))
    put_list(ctx, key, values[::-1] if left else values)
    return len(values)


def _push(ctx: Context, argv: list[bytes], left: bool, only_existing: bool) -> int:
    key = argv[1]
    if ctx.db.kv.typed(key, ctx.now_ms, ListValue) is not None:
        values = argv[2:]
        length: int = ctx.emit(KvLpush(key, values) if left else KvRpush(key, values))
        return length
    if only_existing:
        return 0
    values = argv[2:]
    put_list(ctx, key, values[::-1] if left else values)
    return len(values)


#: what the four pushes share
_PUSH = SpecFields(arity=-3, flags="write denyoom fast", key="RW insert",
                   complexity="O(1) for each element added, so O(N) to add N elements when the command is "
                              "called with multiple arguments.")


@command("lpush", _PUSH, since="1.0.0")
def lpush(ctx: Context, argv: list[bytes]) -> Any:
    """LPUSH key element [element ...]
    Prepends one or more elements to a list. Creates the key if it doesn't exist.

    A benchmarked command: its own handler, so that it pays for no look-up by name.
    """
    return _push(ctx, argv, True, False)


#: the other pushes by name: (onto the head, only onto an existing list)
_PUSHES = {b"rpush": (False, False), b"lpushx": (True, True), b"rpushx": (False, True)}


# (stacked specs register bottom-up: RPUSH, LPUSHX, RPUSHX, the order ACL CAT lists them in)
@command("rpushx", _PUSH, since="2.2.0")
@command("lpushx", _PUSH, since="2.2.0")
@command("rpush", _PUSH, since="1.0.0")
def push(ctx: Context, argv: list[bytes]) -> Any:
    """RPUSHX key element [element ...]
    Appends one or more elements to a list only when the list exists.

    LPUSHX key element [element ...]
    Prepends one or more elements to a list only when the list exists.

    RPUSH key element [element ...]
    Appends one or more elements to a list. Creates the key if it doesn't exist.
    """
    left, only_existing = _PUSHES[argv[0].lower()]
    return _push(ctx, argv, left, only_existing)


# --- pops -----------------------------------------------------------------------------
def pop_from(ctx: Context, key: bytes, left: bool, count: int) -> list[bytes]:
    """Pop up to ``count`` elements of an existing list (the key goes when it empties)."""
    return list(ctx.emit(KvLpop(key, count) if left else KvRpop(key, count)))


#: what LPOP and RPOP share
_POP = SpecFields(arity=-2, flags="write fast", key="RW access delete", since="1.0.0",
                  complexity="O(N) where N is the number of elements returned")
#: each pop by name: from the head
_POPS = {b"lpop": True, b"rpop": False}


# (stacked specs register bottom-up: LPOP first, as ACL CAT lists them)
@command("rpop", _POP)
@command("lpop", _POP)
def pop(ctx: Context, argv: list[bytes]) -> Any:
    """RPOP key [count]
    Returns and removes the last elements of a list. Deletes the list if the last element was
    popped.

    LPOP key [count]
    Returns the first elements in a list after removing it. Deletes the list if the last element was
    popped.
    """
    left = _POPS[argv[0].lower()]
    if len(argv) > 3:
        raise CommandError(errors.wrong_arity(argv[0].decode(errors="replace").lower()))
    count = pop_count(argv[2]) if len(argv) == 3 else None
    key = argv[1]
    lst = target_list(ctx, key)
    if lst is None:
        return None if count is None else NULL_ARRAY
    if count is None:
        return pop_from(ctx, key, left, 1)[0]
    if count == 0:
        return []
    return pop_from(ctx, key, left, count)


# --- reads ----------------------------------------------------------------------------
@command("llen", arity=2, flags="readonly fast", key="RO", since="1.0.0")
def llen(ctx: Context, argv: list[bytes]) -> Any:
    """LLEN key
    Returns the length of a list.
    """
    lst = read_list(ctx, argv[1])
    return 0 if lst is None else len(lst)


@command("lrange", arity=4, flags="readonly", key="RO access", since="1.0.0",
         complexity="O(S+N) where S is the distance of start offset from HEAD for small lists, from "
                    "nearest end (HEAD or TAIL) for large lists; and N is the number of elements in "
                    "the specified range.")
def lrange(ctx: Context, argv: list[bytes]) -> Any:
    """LRANGE key start stop
    Returns a range of elements from a list.
    """
    start, stop = int_arg(argv[2]), int_arg(argv[3])
    lst = read_list(ctx, argv[1])
    return [] if lst is None else lst.range(start, stop)


@command("lindex", arity=3, flags="readonly", key="RO access", since="1.0.0",
         complexity="O(N) where N is the number of elements to traverse to get to the element at "
                    "index. This makes asking for the first or the last element of the list O(1).")
def lindex(ctx: Context, argv: list[bytes]) -> Any:
    """LINDEX key index
    Returns an element from a list by its index.
    """
    lst = read_list(ctx, argv[1])  # the key before the index, as in Redis
    return None if lst is None else lst.index(int_arg(argv[2]))


@command("lpos", arity=-3, flags="readonly", key="RO access", since="6.0.6",
         complexity="O(N) where N is the number of elements in the list, for the average case. When "
                    "searching for elements near the head or the tail of the list, or when the MAXLEN "
                    "option is provided, the command may run in constant time.")
def lpos(ctx: Context, argv: list[bytes]) -> Any:
    """LPOS key element [RANK rank] [COUNT num-matches] [MAXLEN len]
    Returns the index of matching elements in a list.
    """
    rank, count, maxlen = 1, None, 0
    i = 3
    while i < len(argv):
        opt = argv[i].upper()
        if i + 1 >= len(argv) or opt not in (b"RANK", b"COUNT", b"MAXLEN"):
            raise CommandError(errors.SYNTAX)
        if opt == b"RANK":
            value = int_arg(argv[i + 1])
            if value == 0:
                raise CommandError(
                    "ERR RANK can't be zero: use 1 to start from the first match, 2 from the "
                    "second ... or use negative to start from the end of the list")
            # Redis 7.0's negation of LLONG_MIN overflows: it then ranks as the first from the tail
            rank = -1 if value < -LONG_MAX else value
        else:
            # Redis gives a non-integer COUNT or MAXLEN the "can't be negative" message too
            name = "COUNT" if opt == b"COUNT" else "MAXLEN"
            parsed = parse_int(argv[i + 1])
            if parsed is None or parsed < 0:
                raise CommandError(f"ERR {name} can't be negative")
            if opt == b"COUNT":
                count = parsed
            else:
                maxlen = parsed
        i += 2
    lst = read_list(ctx, argv[1])
    if lst is None:
        return None if count is None else []
    found = lst.positions(argv[2], rank, count, maxlen)
    if count is None:
        return found[0] if found else None
    return found


# --- changes in place -----------------------------------------------------------------
@command("lset", arity=4, flags="write denyoom", key="RW update", since="1.0.0",
         complexity="O(N) where N is the length of the list. Setting either the first or the last "
                    "element of the list is O(1).")
def lset(ctx: Context, argv: list[bytes]) -> Any:
    """LSET key index element
    Sets the value of an element in a list by its index.
    """
    key = argv[1]
    lst = target_list(ctx, key)  # the key before the index, as in Redis
    if lst is None:
        raise CommandError(NO_SUCH_KEY)
    index = int_arg(argv[2])
    n = len(lst)
    if not -n <= index < n:
        raise CommandError(INDEX_RANGE)
    ctx.emit(KvLset(key, index, argv[3]))
    return OK


@command("linsert", arity=5, flags="write denyoom", key="RW insert", since="2.2.0",
         complexity="O(N) where N is the number of elements to traverse before seeing the value "
                    "pivot. This means that inserting somewhere on the left end on the list (head) "
                    "can be considered O(1) and inserting somewhere on the right end (tail) is O(N).")
def linsert(ctx: Context, argv: list[bytes]) -> Any:
    """LINSERT key (BEFORE|AFTER) pivot element
    Inserts an element before or after another element in a list.
    """
    where = argv[2].upper()
    if where not in (b"BEFORE", b"AFTER"):
        raise CommandError(errors.SYNTAX)
    key = argv[1]
    lst = target_list(ctx, key)
    if lst is None:
        return 0
    if argv[3] not in lst.items:
        return -1
    return int(ctx.emit(KvLinsert(key, where == b"BEFORE", argv[3], argv[4])))


@command("lrem", arity=4, flags="write", key="RW delete", since="1.0.0",
         complexity="O(N+M) where N is the length of the list and M is the number of elements "
                    "removed.")
def lrem(ctx: Context, argv: list[bytes]) -> Any:
    """LREM key count element
    Removes elements from a list. Deletes the list if the last element was removed.
    """
    key = argv[1]
    count = int_arg(argv[2])
    lst = target_list(ctx, key)
    if lst is None or argv[3] not in lst.items:
        return 0
    return int(ctx.emit(KvLrem(key, count, argv[3])))


@command("ltrim", arity=4, flags="write", key="RW delete", since="1.0.0",
         complexity="O(N) where N is the number of elements to be removed by the operation.")
def ltrim(ctx: Context, argv: list[bytes]) -> Any:
    """LTRIM key start stop
    Removes elements from both ends a list. Deletes the list if all elements were trimmed.
    """
    key = argv[1]
    start, stop = int_arg(argv[2]), int_arg(argv[3])
    lst = target_list(ctx, key)
    if lst is None:
        return OK
    # written even when it keeps every element: Redis signals the key (WATCH) and
    # notifies "ltrim" whatever was dropped
    ctx.emit(KvLtrim(key, start, stop))
    return OK


# --- moves ----------------------------------------------------------------------------
def move(ctx: Context, src: bytes, dst: bytes, from_left: bool, to_left: bool) -> bytes | None:
    """LMOVE's work: None when ``src`` is missing; WRONGTYPE when either key is not a list."""
    lst = target_list(ctx, src)
    if lst is None:
        return None
    target = target_list(ctx, dst)  # the destination's type is checked before anything moves
    if src == dst:
        rotated: bytes = ctx.emit(KvLmove(src, from_left, to_left))
        return rotated
    # the push is written before the pop, as Redis notifies them (the destination's
    # lpush/rpush, then the source's lpop/rpop and its del when it empties)
    value = lst.items[0] if from_left else lst.items[-1]
    push_to(ctx, dst, [value], to_left, target is not None)
    pop_from(ctx, src, from_left, 1)
    return value


#: what LMOVE and RPOPLPUSH share
_MOVE = SpecFields(flags="write denyoom", keys=(1, 2, 1),
                   key_specs=(key_spec(1, "RW access delete", arg="source"), key_spec(2, "RW insert", arg="destination")),
                   complexity="O(1)")


@command("lmove", _MOVE, arity=5, since="6.2.0")
def lmove(ctx: Context, argv: list[bytes]) -> Any:
    """LMOVE source destination (LEFT|RIGHT) (LEFT|RIGHT)
    Returns an element after popping it from one list and pushing it to another. Deletes the list if
    the last element was moved.
    """
    from_left, to_left = side_arg(argv[3]), side_arg(argv[4])
    return move(ctx, argv[1], argv[2], from_left, to_left)


@command("rpoplpush", _MOVE, arity=3, since="1.2.0")
def rpoplpush(ctx: Context, argv: list[bytes]) -> Any:
    """RPOPLPUSH source destination
    Returns the last element of a list after removing and pushing it to another list. Deletes the
    list if the last element was popped.
    """
    return move(ctx, argv[1], argv[2], False, True)


def parse_mpop(argv: list[bytes], at: int, sides: tuple[bytes, bytes]) -> tuple[list[bytes], bytes, int]:
    """``numkeys key [key ...] <side> [COUNT count]`` from ``argv[at]``: keys, side, count."""
    numkeys = parse_int(argv[at])
    if numkeys is None or numkeys <= 0:
        raise CommandError(NUMKEYS_POSITIVE)
    if numkeys > len(argv) - at - 2:
        raise CommandError(errors.SYNTAX)
    keys = argv[at + 1 : at + 1 + numkeys]
    i = at + 1 + numkeys
    side = argv[i].upper()
    if side not in sides:
        raise CommandError(errors.SYNTAX)
    i += 1
    count = 1
    seen_count = False
    while i < len(argv):
        if argv[i].upper() != b"COUNT" or seen_count or i + 1 >= len(argv):
            raise CommandError(errors.SYNTAX)
        count_value = parse_int(argv[i + 1])
        if count_value is None or count_value <= 0:
            raise CommandError(COUNT_POSITIVE)
        count = count_value
        seen_count = True
        i += 2
    return keys, side, count


@dataclass(frozen=True, slots=True)
class Poppable:
    """What the pops of several keys (LMPOP, ZMPOP and the blocking pops) need of a type."""

    #: the two words of ``<side>``
    sides: tuple[bytes, bytes]
    #: the value at a key a write changes: None when missing, WRONGTYPE for another type
    target: Callable[[Context, bytes], object]
    #: the value at a key, None for another type too (a blocked client is not served from a
    #: key that became a string)
    holds: Callable[[Context, bytes], object]
    #: pop up to ``count`` from the ``side`` of the value at ``key``: ``[key, popped]``
    pop: Callable[[Context, bytes, bytes, int], list[Any]]


def pop_first(ctx: Context, keys: list[bytes], kind: Poppable,
              pop: Callable[[bytes], list[Any]]) -> list[Any] | None:
    """The pops of several keys: ``pop(key)`` of the first of ``keys`` holding a value of
    the type, else None."""
    for key in keys:
        if kind.target(ctx, key) is not None:
            return pop(key)
    return None


def mpop(ctx: Context, argv: list[bytes], kind: Poppable) -> Any:
    """LMPOP and ZMPOP: ``numkeys key [key ...] <side> [COUNT count]``."""
    keys, side, count = parse_mpop(argv, 1, kind.sides)
    found = pop_first(ctx, keys, kind, lambda key: kind.pop(ctx, key, side, count))
    return NULL_ARRAY if found is None else found


def _pop_for_mpop(ctx: Context, key: bytes, side: bytes, count: int) -> list[Any]:
    return [key, pop_from(ctx, key, side == b"LEFT", count)]


#: what LMPOP, BLMPOP, BLPOP and BRPOP need of a list
LIST_POPS = Poppable((b"LEFT", b"RIGHT"), target_list, list_if_any, _pop_for_mpop)


@command("lmpop", arity=-4, flags="write",
         key_specs=(key_spec(1, "RW access delete", keynum=True, arg="key"),), since="7.0.0",
         complexity="O(N+M) where N is the number of provided keys and M is the number of elements "
                    "returned.")
def lmpop(ctx: Context, argv: list[bytes]) -> Any:
    """LMPOP numkeys key [key ...] (LEFT|RIGHT) [COUNT count]
    Returns multiple elements from a list after removing them. Deletes the list if the last element
    was popped.
    """
    return mpop(ctx, argv, LIST_POPS)
