"""Seeded random JSON texts decoded by ``cjson.decode`` in a script, on a real redis-server 7
and on hotkv: every result must be the same.

A text is drawn from JSON's grammar with lua-cjson's liberties and its near misses: numbers
in every form strtod reads (``+1``, ``01``, ``1.``, hex, ``Inf``, ``NaN``, out of range) and
some it does not, strings with escapes (valid, unknown, ``\\u`` with surrogate pairs, lone
or reversed surrogates), raw control and high bytes, ``true``/``false``/``null`` and
misspellings of them, nested arrays and objects with duplicate keys, odd blanks; a third of
the texts are then damaged (a byte dropped, doubled, replaced or a NUL put in).

Each text is decoded by one of three scripts (RESP2 and RESP3 both):

* ``SHOW``: the decoded value written out by a Lua walk (types, numbers as ``%.17g``, strings
  ``%q``, table keys sorted), or ``E`` and the error message ``pcall`` caught;
* ``ROUND``: ``cjson.encode({cjson.decode(text)})``, Redis's encoder walking the tables the
  decoder built (so their key order must be Redis's too; the value goes in a table, as a
  bare -0 handed to cjson.encode arrives as 0, a documented limit: docs/scripting.md);
* ``RAISE``: the decode unprotected: the script's failure as the client sees it.

The default run takes ``DEFAULT_SEEDS`` seeds of ``TEXTS`` texts; ``-m slow`` runs
``SLOW_SEEDS`` more (``HOTKV_CJSON_DIFF_SEEDS=first:count``). A failure names the seed,
the text and both replies.
"""

from __future__ import annotations

import os
import random
from collections.abc import Iterator

import pytest

from e2e.test_differential import RespConnection
from helpers import HotkvProcess, RedisServer

DEFAULT_SEEDS = range(1, 9)
_first, _, _count = os.environ.get("HOTKV_CJSON_DIFF_SEEDS", "3000:200").partition(":")
SLOW_SEEDS = range(int(_first), int(_first) + int(_count or 1))
TEXTS = 120

SHOW = """
local function show(v)
  local t = type(v)
  if t == 'table' then
    local keys = {}
    for k in pairs(v) do keys[#keys + 1] = k end
    table.sort(keys, function(a, b)
      if type(a) == type(b) then return a < b end
      return type(a) < type(b)
    end)
    local out = {}
    for _, k in ipairs(keys) do out[#out + 1] = show(k) .. '=' .. show(v[k]) end
    return '{' .. table.concat(out, ',') .. '}'
  elseif t == 'number' then
    return 'n' .. string.format('%.17g', v)
  elseif t == 'string' then
    return 's' .. string.format('%q', v)
  end
  return t .. ':' .. tostring(v)
end
local ok, value = pcall(cjson.decode, ARGV[1])
if not ok then return 'E' .. value end
return show(value)
"""
ROUND = "return cjson.encode({cjson.decode(ARGV[1])})"
RAISE = "local v = cjson.decode(ARGV[1]) return type(v)"
#: (name, script), SHOW drawn most often
SCRIPTS = [("SHOW", SHOW), ("SHOW", SHOW), ("SHOW", SHOW), ("ROUND", ROUND), ("RAISE", RAISE)]

NUMBERS = ["0", "-0", "1", "-1", "42", "3.25", "-0.5", "1e3", "1E-3", "2.5e+2", "+1", "01",
           "-01", "1.", "-.5", "0x1F", "0X10", "0x1p3", "-0x.8", "0x", "Inf", "-Infinity",
           "infinity", "NaN", "-nan", "nan(7)", "1e400", "-1e400", "1e-400",
           "12345678901234567890", "0.1", "1e", "1e+", "-", "+", "--1", "+-2", ".5", "1_000",
           "9007199254740993", "4.9e-324"]
