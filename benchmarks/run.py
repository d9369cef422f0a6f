"""Server throughput, side by side: hotkv against a real redis-server, both driven by redis-benchmark.

Run from the repository root with the project's venv::

    .venv/bin/python benchmarks/run.py                 # the full table (~5 min)
    .venv/bin/python benchmarks/run.py --quick --rows ping    # a smoke test (seconds)
    .venv/bin/python benchmarks/run.py --rows amem --json /tmp/amem.json

What it does:

* starts its own ``redis-server --save "" --appendonly no`` and ``python -m hotkv_server
  --appendonly no`` on free ports in a temporary directory (``--aof everysec`` turns on
  an append-only file with ``appendfsync everysec`` on BOTH servers), and stops them at the end;
* for every row and pipeline depth runs ``redis-benchmark -c 50 [-P 16] --csv`` against
  redis and hotkv in turn (interleaved, so a noisy neighbour hurts both alike), repeated
  ``--repeat`` times after one untimed calibration run that also warms the server up;
  ``-n`` is chosen from the calibration rate so that each timed run lasts ``--seconds``;
* prints a Markdown table: redis req/s (median), hotkv req/s (min / median / max), the
  ratio hotkv/redis of the medians and the target ratio for that row.

CPU placement: the machine this was written on has 2 cores and redis-benchmark needs one
of them. When ``taskset`` exists and there are at least 2 CPUs, both servers are pinned to
CPU 0 and redis-benchmark to CPU 1 (the same placement for both servers, so the
comparison stays fair); ``--no-pin`` turns that off. redis-benchmark's ``--threads`` is not
used: one client thread is enough to saturate a single-threaded server on this machine and
a second one would compete with the server for its core.

The ``types`` rows (HSET, HGET, SADD; ``-r 10000`` fields or members, the hash filled
before HGET so every HGET hits; LPUSH, LRANGE of the first 100 of 600 items, ZADD of
``-r 100000`` members, ZRANGEBYSCORE of 10 members from a random score of a 10,000-member
set) send the same command to both servers.

The AMEM rows compare each AMEM command with the nearest plain Redis command
(AMEM.WORK.SET ~ HSET, AMEM.WORK.GET ~ HGET, AMEM.CONV.APPEND ~ RPUSH). A row whose
command hotkv does not know (yet) is skipped with a note instead of failing the run.

Other row groups, each with its own reference:

* ``aof``: SET, GET and the AMEM rows on a second hotkv with ``--appendonly yes
  --appendfsync everysec`` (automatic rewrites off) against the hotkv without AOF (target >= 0.90);
* ``fakeredis``: SET and GET on hotkv against fakeredis' TCP server (``TcpFakeServer``,
  the other Python server, in its own process; target >= 20);
* ``ceiling``: the same SET and GET with redis-server against fakeredis (no target: it
  shows how far above fakeredis any server gets on this machine and client);
* ``bare``: SET and GET on a bare asyncio + uvloop + hiredis loop (``BARE_SERVER``: parse,
  answer from one dict, nothing else) against redis-server: the ceiling of a Python server
  here, beside which hotkv's own ratio is read (no target);
* ``sem``: ``benchmarks/sem_bench.py`` (AMEM.SEM.RECALL against hnswlib in process,
  recall@10, 8 clients vs 1, memory per fact, restart from the snapshot; ``--facts``,
  ``--png`` for the recall-vs-queries/s curve).

After the per-group tables comes one table of every row's ratio (min / median / max of
the per-run ratios, runs paired in the order they ran) against its target.
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import hashlib
import io
import json
import os
import platform
import re
import shlex
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import hiredis

ROOT = Path(__file__).resolve().parent.parent
READY = re.compile(r"ready to accept connections on .* port (\d+)")

CLIENTS = 50
#: keys touched by SET/GET (-r), all written before the GET rows so that every GET hits
STRING_KEYSPACE = 100_000
#: fields of the one working-memory session (and of the redis hash it is compared with)
WORK_KEYSPACE = 10_000
VALUE = b"xxx"  # redis-benchmark's default 3-byte payload (-d 3)
SESSION = b"bench"


def key_name(i: int) -> bytes:
    """The key redis-benchmark makes of ``key:__rand_int__`` for the random number ``i``."""
    return b"key:%012d" % i


# --- rows ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    """One line of the table: the same workload expressed for redis and for hotkv."""

    key: str  # what --rows matches (with the group)
    group: str  # ping | string | amem
    title: str
    redis_args: tuple[str, ...]  # redis-benchmark arguments after the common ones
    hotkv_args: tuple[str, ...]
    #: a hotkv command sent once before the row: an "unknown command" reply skips the row
    probe: tuple[bytes, ...] | None = None
    target_plain: float = 0.80
    target_pipelined: float = 0.45
    #: the row whose setup this one shares (prepare()), when its key differs
    setup: str = ""

    def target(self, pipeline: int) -> float:
        return self.target_plain if pipeline <= 1 else self.target_pipelined


def _rand(n: int) -> tuple[str, ...]:
    return ("-r", str(n))


ROWS: tuple[Row, ...] = (
    Row("ping_inline", "ping", "PING_INLINE", ("-t", "ping_inline"), ("-t", "ping_inline")),
    Row("ping_mbulk", "ping", "PING_MBULK", ("-t", "ping_mbulk"), ("-t", "ping_mbulk")),
    Row("set", "string", "SET", ("-t", "set", *_rand(STRING_KEYSPACE)),
        ("-t", "set", *_rand(STRING_KEYSPACE))),
    Row("get", "string", "GET", ("-t", "get", *_rand(STRING_KEYSPACE)),
        ("-t", "get", *_rand(STRING_KEYSPACE))),
    Row("work_set", "amem", "AMEM.WORK.SET vs HSET",
        (*_rand(WORK_KEYSPACE), "HSET", "bench", "key:__rand_int__", "xxx"),
        (*_rand(WORK_KEYSPACE), "AMEM.WORK.SET", "bench", "key:__rand_int__", "xxx"),
        probe=(b"AMEM.WORK.SET", SESSION, key_name(0), VALUE),
        target_plain=0.75, target_pipelined=0.40),
    Row("work_get", "amem", "AMEM.WORK.GET vs HGET",
        (*_rand(WORK_KEYSPACE), "HGET", "bench", "key:__rand_int__"),
        (*_rand(WORK_KEYSPACE), "AMEM.WORK.GET", "bench", "key:__rand_int__"),
        probe=(b"AMEM.WORK.GET", SESSION, key_name(0)),
        target_plain=0.75, target_pipelined=0.40),
    Row("conv_append", "amem", "AMEM.CONV.APPEND vs RPUSH",
        ("RPUSH", "bench", "xxx"),
        ("AMEM.CONV.APPEND", "bench", "user", "xxx"),
        probe=(b"AMEM.CONV.APPEND", SESSION, b"user", VALUE),
        target_plain=0.75, target_pipelined=0.40),
    # the Redis data types (issue 16): the same command on both servers
    Row("hset", "types", "HSET",
        (*_rand(WORK_KEYSPACE), "HSET", "bench:hash", "key:__rand_int__", "xxx"),
        (*_rand(WORK_KEYSPACE), "HSET", "bench:hash", "key:__rand_int__", "xxx"),
        probe=(b"HSET", b"bench:hash", key_name(0), VALUE),
        target_plain=0.80, target_pipelined=0.35),
    Row("hget", "types", "HGET",
        (*_rand(WORK_KEYSPACE), "HGET", "bench:hash", "key:__rand_int__"),
        (*_rand(WORK_KEYSPACE), "HGET", "bench:hash", "key:__rand_int__"),
        probe=(b"HGET", b"bench:hash", key_name(0)),
        target_plain=0.80, target_pipelined=0.35),
    Row("sadd", "types", "SADD",
        (*_rand(WORK_KEYSPACE), "SADD", "bench:set", "key:__rand_int__"),
        (*_rand(WORK_KEYSPACE), "SADD", "bench:set", "key:__rand_int__"),
        probe=(b"SADD", b"bench:set", key_name(0)),
        target_plain=0.80, target_pipelined=0.35),
)

#: members of the sorted set ZRANGEBYSCORE reads (scores 0..n-1), items of the LRANGE list
ZSET_KEYSPACE = 10_000
LIST_ITEMS = 600
#: lists and sorted sets (issue 16): the same command on both servers
TYPE_ROWS: tuple[Row, ...] = (
    Row("lpush", "types", "LPUSH", ("LPUSH", "bench:lpush", "xxx"), ("LPUSH", "bench:lpush", "xxx"),
        probe=(b"LPUSH", b"bench:probe", VALUE), target_pipelined=0.35),
    Row("lrange_100", "types", "LRANGE (first 100 of 600)",
        ("LRANGE", "bench:list", "0", "99"), ("LRANGE", "bench:list", "0", "99"),
        probe=(b"LLEN", b"bench:list"), target_pipelined=0.35),
    Row("zadd", "types", "ZADD",
        (*_rand(STRING_KEYSPACE), "ZADD", "bench:zadd", "__rand_int__", "m:__rand_int__"),
        (*_rand(STRING_KEYSPACE), "ZADD", "bench:zadd", "__rand_int__", "m:__rand_int__"),
        probe=(b"ZCARD", b"bench:zadd"), target_pipelined=0.35),
    Row("zrangebyscore", "types", "ZRANGEBYSCORE (10 of 10k)",
        (*_rand(ZSET_KEYSPACE), "ZRANGEBYSCORE", "bench:zset", "__rand_int__", "+inf",
         "LIMIT", "0", "10"),
        (*_rand(ZSET_KEYSPACE), "ZRANGEBYSCORE", "bench:zset", "__rand_int__", "+inf",
         "LIMIT", "0", "10"),
        probe=(b"ZCARD", b"bench:zset"), target_pipelined=0.35),
)
ROWS = ROWS + TYPE_ROWS

#: the script of the EVALSHA row (issue 16): three redis.call's, a write, an INCR and a read
EVALSHA_SCRIPT = (b"redis.call('SET', KEYS[1], ARGV[1]) redis.call('INCR', KEYS[2]) "
                  b"return redis.call('GET', KEYS[1])")
EVALSHA_SHA = hashlib.sha1(EVALSHA_SCRIPT).hexdigest()
SCRIPT_ROWS: tuple[Row, ...] = (
    Row("evalsha", "scripting", "EVALSHA of a 3-call script (SET, INCR, GET)",
        (*_rand(STRING_KEYSPACE), "EVALSHA", EVALSHA_SHA, "2", "key:__rand_int__",
         "bench:counter", "xxx"),
        (*_rand(STRING_KEYSPACE), "EVALSHA", EVALSHA_SHA, "2", "key:__rand_int__",
         "bench:counter", "xxx"),
        probe=(b"SCRIPT", b"EXISTS", EVALSHA_SHA.encode()), target_pipelined=0.35),
)
ROWS = ROWS + SCRIPT_ROWS


def _aof_row(row: Row) -> Row:
    """The same workload on hotkv with an AOF (everysec) against hotkv without."""
    title = row.title.split(" vs ")[0] + ", AOF everysec vs no AOF"
    return Row("aof_" + row.key, "aof", title, row.hotkv_args, row.hotkv_args, row.probe,
               0.90, 0.90, setup=row.key)


def _fake_row(row: Row) -> Row:
    return Row("fakeredis_" + row.key, "fakeredis", row.title + ", hotkv vs fakeredis",
               row.redis_args, row.hotkv_args, row.probe, 20.0, 20.0, setup=row.key)


def _ceiling_row(row: Row) -> Row:
    """redis-server against fakeredis: what any server can gain over fakeredis on this
    machine (context for the fakeredis target; no target of its own)."""
    return Row("ceiling_" + row.key, "ceiling",
               row.title + ", redis-server vs fakeredis (context)",
               row.redis_args, row.redis_args, None, 0.0, 0.0, setup=row.key)


def _bare_row(row: Row) -> Row:
    """A bare asyncio + uvloop + hiredis loop (parse, answer from a dict, nothing else)
    against redis-server: the pure-Python ceiling issue 21 measures hotkv against."""
    return Row("bare_" + row.key, "bare",
               row.title + ", bare Python loop vs redis-server (context)",
               row.redis_args, row.redis_args, None, 0.0, 0.0, setup=row.key)


ROWS = (ROWS + tuple(_aof_row(r) for r in ROWS if r.group in ("string", "amem"))
        + tuple(_fake_row(r) for r in ROWS if r.group == "string")
        + tuple(_ceiling_row(r) for r in ROWS if r.group == "string")
        + tuple(_bare_row(r) for r in ROWS if r.key in ("set", "get")))
#: groups that are not redis-benchmark rows (run by another script)
OTHER_GROUPS = ("sem",)
#: the reference each group's ratio is taken against (the "redis" column of its table)
REFERENCE = {"aof": "hotkv without AOF", "fakeredis": "fakeredis", "ceiling": "fakeredis"}
SUBJECT = {"aof": "hotkv AOF everysec", "ceiling": "redis-server", "bare": "bare Python loop"}


def select_rows(spec: str | None) -> list[Row]:
    """Rows named by ``--rows``: comma-separated keys (``get``), key prefixes (``ping``,
    ``work``) or groups (``string``, ``amem``); ``None`` or ``all`` means every row."""
    if not spec or spec == "all":
        return list(ROWS)
    tokens = [t.strip().lower() for t in spec.split(",")
              if t.strip() and t.strip().lower() not in OTHER_GROUPS]
    if not tokens and any(t.strip().lower() in OTHER_GROUPS for t in spec.split(",")):
        return []
    chosen = [
        row for row in ROWS
        if any(t in (row.key, row.group) or row.key.startswith(t + "_") for t in tokens)
    ]
    if not chosen:
        names = ", ".join(sorted({r.key for r in ROWS} | {r.group for r in ROWS}
                                 | set(OTHER_GROUPS)))
        raise SystemExit(f"--rows {spec!r} matches no row; known: {names}")
    return chosen


# --- a tiny RESP client (setup only; the measuring is redis-benchmark's job) ----------------


def _encode_command(args: Sequence[bytes]) -> bytes:
    parts = [b"*%d\r\n" % len(args)]
    for arg in args:
        parts.append(b"$%d\r\n%b\r\n" % (len(arg), arg))
    return b"".join(parts)


class RawClient:
    """Pipelined commands over one socket, replies parsed by hiredis (errors are returned)."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=30)
        self.reader = hiredis.Reader()

    def pipeline(self, commands: Sequence[Sequence[bytes]]) -> list[Any]:
        self.sock.sendall(b"".join(_encode_command(c) for c in commands))
        replies: list[Any] = []
        while len(replies) < len(commands):
            reply = self.reader.gets()
            if reply is False:
                data = self.sock.recv(1 << 16)
                if not data:
                    raise ConnectionError("server closed the connection")
                self.reader.feed(data)
                continue
            replies.append(reply)
        return replies

    def call(self, *args: bytes) -> Any:
        return self.pipeline([args])[0]

    def close(self) -> None:
        self.sock.close()


