"""Sorted set commands on single keys: ZADD ZINCRBY ZREM ZCARD ZSCORE ZMSCORE ZRANK ZREVRANK
ZCOUNT ZLEXCOUNT ZPOPMIN ZPOPMAX ZMPOP ZREMRANGEBYRANK ZREMRANGEBYSCORE ZREMRANGEBYLEX
ZRANDMEMBER ZSCAN, as Redis 7.0 answers them (ZRANK/ZREVRANK also take 7.2's WITHSCORE).

The value is ``stores.zsetvalue.SortedSetValue``. A write's effect carries what it decided
(ZADD's resulting scores, never its NX/XX/GT/LT/INCR options), so replay re-decides nothing.
Scores are replied as ``Double``: ``%.17g`` as Redis 7.0 prints them. The range commands are
in ``commands.zset_ranges``, the multi-key ones in ``commands.zset_setops``.
"""

from __future__ import annotations

import math
import random
from typing import Any

from hotkv_server.commands.containers import (
    pop_count,
    put_zset,
    read_zset,
    target_zset,
    zset_if_any,
)
from hotkv_server.commands.glob import glob_match
from hotkv_server.commands.hashes import check_repeats
from hotkv_server.commands.lists import Poppable, int_arg, mpop
from hotkv_server.commands.numbers import parse_lex_range, parse_score, parse_score_range
from hotkv_server.commands.scanning import ELEMENT_SCAN, scan_options
from hotkv_server.engine import errors
from hotkv_server.engine.context import Context
from hotkv_server.engine.doubles import format_double
from hotkv_server.engine.errors import CommandError
from hotkv_server.engine.registry import SpecFields, family, key_spec
from hotkv_server.engine.replies import NULL_ARRAY, Double
from hotkv_server.stores.effect import Effect
from hotkv_server.stores.zset_effects import (
    KvZadd,
    KvZpop,
    KvZrem,
    KvZremrangebylex,
    KvZremrangebyrank,
    KvZremrangebyscore,
)
from hotkv_server.stores.zsetvalue import SortedSetValue

command = family(group="sorted-set")

NAN_RESULT = "ERR resulting score is not a number (NaN)"
LONG_MAX = 2**63 - 1


def score_reply(ctx: Context, score: float) -> Any:
    """A score as Redis 7.0 replies it: a RESP3 double, or in RESP2 the bulk string of its
    ``%.17g`` text, made here (as ZSCAN does) so that the reply is plain bytes: the
    encoder's fast path, and a script's ``redis.call`` gets Redis's text too."""
    return Double(score) if ctx.proto == 3 else format_double(score)


def pairs_reply(ctx: Context, pairs: list[tuple[bytes, float]], withscores: bool = True) -> list[Any]:
    """Members with scores as Redis replies them: flat in RESP2 (the scores' text made here,
    see ``score_reply``: an array of bytes alone), [member, score] pairs in RESP3."""
    if not withscores:
        return [m for m, _ in pairs]
    if ctx.proto == 3:
        return [[m, Double(s)] for m, s in pairs]
    out: list[Any] = []
    for m, s in pairs:
        out.append(m)
        out.append(format_double(s))
    return out


# --- ZADD / ZINCRBY -------------------------------------------------------------------
_NX, _XX, _GT, _LT, _CH, _INCR = 1, 2, 4, 8, 16, 32
_ZADD_FLAGS = {b"NX": _NX, b"XX": _XX, b"GT": _GT, b"LT": _LT, b"CH": _CH, b"INCR": _INCR}


def zadd_apply(ctx: Context, key: bytes, flags: int, pairs: list[tuple[float, bytes]]) -> Any:
    """Decide ZADD's outcome on the current value and emit the resulting scores."""
    zset = target_zset(ctx, key)
    if zset is None and flags & _XX:
        return None if flags & _INCR else 0
    current = zset.scores if zset is not None else {}
    changes: dict[bytes, float] = {}
    added = updated = 0
    result: Any = None
    for score, member in pairs:
        old = changes.get(member, current.get(member))
        if old is not None:
            if flags & _NX:
                continue
            new = old + score if flags & _INCR else score
            if math.isnan(new):
                raise CommandError(NAN_RESULT)
            if (flags & _GT and new <= old) or (flags & _LT and new >= old):
                continue
            result = new
            if new != old:
                changes[member] = new
                updated += 1
        else:
            if flags & _XX:
                continue
            changes[member] = score
            added += 1
            result = score
    if changes:
        flat: list[Any] = []
        for member, score in changes.items():
            flat.append(member)
            flat.append(score)  # (-0 stays -0 in a big set: the store decides)
        if zset is None:
            put_zset(ctx, key, flat)
        else:
            ctx.emit(KvZadd(key, flat))
    if flags & _INCR:
        return None if result is None else score_reply(ctx, result)
    return added + updated if flags & _CH else added


