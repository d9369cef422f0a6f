"""Blocking list and sorted set commands against a real redis-server 7, in RESP2 and RESP3.

Each scenario drives several connections (A, B, C block; D writes) the same way on both
servers and records a transcript: every reply read, and ``<waiting>`` where a blocked
client must still have nothing. The transcripts must be equal, so wake-up order (first come
first served), pushes inside MULTI/EXEC, LMOVE into a list a client waits on, BLMOVE chains,
timeouts, CLIENT UNBLOCK and closed waiters behave as Redis's.
"""

from __future__ import annotations

import re
import socket
import time
from typing import Any

import pytest

from e2e.test_differential import Incomplete, parse_reply, request_bytes
from helpers import HotkvProcess, RedisServer

WAITING = ("<waiting>", None)


class Peer:
    """A raw connection whose replies are read only when the scenario asks."""

    def __init__(self, port: int, protocol: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        self.buf = b""
        if protocol == 3:
            self.send(["HELLO", "3"])
            assert self.read(5.0)[0] == "%"

    def send(self, argv: list[Any]) -> None:
        self.sock.sendall(request_bytes(argv))

    def read(self, timeout: float) -> Any:
        deadline = time.monotonic() + timeout
        while True:
            try:
                reply, end = parse_reply(self.buf)
                self.buf = self.buf[end:]
                return reply
            except Incomplete:
                left = deadline - time.monotonic()
                if left <= 0:
                    return WAITING
                self.sock.settimeout(left)
                try:
                    data = self.sock.recv(65536)
                except TimeoutError:
                    return WAITING
                if not data:
                    return ("<closed>", None)
                self.buf += data

    def close(self) -> None:
        self.sock.close()


#: steps: (peer, argv) send and, for D, read the reply; ("block", peer, argv) send and give
#: the server a moment to park it; ("read", peer) wait for a reply; ("idle", peer) record
#: whether a reply came within 0.2 s; ("close", peer); ("sleep", seconds)
Step = tuple[Any, ...]


def clients_field(probe: Peer, field: bytes) -> int:
    probe.send(["INFO", "clients"])
    reply = probe.read(5.0)
    text = reply[1] if isinstance(reply, tuple) else reply
    match = re.search(rb"\b" + field + rb":(\d+)", text)
    assert match, reply
    return int(match.group(1))


def _settle(probe: Peer, field: bytes, before: int, step: int) -> None:
    """Wait until INFO's ``field`` has moved from ``before`` by ``step`` (the server parked a
    blocked call, or saw a connection go), for at most 0.1 s: a call that does not block (in
    MULTI, or served at once) leaves the count as it was."""
    deadline = time.monotonic() + 0.1
    while time.monotonic() < deadline:
        if clients_field(probe, field) == before + step:
            return
        time.sleep(0.002)


def transcript(port: int, protocol: int, steps: list[Step]) -> list[Any]:
    peers = {name: Peer(port, protocol) for name in "ABCD"}
    probe = Peer(port, 2)
    out: list[Any] = []
    try:
        peers["D"].send(["FLUSHALL"])
        peers["D"].read(5)
        for step in steps:
            kind = step[0]
            if kind == "block":
                before = clients_field(probe, b"blocked_clients")
                peers[step[1]].send(step[2])
                _settle(probe, b"blocked_clients", before, 1)
            elif kind == "read":
                out.append((step[1], peers[step[1]].read(5.0)))
            elif kind == "idle":
                out.append((step[1], peers[step[1]].read(0.2)))
            elif kind == "close":
                before = clients_field(probe, b"connected_clients")
                peers[step[1]].close()
                _settle(probe, b"connected_clients", before, -1)
            elif kind == "sleep":
                time.sleep(step[1])
            else:
                name, argv = step
                peers[name].send(argv)
                out.append((name, peers[name].read(5.0)))
    finally:
        for peer in [*peers.values(), probe]:
            try:
                peer.close()
            except OSError:
                pass
    return out


FIFO: list[Step] = [
    ("block", "A", ["BLPOP", "k", "0"]),
    ("block", "B", ["BLPOP", "k", "0"]),
    ("block", "C", ["BRPOP", "k", "0"]),
    ("D", ["RPUSH", "k", "1", "2"]),
    ("read", "A"), ("read", "B"), ("idle", "C"),
    ("D", ["LLEN", "k"]),
    ("D", ["RPUSH", "k", "3", "4"]),
    ("read", "C"),
    ("D", ["LRANGE", "k", "0", "-1"]),
]

SEVERAL_KEYS: list[Step] = [
    ("block", "A", ["BLPOP", "k1", "k2", "0"]),
    ("block", "B", ["BLPOP", "k2", "0"]),
    ("D", ["RPUSH", "k2", "x"]),
    ("read", "A"), ("idle", "B"),
    ("D", ["RPUSH", "k1", "y"]),
    ("idle", "B"),
    ("D", ["LPUSH", "k2", "z", "w"]),
    ("read", "B"),
    ("D", ["LRANGE", "k2", "0", "-1"]),
    ("D", ["LRANGE", "k1", "0", "-1"]),
]

IN_MULTI: list[Step] = [
    ("block", "A", ["BLPOP", "k", "0"]),
    ("block", "B", ["BRPOP", "k", "0"]),
    ("D", ["MULTI"]),
    ("D", ["RPUSH", "k", "a", "b", "c"]),
    ("D", ["LPUSH", "k", "z"]),
    ("D", ["RPOP", "k"]),
    ("idle", "A"),
    ("D", ["EXEC"]),
    ("read", "A"), ("read", "B"),
    ("D", ["LRANGE", "k", "0", "-1"]),
    # a MULTI that pushes and pops the key empty again wakes nobody
    ("block", "C", ["BLPOP", "e", "0"]),
    ("D", ["MULTI"]), ("D", ["RPUSH", "e", "1"]), ("D", ["LPOP", "e"]), ("D", ["EXEC"]),
    ("idle", "C"),
    ("D", ["RPUSH", "e", "2"]),
    ("read", "C"),
]

MOVES: list[Step] = [
    ("block", "A", ["BLPOP", "dst", "0"]),
    ("D", ["RPUSH", "src", "v1", "v2"]),
    ("idle", "A"),
    ("D", ["LMOVE", "src", "dst", "LEFT", "RIGHT"]),
    ("read", "A"),
    ("block", "B", ["BLMOVE", "l1", "l2", "LEFT", "RIGHT", "0"]),
    ("block", "C", ["BLPOP", "l2", "0"]),
    ("D", ["RPUSH", "l1", "x"]),
    ("read", "B"), ("read", "C"),
    ("D", ["EXISTS", "l1", "l2"]),
    ("block", "A", ["BRPOPLPUSH", "q", "q", "0"]),
    ("D", ["RPUSH", "q", "a", "b"]),
    ("read", "A"),
    ("D", ["LRANGE", "q", "0", "-1"]),
    ("block", "B", ["BLMPOP", "0", "2", "m1", "m2", "RIGHT", "COUNT", "2"]),
    ("D", ["RPUSH", "m2", "1", "2", "3"]),
    ("read", "B"),
    ("D", ["LRANGE", "m2", "0", "-1"]),
]

ZSETS: list[Step] = [
    ("block", "A", ["BZPOPMIN", "z", "0"]),
    ("block", "B", ["BZPOPMAX", "z", "0"]),
    ("block", "C", ["BZMPOP", "0", "1", "z", "MIN", "COUNT", "5"]),
    ("D", ["ZADD", "z", "1", "a", "2", "b", "3", "c", "4", "d"]),
    ("read", "A"), ("read", "B"), ("read", "C"),
    ("D", ["EXISTS", "z"]),
    ("block", "A", ["BZPOPMIN", "z1", "z2", "0"]),
    ("D", ["ZADD", "src", "1.5", "m"]),
    ("D", ["ZUNIONSTORE", "z2", "1", "src"]),
    ("read", "A"),
    ("block", "B", ["BZPOPMAX", "zz", "0"]),
    ("D", ["RPUSH", "zz", "not-a-zset"]),
    ("idle", "B"),
    ("D", ["DEL", "zz"]),
    ("D", ["ZADD", "zz", "7", "x"]),
    ("read", "B"),
]

TIMEOUTS: list[Step] = [
    ("block", "A", ["BLPOP", "k", "0.3"]),
    ("block", "B", ["BZPOPMIN", "k2", "0.3"]),
    ("block", "C", ["BLMOVE", "k", "d", "LEFT", "LEFT", "0.3"]),
    ("read", "A"), ("read", "B"), ("read", "C"),
    ("block", "A", ["BLMPOP", "0.2", "1", "k", "LEFT"]),
    ("read", "A"),
    ("D", ["RPUSH", "k", "late"]),
    ("D", ["LLEN", "k"]),
    # a pipelined command behind a blocked one waits for it
    ("block", "B", ["BLPOP", "w", "0"]),
    ("block", "B", ["PING"]),
    ("idle", "B"),  # no PONG while the BLPOP before it waits
    ("D", ["PING"]),
    ("D", ["RPUSH", "w", "v"]),
    ("read", "B"),
]

CLOSED_AND_CHANGED: list[Step] = [
    ("block", "A", ["BLPOP", "k", "0"]),
    ("close", "A"),
    ("block", "B", ["BLPOP", "k", "0"]),
    ("D", ["SET", "k", "string"]),
    ("idle", "B"),
    ("D", ["DEL", "k"]),
    ("D", ["RPUSH", "k", "v"]),
    ("read", "B"),
    ("D", ["EXISTS", "k"]),
    ("block", "C", ["BLPOP", "r1", "0"]),
    ("D", ["RPUSH", "r2", "moved"]),
    ("D", ["RENAME", "r2", "r1"]),
    ("read", "C"),
]

SCENARIOS = {
    "fifo": FIFO, "several_keys": SEVERAL_KEYS, "in_multi": IN_MULTI, "moves": MOVES,
    "zsets": ZSETS, "timeouts": TIMEOUTS, "closed_and_changed": CLOSED_AND_CHANGED,
}


@pytest.mark.parametrize("protocol", [2, 3], ids=["resp2", "resp3"])
@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_blocking_same_as_redis(reference: RedisServer, server: HotkvProcess, scenario: str,
                                protocol: int) -> None:
    expected = transcript(reference.port, protocol, SCENARIOS[scenario])
    got = transcript(server.port, protocol, SCENARIOS[scenario])
    assert got == expected


def _blocked_client(port: int, argv: list[str]) -> tuple[Peer, int]:
    peer = Peer(port, 2)
    peer.send(["CLIENT", "ID"])
    client_id = peer.read(5)[1]
    peer.send(argv)
    time.sleep(0.1)
    return peer, client_id


@pytest.mark.parametrize("which", ["redis", "hotkv"])
def test_client_unblock_timeout_and_error(reference: RedisServer, server: HotkvProcess,
                                          which: str) -> None:
    port = reference.port if which == "redis" else server.port
    other = Peer(port, 2)
    try:
        waiter, wid = _blocked_client(port, ["BLPOP", "ub", "0"])
        other.send(["CLIENT", "UNBLOCK", str(wid)])
        assert other.read(5) == (":", 1)
        assert waiter.read(5) == ("*", None)
        other.send(["CLIENT", "UNBLOCK", str(wid)])
        assert other.read(5) == (":", 0)
        waiter.send(["BZPOPMIN", "ub", "0"])
        time.sleep(0.1)
        other.send(["CLIENT", "UNBLOCK", str(wid), "ERROR"])
        assert other.read(5) == (":", 1)
        assert waiter.read(5) == ("-", b"UNBLOCKED client unblocked via CLIENT UNBLOCK")
        waiter.send(["PING"])
        assert waiter.read(5) == ("+", b"PONG")
        waiter.close()
    finally:
        other.close()


def test_timeout_waits_about_as_long_as_asked(server: HotkvProcess) -> None:
    peer = Peer(server.port, 3)
    try:
        started = time.monotonic()
        peer.send(["BLPOP", "never", "0.25"])
        assert peer.read(5) == ("_", None)
        elapsed = time.monotonic() - started
        assert 0.2 <= elapsed < 1.5
    finally:
        peer.close()


def test_served_pop_reaches_watchers_and_info(server: HotkvProcess) -> None:
    watcher, pusher = Peer(server.port, 2), Peer(server.port, 2)
    try:
        waiter, _ = _blocked_client(server.port, ["BLPOP", "wk", "0"])
        pusher.send(["INFO", "clients"])
        assert b"blocked_clients:1" in pusher.read(5)[1]
        watcher.send(["RPUSH", "wk", "one"])  # served at once: the list is empty again
        assert watcher.read(5) == (":", 1)
        assert waiter.read(5) == ("*", [("$", b"wk"), ("$", b"one")])
        watcher.send(["RPUSH", "wk", "two"])
        watcher.read(5)
        watcher.send(["WATCH", "wk"])
        watcher.read(5)
        waiter.send(["BLPOP", "wk2", "wk", "0"])  # served at once from wk: a write to wk
        assert waiter.read(5) == ("*", [("$", b"wk"), ("$", b"two")])
        watcher.send(["MULTI"])
        watcher.read(5)
        watcher.send(["PING"])
        watcher.read(5)
        watcher.send(["EXEC"])
        assert watcher.read(5) == ("*", None)  # the pop touched the watched key
        pusher.send(["INFO", "clients"])
        assert b"blocked_clients:0" in pusher.read(5)[1]
        waiter.close()
    finally:
        watcher.close()
        pusher.close()


@pytest.mark.parametrize("which", ["redis", "hotkv"])
def test_becoming_a_replica_unblocks_with_an_error(reference: RedisServer, server: HotkvProcess,
                                                   which: str) -> None:
    port = reference.port if which == "redis" else server.port
    admin = Peer(port, 2)
    waiter, _ = _blocked_client(port, ["BLPOP", "to-replica", "0"])
    try:
        admin.send(["REPLICAOF", "127.0.0.1", "1"])
        assert admin.read(5) == ("+", b"OK")
        assert waiter.read(5) == ("-", b"UNBLOCKED force unblock from blocking operation, "
                                       b"instance state changed (master -> replica?)")
    finally:
        admin.send(["REPLICAOF", "NO", "ONE"])
        admin.read(5)
        admin.close()
        waiter.close()
