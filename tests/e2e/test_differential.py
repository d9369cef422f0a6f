"""Differential tests: the same command sequences to a real redis-server and to hotkv.

Each scenario is a list of steps sent, one at a time and interleaved, to both servers over
raw sockets in RESP2 and in RESP3. Replies are parsed into tagged trees that keep the
RESP type of every element (simple string vs bulk, null bulk vs null array, map vs array,
error text), and compared exactly, except where the two servers may legitimately differ:

* TTL within 1 s and PTTL within 150 ms (the two servers read their clocks at other times);
* KEYS and SCAN list keys in an order of their own hash tables: compared as sorted lists,
  and a SCAN walk is compared by the set of keys it returns, not by its cursors;
* RANDOMKEY may pick any key: only "a key" vs "null" is compared.

redis-server must be on PATH: the test fails (not skips) without it, CI installs it.
"""

from __future__ import annotations

import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from typing import Any

import pytest

from helpers import HotkvProcess, free_port, require_tool

LLONG_MAX = 2**63 - 1

# --- a minimal RESP2/RESP3 client that keeps reply types ----------------------------------


class Incomplete(Exception):
    """The buffer does not hold a whole reply yet."""


def _line(buf: bytes, pos: int) -> tuple[bytes, int]:
    end = buf.find(b"\r\n", pos)
    if end < 0:
        raise Incomplete
    return buf[pos:end], end + 2


def parse_reply(buf: bytes, pos: int = 0) -> tuple[Any, int]:
    """One reply from ``buf[pos:]`` as a tagged tree ``(type-byte, payload)``, and the end."""
    if pos >= len(buf):
        raise Incomplete
    kind = chr(buf[pos])
    head, pos = _line(buf, pos + 1)
    if kind in "+-(":
        return (kind, head), pos
    if kind == ":":
        return (kind, int(head)), pos
    if kind == ",":
        return (kind, head), pos
    if kind == "#":
        return (kind, head == b"t"), pos
    if kind == "_":
        return ("_", None), pos
    if kind in "$=!":
        n = int(head)
        if n < 0:
            return (kind, None), pos
        if len(buf) < pos + n + 2:
            raise Incomplete
        return (kind, buf[pos : pos + n]), pos + n + 2
    if kind in "*~>%|":
        n = int(head)
        if n < 0:
            return (kind, None), pos
        count = 2 * n if kind in "%|" else n
        items = []
        for _ in range(count):
            item, pos = parse_reply(buf, pos)
            items.append(item)
        if kind == "|":  # an attribute precedes the real reply: drop it
            return parse_reply(buf, pos)
        return (kind, items), pos
    raise AssertionError(f"unknown RESP type {kind!r} in {buf[pos - 1 :][:60]!r}")


def request_bytes(argv: list[Any]) -> bytes:
    """One request as a RESP array of bulk strings (a str or a number as its text)."""
    parts = [b"*%d\r\n" % len(argv)]
    for arg in argv:
        raw = arg if isinstance(arg, bytes) else str(arg).encode()
        parts.append(b"$%d\r\n%b\r\n" % (len(raw), raw))
    return b"".join(parts)


