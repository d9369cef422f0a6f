"""Seeded random differential test: random command sequences to a real redis-server 7 and to
hotkv, every reply compared exactly, then the whole data set.

Each seed draws a sequence of commands over a small key space (six keys, small alphabets of
members, fields, values and scores, so that collisions, type clashes and emptied keys are
common) from the string, key, hash, list, set and sorted-set families, with a fraction of
deliberately wrong calls (bad integers and floats, wrong arity, unknown options, WRONGTYPE).
The same sequence goes, one command at a time and interleaved, to both servers over raw
sockets (test_differential.py's parser, which keeps every RESP type: simple vs bulk string,
null bulk vs null array, map vs array, the full error text), in RESP2 and in RESP3.

Compared exactly, except:

* SMEMBERS, SINTER, SUNION, SDIFF: a set's order is its hash table's, so sorted;
* TTL/PTTL: only "no key" (-2), "no deadline" (-1) or "some deadline"; every deadline the
  generator sets is long (EXPIRE 100000 ...), so none passes during a run;
* lex ranges (ZRANGEBYLEX, ZLEXCOUNT, ZREMRANGEBYLEX, ZRANGE ... BYLEX ...) on a sorted set
  whose scores are not all equal are left out of the run (sent to neither server): Redis
  documents their result as unspecified there.

After each sequence the data sets are compared: the keys of a whole SCAN walk, then every
key's TYPE, whether it has a deadline, and its value (GET, HGETALL, LRANGE, sorted SMEMBERS,
ZRANGE WITHSCORES).

Left out of the generator because hotkv differs from Redis 7.0 on purpose
(docs/lists-and-sorted-sets.md, docs/data-types.md): ZRANK/ZREVRANK's WITHSCORE (Redis 7.2;
Redis 7.0 rejects the extra argument), OBJECT ENCODING of a string (hotkv decides it as SET
would), COPY ... DB n;
and the commands whose replies are random (SPOP, SRANDMEMBER, HRANDFIELD, ZRANDMEMBER).

Ten seeds run again with encoding limits small enough that the few members convert hashes,
sets and sorted sets (``SMALL_LIMITS``, set on both servers with CONFIG SET).

The default run takes ``DEFAULT_SEEDS`` seeds of 250 commands in each protocol; ``-m slow``
runs ``SLOW_SEEDS`` more, of 500 commands. ``HOTKV_DIFF_SEEDS=first:count`` (with ``-m slow``)
picks other seeds, ``HOTKV_DIFF_STEPS`` the length of a sequence. A failure names the seed, the protocol, the
step, the command, both replies and the commands before it.
"""

from __future__ import annotations

import os
import random
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from e2e.test_differential import RespConnection, Step, run_scenario, scan_walk
from helpers import HotkvProcess, RedisServer

DEFAULT_SEEDS = range(1, 101)
_first, _, _count = os.environ.get("HOTKV_DIFF_SEEDS", "1000:400").partition(":")
SLOW_SEEDS = range(int(_first), int(_first) + int(_count or 1))
STEPS = int(os.environ.get("HOTKV_DIFF_STEPS", "250"))
SLOW_STEPS = int(os.environ.get("HOTKV_DIFF_STEPS", "500"))

KEYS = ["k1", "k2", "k3", "k4", "k5", "k6"]
MEMBERS = ["a", "b", "c", "d", "e", "1", "2", "10", "-1"]
VALUES = ["", "0", "1", "-3", "10", "x", "ab", "abc", "bca", "3.5", "a b", "1", "5",
          # numbers as text that INCR, INCRBYFLOAT and the float parsers read one way or other
          "007", "-0", "+1", " 1", "1e2", "0x10", "9223372036854775807", "-9223372036854775808",
          "1.5e300", "inf", "\x00", "a\x00b", "é"]
SCORES = ["0", "1", "1", "2", "2", "-1", "0.5", "1.5", "2.5", "10", "-0", "1e3", "+inf", "-inf",
          "3", "0.1", "-2.75", "1e-5", "123456789.125", "3.0e2"]
BAD_INTS = ["x", "1.5", "", "9223372036854775808", " 1", "0x1", "1e3", "-"]
BAD_FLOATS = ["abc", "nan", "", "1e400", "1.2.3", "inf x", "--1"]
TOKENS = ["x", "-1", "0", "", "NX", "LIMIT", "WITHSCORES", "+inf", "(1", "[a", "COUNT",
          "9223372036854775808", "1.5", "k1", "REV", "BYSCORE"]
LEX_BOUNDS = ["-", "+", "[a", "(a", "[b", "(c", "[d", "(e", "[1", "(10", "[", "("]
BAD_LEX = ["a", "b", "", "1"]

Argv = list[str]
#: how often each family comes up outside the focus (the sorted sets have the most commands)
WEIGHTS = [1.0, 0.6, 1.0, 1.2, 1.0, 2.0]