def _fill(client: RawClient, commands: Iterator[tuple[bytes, ...]], batch: int = 2000) -> None:
    chunk: list[tuple[bytes, ...]] = []
    for cmd in commands:
        chunk.append(cmd)
        if len(chunk) == batch:
            _check_replies(client.pipeline(chunk), chunk[0])
            chunk = []
    if chunk:
        _check_replies(client.pipeline(chunk), chunk[0])


def _check_replies(replies: list[Any], example: tuple[bytes, ...]) -> None:
    for reply in replies:
        if isinstance(reply, hiredis.ReplyError):
            raise RuntimeError(f"setup command {example[0]!r} failed: {reply}")


# --- servers --------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class ServerProcess:
    name: str  # redis | hotkv | fakeredis: which arguments and setup it gets
    proc: subprocess.Popen[bytes]
    port: int
    logfile: Path
    #: the Result list its rates go to ("redis" = the reference, "hotkv"); default: name
    slot: str = ""

    @property
    def column(self) -> str:
        return self.slot or self.name

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def log_tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(self.logfile.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""


def _pin(cpu: int | None) -> list[str]:
    return ["taskset", "-c", str(cpu)] if cpu is not None else []


def _aof_args(aof: str) -> list[str]:
    if aof == "no":
        return ["--appendonly", "no"]
    return ["--appendonly", "yes", "--appendfsync", aof]


def _start_on_free_port(name: str, spawn: Callable[[int], subprocess.Popen[bytes]],
                        failure: Callable[[subprocess.Popen[bytes]], str], logfile: Path,
                        seconds: float, slot: str = "") -> ServerProcess:
    """Start a server that takes the port it is given, and wait until it answers PING;
    retried on another port, since a free port can be taken between the probe and the bind."""
    last_error = ""
    for _ in range(5):
        port = free_port()
        proc = spawn(port)
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                last_error = failure(proc)
                break
            try:
                client = RawClient(port)
            except OSError:
                time.sleep(0.02)
                continue
            try:
                if client.call(b"PING") == b"PONG":
                    return ServerProcess(name, proc, port, logfile, slot=slot)
            except (OSError, ConnectionError):
                pass
            finally:
                client.close()
            time.sleep(0.02)
        else:
            proc.kill()
            proc.wait()
            last_error = f"{name} did not answer PING in {seconds:g} s"
    raise RuntimeError(f"cannot start {name}: {last_error}")


def start_redis(workdir: Path, aof: str, cpu: int | None, binary: str) -> ServerProcess:
    directory = workdir / "redis"
    directory.mkdir()
    logfile = directory / "redis.log"

    def spawn(port: int) -> subprocess.Popen[bytes]:
        cmd = [*_pin(cpu), binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
               *_aof_args(aof), "--dir", str(directory), "--logfile", str(logfile),
               "--daemonize", "no"]
        return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    def failure(proc: subprocess.Popen[bytes]) -> str:
        return proc.stderr.read().decode(errors="replace") if proc.stderr else ""

    return _start_on_free_port("redis", spawn, failure, logfile, 10)


def start_hotkv(workdir: Path, aof: str, cpu: int | None, python: str,
                extra: Sequence[str]) -> ServerProcess:
    directory = workdir / "hotkv"
    directory.mkdir()
    logfile = directory / "hotkv.log"
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT / "src") + os.pathsep + env.get("PYTHONPATH", "")
    # port 0 and the port read back from the log: no race for a free port
    cmd = [*_pin(cpu), python, "-m", "hotkv_server", "--port", "0", "--bind", "127.0.0.1",
           "--dir", str(directory), "--logfile", str(logfile), *_aof_args(aof), *extra]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
            raise RuntimeError(f"hotkv exited with {proc.returncode}: {err}")
        try:
            match = READY.search(logfile.read_text(errors="replace"))
        except OSError:
            match = None
        if match:
            return ServerProcess("hotkv", proc, int(match.group(1)), logfile)
        time.sleep(0.05)
    proc.kill()
    proc.wait()
    raise RuntimeError("hotkv did not log 'ready to accept connections' in 20 s")


