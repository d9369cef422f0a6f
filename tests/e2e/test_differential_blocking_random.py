"""Seeded random differential test of the blocking commands: clients parked on BLPOP, BRPOP,
BLMOVE, BRPOPLPUSH, BLMPOP, BZPOPMIN, BZPOPMAX and BZMPOP while another client sends
test_differential_random's random commands, on a real redis-server 7 and on hotkv.

Each seed drives, on each server, four waiting clients and one writer over raw sockets, in
RESP2 or RESP3. A step either parks an idle waiter on a random blocking call (over the same
six keys the generator writes; served at once when its key has data), or sends the writer a
random command (now and then one to three of them in MULTI/EXEC), or releases a waiter
(CLIENT UNBLOCK, with TIMEOUT or ERROR) or closes it (a new one takes its place). After every
step the two servers must agree on the command's reply, on ``blocked_clients`` (INFO), and
on which waiters were answered and with what: a waiter's reply is read only once the count
says it was served (Redis serves a woken client before it answers the command that woke it,
and hotkv does the same), so nothing is timed. At the end the waiters left are released
with ``CLIENT UNBLOCK`` (a null reply each) and the whole data set is compared.

Left out (sent to neither server): what test_differential_random leaves out too (lex ranges
over mixed scores, OBJECT ENCODING of a string), and a command that stores over an existing
key: Redis 7.0 wakes no waiter when a list or sorted set replaces a value that existed
(ZUNIONSTORE, SORT ... STORE over a key that became a set while a client waited on it),
hotkv serves the waiter (docs/lists-and-sorted-sets.md, "Known differences").

The default run takes ``DEFAULT_SEEDS``; ``-m slow`` runs ``SLOW_SEEDS`` more
(``HOTKV_BLOCK_SEEDS=first:count`` picks others). A failure names the seed, the protocol,
the step and the commands before it.
"""

from __future__ import annotations

import os
import random
import select
import time
from typing import Any

import pytest

from e2e.test_blocking import WAITING, Peer, clients_field
from e2e.test_differential import RespConnection
from e2e.test_differential_random import (
    KEYS,
    Argv,
    Gen,
    assert_same_data,
    hash_order_unspecified,
    lex_unspecified,
    normalise,
    probe_free,
    same_exec,
    string_encoding,
)
from helpers import HotkvProcess, RedisServer

DEFAULT_SEEDS = range(1, 7)
_first, _, _count = os.environ.get("HOTKV_BLOCK_SEEDS", "3000:40").partition(":")
SLOW_SEEDS = range(int(_first), int(_first) + int(_count or 1))
STEPS = 250
WAITERS = 4


def _blocker(rng: random.Random) -> Argv:
    """One blocking call over the generator's keys (no timeout: CLIENT UNBLOCK ends it),
    most on the first two, so that waiters queue on one key."""
    key = rng.choice(KEYS[:2]) if rng.random() < 0.6 else rng.choice(KEYS)
    other = rng.choice(KEYS)
    side, side2 = rng.choice(["LEFT", "RIGHT"]), rng.choice(["LEFT", "RIGHT"])
    count = ["COUNT", str(rng.randint(1, 3))] if rng.random() < 0.5 else []
    return rng.choice([
        ["BLPOP", key, "0"],
        ["BLPOP", key, other, "0"],
        ["BRPOP", key, "0"],
        ["BLMOVE", key, other, side, side2, "0"],
        ["BRPOPLPUSH", key, other, "0"],
        ["BLMPOP", "0", "2", key, other, side, *count],
        ["BZPOPMIN", key, "0"],
        ["BZPOPMAX", key, other, "0"],
        ["BZMPOP", "0", "1", key, rng.choice(["MIN", "MAX"]), *count],
    ])


#: commands that write a whole new value over their destination (Redis's setKey), and where
#: that destination is in their arguments
_STORES = {"zunionstore": 1, "zinterstore": 1, "zdiffstore": 1, "zrangestore": 1,
           "sunionstore": 1, "sinterstore": 1, "sdiffstore": 1}


def _overwrites(argv: Argv, probe: RespConnection) -> bool:
    """The command would replace an existing key with a new value (see the docstring)."""
    name = argv[0].lower()
    upper = [a.upper() for a in argv]
    if name in _STORES and len(argv) > _STORES[name]:
        dest = argv[_STORES[name]]
    elif name in ("sort", "sort_ro") and "STORE" in upper[2:]:
        at = len(upper) - 1 - upper[::-1].index("STORE")
        if at + 1 >= len(argv):
            return False
        dest = argv[at + 1]
    else:
        return False
    return bool(probe.call(["EXISTS", dest]) == (":", 1))


