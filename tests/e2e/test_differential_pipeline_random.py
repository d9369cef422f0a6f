"""Seeded random differential test of pipelined requests: test_differential_random's
commands sent in batches of 1 to 40 in one write, on a real redis-server 7 and on hotkv.

A batch goes out in one ``sendall`` (now and then cut into a few pieces sent apart, so
that a read ends inside a request), and its replies are read back in order: hotkv answers
many requests from one read in one turn (its replies held and written together), a path
one-at-a-time requests never take. Every reply is compared as test_differential_random
compares them, then the whole data set.

A batch holds only commands whose comparison needs no look at the data first (the probes
of test_differential_random see the data before the batch, not before each command:
``probe_free``), with hash reads compared order-free. Now and then a batch is wrapped in MULTI ... EXEC, or holds a wrong
call (an unknown command, a wrong arity): neither may disturb the replies after it.

The default run takes ``DEFAULT_SEEDS``; ``-m slow`` runs ``SLOW_SEEDS`` more
(``HOTKV_PIPE_DIFF_SEEDS=first:count`` picks others). A failure names the seed, the
protocol, the batch and the command.
"""

from __future__ import annotations

import os
import random
import time
from typing import Any

import pytest

from e2e.test_differential import RespConnection, request_bytes
from e2e.test_differential_random import (
    Argv,
    Gen,
    assert_same_data,
    normalise,
    probe_free,
    same_exec,
)
from helpers import HotkvProcess, RedisServer

DEFAULT_SEEDS = range(1, 7)
_first, _, _count = os.environ.get("HOTKV_PIPE_DIFF_SEEDS", "8000:60").partition(":")
SLOW_SEEDS = range(int(_first), int(_first) + int(_count or 1))
BATCHES = 25


def exchange(conn: RespConnection, batch: list[Argv], cuts: list[int]) -> list[Any]:
    """Send the batch in one write (or cut at ``cuts``, a millisecond apart) and read its
    replies in order."""
    data = b"".join(request_bytes(argv) for argv in batch)
    start = 0
    for cut in [*cuts, len(data)]:
        if start < cut <= len(data):
            conn.sock.sendall(data[start:cut])
            start = cut
            if cut < len(data):
                time.sleep(0.001)
    return [conn.read() for _ in batch]


def run_seed(redis_port: int, hotkv_port: int, protocol: int, seed: int,
             batches: int = BATCHES) -> int:
    """One seed's batches to both servers; returns how many commands were compared."""
    rng = random.Random(seed)
    gen = Gen(rng)
    redis_conn, hotkv_conn = RespConnection(redis_port, protocol), RespConnection(hotkv_port, protocol)
    probe = RespConnection(redis_port, 2)
    compared = 0
    try:
        for conn in (redis_conn, hotkv_conn):
            assert conn.call(["FLUSHALL"]) == ("+", b"OK")
        for number in range(batches):
            batch: list[Argv] = []
            length = rng.randint(1, 40)
            while len(batch) < length:
                argv = gen.command()
                if probe_free(argv):
                    batch.append(argv)
            if rng.random() < 0.1:
                batch.insert(rng.randrange(len(batch) + 1),
                             rng.choice([["NOSUCHCOMMAND", "x"], ["GET"], ["PING", "a", "b"]]))
            if rng.random() < 0.1:
                batch = [["MULTI"], *batch, ["EXEC"]]
            nbytes = sum(len(request_bytes(argv)) for argv in batch)
            cuts = sorted(rng.sample(range(1, nbytes), min(3, nbytes - 1))) if (
                rng.random() < 0.2 and nbytes > 1) else []
            expected = exchange(redis_conn, batch, cuts)
            got = exchange(hotkv_conn, batch, cuts)
            for i, (argv, e, g) in enumerate(zip(batch, expected, got, strict=True)):
                same = (same_exec(batch[1:-1], e, g) if argv[0] == "EXEC"
                        else normalise(argv, e, True) == normalise(argv, g, True))
                if not same:
                    shown = "\n    ".join(repr(a) for a in batch[max(0, i - 10): i])
                    pytest.fail(
                        f"seed {seed}, RESP{protocol}, batch {number} ({len(batch)} commands, "
                        f"cut at {cuts}), command {i}: {argv!r}\n  redis: {e!r}\n  hotkv: {g!r}\n"
                        f"  the commands before it in the batch:\n    {shown}", pytrace=False)
                compared += 1
        assert_same_data(redis_conn, hotkv_conn, probe, f"seed {seed} (RESP{protocol})")
        return compared
    finally:
        for conn in (redis_conn, hotkv_conn, probe):
            conn.close()


@pytest.mark.parametrize("protocol", [2, 3], ids=["resp2", "resp3"])
@pytest.mark.parametrize("seed", DEFAULT_SEEDS)
def test_pipelined_random_sequences_same_as_redis(reference: RedisServer, server: HotkvProcess,
                                                  seed: int, protocol: int) -> None:
    assert run_seed(reference.port, server.port, protocol, seed) > BATCHES * 5


@pytest.mark.slow
@pytest.mark.parametrize("protocol", [2, 3], ids=["resp2", "resp3"])
@pytest.mark.parametrize("seed", SLOW_SEEDS)
def test_many_pipelined_random_sequences_same_as_redis(
        reference: RedisServer, server: HotkvProcess, seed: int, protocol: int) -> None:
    run_seed(reference.port, server.port, protocol, seed)
