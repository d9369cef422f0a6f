"""Seeded random differential test of scripts: the commands of test_differential_random's
generator, each one called from inside a script, sent to a real redis-server 7 and to
hotkv; every reply compared exactly, then the whole data set.

A step draws a command (the same families, wrong calls and all) and one of the ways a
script calls it, all as ``EVAL <script> 0 <the command's words>``:

* ``return redis.pcall(unpack(ARGV))``: the reply turned into a Lua value and back by the
  RESP2 rules a script starts with; an error reply comes back as an error table;
* ``redis.setresp(3) return redis.pcall(unpack(ARGV))``: the RESP3 conversion (maps, sets,
  doubles, booleans, nulls) into Lua and back to the client's protocol;
* ``return redis.call(unpack(ARGV))``: an error reply raised instead, so the client gets
  the script's failure (``<error> script: <sha>, on @user_script:1.``);
* ``local r = redis.pcall(unpack(ARGV)) return type(r)``: the Lua type the reply became;
* ``local ok, e = pcall(redis.call, unpack(ARGV)) ...``: an error reply caught by Lua's own
  ``pcall`` (the script sees the error's text);
* ``EVAL_RO`` with ``redis.pcall``: a write command refused in a read-only script;
* the words that Lua reads as numbers (``tonumber``) sent as Lua numbers, which a script's
  call turns into text as Redis does (``%.17g``): all but ``-0``, which arrives as ``0``
  (lupa hands a whole Lua number to Python as an integer; docs/scripting.md).

Each seed runs in RESP2 and RESP3. Compared as test_differential_random compares (sets and
the hash reads of a ``hashtable``-encoded hash sorted, deadlines as "some deadline"), and a
map or set that a script built is compared as sorted items: its order is that of the Lua
table it went through. Left out as there: lex ranges over mixed scores, OBJECT ENCODING of
a string.

The default run takes ``DEFAULT_SEEDS`` seeds of 150 steps; ``-m slow`` runs
``SLOW_SEEDS`` more of 400 (``HOTKV_SCRIPT_DIFF_SEEDS=first:count`` picks others). A
failure names the seed, the protocol, the step, the script, the command and both replies.
"""

from __future__ import annotations

import os
import random
from typing import Any

import pytest

from e2e.test_differential import RespConnection
from e2e.test_differential_random import (
    Argv,
    Gen,
    assert_same_data,
    hash_order_unspecified,
    lex_unspecified,
    normalise,
    pairs,
    string_encoding,
)
from helpers import HotkvProcess, RedisServer

DEFAULT_SEEDS = range(1, 21)
_first, _, _count = os.environ.get("HOTKV_SCRIPT_DIFF_SEEDS", "5000:200").partition(":")
SLOW_SEEDS = range(int(_first), int(_first) + int(_count or 1))

PCALL = "return redis.pcall(unpack(ARGV))"
PCALL_RESP3 = "redis.setresp(3) return redis.pcall(unpack(ARGV))"
CALL = "return redis.call(unpack(ARGV))"
LUA_TYPE = "local r = redis.pcall(unpack(ARGV)) return type(r)"
NUMBERS = ("local a = {} for i, v in ipairs(ARGV) do a[i] = v ~= '-0' and tonumber(v) or v end "
           "return redis.pcall(unpack(a))")
CAUGHT = ("local ok, e = pcall(redis.call, unpack(ARGV)) "
          "if ok then return {'ok', type(e)} end return {'caught', e}")
#: (the command that runs it, the script)
FORMS = [("EVAL", PCALL), ("EVAL", PCALL), ("EVAL", PCALL_RESP3), ("EVAL", PCALL_RESP3),
         ("EVAL", CALL), ("EVAL", LUA_TYPE), ("EVAL", NUMBERS), ("EVAL", CAUGHT),
         ("EVAL_RO", PCALL)]


def compared(argv: Argv, script: str, reply: Any, hashtable: bool) -> Any:
    """A script's reply as it is compared (see the module docstring)."""
    if script in (LUA_TYPE, CAUGHT):
        return reply  # a Lua type's name, or what Lua's pcall caught
    if script == PCALL_RESP3:
        if reply[0] in "%~" and reply[1] is not None:
            items = reply[1]
            return (reply[0], pairs(items) if reply[0] == "%" else sorted(items))
        if argv[0].lower() == "hgetall":
            hashtable = True  # a map through a Lua table, flat for RESP2: the table's order
    return normalise(argv, reply, hashtable)


def run_seed(redis_port: int, hotkv_port: int, protocol: int, seed: int, steps: int) -> int:
    """One seed's scripts to both servers; returns how many replies were compared."""
    rng = random.Random(seed)
    gen = Gen(rng)
    redis_conn, hotkv_conn = RespConnection(redis_port, protocol), RespConnection(hotkv_port, protocol)
    probe = RespConnection(redis_port, 2)
    history: list[str] = []
    count = 0
    try:
        for conn in (redis_conn, hotkv_conn):
            assert conn.call(["FLUSHALL"]) == ("+", b"OK")
            assert conn.call(["SCRIPT", "FLUSH"]) == ("+", b"OK")
        for step in range(steps):
            argv = gen.command()
            if lex_unspecified(argv, probe) or string_encoding(argv, probe):
                continue
            command, script = rng.choice(FORMS)
            hashtable = hash_order_unspecified(argv, probe)
            request = [command, script, "0", *argv]
            expected = compared(argv, script, redis_conn.call(request), hashtable)
            got = compared(argv, script, hotkv_conn.call(request), hashtable)
            if expected != got:
                before = "\n    ".join(history[-20:])
                pytest.fail(
                    f"seed {seed} (focus {gen.focus}), RESP{protocol}, step {step}: "
                    f"{command} {script!r} with {argv!r}\n  redis: {expected!r}\n  hotkv: {got!r}\n"
                    f"  the steps before it (latest last):\n    {before}",
                    pytrace=False,
                )
            history.append(f"{command} {script!r} {argv!r} -> {expected!r}")
            count += 1
        assert_same_data(redis_conn, hotkv_conn, probe, f"seed {seed} (RESP{protocol})")
        return count
    finally:
        for conn in (redis_conn, hotkv_conn, probe):
            conn.close()


@pytest.mark.parametrize("protocol", [2, 3], ids=["resp2", "resp3"])
@pytest.mark.parametrize("seed", DEFAULT_SEEDS)
def test_random_commands_from_scripts_same_as_redis(reference: RedisServer, server: HotkvProcess,
                                                    seed: int, protocol: int) -> None:
    assert run_seed(reference.port, server.port, protocol, seed, 150) > 75


@pytest.mark.slow
@pytest.mark.parametrize("protocol", [2, 3], ids=["resp2", "resp3"])
@pytest.mark.parametrize("seed", SLOW_SEEDS)
def test_many_random_commands_from_scripts_same_as_redis(reference: RedisServer,
                                                         server: HotkvProcess, seed: int,
                                                         protocol: int) -> None:
    run_seed(reference.port, server.port, protocol, seed, 400)