FAKEREDIS_SERVER = """
import sys
from fakeredis import TcpFakeServer
server = TcpFakeServer(("127.0.0.1", int(sys.argv[1])), server_type="redis")
server.daemon_threads = True
server.serve_forever()
"""


#: the bare loop: what Python itself allows a Redis-protocol server here (uvloop's
#: transport, hiredis' parser, one dict, one write per read); no ACL, no statistics, no
#: effects, no expiry: only enough of SET/GET/PING/INFO/CONFIG for redis-benchmark and setup
BARE_SERVER = """
import asyncio, sys
import hiredis, uvloop
store = {}
class Bare(asyncio.Protocol):
    def connection_made(self, transport):
        self.transport = transport
        self.reader = hiredis.Reader()
    def data_received(self, data):
        reader = self.reader
        reader.feed(data)
        out = []
        request = reader.gets()
        while request is not False:
            name = request[0].upper()
            if name == b"SET":
                store[request[1]] = request[2]
                out.append(b"+OK\\r\\n")
            elif name == b"GET":
                value = store.get(request[1])
                out.append(b"$-1\\r\\n" if value is None
                           else b"$%d\\r\\n%b\\r\\n" % (len(value), value))
            elif name == b"PING":
                out.append(b"+PONG\\r\\n")
            elif name == b"CONFIG":
                out.append(b"*2\\r\\n$%d\\r\\n%b\\r\\n$0\\r\\n\\r\\n"
                           % (len(request[-1]), request[-1]))
            elif name == b"INFO":
                out.append(b"$0\\r\\n\\r\\n")
            else:
                out.append(b"+OK\\r\\n")
            request = reader.gets()
        self.transport.write(b"".join(out))
async def main():
    server = await asyncio.get_running_loop().create_server(Bare, "127.0.0.1", int(sys.argv[1]))
    await server.serve_forever()
uvloop.run(main())
"""