class Gen:
    """Draws one random command at a time; ``focus`` is the family most of them come from."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.families: dict[str, Callable[[], Argv]] = {
            "string": self.string, "key": self.key, "hash": self.hash,
            "list": self.list, "set": self.set, "zset": self.zset,
        }
        self.focus = rng.choice(list(self.families))
        self.family = self.focus
        # each family keeps to a few keys of its own most of the time (WRONGTYPE would
        # otherwise answer half of all commands); the focus family has three
        order = rng.sample(KEYS, len(KEYS))
        typed = [name for name in self.families if name != "key"]
        self.home = {name: [order[i], order[(i + 1) % len(order)]] for i, name in enumerate(typed)}
        self.home["key"] = KEYS
        self.home[self.focus] = [*self.home[self.focus], order[-1]]

    # --- arguments ------------------------------------------------------------------------

    def p(self, probability: float) -> bool:
        return self.rng.random() < probability

    def k(self) -> str:
        if self.family != "key" and self.p(0.8):
            return self.rng.choice(self.home[self.family])
        return self.rng.choice(KEYS)

    def ks(self, low: int = 1, high: int = 3) -> list[str]:
        return [self.k() for _ in range(self.rng.randint(low, high))]

    def m(self) -> str:
        return self.rng.choice(MEMBERS)

    def ms(self, low: int = 1, high: int = 3) -> list[str]:
        return [self.m() for _ in range(self.rng.randint(low, high))]

    def v(self) -> str:
        return self.rng.choice(VALUES)

    def i(self, low: int = -3, high: int = 6, bad: float = 0.04) -> str:
        if self.p(bad):
            return self.rng.choice(BAD_INTS)
        if self.p(0.03):
            return self.rng.choice(["9223372036854775807", "-9223372036854775808", "100"])
        return str(self.rng.randint(low, high))

    def f(self, bad: float = 0.04) -> str:
        if self.p(bad):
            return self.rng.choice(BAD_FLOATS)
        return self.rng.choice(SCORES)

    def score_bound(self) -> str:
        if self.p(0.04):
            return self.rng.choice(["[1", "x", "(", "((1", "nan"])
        bound = self.rng.choice(SCORES)
        return "(" + bound if self.p(0.35) else bound

    def lex_bound(self) -> str:
        return self.rng.choice(BAD_LEX if self.p(0.04) else LEX_BOUNDS)

    def one(self, *choices: str) -> str:
        return self.rng.choice(choices)

    def limit(self) -> list[str]:
        return ["LIMIT", self.i(-1, 3), self.i(-1, 4)] if self.p(0.3) else []

    def ttl(self) -> list[str]:
        return [self.one("EX", "PX", "EXAT", "PXAT"),
                self.one("100000", "200000", "4102444800", "4102444800000")] if self.p(0.2) else []

    # --- the families ---------------------------------------------------------------------

    def string(self) -> Argv:
        k, r = self.k(), self.rng.randrange(20)
        if r == 0:
            opts = []
            if self.p(0.3):
                opts.append(self.one("NX", "XX"))
            if self.p(0.3):
                opts.append("GET")
            if self.p(0.2):
                opts.append("KEEPTTL")
            elif self.p(0.25):
                opts += [self.one("EX", "PX"), self.one("100000", "200000000", "0", "-5", "x")]
            self.rng.shuffle(opts)
            return ["SET", k, self.v(), *opts]
        if r == 1:
            return ["GETSET", k, self.v()]
        if r == 2:
            return ["APPEND", k, self.v()]
        if r == 3:
            return [self.one("INCR", "DECR"), k]
        if r == 4:
            return [self.one("INCRBY", "DECRBY"), k, self.i(-5, 10)]
        if r == 5:
            return ["INCRBYFLOAT", k, self.f()]
        if r == 6:
            return ["SETRANGE", k, self.i(-1, 8), self.v()]
        if r == 7:
            return ["GETRANGE", k, self.i(-8, 8), self.i(-8, 8)]
        if r == 8:
            return ["STRLEN", k]
        if r == 9:
            return ["GET", k]
        if r == 10:
            return ["MSET", *[x for _ in range(self.rng.randint(1, 3)) for x in (self.k(), self.v())]]
        if r == 11:
            return ["MGET", *self.ks(1, 4)]
        if r == 12:
            return ["MSETNX", *[x for _ in range(self.rng.randint(1, 3)) for x in (self.k(), self.v())]]
        if r == 13:
            return ["GETDEL", k]
        if r == 14:
            opts = []
            if self.p(0.3):
                opts.append("LEN")
            if self.p(0.4):
                opts.append("IDX")
            if self.p(0.3):
                opts += ["MINMATCHLEN", self.i(-1, 3)]
            if self.p(0.3):
                opts.append("WITHMATCHLEN")
            self.rng.shuffle(opts)
            return ["LCS", k, self.k(), *opts]
        if r == 15:
            return ["GETEX", k, *self.rng.choice([[], ["PERSIST"], ["EX", "100000"], ["PX", "0"]])]
        if r == 16:
            return ["SETNX", k, self.v()]
        if r == 17:
            return ["SETEX", k, self.one("100000", "0", "-1", "x"), self.v()]
        return ["SET", k, self.v()]

    def key(self) -> Argv:
        r = self.rng.randrange(14)
        if r == 0:
            return ["DEL", *self.ks(1, 3)]
        if r == 1:
            return ["EXISTS", *self.ks(1, 3)]
        if r == 2:
            return ["TYPE", self.k()]
        if r == 3:
            return ["RENAME", self.k(), self.k()]
        if r == 4:
            return ["RENAMENX", self.k(), self.k()]
        if r == 5:
            return ["COPY", self.k(), self.k(), *(["REPLACE"] if self.p(0.5) else [])]
        if r == 6:
            return ["PERSIST", self.k()]
        if r == 7:
            flag = [self.one("NX", "XX", "GT", "LT")] if self.p(0.4) else []
            if flag and flag[0] in ("GT", "LT"):
                # a deadline a few ms after the same relative one (PEXPIRE k 200000 twice)
                # is later or equal depending on whether a millisecond passed between: GT
                # and LT compare absolute ones, far from every relative deadline (~2029)
                at = self.one("4102444800", "4102444900", "-1", "x")
                if self.p(0.5):
                    return ["EXPIREAT", self.k(), at, *flag]
                return ["PEXPIREAT", self.k(), at + "000" * (at[0] == "4"), *flag]
            seconds = self.one("100000", "200000", "100000", "-1", "0", "x")
            return [self.one("EXPIRE", "PEXPIRE"), self.k(), seconds + "000" * self.p(0.3), *flag]
        if r == 8:
            return [self.one("TTL", "PTTL"), self.k()]
        if r == 9:
            return ["UNLINK", *self.ks(1, 2)]
        if r == 10:
            return ["TOUCH", *self.ks(1, 2)]
        if r == 11:
            return ["DBSIZE"]
        if r == 12:
            return ["EXPIREAT", self.k(), self.one("4102444800", "1", "x")]
        return ["OBJECT", "ENCODING", self.k()]

    def hash(self) -> Argv:
        k, r = self.k(), self.rng.randrange(16)
        if r in (0, 1):
            return [self.one("HSET", "HMSET"),
                    k, *[x for _ in range(self.rng.randint(1, 3)) for x in (self.m(), self.v())]]
        if r == 2:
            return ["HGET", k, self.m()]
        if r == 3:
            return ["HMGET", k, *self.ms(1, 3)]
        if r == 4:
            return ["HDEL", k, *self.ms(1, 3)]
        if r == 5:
            return ["HLEN", k]
        if r == 6:
            return ["HEXISTS", k, self.m()]
        if r == 7:
            return ["HINCRBY", k, self.m(), self.i(-5, 10)]
        if r == 8:
            return ["HINCRBYFLOAT", k, self.m(), self.f()]
        if r == 9:
            return ["HSETNX", k, self.m(), self.v()]
        if r == 10:
            return ["HKEYS", k]
        if r == 11:
            return ["HVALS", k]
        if r == 12:
            return ["HGETALL", k]
        if r == 13:
            return ["HSTRLEN", k, self.m()]
        return ["HSET", k, self.m(), self.v()]

    def list(self) -> Argv:
        k, r = self.k(), self.rng.randrange(20)
        if r in (0, 1):
            return [self.one("LPUSH", "RPUSH"), k, *self.ms(1, 4)]
        if r == 2:
            return [self.one("LPUSHX", "RPUSHX"), k, *self.ms(1, 2)]
        if r == 3:
            return [self.one("LPOP", "RPOP"), k, *([self.i(-1, 4)] if self.p(0.5) else [])]
        if r in (4, 5):
            return ["LRANGE", k, self.i(-7, 7), self.i(-7, 7)]
        if r == 6:
            return ["LINDEX", k, self.i(-6, 6)]
        if r == 7:
            return ["LSET", k, self.i(-5, 5), self.m()]
        if r == 8:
            where = self.one("BEFORE", "AFTER", "before", "MIDDLE" if self.p(0.1) else "AFTER")
            return ["LINSERT", k, where, self.m(), self.m()]
        if r == 9:
            return ["LREM", k, self.i(-3, 3), self.m()]
        if r == 10:
            return ["LTRIM", k, self.i(-6, 6), self.i(-6, 6)]
        if r == 11:
            opts: list[str] = []
            if self.p(0.4):
                opts += ["RANK", self.i(-3, 3)]
            if self.p(0.4):
                opts += ["COUNT", self.i(-1, 3)]
            if self.p(0.3):
                opts += ["MAXLEN", self.i(-1, 5)]
            return ["LPOS", k, self.m(), *opts]
        if r == 12:
            return ["LMOVE", k, self.k(), self.one("LEFT", "RIGHT"), self.one("LEFT", "RIGHT", "UP")
                    if self.p(0.05) else self.one("LEFT", "RIGHT")]
        if r == 13:
            keys = self.ks(1, 3)
            numkeys = str(len(keys)) if self.p(0.9) else self.one("0", "5", "x", "-1")
            count = ["COUNT", self.i(-1, 3)] if self.p(0.5) else []
            return ["LMPOP", numkeys, *keys, self.one("LEFT", "RIGHT"), *count]
        if r == 14:
            return ["LLEN", k]
        if r == 15:
            return ["RPOPLPUSH", k, self.k()]
        return ["RPUSH", k, self.m()]

    def set(self) -> Argv:
        k, r = self.k(), self.rng.randrange(15)
        if r in (0, 1, 2):
            return ["SADD", k, *self.ms(1, 4)]
        if r == 3:
            return ["SREM", k, *self.ms(1, 3)]
        if r == 4:
            return ["SISMEMBER", k, self.m()]
        if r == 5:
            return ["SMISMEMBER", k, *self.ms(1, 3)]
        if r == 6:
            return ["SCARD", k]
        if r == 7:
            return ["SMEMBERS", k]
        if r in (8, 9):
            return [self.one("SINTER", "SUNION", "SDIFF"), *self.ks(1, 3)]
        if r == 10:
            return [self.one("SINTERSTORE", "SUNIONSTORE", "SDIFFSTORE"), k, *self.ks(1, 3)]
        if r == 11:
            keys = self.ks(1, 3)
            numkeys = str(len(keys)) if self.p(0.9) else self.one("0", "5", "x")
            return ["SINTERCARD", numkeys, *keys, *(["LIMIT", self.i(-1, 3)] if self.p(0.4) else [])]
        if r == 12:
            return ["SMOVE", k, self.k(), self.m()]
        return ["SADD", k, self.m()]

    def zadd(self, k: str) -> Argv:
        opts = []
        if self.p(0.2):
            opts.append(self.one("NX", "XX"))
        if self.p(0.2):
            opts.append(self.one("GT", "LT"))
        if self.p(0.2):
            opts.append("CH")
        pairs = self.rng.randint(1, 3)
        if self.p(0.15):
            opts.append("INCR")
            pairs = 1 if self.p(0.9) else 2
        self.rng.shuffle(opts)
        return ["ZADD", k, *opts, *[x for _ in range(pairs) for x in (self.f(0.03), self.m())]]

    def zrange(self, head: Argv) -> Argv:
        by = self.rng.randrange(3)
        rev = ["REV"] if self.p(0.3) else []
        if by == 0:
            args = [self.i(-5, 5), self.i(-5, 5), *rev]
            if self.p(0.05):
                args += self.limit() or ["LIMIT", "0", "1"]
        elif by == 1:
            args = [self.score_bound(), self.score_bound(), "BYSCORE", *rev, *self.limit()]
        else:
            args = [self.lex_bound(), self.lex_bound(), "BYLEX", *rev, *self.limit()]
        if head[0] == "ZRANGE" and self.p(0.4 if by < 2 else 0.05):
            args.append("WITHSCORES")
        return [*head, *args]

    def zset(self) -> Argv:
        k, r = self.k(), self.rng.randrange(36)
        if r < 5 or r >= 30:
            return self.zadd(k)
        if r == 5:
            return ["ZREM", k, *self.ms(1, 3)]
        if r == 6:
            return ["ZSCORE", k, self.m()]
        if r == 7:
            return ["ZMSCORE", k, *self.ms(1, 3)]
        if r == 8:
            return ["ZINCRBY", k, self.f(), self.m()]
        if r == 9:
            # WITHSCORE is Redis 7.2's (docs/lists-and-sorted-sets.md): not sent to 7.0
            return [self.one("ZRANK", "ZREVRANK"), k, self.m()]
        if r == 10:
            return ["ZCARD", k]
        if r in (11, 12, 13):
            return self.zrange(["ZRANGE", k])
        if r == 14:
            ws = ["WITHSCORES"] if self.p(0.4) else []
            return [self.one("ZRANGEBYSCORE", "ZREVRANGEBYSCORE"), k, self.score_bound(),
                    self.score_bound(), *ws, *self.limit()]
        if r == 15:
            return [self.one("ZRANGEBYLEX", "ZREVRANGEBYLEX"), k, self.lex_bound(),
                    self.lex_bound(), *self.limit()]
        if r == 16:
            return ["ZCOUNT", k, self.score_bound(), self.score_bound()]
        if r == 17:
            return ["ZLEXCOUNT", k, self.lex_bound(), self.lex_bound()]
        if r == 18:
            return [self.one("ZPOPMIN", "ZPOPMAX"), k, *([self.i(-1, 4)] if self.p(0.5) else [])]
        if r == 19:
            return ["ZREMRANGEBYRANK", k, self.i(-4, 4), self.i(-4, 4)]
        if r == 20:
            return ["ZREMRANGEBYSCORE", k, self.score_bound(), self.score_bound()]
        if r == 21:
            return ["ZREMRANGEBYLEX", k, self.lex_bound(), self.lex_bound()]
        if r in (22, 23):
            keys = self.ks(1, 3)
            numkeys = str(len(keys)) if self.p(0.92) else self.one("0", "4", "x", "-1")
            opts: list[str] = []
            if self.p(0.4):
                opts += ["WEIGHTS", *[self.f(0.02) for _ in keys]]
            if self.p(0.4):
                opts += ["AGGREGATE", self.one("SUM", "MIN", "MAX", "max", "AVG" if self.p(0.1) else "SUM")]
            if self.p(0.1):
                self.rng.shuffle(opts)
            cmd = self.one("ZUNIONSTORE", "ZINTERSTORE", "ZUNION", "ZINTER")
            if cmd in ("ZUNION", "ZINTER"):
                return [cmd, numkeys, *keys, *opts, *(["WITHSCORES"] if self.p(0.5) else [])]
            return [cmd, k, numkeys, *keys, *opts]
        if r == 24:
            keys = self.ks(1, 3)
            if self.p(0.5):
                return ["ZDIFFSTORE", k, str(len(keys)), *keys]
            return ["ZDIFF", str(len(keys)), *keys, *(["WITHSCORES"] if self.p(0.5) else [])]
        if r == 25:
            return self.zrange(["ZRANGESTORE", k, self.k()])
        if r == 26:
            return ["ZSCORE", k, self.m()]
        if r == 27:
            keys = self.ks(1, 3)
            numkeys = str(len(keys)) if self.p(0.9) else self.one("0", "5", "x")
            count = ["COUNT", self.i(-1, 3)] if self.p(0.5) else []
            return ["ZMPOP", numkeys, *keys, self.one("MIN", "MAX"), *count]
        if r == 29:
            return ["ZREVRANGE", k, self.i(-5, 5), self.i(-5, 5), *(["WITHSCORES"] if self.p(0.5) else [])]
        if r == 28:
            keys = self.ks(1, 3)
            return ["ZINTERCARD", str(len(keys)), *keys, *(["LIMIT", self.i(-1, 3)] if self.p(0.4) else [])]
        return self.zadd(k)

    # --- one command ----------------------------------------------------------------------

    def command(self) -> Argv:
        self.family = self.focus if self.p(0.5) else self.rng.choices(
            list(self.families), weights=WEIGHTS)[0]
        argv = self.families[self.family]()
        name = argv[0].upper()
        if len(argv) > 1 and self.p(0.03):
            argv = argv[: self.rng.randint(1, len(argv) - 1)]  # wrong arity (mostly)
        elif len(argv) > 2 and self.p(0.04) and name not in ("ZRANK", "ZREVRANK"):
            # one argument swapped for a token of another place: error precedence
            argv[self.rng.randrange(2, len(argv))] = self.rng.choice(TOKENS)
        elif self.p(0.02) and name not in ("ZRANK", "ZREVRANK"):
            # ZRANK with one more argument is WITHSCORE's syntax error in hotkv (7.2) and an
            # arity error in Redis 7.0: a documented difference
            argv = [*argv, self.one("FOO", "1", "WITHSCORES", "NX")]
        if self.p(0.1):
            argv[0] = argv[0].lower()
        return argv


# --- comparing ------------------------------------------------------------------------------

UNORDERED = {"smembers", "sinter", "sunion", "sdiff"}
LEX = {"zrangebylex", "zrevrangebylex", "zlexcount", "zremrangebylex"}


def pairs(items: list[Any]) -> list[Any]:
    return sorted(zip(items[::2], items[1::2], strict=True))


def normalise(argv: Argv, reply: Any, hashtable: bool = False) -> Any:
    """``hashtable``: the hash HKEYS, HVALS or HGETALL reads is in Redis's hash order."""
    name = argv[0].lower()
    if reply[0] == "-":
        return reply
    if name in UNORDERED and reply[0] in "*~" and reply[1] is not None:
        return (reply[0], sorted(reply[1]))
    if hashtable and name in ("hkeys", "hvals"):
        return (reply[0], sorted(reply[1]))
    if hashtable and name == "hgetall":
        return (reply[0], pairs(reply[1]))
    if name in ("ttl", "pttl") and reply[0] == ":" and reply[1] > 0:
        return (":", "a deadline")
    return reply


