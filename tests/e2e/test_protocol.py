"""Raw-bytes tests of the protocol layer: pipelining, inline commands, protocol errors."""

from __future__ import annotations

import socket
import time

import pytest
import redis

from helpers import HotkvProcess, raw_roundtrip


def test_pipelined_commands_answered_in_order(server: HotkvProcess) -> None:
    payload = b"".join(b"*2\r\n$4\r\nECHO\r\n$%d\r\n%b\r\n" % (len(str(i)), str(i).encode()) for i in range(200))
    expected = b"".join(b"$%d\r\n%b\r\n" % (len(str(i)), str(i).encode()) for i in range(200))
    assert raw_roundtrip(server.port, payload, expect=len(expected)) == expected


def test_request_split_across_reads(server: HotkvProcess) -> None:
    with socket.create_connection(("127.0.0.1", server.port)) as sock:
        message = b"*2\r\n$4\r\nECHO\r\n$11\r\nhello world\r\n"
        for i in range(len(message)):
            sock.sendall(message[i : i + 1])
            time.sleep(0.001)
        sock.settimeout(2)
        assert sock.recv(100) == b"$11\r\nhello world\r\n"


def test_inline_commands_with_quotes(server: HotkvProcess) -> None:
    reply = raw_roundtrip(server.port, b'PING\r\nECHO "a b\\x41"\r\nECHO \'it\\\'s\'\n\r\n')
    assert reply == b"+PONG\r\n$4\r\na bA\r\n$4\r\nit's\r\n"


def test_inline_then_multibulk(server: HotkvProcess) -> None:
    reply = raw_roundtrip(server.port, b"PING\r\n*1\r\n$4\r\nPING\r\n")
    assert reply == b"+PONG\r\n+PONG\r\n"


def test_unbalanced_quotes_is_protocol_error_and_close(server: HotkvProcess) -> None:
    reply = raw_roundtrip(server.port, b'ECHO "abc\r\nPING\r\n')
    assert reply == b"-ERR Protocol error: unbalanced quotes in request\r\n"


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        (b"*1\r\n$x\r\n", b"invalid bulk length"),
        (b"*abc\r\n", b"invalid multibulk length"),
        (b"*1\r\n:5\r\n", b"expected '$', got ':'"),
        (b"*1\r\n$600000000\r\n", b"invalid bulk length"),
        (b"*2000000\r\n", b"invalid multibulk length"),
    ],
)
def test_protocol_errors_close_the_connection(server: HotkvProcess, payload: bytes, message: bytes) -> None:
    with socket.create_connection(("127.0.0.1", server.port)) as sock:
        sock.sendall(payload)
        sock.settimeout(3)
        data = b""
        while True:
            chunk = sock.recv(1000)
            if not chunk:
                break
            data += chunk
    assert data == b"-ERR Protocol error: " + message + b"\r\n"


def test_unknown_command_and_arity_wording(server: HotkvProcess) -> None:
    reply = raw_roundtrip(server.port, b"*2\r\n$3\r\nFOO\r\n$3\r\nbar\r\n*1\r\n$4\r\necho\r\nPING a b\r\n")
    assert reply == (
        b"-ERR unknown command 'FOO', with args beginning with: 'bar' \r\n"
        b"-ERR wrong number of arguments for 'echo' command\r\n"
        b"-ERR wrong number of arguments for 'ping' command\r\n"
    )


def test_error_keeps_connection_open(server: HotkvProcess) -> None:
    client = server.client(protocol=2)
    with pytest.raises(redis.ResponseError, match="unknown command"):
        client.execute_command("NOPE")
    assert client.ping() is True


def test_quit_replies_then_closes(server: HotkvProcess) -> None:
    assert raw_roundtrip(server.port, b"QUIT\r\nPING\r\n") == b"+OK\r\n"


def test_select(server: HotkvProcess) -> None:
    reply = raw_roundtrip(server.port, b"SELECT 0\r\nSELECT 1\r\nSELECT x\r\n")
    assert reply == (
        b"+OK\r\n-ERR DB index is out of range\r\n-ERR value is not an integer or out of range\r\n"
    )


def test_hello_switches_protocol(server: HotkvProcess) -> None:
    reply = raw_roundtrip(server.port, b"HELLO 3\r\nPING\r\nHELLO 4\r\nHELLO 2\r\n")
    assert reply.startswith(b"%8\r\n$6\r\nserver\r\n$5\r\nredis\r\n")
    assert b"-NOPROTO unsupported protocol version\r\n" in reply
    assert reply.rstrip(b"\r\n").count(b"+PONG") == 1
    # after HELLO 2 the map comes back as a flat array
    assert reply.endswith(b"$5\r\nhotkv\r\n$5\r\n0.1.0\r\n")
    assert b"*16\r\n$6\r\nserver" in reply