def start_bare(cpu: int | None, python: str, logfile: Path) -> ServerProcess:
    def spawn(port: int) -> subprocess.Popen[bytes]:
        with open(logfile, "wb") as log_out:
            return subprocess.Popen([*_pin(cpu), python, "-c", BARE_SERVER, str(port)],
                                    stdout=log_out, stderr=subprocess.STDOUT)

    def failure(proc: subprocess.Popen[bytes]) -> str:
        return logfile.read_text(errors="replace")[-2000:]

    return _start_on_free_port("bare", spawn, failure, logfile, 20, slot="hotkv")


def start_fakeredis(cpu: int | None, python: str, logfile: Path) -> ServerProcess:
    """fakeredis' TCP server (a socketserver.ThreadingTCPServer) in its own process."""

    def spawn(port: int) -> subprocess.Popen[bytes]:
        with open(logfile, "wb") as log_out:
            return subprocess.Popen([*_pin(cpu), python, "-c", FAKEREDIS_SERVER, str(port)],
                                    stdout=log_out, stderr=subprocess.STDOUT)

    def failure(proc: subprocess.Popen[bytes]) -> str:
        return logfile.read_text(errors="replace")[-2000:]

    return _start_on_free_port("fakeredis", spawn, failure, logfile, 20, slot="redis")