def _sendable(argv: Argv) -> bool:
    """Not a blocking call or CLIENT (the waiters' business) from the writer."""
    return not argv[0].upper().startswith(("B", "CLIENT"))


def _queueable(argv: Argv) -> bool:
    """A command for a MULTI block: sendable, needing no probe (``probe_free``), and no
    store over a key (``_overwrites`` cannot see the data EXEC will meet)."""
    name = argv[0].lower()
    return _sendable(argv) and probe_free(argv) and not (
        name in _STORES or (name.startswith("sort") and "STORE" in (a.upper() for a in argv)))


class Waiter(Peer):
    """test_blocking's connection whose replies are read only when asked, with its client
    id (for CLIENT UNBLOCK) and whether it waits."""

    def __init__(self, port: int, protocol: int) -> None:
        super().__init__(port, protocol)
        self.send(["CLIENT", "ID"])
        self.id = self.read(5)[1]
        self.blocked = False


class Side:
    """One server's connections: the writer, the INFO probe and the waiters."""

    def __init__(self, port: int, protocol: int) -> None:
        self.port, self.protocol = port, protocol
        self.writer = RespConnection(port, protocol)
        self.info = Peer(port, 2)
        self.waiters = [Waiter(port, protocol) for _ in range(WAITERS)]

    def blocked_count(self) -> int:
        return clients_field(self.info, b"blocked_clients")

    def settle(self, before: int) -> int:
        """``blocked_clients`` once the server has taken a call just sent to a waiter: one
        more than ``before`` when it blocked, else what its answer left (a served BLMOVE
        may serve others). Any change is final (INFO runs before or after the call, never
        inside it); a reply seen with no change yet is followed by a fresh INFO, which the
        server then runs after the call."""
        deadline = time.monotonic() + 5
        while True:
            count = self.blocked_count()
            if count != before or time.monotonic() > deadline:
                return count
            if any(w.buf or select.select([w.sock], [], [], 0)[0]
                   for w in self.waiters if w.blocked):
                return self.blocked_count()
            time.sleep(0.001)

    def served(self, count: int) -> dict[int, Any]:
        """The replies of the ``count`` waiters just answered (served, or answered at once),
        by waiter; they are idle again."""
        out: dict[int, Any] = {}
        deadline = time.monotonic() + 5
        while len(out) < count and time.monotonic() < deadline:
            for i, waiter in enumerate(self.waiters):
                if waiter.blocked and i not in out:
                    reply = waiter.read(0.002)
                    if reply != WAITING:
                        out[i] = reply
        for i in out:
            self.waiters[i].blocked = False
        return out

    def replace(self, i: int) -> None:
        """Close waiter ``i`` and open a new one in its place."""
        self.waiters[i].close()
        self.waiters[i] = Waiter(self.port, self.protocol)

    def settle_down(self, count: int) -> int:
        """``blocked_clients`` once it has come down to ``count`` (a waiter's connection
        closed), or after 5 s."""
        deadline = time.monotonic() + 5
        while True:
            now = self.blocked_count()
            if now <= count or time.monotonic() > deadline:
                return now
            time.sleep(0.001)

    def close(self) -> None:
        for conn in (self.writer, self.info, *self.waiters):
            conn.close()


