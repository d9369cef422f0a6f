"""CPU time per command of the server's request path, in process, without sockets.

A ``Server`` is built from ``load_config`` with every subsystem attached and started (ACL,
persistence, replication, the memory guard, the semantic service), and ``--clients``
``ClientProtocol`` objects are connected to fake transports. Each round feeds every client
one read (``--pipeline`` copies of a request) through ``data_received`` and then runs the
end of the event-loop turn (``end_turn``: the AOF write and the held replies), as the
event loop would. The time is ``time.process_time`` (CPU time of this process, so other
processes on the machine do not inflate it), best of ``--repeat``, divided by the commands.

What it includes: request framing and parsing (hiredis), the dispatch point, the handler,
the store, effects and their sinks, reply encoding, and with ``--aof`` the AOF encoding
and ``write(2)``. What it leaves out: the event loop and the socket syscalls (a quarter to
a third of the real server's time with ``-P 16``, most of it unpipelined); see
``benchmarks/README.md``.

    .venv/bin/python benchmarks/inprocess.py                  # every row, -P 16 and -P 1
    .venv/bin/python benchmarks/inprocess.py --rows set,wset --aof --clients 8
    .venv/bin/python benchmarks/inprocess.py --profile wset   # cProfile of one row
    .venv/bin/python benchmarks/inprocess.py --profile get --profile-pipeline 1   # unpipelined
    PYTHONPATH=/tmp/old/src .venv/bin/python benchmarks/inprocess.py   # another tree (A/B)
"""

from __future__ import annotations

import os

# before numpy is imported: no OpenBLAS thread spinning beside the measured one (the
# server caps its pool at one thread later, but a pool started at import kept spinning
# here: about 9% of a GET's samples, counted by process_time)
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import asyncio
import cProfile
import hashlib
import pstats
import random
import tempfile
import time
from collections.abc import Sequence
from typing import Any

from hotkv_server.engine.config import load_config
from hotkv_server.server.app import Server
from hotkv_server.server.connection import ClientProtocol

try:
    from hotkv_server.server.connection import end_turn
except ImportError:  # a tree from before the AOF was written once per turn (A/B runs)

    def end_turn(core: Any) -> None:
        pass


class FakeTransport:
    """The calls ClientProtocol makes on a transport, doing nothing."""

    def __init__(self) -> None:
        self.last = b""

    def write(self, data: bytes) -> None:
        self.last = data

    def get_extra_info(self, name: str) -> Any:
        return ("127.0.0.1", 40000)

    def set_write_buffer_limits(self, high: int) -> None:
        pass

    def get_write_buffer_size(self) -> int:
        return 0

    def close(self) -> None:
        pass

    def abort(self) -> None:
        pass

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


def request(*words: bytes) -> bytes:
    out = [b"*%d\r\n" % len(words)]
    for word in words:
        out.append(b"$%d\r\n%b\r\n" % (len(word), word))
    return b"".join(out)


KEY = b"key:000000000001"
#: replaced by a random number per request (redis-benchmark's __rand_int__)
RAND = b"__rand__"
#: the same, zero-padded to 12 digits (redis-benchmark's ``key:__rand_int__``)
RAND12 = b"__rand12__"
EVALSHA_SCRIPT = (b"redis.call('SET', KEYS[1], ARGV[1]) redis.call('INCR', KEYS[2]) "
                  b"return redis.call('GET', KEYS[1])")
