"""Pub/sub against a real redis-server 7: the same bytes to both, replies compared as typed trees.

Covers SUBSCRIBE/PSUBSCRIBE/SSUBSCRIBE and their UNSUBSCRIBEs, PUBLISH/SPUBLISH, PUBSUB
CHANNELS|NUMSUB|NUMPAT|SHARDCHANNELS|SHARDNUMSUB|HELP, RESP2 subscribed mode (the allowed
commands, PING's array) and RESP3 push messages between ordinary replies; redis-py's
``PubSub`` and ``redis-cli SUBSCRIBE`` on both servers; a subscriber that does not read is
dropped at the pubsub output-buffer limit while the server goes on answering.
"""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Iterator
from typing import Any

import pytest
import redis

from e2e.test_differential import Incomplete, parse_reply, request_bytes
from helpers import HotkvProcess, RedisServer, require_tool


class Conn:
    """A raw connection that sends requests and reads replies and pushes one at a time."""

    def __init__(self, port: int, protocol: int = 2) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        self.buf = b""
        if protocol == 3:
            assert self.call("HELLO", "3")[0] == "%"

    def send(self, *argv: Any) -> None:
        self.sock.sendall(request_bytes(list(argv)))

    def read(self, timeout: float = 5.0) -> Any:
        self.sock.settimeout(timeout)
        while True:
            try:
                reply, end = parse_reply(self.buf)
            except Incomplete:
                data = self.sock.recv(65536)
                if not data:
                    raise ConnectionError("closed") from None
                self.buf += data
                continue
            self.buf = self.buf[end:]
            return reply

    def call(self, *argv: Any) -> Any:
        self.send(*argv)
        return self.read()

    def quiet(self, wait: float = 0.2) -> bool:
        """Nothing more arrives within ``wait`` seconds."""
        if self.buf:
            return False
        self.sock.settimeout(wait)
        try:
            data = self.sock.recv(65536)
        except TimeoutError:
            return True
        self.buf += data
        return False

    def close(self) -> None:
        self.sock.close()


@pytest.fixture(scope="module")
def both(server: HotkvProcess, reference: RedisServer) -> Iterator[tuple[int, int]]:
    yield server.port, reference.port


def _norm_pubsub(reply: Any) -> Any:
    """PUBSUB CHANNELS lists channels in hash order: compare as a sorted list."""
    kind, items = reply
    return kind, sorted(items) if isinstance(items, list) else items


def run_both(ports: tuple[int, int], protocol: int, script: list[tuple[str, list[Any]]]) -> None:
    """Steps on named connections (``a``, ``b`` ...): ``("a", [cmd ...])`` sends and reads
    one reply; ``("a", ["<read>"])`` reads one more (a push, a confirmation); ``("a",
    ["<send>", cmd ...])`` sends without reading; ``("a", ["<sorted>", cmd ...])`` compares
    a list reply sorted; ``("a", ["<quiet>"])`` checks nothing else is pending."""
    conns: list[dict[str, Conn]] = [{}, {}]
    try:
        for step, (name, argv) in enumerate(script):
            got = []
            for side, port in enumerate(ports):
                conn = conns[side].get(name)
                if conn is None:
                    conn = conns[side][name] = Conn(port, protocol)
                if argv == ["<read>"]:
                    got.append(conn.read())
                elif argv == ["<quiet>"]:
                    got.append(conn.quiet())
                elif argv[0] == "<send>":
                    conn.send(*argv[1:])
                    got.append(None)
                elif argv[0] == "<sorted>":
                    got.append(_norm_pubsub(conn.call(*argv[1:])))
                else:
                    got.append(conn.call(*argv))
            assert got[0] == got[1], (protocol, step, name, argv, got)
    finally:
        for by_name in conns:
            for conn in by_name.values():
                conn.close()


