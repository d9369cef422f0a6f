"""Random command sequences replayed: the AOF, a rewrite of it and a replica reproduce exactly
the data the primary holds.

Each seed sends test_differential_random's generator's commands (every data-type family,
wrong calls and WRONGTYPE included) to a hotkv primary (``appendonly yes``) with one replica,
some of them as they are, some from a script (``redis.pcall``, or two commands in one
script, the second seeing the first's write), some in MULTI/EXEC blocks. Then the whole data
set (a SCAN walk, then every key's type, whether it has a deadline, and its value) is read
from the primary, from the replica once it has caught up, from the primary restarted from
its AOF, and from it restarted again after BGREWRITEAOF: all four must be equal. Nothing is
compared with redis-server here (the differential tests do that): this checks that every
command's effects replay as they were applied.

The default run takes ``DEFAULT_SEEDS``; ``-m slow`` runs ``SLOW_SEEDS`` more
(``HOTKV_REPLAY_SEEDS=first:count`` picks others).
"""

from __future__ import annotations

import os
import random
from collections.abc import Iterator
from typing import Any

import pytest

from e2e.test_differential import RespConnection
from e2e.test_differential_random import Argv, Gen, dump, scan_walk
from helpers import HotkvProcess
from replication.rhelpers import replica_of, servers, wait_synced, wait_until

DEFAULT_SEEDS = range(1, 4)
_first, _, _count = os.environ.get("HOTKV_REPLAY_SEEDS", "7000:12").partition(":")
SLOW_SEEDS = range(int(_first), int(_first) + int(_count or 1))
STEPS = 400

PCALL = "return redis.pcall(unpack(ARGV))"
#: two commands in one script: ARGV holds both, the first one's word count first
TWO = ("local n = tonumber(ARGV[1]) "
       "local a, b = {}, {} "
       "for i = 2, n + 1 do a[#a + 1] = ARGV[i] end "
       "for i = n + 2, #ARGV do b[#b + 1] = ARGV[i] end "
       "redis.pcall(unpack(a)) return redis.pcall(unpack(b))")


def state(conn: RespConnection) -> dict[bytes, Any]:
    keys, duplicates = scan_walk(conn, ["COUNT", "100"])
    assert duplicates == 0
    return dump(conn, keys)


def send_random(conn: RespConnection, rng: random.Random, steps: int) -> list[str]:
    """The seed's commands, in their forms (see the module docstring); what was sent."""
    gen = Gen(rng)
    sent: list[str] = []
    step = 0
    while step < steps:
        roll = rng.random()
        if roll < 0.05:
            block: list[Argv] = [gen.command() for _ in range(rng.randint(1, 4))]
            requests: list[list[Any]] = [["MULTI"], *block, [rng.choice(["EXEC", "EXEC", "DISCARD"])]]
        elif roll < 0.2:
            requests = [["EVAL", PCALL, "0", *gen.command()]]
        elif roll < 0.3:
            first, second = gen.command(), gen.command()
            requests = [["EVAL", TWO, "0", str(len(first)), *first, *second]]
        else:
            requests = [gen.command()]
        for argv in requests:
            conn.call(argv)
            sent.append(repr(argv))
        step += len(requests)
    return sent


@pytest.fixture(scope="module")
def pair() -> Iterator[tuple[HotkvProcess, HotkvProcess]]:
    primary = HotkvProcess("--appendonly", "yes", "--appendfsync", "always").start()
    try:
        with servers(replica_of(primary)) as (replica,):
            yield primary, replica
    finally:
        primary.cleanup()


def replay_seed(primary: HotkvProcess, replica: HotkvProcess, seed: int, steps: int) -> None:
    conn = RespConnection(primary.port, 2)
    try:
        assert conn.call(["FLUSHALL"]) == ("+", b"OK")
        sent = send_random(conn, random.Random(seed), steps)
        expected = state(conn)
    finally:
        conn.close()
    assert expected, f"seed {seed}: the sequence left no key"

    def check(name: str, proc: HotkvProcess) -> None:
        view = RespConnection(proc.port, 2)
        try:
            got = state(view)
        finally:
            view.close()
        if got != expected:
            diff = sorted(k for k in set(got) | set(expected) if got.get(k) != expected.get(k))
            shown = "\n    ".join(f"{k!r}: primary {expected.get(k)!r}, {name} {got.get(k)!r}"
                                  for k in diff[:5])
            tail = "\n    ".join(sent[-15:])
            pytest.fail(f"seed {seed}: {name} differs from the primary\n    {shown}\n"
                        f"  the last commands sent:\n    {tail}", pytrace=False)

    wait_synced(primary.client(), replica.client())
    check("the replica", replica)
    primary.stop()
    primary.start()
    check("a restart from the AOF", primary)
    client = primary.client()
    try:
        client.bgrewriteaof()
        wait_until(lambda: client.info("persistence")["aof_rewrite_in_progress"] == 0,
                   what="the rewrite")
    finally:
        client.close()
    primary.stop()
    primary.start()
    check("a restart after BGREWRITEAOF", primary)


@pytest.mark.parametrize("seed", DEFAULT_SEEDS)
def test_random_sequences_replay_the_same(pair: tuple[HotkvProcess, HotkvProcess],
                                          seed: int) -> None:
    replay_seed(*pair, seed, STEPS)


@pytest.mark.slow
@pytest.mark.parametrize("seed", SLOW_SEEDS)
def test_many_random_sequences_replay_the_same(pair: tuple[HotkvProcess, HotkvProcess],
                                               seed: int) -> None:
    replay_seed(*pair, seed, STEPS)
