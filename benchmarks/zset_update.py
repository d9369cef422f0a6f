"""A sorted set's update alone, in process: ``SortedSetValue.add`` giving members of a
100,000-member set new random scores (ZADD's work once the command has parsed it), with and
without the positional index that a rank query (ZRANK, ZRANGE by rank) builds and later
writes keep up to date.

    .venv/bin/python benchmarks/zset_update.py                  # this checkout's build
    PYTHONPATH=<other checkout>/src .venv/bin/python benchmarks/zset_update.py

The members and scores are random over the whole set, so most probes of the two
bisections (the old key out, the new one in) miss the CPU caches, as they do under
redis-benchmark's ``ZADD key __rand_int__ m:__rand_int__``. Prints ns per update, the
best of ``--repeat`` rounds for each case.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

if not any(Path(p, "hotkv_server").is_dir() for p in sys.path if p):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))

from hotkv_server.stores.zsetvalue import SortedSetValue


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--members", type=int, default=100_000)
    parser.add_argument("--updates", type=int, default=20_000, help="per round")
    parser.add_argument("--repeat", type=int, default=5)
    options = parser.parse_args()
    rnd = random.Random(1)
    n = options.members
    value = SortedSetValue((b"m:%d" % i, float(rnd.randrange(n))) for i in range(n))
    batches = [[(b"m:%d" % rnd.randrange(n), float(rnd.randrange(n)))
                for _ in range(options.updates)] for _ in range(2 * options.repeat)]
    module = sys.modules[SortedSetValue.__module__].__file__
    print(f"{n:,} members, {options.updates:,} updates a round, best of {options.repeat} "
          f"({Path(module or '?').name})")
    for ranked in (False, True):
        ns = rounds(value, batches[ranked * options.repeat:][:options.repeat], ranked)
        print(f"{'with' if ranked else 'without'} the positional index: {ns:,.0f} ns per update")


if __name__ == "__main__":
    main()
