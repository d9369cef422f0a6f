"""The set commands of Redis 7.0: SADD SREM SMEMBERS SISMEMBER SMISMEMBER SCARD SPOP
SRANDMEMBER SMOVE SSCAN (the algebra, SINTER SUNION SDIFF and their STORE and CARD forms,
is in commands/setalgebra.py).

Replies and errors are Redis's. Writes are effects (``stores/sets.py``): ``kv.put`` of the
new set when the key was absent, else ``kv.sadd`` / ``kv.srem``. SPOP draws its members
here and the effect names them, so replay removes exactly those.
"""

from __future__ import annotations

import random
from typing import Any

from hotkv_server.commands.containers import pop_count
from hotkv_server.commands.hashes import (
    check_repeats,
    pick,
    random_count,
    remove_present,
    scan_step,
)
from hotkv_server.commands.scanning import ELEMENT_SCAN
from hotkv_server.commands.typed import read, target
from hotkv_server.engine import errors
from hotkv_server.engine.context import Context
from hotkv_server.engine.errors import CommandError, WrongTypeError
from hotkv_server.engine.registry import family, key_spec
from hotkv_server.stores.keyspace_effects import KvPut
from hotkv_server.stores.sets import SetValue
from hotkv_server.stores.sets_effects import KvSadd, KvSrem

command = family(group="set")

def add_members(ctx: Context, key: bytes, found: SetValue | None, members: list[bytes]) -> int:
    """Add ``members`` to the set at ``key`` (``found``, None for a new set); returns how
    many were new."""
    if found is None:
        distinct = list(dict.fromkeys(members))
        ctx.emit(KvPut(key, "set", distinct, None))
        return len(distinct)
    index = found.index
    new = [member for member in dict.fromkeys(members) if member not in index]
    if not new:
        return 0
    added: int = ctx.emit(KvSadd(key, new))
    return added


@command("sadd", arity=-3, flags="write denyoom fast", key="RW insert",
         complexity="O(1) for each element added, so O(N) to add N elements when the command "
                    "is called with multiple arguments.")
def sadd(ctx: Context, argv: list[bytes]) -> Any:
    """SADD key member [member ...]
    Adds one or more members to a set. Creates the key if it doesn't exist.
    """
    key = argv[1]
    found = ctx.db.kv.typed(key, ctx.now_ms, SetValue)
    if found is not None and len(argv) == 3:  # one member to an existing set: the hot path
        if argv[2] in found.index:
            return 0
        added: int = ctx.emit(KvSadd(key, [argv[2]]))
        return added
    return add_members(ctx, key, found, argv[2:])


@command("srem", arity=-3, flags="write fast", key="RW delete",
         complexity="O(N) where N is the number of members to be removed.")
def srem(ctx: Context, argv: list[bytes]) -> Any:
    """SREM key member [member ...]
    Removes one or more members from a set. Deletes the set if the last member was removed.
    """
    found = target(ctx, argv[1], SetValue)
    return 0 if found is None else remove_present(ctx, argv, found.index, KvSrem)


@command("smembers", arity=2, flags="readonly", key="RO access",
         tips="nondeterministic_output_order", complexity="O(N) where N is the set cardinality.")
def smembers(ctx: Context, argv: list[bytes]) -> Any:
    """SMEMBERS key
    Returns all members of a set.
    """
    found = read(ctx, argv[1], SetValue)
    return set() if found is None else set(found.members)


@command("sismember", arity=3, flags="readonly fast", key="RO")
def sismember(ctx: Context, argv: list[bytes]) -> Any:
    """SISMEMBER key member
    Determines whether a member belongs to a set.
    """
    found = read(ctx, argv[1], SetValue)
    return int(found is not None and argv[2] in found.index)


@command("smismember", arity=-3, flags="readonly fast", key="RO access",
         complexity="O(N) where N is the number of elements being checked for membership")