SUBSCRIBE_SCRIPT: list[tuple[str, list[Any]]] = [
    ("a", ["<send>", "SUBSCRIBE", "news", "sport"]),
    ("a", ["<read>"]),
    ("a", ["<read>"]),
    ("b", ["PUBLISH", "news", "hello"]),
    ("a", ["<read>"]),
    ("b", ["PUBLISH", "nobody", "x"]),
    ("a", ["<send>", "PSUBSCRIBE", "n*", "s?ort"]),
    ("a", ["<read>"]),
    ("a", ["<read>"]),
    ("b", ["PUBLISH", "news", "both"]),  # the channel and the pattern: two receivers
    ("a", ["<read>"]),
    ("a", ["<read>"]),
    ("b", ["PUBSUB", "NUMPAT"]),
    ("b", ["<sorted>", "PUBSUB", "CHANNELS"]),
    ("b", ["PUBSUB", "CHANNELS", "s*"]),
    ("b", ["PUBSUB", "NUMSUB", "news", "sport", "none"]),
    ("b", ["PUBSUB", "NUMSUB"]),
    ("a", ["<send>", "SSUBSCRIBE", "shard-1"]),
    ("a", ["<read>"]),
    ("b", ["SPUBLISH", "shard-1", "s-msg"]),
    ("a", ["<read>"]),
    ("b", ["PUBSUB", "SHARDCHANNELS"]),
    ("b", ["PUBSUB", "SHARDNUMSUB", "shard-1", "x"]),
    ("a", ["<send>", "SUNSUBSCRIBE"]),
    ("a", ["<read>"]),
    ("a", ["<send>", "UNSUBSCRIBE", "sport", "never"]),
    ("a", ["<read>"]),
    ("a", ["<read>"]),
    ("a", ["<send>", "PUNSUBSCRIBE"]),
    ("a", ["<read>"]),
    ("a", ["<read>"]),
    ("a", ["<send>", "UNSUBSCRIBE"]),
    ("a", ["<read>"]),
    ("a", ["<send>", "UNSUBSCRIBE"]),  # none left: a null channel and 0
    ("a", ["<read>"]),
    ("a", ["<send>", "PUNSUBSCRIBE"]),
    ("a", ["<read>"]),
    ("a", ["<quiet>"]),
    ("b", ["PUBSUB", "NUMPAT"]),
    ("b", ["PUBSUB", "CHANNELS"]),
    ("b", ["PUBSUB", "HELP"]),
    ("b", ["PUBSUB", "NOSUCH"]),
    ("b", ["PUBSUB"]),
    ("b", ["PUBLISH", "x"]),
    ("b", ["SUBSCRIBE"]),
]


@pytest.mark.parametrize("protocol", [2, 3])
def test_subscribe_publish_and_pubsub_introspection_as_redis(both: tuple[int, int], protocol: int) -> None:
    run_both(both, protocol, SUBSCRIBE_SCRIPT)


def test_resp2_subscribed_mode_allows_only_the_subscription_commands(both: tuple[int, int]) -> None:
    run_both(both, 2, [
        ("a", ["<send>", "SUBSCRIBE", "c"]),
        ("a", ["<read>"]),
        ("a", ["GET", "k"]),
        ("a", ["SET", "k", "v"]),
        ("a", ["CLIENT", "ID"]),  # subcommands are named by their full name
        ("a", ["PING"]),  # an array: pong and an empty string
        ("a", ["PING", "hi"]),
        ("a", ["<send>", "PSUBSCRIBE", "p*"]),
        ("a", ["<read>"]),
        ("b", ["PUBLISH", "c", "m"]),
        ("a", ["<read>"]),
        ("a", ["<send>", "UNSUBSCRIBE"]),
        ("a", ["<read>"]),
        ("a", ["GET", "k"]),  # still subscribed to a pattern
        ("a", ["<send>", "PUNSUBSCRIBE"]),
        ("a", ["<read>"]),
        ("a", ["GET", "k"]),  # no subscription left: any command again
        ("a", ["PING"]),
        ("a", ["<send>", "SUBSCRIBE", "c"]),
        ("a", ["<read>"]),
        ("a", ["RESET"]),  # leaves subscribed mode
        ("a", ["GET", "k"]),
        ("b", ["PUBSUB", "NUMSUB", "c"]),
    ])


def test_resp3_pushes_arrive_beside_ordinary_replies(both: tuple[int, int]) -> None:
    run_both(both, 3, [
        ("a", ["<send>", "SUBSCRIBE", "c"]),
        ("a", ["<read>"]),
        ("a", ["SET", "k", "v"]),  # RESP3: any command while subscribed
        ("a", ["GET", "k"]),
        ("a", ["PING"]),  # RESP3: a plain PONG
        ("b", ["PUBLISH", "c", "m1"]),
        ("a", ["<read>"]),
        ("a", ["PUBLISH", "c", "to-myself"]),  # the push comes first, then the count
        ("a", ["<read>"]),
        ("a", ["<quiet>"]),
        ("a", ["<send>", "GET", "k"]),
        ("b", ["PUBLISH", "c", "m2"]),
        ("a", ["<read>"]),
        ("a", ["<read>"]),
        ("a", ["CLIENT", "KILL", "TYPE", "pubsub", "SKIPME", "yes"]),
    ])