def probe_free(argv: Argv) -> bool:
    """The command's comparison needs no look at the data first (the probes below), so it
    may run where no probe can see the data it meets (queued in MULTI, in a pipeline): no
    lex range (unspecified over mixed scores), no OBJECT (a string's encoding); its hash
    reads are compared order-free (``normalise`` with ``hashtable``)."""
    return not (argv[0].lower() in LEX or "BYLEX" in (a.upper() for a in argv)
                or argv[0].lower() == "object")


def same_exec(queued: list[Argv], expected: Any, got: Any) -> bool:
    """EXEC's replies agree: each queued command's as ``normalise`` (order-free hash
    reads) compares them, or the whole reply (an abort, a null) exactly."""
    if not (expected[0] == got[0] == "*" and expected[1] is not None):
        return bool(expected == got)
    return len(queued) == len(expected[1]) == len(got[1]) and all(
        normalise(q, e, True) == normalise(q, g, True)
        for q, e, g in zip(queued, expected[1], got[1], strict=True))


def hash_order_unspecified(argv: Argv, probe: RespConnection) -> bool:
    """A hash read of a ``hashtable`` (a value over 64 bytes, as HINCRBYFLOAT can make):
    its order is Redis's hash order, which hotkv does not follow (docs/data-types.md)."""
    if argv[0].lower() not in ("hkeys", "hvals", "hgetall") or len(argv) != 2:
        return False
    return bool(probe.call(["OBJECT", "ENCODING", argv[1]]) == ("$", b"hashtable"))