EVALSHA_SHA = hashlib.sha1(EVALSHA_SCRIPT).hexdigest().encode()
ROWS: dict[str, bytes] = {
    "ping": request(b"PING"),
    "ping_inline": b"PING\r\n",
    "set": request(b"SET", KEY, b"xxx"),
    "get": request(b"GET", KEY),
    "wset": request(b"AMEM.WORK.SET", b"bench", KEY, b"xxx"),
    "wget": request(b"AMEM.WORK.GET", b"bench", KEY),
    "capp": request(b"AMEM.CONV.APPEND", b"bench", b"user", b"xxx"),
    "hset": request(b"HSET", b"bench:hash", KEY, b"xxx"),
    "hget": request(b"HGET", b"bench:hash", KEY),
    "sadd": request(b"SADD", b"bench:set", KEY),
    "lpush": request(b"LPUSH", b"bench:lpush", b"xxx"),
    "lrange_100": request(b"LRANGE", b"bench:list", b"0", b"99"),
    # 10 members at the middle rank of the 10,000-member set (benchmarks/zset_bench.py's ZRANGE)
    "zrange": request(b"ZRANGE", b"bench:zset", b"5000", b"5009"),
    # and 100 of them with their scores (a wide range: a reply to build per member)
    "zrange_100": request(b"ZRANGE", b"bench:zset", b"5000", b"5099", b"WITHSCORES"),
}
#: rows whose requests differ by a random number (redis-benchmark's __rand_int__)
RAND_ROWS: dict[str, tuple[bytes, ...]] = {
    "zadd": (b"ZADD", b"bench:zadd", RAND, b"m:" + RAND),
    "zrangebyscore": (b"ZRANGEBYSCORE", b"bench:zset", RAND, b"+inf", b"LIMIT", b"0", b"10"),
    "evalsha": (b"EVALSHA", EVALSHA_SHA, b"2", b"key:" + RAND, b"bench:counter", b"xxx"),
    "zscore": (b"ZSCORE", b"bench:zset", b"m:" + RAND),
    "zincrby": (b"ZINCRBY", b"bench:zincrby", b"1", b"m:" + RAND),
    # run.py's HSET/HGET/SADD rows: random fields (members) of a 10,000 space, so the hash
    # and the set are full-size tables (the rows above write one field of a small hash)
    "hset_r": (b"HSET", b"bench:hash_r", b"key:" + RAND12, b"xxx"),
    "hget_r": (b"HGET", b"bench:hash_r", b"key:" + RAND12),
    "sadd_r": (b"SADD", b"bench:set_r", b"key:" + RAND12),
}
#: what a row reads, written before it runs (as benchmarks/run.py prepares both servers)
SETUP: dict[str, list[bytes]] = {
    "hget": [request(b"HSET", b"bench:hash", KEY, b"xxx")],
    "lrange_100": [request(b"RPUSH", b"bench:list", *(b"item:%d" % i for i in range(600)))],
    "zrangebyscore": [request(b"ZADD", b"bench:zset", *(w for i in range(10_000)
                                                        for w in (b"%d" % i, b"m:%d" % i)))],
    "evalsha": [request(b"SCRIPT", b"LOAD", EVALSHA_SCRIPT)],
    # half of ZADD's 100,000 members exist: its requests insert and update (as the
    # redis-benchmark run does once its set has grown)
    "zadd": [request(b"ZADD", b"bench:zadd", *(w for i in range(0, 100_000, 2)
                                                for w in (b"%d" % i, b"m:%d" % i)))],
    "zincrby": [request(b"ZADD", b"bench:zincrby", *(w for i in range(10_000)
                                                      for w in (b"%d" % i, b"m:%d" % i)))],
    "hset_r": [request(b"HSET", b"bench:hash_r", *(w for i in range(10_000)
                                                    for w in (b"key:%012d" % i, b"xxx")))],
    "sadd_r": [request(b"SADD", b"bench:set_r", *(b"key:%012d" % i for i in range(10_000)))],
}
#: rows whose reads come twice, the second time with the first placeholder (the score)
#: moved by the row's range: going round the reads again changes every member's score, as
#: redis-benchmark's ever new random requests do (the same ZADD again would change nothing)
CHANGING_ROWS = {"zadd"}
#: the range of __rand__ by row (redis-benchmark's -r of the same row in run.py; ZSCORE and
#: ZINCRBY, in process only, read and change members of 10,000-member sets)
RAND_RANGE = {"zrangebyscore": 10_000, "zscore": 10_000, "zincrby": 10_000,
              "hset_r": 10_000, "hget_r": 10_000, "sadd_r": 10_000}


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    names = [*ROWS, *RAND_ROWS]
    parser.add_argument("--rows", default=",".join(names), help="comma-separated: " + ", ".join(names))
    parser.add_argument("--pipelines", default="16,1", help="requests per read (default 16,1)")
    parser.add_argument("--clients", type=int, default=1, help="clients per loop turn")
    parser.add_argument("--aof", action="store_true", help="appendonly yes, appendfsync everysec")
    parser.add_argument("--keys", type=int, default=1,
                        help="spread the string and WORK rows over this many keys (cache misses)")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--commands", type=int, default=50_000, help="commands per timed run")
    parser.add_argument("--profile", metavar="ROW", help="print a cProfile of one row (at -P 16 unless --profile-pipeline)")
    parser.add_argument("--profile-pipeline", type=int, default=16, help="requests per read of --profile")
    parser.add_argument("--sort", default="tottime", help="the profile's order (tottime, cumulative)")
    parser.add_argument("--lines", type=int, default=25, help="lines of the profile")
    return parser.parse_args(argv)


