"""Two tenants confined by ACL key patterns cannot reach each other's memory, in any store."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis

from helpers import HotkvProcess

# one call per AMEM command that names an id; {t} is the tenant whose id it names
CALLS: list[list[str]] = [
    ["AMEM.CONV.CREATE", "{t}:s9", "WINDOW", "5"],
    ["AMEM.CONV.APPEND", "{t}:s", "user", "hello"],
    ["AMEM.CONV.WINDOW", "{t}:s"],
    ["AMEM.CONV.LEN", "{t}:s"],
    ["AMEM.CONV.INFO", "{t}:s"],
    ["AMEM.CONV.DEL", "{t}:s"],
    ["AMEM.WORK.SET", "{t}:s", "k", "v"],
    ["AMEM.WORK.GET", "{t}:s", "k"],
    ["AMEM.WORK.MGET", "{t}:s", "k"],
    ["AMEM.WORK.GETALL", "{t}:s"],
    ["AMEM.WORK.LEN", "{t}:s"],
    ["AMEM.WORK.TTL", "{t}:s", "k"],
    ["AMEM.WORK.EXPIRE", "{t}:s", "100"],
    ["AMEM.WORK.DEL", "{t}:s", "k"],
    ["AMEM.WORK.CLEAR", "{t}:s"],
    ["AMEM.EPIS.LOG", "{t}:agent", "action", "did it"],
    ["AMEM.EPIS.QUERY", "{t}:agent"],
    ["AMEM.EPIS.LEN", "{t}:agent"],
    ["AMEM.EPIS.TRIM", "{t}:agent", "MAXLEN", "10"],
    ["AMEM.EPIS.DEL", "{t}:agent"],
    ["AMEM.SUMMARY.SET", "{t}:agent", "text"],
    ["AMEM.SUMMARY.APPEND", "{t}:agent", "line"],
    ["AMEM.SUMMARY.GET", "{t}:agent"],
    ["AMEM.SUMMARY.DEL", "{t}:agent"],
    ["AMEM.SEM.CREATE", "{t}:kb9", "2"],
    ["AMEM.SEM.STORE", "{t}:kb", "f", "a fact", "0.1", "0.2"],
    ["AMEM.SEM.RECALL", "{t}:kb", "3", "0.1", "0.2"],
    ["AMEM.SEM.GET", "{t}:kb", "f"],
    ["AMEM.SEM.LIST", "{t}:kb"],
    ["AMEM.SEM.INFO", "{t}:kb"],
    ["AMEM.SEM.DEL", "{t}:kb", "f"],
    ["AMEM.SEM.DROP", "{t}:kb"],
    # the HotKV dialect's commands
    ["AMEM.CONV.GET", "{t}:s"],
    ["AMEM.CONV.CLEAR", "{t}:s"],
    ["AMEM.CONV.DROP", "{t}:s"],
    ["AMEM.WORK.LIST", "{t}:s"],
    ["AMEM.EPIS.CLEAR", "{t}:agent"],
    ["AMEM.EPIS.STATS", "{t}:agent"],
    ["AMEM.SUMMARY.DROP", "{t}:agent"],
    ["AMEM.SEM.FORGET", "{t}:kb", "f"],
    ["AMEM.SEARCH", "{t}:kb", "3", "0.1", "0.2", "TEXT", "fact"],
]


def _seed(client: redis.Redis, tenant: str) -> None:
    client.execute_command("AMEM.CONV.CREATE", f"{tenant}:s")
    client.execute_command("AMEM.CONV.APPEND", f"{tenant}:s", "user", f"secret of {tenant}")
    client.execute_command("AMEM.WORK.SET", f"{tenant}:s", "k", f"note of {tenant}")
    client.execute_command("AMEM.EPIS.LOG", f"{tenant}:agent", "action", f"event of {tenant}")
    client.execute_command("AMEM.SUMMARY.SET", f"{tenant}:agent", f"summary of {tenant}")
    client.execute_command("AMEM.SEM.CREATE", f"{tenant}:kb", "2")
    client.execute_command("AMEM.SEM.STORE", f"{tenant}:kb", "f", f"fact of {tenant}", "0.1", "0.2")


@pytest.fixture(scope="module")
def tenants() -> Iterator[tuple[HotkvProcess, redis.Redis]]:
    proc = HotkvProcess("--requirepass", "root").start()
    root = proc.client(password="root")
    for tenant in ("tenant-a", "tenant-b"):
        root.execute_command("ACL", "SETUSER", tenant, "on", f">{tenant}-pw", f"~{tenant}:*", "+@amem", "+@transaction",
                             "+@connection")
    try:
        yield proc, root
    finally:
        proc.cleanup()


def _login(proc: HotkvProcess, tenant: str, protocol: int) -> redis.Redis:
    return proc.client(protocol=protocol, username=tenant, password=f"{tenant}-pw")


@pytest.mark.parametrize("protocol", [2, 3])
def test_no_amem_command_reaches_the_other_tenant(tenants: tuple[HotkvProcess, redis.Redis],
                                                  protocol: int) -> None:
    proc, root = tenants
    root.flushall()
    root.execute_command("ACL", "LOG", "RESET")
    a = _login(proc, "tenant-a", protocol)
    b = _login(proc, "tenant-b", protocol)
    _seed(a, "tenant-a")
    _seed(b, "tenant-b")
    for call in CALLS:
        argv = [part.replace("{t}", "tenant-b") for part in call]
        with pytest.raises(redis.exceptions.NoPermissionError, match="keys used as arguments"):
            a.execute_command(*argv)
    # nothing of b's was changed by a's attempts
    window = b.execute_command("AMEM.CONV.WINDOW", "tenant-b:s")
    assert len(window) == 1
    assert b.execute_command("AMEM.WORK.GET", "tenant-b:s", "k") == b"note of tenant-b"
    assert b.execute_command("AMEM.EPIS.LEN", "tenant-b:agent") == 1
    assert b.execute_command("AMEM.SEM.GET", "tenant-b:kb", "f") is not None
    log = root.execute_command("ACL", "LOG")
    assert len(log) >= 1
    text = repr(log)
    assert "tenant-b:" in text and "tenant-a" in text


def test_multi_cannot_smuggle_a_foreign_id(tenants: tuple[HotkvProcess, redis.Redis]) -> None:
    proc, root = tenants
    root.flushall()
    a = _login(proc, "tenant-a", 3)
    pipe = a.pipeline(transaction=True)
    pipe.execute_command("AMEM.WORK.SET", "tenant-a:s", "k", "mine")
    pipe.execute_command("AMEM.WORK.SET", "tenant-b:s", "k", "theirs")
    with pytest.raises((redis.exceptions.NoPermissionError, redis.exceptions.ExecAbortError)):
        pipe.execute()
    assert root.execute_command("AMEM.WORK.GET", "tenant-a:s", "k") is None
    assert root.execute_command("AMEM.WORK.GET", "tenant-b:s", "k") is None


@pytest.mark.parametrize("store", ["conv", "work", "epis", "summary", "sem"])
def test_amem_scan_shows_only_own_ids(tenants: tuple[HotkvProcess, redis.Redis], store: str) -> None:
    proc, root = tenants
    root.flushall()
    a = _login(proc, "tenant-a", 2)
    b = _login(proc, "tenant-b", 2)
    _seed(a, "tenant-a")
    _seed(b, "tenant-b")
    seen: list[bytes] = []
    cursor: bytes | int = 0
    while True:
        cursor, ids = a.execute_command("AMEM.SCAN", cursor, "TYPE", store, "COUNT", "100")
        seen.extend(ids)
        if cursor in (0, b"0"):
            break
    assert seen and all(i.startswith(b"tenant-a:") for i in seen)
    everything = root.execute_command("AMEM.SCAN", 0, "TYPE", store, "COUNT", "100")[1]
    assert any(i.startswith(b"tenant-b:") for i in everything)


def test_read_only_tenant_user(tenants: tuple[HotkvProcess, redis.Redis]) -> None:
    proc, root = tenants
    root.flushall()
    root.execute_command("ACL", "SETUSER", "auditor", "on", ">au", "%R~tenant-a:*", "+@amem-read",
                         "+@connection")
    a = _login(proc, "tenant-a", 3)
    _seed(a, "tenant-a")
    auditor = proc.client(username="auditor", password="au")
    assert auditor.execute_command("AMEM.WORK.GET", "tenant-a:s", "k") == b"note of tenant-a"
    with pytest.raises(redis.exceptions.NoPermissionError):
        auditor.execute_command("AMEM.WORK.SET", "tenant-a:s", "k", "changed")
    with pytest.raises(redis.exceptions.NoPermissionError):
        auditor.execute_command("AMEM.CONV.APPEND", "tenant-a:s", "user", "x")


@pytest.mark.parametrize("protocol", [2, 3])
def test_summary_list_shows_only_own_agents(tenants: tuple[HotkvProcess, redis.Redis],
                                            protocol: int) -> None:
    """AMEM.SUMMARY.LIST names no key, so the key check cannot stop it: it lists only the
    agents the user's key patterns allow."""
    proc, root = tenants
    root.flushall()
    a = _login(proc, "tenant-a", protocol)
    b = _login(proc, "tenant-b", protocol)
    _seed(a, "tenant-a")
    _seed(b, "tenant-b")
    assert a.execute_command("AMEM.SUMMARY.LIST") == [b"tenant-a:agent"]
    assert b.execute_command("AMEM.SUMMARY.LIST") == [b"tenant-b:agent"]
    assert root.execute_command("AMEM.SUMMARY.LIST") == [b"tenant-a:agent", b"tenant-b:agent"]
