"""Expiry is the same on every copy: effects carry absolute deadlines, never recomputed.

All servers run on this machine and read the same clock, so "the same moment" is
checked directly: an entry is present on every server before its deadline and absent
from every server once the deadline has passed.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
import redis

from helpers import HotkvProcess, record
from replication.rhelpers import pause, replica_of, resume, servers, wait_synced, wait_until

Trio = tuple[HotkvProcess, HotkvProcess, HotkvProcess]
VEC = ["0.1", "0.2", "0.3", "0.4"]


@pytest.fixture
def trio() -> Iterator[Trio]:
    primary = HotkvProcess().start()
    try:
        with servers(replica_of(primary), replica_of(primary)) as (a, b):
            wait_synced(primary.client(), a.client(), b.client())
            yield primary, a, b
    finally:
        primary.cleanup()


def write_expiring(r: redis.Redis, ttl_ms: int) -> int:
    """One MULTI (one clock reading) giving every store an entry with the same deadline."""
    r.execute_command("AMEM.SEM.CREATE", "ns", 4)
    with r.pipeline(transaction=True) as tx:
        tx.set("kv", "v", px=ttl_ms)
        tx.set("kv:forever", "v")
        tx.execute_command("AMEM.WORK.SET", "pad", "k", "v", "PX", ttl_ms)
        tx.execute_command("AMEM.CONV.CREATE", "conv", "PX", ttl_ms)
        tx.execute_command("AMEM.SEM.STORE", "ns", "fact", "short-lived", *VEC, "PX", ttl_ms)
        tx.execute()
    fact = record(r.execute_command("AMEM.SEM.GET", "ns", "fact"))
    return int(fact[b"expires"])


def present(r: redis.Redis) -> dict[str, bool]:
    p = r.pipeline(transaction=False)
    p.exists("kv")
    p.execute_command("AMEM.WORK.GET", "pad", "k")
    p.execute_command("AMEM.CONV.INFO", "conv")
    p.execute_command("AMEM.SEM.GET", "ns", "fact")
    kv, work, conv, sem = p.execute()
    return {"kv": kv == 1, "work": work is not None, "conv": conv is not None, "sem": sem is not None}


def now_ms() -> int:
    return int(time.time() * 1000)


def watch_expiry(clients: list[redis.Redis], deadline: int) -> None:
    """Poll every server across the deadline; check each observation against it."""
    gone_at: dict[tuple[int, str], int] = {}
    while now_ms() < deadline + 1500:
        for i, c in enumerate(clients):
            sent = now_ms()
            seen = present(c)
            received = now_ms()
            for name, alive in seen.items():
                if alive:
                    # the server looked at some moment >= sent: that moment was before the deadline
                    assert sent < deadline, (i, name, sent, deadline)
                    assert (i, name) not in gone_at, ("came back", i, name)
                else:
                    assert received >= deadline, ("expired early", i, name, received, deadline)
                    gone_at.setdefault((i, name), received)
        if len(gone_at) == 4 * len(clients):
            break
        time.sleep(0.01)
    assert len(gone_at) == 4 * len(clients), gone_at
    # every copy let go within a polling round of the deadline
    assert max(gone_at.values()) - deadline < 400, gone_at


def test_ttl_entries_expire_at_the_same_moment_everywhere(trio: Trio) -> None:
    primary, a, b = trio
    pc = primary.client()
    deadline = write_expiring(pc, 1200)
    assert pc.execute_command("WAIT", 2, 5000) == 2
    clients = [pc, a.client(protocol=2), b.client()]
    for c in clients:
        assert all(present(c).values())
        fact = record(c.execute_command("AMEM.SEM.GET", "ns", "fact"))
        assert int(fact[b"expires"]) == deadline  # the very same absolute deadline
    watch_expiry(clients, deadline)
    for c in clients:
        assert c.get("kv:forever") == b"v"


def test_a_late_replica_keeps_the_primary_deadlines(trio: Trio) -> None:
    """A replica that receives the write a second late must not push the deadline back."""
    primary, a, b = trio
    pc, bc = primary.client(), b.client()
    pause(b)
    try:
        deadline = write_expiring(pc, 2500)
        time.sleep(1.0)
    finally:
        resume(b)
    wait_synced(pc, bc)
    fact = record(bc.execute_command("AMEM.SEM.GET", "ns", "fact"))
    assert int(fact[b"expires"]) == deadline
    ttls: list[Any] = []
    for c in (pc, bc):
        p = c.pipeline(transaction=False)
        p.pttl("kv")
        p.execute_command("AMEM.WORK.TTL", "pad", "k")
        p.execute_command("AMEM.CONV.INFO", "conv")
        kv, work, conv = p.execute()
        ttls.append((kv, work, int(record(conv)[b"ttl"])))
    for on_primary, on_replica in zip(ttls[0], ttls[1], strict=True):
        assert 0 < on_replica <= 1600 and abs(on_primary - on_replica) < 200, ttls
    watch_expiry([pc, a.client(), bc], deadline)


def test_expiry_on_a_replica_whose_primary_is_gone(trio: Trio) -> None:
    primary, a, _ = trio
    pc, ac = primary.client(), a.client()
    deadline = write_expiring(pc, 1500)
    assert pc.execute_command("WAIT", 2, 5000) == 2
    primary.kill()
    wait_until(lambda: ac.info("replication")["master_link_status"] == "down", what="link down")
    assert ac.get("kv:forever") == b"v"  # reads are still served
    watch_expiry([ac], deadline)
    assert ac.execute_command("ROLE")[0] == b"slave"