@command("zadd", arity=-4, flags="write denyoom fast", key="RW update", since="1.2.0",
         complexity="O(log(N)) for each item added, where N is the number of elements in the "
                    "sorted set.")
def zadd(ctx: Context, argv: list[bytes]) -> Any:
    """ZADD key [NX|XX] [GT|LT] [CH] [INCR] score member [score member ...]
    Adds one or more members to a sorted set, or updates their scores. Creates the key if it doesn't
    exist.
    """
    if len(argv) == 4:  # one pair, maybe without options: a shorter path to zadd_apply's outcome
        raw = argv[2]
        # digits are no option, and a score float() reads as strtod (score_or_none's first case)
        score = float(raw) if raw.isdigit() and len(raw) < 16 else (
            None if raw.upper() in _ZADD_FLAGS else parse_score(raw))
        if score is not None:
            key, member = argv[1], argv[3]
            zset = ctx.db.kv.typed(key, ctx.now_ms, SortedSetValue)
            if zset is None:
                put_zset(ctx, key, [member, score])
                return 1
            old = zset.scores.get(member)
            if old == score:
                return 0
            ctx.emit(KvZadd(key, [member, score]))
            return 1 if old is None else 0
    flags = 0
    i = 2
    while i < len(argv):
        bit = _ZADD_FLAGS.get(argv[i].upper())
        if bit is None:
            break
        flags |= bit
        i += 1
    rest = len(argv) - i
    if rest == 0 or rest % 2:
        raise CommandError(errors.SYNTAX)
    if flags & _NX and flags & _XX:
        raise CommandError("ERR XX and NX options at the same time are not compatible")
    if (flags & _GT and flags & _NX) or (flags & _LT and flags & _NX) or (flags & _GT and flags & _LT):
        raise CommandError("ERR GT, LT, and/or NX options at the same time are not compatible")
    if flags & _INCR and rest > 2:
        raise CommandError("ERR INCR option supports a single increment-element pair")
    pairs = [(parse_score(argv[j]), argv[j + 1]) for j in range(i, len(argv), 2)]
    return zadd_apply(ctx, argv[1], flags, pairs)


@command("zincrby", arity=4, flags="write denyoom fast", key="RW access update", since="1.2.0",
         complexity="O(log(N)) where N is the number of elements in the sorted set.")
def zincrby(ctx: Context, argv: list[bytes]) -> Any:
    """ZINCRBY key increment member
    Increments the score of a member in a sorted set.
    """
    if argv[2].upper() in _ZADD_FLAGS:
        # Redis's ZINCRBY is ZADD's parser: a flag there leaves no score/member pair
        raise CommandError(errors.SYNTAX)
    # zadd_apply's INCR outcome for one member, on a shorter path
    key, member = argv[1], argv[3]
    increment = parse_score(argv[2])
    zset = ctx.db.kv.typed(key, ctx.now_ms, SortedSetValue)
    old = None if zset is None else zset.scores.get(member)
    new = increment if old is None else old + increment
    if math.isnan(new):
        raise CommandError(NAN_RESULT)
    if zset is None:
        put_zset(ctx, key, [member, new])
    elif new != old:
        ctx.emit(KvZadd(key, [member, new]))
    return score_reply(ctx, new)


@command("zrem", arity=-3, flags="write fast", key="RW delete", since="1.2.0",
         complexity="O(M*log(N)) with N being the number of elements in the sorted set and M the "
                    "number of elements to be removed.")
def zrem(ctx: Context, argv: list[bytes]) -> Any:
    """ZREM key member [member ...]
    Removes one or more members from a sorted set. Deletes the sorted set if all members were
    removed.
    """
    key = argv[1]
    zset = target_zset(ctx, key)
    if zset is None:
        return 0
    present = [m for m in dict.fromkeys(argv[2:]) if m in zset.scores]
    if not present:
        return 0
    return int(ctx.emit(KvZrem(key, present)))


