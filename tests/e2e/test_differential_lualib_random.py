"""Seeded random calls of the libraries Redis gives scripts (cjson, cmsgpack, struct, bit,
redis.sha1hex/error_reply/status_reply), with random arguments, on a real redis-server 7
and on hotkv: every reply must be the same.

Each call draws a function and 0-4 arguments from values that reach their edges: nil,
booleans, whole and fractional numbers, infinities and NaN, 2^31/2^32/2^53, numeric and hex
strings, struct formats (alignment, sizes past 8, ``c0``, ``s``, bytes that are no option),
msgpack and JSON texts, NUL and high bytes, tables, functions and ``cjson.null``. The call
is made three ways: protected (``pcall``: the error text, named ``'?'``), as a value kept
in a local (the script's error with its line), and inside a table constructor (every
value it returned). Left out: ``-0`` (lupa hands Lua's -0 to Python as 0, documented in
docs/scripting.md); a failure's bytes that are no UTF-8 are compared as U+FFFD.

The default run takes ``DEFAULT_SEEDS`` seeds of ``CALLS`` calls; ``-m slow`` runs
``SLOW_SEEDS`` more (``HOTKV_LUALIB_DIFF_SEEDS=first:count``). A failure names the seed,
the script and both replies.
"""

from __future__ import annotations

import os
import random
import re
from collections.abc import Iterator
from typing import Any

import pytest

from e2e.test_differential import RespConnection
from helpers import HotkvProcess, RedisServer

DEFAULT_SEEDS = range(1, 7)
_first, _, _count = os.environ.get("HOTKV_LUALIB_DIFF_SEEDS", "2000:100").partition(":")
SLOW_SEEDS = range(int(_first), int(_first) + int(_count or 1))
CALLS = 150

FUNCTIONS = [
    "cjson.encode", "cjson.decode", "cmsgpack.pack", "cmsgpack.unpack", "cmsgpack.unpack_one",
    "cmsgpack.unpack_limit", "struct.pack", "struct.unpack", "struct.size", "bit.tobit",
    "bit.tohex", "bit.bnot", "bit.band", "bit.bor", "bit.bxor", "bit.lshift", "bit.rshift",
    "bit.arshift", "bit.rol", "bit.ror", "bit.bswap", "redis.sha1hex", "redis.error_reply",
    "redis.status_reply",
]
VALUES = [
    "nil", "true", "false", "0", "1", "-1", "1.5", "-2.5", "1e300", "-1e300", "1/0", "-1/0",
    "0/0", "2^31", "2^32", "2^53", "-2^31", "4294967295", "'x'", "''", "'abc'", "'10'",
    "' 0x10 '", "'1e2'", "'>d'", "'<i4'", "'!4 i'", "'!4 b i d'", "'!3'", "'bBhHlLT'",
    "'c3'", "'s'", "'c0'", "'i9'", "'i17'", "'i33'", "'fdx'", "'b c0'", "'\\0'",
    "'\\255\\254'", "string.rep('a', 300)", "{}", "{1, 2, 3}", "{a = 1}", "{1, {2, {3}}}",
    "{[1] = 1, [3] = 3}", "{[1.5] = 1}", "{cjson.null}", "cjson.null", "function() end",
    "cmsgpack.pack(1, 2, 3)", "cmsgpack.pack({1, 2})", "cmsgpack.pack('x')",
    "struct.pack('>d', 1.5)", "cjson.encode({a = {1, 2}})", "'[1,2'", "'{\"a\":1}'",
    "'\\145\\1'", "'\\204\\1\\2'", "'\\222\\0\\1'", "string.char(0xc1)",
    "string.char(0xd9, 5)", "string.char(0xcb)", "'\\147\\1\\2'", "'a\\r\\nb'",
]
#: the three ways a call is made ({f}: the function, {a}: its arguments)
FORMS = [
    "local ok, e = pcall({f}, {a}) if type(e) == 'table' then e = cjson.encode(e) end "
    "return {{tostring(ok), type(e), (type(e) == 'string' or type(e) == 'number') "
    "and tostring(e) or ''}}",
    "local v = {f}({a}) if type(v) == 'table' then return cjson.encode(v) end "
    "if type(v) == 'number' then return tostring(v) end return v",
    "return {{{f}({a})}}",
]


@pytest.fixture(scope="module")
def ports(reference: RedisServer, server: HotkvProcess) -> Iterator[tuple[int, int]]:
    yield reference.port, server.port


def same_sha(reply: Any) -> Any:
    """A reply as compared: a script's failure without its sha1, and an error's bytes that
    are no UTF-8 as U+FFFD at any depth (hotkv's error texts are UTF-8: a documented
    difference; through ``pcall`` the script sees the bytes themselves, compared as they
    are)."""
    if isinstance(reply, tuple) and reply[0] == "-":
        text = re.sub(rb"script: [0-9a-f]{40}", b"script: <sha>", reply[1])
        return ("-", text.decode("utf-8", "replace"))
    if isinstance(reply, tuple) and isinstance(reply[1], list):
        return (reply[0], [same_sha(item) for item in reply[1]])
    return reply


def run_seed(redis_port: int, hotkv_port: int, protocol: int, seed: int, calls: int) -> None:
    rng = random.Random(seed)
    conns = [RespConnection(port, protocol) for port in (redis_port, hotkv_port)]
    try:
        for step in range(calls):
            args = ", ".join(rng.choice(VALUES) for _ in range(rng.randint(0, 4)))
            script = rng.choice(FORMS).format(f=rng.choice(FUNCTIONS), a=args)
            expected, got = (same_sha(conn.call(["EVAL", script, "0"])) for conn in conns)
            if expected != got:
                pytest.fail(f"seed {seed}, RESP{protocol}, call {step}: {script}\n"
                            f"  redis: {expected!r}\n  hotkv: {got!r}", pytrace=False)
    finally:
        for conn in conns:
            conn.close()


@pytest.mark.parametrize("protocol", [2, 3], ids=["resp2", "resp3"])
@pytest.mark.parametrize("seed", DEFAULT_SEEDS)
def test_random_library_calls_as_redis(ports: tuple[int, int], seed: int, protocol: int) -> None:
    run_seed(*ports, protocol, seed, CALLS)


@pytest.mark.slow
@pytest.mark.parametrize("protocol", [2, 3], ids=["resp2", "resp3"])
@pytest.mark.parametrize("seed", SLOW_SEEDS)
def test_many_random_library_calls_as_redis(ports: tuple[int, int], seed: int,
                                            protocol: int) -> None:
    run_seed(*ports, protocol, seed, CALLS * 2)