# --- setup per row ----------------------------------------------------------------------------


def prepare(server: ServerProcess, row: Row) -> str | None:
    """Put in place what the row reads; return why the row cannot run on this server, or None."""
    client = RawClient(server.port)
    kind = row.setup or row.key
    try:
        if kind == "get":
            _fill(client, ((b"SET", key_name(i), VALUE) for i in range(STRING_KEYSPACE)))
        elif kind == "work_get" and server.name == "redis":
            _fill(client, ((b"HSET", SESSION, key_name(i), VALUE) for i in range(WORK_KEYSPACE)))
        elif kind == "conv_append" and server.name == "redis":
            client.call(b"DEL", SESSION)  # the list would otherwise grow over repeated runs
        elif kind == "evalsha":
            # both servers need the script in their cache (EVALSHA alone answers NOSCRIPT)
            reply = client.call(b"SCRIPT", b"LOAD", EVALSHA_SCRIPT)
            if isinstance(reply, hiredis.ReplyError):
                return _skip_reason(b"SCRIPT", reply)
        elif kind == "hget":  # every HGET hits, on both servers
            _fill(client, ((b"HSET", b"bench:hash", key_name(i), VALUE) for i in range(WORK_KEYSPACE)))
        elif kind == "lpush":
            client.call(b"DEL", b"bench:lpush")
        elif kind == "lrange_100":
            client.call(b"DEL", b"bench:list")
            _fill(client, ((b"RPUSH", b"bench:list", b"item:%d" % i) for i in range(LIST_ITEMS)))
        elif kind == "zrangebyscore":
            client.call(b"DEL", b"bench:zset")
            _fill(client, ((b"ZADD", b"bench:zset", b"%d" % i, b"m:%d" % i)
                           for i in range(ZSET_KEYSPACE)))
        if server.name != "hotkv" or row.probe is None:
            return None
        if kind == "conv_append":
            reply = client.call(b"AMEM.CONV.CREATE", SESSION, b"UPDATE")
            if isinstance(reply, hiredis.ReplyError) and "NOTFOUND" in str(reply):
                reply = client.call(b"AMEM.CONV.CREATE", SESSION)
            if isinstance(reply, hiredis.ReplyError):
                return _skip_reason(b"AMEM.CONV.CREATE", reply)
        reply = client.call(*row.probe)
        if isinstance(reply, hiredis.ReplyError):
            return _skip_reason(row.probe[0], reply)
        if kind == "work_get":
            _fill(client, ((b"AMEM.WORK.SET", SESSION, key_name(i), VALUE)
                           for i in range(WORK_KEYSPACE)))
        return None
    finally:
        client.close()


def _skip_reason(name: bytes, reply: Exception) -> str:
    text = str(reply)
    if "unknown command" in text.lower():
        return f"{name.decode()} is not implemented in hotkv yet (unknown command)"
    return f"{name.decode()} answered an error: {text}"


# --- running redis-benchmark ------------------------------------------------------------------


@dataclass
class Sample:
    rps: float
    requests: int
    seconds: float


class BenchmarkFailed(RuntimeError):
    pass


def redis_benchmark(binary: str, port: int, args: Sequence[str], pipeline: int, requests: int,
                    cpu: int | None) -> Sample:
    cmd = [*_pin(cpu), binary, "-h", "127.0.0.1", "-p", str(port), "-c", str(CLIENTS),
           "-n", str(requests), "-P", str(pipeline), "--csv", *args]
    started = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, timeout=600, check=False)
    elapsed = time.perf_counter() - started
    out = done.stdout.decode(errors="replace")
    if done.returncode != 0:
        err = (done.stderr.decode(errors="replace") + out).strip().splitlines()
        raise BenchmarkFailed(err[-1] if err else f"redis-benchmark exited {done.returncode}")
    rows = [r for r in csv.reader(io.StringIO(out)) if r and r[0] != "test"]
    if not rows:
        raise BenchmarkFailed(f"no CSV row in redis-benchmark output: {out!r}")
    return Sample(float(rows[-1][1]), requests, elapsed)


@dataclass
class Result:
    row: str
    title: str
    pipeline: int
    target: float
    redis: list[float] = field(default_factory=list)
    hotkv: list[float] = field(default_factory=list)
    note: str = ""

    @property
    def ratio(self) -> float | None:
        if not self.redis or not self.hotkv:
            return None
        return statistics.median(self.hotkv) / statistics.median(self.redis)

    @property
    def best_ratio(self) -> float | None:
        """Best run against best run: noise from other processes only ever slows a run
        down, so on a shared machine this is the steadier number."""
        if not self.redis or not self.hotkv:
            return None
        return max(self.hotkv) / max(self.redis)