def test_multi_exec_discard(server: HotkvProcess) -> None:
    reply = raw_roundtrip(
        server.port,
        b"MULTI\r\nPING\r\nECHO x\r\nEXEC\r\nEXEC\r\nDISCARD\r\nMULTI\r\nMULTI\r\nNOPE\r\nEXEC\r\n",
    )
    assert reply == (
        b"+OK\r\n+QUEUED\r\n+QUEUED\r\n*2\r\n+PONG\r\n$1\r\nx\r\n"
        b"-ERR EXEC without MULTI\r\n-ERR DISCARD without MULTI\r\n"
        b"+OK\r\n-ERR MULTI calls can not be nested\r\n"
        b"-ERR unknown command 'NOPE', with args beginning with: \r\n"
        b"-EXECABORT Transaction discarded because of previous errors.\r\n"
    )


def test_client_commands_with_redis_py(server: HotkvProcess) -> None:
    for protocol in (2, 3):
        client = server.client(protocol=protocol, decode_responses=True)
        client.client_setname("agent-1")
        assert client.client_getname() == "agent-1"
        assert isinstance(client.client_id(), int)
        names = [c["name"] for c in client.client_list()]
        assert "agent-1" in names
        info = client.client_info()
        assert info["lib-name"] == "redis-py"
        client.close()


def test_client_kill_by_id(server: HotkvProcess) -> None:
    with socket.create_connection(("127.0.0.1", server.port)) as victim:
        victim.sendall(b"CLIENT ID\r\n")
        victim.settimeout(3)
        victim_id = int(victim.recv(100)[1:-2])
        admin = server.client(protocol=2)
        assert admin.execute_command("CLIENT", "KILL", "ID", victim_id) == 1
        assert victim.recv(100) == b""  # closed by the server
        assert admin.execute_command("CLIENT", "KILL", "ID", victim_id) == 0


def test_many_clients_interleaved(server: HotkvProcess) -> None:
    socks = [socket.create_connection(("127.0.0.1", server.port)) for _ in range(50)]
    try:
        for i, sock in enumerate(socks):
            sock.sendall(b"ECHO c%d\r\n" % i)
        for i, sock in enumerate(socks):
            sock.settimeout(3)
            expected = b"$%d\r\nc%d\r\n" % (len(b"c%d" % i), i)
            assert sock.recv(100) == expected
    finally:
        for sock in socks:
            sock.close()


def _exchange_in_pieces(port: int, pieces: list[bytes]) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        for piece in pieces:
            sock.sendall(piece)
            time.sleep(0.05)
        sock.settimeout(1)
        data = b""
        while True:
            try:
                chunk = sock.recv(65536)
            except TimeoutError:
                break
            if not chunk:
                break
            data += chunk
        return data


@pytest.mark.parametrize(
    "pieces",
    [
        [b"*1\r\n$4\r\nPING\r\n*2147483647\r\n"],  # after a whole request, same read
        [b"*2\r\n$4\r\nECHO\r\n", b"*2147483647\r\n"],  # a nested count in the next read
        [b"*2\r\n$4\r\nECHO\r\n$5\r\nab", b"cde\r\n*1\r\n$4\r\nPING\r\n*21474", b"83647\r\n"],
    ],
    ids=["same-read", "nested-next-read", "count-split-after-a-value"],
)
def test_huge_counts_are_refused_wherever_they_arrive(server: HotkvProcess, pieces: list[bytes]) -> None:
    started = time.monotonic()
    reply = _exchange_in_pieces(server.port, pieces)
    assert reply.endswith(b"\r\n") and b"-ERR Protocol error:" in reply
    assert server.client().ping() is True
    assert time.monotonic() - started < 3  # nothing huge was built and freed


def test_big_values_across_reads_and_pipelines(server: HotkvProcess) -> None:
    client = server.client(protocol=2)
    values = [bytes([65 + i]) * (200_000 + i * 7919) for i in range(6)]
    pipe = client.pipeline(transaction=False)
    for i, value in enumerate(values):
        pipe.set(f"big:{i}", value)
        pipe.strlen(f"big:{i}")
    results = pipe.execute()
    assert results == [x for v in values for x in (True, len(v))]
    assert [client.get(f"big:{i}") for i in range(6)] == values
    # values that contain things that look like headers are just bytes
    tricky = b"*2147483647\r\n$999999999999\r\n" * 5000
    assert client.set("tricky", tricky) is True
    assert client.get("tricky") == tricky
