"""Random command sequences as a user restricted by key patterns, against redis-server 7.

Both servers get the same user, allowed every command but the dangerous ones on some keys
of test_differential_random's six: ``~k1 ~k2`` (read and write), ``%R~k3`` (read only),
``%W~k4`` (write only), nothing on ``k5`` and ``k6``. Each seed sends that generator's
commands (every data-type family, wrong calls included) on a connection authenticated as
that user; every reply, NOPERM refusals included, must be redis-server's. This checks which
keys each command is found to name (key specs, numkeys counts read as Redis reads them),
with which access (read, write, both), and that a refused call changes nothing.

Left out: DBSIZE, KEYS, SCAN and RANDOMKEY, which in hotkv see only the keys the user may
read (docs/security.md, "Listing is confined too": Redis lets them see every key), and the
generator's other exclusions (lex ranges over mixed scores, OBJECT ENCODING of a string).

The default run takes ``DEFAULT_SEEDS``; ``-m slow`` runs ``SLOW_SEEDS`` more
(``HOTKV_ACL_DIFF_SEEDS=first:count``).
"""

from __future__ import annotations

import os
import random
from collections.abc import Iterator

import pytest

from e2e.test_differential import RespConnection
from e2e.test_differential_random import (
    Gen,
    assert_same_data,
    hash_order_unspecified,
    lex_unspecified,
    normalise,
    string_encoding,
)
from helpers import HotkvProcess, RedisServer

DEFAULT_SEEDS = range(1, 11)
_first, _, _count = os.environ.get("HOTKV_ACL_DIFF_SEEDS", "4000:150").partition(":")
SLOW_SEEDS = range(int(_first), int(_first) + int(_count or 1))
STEPS = 250

USER = ["ACL", "SETUSER", "tenant", "reset", "on", "nopass", "~k1", "~k2", "%R~k3", "%W~k4",
        "+@all", "-@dangerous"]
#: hotkv confines these to the keys the user may read (a documented difference)
LISTING = {"DBSIZE", "KEYS", "SCAN", "RANDOMKEY"}

#: the calls the random sequences found, kept as fixed steps: a numkeys count that makes
#: the call's keys invalid leaves no key to check, even the destination the other key spec
#: names (the command then answers its own error); a count is read as C's atoi reads it,
#: and one read so loosely (" 1", "1.5", "+1") leaves the keys without access flags, so a
#: read-only or write-only pattern passes any of them (the command then refuses the count)
FOUND: list[list[str]] = [
    ["ZDIFFSTORE", "k2", "1.5", "k4", "k4", "k4"],
    ["ZUNIONSTORE", "k3", " 1", "k1"],
    ["ZUNIONSTORE", "k4", " 1", "k3"],
    ["LMPOP", " 1", "k3", "LEFT"],
    ["BZMPOP", "0.01", "+1", "k3", "MIN"],
    ["EVAL", "return 1", "+1", "k4"],
    ["ZINTERCARD", " 1", "k4"],
    ["SINTERCARD", "01", "k3"],
    ["ZUNIONSTORE", "k5", " 1", "k4"],
    ["ZINTERSTORE", "k3", "+1", "k1"],
    ["EVALSHA", "e0e1f9fabfc9d4800c877a703b823ac0578ff8db", " 1", "k3"],
    ["COMMAND", "GETKEYSANDFLAGS", "ZUNIONSTORE", "k3", " 1", "k4"],
    ["ZINTERSTORE", "k3", "-1", "k3", "k2"],
    ["ZUNIONSTORE", "k6", "3", "k6"],
    ["ZUNIONSTORE", "k5", "0", "k1"],
    ["ZDIFFSTORE", "k5", "x", "k1"],
    ["ZINTERSTORE", "k3", "x", "k6", "k5", "WEIGHTS", "1", "2"],
    ["ZUNIONSTORE", "k5", " 1", "k1"],
    ["ZUNIONSTORE", "k5", "+1", "k1"],
    ["ZUNIONSTORE", "k1", "1x", "k5"],
    ["COMMAND", "GETKEYS", "ZUNIONSTORE", "dst", " 1", "k1"],
    ["COMMAND", "GETKEYS", "ZUNIONSTORE", "dst", "0", "k1"],
    ["EVAL", "return 1", " 1", "k5"],
    ["SINTERCARD", "01", "k6"],
]