@dataclass
class Settings:
    repeat: int
    seconds: float
    quick: bool
    benchmark: str
    bench_cpu: int | None
    pipelines: list[int]
    log: Callable[[str], None]


def _calibration_requests(pipeline: int, quick: bool) -> int:
    if quick:
        return 10_000 if pipeline <= 1 else 40_000
    return 20_000 if pipeline <= 1 else 150_000


def background_jobs(server: ServerProcess) -> int:
    """AOF rewrites plus snapshots the server has run since it started (INFO persistence's
    ``aof_rewrites`` and ``rdb_saves``, Redis 7's fields): a row during which one ran
    measured a forked child beside the server (on its pinned CPU), not only the server."""
    client = RawClient(server.port)
    try:
        text = client.call(b"INFO", b"persistence")
    finally:
        client.close()
    if not isinstance(text, bytes):  # fakeredis' server has no INFO persistence
        return 0
    fields = dict(line.split(":", 1) for line in text.decode().splitlines() if ":" in line)
    return sum(int(fields.get(name, "0") or 0) for name in ("aof_rewrites", "rdb_saves"))


def measure(row: Row, servers: Sequence[ServerProcess], settings: Settings) -> list[Result]:
    results: list[Result] = []
    skip: str | None = None
    for server in servers:
        reason = prepare(server, row)
        if reason and not skip:
            skip = reason
    for pipeline in settings.pipelines:
        result = Result(row.key, row.title, pipeline, row.target(pipeline))
        results.append(result)
        if skip:
            result.note = "skipped: " + skip
            continue
        jobs_before = {server.column: background_jobs(server) for server in servers}
        try:
            requests: dict[str, int] = {}
            for server in servers:
                args = row.hotkv_args if server.name == "hotkv" else row.redis_args
                first = redis_benchmark(settings.benchmark, server.port, args, pipeline,
                                        _calibration_requests(pipeline, settings.quick),
                                        settings.bench_cpu)
                if settings.quick:  # the calibration run is the measurement
                    getattr(result, server.column).append(first.rps)
                    requests[server.name] = 0
                else:
                    # the rate of a short run, times the wanted duration (rounded)
                    wanted = int(first.rps * settings.seconds)
                    requests[server.name] = max(10_000, round(wanted, -4))
            for rep in range(settings.repeat if not settings.quick else 0):
                for server in servers:
                    args = row.hotkv_args if server.name == "hotkv" else row.redis_args
                    sample = redis_benchmark(settings.benchmark, server.port, args, pipeline,
                                             requests[server.name], settings.bench_cpu)
                    getattr(result, server.column).append(sample.rps)
                    settings.log(f"  {row.title} P{pipeline} {server.name} #{rep + 1}: "
                                 f"{sample.rps:,.0f} req/s ({sample.seconds:.1f} s)")
        except BenchmarkFailed as exc:
            result.note = f"failed: {exc}"
        else:
            ran = {f"{server.name} ({server.column} column)":
                   background_jobs(server) - jobs_before[server.column] for server in servers}
            if any(ran.values()):
                result.note = "background rewrite/save during the runs: " + ", ".join(
                    f"{name} {count}" for name, count in ran.items() if count)
        settings.log(_summary_line(result))
    return results


def _summary_line(result: Result) -> str:
    if result.ratio is None:
        return f"{result.title} P{result.pipeline}: {result.note}"
    return (f"{result.title} P{result.pipeline}: reference "
            f"{statistics.median(result.redis):,.0f} hotkv {statistics.median(result.hotkv):,.0f}"
            f" ratio {result.ratio:.2f} (target {result.target:.2f})"
            + (f"; {result.note}" if result.note else ""))


# --- the table ----------------------------------------------------------------------------------


def _k(value: float) -> str:
    return f"{value:,.0f}"


def format_table(results: Sequence[Result], reference: str = "redis",
                 subject: str = "hotkv") -> str:
    ratio = f"ratio {subject}/{reference}" if " " not in subject + reference else "ratio"
    lines = [
        f"| test | -P | {reference} req/s (median) | {subject} req/s min / median / max "
        f"| {ratio} (median) | target | | ratio of best runs |",
        "|---|---:|---:|---:|---:|---:|---|---:|",
    ]
    for r in results:
        if r.ratio is None or r.best_ratio is None:
            lines.append(f"| {r.title} | {r.pipeline} | | | | >= {r.target:.2f} | {r.note} | |")
            continue
        hk = f"{_k(min(r.hotkv))} / {_k(statistics.median(r.hotkv))} / {_k(max(r.hotkv))}"
        verdict = "ok" if r.ratio >= r.target else "BELOW TARGET"
        if r.note:
            verdict += f" ({r.note})"
        lines.append(
            f"| {r.title} | {r.pipeline} | {_k(statistics.median(r.redis))} | {hk} "
            f"| {r.ratio:.2f} | >= {r.target:.2f} | {verdict} | {r.best_ratio:.2f} |"
        )
    return "\n".join(lines)


def pair_ratios(result: Result) -> list[float]:
    """hotkv / reference of each pair of runs (they ran one after the other)."""
    return [h / r for h, r in zip(result.hotkv, result.redis, strict=False) if r > 0]