# --- reads ----------------------------------------------------------------------------
@command("zcard", arity=2, flags="readonly fast", key="RO", since="1.2.0")
def zcard(ctx: Context, argv: list[bytes]) -> Any:
    """ZCARD key
    Returns the number of members in a sorted set.
    """
    zset = read_zset(ctx, argv[1])
    return 0 if zset is None else len(zset)


@command("zscore", arity=3, flags="readonly fast", key="RO access", since="1.2.0")
def zscore(ctx: Context, argv: list[bytes]) -> Any:
    """ZSCORE key member
    Returns the score of a member in a sorted set.
    """
    zset = read_zset(ctx, argv[1])
    score = None if zset is None else zset.scores.get(argv[2])
    return None if score is None else score_reply(ctx, score)


@command("zmscore", arity=-3, flags="readonly fast", key="RO access", since="6.2.0",
         complexity="O(N) where N is the number of members being requested.")
def zmscore(ctx: Context, argv: list[bytes]) -> Any:
    """ZMSCORE key member [member ...]
    Returns the score of one or more members in a sorted set.
    """
    zset = read_zset(ctx, argv[1])
    scores = zset.scores if zset is not None else {}
    out: list[Any] = []
    for member in argv[2:]:
        score = scores.get(member)
        out.append(None if score is None else score_reply(ctx, score))
    return out


def _rank(ctx: Context, argv: list[bytes], reverse: bool) -> Any:
    if len(argv) > 4:
        raise CommandError(errors.SYNTAX)
    withscore = False
    if len(argv) == 4:
        if argv[3].upper() != b"WITHSCORE":
            raise CommandError(errors.SYNTAX)
        withscore = True
    zset = read_zset(ctx, argv[1])
    rank = None if zset is None else zset.rank(argv[2], reverse)
    if rank is None:
        return NULL_ARRAY if withscore else None
    if withscore:
        assert zset is not None
        return [rank, score_reply(ctx, zset.scores[argv[2]])]
    return rank


#: what ZRANK and ZREVRANK share
_ZRANK = SpecFields(arity=-3, flags="readonly fast", key="RO access")


@command("zrank", _ZRANK, since="2.0.0", complexity="O(log(N))")
def zrank(ctx: Context, argv: list[bytes]) -> Any:
    """ZRANK key member [WITHSCORE]
    Returns the index of a member in a sorted set ordered by ascending scores.
    """
    return _rank(ctx, argv, False)


@command("zrevrank", _ZRANK, since="2.0.0", complexity="O(log(N))")
def zrevrank(ctx: Context, argv: list[bytes]) -> Any:
    """ZREVRANK key member [WITHSCORE]
    Returns the index of a member in a sorted set ordered by descending scores.
    """
    return _rank(ctx, argv, True)


#: what ZCOUNT and ZLEXCOUNT share
_ZCOUNT = SpecFields(arity=4, flags="readonly fast", key="RO access", complexity="O(log(N)) with N being the number of elements in the sorted set.")


@command("zcount", _ZCOUNT, since="2.0.0")
def zcount(ctx: Context, argv: list[bytes]) -> Any:
    """ZCOUNT key min max
    Returns the count of members in a sorted set that have scores within a range.
    """
    rng = parse_score_range(argv[2], argv[3])
    zset = read_zset(ctx, argv[1])
    return 0 if zset is None else zset.count_by_score(rng)


@command("zlexcount", _ZCOUNT, since="2.8.9")
def zlexcount(ctx: Context, argv: list[bytes]) -> Any:
    """ZLEXCOUNT key min max
    Returns the number of members in a sorted set within a lexicographical range.
    """
    lo, hi = parse_lex_range(argv[2], argv[3])
    zset = read_zset(ctx, argv[1])
    return 0 if zset is None else zset.count_by_lex(lo, hi)


# --- pops -----------------------------------------------------------------------------
def pop_members(ctx: Context, key: bytes, count: int, highest: bool) -> list[tuple[bytes, float]]:
    """Pop up to ``count`` members of an existing sorted set (the key goes when it empties)."""
    return list(ctx.emit(KvZpop(key, count, highest)))


#: what ZPOPMIN and ZPOPMAX share
_ZPOP = SpecFields(arity=-2, flags="write fast", key="RW access delete", since="5.0.0",
                   complexity="O(log(N)*M) with N being the number of elements in the sorted set, and M "
                              "being the number of elements popped.")
