"""SortedSetValue as a plain data structure, checked against a sorted Python list model."""

from __future__ import annotations

import math
import random
import struct
from typing import Any

import pytest

from hotkv_server.stores.zsetvalue import (
    LISTPACK_ENTRIES,
    LexBound,
    ScoreRange,
    SortedSetValue,
    score_key,
)


def model_order(scores: dict[bytes, float]) -> list[tuple[bytes, float]]:
    return [(m, s) for s, m in sorted((s, m) for m, s in scores.items())]


def in_score_range(s: float, r: ScoreRange) -> bool:
    low = s > r.min if r.min_exclusive else s >= r.min
    high = s < r.max if r.max_exclusive else s <= r.max
    return low and high


def test_score_keys_order_bytewise_as_the_scores_order_numerically() -> None:
    rng = random.Random(7)
    specials = [-math.inf, -1.7976931348623157e308, -1.0, -5e-324, 0.0, -0.0, 5e-324,
                2.2250738585072014e-308, 1.0, 2.0**53 + 1, 1e17, 1.7976931348623157e308, math.inf]
    scores = specials + [rng.uniform(-1e6, 1e6) for _ in range(500)] + [
        struct.unpack(">d", rng.getrandbits(64).to_bytes(8, "big"))[0] for _ in range(500)]
    scores = [x for x in scores if not math.isnan(x)]
    keys = {x: score_key(x) for x in scores}
    assert all(len(k) == 8 for k in keys.values())
    assert sorted(scores, key=keys.__getitem__) == sorted(scores)
    assert score_key(-0.0) == score_key(0.0)
    for x in scores:  # the IEEE 754 bits, the sign bit flipped (positive) or every bit
        (bits,) = struct.unpack(">Q", struct.pack(">d", x + 0.0))
        flipped = bits ^ (1 << 63) if bits < 1 << 63 else bits ^ ((1 << 64) - 1)
        assert keys[x] == flipped.to_bytes(8, "big"), x


def test_add_update_remove_and_rank() -> None:
    z = SortedSetValue()
    assert z.add(b"b", 2.0) is True
    assert z.add(b"a", 2.0) is True
    assert z.add(b"c", 1.0) is True
    assert z.add(b"c", 3.0) is False
    assert list(z) == [(b"a", 2.0), (b"b", 2.0), (b"c", 3.0)]
    assert z.rank(b"a") == 0 and z.rank(b"c") == 2
    assert z.rank(b"c", reverse=True) == 0
    assert z.rank(b"zz") is None
    assert z.remove(b"a") is True and z.remove(b"a") is False
    assert list(z) == [(b"b", 2.0), (b"c", 3.0)]
    assert z.payload_bytes() == 2


def sign(score: float | None) -> float:
    assert score == 0.0
    return math.copysign(1.0, score)


def test_negative_zero_is_zero_in_a_small_set_and_kept_in_a_big_one() -> None:
    small = SortedSetValue()
    small.add(b"m", -0.0)
    assert sign(small.score(b"m")) == 1.0  # Redis's listpack: a whole score is an integer
    assert sign(SortedSetValue([(b"m", -0.0)]).score(b"m")) == 1.0
    big = SortedSetValue((b"m%d" % i, float(i)) for i in range(LISTPACK_ENTRIES))
    assert not big.big
    big.add(b"edge", -0.0)  # the member that makes it big goes into the skiplist
    assert big.big and sign(big.score(b"edge")) == -1.0
    big.add(b"m0", -0.0)  # 0 -> -0: equal, unchanged (Redis compares the doubles)
    assert sign(big.score(b"m0")) == 1.0
    big.add(b"m1", -0.0)
    assert sign(big.score(b"m1")) == -1.0
    assert [m for m, _ in big.range_by_score(ScoreRange(0.0, 0.0, False, False))] == [
        b"edge", b"m0", b"m1"]  # -0 and 0 are one score: ordered by member
    assert sign(big.copy().score(b"edge")) == -1.0  # COPY keeps the skiplist
    shrunk = SortedSetValue([(b"a", -0.0), (b"b", 1.0)], big=True)
    assert sign(shrunk.score(b"a")) == -1.0
    assert sign(SortedSetValue.restore(shrunk.snapshot()).score(b"a")) == 1.0  # reloaded small