def format_summary(results: Sequence[Result], groups: dict[str, str],
                   sem_rows: Sequence[dict[str, Any]]) -> str:
    """Every row's ratio, min / median / max over the runs, against its target."""
    lines = ["| what | -P | reference | ratio min / median / max | target | |",
             "|---|---:|---|---:|---:|---|"]
    for r in results:
        ratios = pair_ratios(r)
        reference = REFERENCE.get(groups.get(r.row, ""), "redis-server")
        if not ratios or r.ratio is None:
            lines.append(f"| {r.title} | {r.pipeline} | {reference} | | >= {r.target:g} "
                         f"| {r.note} |")
            continue
        verdict = "ok" if r.ratio >= r.target else "BELOW TARGET"
        if r.note:
            verdict += f" ({r.note})"
        lines.append(f"| {r.title} | {r.pipeline} | {reference} | {min(ratios):.2f} / "
                     f"{r.ratio:.2f} / {max(ratios):.2f} | >= {r.target:g} | {verdict} |")
    if sem_rows:
        sys.path.insert(0, str(ROOT / "benchmarks"))
        from sem_bench import row_verdict
    for row in sem_rows:
        rs = row["ratios"]
        med, verdict = row_verdict(row)
        lines.append(f"| {row['title']} | | {row.get('reference', '')} | {min(rs):.2f} / "
                     f"{med:.2f} / {max(rs):.2f} | {row['op']} {row['target']:g} | {verdict} |")
    return "\n".join(lines)


def _version(cmd: Sequence[str]) -> str:
    try:
        out = subprocess.run(cmd, capture_output=True, timeout=10, check=False).stdout
    except OSError:
        return "?"
    return out.decode(errors="replace").strip().splitlines()[0] if out else "?"


def environment(args: argparse.Namespace, pinned: bool) -> dict[str, Any]:
    return {
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "command": "benchmarks/run.py " + " ".join(shlex.quote(a) for a in sys.argv[1:]),
        "cpus": os.cpu_count(),
        "pinning": ("servers on CPU 0, redis-benchmark on CPU 1 (taskset)" if pinned
                    else "none"),
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "redis_server": _version([args.redis_server, "--version"]),
        "redis_benchmark": _version([args.redis_benchmark, "--version"]),
        "clients": CLIENTS,
        "aof": args.aof,
        "repeat": 1 if args.quick else args.repeat,
        "seconds_per_run": None if args.quick else args.seconds,
        "load_before": _load(),
    }


def _load() -> str:
    """The 1-minute load average: above ~0.5 before the start, other work shares the CPUs."""
    try:
        return f"{os.getloadavg()[0]:.2f}"
    except OSError:
        return "?"


# --- main ---------------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true",
                        help="a smoke test: few requests, one run per row, no calibration")
    parser.add_argument("--rows", default=None,
                        help="comma-separated rows, prefixes or groups: ping, set, get, string, "
                             "work, conv, amem, ping_inline ... (default: all)")
    parser.add_argument("--pipelines", default="1,16",
                        help="pipeline depths (-P), comma-separated (default 1,16)")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per row (default 3)")
    parser.add_argument("--seconds", type=float, default=2.5,
                        help="target duration of one timed run (default 2.5)")
    parser.add_argument("--aof", choices=("no", "everysec", "always"), default="no",
                        help="append-only file on both servers with this appendfsync "
                             "(default no AOF)")
    parser.add_argument("--json", metavar="PATH", help="also write the results as JSON here")
    parser.add_argument("--no-pin", action="store_true", help="do not pin processes to CPUs")
    parser.add_argument("--python", default=sys.executable, help="interpreter that runs hotkv")
    parser.add_argument("--hotkv-arg", action="append", default=[], metavar="ARG",
                        help="extra argument for hotkv (repeatable), e.g. --hotkv-arg=--hz "
                             "--hotkv-arg=10")
    parser.add_argument("--facts", type=int, default=None,
                        help="sem rows: facts of 768 dims (default 100000; 2000 with --quick)")
    parser.add_argument("--sem-cache", type=Path, default=None,
                        help="sem rows: where the built data set is kept (see sem_bench.py)")
    parser.add_argument("--rebuild", action="store_true", help="sem rows: build it again")
    parser.add_argument("--png", type=Path, default=ROOT / "benchmarks" / "recall_curve.png",
                        help="sem rows: the recall-vs-queries/s picture")
    parser.add_argument("--redis-server", default="redis-server")
    parser.add_argument("--redis-benchmark", default="redis-benchmark")
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    try:
        args.pipeline_list = [int(p) for p in args.pipelines.split(",") if p.strip()]
    except ValueError:
        parser.error("--pipelines takes integers, e.g. 1,16")
    if not args.pipeline_list or min(args.pipeline_list) < 1:
        parser.error("--pipelines takes integers >= 1")
    return args


@contextmanager
def running_servers(args: argparse.Namespace, workdir: Path,
                    server_cpu: int | None) -> Iterator[list[ServerProcess]]:
    servers: list[ServerProcess] = []
    try:
        servers.append(start_redis(workdir, args.aof, server_cpu, args.redis_server))
        servers.append(start_hotkv(workdir, args.aof, server_cpu, args.python, args.hotkv_arg))
        yield servers
    finally:
        for server in servers:
            server.stop()