WORDS = ["true", "false", "null", "tru", "fals", "nul", "True", "NULL", "nulls", "truex"]
CHARS = ["a", "b", "z", " ", "~", "\\\\", '\\"', "\\/", "\\b", "\\f", "\\n", "\\r", "\\t",
         "\\u0041", "\\u00e9", "\\u20ac", "\\ud83d\\ude00", "\\u0000", "\\ud800", "\\udc00",
         "\\ud800\\u0041", "\\u12", "\\uZZZZ", "\\x", "\\'", "\t", "\x01", "\x7f", "é", "\u20ac"]
BLANKS = ["", "", "", " ", "\t", "\n", "\r\n", "  "]


class JsonGen:
    """Random JSON-ish texts (see the module docstring)."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def blank(self) -> str:
        return self.rng.choice(BLANKS)

    def string(self) -> str:
        return '"' + "".join(self.rng.choice(CHARS) for _ in range(self.rng.randint(0, 5))) + '"'

    def value(self, depth: int) -> str:
        roll = self.rng.random()
        if depth < 4 and roll < 0.3:
            items = [self.blank() + self.value(depth + 1) + self.blank()
                     for _ in range(self.rng.randint(0, 4))]
            return "[" + ",".join(items) + "]"
        if depth < 4 and roll < 0.55:
            keys = [self.string() for _ in range(self.rng.randint(0, 4))]
            if keys and self.rng.random() < 0.2:
                keys.append(self.rng.choice(keys))  # a duplicate key: the last value wins
            pairs = [self.blank() + key + self.blank() + ":" + self.blank() + self.value(depth + 1)
                     for key in keys]
            return "{" + ",".join(pairs) + self.blank() + "}"
        if roll < 0.75:
            return self.rng.choice(NUMBERS)
        if roll < 0.9:
            return self.string()
        return self.rng.choice(WORDS)

    def text(self) -> bytes:
        data = (self.blank() + self.value(0) + self.blank()).encode("utf-8")
        if self.rng.random() < 0.33 and data:
            at = self.rng.randrange(len(data))
            how = self.rng.randrange(4)
            if how == 0:
                data = data[:at] + data[at + 1 :]
            elif how == 1:
                data = data[:at] + data[at : at + 1] * 2 + data[at + 1 :]
            elif how == 2:
                data = data[:at] + bytes([self.rng.choice(b'[]{},:"\\x0-.e\xff')]) + data[at + 1 :]
            else:
                data = data[:at] + b"\x00" + data[at:]
        return data


@pytest.fixture(scope="module")
def ports(reference: RedisServer, server: HotkvProcess) -> Iterator[tuple[int, int]]:
    yield reference.port, server.port


def run_seed(redis_port: int, hotkv_port: int, protocol: int, seed: int, texts: int) -> None:
    rng = random.Random(seed)
    gen = JsonGen(rng)
    conns = [RespConnection(port, protocol) for port in (redis_port, hotkv_port)]
    try:
        for step in range(texts):
            text = gen.text()
            name, script = rng.choice(SCRIPTS)
            argv: list[str | bytes] = ["EVAL", script, "0", text]
            expected, got = (conn.call(argv) for conn in conns)
            if expected != got:
                pytest.fail(f"seed {seed}, RESP{protocol}, text {step}: {text!r} ({name})"
                            f"\n  redis: {expected!r}\n  hotkv: {got!r}", pytrace=False)
    finally:
        for conn in conns:
            conn.close()


@pytest.mark.parametrize("protocol", [2, 3], ids=["resp2", "resp3"])
@pytest.mark.parametrize("seed", DEFAULT_SEEDS)
def test_random_json_texts_decode_as_redis(ports: tuple[int, int], seed: int,
                                           protocol: int) -> None:
    run_seed(*ports, protocol, seed, TEXTS)


@pytest.mark.slow
@pytest.mark.parametrize("protocol", [2, 3], ids=["resp2", "resp3"])
@pytest.mark.parametrize("seed", SLOW_SEEDS)
def test_many_random_json_texts_decode_as_redis(ports: tuple[int, int], seed: int,
                                                protocol: int) -> None:
    run_seed(*ports, protocol, seed, TEXTS * 2)