@pytest.fixture(scope="module")
def tenant_ports(reference: RedisServer, server: HotkvProcess) -> Iterator[tuple[int, int]]:
    for port in (reference.port, server.port):
        admin = RespConnection(port, 2)
        assert admin.call(USER) == ("+", b"OK")
        admin.close()
    yield reference.port, server.port
    for port in (reference.port, server.port):
        admin = RespConnection(port, 2)
        admin.call(["ACL", "DELUSER", "tenant"])
        admin.close()


def tenant(port: int, protocol: int) -> RespConnection:
    conn = RespConnection(port, protocol)
    assert conn.call(["AUTH", "tenant", "any"]) == ("+", b"OK")
    return conn


def run_seed(redis_port: int, hotkv_port: int, protocol: int, seed: int, steps: int) -> int:
    rng = random.Random(seed)
    gen = Gen(rng)
    admins = [RespConnection(port, 2) for port in (redis_port, hotkv_port)]
    for admin in admins:
        assert admin.call(["FLUSHALL"]) == ("+", b"OK")
    redis_conn, hotkv_conn = tenant(redis_port, protocol), tenant(hotkv_port, protocol)
    probe = admins[0]
    history: list[str] = []
    count = 0
    try:
        for step in range(steps):
            argv = gen.command()
            if argv[0].upper() in LISTING or lex_unspecified(argv, probe) or string_encoding(
                    argv, probe):
                continue
            hashtable = hash_order_unspecified(argv, probe)
            expected = normalise(argv, redis_conn.call(argv), hashtable)
            got = normalise(argv, hotkv_conn.call(argv), hashtable)
            if expected != got:
                before = "\n    ".join(history[-20:])
                pytest.fail(f"seed {seed} (focus {gen.focus}), RESP{protocol}, step {step}: "
                            f"{argv!r}\n  redis: {expected!r}\n  hotkv: {got!r}\n"
                            f"  the commands before it (latest last):\n    {before}",
                            pytrace=False)
            history.append(f"{argv!r} -> {expected!r}")
            count += 1
        assert_same_data(admins[0], admins[1], probe, f"seed {seed} (RESP{protocol})")
        return count
    finally:
        for conn in (redis_conn, hotkv_conn, *admins):
            conn.close()


@pytest.mark.parametrize("protocol", [2, 3], ids=["resp2", "resp3"])
def test_what_the_random_sequences_found(tenant_ports: tuple[int, int], protocol: int) -> None:
    conns = [tenant(port, protocol) for port in tenant_ports]
    admins = [RespConnection(port, protocol) for port in tenant_ports]
    try:
        for argv in FOUND:
            replies = [conn.call(argv) for conn in conns]
            assert replies[1] == replies[0], argv
            # ACL DRYRUN judges the call as the tenant's own call was judged
            dry = [admin.call(["ACL", "DRYRUN", "tenant", *argv]) for admin in admins]
            assert dry[1] == dry[0], ("ACL DRYRUN", argv)
    finally:
        for conn in (*conns, *admins):
            conn.close()


@pytest.mark.parametrize("protocol", [2, 3], ids=["resp2", "resp3"])
@pytest.mark.parametrize("seed", DEFAULT_SEEDS)
def test_random_sequences_as_a_restricted_user_as_redis(tenant_ports: tuple[int, int],
                                                        seed: int, protocol: int) -> None:
    assert run_seed(*tenant_ports, protocol, seed, STEPS) > STEPS // 2


@pytest.mark.slow
@pytest.mark.parametrize("protocol", [2, 3], ids=["resp2", "resp3"])
@pytest.mark.parametrize("seed", SLOW_SEEDS)
def test_many_random_sequences_as_a_restricted_user_as_redis(tenant_ports: tuple[int, int],
                                                             seed: int, protocol: int) -> None:
    run_seed(*tenant_ports, protocol, seed, STEPS)