@contextmanager
def group_servers(group: str, base: list[ServerProcess], args: argparse.Namespace,
                  workdir: Path, server_cpu: int | None) -> Iterator[list[ServerProcess]]:
    """The two servers a row group compares: reference first."""
    if group == "aof":
        sub = workdir / "aof"
        sub.mkdir(exist_ok=True)
        reference = ServerProcess("hotkv", base[1].proc, base[1].port, base[1].logfile,
                                  slot="redis")
        # automatic rewrites off: the rows measure appending, and the rows before a row fill
        # the AOF past auto-aof-rewrite-min-size, so a rewrite (its child on the server's
        # pinned CPU) would land in whichever row came next (the AMEM.CONV.APPEND anomaly)
        aof = start_hotkv(sub, "everysec", server_cpu, args.python,
                          [*args.hotkv_arg, "--auto-aof-rewrite-percentage", "0"])
        try:
            yield [reference, aof]
        finally:
            aof.stop()
    elif group in ("fakeredis", "ceiling"):
        fake = start_fakeredis(server_cpu, args.python, workdir / "fakeredis.log")
        subject = base[1]
        if group == "ceiling":  # redis-server in the subject's column
            subject = ServerProcess("redis", base[0].proc, base[0].port, base[0].logfile,
                                    slot="hotkv")
        try:
            yield [fake, subject]
        finally:
            fake.stop()
    elif group == "bare":
        bare = start_bare(server_cpu, args.python, workdir / "bare.log")
        try:
            yield [base[0], bare]
        finally:
            bare.stop()
    else:
        yield base


def run_sem(args: argparse.Namespace, log: Callable[[str], None]) -> dict[str, Any]:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import sem_bench

    facts = args.facts or (2000 if args.quick else 100_000)
    opts = sem_bench.Options(facts=facts, queries=100 if args.quick else 500,
                             seconds=1.0 if args.quick else 4.0,
                             repeat=1 if args.quick else args.repeat,
                             restarts=1 if args.quick else 3, cache=args.sem_cache,
                             rebuild=args.rebuild, python=args.python, png=args.png, log=log)
    result: dict[str, Any] = sem_bench.run(opts)
    result["rows"] = sem_bench.ratio_rows(result)
    return result


def format_sem(rows: Sequence[dict[str, Any]]) -> str:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import sem_bench

    return str(sem_bench.format_rows(rows))


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    rows = select_rows(args.rows)
    for tool in (args.redis_server, args.redis_benchmark):
        if shutil.which(tool) is None:
            print(f"error: {tool} not found on PATH", file=sys.stderr)
            return 2
    pinned = not args.no_pin and shutil.which("taskset") is not None and (os.cpu_count() or 1) >= 2
    server_cpu, bench_cpu = (0, 1) if pinned else (None, None)

    def log(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    settings = Settings(args.repeat, args.seconds, args.quick, args.redis_benchmark, bench_cpu,
                        args.pipeline_list, log)
    env = environment(args, pinned)
    results: list[Result] = []
    groups = {row.key: row.group for row in rows}
    tokens = {t.strip().lower() for t in (args.rows or "all").split(",")}
    want_sem = bool(tokens & {"all", *OTHER_GROUPS})
    sem: dict[str, Any] | None = None
    with tempfile.TemporaryDirectory(prefix="hotkv-bench-") as tmp:
        try:
            if rows:
                with running_servers(args, Path(tmp), server_cpu) as servers:
                    log(f"redis-server on port {servers[0].port}, hotkv on port "
                        f"{servers[1].port}; pinning: {env['pinning']}")
                    for group in dict.fromkeys(row.group for row in rows):
                        with group_servers(group, servers, args, Path(tmp),
                                           server_cpu) as pair:
                            for row in (r for r in rows if r.group == group):
                                results.extend(measure(row, pair, settings))
                                for server in pair:
                                    if server.proc.poll() is not None:
                                        raise RuntimeError(
                                            f"{server.name} died during {row.title}:\n"
                                            f"{server.log_tail()}")
            if want_sem:
                sem = run_sem(args, log)
        except (RuntimeError, OSError) as exc:  # a server that would not start or went away
            print(f"error: {exc}", file=sys.stderr)
            return 1
    env["load_after"] = _load()
    print(f"Date: {env['date']}  ")
    print(f"Command: `{env['command']}`  ")
    print(f"Machine: {env['cpus']} CPUs, {env['python']}, {env['redis_server']}; "
          f"{CLIENTS} clients; pinning: {env['pinning']}; AOF: {env['aof']}; "
          f"{env['repeat']} timed run(s) per cell; load average {env['load_before']} before, "
          f"{env['load_after']} after")
    print()
    main_rows = [r for r in results if groups[r.row] not in REFERENCE]
    if main_rows:
        print(format_table(main_rows))
    for group, reference in REFERENCE.items():
        part = [r for r in results if groups[r.row] == group]
        if part:
            print()
            print(format_table(part, reference, SUBJECT.get(group, "hotkv")))
    sem_rows: list[dict[str, Any]] = []
    if sem is not None:
        sem_rows = sem["rows"]
        print()
        print(format_sem(sem_rows))
    if len({groups[r.row] for r in results}) + bool(sem_rows) > 1:
        print()
        print("Every ratio (min / median / max over the paired runs):")
        print()
        print(format_summary(results, groups, sem_rows))
    if args.json:
        payload = {"environment": env,
                   "results": [{**asdict(r), "ratio": r.ratio, "best_ratio": r.best_ratio,
                                "group": groups[r.row], "ratios": pair_ratios(r)}
                               for r in results]}
        if sem is not None:
            payload["sem"] = sem
        Path(args.json).write_text(json.dumps(payload, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