@pytest.mark.parametrize("seed", range(4))
def test_ranges_match_the_model(seed: int) -> None:
    rnd = random.Random(seed)
    scores = {b"m%03d" % i: float(rnd.randint(-5, 5)) for i in range(rnd.randint(0, 120))}
    z = SortedSetValue(scores.items())
    model = model_order(scores)
    n = len(model)
    for _ in range(200):
        a, b = rnd.randint(-130, 130), rnd.randint(-130, 130)
        lo = max(a + n if a < 0 else a, 0)
        hi = b + n if b < 0 else b
        expected = model[lo : min(hi, n - 1) + 1] if lo <= hi and lo < n else []
        assert z.range_by_rank(a, b) == expected
        assert z.range_by_rank(a, b, members=True) == [m for m, _ in expected]
        assert z.range_by_rank(a, b, reverse=True) == (
            list(reversed(model))[lo : min(hi, n - 1) + 1] if lo <= hi and lo < n else [])
        lo_s = rnd.choice([-math.inf, math.inf, float(rnd.randint(-6, 6))])
        hi_s = rnd.choice([-math.inf, math.inf, float(rnd.randint(-6, 6))])
        r = ScoreRange(lo_s, hi_s, rnd.random() < 0.5, rnd.random() < 0.5)
        inside = [p for p in model if in_score_range(p[1], r)]
        assert z.range_by_score(r) == inside, r
        assert z.count_by_score(r) == len(inside)
        assert z.range_by_score(r, reverse=True) == list(reversed(inside))
        off, cnt = rnd.randint(-1, 10), rnd.randint(-1, 10)
        want = [] if off < 0 else (inside[off:] if cnt < 0 else inside[off : off + cnt])
        assert z.range_by_score(r, offset=off, count=cnt) == want
        rev = list(reversed(inside))
        want = [] if off < 0 else (rev[off:] if cnt < 0 else rev[off : off + cnt])
        assert z.range_by_score(r, reverse=True, offset=off, count=cnt) == want


def _set_of_small_sublists(rnd: random.Random, smallest: int) -> tuple[SortedSetValue, Any]:
    """Up to 300 members with scores -20..20, kept in sublists of 4 (sortedcontainers'
    load factor) so that a walk crosses many of them; and the model's order."""
    scores = {b"m%03d" % i: float(rnd.randint(-20, 20))
              for i in range(rnd.randint(smallest, 300))}
    z = SortedSetValue(scores.items())
    z.relayout(4)
    return z, model_order(scores)


@pytest.mark.parametrize("seed", range(4))
def test_limited_score_ranges_across_many_sublists_match_the_model(seed: int) -> None:
    # sublists of 4 (sortedcontainers' load factor): a LIMITed walk crosses many of them
    rnd = random.Random(seed)
    z, model = _set_of_small_sublists(rnd, 1)
    for _ in range(300):
        lo_s = rnd.choice([-math.inf, math.inf, float(rnd.randint(-22, 22))])
        hi_s = rnd.choice([-math.inf, math.inf, float(rnd.randint(-22, 22))])
        r = ScoreRange(lo_s, hi_s, rnd.random() < 0.3, rnd.random() < 0.3)
        inside = [p for p in model if in_score_range(p[1], r)]
        off, cnt = rnd.randint(0, 40), rnd.choice([0, 1, 3, 10, 50, 400])
        for reverse in (False, True):
            ordered = list(reversed(inside)) if reverse else inside
            want = ordered[off : off + cnt]
            assert z.range_by_score(r, reverse, off, cnt) == want, (r, reverse, off, cnt)
            assert z.range_by_score(r, reverse, off, cnt, members=True) == [m for m, _ in want]
            everything = z.range_by_score(r, reverse, off, -1, members=True)
            assert everything == [m for m, _ in ordered[off:]]


@pytest.mark.parametrize("seed", range(4))
def test_members_from_a_score_match_the_model_across_sublists(seed: int) -> None:
    # ZRANGEBYSCORE key <score> +inf LIMIT offset count's own walk, over sublists of 4
    rnd = random.Random(seed)
    z, model = _set_of_small_sublists(rnd, 0)
    for _ in range(300):
        low = float(rnd.randint(-22, 22))
        off, cnt = rnd.randint(0, 40), rnd.choice([0, 1, 3, 10, 50, 400])
        want = [m for m, s in model if s >= low][off : off + cnt]
        assert z.members_from(low, off, cnt) == want, (low, off, cnt)


