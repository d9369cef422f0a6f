"""Sorted set range reads: ZRANGE (BYSCORE BYLEX REV LIMIT WITHSCORES), ZRANGESTORE and the
older forms ZREVRANGE ZRANGEBYSCORE ZREVRANGEBYSCORE ZRANGEBYLEX ZREVRANGEBYLEX.

All of them are one function, as in Redis: the older forms fix the range type and the
direction, so their REV/BYSCORE/BYLEX words are syntax errors, and the options and the
range are checked before the key is looked at (Redis's order of errors).
"""

from __future__ import annotations

from typing import Any

from hotkv_server.commands.containers import read_zset, store_zset
from hotkv_server.commands.numbers import parse_lex_range, parse_score_range
from hotkv_server.commands.zsets import pairs_reply
from hotkv_server.engine import errors
from hotkv_server.engine.args import parse_int
from hotkv_server.engine.context import Context
from hotkv_server.engine.errors import CommandError
from hotkv_server.engine.registry import SpecFields, family, key_spec
from hotkv_server.stores.zsetvalue import WALK_OFFSET

command = family(group="sorted-set")

RANK, SCORE, LEX = "rank", "score", "lex"
LIMIT_NEEDS_RANGE = ("ERR syntax error, LIMIT is only supported in combination with either "
                     "BYSCORE or BYLEX")
WITHSCORES_LEX = "ERR syntax error, WITHSCORES not supported in combination with BYLEX"
_COMPLEXITY = ("O(log(N)+M) with N being the number of elements in the sorted set and M the "
               "number of elements returned.")


def _long(raw: bytes) -> int:
    value = parse_int(raw)
    if value is None:
        raise CommandError(errors.NOT_INTEGER)
    return value


def zrange_generic(ctx: Context, argv: list[bytes], first: int, kind: str | None,
                   reverse: bool | None, store: bytes | None = None) -> Any:
    """Redis's zrangeGenericCommand: the key at ``argv[first]``, the range after it, then
    options; ``kind``/``reverse`` None means the options may choose them (ZRANGE)."""
    withscores = False
    offset, limit = 0, -1
    i = first + 3
    while i < len(argv):
        opt = argv[i].upper()
        left = len(argv) - i - 1
        if opt == b"WITHSCORES" and store is None:
            withscores = True
        elif opt == b"LIMIT" and left >= 2:
            offset, limit = _long(argv[i + 1]), _long(argv[i + 2])
            i += 2
        elif opt == b"REV" and reverse is None:
            reverse = True
        elif opt == b"BYLEX" and kind is None:
            kind = LEX
        elif opt == b"BYSCORE" and kind is None:
            kind = SCORE
        else:
            raise CommandError(errors.SYNTAX)
        i += 1
    kind = kind or RANK
    reverse = bool(reverse)
    if limit != -1 and kind == RANK:
        raise CommandError(LIMIT_NEEDS_RANGE)
    if withscores and kind == LEX:
        raise CommandError(WITHSCORES_LEX)
    lo_raw, hi_raw = argv[first + 1], argv[first + 2]
    if reverse and kind != RANK:  # the range is given as max, min
        lo_raw, hi_raw = hi_raw, lo_raw
    if kind == RANK:
        start, stop = _long(lo_raw), _long(hi_raw)
    elif kind == SCORE:
        score_range = parse_score_range(lo_raw, hi_raw)
    else:
        lex_lo, lex_hi = parse_lex_range(lo_raw, hi_raw)
    zset = read_zset(ctx, argv[first])
    alone = not withscores and store is None  # the members alone: no pairs to build
    if zset is None:
        pairs: list[tuple[bytes, float]] = []
    elif kind == RANK:
        if alone:
            return zset.range_by_rank(start, stop, reverse, members=True)
        pairs = zset.range_by_rank(start, stop, reverse)
    elif kind == SCORE:
        if alone:
            return zset.range_by_score(score_range, reverse, offset, limit, members=True)
        pairs = zset.range_by_score(score_range, reverse, offset, limit)
    else:
        if alone:
            return zset.range_by_lex(lex_lo, lex_hi, reverse, offset, limit, members=True)
        pairs = zset.range_by_lex(lex_lo, lex_hi, reverse, offset, limit)
    if store is not None:
        flat: list[Any] = []
        for member, score in pairs:
            flat.append(member)
            flat.append(score)
        store_zset(ctx, store, flat)
        return len(pairs)
    return pairs_reply(ctx, pairs, withscores)


@command("zrange", arity=-4, flags="readonly", key="RO access", since="1.2.0",
         complexity=_COMPLEXITY)
def zrange(ctx: Context, argv: list[bytes]) -> Any:
    """ZRANGE key start stop [BYSCORE|BYLEX] [REV] [LIMIT offset count] [WITHSCORES]
    Returns members in a sorted set within a range of indexes.
    """
    return zrange_generic(ctx, argv, 1, None, None)