def test_pipelined_commands_keep_their_order_with_pushes(server: HotkvProcess) -> None:
    """RESP3: PING, a PUBLISH to itself, and GET in one write: PONG, push, count, value."""
    conn = Conn(server.port, 3)
    try:
        conn.send("SUBSCRIBE", "self")
        assert conn.read()[0] == ">"
        payload = b"".join(
            b"*%d\r\n" % len(cmd) + b"".join(b"$%d\r\n%b\r\n" % (len(a), a) for a in cmd)
            for cmd in ([b"PING"], [b"PUBLISH", b"self", b"x"], [b"GET", b"nokey"])
        )
        conn.sock.sendall(payload)
        got = [conn.read() for _ in range(4)]
        assert got == [("+", b"PONG"), (">", [("$", b"message"), ("$", b"self"), ("$", b"x")]),
                       (":", 1), ("_", None)]
    finally:
        conn.close()


@pytest.mark.parametrize("protocol", [2, 3])
def test_redis_py_pubsub_receives_the_same_messages(both: tuple[int, int], protocol: int) -> None:
    seen = []
    for port in both:
        client = redis.Redis(port=port, protocol=protocol)
        listener = client.pubsub()
        listener.subscribe("orders")
        listener.psubscribe("ord*")
        messages = []
        for _ in range(2):
            messages.append(listener.get_message(timeout=2))
        client.publish("orders", "o-1")
        client.publish("ordinal", "o-2")
        for _ in range(3):
            messages.append(listener.get_message(timeout=2))
        listener.ping()
        messages.append(listener.get_message(timeout=2))
        listener.unsubscribe()
        listener.punsubscribe()
        messages.append(listener.get_message(timeout=2))
        messages.append(listener.get_message(timeout=2))
        assert listener.get_message(timeout=0.2) is None
        listener.close()
        client.close()
        seen.append(messages)
    assert seen[0] == seen[1]
    assert [m["type"] for m in seen[0]] == ["subscribe", "psubscribe", "message", "pmessage",
                                             "pmessage", "pong", "unsubscribe", "punsubscribe"]


def test_redis_py_pubsub_thread_and_handlers(server: HotkvProcess) -> None:
    client = server.client(protocol=3)
    got: list[bytes] = []
    listener = client.pubsub()
    listener.subscribe(**{"jobs": lambda message: got.append(message["data"])})
    worker = listener.run_in_thread(sleep_time=0.01)
    try:
        deadline = time.monotonic() + 3
        while client.pubsub_numsub("jobs")[0][1] != 1 and time.monotonic() < deadline:
            time.sleep(0.02)
        for n in range(5):
            client.publish("jobs", f"job-{n}")
        while len(got) < 5 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert got == [f"job-{n}".encode() for n in range(5)]
    finally:
        worker.stop()
        worker.join(2)
        client.close()


