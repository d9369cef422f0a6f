"""WAIT: counts the replicas that acknowledged the writes so far, without blocking the server.

A client in WAIT is parked (a deferred reply): its later pipelined requests run only after
the WAIT reply has gone out, and every other client is served meanwhile.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import pytest
import redis

from helpers import HotkvProcess
from replication.rhelpers import pause, replica_of, resume, servers, wait_synced

Pair = tuple[HotkvProcess, HotkvProcess]


@pytest.fixture(scope="module")
def pair() -> Iterator[Pair]:
    primary = HotkvProcess().start()
    try:
        with servers(replica_of(primary)) as (replica,):
            wait_synced(primary.client(), replica.client())
            yield primary, replica
    finally:
        primary.cleanup()


class Paused:
    """The replica stopped (SIGSTOP) for the duration of a block, then caught up again."""

    def __init__(self, pair: Pair) -> None:
        self.primary, self.replica = pair

    def __enter__(self) -> None:
        pause(self.replica)

    def __exit__(self, *exc: object) -> None:
        resume(self.replica)
        wait_synced(self.primary.client(), self.replica.client())


def read_for(sock: socket.socket, seconds: float) -> bytes:
    """Everything that arrives within ``seconds``."""
    sock.settimeout(0.05)
    data = b""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            chunk = sock.recv(65536)
        except TimeoutError:
            continue
        if not chunk:
            break
        data += chunk
    return data


@pytest.mark.parametrize("protocol", [2, 3])
def test_wait_counts_acknowledging_replicas(pair: Pair, protocol: int) -> None:
    primary, _ = pair
    pc = primary.client(protocol=protocol)
    pc.set("k", "v")
    assert pc.execute_command("WAIT", 1, 5000) == 1
    assert pc.execute_command("WAIT", 0, 0) == 1  # enough already: answered at once
    assert pc.execute_command("WAIT", 5, 100) == 1  # fewer than asked once the timeout passes


def test_wait_times_out_with_a_stopped_replica(pair: Pair) -> None:
    primary, _ = pair
    pc = primary.client()
    with Paused(pair):
        pc.set("k", "unacknowledged")
        started = time.monotonic()
        assert pc.execute_command("WAIT", 1, 300) == 0
        assert time.monotonic() - started >= 0.29


def test_wait_does_not_block_other_clients(pair: Pair) -> None:
    primary, _ = pair
    waiter = primary.client()
    other = primary.client()
    result: list[int] = []
    with Paused(pair):
        waiter.set("k", "1")
        thread = threading.Thread(target=lambda: result.append(waiter.execute_command("WAIT", 1, 1500)))
        thread.start()
        time.sleep(0.2)
        for _ in range(20):
            started = time.monotonic()
            other.set("other", "x")
            assert other.get("other") == b"x"
            assert time.monotonic() - started < 0.2
        thread.join(5)
    assert result == [0]


def test_wait_without_timeout_returns_when_the_replica_catches_up(pair: Pair) -> None:
    primary, replica = pair
    pc = primary.client()
    result: list[int] = []
    pause(replica)
    try:
        pc.set("k", "late")
        thread = threading.Thread(target=lambda: result.append(pc.execute_command("WAIT", 1, 0)))
        thread.start()
        time.sleep(0.3)
        assert result == []  # still waiting
    finally:
        resume(replica)
    thread.join(10)
    assert result == [1]


def test_pipelined_requests_wait_behind_wait(pair: Pair) -> None:
    primary, _ = pair
    with Paused(pair), socket.create_connection(("127.0.0.1", primary.port), timeout=5) as sock:
        sock.sendall(b"*3\r\n$3\r\nSET\r\n$1\r\nn\r\n$1\r\n5\r\n"
                     b"*3\r\n$4\r\nWAIT\r\n$1\r\n1\r\n$3\r\n400\r\n"
                     b"*2\r\n$4\r\nINCR\r\n$1\r\nn\r\n"
                     b"PING\r\n")
        assert read_for(sock, 0.25) == b"+OK\r\n"  # INCR and PING wait behind WAIT
        assert read_for(sock, 0.6) == b":0\r\n:6\r\n+PONG\r\n"


def test_inline_wait_and_a_protocol_error_after_it(pair: Pair) -> None:
    primary, _ = pair
    with Paused(pair), socket.create_connection(("127.0.0.1", primary.port), timeout=5) as sock:
        sock.sendall(b"SET k v\r\nWAIT 1 300\r\nGET k\r\n*1\r\n$x\r\n")
        data = read_for(sock, 15)  # until the server closes after the protocol error
    assert data == b"+OK\r\n:0\r\n$1\r\nv\r\n-ERR Protocol error: invalid bulk length\r\n"


def test_wait_inside_multi_answers_at_once(pair: Pair) -> None:
    primary, _ = pair
    pc = primary.client()
    with Paused(pair):
        pc.set("k", "unacknowledged")
        started = time.monotonic()
        with pc.pipeline(transaction=True) as tx:
            tx.set("k", "in-multi")
            tx.execute_command("WAIT", 1, 2000)
            assert tx.execute() == [True, 0]  # a transaction never blocks
        assert time.monotonic() - started < 1.9  # not the WAIT's 2 s


def test_wait_arguments() -> None:
    with servers(HotkvProcess()) as (alone,):
        c = alone.client()
        with pytest.raises(redis.ResponseError, match=r"^timeout is negative$"):
            c.execute_command("WAIT", 1, -1)
        with pytest.raises(redis.ResponseError, match=r"^timeout is not an integer or out of range$"):
            c.execute_command("WAIT", 1, "soon")
        with pytest.raises(redis.ResponseError, match=r"^value is not an integer or out of range$"):
            c.execute_command("WAIT", "one", 10)
        assert c.execute_command("WAIT", 0, 0) == 0
        started = time.monotonic()
        assert c.execute_command("WAIT", 1, 200) == 0  # no replica at all
        assert time.monotonic() - started >= 0.19


def test_a_client_leaving_during_wait(pair: Pair) -> None:
    primary, _ = pair
    with Paused(pair):
        with socket.create_connection(("127.0.0.1", primary.port), timeout=5) as sock:
            sock.sendall(b"SET k v\r\nWAIT 1 0\r\n")
            assert read_for(sock, 0.2) == b"+OK\r\n"
        time.sleep(0.1)
    pc = primary.client()
    pc.set("k", "after")
    assert pc.execute_command("WAIT", 1, 5000) == 1