def smismember(ctx: Context, argv: list[bytes]) -> Any:
    """SMISMEMBER key member [member ...]
    Determines whether multiple members belong to a set.
    """
    found = read(ctx, argv[1], SetValue)
    if found is None:
        return [0] * (len(argv) - 2)
    index = found.index
    return [int(member in index) for member in argv[2:]]


@command("scard", arity=2, flags="readonly fast", key="RO")
def scard(ctx: Context, argv: list[bytes]) -> Any:
    """SCARD key
    Returns the number of members in a set.
    """
    found = read(ctx, argv[1], SetValue)
    return 0 if found is None else len(found)


@command("spop", arity=-2, flags="write fast", key="RW access delete",
         tips="nondeterministic_output",
         complexity="Without the count argument O(1), otherwise O(N) where N is the value "
                    "of the passed count.")
def spop(ctx: Context, argv: list[bytes]) -> Any:
    """SPOP key [count]
    Returns one or more random members from a set after removing them. Deletes the set if the last
    member was popped.
    """
    if len(argv) > 3:
        raise CommandError(errors.SYNTAX)
    key = argv[1]
    if len(argv) == 2:
        found = target(ctx, key, SetValue)
        if found is None:
            return None
        member = found.members[random.randrange(len(found))]
        ctx.emit(KvSrem(key, [member]))
        return member
    count = pop_count(argv[2])
    found = target(ctx, key, SetValue)
    if found is None or count == 0:
        return set()
    members = found.members
    chosen = list(members) if count >= len(members) else random.sample(members, count)
    ctx.emit(KvSrem(key, chosen))
    return set(chosen)


@command("srandmember", arity=-2, flags="readonly", key="RO access", tips="nondeterministic_output",
         complexity="Without the count argument O(1), otherwise O(N) where N is the absolute "
                    "value of the passed count.")
def srandmember(ctx: Context, argv: list[bytes]) -> Any:
    """SRANDMEMBER key [count]
    Get one or multiple random members from a set
    """
    if len(argv) > 3:
        raise CommandError(errors.SYNTAX)
    if len(argv) == 2:
        found = read(ctx, argv[1], SetValue)
        if found is None:
            return None
        return found.members[random.randrange(len(found))]
    count = random_count(argv[2])
    found = read(ctx, argv[1], SetValue)
    if found is None or count == 0:
        return []
    members = found.members
    check_repeats(count)
    if count < 0:
        return random.choices(members, k=-count)
    return pick(list(members), count)


@command("smove", arity=4, flags="write fast", keys=(1, 2, 1),
         key_specs=(key_spec(1, "RW access delete", arg="source"),
                   key_spec(2, "RW insert", arg="destination")))
def smove(ctx: Context, argv: list[bytes]) -> Any:
    """SMOVE source destination member
    Moves a member from one set to another.
    """
    src_key, dst_key, member = argv[1], argv[2], argv[3]
    kv = ctx.db.kv
    # both looked up before either type is checked: a missing source answers 0 whatever
    # the destination holds, as in Redis
    src = kv.lookup(src_key, ctx.now_ms)
    dst = kv.lookup(dst_key, ctx.now_ms)
    if src is None:
        return 0
    if not isinstance(src, SetValue) or (dst is not None and not isinstance(dst, SetValue)):
        raise WrongTypeError()
    if src_key == dst_key:
        return int(member in src.index)
    if member not in src.index:
        return 0
    ctx.emit(KvSrem(src_key, [member]))
    if dst is None:
        ctx.emit(KvPut(dst_key, "set", [member], None))
    elif member not in dst.index:
        ctx.emit(KvSadd(dst_key, [member]))
    return 1


@command("sscan", ELEMENT_SCAN)
def sscan(ctx: Context, argv: list[bytes]) -> Any:
    """SSCAN key cursor [MATCH pattern] [COUNT count]
    Iterates over members of a set.
    """
    step = scan_step(ctx, argv, SetValue)
    return [b"0", []] if step is None else list(step[:2])