@command("zrangestore", arity=-5, flags="write denyoom", keys=(1, 2, 1),
         key_specs=(key_spec(1, "OW update", arg="dst"), key_spec(2, "RO access", arg="src")),
         since="6.2.0",
         complexity="O(log(N)+M) with N being the number of elements in the sorted set and M the "
                    "number of elements stored into the destination key.")
def zrangestore(ctx: Context, argv: list[bytes]) -> Any:
    """ZRANGESTORE dst src min max [BYSCORE|BYLEX] [REV] [LIMIT offset count]
    Stores a range of members from sorted set in a key.
    """
    return zrange_generic(ctx, argv, 2, None, None, store=argv[1])


_BY_SCORE_COMPLEXITY = ("O(log(N)+M) with N being the number of elements in the sorted set and M "
                        "the number of elements being returned. If M is constant (e.g. always "
                        "asking for the first 10 elements with LIMIT), you can consider it "
                        "O(log(N)).")
#: what the forms ZRANGE's options replaced share (each fixes the range type and direction)
_LEGACY = SpecFields(arity=-4, flags="readonly", key="RO access")


@command("zrangebyscore", _LEGACY, since="1.0.5", complexity=_BY_SCORE_COMPLEXITY)
def zrangebyscore(ctx: Context, argv: list[bytes]) -> Any:
    """ZRANGEBYSCORE key min max [WITHSCORES] [LIMIT offset count]
    Returns members in a sorted set within a range of scores.

    A benchmarked command: its own handler, so that it pays for no look-up by name.
    """
    return _by_score(ctx, argv, False)


#: the other forms by name: (the range type, reversed)
_LEGACY_FORMS = {b"zrevrange": (RANK, True), b"zrevrangebyscore": (SCORE, True),
                 b"zrangebylex": (LEX, False), b"zrevrangebylex": (LEX, True)}


# (stacked specs register bottom-up: ZREVRANGE first)
@command("zrevrangebylex", _LEGACY, since="2.8.9", complexity=_BY_SCORE_COMPLEXITY)
@command("zrangebylex", _LEGACY, since="2.8.9", complexity=_BY_SCORE_COMPLEXITY)
@command("zrevrangebyscore", _LEGACY, since="2.2.0", complexity=_BY_SCORE_COMPLEXITY)
@command("zrevrange", _LEGACY, since="1.2.0", complexity=_COMPLEXITY)
def zrange_legacy(ctx: Context, argv: list[bytes]) -> Any:
    """ZREVRANGEBYLEX key max min [LIMIT offset count]
    Returns members in a sorted set within a lexicographical range in reverse order.

    ZRANGEBYLEX key min max [LIMIT offset count]
    Returns members in a sorted set within a lexicographical range.

    ZREVRANGEBYSCORE key max min [WITHSCORES] [LIMIT offset count]
    Returns members in a sorted set within a range of scores in reverse order.

    ZREVRANGE key start stop [WITHSCORES]
    Returns members in a sorted set within a range of indexes in reverse order.
    """
    kind, reverse = _LEGACY_FORMS[argv[0].lower()]
    if kind is SCORE:
        return _by_score(ctx, argv, reverse)
    return zrange_generic(ctx, argv, 1, kind, reverse)


def _by_score(ctx: Context, argv: list[bytes], reverse: bool) -> Any:
    """The legacy score ranges; their usual forms (no option, or LIMIT alone) without
    ``zrange_generic``'s option loop, with its errors in its order (LIMIT's integers,
    then the range, then the key's type)."""
    n = len(argv)
    offset, limit = 0, -1
    if n == 7 and argv[4].upper() == b"LIMIT":
        first, count = parse_int(argv[5]), parse_int(argv[6])  # (_long's, without 2 calls)
        if first is None or count is None:
            raise CommandError(errors.NOT_INTEGER)
        offset, limit = first, count
    elif n != 4:
        return zrange_generic(ctx, argv, 1, SCORE, reverse)
    low = argv[2]
    if (not reverse and argv[3] == b"+inf" and low.isdigit() and len(low) < 16
            and 0 <= offset <= WALK_OFFSET and limit >= 0):
        # ``<digits> +inf LIMIT offset count``, the paging form: no range to parse (digits
        # read as strtod does, _range_end's first case; +inf cannot fail either)
        zset = read_zset(ctx, argv[1])
        return [] if zset is None else zset.members_from(float(low), offset, limit)
    score_range = (parse_score_range(argv[3], argv[2]) if reverse
                   else parse_score_range(argv[2], argv[3]))
    zset = read_zset(ctx, argv[1])
    if zset is None:
        return []
    return zset.range_by_score(score_range, reverse, offset, limit, members=True)
