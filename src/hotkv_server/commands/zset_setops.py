"""Sorted set algebra: ZUNION ZUNIONSTORE ZINTER ZINTERSTORE ZINTERCARD ZDIFF ZDIFFSTORE.

Inputs may be sorted sets or plain sets (each member scoring 1, as Redis allows); any other
type is WRONGTYPE and a missing key an empty set. WEIGHTS multiply, AGGREGATE SUM|MIN|MAX
combines, and a NaN from ``inf * 0`` or ``inf + -inf`` counts as 0, as in Redis. Results
are ordered by (score, member); the STORE forms write the result with one ``kv.put`` (or
delete the destination when it is empty).
"""

from __future__ import annotations

import math
from typing import Any

from hotkv_server.commands.containers import store_zset
from hotkv_server.commands.numbers import score_or_none
from hotkv_server.commands.setalgebra import read_limit
from hotkv_server.commands.zsets import pairs_reply
from hotkv_server.engine import errors
from hotkv_server.engine.args import parse_int
from hotkv_server.engine.context import Context
from hotkv_server.engine.errors import CommandError, WrongTypeError
from hotkv_server.engine.registry import SpecFields, family, key_spec
from hotkv_server.stores.sets import SetValue
from hotkv_server.stores.zsetvalue import SortedSetValue

command = family(group="sorted-set")

WEIGHT_NOT_FLOAT = "ERR weight value is not a float"
UNION, INTER, DIFF = "union", "inter", "diff"


def input_scores(ctx: Context, key: bytes) -> dict[bytes, float] | None:
    """member -> score of one input (a set scores 1), None when the key is missing."""
    value = ctx.db.kv.lookup(key, ctx.now_ms)
    stats = ctx.core.stats
    if value is None:
        stats.keyspace_misses += 1
        return None
    if value.__class__ is SortedSetValue:
        stats.keyspace_hits += 1
        return value.scores
    if value.__class__ is SetValue:
        stats.keyspace_hits += 1
        return dict.fromkeys(value.members, 1.0)
    raise WrongTypeError()


def _no_nan(value: float) -> float:
    return 0.0 if math.isnan(value) else value


def read_inputs(ctx: Context, argv: list[bytes], at: int, name: str
                ) -> list[dict[bytes, float] | None]:
    """``numkeys key [key ...]`` at ``argv[at]``: each key's scores, every key type-checked
    before any option is parsed (so WRONGTYPE comes before a syntax error, as in Redis)."""
    numkeys = parse_int(argv[at])
    if numkeys is None:
        raise CommandError(errors.NOT_INTEGER)
    if numkeys < 1:
        raise CommandError(f"ERR at least 1 input key is needed for '{name}' command")
    if numkeys > len(argv) - at - 1:
        raise CommandError(errors.SYNTAX)
    return [input_scores(ctx, key) for key in argv[at + 1 : at + 1 + numkeys]]


def parse_inputs(ctx: Context, argv: list[bytes], at: int, name: str, op: str,
                 allow_withscores: bool
                 ) -> tuple[list[dict[bytes, float] | None], list[float], str, bool]:
    """``numkeys key [key ...] [WEIGHTS w ...] [AGGREGATE SUM|MIN|MAX] [WITHSCORES]``."""
    inputs = read_inputs(ctx, argv, at, name)
    numkeys = len(inputs)
    weights = [1.0] * numkeys
    aggregate = "sum"
    withscores = False
    i = at + 1 + numkeys
    while i < len(argv):
        opt = argv[i].upper()
        left = len(argv) - i - 1
        if op != DIFF and opt == b"WEIGHTS" and left >= numkeys:
            for j in range(numkeys):
                weight = score_or_none(argv[i + 1 + j])
                if weight is None:
                    raise CommandError(WEIGHT_NOT_FLOAT)
                weights[j] = weight
            i += numkeys
        elif op != DIFF and opt == b"AGGREGATE" and left >= 1:
            choice = argv[i + 1].upper()
            if choice not in (b"SUM", b"MIN", b"MAX"):
                raise CommandError(errors.SYNTAX)
            aggregate = choice.decode().lower()
            i += 1
        elif allow_withscores and opt == b"WITHSCORES":
            withscores = True
        else:
            raise CommandError(errors.SYNTAX)
        i += 1
    return inputs, weights, aggregate, withscores


def combine(op: str, inputs: list[dict[bytes, float] | None], weights: list[float],
            aggregate: str) -> list[tuple[bytes, float]]:
    """The result of the operation, ordered by (score, member).

    As in Redis, ZUNION and ZINTER take their inputs smallest first (the order matters to a
    SUM that meets ``inf`` and ``-inf``); a weighted score that is NaN counts as 0, except
    a later input's in ZINTER, which only its aggregate (a NaN sum is 0, MIN and MAX keep
    the score so far) decides. A ``-0`` score stays ``-0``."""
    result: dict[bytes, float] = {}
    if op == DIFF:
        first = inputs[0]
        if first:
            others = [s for s in inputs[1:] if s]
            result = {m: sc for m, sc in first.items() if not any(m in o for o in others)}
        return _ordered(result)
    order = sorted(range(len(inputs)), key=lambda j: len(inputs[j] or ()))
    if op == UNION:
        for j in order:
            for member, score in (inputs[j] or {}).items():
                value = _no_nan(score * weights[j])
                old = result.get(member)
                result[member] = value if old is None else _aggregate(old, value, aggregate)
        return _ordered(result)
    base, rest = order[0], order[1:]
    for member, score in (inputs[base] or {}).items():
        total = _no_nan(score * weights[base])
        for j in rest:
            found = (inputs[j] or {}).get(member)
            if found is None:
                break
            total = _aggregate(total, found * weights[j], aggregate)
        else:
            result[member] = total
    return _ordered(result)


