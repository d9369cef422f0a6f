"""Set algebra, as Redis 7.0 answers it: SINTER SINTERCARD SINTERSTORE SUNION SUNIONSTORE
SDIFF SDIFFSTORE.

Every key named is looked up and type-checked first (a key of another type is WRONGTYPE
even after a missing one); a missing key is an empty set. A STORE form replaces the
destination whatever it held with one ``kv.put`` of the result, or deletes it when the
result is empty (``kv.del``), so replay writes exactly that set.
"""

from __future__ import annotations

from collections.abc import KeysView
from typing import Any

from hotkv_server.commands.containers import store
from hotkv_server.engine import errors
from hotkv_server.engine.args import parse_int
from hotkv_server.engine.context import Context
from hotkv_server.engine.errors import CommandError, WrongTypeError
from hotkv_server.engine.registry import SpecFields, family, key_spec
from hotkv_server.stores.sets import SetValue

command = family(group="set")

NUMKEYS_POSITIVE = "ERR numkeys should be greater than 0"
TOO_MANY_KEYS = "ERR Number of keys can't be greater than number of args"
LIMIT_NEGATIVE = "ERR LIMIT can't be negative"
_COMPLEXITY_INTER = ("O(N*M) worst case where N is the cardinality of the smallest set and M "
                     "is the number of sets.")
_COMPLEXITY_SUM = "O(N) where N is the total number of elements in all given sets."


def _sets(ctx: Context, keys: list[bytes]) -> list[KeysView[bytes] | None]:
    """The members of each key (None for a missing one), every type checked first."""
    kv = ctx.db.kv
    now = ctx.now_ms
    stats = ctx.core.stats
    out: list[KeysView[bytes] | None] = []
    for key in keys:
        value = kv.lookup(key, now)
        if value is None:
            stats.keyspace_misses += 1
            out.append(None)
        elif isinstance(value, SetValue):
            stats.keyspace_hits += 1
            out.append(value.index.keys())
        else:
            raise WrongTypeError()
    return out


def _inter(sets: list[KeysView[bytes] | None], limit: int = 0) -> set[bytes]:
    if any(s is None for s in sets):
        return set()
    ordered = sorted(sets, key=len)  # type: ignore[arg-type]
    smallest, others = ordered[0], ordered[1:]
    assert smallest is not None
    result: set[bytes] = set()
    for member in smallest:
        if all(member in other for other in others):  # type: ignore[operator]
            result.add(member)
            if limit and len(result) >= limit:
                break
    return result


def _union(sets: list[KeysView[bytes] | None]) -> set[bytes]:
    result: set[bytes] = set()
    for members in sets:
        if members is not None:
            result.update(members)
    return result


def _diff(sets: list[KeysView[bytes] | None]) -> set[bytes]:
    first = sets[0]
    if first is None:
        return set()
    result = set(first)
    for members in sets[1:]:
        if members is not None:
            result.difference_update(members)
        if not result:
            break
    return result


def read_limit(argv: list[bytes], start: int) -> int:
    """SINTERCARD's and ZINTERCARD's ``[LIMIT limit]`` from ``argv[start:]`` (0: no limit)."""
    limit = 0
    i = start
    while i < len(argv):
        if argv[i].upper() == b"LIMIT" and i + 1 < len(argv):
            value = parse_int(argv[i + 1])
            if value is None or value < 0:
                raise CommandError(LIMIT_NEGATIVE)
            limit = value
            i += 2
        else:
            raise CommandError(errors.SYNTAX)
    return limit


#: each command's operation on the sets of its keys
_OPERATIONS = {b"sinter": _inter, b"sunion": _union, b"sdiff": _diff,
               b"sinterstore": _inter, b"sunionstore": _union, b"sdiffstore": _diff}
#: what SINTER, SUNION and SDIFF share, and the *STORE forms
_READ = SpecFields(arity=-2, flags="readonly", keys=(1, -1, 1), key_flags="RO access",
                   tips="nondeterministic_output_order")
_STORE = SpecFields(arity=-3, flags="write denyoom", keys=(1, -1, 1),
                    key_specs=(key_spec(1, "OW update", arg="destination"),
                               key_spec(2, "RO access", lastkey=-1, arg="key")))


@command("sinter", _READ, complexity=_COMPLEXITY_INTER)
@command("sunion", _READ, complexity=_COMPLEXITY_SUM)
@command("sdiff", _READ, complexity=_COMPLEXITY_SUM)
def set_operation(ctx: Context, argv: list[bytes]) -> Any:
    """SINTER key [key ...]
    Returns the intersect of multiple sets.

    SUNION key [key ...]
    Returns the union of multiple sets.

    SDIFF key [key ...]
    Returns the difference of multiple sets.
    """
    return _OPERATIONS[argv[0].lower()](_sets(ctx, argv[1:]))


@command("sinterstore", _STORE,
         key_specs=(key_spec(1, "RW update", arg="destination"),
                   key_spec(2, "RO access", lastkey=-1, arg="key")),
         complexity=_COMPLEXITY_INTER)
@command("sunionstore", _STORE, complexity=_COMPLEXITY_SUM)
@command("sdiffstore", _STORE, complexity=_COMPLEXITY_SUM)
def set_operation_store(ctx: Context, argv: list[bytes]) -> Any:
    """SINTERSTORE destination key [key ...]
    Stores the intersect of multiple sets in a key.

    SUNIONSTORE destination key [key ...]
    Stores the union of multiple sets in a key.

    SDIFFSTORE destination key [key ...]
    Stores the difference of multiple sets in a key.
    """
    result = _OPERATIONS[argv[0].lower()](_sets(ctx, argv[2:]))
    store(ctx, argv[1], "set", list(result))
    return len(result)


@command("sintercard", arity=-3, flags="readonly",
         key_specs=(key_spec(1, "RO access", keynum=True, arg="key"),),
         complexity=_COMPLEXITY_INTER)
def sintercard(ctx: Context, argv: list[bytes]) -> Any:
    """SINTERCARD numkeys key [key ...] [LIMIT limit]
    Returns the number of members of the intersect of multiple sets.
    """
    numkeys = parse_int(argv[1])
    if numkeys is None or numkeys <= 0:
        raise CommandError(NUMKEYS_POSITIVE)
    if numkeys > len(argv) - 2:
        raise CommandError(TOO_MANY_KEYS)
    limit = read_limit(argv, 2 + numkeys)
    return len(_inter(_sets(ctx, argv[2 : 2 + numkeys]), limit))
