"""A real server: INFO commandstats, errorstats and SLOWLOG count a deferred command as an
immediate one, and as redis-server 7 counts a blocked one.

A command whose reply comes later (a blocking pop, WAIT, a store by text waiting for its
embedding) is counted when the reply is known, as Redis 7.2 counts a blocked command
when it is unblocked: while it waits it is in no statistic; an
error it ends with (CLIENT UNBLOCK ... ERROR, a failing embedder) counts once in errorstats
and in the command's failed_calls; an idle wait is not part of its duration (no slowlog
entry for a pop that waited). The blocking cases are compared with a real redis-server.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest
import redis

from helpers import HotkvProcess, RedisServer, free_port, resp_request

#: what commandstats says of a call apart from its timing
COUNTS = ("calls", "rejected_calls", "failed_calls")


@pytest.fixture(scope="module")
def servers() -> Iterator[dict[str, int]]:
    ours = HotkvProcess().start()
    theirs = RedisServer()
    try:
        yield {"hotkv": ours.port, "redis": theirs.port}
    finally:
        ours.cleanup()
        theirs.stop()


def admin(port: int) -> redis.Redis:
    client = redis.Redis(port=port, protocol=2, decode_responses=True)
    client.config_resetstat()
    client.delete("q")
    return client


def counts(client: redis.Redis, name: str) -> dict[str, int] | None:
    stat = client.info("commandstats").get(f"cmdstat_{name}")
    return None if stat is None else {key: int(stat[key]) for key in COUNTS}


def error_count(client: redis.Redis, code: str) -> int:
    stat = client.info("errorstats").get(f"errorstat_{code}")
    return 0 if stat is None else int(stat["count"])


def read_reply(sock: socket.socket) -> bytes:
    sock.settimeout(5)
    data = b""
    while not data.endswith(b"\r\n"):
        chunk = sock.recv(4096)
        if not chunk:
            break
        data += chunk
    return data


def until_blocked(client: redis.Redis, count: int = 1) -> None:
    for _ in range(500):
        if int(client.info("clients")["blocked_clients"]) >= count:
            return
        time.sleep(0.01)
    raise AssertionError("the client never blocked")


def unblocked_with_an_error(port: int) -> dict[str, Any]:
    client = admin(port)
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(resp_request("CLIENT", "ID"))
        client_id = int(read_reply(sock)[1:])
        sock.sendall(resp_request("BLPOP", "q", "0"))
        until_blocked(client)
        waiting = counts(client, "blpop")
        client.execute_command("CLIENT", "UNBLOCK", client_id, "ERROR")
        reply = read_reply(sock)
    return {"waiting": waiting, "reply": reply, "after": counts(client, "blpop"),
            "unblocked": error_count(client, "UNBLOCKED"),
            "errors": int(client.info("stats")["total_error_replies"])}


def test_a_pop_unblocked_with_an_error_counts_as_redis_does(servers: dict[str, int]) -> None:
    ours = unblocked_with_an_error(servers["hotkv"])
    theirs = unblocked_with_an_error(servers["redis"])
    # while it waits, the call is not counted yet: Redis 7.2 and later count a blocked
    # command when it is unblocked (redis-server 7.0 counts the call as it blocks, and
    # its time, failure and slowlog entry when it is unblocked)
    assert ours.pop("waiting") is None
    theirs.pop("waiting")
    assert ours == theirs
    assert ours["reply"] == b"-UNBLOCKED client unblocked via CLIENT UNBLOCK\r\n"
    assert ours["unblocked"] == 1 and ours["errors"] == 1
    assert ours["after"]["failed_calls"] == 1


def timed_out_pop(port: int) -> dict[str, Any]:
    client = admin(port)
    client.config_set("slowlog-log-slower-than", 50_000)  # 50 ms: the pop waits 200
    client.slowlog_reset()
    try:
        other = redis.Redis(port=port, protocol=2)
        assert other.blpop(["q"], timeout=0.2) is None
        return {"after": counts(client, "blpop"),
                "slowlog": [entry["command"] for entry in client.slowlog_get()]}
    finally:
        client.config_set("slowlog-log-slower-than", 10_000)


def test_a_pop_that_timed_out_is_one_call_and_no_slow_one(servers: dict[str, int]) -> None:
    ours = timed_out_pop(servers["hotkv"])
    assert ours == timed_out_pop(servers["redis"])
    assert ours["after"] == {"calls": 1, "rejected_calls": 0, "failed_calls": 0}
    assert not any(b"blpop" in entry.lower() for entry in ours["slowlog"])


def test_a_store_whose_embedding_fails_counts_as_an_immediate_error() -> None:
    proc = HotkvProcess("--embed-wordllama", "no",
                        "--embed-openai-url", f"http://127.0.0.1:{free_port()}/v1",
                        "--embed-openai-model", "m", "--embed-openai-dim", "4",
                        "--embed-openai-retries", "0").start()
    try:
        client = proc.client(protocol=2)
        client.execute_command("AMEM.SEM.CREATE", "kb", "EMBEDDER", "openai")
        client.config_resetstat()
        # deferred: the embedding is asked of an endpoint nobody listens on
        with pytest.raises(redis.ResponseError, match="embedder 'openai' failed"):
            client.execute_command("AMEM.SEM.STORE", "kb", "a", "nobody listens")
        after_deferred = (counts(client, "amem.sem.store"), error_count(client, "ERR"))
        # immediate: refused by the handler at once
        with pytest.raises(redis.ResponseError):
            client.execute_command("AMEM.SEM.STORE", "kb", "a", "text", "CONFIDENCE", "7")
        after_immediate = (counts(client, "amem.sem.store"), error_count(client, "ERR"))
        assert after_deferred == ({"calls": 1, "rejected_calls": 0, "failed_calls": 1}, 1)
        assert after_immediate == ({"calls": 2, "rejected_calls": 0, "failed_calls": 2}, 2)
        assert int(client.info("stats")["total_error_replies"]) == 2
    finally:
        proc.cleanup()