def reads_for(row: str, pipeline: int, keys: int, count: int) -> list[bytes]:
    """Prebuilt reads of ``pipeline`` requests each (distinct keys when ``keys`` > 1)."""
    rnd = random.Random(7)
    words = RAND_ROWS.get(row)
    if words is not None:
        top = RAND_RANGE.get(row, 100_000)

        def one(numbers: list[int]) -> bytes:  # a number of each placeholder, as redis-benchmark
            at = iter(numbers)
            return request(*(word.replace(RAND, b"%d" % next(at)) if RAND in word
                             else word.replace(RAND12, b"%012d" % next(at)) if RAND12 in word
                             else word for word in words))

        places = sum(RAND in word or RAND12 in word for word in words)
        reads = min(count, 4096)
        if row not in CHANGING_ROWS:
            return [b"".join(one([rnd.randrange(top) for _ in range(places)])
                             for _ in range(pipeline)) for _ in range(reads)]
        half = [[[rnd.randrange(top) for _ in range(places)] for _ in range(pipeline)]
                for _ in range(max(1, reads // 2))]
        again = [[[n[0] + top, *n[1:]] for n in read] for read in half]
        return [b"".join(one(n) for n in read) for read in half + again]
    base = ROWS[row]
    if keys <= 1 or KEY not in base:
        return [base * pipeline] * max(1, count)
    return [b"".join(base.replace(KEY, b"key:%012d" % rnd.randrange(keys)) for _ in range(pipeline))
            for _ in range(min(count, 4096))]


async def run(args: argparse.Namespace) -> None:
    data_dir = tempfile.mkdtemp(prefix="hotkv-inprocess-")
    config = load_config(["--port", "0", "--dir", data_dir, "--save", "",
                          "--appendonly", "yes" if args.aof else "no", "--appendfsync", "everysec"])
    server = Server(config)
    await server._open_subsystems()
    for sub in server.subsystems:
        started = getattr(sub, "started", None)
        if started is not None:
            await started()
    core = server.core
    clients = []
    for _ in range(args.clients):
        protocol = ClientProtocol(core)
        protocol.connection_made(FakeTransport())  # type: ignore[arg-type]
        clients.append(protocol)
    first = clients[0]
    first.data_received(request(b"AMEM.CONV.CREATE", b"bench"))
    for row in ("set", "wset"):
        first.data_received(ROWS[row])
    for setup in SETUP.values():
        for req in setup:
            first.data_received(req)
    if args.keys > 1:
        for i in range(args.keys):
            first.data_received(request(b"SET", b"key:%012d" % i, b"xxx")
                                + request(b"AMEM.WORK.SET", b"bench", b"key:%012d" % i, b"xxx"))
    end_turn(core)

    # the end of the event-loop turn: the Turn's own method where there is one (the event
    # loop calls it so), else the older tree's function
    turn_end = getattr(getattr(core, "turn", None), "end", None) or (lambda: end_turn(core))

    def turn(read: bytes) -> None:
        for protocol in clients:
            protocol.data_received(read)
        turn_end()

    if args.profile:
        reads = reads_for(args.profile, args.profile_pipeline, args.keys, 4096)
        profiler = cProfile.Profile()
        profiler.enable()
        for i in range(args.commands // args.profile_pipeline):
            turn(reads[i % len(reads)])
        profiler.disable()
        pstats.Stats(profiler).sort_stats(args.sort).print_stats(args.lines)
        return

    pipelines = [int(p) for p in args.pipelines.split(",")]
    print(f"CPU time per command in process ({args.clients} client(s) per turn, "
          f"AOF {'everysec' if args.aof else 'off'}, keys {args.keys}), best of {args.repeat}:")
    print("| row | " + " | ".join(f"-P {p}" for p in pipelines) + " |")
    print("|---|" + "---:|" * len(pipelines))
    for row in args.rows.split(","):
        cells = []
        for pipeline in pipelines:
            rounds = max(1, args.commands // (pipeline * args.clients))
            reads = reads_for(row, pipeline, args.keys, rounds)
            best = float("inf")
            for _ in range(args.repeat):
                started = time.process_time()
                for i in range(rounds):
                    turn(reads[i % len(reads)])
                best = min(best, (time.process_time() - started) / (rounds * pipeline * args.clients))
            cells.append(f"{best * 1e6:.2f} us")
        answer = clients[0].transport.last[:40]  # type: ignore[union-attr]
        if answer.startswith(b"-"):
            raise SystemExit(f"{row}: the server answered an error: {answer!r}")
        print(f"| {row} | " + " | ".join(cells) + " |")
    for sub in reversed(server.subsystems):
        close = getattr(sub, "close", None)
        if close is not None:
            result = close(False)
            if asyncio.iscoroutine(result):
                await result


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        import uvloop

        uvloop.run(run(args))
    except ImportError:
        asyncio.run(run(args))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