def string_encoding(argv: Argv, probe: RespConnection) -> bool:
    """OBJECT ENCODING of a string: hotkv decides it as SET would (docs/data-types.md)."""
    if argv[0].lower() != "object" or len(argv) != 3 or argv[1].lower() != "encoding":
        return False
    return bool(probe.call(["TYPE", argv[2]]) == ("+", b"string"))


def lex_unspecified(argv: Argv, probe: RespConnection) -> bool:
    """A lex range over a sorted set whose scores differ: Redis's result is unspecified."""
    name = argv[0].lower()
    upper = [a.upper() for a in argv]
    if len(argv) > 1 and (name in LEX or (name == "zrange" and "BYLEX" in upper)):
        key = argv[1]
    elif name == "zrangestore" and "BYLEX" in upper and len(argv) > 2:
        key = argv[2]
    else:
        return False
    reply = probe.call(["ZRANGE", key, "0", "-1", "WITHSCORES"])
    if reply[0] != "*":
        return False
    scores = {score for _, score in reply[1][1::2]}
    return len(scores) > 1


def dump(conn: RespConnection, keys: list[bytes]) -> dict[bytes, Any]:
    """Every key's type, whether it has a deadline, and its value, order-free where Redis's is."""
    data: dict[bytes, Any] = {}
    for key in keys:
        (_, kind) = conn.call(["TYPE", key])
        ttl = conn.call(["PTTL", key])[1]
        if kind == b"string":
            value = conn.call(["GET", key])
        elif kind == b"hash":
            value = pairs(conn.call(["HGETALL", key])[1])  # (the order: in the replies above)
        elif kind == b"list":
            value = conn.call(["LRANGE", key, "0", "-1"])
        elif kind == b"set":
            value = sorted(conn.call(["SMEMBERS", key])[1])
        elif kind == b"zset":
            value = conn.call(["ZRANGE", key, "0", "-1", "WITHSCORES"])
        else:
            value = kind
        data[key] = (kind, "ttl" if ttl > 0 else ttl, value)
    return data


