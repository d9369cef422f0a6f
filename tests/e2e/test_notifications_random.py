"""Keyspace notifications of random command sequences against redis-server 7.

Each seed sends test_differential_random's generator's commands (every data-type family,
wrong calls and WRONGTYPE included) to hotkv and to a real redis-server with
``notify-keyspace-events KEA``; a subscriber per server (``PSUBSCRIBE __key*__:*``) hears
the events, and a marker published after each command cuts the stream into each command's
events (test_notifications_types.py's way), which must be the same, in the same order. Lex
ranges are left out (their result over mixed scores is unspecified, so whether they remove
anything is too).

The default run takes ``DEFAULT_SEEDS`` seeds of 200 commands; ``-m slow`` runs
``SLOW_SEEDS`` more (``HOTKV_NOTIFY_SEEDS=first:count`` picks others).
"""

from __future__ import annotations

import os
import random

import pytest

from e2e.test_differential_random import LEX, Argv, Gen
from e2e.test_notifications_types import events_per_command
from helpers import HotkvProcess, RedisServer

DEFAULT_SEEDS = range(1, 11)
_first, _, _count = os.environ.get("HOTKV_NOTIFY_SEEDS", "3000:150").partition(":")
SLOW_SEEDS = range(int(_first), int(_first) + int(_count or 1))
STEPS = 200


def commands_of(seed: int, steps: int) -> list[Argv]:
    gen = Gen(random.Random(seed))
    commands: list[Argv] = []
    while len(commands) < steps:
        argv = gen.command()
        if argv[0].lower() in LEX or "BYLEX" in (a.upper() for a in argv):
            continue
        commands.append(argv)
    return commands


def check_seed(hotkv_port: int, redis_port: int, protocol: int, seed: int, steps: int) -> int:
    """The seed's events on both servers; returns how many events were compared."""
    commands = commands_of(seed, steps)
    calls = [tuple(argv) for argv in commands]
    got = [events for _, events in events_per_command(hotkv_port, protocol, "KEA", calls)]
    expected = [events for _, events in events_per_command(redis_port, protocol, "KEA", calls)]
    for step, (argv, mine, theirs) in enumerate(zip(commands, got, expected, strict=True)):
        if mine != theirs:
            before = "\n    ".join(repr(c) for c in commands[max(0, step - 15):step])
            pytest.fail(f"seed {seed}, RESP{protocol} subscriber, step {step}: {argv!r}\n"
                        f"  redis: {theirs!r}\n  hotkv: {mine!r}\n"
                        f"  the commands before it (latest last):\n    {before}", pytrace=False)
    return sum(len(events) for events in expected)


@pytest.mark.parametrize("protocol", [2, 3], ids=["resp2", "resp3"])
@pytest.mark.parametrize("seed", DEFAULT_SEEDS)
def test_random_sequences_notify_as_redis(server: HotkvProcess, reference: RedisServer,
                                          seed: int, protocol: int) -> None:
    assert check_seed(server.port, reference.port, protocol, seed, STEPS) > 0


@pytest.mark.slow
@pytest.mark.parametrize("protocol", [2, 3], ids=["resp2", "resp3"])
@pytest.mark.parametrize("seed", SLOW_SEEDS)
def test_many_random_sequences_notify_as_redis(server: HotkvProcess, reference: RedisServer,
                                               seed: int, protocol: int) -> None:
    check_seed(server.port, reference.port, protocol, seed, STEPS)