def _redis_cli_subscribe(port: int, publish: Any) -> str:
    cli = require_tool("redis-cli")
    proc = subprocess.Popen([cli, "-p", str(port), "SUBSCRIBE", "alerts"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        client = redis.Redis(port=port)
        deadline = time.monotonic() + 5
        while client.pubsub_numsub("alerts")[0][1] != 1:
            assert time.monotonic() < deadline, "redis-cli did not subscribe"
            time.sleep(0.02)
        publish(client)
        time.sleep(0.3)
        client.close()
    finally:
        proc.terminate()
        out, _ = proc.communicate(timeout=5)
    return out.decode()


def test_redis_cli_subscribe_prints_as_with_redis(both: tuple[int, int]) -> None:
    def publish(client: redis.Redis) -> None:
        client.publish("alerts", "disk full")
        client.publish("alerts", "fixed")

    outputs = [_redis_cli_subscribe(port, publish) for port in both]
    assert outputs[0] == outputs[1]
    assert "disk full" in outputs[0] and "fixed" in outputs[0]


def test_redis_cli_resp3_subscribe(both: tuple[int, int]) -> None:
    cli = require_tool("redis-cli")
    outputs = []
    for port in both:
        proc = subprocess.Popen([cli, "-3", "-p", str(port), "SUBSCRIBE", "r3"],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        client = redis.Redis(port=port)
        deadline = time.monotonic() + 5
        while client.pubsub_numsub("r3")[0][1] != 1:
            assert time.monotonic() < deadline
            time.sleep(0.02)
        client.publish("r3", "pushed")
        time.sleep(0.3)
        proc.terminate()
        out, _ = proc.communicate(timeout=5)
        client.close()
        outputs.append(out.decode())
    assert outputs[0] == outputs[1]
    assert "pushed" in outputs[0]


def test_slow_subscriber_is_dropped_and_the_server_goes_on() -> None:
    """A subscriber that never reads passes the pubsub class's hard limit: it is closed,
    the publisher and other clients keep being answered, and INFO still answers."""
    proc = HotkvProcess("--client-output-buffer-limit", "pubsub 256kb 128kb 60").start()
    try:
        sleeper = socket.create_connection(("127.0.0.1", proc.port))
        sleeper.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sleeper.sendall(b"*2\r\n$9\r\nSUBSCRIBE\r\n$4\r\nfeed\r\n")
        client = proc.client(protocol=2)
        deadline = time.monotonic() + 5
        while client.pubsub_numsub("feed")[0][1] != 1:
            assert time.monotonic() < deadline
            time.sleep(0.02)
        kind = [line for line in client.client_list() if line.get("sub") == "1"]
        assert kind and "P" in kind[0]["flags"]
        payload = b"x" * 64 * 1024
        started = time.monotonic()
        receivers = []
        for _ in range(200):  # 12.8 MB for a client that reads nothing
            receivers.append(client.publish("feed", payload))
        assert time.monotonic() - started < 10
        assert receivers[0] == 1 and receivers[-1] == 0  # dropped on the way
        assert client.pubsub_numsub("feed")[0][1] == 0
        assert client.ping() is True
        assert "closing client" in proc.log() and "output buffer" in proc.log()
        sleeper.close()
    finally:
        proc.cleanup()


def test_pubsub_clients_are_not_timed_out() -> None:
    proc = HotkvProcess("--timeout", "1").start()
    try:
        listener = Conn(proc.port, 2)
        idle = Conn(proc.port, 2)
        listener.call("SUBSCRIBE", "slow")
        idle.call("PING")
        time.sleep(2.5)
        client = proc.client()
        assert client.publish("slow", "still here") == 1
        assert listener.read()[1][2] == ("$", b"still here")
        with pytest.raises((ConnectionError, OSError)):
            idle.call("PING")
        listener.close()
        idle.close()
        client.close()
    finally:
        proc.cleanup()


@pytest.mark.parametrize("protocol", [2, 3])
def test_subscribe_inside_multi_as_redis(both: tuple[int, int], protocol: int) -> None:
    """The confirmations go inside EXEC's reply where each command made them (in RESP2
    the array holds more elements than its count: the same bytes as redis-server's)."""
    run_both(both, protocol, [
        ("m", ["MULTI"]),
        ("m", ["SUBSCRIBE", "tx-a", "tx-b"]),
        ("m", ["PING"]),
        ("m", ["PUBLISH", "tx-a", "to-myself"]),
        ("m", ["EXEC"]),
        ("m", ["<read>"]),
        ("m", ["<read>"]),
        ("m", ["<quiet>"]),
        ("o", ["PUBSUB", "NUMSUB", "tx-a", "tx-b"]),
    ])


def test_info_stats_counts_channels_and_patterns(both: tuple[int, int]) -> None:
    seen = []
    for port in both:
        listener = Conn(port)
        listener.send("SUBSCRIBE", "i1", "i2")
        listener.read()
        listener.read()
        listener.send("PSUBSCRIBE", "i*")
        listener.read()
        listener.send("SSUBSCRIBE", "s1")
        listener.read()
        stats = redis.Redis(port=port).info("stats")
        seen.append((stats["pubsub_channels"], stats["pubsub_patterns"], stats["pubsubshard_channels"]))
        listener.close()
    assert seen[0] == seen[1] == (2, 1, 1)


def test_slow_subscriber_over_the_soft_limit_for_its_seconds_is_dropped() -> None:
    """Soft limit: over 64kb for 1 s drops the subscriber although it never passes the hard
    limit and runs no command of its own (the time is the server's, not its last command's)."""
    proc = HotkvProcess("--client-output-buffer-limit", "pubsub 64mb 64kb 1").start()
    try:
        sleeper = socket.create_connection(("127.0.0.1", proc.port))
        sleeper.sendall(b"*2\r\n$9\r\nSUBSCRIBE\r\n$4\r\nsoft\r\n")
        client = proc.client(protocol=2)
        deadline = time.monotonic() + 5
        while client.pubsub_numsub("soft")[0][1] != 1:
            assert time.monotonic() < deadline
            time.sleep(0.02)
        payload = b"y" * 256 * 1024
        for _ in range(40):  # about 10 MB: far over the soft limit, under the hard one
            client.publish("soft", payload)
        deadline = time.monotonic() + 10
        while client.publish("soft", b"tick") == 1:
            assert time.monotonic() < deadline, "the soft limit never dropped the subscriber"
            time.sleep(0.1)
        assert client.pubsub_numsub("soft")[0][1] == 0
        sleeper.close()
        client.close()
    finally:
        proc.cleanup()