def _ordered(result: dict[bytes, float]) -> list[tuple[bytes, float]]:
    return [(m, s) for s, m in sorted((s, m) for m, s in result.items())]


def _aggregate(a: float, b: float, how: str) -> float:
    if how == "sum":
        return _no_nan(a + b)
    # Redis's comparisons: a NaN ``b`` keeps ``a``
    if how == "min":
        return b if b < a else a
    return b if b > a else a


_UNION_COMPLEXITY = ("O(N)+O(M*log(M)) with N being the sum of the sizes of the input sorted "
                     "sets, and M being the number of elements in the resulting sorted set.")
_INTER_COMPLEXITY = ("O(N*K)+O(M*log(M)) worst case with N being the smallest input sorted set, "
                     "K being the number of input sorted sets and M being the number of elements "
                     "in the resulting sorted set.")
_DIFF_COMPLEXITY = ("O(L + (N-K)log(N)) worst case where L is the total number of elements in all "
                    "the sets, N is the size of the first set, and K is the size of the result "
                    "set.")


#: what ZUNION, ZINTER and ZDIFF share
_READ_OP = SpecFields(arity=-3, flags="readonly",
                      key_specs=(key_spec(1, "RO access", keynum=True, arg="key"),), since="6.2.0")


#: each command's operation
_OPERATIONS = {"zunion": UNION, "zinter": INTER, "zdiff": DIFF,
               "zunionstore": UNION, "zinterstore": INTER, "zdiffstore": DIFF}


@command("zunion", _READ_OP, complexity=_UNION_COMPLEXITY)
@command("zinter", _READ_OP, complexity=_INTER_COMPLEXITY)
@command("zdiff", _READ_OP, complexity=_DIFF_COMPLEXITY)
def zset_operation(ctx: Context, argv: list[bytes]) -> Any:
    """ZUNION numkeys key [key ...] [WEIGHTS weight [weight ...]] [AGGREGATE SUM|MIN|MAX] [WITHSCORES]
    Returns the union of multiple sorted sets.

    ZINTER numkeys key [key ...] [WEIGHTS weight [weight ...]] [AGGREGATE SUM|MIN|MAX] [WITHSCORES]
    Returns the intersect of multiple sorted sets.

    ZDIFF numkeys key [key ...] [WITHSCORES]
    Returns the difference between multiple sorted sets.
    """
    name = argv[0].decode().lower()
    op = _OPERATIONS[name]
    inputs, weights, aggregate, withscores = parse_inputs(ctx, argv, 1, name, op, True)
    return pairs_reply(ctx, combine(op, inputs, weights, aggregate), withscores)


#: what ZUNIONSTORE, ZINTERSTORE and ZDIFFSTORE share
_STORE_OP = SpecFields(arity=-4, flags="write denyoom", keys=(1, 1, 1),
                       key_specs=(key_spec(1, "OW update", arg="destination"),
                                  key_spec(2, "RO access", keynum=True, arg="key")))


@command("zunionstore", _STORE_OP, since="2.0.0", complexity=_UNION_COMPLEXITY)
@command("zinterstore", _STORE_OP, since="2.0.0", complexity=_INTER_COMPLEXITY)
@command("zdiffstore", _STORE_OP, since="6.2.0", complexity=_DIFF_COMPLEXITY)
def zset_operation_store(ctx: Context, argv: list[bytes]) -> Any:
    """ZUNIONSTORE destination numkeys key [key ...] [WEIGHTS weight [weight ...]] [AGGREGATE
        SUM|MIN|MAX]
    Stores the union of multiple sorted sets in a key.

    ZINTERSTORE destination numkeys key [key ...] [WEIGHTS weight [weight ...]] [AGGREGATE
        SUM|MIN|MAX]
    Stores the intersect of multiple sorted sets in a key.

    ZDIFFSTORE destination numkeys key [key ...]
    Stores the difference of multiple sorted sets in a key.
    """
    name = argv[0].decode().lower()
    op = _OPERATIONS[name]
    inputs, weights, aggregate, _ = parse_inputs(ctx, argv, 2, name, op, False)
    # a stored -0 reads back as 0 from a small set (Redis's listpack), -0 from a big one
    pairs = combine(op, inputs, weights, aggregate)
    store_zset(ctx, argv[1], [item for pair in pairs for item in pair])
    return len(pairs)


@command("zintercard", arity=-3, flags="readonly",
         key_specs=(key_spec(1, "RO access", keynum=True, arg="key"),), since="7.0.0",
         complexity="O(N*K) worst case with N being the smallest input sorted set, K being the "
                    "number of input sorted sets.")
def zintercard(ctx: Context, argv: list[bytes]) -> Any:
    """ZINTERCARD numkeys key [key ...] [LIMIT limit]
    Returns the number of members of the intersect of multiple sorted sets.
    """
    inputs = read_inputs(ctx, argv, 1, "zintercard")
    limit = read_limit(argv, 2 + len(inputs))
    if not all(inputs):
        return 0
    ordered = sorted((s for s in inputs if s is not None), key=len)
    count = 0
    for member in ordered[0]:
        if all(member in other for other in ordered[1:]):
            count += 1
            if limit and count >= limit:
                break
    return count
