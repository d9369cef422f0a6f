"""WATCH against redis-server 7 with random commands: which calls touch a watched key.

Each step, on both servers: one connection WATCHes one or two of the generator's six keys,
a second connection sends one command of test_differential_random's generator (every
data-type family, no-op writes, wrong calls and WRONGTYPE included), then the first runs
``MULTI``, ``PING``, ``EXEC``; whether EXEC ran or was aborted (a null reply) must be the
same as redis-server's. A write that changes nothing (SADD of a member already there, DEL
of a missing key, a refused call) must leave the watch alone where Redis does, and every
real change must break it.

The default run takes ``DEFAULT_SEEDS``; ``-m slow`` runs ``SLOW_SEEDS`` more
(``HOTKV_WATCH_DIFF_SEEDS=first:count``).
"""

from __future__ import annotations

import os
import random

import pytest

from e2e.test_differential import RespConnection
from e2e.test_differential_random import KEYS, Gen, lex_unspecified, string_encoding
from helpers import HotkvProcess, RedisServer

DEFAULT_SEEDS = range(1, 11)
_first, _, _count = os.environ.get("HOTKV_WATCH_DIFF_SEEDS", "6000:150").partition(":")
SLOW_SEEDS = range(int(_first), int(_first) + int(_count or 1))
STEPS = 200


def run_seed(redis_port: int, hotkv_port: int, seed: int, steps: int) -> int:
    """One seed on both servers; returns how many EXECs were aborted (on both)."""
    rng = random.Random(seed)
    gen = Gen(rng)
    ports = (redis_port, hotkv_port)
    watchers = [RespConnection(port, 2) for port in ports]
    writers = [RespConnection(port, 2) for port in ports]
    probe = RespConnection(redis_port, 2)
    history: list[str] = []
    aborted = 0
    try:
        for conn in watchers:
            assert conn.call(["FLUSHALL"]) == ("+", b"OK")
        for step in range(steps):
            argv = gen.command()
            if lex_unspecified(argv, probe) or string_encoding(argv, probe):
                continue
            watched = rng.sample(KEYS, rng.randint(1, 2))
            outcomes = []
            for watcher, writer in zip(watchers, writers, strict=True):
                assert watcher.call(["WATCH", *watched]) == ("+", b"OK")
                reply = writer.call(argv)
                assert watcher.call(["MULTI"]) == ("+", b"OK")
                assert watcher.call(["PING"]) == ("+", b"QUEUED")
                outcomes.append((watcher.call(["EXEC"]), reply))
            (expected, theirs), (got, mine) = outcomes
            if expected != got:
                before = "\n    ".join(history[-10:])
                pytest.fail(f"seed {seed}, step {step}: WATCH {watched} then {argv!r}\n"
                            f"  redis: EXEC {expected!r} (the command: {theirs!r})\n"
                            f"  hotkv: EXEC {got!r} (the command: {mine!r})\n"
                            f"  the commands before it (latest last):\n    {before}",
                            pytrace=False)
            aborted += expected == ("*", None)
            history.append(repr(argv))
        return aborted
    finally:
        for conn in (*watchers, *writers, probe):
            conn.close()


@pytest.mark.parametrize("seed", DEFAULT_SEEDS)
def test_random_commands_break_a_watch_as_redis(reference: RedisServer, server: HotkvProcess,
                                                 seed: int) -> None:
    assert run_seed(reference.port, server.port, seed, STEPS) > 0


@pytest.mark.slow
@pytest.mark.parametrize("seed", SLOW_SEEDS)
def test_many_random_commands_break_a_watch_as_redis(reference: RedisServer,
                                                      server: HotkvProcess, seed: int) -> None:
    run_seed(reference.port, server.port, seed, STEPS)