def _bound(rnd: random.Random) -> LexBound:
    kind = rnd.choice("-+[(")
    return LexBound(kind, b"m%03d" % rnd.randint(0, 60) if kind in "[(" else b"")


def test_lex_ranges_with_one_score_match_the_model() -> None:
    rnd = random.Random(7)
    members = sorted({b"m%03d" % rnd.randint(0, 60) for _ in range(40)})
    z = SortedSetValue((m, 0.0) for m in members)
    for _ in range(500):
        lo, hi = _bound(rnd), _bound(rnd)
        inside = [(m, 0.0) for m in members if lo.gte_min(m) and hi.lte_max(m)]
        assert z.range_by_lex(lo, hi) == inside, (lo, hi)
        assert z.count_by_lex(lo, hi) == len(inside)
        assert z.range_by_lex(lo, hi, reverse=True, offset=1, count=2) == list(reversed(inside))[1:3]
        assert z.range_by_lex(lo, hi, members=True) == [m for m, _ in inside]


def test_pops_and_removals_by_range() -> None:
    z = SortedSetValue((b"m%d" % i, float(i)) for i in range(10))
    assert z.pop(2) == [(b"m0", 0.0), (b"m1", 1.0)]
    assert z.pop(2, highest=True) == [(b"m9", 9.0), (b"m8", 8.0)]
    assert z.remove_range_by_rank(0, 0) == 1  # m2
    assert z.remove_range_by_score(ScoreRange(5, 6, min_exclusive=True)) == 1  # m6
    assert z.remove_range_by_lex(LexBound("["), LexBound("-")) == 0
    assert [m for m, _ in z] == [b"m3", b"m4", b"m5", b"m7"]
    assert z.scores == {b"m3": 3.0, b"m4": 4.0, b"m5": 5.0, b"m7": 7.0}
    assert z.pop(10) == [(b"m3", 3.0), (b"m4", 4.0), (b"m5", 5.0), (b"m7", 7.0)]
    assert len(z) == 0 and z.payload_bytes() == 0


def test_infinite_scores_sort_at_the_ends() -> None:
    z = SortedSetValue([(b"lo", -math.inf), (b"hi", math.inf), (b"mid", 0.0)])
    assert [m for m, _ in z] == [b"lo", b"mid", b"hi"]
    assert z.count_by_score(ScoreRange(-math.inf, math.inf)) == 3
    assert z.count_by_score(ScoreRange(-math.inf, math.inf, True, True)) == 1
    assert z.count_by_score(ScoreRange(math.inf, math.inf)) == 1


@pytest.mark.parametrize("seed", range(4))
def test_adds_updates_and_removes_across_sublist_splits_and_merges_match_the_model(seed: int) -> None:
    # sublists of 4 (sortedcontainers' load factor): the written-out insert and delete
    # paths of ``add``/``remove`` meet splits, merges and (after a rank) the positional index
    rnd = random.Random(seed)
    z = SortedSetValue()
    z.relayout(4)
    scores: dict[bytes, float] = {}
    for step in range(3000):
        member = b"m%02d" % rnd.randint(0, 80)
        if rnd.random() < 0.3:
            assert z.remove(member) is (scores.pop(member, None) is not None)
        else:
            score = rnd.choice([-math.inf, math.inf, -0.0, float(rnd.randint(-9, 9)), rnd.random()])
            assert z.add(member, score) is (member not in scores)
            scores[member] = score + 0.0
        if step % 7 == 0 and scores:  # a rank builds the index the next writes must keep
            probe = rnd.choice(list(scores))
            assert z.rank(probe) == [m for m, _ in model_order(scores)].index(probe)
        if step % 50 == 0:
            model = model_order(scores)
            assert list(z) == model
            z.ordered._check()
            a, b = sorted(rnd.sample(range(len(model) + 3), 2)) if len(model) > 1 else (0, 0)
            assert z.range_by_rank(a, b) == model[a : b + 1]
            assert z.range_by_rank(a, b, reverse=True, members=True) == [
                m for m, _ in reversed(model)][a : b + 1]
    assert list(z) == model_order(scores)
    assert z.range_by_rank(0, -1, reverse=True) == list(reversed(model_order(scores)))