def assert_same_data(redis_conn: RespConnection, hotkv_conn: RespConnection,
                     probe: RespConnection, what: str) -> None:
    """Both servers hold the same keys (a whole SCAN walk, no key twice on hotkv's) with
    the same types, deadlines (whether they have one) and values; ``probe`` is a RESP2
    connection to redis-server."""
    redis_keys, _ = scan_walk(probe, ["COUNT", "100"])
    hotkv_keys, duplicates = scan_walk(hotkv_conn, ["COUNT", "100"])
    assert (hotkv_keys, duplicates) == (redis_keys, 0), f"{what}: SCAN walk"
    expected_data, got_data = dump(redis_conn, redis_keys), dump(hotkv_conn, hotkv_keys)
    for key in redis_keys:
        assert got_data[key] == expected_data[key], (
            f"{what}: key {key!r} after the run\n"
            f"  redis: {expected_data[key]!r}\n  hotkv: {got_data[key]!r}")


def run_seed(redis_port: int, hotkv_port: int, protocol: int, seed: int, steps: int = STEPS) -> int:
    """One seed's sequence to both servers; returns how many commands were compared."""
    rng = random.Random(seed)
    gen = Gen(rng)
    redis_conn, hotkv_conn = RespConnection(redis_port, protocol), RespConnection(hotkv_port, protocol)
    probe = RespConnection(redis_port, 2)
    history: list[str] = []
    compared = 0
    try:
        for conn in (redis_conn, hotkv_conn):
            assert conn.call(["FLUSHALL"]) == ("+", b"OK")
        in_multi = 0  # inside MULTI: how many commands are still to come before EXEC
        queued: list[Argv] | None = None  # the commands of the transaction under way
        for step in range(steps):
            if queued is None and rng.random() < 0.01:
                argv, in_multi, queued = ["MULTI"], rng.randint(1, 4), []
            elif queued is not None and in_multi == 0:
                argv = [rng.choice(["EXEC", "EXEC", "EXEC", "DISCARD"])]
            else:
                argv = gen.command()
                if queued is not None:
                    # a queued command sees the data as EXEC finds it, which no probe can
                    # tell now
                    if not probe_free(argv):
                        continue
                    in_multi -= 1
                    queued.append(argv)
                elif lex_unspecified(argv, probe) or string_encoding(argv, probe):
                    continue
            hashtable = queued is not None or hash_order_unspecified(argv, probe)
            expected = redis_conn.call(argv)
            got = hotkv_conn.call(argv)
            if argv[0] in ("EXEC", "DISCARD") and queued is not None:
                done, queued = queued, None
                same = (same_exec(done, expected, got) if argv[0] == "EXEC"
                        else expected == got)
            else:
                same = normalise(argv, expected, hashtable) == normalise(argv, got, hashtable)
            if not same:
                before = "\n    ".join(history[-25:])
                pytest.fail(
                    f"seed {seed} (focus {gen.focus}), RESP{protocol}, step {step}: {argv!r}\n"
                    f"  redis: {expected!r}\n  hotkv: {got!r}\n"
                    f"  the commands before it (latest last):\n    {before}",
                    pytrace=False,
                )
            history.append(f"{argv!r} -> {expected!r}")
            compared += 1
        if queued is not None:  # the sequence ended inside MULTI
            assert redis_conn.call(["DISCARD"]) == hotkv_conn.call(["DISCARD"]) == ("+", b"OK")
        assert_same_data(redis_conn, hotkv_conn, probe, f"seed {seed} (RESP{protocol})")
        return compared
    finally:
        for conn in (redis_conn, hotkv_conn, probe):
            conn.close()


