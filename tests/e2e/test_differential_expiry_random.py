"""Seeded random differential test of expired keys: test_differential_random's command
sequences with keys made to expire under them, on a real redis-server 7 and on hotkv.

Every few commands one key gets a deadline a millisecond away, by a random one of the ways
to set one (PEXPIRE, PEXPIREAT, SET ... PX, PSETEX, GETEX PX, SET ... PXAT), and the test
sleeps a few milliseconds: the key is past its deadline on both servers before the next
command, and the next three go for it half the time. So every command meets keys that are expired but
may not have been reclaimed yet (Redis's active expiry runs ten times a second): each one
must treat such a key as missing, as Redis does, whether it reads it (GET, TYPE, EXISTS,
OBJECT, a range), writes it anew (INCR without the old deadline, LPUSH starting a new list,
SETRANGE, APPEND), uses it as a source or a destination (RENAME, COPY, LMOVE, SMOVE,
ZUNIONSTORE) or checks it (MSETNX, RENAMENX, SETNX, SET NX/XX, ZADD XX). The replies are
compared exactly, as in test_differential_random, and the whole data set at the end.

Left out: what test_differential_random leaves out, DBSIZE (it counts expired keys that
active expiry has not reached yet, a matter of timing), and MULTI (a deadline that passes
between the queued commands of one EXEC would be timing too).

The default run takes ``DEFAULT_SEEDS``; ``-m slow`` runs ``SLOW_SEEDS`` more
(``HOTKV_EXPIRY_DIFF_SEEDS=first:count`` picks others). A failure names the seed, the
protocol, the step and the commands before it.
"""

from __future__ import annotations

import os
import random
import time

import pytest

from e2e.test_differential import RespConnection
from e2e.test_differential_random import (
    Argv,
    Gen,
    assert_same_data,
    hash_order_unspecified,
    lex_unspecified,
    normalise,
    string_encoding,
)
from helpers import HotkvProcess, RedisServer

DEFAULT_SEEDS = range(1, 9)
_first, _, _count = os.environ.get("HOTKV_EXPIRY_DIFF_SEEDS", "5000:60").partition(":")
SLOW_SEEDS = range(int(_first), int(_first) + int(_count or 1))
STEPS = 250
#: how long to wait after a deadline a millisecond away: past it on both servers
SETTLE_S = 0.004


class ExpiryGen(Gen):
    """The generator, whose next few commands go for the key just made to expire half the
    time (the lazy expiry of each command is what is under test)."""

    def __init__(self, rng: random.Random) -> None:
        super().__init__(rng)
        self.hot: str | None = None
        self.hot_left = 0

    def k(self) -> str:
        if self.hot is not None and self.p(0.5):
            return self.hot
        return super().k()

    def command(self) -> Argv:
        argv = super().command()
        self.hot_left -= 1
        if self.hot_left <= 0:
            self.hot = None
        return argv

    def expiring(self) -> Argv:
        """A command that leaves one key (of any type, or none) with a deadline 1 ms away;
        the next three commands go for that key half the time."""
        self.hot = None
        key = self.k()
        self.hot, self.hot_left = key, 3
        soon = str(int(time.time() * 1000) + 1)
        return self.rng.choice([
            ["PEXPIRE", key, "1"],
            ["PEXPIREAT", key, soon],
            ["PEXPIRE", key, "1", "XX"],
            ["SET", key, self.v(), "PX", "1"],
            ["SET", key, self.v(), "PXAT", soon],
            ["PSETEX", key, "1", self.v()],
            ["GETEX", key, "PX", "1"],
        ])


def run_seed(redis_port: int, hotkv_port: int, protocol: int, seed: int, steps: int = STEPS) -> int:
    """One seed's sequence to both servers; returns how many keys it made expire."""
    rng = random.Random(seed)
    gen = ExpiryGen(rng)
    redis_conn, hotkv_conn = RespConnection(redis_port, protocol), RespConnection(hotkv_port, protocol)
    probe = RespConnection(redis_port, 2)
    history: list[str] = []
    expired = 0
    hz = [conn.call(["CONFIG", "GET", "hz"])[1][1] for conn in (redis_conn, hotkv_conn)]
    try:
        for conn in (redis_conn, hotkv_conn):
            assert conn.call(["FLUSHALL"]) == ("+", b"OK")
            # active expiry once a second: on a slow machine too, a key met after its
            # deadline is still there to be expired by the command that meets it
            assert conn.call(["CONFIG", "SET", "hz", "1"]) == ("+", b"OK")
        for step in range(steps):
            soon = rng.random() < 0.15
            argv = gen.expiring() if soon else gen.command()
            if argv[0].upper() == "DBSIZE" or (
                    not soon and (lex_unspecified(argv, probe) or string_encoding(argv, probe))):
                continue
            hashtable = hash_order_unspecified(argv, probe)
            expected = redis_conn.call(argv)
            got = hotkv_conn.call(argv)
            if normalise(argv, expected, hashtable) != normalise(argv, got, hashtable):
                before = "\n    ".join(history[-30:])
                pytest.fail(
                    f"seed {seed} (focus {gen.focus}), RESP{protocol}, step {step}: {argv!r}\n"
                    f"  redis: {expected!r}\n  hotkv: {got!r}\n"
                    f"  the commands before it (latest last):\n    {before}",
                    pytrace=False,
                )
            history.append(f"{argv!r} -> {expected!r}")
            if soon:
                time.sleep(SETTLE_S)
                history.append(f"  (slept {SETTLE_S * 1000:.0f} ms)")
                expired += 1
        assert_same_data(redis_conn, hotkv_conn, probe, f"seed {seed} (RESP{protocol})")
        return expired
    finally:
        for conn, value in zip((redis_conn, hotkv_conn), hz, strict=True):
            conn.call(["CONFIG", "SET", "hz", value])
        for conn in (redis_conn, hotkv_conn, probe):
            conn.close()


@pytest.mark.parametrize("protocol", [2, 3], ids=["resp2", "resp3"])
@pytest.mark.parametrize("seed", DEFAULT_SEEDS)
def test_random_sequences_with_expired_keys_same_as_redis(
        reference: RedisServer, server: HotkvProcess, seed: int, protocol: int) -> None:
    assert run_seed(reference.port, server.port, protocol, seed) > STEPS // 20


@pytest.mark.slow
@pytest.mark.parametrize("protocol", [2, 3], ids=["resp2", "resp3"])
@pytest.mark.parametrize("seed", SLOW_SEEDS)
def test_many_random_sequences_with_expired_keys_same_as_redis(
        reference: RedisServer, server: HotkvProcess, seed: int, protocol: int) -> None:
    run_seed(reference.port, server.port, protocol, seed)