#: each pop by name: the highest scores
_ZPOPS = {b"zpopmin": False, b"zpopmax": True}


# (stacked specs register bottom-up: ZPOPMIN first, as ACL CAT lists them)
@command("zpopmax", _ZPOP)
@command("zpopmin", _ZPOP)
def zpop(ctx: Context, argv: list[bytes]) -> Any:
    """ZPOPMAX key [count]
    Returns the highest-scoring members from a sorted set after removing them. Deletes the sorted
    set if the last member was popped.

    ZPOPMIN key [count]
    Returns the lowest-scoring members from a sorted set after removing them. Deletes the sorted set
    if the last member was popped.
    """
    highest = _ZPOPS[argv[0].lower()]
    if len(argv) > 3:
        raise CommandError(errors.SYNTAX)
    count = pop_count(argv[2]) if len(argv) == 3 else 1
    key = argv[1]
    zset = target_zset(ctx, key)
    if zset is None or count == 0:
        return []
    popped = pop_members(ctx, key, count, highest)
    if len(argv) == 2:  # no count: one flat [member, score]
        member, score = popped[0]
        return [member, score_reply(ctx, score)]
    return pairs_reply(ctx, popped)


def _pop_for_mpop(ctx: Context, key: bytes, side: bytes, count: int) -> list[Any]:
    popped = pop_members(ctx, key, count, side == b"MAX")
    return [key, [[m, score_reply(ctx, s)] for m, s in popped]]


#: what ZMPOP, BZMPOP, BZPOPMIN and BZPOPMAX need of a sorted set
ZSET_POPS = Poppable((b"MIN", b"MAX"), target_zset, zset_if_any, _pop_for_mpop)


@command("zmpop", arity=-4, flags="write", since="7.0.0",
         key_specs=(key_spec(1, "RW access delete", keynum=True, arg="key"),),
         complexity="O(K) + O(M*log(N)) where K is the number of provided keys, N being the number "
                    "of elements in the sorted set, and M being the number of elements popped.")
def zmpop(ctx: Context, argv: list[bytes]) -> Any:
    """ZMPOP numkeys key [key ...] (MIN|MAX) [COUNT count]
    Returns the highest- or lowest-scoring members from one or more sorted sets after removing them.
    Deletes the sorted set if the last member was popped.
    """
    return mpop(ctx, argv, ZSET_POPS)


# --- removals by range ----------------------------------------------------------------
def _remove_range(ctx: Context, key: bytes, effect: Effect, count: int) -> int:
    if count == 0:
        return 0
    return int(ctx.emit(effect))


#: what the ZREMRANGEBY* commands share
_ZREMRANGE = SpecFields(arity=4, flags="write", key="RW delete",
                        complexity="O(log(N)+M) with N being the number of elements in the sorted set and M the "
                                   "number of elements removed by the operation.")


@command("zremrangebyrank", _ZREMRANGE, since="2.0.0")
def zremrangebyrank(ctx: Context, argv: list[bytes]) -> Any:
    """ZREMRANGEBYRANK key start stop
    Removes members in a sorted set within a range of indexes. Deletes the sorted set if all members
    were removed.
    """
    start, stop = int_arg(argv[2]), int_arg(argv[3])
    zset = target_zset(ctx, argv[1])
    if zset is None:
        return 0
    count = _rank_span(zset, start, stop)
    return _remove_range(ctx, argv[1], KvZremrangebyrank(argv[1], start, stop), count)


def _rank_span(zset: SortedSetValue, start: int, stop: int) -> int:
    n = len(zset)
    if start < 0:
        start = max(n + start, 0)
    if stop < 0:
        stop = n + stop
    if start > stop or start >= n:
        return 0
    return min(stop, n - 1) + 1 - start


@command("zremrangebyscore", _ZREMRANGE, since="1.2.0")
def zremrangebyscore(ctx: Context, argv: list[bytes]) -> Any:
    """ZREMRANGEBYSCORE key min max
    Removes members in a sorted set within a range of scores. Deletes the sorted set if all members
    were removed.
    """
    rng = parse_score_range(argv[2], argv[3])
    zset = target_zset(ctx, argv[1])
    if zset is None:
        return 0
    effect = KvZremrangebyscore(argv[1], rng.min, rng.min_exclusive, rng.max, rng.max_exclusive)
    return _remove_range(ctx, argv[1], effect, zset.count_by_score(rng))


