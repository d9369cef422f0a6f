"""What a careless or hostile client tried against a real server, and what it gets now.

Safe defaults for clients that never read (a per-client output limit and a cap on all
clients' output together), CONFIG GET with ``user`` directives, META nested too deep or
holding NaN, a vector with a typo, and a prompt exit after shutdown.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest
import redis

from helpers import HotkvProcess, RedisServer

MB = 1024 * 1024


def rss_mb(proc: HotkvProcess) -> float:
    assert proc.proc is not None
    with open(f"/proc/{proc.proc.pid}/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def never_reading_socket(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port))
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    return sock


def gets(n: int, key: bytes = b"big") -> bytes:
    return b"*2\r\n$3\r\nGET\r\n$%d\r\n%s\r\n" % (len(key), key) * n


@pytest.fixture(scope="module")
def proc() -> Iterator[HotkvProcess]:
    server = HotkvProcess("--user", "tenant-a", "on", ">secret-a", "~tenant-a:*", "+@all").start()
    try:
        yield server
    finally:
        server.cleanup()


# --- item 3: a client that never reads ------------------------------------------------


def test_600_unread_gets_of_1mb_cannot_take_the_servers_memory(proc: HotkvProcess) -> None:
    r = proc.client()
    r.set("big", b"x" * MB)
    before = rss_mb(proc)
    hostile = never_reading_socket(proc.port)
    request = gets(600)
    assert len(request) < 14_000  # a 13 kB request ...
    hostile.sendall(request)
    worst = 0.0
    peak = before
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline:
        started = time.perf_counter()
        assert r.ping()
        worst = max(worst, time.perf_counter() - started)
        peak = max(peak, rss_mb(proc))
        time.sleep(0.02)
    # ... no longer builds 600 MB of replies: the client is dropped at the 64 MB limit
    assert peak - before < 200, f"RSS grew from {before:.0f} MB to {peak:.0f} MB"
    assert worst < 0.5, f"PING waited {worst * 1000:.0f} ms"
    assert "output buffer of" in proc.log() and "over the limit" in proc.log()
    hostile.settimeout(2)
    with pytest.raises((ConnectionResetError, BrokenPipeError, TimeoutError, OSError)):
        while hostile.recv(1 << 20):  # what was sent before the drop, then the end
            pass
        raise ConnectionResetError
    hostile.close()


def test_the_defaults_are_shown_by_config_get(proc: HotkvProcess) -> None:
    r = proc.client()
    limits = r.config_get("client-output-buffer-limit")["client-output-buffer-limit"]
    assert limits.split()[:4] == ["normal", str(64 * 1024**2), str(16 * 1024**2), "60"]
    assert r.config_get("maxmemory-clients") == {"maxmemory-clients": str(1024**3)}


def test_maxmemory_clients_evicts_the_biggest_readers_that_never_read(proc: HotkvProcess) -> None:
    r = proc.client()
    r.set("big", b"x" * MB)
    r.config_set("maxmemory-clients", "24mb")
    try:
        before = r.info("stats")["evicted_clients"]
        keeper = proc.client()
        keeper.execute_command("CLIENT", "NO-EVICT", "ON")
        keeper_id = keeper.client_id()
        # each under its own 64 MB limit, all together well over the cap
        hostile = [never_reading_socket(proc.port) for _ in range(6)]
        for sock in hostile:
            sock.sendall(gets(12))
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline and r.info("stats")["evicted_clients"] - before < 4:
            time.sleep(0.05)
        evicted = r.info("stats")["evicted_clients"] - before
        assert 4 <= evicted <= 6
        assert "over maxmemory-clients" in proc.log()
        assert keeper.client_id() == keeper_id  # CLIENT NO-EVICT ON kept it
        assert r.ping()
        for sock in hostile:
            sock.close()
    finally:
        r.config_set("maxmemory-clients", str(1024**3))


# --- item 4: CONFIG GET with user directives --------------------------------------------


@pytest.mark.parametrize("protocol", [2, 3])
def test_config_get_star_with_user_directives(proc: HotkvProcess, protocol: int) -> None:
    r = proc.client(protocol=protocol, decode_responses=True)
    everything = r.config_get("*")
    assert "port" in everything and "maxmemory" in everything
    assert "user" not in everything  # as Redis: users are ACL state (ACL LIST)
    assert "secret-a" not in repr(everything)
    assert r.config_get("user") == {}
    assert r.config_get("us*") == {}
    assert any(line.startswith("user tenant-a on #") for line in r.acl_list())


def test_config_get_user_as_redis_answers() -> None:
    ref = RedisServer()
    try:
        ref_client = redis.Redis(port=ref.port)
        assert ref_client.config_get("user") == {}
    finally:
        ref.stop()


# --- item 5: META ---------------------------------------------------------------------------


DEEP = '{"a":' * 1000 + "1" + "}" * 1000
BAD_META = {
    DEEP: "ERR invalid META: expected a JSON object nested at most 64 levels deep",
    "[" * 1000: "ERR invalid META: expected a JSON object nested at most 64 levels deep",
    '{"a": NaN}': "ERR invalid META: expected a JSON object without NaN (not valid JSON)",
    '{"a": [Infinity]}': "ERR invalid META: expected a JSON object without Infinity (not valid JSON)",
    '{"a": -Infinity}': "ERR invalid META: expected a JSON object without -Infinity (not valid JSON)",
    '{"a": 1e999}': "ERR invalid META: expected a JSON object with finite numbers, got 1e999",
}


def _meta_calls(meta: str) -> list[list[Any]]:
    return [
        ["AMEM.CONV.APPEND", "s", "user", "hi", "META", meta],
        ["AMEM.EPIS.LOG", "agent", "action", "did", "META", meta],
        ["AMEM.SEM.STORE", "kb", "f", "a fact", "0.1", "0.2", "META", meta],
    ]


@pytest.mark.parametrize("protocol", [2, 3])
def test_bad_meta_is_one_line_and_changes_nothing(proc: HotkvProcess, protocol: int) -> None:
    r = proc.client(protocol=protocol)
    r.flushall()
    r.execute_command("AMEM.CONV.CREATE", "s")
    r.execute_command("AMEM.SEM.CREATE", "kb", 2)
    log_before = len(proc.log())
    for meta, expected in BAD_META.items():
        for call in _meta_calls(meta):
            with pytest.raises(redis.ResponseError) as info:
                r.execute_command(*call)
            assert "ERR " + str(info.value) == expected, call[0]
    assert r.ping()  # the connection stays
    assert r.execute_command("AMEM.CONV.LEN", "s") == 0
    assert r.execute_command("AMEM.EPIS.LEN", "agent") == 0
    assert r.execute_command("AMEM.SEM.GET", "kb", "f") is None
    new_log = proc.log()[log_before:]
    assert "Traceback" not in new_log and "RecursionError" not in new_log
    # nested up to the limit, and plain numbers, are fine
    ok = '{"a":' * 63 + "[1.5e10]" + "}" * 63
    for call in _meta_calls(ok):
        r.execute_command(*call)
    assert r.execute_command("AMEM.CONV.LEN", "s") == 1


# --- item 8: a vector typo ---------------------------------------------------------------------


@pytest.mark.parametrize("protocol", [2, 3])
def test_a_vector_typo_names_the_value_and_its_position(proc: HotkvProcess, protocol: int) -> None:
    r = proc.client(protocol=protocol)
    r.flushall()
    r.execute_command("AMEM.SEM.CREATE", "kb", 3)
    cases = {
        ("AMEM.SEM.STORE", "kb", "f2", "text", "0.1", "0.2", "0.3x"):
            "DIM invalid vector value '0.3x' at position 3: expected a decimal number",
        ("AMEM.SEM.STORE", "kb", "f2", "text", "0,1", "0.2", "0.3"):
            "DIM invalid vector value '0,1' at position 1: expected a decimal number",
        ("AMEM.SEM.RECALL", "kb", "3", "0.1", "-.2e", "0.3"):
            "DIM invalid vector value '-.2e' at position 2: expected a decimal number",
        # a short vector followed by an option is still a count
        ("AMEM.SEM.STORE", "kb", "f2", "text", "0.1", "0.2", "TTL", "5"):
            "DIM expected 3 values, got 2",
        ("AMEM.SEM.STORE", "kb", "f2", "text", "0.1", "nan", "0.3"):
            "DIM invalid vector value 'nan' at position 2: expected a finite 32-bit float",
    }
    for call, expected in cases.items():
        with pytest.raises(redis.ResponseError) as info:
            r.execute_command(*call)
        assert str(info.value) == expected
    assert r.execute_command("AMEM.SEM.GET", "kb", "f2") is None


# --- item 9: prompt exit ---------------------------------------------------------------------


@pytest.mark.slow
def test_the_process_exits_promptly_after_bye_bye() -> None:
    """With a million keys, the interpreter's own teardown alone took a third of a second
    (more on a loaded machine) after the last log line; the process now ends at once."""
    server = HotkvProcess().start()
    try:
        r = server.client()
        for start in range(0, 1_000_000, 20_000):
            r.mset({b"key:%d" % i: b"v" for i in range(start, start + 20_000)})
        r.execute_command("AMEM.SEM.CREATE", "kb", 2)
        r.execute_command("AMEM.SEM.STORE", "kb", "f", "t", "0.1", "0.2")
        r.execute_command("AMEM.SEM.RECALL", "kb", 1, "0.1", "0.2")  # starts the search threads
        others = [server.client() for _ in range(3)]
        for other in others:
            other.ping()
        assert server.proc is not None
        with socket.create_connection(("127.0.0.1", server.port)) as sock:
            sock.sendall(b"SHUTDOWN\r\n")
            deadline = time.monotonic() + 30
            while "bye bye" not in server.log() and time.monotonic() < deadline:
                time.sleep(0.002)
            said_bye = time.monotonic()
            code = server.proc.wait(10)
            gone = time.monotonic() - said_bye
        assert code == 0
        assert gone < 0.2, f"the process lived {gone * 1000:.0f} ms after 'bye bye'"
    finally:
        server.cleanup()