#: what the random sequences found, kept as fixed steps (a seed would find them only by chance)
FOUND: list[Step] = [
    ["SET", "str", "v"],
    ["ZADD", "z", "0", "a", "1", "b"],
    # the input keys' types are checked before the options are parsed
    ["ZINTERSTORE", "dst", "2", "z", "str", "WEIGHTS", "x", "1"],
    ["ZUNION", "2", "z", "str", "FOO"],
    ["ZDIFFSTORE", "dst", "2", "z", "str", "FOO"],
    ["ZINTERCARD", "2", "z", "str", "LIMIT", "-1"],
    ["ZINTERCARD", "1", "z", "LIMIT", "-1"],
    ["HSET", "h", "f", "v"],
    ["LCS", "h", "str", "FOO"],
    ["LCS", "str", "h", "MINMATCHLEN"],
    ["LINDEX", "nope", "x"],
    ["LINDEX", "str", "x"],
    ["LSET", "nope", "x", "v"],
    ["LSET", "str", "x", "v"],
    # a non-integer COUNT or MAXLEN has its "can't be negative" message
    ["RPUSH", "l", "a", "b", "a"],
    ["LPOS", "l", "a", "COUNT", "x"],
    ["LPOS", "l", "a", "COUNT", ""],
    ["LPOS", "l", "a", "MAXLEN", "1.5"],
    ["LPOS", "l", "a", "RANK", "x"],
    # ZUNION and ZINTER take their inputs smallest first; a NaN from a later input's weight
    # is left to the aggregate; a -0 result stays -0 in a reply and is 0 once stored
    ["ZADD", "i1", "+inf", "a"],
    ["ZADD", "i2", "-inf", "a", "1", "b"],
    ["ZADD", "i3", "5", "a", "1", "b", "1", "c"],
    ["ZUNION", "3", "i3", "i2", "i1", "WITHSCORES"],
    ["ZINTER", "3", "i3", "i2", "i1", "WITHSCORES"],
    ["ZINTER", "3", "i1", "i1", "i1", "WEIGHTS", "-0", "1", "-0", "WITHSCORES"],
    ["ZINTER", "2", "i1", "i3", "WEIGHTS", "1", "0", "AGGREGATE", "MIN", "WITHSCORES"],
    ["ZINTER", "2", "i3", "i1", "WEIGHTS", "1", "0", "AGGREGATE", "MAX", "WITHSCORES"],
    ["ZINTER", "1", "z", "WEIGHTS", "-0", "WITHSCORES"],
    ["ZUNION", "1", "z", "WEIGHTS", "-1", "WITHSCORES"],
    ["ZUNIONSTORE", "dst", "1", "z", "WEIGHTS", "-1"],
    ["ZSCORE", "dst", "a"],
    # ZINCRBY is ZADD's parser: a flag where the increment goes leaves no pair
    ["ZINCRBY", "z", "NX", "b"],
    ["ZINCRBY", "str", "incr", "b"],
    ["ZINCRBY", "z", "CH", "1"],
    # a long double: 1e400 is finite, so HINCRBYFLOAT takes it (and checks the type first)
    ["HINCRBYFLOAT", "hf", "f", "1e400"],
    ["HINCRBYFLOAT", "hf", "f", "-1e400"],
    ["HINCRBYFLOAT", "str", "f", "1e400"],
    ["HINCRBYFLOAT", "hf", "g", "1e5000"],
    # a NUL ends no number, and a zero result is never "-0"
    ["SET", "nul", "-2"],
    ["SETRANGE", "nul", "4", "ab"],
    ["INCRBYFLOAT", "nul", "1"],
    ["SET", "nul", b"1\x00"],
    ["INCRBYFLOAT", "nul", "1"],
    ["HSET", "h", "nul", b"1\x00"],
    ["HINCRBYFLOAT", "h", "nul", "1"],
    ["SET", "nz", "-0"],
    ["INCRBYFLOAT", "nz", "-0"],
    ["INCRBYFLOAT", "nz2", "-0"],
    ["HINCRBYFLOAT", "h", "nz", "-0"],
    ["HINCRBYFLOAT", "h", "nz", "-0"],
]