@command("zremrangebylex", _ZREMRANGE, since="2.8.9")
def zremrangebylex(ctx: Context, argv: list[bytes]) -> Any:
    """ZREMRANGEBYLEX key min max
    Removes members in a sorted set within a lexicographical range. Deletes the sorted set if all
    members were removed.
    """
    lo, hi = parse_lex_range(argv[2], argv[3])
    zset = target_zset(ctx, argv[1])
    if zset is None:
        return 0
    effect = KvZremrangebylex(argv[1], lo.kind, lo.value, hi.kind, hi.value)
    return _remove_range(ctx, argv[1], effect, zset.count_by_lex(lo, hi))


# --- random members and scans ---------------------------------------------------------
@command("zrandmember", arity=-2, flags="readonly", key="RO access", since="6.2.0",
         tips="nondeterministic_output",
         complexity="O(N) where N is the number of members returned")
def zrandmember(ctx: Context, argv: list[bytes]) -> Any:
    """ZRANDMEMBER key [count [WITHSCORES]]
    Returns one or more random members from a sorted set.
    """
    if len(argv) > 4 or (len(argv) == 4 and argv[3].upper() != b"WITHSCORES"):
        raise CommandError(errors.SYNTAX)
    withscores = len(argv) == 4
    if len(argv) == 2:
        zset = read_zset(ctx, argv[1])
        if zset is None or not len(zset):
            return None
        return zset.at(random.randrange(len(zset)))[0]
    count = int_arg(argv[2])
    if count < -LONG_MAX or (withscores and count < -LONG_MAX // 2):
        raise CommandError("ERR value is out of range, value must between -9223372036854775807 "
                           "and 9223372036854775807")
    zset = read_zset(ctx, argv[1])
    if zset is None or count == 0:
        return []
    check_repeats(count)  # a negative count asking for more than one reply can hold
    n = len(zset)
    if count < 0:  # repeats allowed, exactly -count picks
        picks = [zset.at(random.randrange(n)) for _ in range(-count)]
    elif count >= n:
        picks = list(zset)
        random.shuffle(picks)
    else:
        picks = [zset.at(i) for i in sorted(random.sample(range(n), count))]
        random.shuffle(picks)
    return pairs_reply(ctx, picks, withscores)


@command("zscan", ELEMENT_SCAN, since="2.8.0")
def zscan(ctx: Context, argv: list[bytes]) -> Any:
    """ZSCAN key cursor [MATCH pattern] [COUNT count]
    Iterates over members and scores of a sorted set.
    """
    cursor = _cursor(argv[2])
    # Redis looks the key up before it reads the options: a missing key is an empty scan
    zset = read_zset(ctx, argv[1])
    if zset is None:
        return [b"0", []]
    pattern, count = scan_options(argv, 3)
    next_cursor, pairs = zset_scan_step(zset, cursor, count)
    out: list[Any] = []
    for member, score in pairs:
        if pattern is None or glob_match(pattern, member):
            out.append(member)
            out.append(format_double(score))
    return [b"%d" % next_cursor, out]


def _cursor(raw: bytes) -> int:
    if not raw.isdigit() or len(raw) > 20 or int(raw) >= 2**64:
        raise CommandError(errors.INVALID_CURSOR)
    return int(raw)


#: sets up to this size answer a whole ZSCAN walk at once (as Redis's listpack encoding)
SCAN_WHOLE = 128


def zset_scan_step(zset: SortedSetValue, cursor: int, count: int) -> tuple[int, list[tuple[bytes, float]]]:
    """One ZSCAN step: members in the order of their hash, the cursor is the hash to resume at,
    so a member present for the whole walk is returned once, whatever changes in between."""
    if len(zset) <= SCAN_WHOLE:
        return 0, list(zset)
    order = zset.scan_order
    if order is None or cursor == 0:
        order = sorted((_scan_hash(m), m) for m in zset.scores)
        zset.scan_order = order
    import bisect

    at = bisect.bisect_left(order, (cursor, b"")) if cursor else 0
    end = min(at + count, len(order))
    while 0 < end < len(order) and order[end][0] == order[end - 1][0]:
        end += 1
    scores = zset.scores
    found = [(m, scores[m]) for _, m in order[at:end] if m in scores]
    if end >= len(order):
        zset.scan_order = None
        return 0, found
    return order[end][0], found


def _scan_hash(member: bytes) -> int:
    return (hash(member) & (2**64 - 1)) or 1
