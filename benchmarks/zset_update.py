"""A sorted set's update alone, in process: ``SortedSetValue.add`` giving members of a
100,000-member set new random scores (ZADD's work once the command has parsed it), with and
without the positional index that a rank query (ZRANK, ZRANGE by rank) builds and later
writes keep up to date.

    .venv/bin/python benchmarks/zset_update.py                  # this checkout's build
    PYTHONPATH=<other checkout>/src .venv/bin/python benchmarks/zset_update.py

The members and scores are random over the whole set, so most probes of the two
bisections (the old key out, the new one in) miss the CPU caches, as they do under
redis-benchmark's ``ZADD key __rand_int__ m:__rand_int__``. Prints ns per update, the
best of ``--repeat`` rounds for each case; ``--parts`` first prints what the update's steps
cost alone on the same set (the member's score looked up, an order key built, the two
bisections that find a key's place).
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

if not any(Path(p, "hotkv_server").is_dir() for p in sys.path if p):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from bisect import bisect_left

from hotkv_server.stores.zsetvalue import SortedSetValue, score_key


def rounds(value: SortedSetValue, batches: list[list[tuple[bytes, float]]],
           ranked: bool) -> float:
    """Best ns per ``add`` over the rounds (a batch of new scores each: the same ones
    again would change nothing), each round starting with the positional index built
    (``ranked``) or dropped."""
    best = float("inf")
    for ops in batches:
        if ranked:
            value.rank(ops[0][0])  # builds the index (no split drops it in these rounds)
        else:
            del value.tree[:]
        add = value.add
        started = time.perf_counter_ns()
        for member, score in ops:
            add(member, score)
        best = min(best, (time.perf_counter_ns() - started) / len(ops))
        if ranked and not value.tree:
            raise SystemExit("a split or merge dropped the index: use fewer --updates")
    return best


def parts(value: SortedSetValue, ops: list[tuple[bytes, float]], repeat: int) -> None:
    """ns per step of an update, each timed alone over ``ops`` (best of ``repeat``)."""
    scores, lists, maxes = value.scores, value.lists, value.maxes
    keys = [score_key(scores[member]) + member for member, _score in ops]

    def lookup() -> None:
        get = scores.get
        for member, _score in ops:
            get(member)

    def build() -> None:
        for member, score in ops:
            score_key(score) + member

    def place() -> None:
        for key in keys:
            bisect_left(lists[bisect_left(maxes, key)], key)

    for name, step in (("the member's score (dict lookup)", lookup),
                       ("an order key built (score_key + member)", build),
                       ("a present key's place (two bisections)", place)):
        best = float("inf")
        for _ in range(repeat):
            started = time.perf_counter_ns()
            step()
            best = min(best, (time.perf_counter_ns() - started) / len(ops))
        print(f"  {name}: {best:,.0f} ns")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--members", type=int, default=100_000)
    parser.add_argument("--updates", type=int, default=20_000, help="per round")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--parts", action="store_true", help="time the update's steps alone too")
    options = parser.parse_args()
    rnd = random.Random(1)
    n = options.members
    value = SortedSetValue((b"m:%d" % i, float(rnd.randrange(n))) for i in range(n))
    batches = [[(b"m:%d" % rnd.randrange(n), float(rnd.randrange(n)))
                for _ in range(options.updates)] for _ in range(2 * options.repeat)]
    module = sys.modules[SortedSetValue.__module__].__file__
    print(f"{n:,} members, {options.updates:,} updates a round, best of {options.repeat} "
          f"({Path(module or '?').name})")
    if options.parts:
        print("steps alone (an update does the first once, the other two twice: old key out, "
              "new key in):")
        parts(value, batches[0], options.repeat)
    for ranked in (False, True):
        ns = rounds(value, batches[ranked * options.repeat:][:options.repeat], ranked)
        print(f"{'with' if ranked else 'without'} the positional index: {ns:,.0f} ns per update")


if __name__ == "__main__":
    main()