@pytest.mark.parametrize("protocol", [2, 3], ids=["resp2", "resp3"])
def test_what_the_random_sequences_found(reference: RedisServer, server: HotkvProcess,
                                         protocol: int) -> None:
    run_scenario(reference.port, server.port, protocol, FOUND)


@pytest.mark.parametrize("protocol", [2, 3], ids=["resp2", "resp3"])
@pytest.mark.parametrize("seed", DEFAULT_SEEDS)
def test_random_sequences_same_as_redis(reference: RedisServer, server: HotkvProcess, seed: int,
                                         protocol: int) -> None:
    assert run_seed(reference.port, server.port, protocol, seed) > STEPS // 2


#: encoding limits small enough that the sequences' few members convert hashes, sets and
#: sorted sets (OBJECT ENCODING, a hashtable's order, -0 in a skiplist) on both servers
SMALL_LIMITS = {"hash-max-listpack-entries": ("2", "512"), "hash-max-listpack-value": ("3", "64"),
                "zset-max-listpack-entries": ("3", "128"), "zset-max-listpack-value": ("2", "64"),
                "set-max-intset-entries": ("3", "512")}


@pytest.fixture
def small_limits(reference: RedisServer, server: HotkvProcess) -> Iterator[None]:
    def set_all(which: int) -> None:
        for port in (reference.port, server.port):
            conn = RespConnection(port, 2)
            for name, values in SMALL_LIMITS.items():
                assert conn.call(["CONFIG", "SET", name, values[which]]) == ("+", b"OK"), name
            conn.close()

    set_all(0)
    try:
        yield
    finally:
        set_all(1)