def run_seed(redis_port: int, hotkv_port: int, protocol: int, seed: int, steps: int = STEPS) -> int:
    """One seed's sequence to both servers; returns how many waiters were served."""
    rng = random.Random(seed)
    gen = Gen(rng)
    redis, hotkv = Side(redis_port, protocol), Side(hotkv_port, protocol)
    probe = RespConnection(redis_port, 2)
    history: list[str] = []
    served = 0

    def fail(step: int, what: str) -> None:
        before = "\n    ".join(history[-60:])
        types = {key: probe.call(["TYPE", key])[1].decode() for key in KEYS}
        pytest.fail(f"seed {seed}, RESP{protocol}, step {step}: {what}\n"
                    f"  the keys' types on redis-server: {types}\n"
                    f"  the steps before it (latest last):\n    {before}", pytrace=False)

    try:
        for side in (redis, hotkv):
            assert side.writer.call(["FLUSHALL"]) == ("+", b"OK")
        blocked = 0
        for step in range(steps):
            idle = [i for i, w in enumerate(redis.waiters) if not w.blocked]
            if idle and rng.random() < 0.3:
                i = rng.choice(idle)
                argv = _blocker(rng)
                counts = []
                for side in (redis, hotkv):
                    side.waiters[i].send(argv)
                    side.waiters[i].blocked = True
                    counts.append(side.settle(blocked))
                what = f"waiter {i} {argv!r}"
                pending = blocked + 1
            elif blocked and rng.random() < 0.04:
                # a waiter released by CLIENT UNBLOCK (a null, or an error), or gone
                i = rng.choice([i for i, w in enumerate(redis.waiters) if w.blocked])
                how = rng.choice(["", "TIMEOUT", "ERROR", "close"])
                what = f"waiter {i} {how or 'unblocked'}"
                if how == "close":
                    for side in (redis, hotkv):
                        side.replace(i)
                    counts = [side.settle_down(blocked - 1) for side in (redis, hotkv)]
                    pending = blocked - 1
                else:
                    for side in (redis, hotkv):
                        argv = ["CLIENT", "UNBLOCK", side.waiters[i].id, *([how] if how else [])]
                        assert side.writer.call(argv) == (":", 1)
                    counts = [side.blocked_count() for side in (redis, hotkv)]
                    pending = blocked
            else:
                if rng.random() < 0.05:
                    block = [gen.command() for _ in range(rng.randint(1, 3))]
                    if any(not _queueable(queued) for queued in block):
                        continue
                    replies = []
                    for side in (redis, hotkv):
                        assert side.writer.call(["MULTI"]) == ("+", b"OK")
                        for queued in block:
                            side.writer.call(queued)
                        replies.append(side.writer.call(["EXEC"]))
                    expected, got = replies
                    what = f"MULTI {block!r} EXEC -> {expected!r}"
                    if not same_exec(block, expected, got):
                        fail(step, f"MULTI {block!r} EXEC\n  redis: {expected!r}\n"
                                   f"  hotkv: {got!r}")
                else:
                    argv = gen.command()
                    if not _sendable(argv) or (
                            lex_unspecified(argv, probe) or string_encoding(argv, probe)
                            or _overwrites(argv, probe)):
                        continue
                    hashtable = hash_order_unspecified(argv, probe)
                    expected, got = redis.writer.call(argv), hotkv.writer.call(argv)
                    if normalise(argv, expected, hashtable) != normalise(argv, got, hashtable):
                        fail(step, f"{argv!r}\n  redis: {expected!r}\n  hotkv: {got!r}")
                    what = f"{argv!r} -> {expected!r}"
                counts = [side.blocked_count() for side in (redis, hotkv)]
                pending = blocked
            history.append(what)
            if counts[0] != counts[1]:
                fail(step, f"after {what}: blocked_clients redis {counts[0]}, hotkv {counts[1]}")
            if counts[0] < pending:
                woken = [side.served(pending - counts[0]) for side in (redis, hotkv)]
                if woken[0] != woken[1]:
                    fail(step, f"after {what}, the waiters answered\n  redis: {woken[0]!r}\n"
                               f"  hotkv: {woken[1]!r}")
                history.append(f"  answered {woken[0]!r}")
                served += len(woken[0])
            blocked = counts[0]
        for i, waiter in enumerate(redis.waiters):
            if waiter.blocked:
                replies = []
                for side in (redis, hotkv):
                    assert side.writer.call(["CLIENT", "UNBLOCK", side.waiters[i].id]) == (":", 1)
                    replies.append(side.waiters[i].read(5))
                    side.waiters[i].blocked = False
                if replies[0] != replies[1]:
                    fail(steps, f"waiter {i} unblocked\n  redis: {replies[0]!r}\n"
                                f"  hotkv: {replies[1]!r}")
        assert_same_data(redis.writer, hotkv.writer, probe, f"seed {seed} (RESP{protocol})")
        return served
    finally:
        for side in (redis, hotkv):
            side.close()
        probe.close()


@pytest.mark.parametrize("protocol", [2, 3], ids=["resp2", "resp3"])
@pytest.mark.parametrize("seed", DEFAULT_SEEDS)
def test_random_blocking_same_as_redis(reference: RedisServer, server: HotkvProcess, seed: int,
                                       protocol: int) -> None:
    run_seed(reference.port, server.port, protocol, seed)


@pytest.mark.slow
@pytest.mark.parametrize("protocol", [2, 3], ids=["resp2", "resp3"])
@pytest.mark.parametrize("seed", SLOW_SEEDS)
def test_many_random_blocking_sequences_same_as_redis(reference: RedisServer,
                                                      server: HotkvProcess, seed: int,
                                                      protocol: int) -> None:
    run_seed(reference.port, server.port, protocol, seed)