class RespConnection:
    """One connection, one request at a time."""

    def __init__(self, port: int, protocol: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.buf = b""
        if protocol == 3:
            reply = self.call(["HELLO", "3"])
            assert reply[0] == "%", reply

    def call(self, argv: list[Any]) -> Any:
        self.sock.sendall(request_bytes(argv))
        return self.read()

    def read(self) -> Any:
        """The next reply (waiting for it as long as the socket's timeout allows)."""
        while True:
            try:
                reply, end = parse_reply(self.buf)
            except Incomplete:
                data = self.sock.recv(65536)
                if not data:
                    raise ConnectionError("server closed the connection") from None
                self.buf += data
                continue
            self.buf = self.buf[end:]
            return reply

    def close(self) -> None:
        self.sock.close()


# --- the real redis-server --------------------------------------------------------------


class RedisProcess:
    def __init__(self) -> None:
        binary = require_tool("redis-server")
        self.tmp = tempfile.TemporaryDirectory(prefix="hotkv-redis-")
        self.port = free_port()
        self.proc = subprocess.Popen(
            [binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", self.tmp.name, "--daemonize", "no",
             "--logfile", ""],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while True:
            try:
                conn = RespConnection(self.port, 2)
                if conn.call(["PING"]) == ("+", b"PONG"):
                    conn.close()
                    return
                conn.close()
            except OSError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                pytest.fail(f"redis-server did not start on port {self.port}", pytrace=False)
            time.sleep(0.05)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.tmp.cleanup()


@pytest.fixture(scope="module")
def redis_server() -> Iterator[RedisProcess]:
    proc = RedisProcess()
    try:
        yield proc
    finally:
        proc.stop()


# --- scenarios ----------------------------------------------------------------------------
# A step is an argv list (sent on the main connection), or a tuple:
#   ("other", argv)    on a second connection (WATCH tests)
#   ("sleep", ms)      wait
#   ("scanall", opts)  a whole SCAN walk with these options, compared as a set of keys

Step = list[Any] | tuple[Any, ...]

STRINGS: list[Step] = [
    ["GET", "k"],
    ["SET", "k", "v"],
    ["GET", "k"],
    ["set", "k", "v2"],
    ["GeT", "k"],
    ["SET", b"\x00\xffbin", b"\r\n\x00"],
    ["GET", b"\x00\xffbin"],
    ["SET", "empty", ""],
    ["GET", "empty"],
    ["STRLEN", "empty"],
    ["STRLEN", "k"],
    ["STRLEN", "nope"],
    ["SET", "k", "x", "NX"],
    ["SET", "k", "x", "XX"],
    ["GET", "k"],
    ["SET", "n", "x", "XX"],
    ["SET", "n", "1", "nx"],
    ["SET", "n", "2", "GET"],
    ["SET", "fresh", "1", "GET"],
    ["SET", "n", "3", "NX", "GET"],
    ["SET", "m", "3", "NX", "GET"],
    ["SET", "absent", "3", "XX", "GET"],
    ["SET", "n", "4", "XX", "GET"],
    ["SET", "n", "5", "GET", "GET"],
    ["SET", "n", "6", "NX", "NX"],
    ["SET", "n", "6", "XX", "XX"],
    ["GET", "n"],
    ["SET", "k", "v", "NX", "XX"],
    ["SET", "k", "v", "XX", "NX"],
    ["SET", "k", "v", "EX", "10", "PX", "100"],
    ["SET", "k", "v", "EXAT", "10", "PXAT", "100"],
    ["SET", "k", "v", "KEEPTTL", "EX", "10"],
    ["SET", "k", "v", "PX", "10", "KEEPTTL"],
    ["SET", "k", "v", "EX"],
    ["SET", "k", "v", "FOO"],
    ["SET", "k", "v", "EX", "10", "FOO"],
    ["SET", "k", "v", "FOO", "EX", "abc"],
    ["SET", "k", "v", "EX", "abc", "FOO"],
    ["SET", "k", "v", "EX", "NX"],
    ["SET", "k", "v", "EX", "0"],
    ["SET", "k", "v", "EX", "-1"],
    ["SET", "k", "v", "PX", "0"],
    ["SET", "k", "v", "EXAT", "-5"],
    ["SET", "k", "v", "PXAT", "0"],
    ["SET", "k", "v", "EX", "abc"],
    ["SET", "k", "v", "EX", "1.5"],
    ["SET", "k", "v", "EX", "010"],
    ["SET", "k", "v", "EX", " 10"],
    ["SET", "k", "v", "PX", str(LLONG_MAX)],
    ["SET", "k", "v", "EX", str(LLONG_MAX // 1000)],
    ["SET", "k", "v", "EX", str(LLONG_MAX // 1000 + 1)],
    ["SET", "k", "v", "PX", "9223372036854775808"],
    ["SET", "k", "v", "GET", "EX", "0"],
    ["GET", "k"],
    ["SET", "far", "v", "EXAT", str(LLONG_MAX // 1000)],
    ["SET", "far2", "v", "PXAT", str(LLONG_MAX)],
    ["PTTL", "far2"],
    ["SET", "ex", "v", "EX", "100"],
    ["TTL", "ex"],
    ["SET", "ex", "v", "EX", "10", "EX", "20"],
    ["TTL", "ex"],
    ["SET", "ex", "w", "KEEPTTL"],
    ["TTL", "ex"],
    ["GET", "ex"],
    ["SET", "ex", "w", "KEEPTTL", "GET", "XX"],
    ["TTL", "ex"],
    ["SET", "ex", "plain"],
    ["TTL", "ex"],
    ["SET", "px", "v", "PX", "100000", "NX"],
    ["PTTL", "px"],
    ["SET", "exat", "v", "EXAT", "4102444800"],
    ["TTL", "exat"],
    ["SET", "pxat", "v", "PXAT", "4102444800000", "XX"],
    ["SET", "past", "v", "PXAT", "1"],
    ["GET", "past"],
    ["SET", "past", "v", "EXAT", "1", "GET"],
    ["EXISTS", "past"],
    ["MSET", "a", "1", "b", "2", "a", "3"],
    ["MGET", "a", "b", "nope", "a"],
    ["MSET", "ex", "over"],
    ["TTL", "ex"],
    ["MSET", "a", "1", "b"],
    ["MSET"],
    ["MSET", "a"],
    ["MGET"],
    ["GET"],
    ["GET", "a", "b"],
    ["SET", "k"],
    ["STRLEN"],
    ["STRLEN", "a", "b"],
]

COUNTERS: list[Step] = [
    ["INCR", "c"],
    ["INCR", "c"],
    ["INCRBY", "c", "10"],
    ["INCRBY", "c", "-20"],
    ["DECR", "c"],
    ["DECRBY", "c", "5"],
    ["DECRBY", "c", "-5"],
    ["GET", "c"],
    ["DECR", "d"],
    ["DECRBY", "e", "7"],
    ["SET", "t", "5", "EX", "100"],
    ["INCR", "t"],
    ["TTL", "t"],
    ["SET", "max", str(LLONG_MAX - 1)],
    ["INCR", "max"],
    ["INCR", "max"],
    ["GET", "max"],
    ["INCRBY", "max", "-1"],
    ["SET", "min", str(-LLONG_MAX)],
    ["DECR", "min"],
    ["DECR", "min"],
    ["INCRBY", "min", str(-LLONG_MAX - 1)],
    ["DECRBY", "x", str(-LLONG_MAX - 1)],
    ["DECRBY", "x", str(LLONG_MAX)],
    ["INCRBY", "x", "abc"],
    ["INCRBY", "x", ""],
    ["INCRBY", "x", "9223372036854775808"],
    ["INCRBY", "x", "1.0"],
    ["INCRBY", "x", "+1"],
    ["DECRBY", "x", "0x10"],
    ["EXISTS", "x"],
    *[
        step
        for stored in [" 1", "1 ", "+1", "-0", "007", "1.5", "abc", "", "9223372036854775808", "1e3", "0"]
        for step in (["SET", "s", stored], ["INCR", "s"], ["GET", "s"])
    ],
    ["INCR"],
    ["INCR", "a", "b"],
    ["INCRBY", "a"],
    ["DECRBY", "a", "1", "2"],
]

KEYSPACE: list[Step] = [
    ["DBSIZE"],
    ["RANDOMKEY"],
    ["KEYS", "*"],
    ["MSET", "user:1", "a", "user:2", "b", "user:10", "c", "job:1", "d", "a*b", "e", "ab", "f"],
    ["DBSIZE"],
    ["RANDOMKEY"],
    ["KEYS", "*"],
    ["KEYS", "user:?"],
    ["KEYS", "user:*"],
    ["KEYS", "user:[12]*"],
    ["KEYS", "user:[^1]"],
    ["KEYS", "a\\*b"],
    ["KEYS", "a*b"],
    ["KEYS", "[a-j]*"],
    ["KEYS", "nothing*"],
    ["KEYS"],
    ["KEYS", "a", "b"],
    ["EXISTS", "user:1", "user:1", "nope", "ab"],
    ["EXISTS", "nope"],
    ["EXISTS"],
    ["TYPE", "user:1"],
    ["TYPE", "nope"],
    ["TYPE"],
    ["DEL", "user:1", "user:1", "nope"],
    ["DEL", "nope"],
    ["UNLINK", "user:2", "user:10"],
    ["UNLINK", "user:2"],
    ["DEL"],
    ["UNLINK"],
    ["DBSIZE"],
    ["DBSIZE", "extra"],
    ["KEYS", "*"],
    ["SCAN", "0", "COUNT", "1000"],
    ["SCAN", "0", "MATCH", "a*", "COUNT", "1000"],
    ["SCAN", "0", "TYPE", "string", "COUNT", "1000"],
    ["SCAN", "0", "TYPE", "STRING", "COUNT", "1000"],
    ["SCAN", "0", "TYPE", "hash", "COUNT", "1000"],
    ["SCAN", "0", "TYPE", "bogus", "COUNT", "1000"],
    ["SCAN", "0", "COUNT", "5", "COUNT", "1000"],
    ["SCAN", "0", "MATCH", "zzz", "MATCH", "a*", "COUNT", "1000"],
    ["SCAN", "abc"],
    ["SCAN", " 1"],
    ["SCAN", "1 "],
    ["SCAN", "18446744073709551616"],
    ["SCAN", "-"],
    ["SCAN", "0", "COUNT", "0"],
    ["SCAN", "0", "COUNT", "-1"],
    ["SCAN", "0", "COUNT", "abc"],
    ["SCAN", "0", "MATCH"],
    ["SCAN", "0", "TYPE"],
    ["SCAN", "0", "FOO", "bar"],
    ["SCAN", "0", "COUNT"],
    ["SCAN"],
    ["MSET", *[x for i in range(300) for x in (f"bulk:{i}", str(i))]],
    ("scanall", []),
    ("scanall", ["COUNT", "7"]),
    ("scanall", ["MATCH", "bulk:1?", "COUNT", "3"]),
    ("scanall", ["MATCH", "*:2*"]),
    ("scanall", ["TYPE", "string", "COUNT", "50"]),
    ("scanall", ["TYPE", "list"]),
    ["DBSIZE"],
    ["FLUSHALL"],
    ["DBSIZE"],
    ["SCAN", "0"],
    ["RANDOMKEY"],
]

EXPIRY: list[Step] = [
    ["EXPIRE", "k", "10"],
    ["TTL", "k"],
    ["PTTL", "k"],
    ["PERSIST", "k"],
    ["SET", "k", "v"],
    ["TTL", "k"],
    ["PTTL", "k"],
    ["PERSIST", "k"],
    ["EXPIRE", "k", "100"],
    ["TTL", "k"],
    ["PEXPIRE", "k", "50000"],
    ["PTTL", "k"],
    ["EXPIREAT", "k", "4102444800"],
    ["TTL", "k"],
    ["PEXPIREAT", "k", "4102444800000"],
    ["PTTL", "k"],
    ["PERSIST", "k"],
    ["PERSIST", "k"],
    ["TTL", "k"],
    ["PEXPIRE", "k", "1600"],
    ["TTL", "k"],
    ["PEXPIRE", "k", "1400"],
    ["TTL", "k"],
    ["PERSIST", "k"],
    ["EXPIRE", "k", "10", "XX"],
    ["EXPIRE", "k", "10", "GT"],
    ["EXPIRE", "k", "10", "LT"],
    ["TTL", "k"],
    ["EXPIRE", "k", "20", "NX"],
    ["EXPIRE", "k", "20", "gt"],
    ["TTL", "k"],
    ["EXPIRE", "k", "30", "LT"],
    ["EXPIRE", "k", "5", "LT", "XX"],
    ["TTL", "k"],
    ["EXPIRE", "k", "10", "XX", "XX"],
    ["PEXPIRE", "k", "10500", "GT"],  # clearly later than the 10 s set just before
    ["PEXPIREAT", "k", "4102444800000", "LT"],
    ["EXPIREAT", "k", "4102444800", "GT"],
    ["TTL", "k"],
    ["EXPIRE", "nope", "10", "NX"],
    ["EXPIRE", "k", "10", "FOO"],
    ["EXPIRE", "k", "abc", "foo"],
    ["EXPIRE", "k", "1", "2"],
    ["EXPIRE", "k", "10", "NX", "XX"],
    ["EXPIRE", "k", "10", "GT", "NX"],
    ["EXPIRE", "k", "10", "LT", "NX"],
    ["PEXPIRE", "k", "10", "GT", "LT"],
    ["EXPIRE", "k", "10", "NX", "GT", "LT"],
    ["EXPIRE", "k", "abc"],
    ["EXPIRE", "k", "1.5"],
    ["EXPIRE", "k", ""],
    ["EXPIRE", "k", str(LLONG_MAX)],
    ["EXPIRE", "k", str(LLONG_MAX // 1000)],
    ["EXPIRE", "k", str(-LLONG_MAX - 1)],
    ["PEXPIRE", "k", str(LLONG_MAX)],
    ["EXPIREAT", "k", str(LLONG_MAX // 1000 + 1)],
    ["EXPIREAT", "k", "9223372036854775808"],
    ["EXPIRE", "k"],
    ["PEXPIREAT"],
    ["TTL"],
    ["PTTL", "a", "b"],
    ["PERSIST"],
    ["TTL", "k"],
    ["PEXPIREAT", "k", str(LLONG_MAX)],
    ["PTTL", "k"],
    ["EXPIRE", "k", "0"],
    ["EXISTS", "k"],
    ["SET", "k", "v"],
    ["EXPIRE", "k", "-5"],
    ["GET", "k"],
    ["SET", "k", "v"],
    ["PEXPIRE", "k", str(-LLONG_MAX - 1)],
    ["EXISTS", "k"],
    ["SET", "k", "v"],
    ["EXPIREAT", "k", "1"],
    ["TYPE", "k"],
    ["SET", "k", "v"],
    ["PEXPIREAT", "k", "1", "NX"],
    ["DBSIZE"],
    # lazy expiry: every read treats a passed deadline as absent
    ["SET", "short", "v", "PX", "100"],
    ["SET", "short2", "v", "PX", "100"],
    ["SET", "short3", "v", "EX", "1"],
    ["SET", "long", "v", "EX", "100"],
    ["GET", "short"],
    ["EXISTS", "short", "long"],
    ("sleep", 250),
    ["GET", "short"],
    ["EXISTS", "short2", "long"],
    ["TTL", "short"],
    ["MGET", "short", "long"],
    ["EXPIRE", "short", "10"],
    ["SET", "short", "again", "XX"],
    ["SET", "short", "again", "NX", "GET"],
    ["INCR", "short2"],
    ["STRLEN", "short3"],
    ("sleep", 900),
    ["TYPE", "short3"],
    ["PERSIST", "short3"],
    ["KEYS", "*"],
    ["DBSIZE"],
    ("scanall", []),
]

TRANSACTIONS: list[Step] = [
    ["MULTI"],
    ["SET", "k", "1"],
    ["INCR", "k"],
    ["GET", "k"],
    ["EXPIRE", "k", "100"],
    ["SET", "k", "x", "NX", "GET"],
    ["MGET", "k", "nope"],
    ["EXEC"],
    ["TTL", "k"],
    ["MULTI"],
    ["SET", "s", "abc"],
    ["INCR", "s"],
    ["SET", "k", "v", "EX", "0"],
    ["GET", "s"],
    ["EXEC"],
    ["MULTI"],
    ["SET", "k"],
    ["GET", "k"],
    ["EXEC"],
    ["GET", "k"],
    ["MULTI"],
    ["NOSUCHCOMMAND", "a", "b"],
    ["EXEC"],
    ["MULTI"],
    ["MULTI"],
    ["WATCH", "k"],
    ["DISCARD"],
    ["DISCARD"],
    ["EXEC"],
    ["MULTI"],
    ["PING"],
    ["ECHO", "hi"],
    ["SELECT", "0"],
    ["DEL", "k", "s"],
    ["EXEC"],
    ["MULTI"],
    ["EXEC"],
    # WATCH: a write to a watched key from another client aborts EXEC
    ["SET", "w", "1"],
    ["WATCH", "w"],
    ("other", ["SET", "w", "2"]),
    ["MULTI"],
    ["SET", "w", "3"],
    ["EXEC"],
    ["GET", "w"],
    ["WATCH", "w"],
    ("other", ["EXPIRE", "w", "100"]),
    ["MULTI"],
    ["SET", "w", "4"],
    ["EXEC"],
    ["WATCH", "w"],
    ("other", ["GET", "w"]),
    ("other", ["EXPIRE", "nope", "100"]),
    ["MULTI"],
    ["SET", "w", "5"],
    ["EXEC"],
    ["GET", "w"],
    ["WATCH", "w", "v"],
    ("other", ["INCR", "v"]),
    ["UNWATCH"],
    ["MULTI"],
    ["INCR", "v"],
    ["EXEC"],
    ["WATCH", "w"],
    ("other", ["DEL", "w"]),
    ["MULTI"],
    ["GET", "w"],
    ["EXEC"],
    ["WATCH", "gone"],
    ("other", ["DEL", "gone"]),
    ["MULTI"],
    ["GET", "gone"],
    ["EXEC"],
    ["WATCH"],
    ["UNWATCH", "x"],
    ["EXEC", "x"],
    ["MULTI"],
    ["SET", "t", "1"],
    ["EXEC", "x"],
    ["EXEC"],
    ["GET", "t"],
]

CONNECTION: list[Step] = [
    ["PING"],
    ["ping", "hello"],
    ["PING", ""],
    ["PING", "a", "b"],
    ["ECHO", "hello world"],
    ["ECHO", b"\x00\r\n"],
    ["ECHO"],
    ["ECHO", "a", "b"],
    ["SELECT", "0"],
    ["SELECT", "16"],
    ["SELECT", "-1"],
    ["SELECT", "abc"],
    ["SELECT", "00"],
    ["SELECT"],
    ["NOSUCHCOMMAND"],
    ["NOSUCHCOMMAND", "a", b"b c"],
    ["GET", "k", "extra", "args"],
]

SCENARIOS = {
    "strings": STRINGS,
    "counters": COUNTERS,
    "keyspace": KEYSPACE,
    "expiry": EXPIRY,
    "transactions": TRANSACTIONS,
    "connection": CONNECTION,
}


# --- comparison ---------------------------------------------------------------------------


def _int_payload(reply: Any) -> int | None:
    return reply[1] if reply[0] == ":" else None


def _same_ttl(a: Any, b: Any, tolerance: int) -> bool:
    x, y = _int_payload(a), _int_payload(b)
    if x is None or y is None or x < 0 or y < 0:
        return bool(a == b)
    return abs(x - y) <= tolerance


def normalise(name: str, reply: Any) -> Any:
    """Remove what may legitimately differ: key order, SCAN cursors, RANDOMKEY's pick."""
    if reply[0] == "-":
        return reply
    if name == "keys" and reply[0] == "*":
        return ("*", sorted(reply[1]))
    if name == "scan" and reply[0] == "*":
        cursor, keys = reply[1]
        return ("*", [cursor, (keys[0], sorted(keys[1]))])
    if name == "randomkey" and reply[0] == "$" and reply[1] is not None:
        return ("$", "<some key>")
    return reply


def scan_walk(conn: RespConnection, options: list[str]) -> tuple[list[bytes], int]:
    seen: list[bytes] = []
    cursor = b"0"
    calls = 0
    while True:
        reply = conn.call(["SCAN", cursor, *options])
        assert reply[0] == "*", reply
        (_, cursor), (_, keys) = reply[1]
        seen.extend(key for _, key in keys)
        calls += 1
        if cursor == b"0" or calls > 10_000:
            return sorted(set(seen)), len(seen) - len(set(seen))


def run_scenario(redis_port: int, hotkv_port: int, protocol: int, steps: list[Step]) -> None:
    conns = {
        name: (RespConnection(redis_port, protocol), RespConnection(hotkv_port, protocol))
        for name in ("main", "other")
    }
    try:
        for conn_pair in conns.values():
            for conn in conn_pair:
                assert conn.call(["FLUSHALL"]) == ("+", b"OK")
        for index, step in enumerate(steps):
            where = "main"
            if isinstance(step, tuple):
                kind, arg = step
                if kind == "sleep":
                    time.sleep(arg / 1000)
                    continue
                if kind == "scanall":
                    expected, _ = scan_walk(conns["main"][0], arg)
                    got, duplicates = scan_walk(conns["main"][1], arg)
                    assert got == expected, f"step {index}: SCAN walk {arg}"
                    assert duplicates == 0, f"step {index}: SCAN walk {arg} repeated keys"
                    continue
                assert kind == "other", step
                where, argv = "other", arg
            else:
                argv = step
            redis_conn, hotkv_conn = conns[where]
            expected = redis_conn.call(argv)
            got = hotkv_conn.call(argv)
            name = str(argv[0]).lower() if argv else ""
            if name in ("ttl", "pttl"):
                ok = _same_ttl(expected, got, 1 if name == "ttl" else 150)
            else:
                expected, got = normalise(name, expected), normalise(name, got)
                ok = expected == got
            assert ok, (
                f"step {index} {argv!r} (RESP{protocol}, {where} connection):\n"
                f"  redis: {expected!r}\n  hotkv: {got!r}"
            )
    finally:
        for conn_pair in conns.values():
            for conn in conn_pair:
                conn.close()


@pytest.mark.parametrize("protocol", [2, 3], ids=["resp2", "resp3"])
@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_same_replies_as_redis(
    redis_server: RedisProcess, server: HotkvProcess, scenario: str, protocol: int
) -> None:
    run_scenario(redis_server.port, server.port, protocol, SCENARIOS[scenario])


def test_reply_parser_keeps_types() -> None:
    assert parse_reply(b"+OK\r\n") == (("+", b"OK"), 5)
    assert parse_reply(b"$-1\r\n")[0] == ("$", None)
    assert parse_reply(b"*-1\r\n")[0] == ("*", None)
    assert parse_reply(b"%1\r\n$1\r\na\r\n:1\r\n")[0] == ("%", [("$", b"a"), (":", 1)])
    with pytest.raises(Incomplete):
        parse_reply(b"*2\r\n:1\r\n")