@pytest.mark.parametrize("seed", range(1, 11))
def test_random_sequences_with_small_encoding_limits_same_as_redis(
        small_limits: None, reference: RedisServer, server: HotkvProcess, seed: int) -> None:
    assert run_seed(reference.port, server.port, 2, seed) > STEPS // 2


@pytest.mark.slow
@pytest.mark.parametrize("protocol", [2, 3], ids=["resp2", "resp3"])
@pytest.mark.parametrize("seed", SLOW_SEEDS)
def test_many_random_sequences_same_as_redis(reference: RedisServer, server: HotkvProcess,
                                              seed: int, protocol: int) -> None:
    run_seed(reference.port, server.port, protocol, seed, SLOW_STEPS)


def test_the_generator_is_seeded_and_reaches_every_family() -> None:
    def draw(seed: int) -> list[Argv]:
        gen = Gen(random.Random(seed))
        return [gen.command() for _ in range(100)]

    assert draw(7) == draw(7) != draw(8)
    names = set()
    for seed in range(40):
        gen = Gen(random.Random(seed))
        names |= {gen.command()[0].upper() for _ in range(300)}
    for name in ("SET", "LCS", "COPY", "HINCRBYFLOAT", "LPOS", "LMPOP", "SINTERCARD", "ZMPOP",
                 "ZRANGESTORE", "ZUNIONSTORE", "ZREMRANGEBYLEX", "EXPIRE"):
        assert name in names, name
