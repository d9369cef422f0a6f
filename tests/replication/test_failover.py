"""Losing the primary: promote a replica, re-point the other, lose no acknowledged write."""

from __future__ import annotations

import threading

import redis

from helpers import HotkvProcess
from persistence.pdata import assert_same_state, populate
from replication.rhelpers import (
    info,
    offset,
    replica_of,
    servers,
    state_of,
    sync_counters,
    wait_synced,
    wait_until,
)


def writer(r: redis.Redis, acked: list[int], stop: threading.Event) -> None:
    """Write one key after another; remember those that WAIT saw on both replicas."""
    i = 0
    while not stop.is_set():
        try:
            r.set(f"w:{i}", str(i))
            r.execute_command("AMEM.EPIS.LOG", "writer", "write", str(i))
            if r.execute_command("WAIT", 2, 1000) == 2:
                acked.append(i)
        except (redis.ConnectionError, redis.TimeoutError):
            return
        i += 1


def test_promote_a_replica_and_repoint_the_other() -> None:
    primary = HotkvProcess()
    with servers(primary):
        pc = primary.client()
        with servers(replica_of(primary), replica_of(primary)) as (a, b):
            ac, bc = a.client(), b.client()
            populate(pc, seed=21, rounds=20)
            assert pc.execute_command("WAIT", 2, 10000) == 2
            acked: list[int] = []
            stop = threading.Event()
            thread = threading.Thread(target=writer, args=(primary.client(), acked, stop), daemon=True)
            thread.start()
            wait_until(lambda: len(acked) >= 20, what="acknowledged writes")
            primary.kill()  # mid-stream: the last writes may have reached one replica, or none
            stop.set()
            thread.join(10)
            for c in (ac, bc):
                wait_until(lambda c=c: info(c, "replication")["master_link_status"] == "down", what="link down")
            # promote the replica that got furthest, as Sentinel would
            if offset(bc) > offset(ac):
                a, b, ac, bc = b, a, bc, ac
            old_replid = info(ac, "replication")["master_replid"]
            assert ac.execute_command("REPLICAOF", "NO", "ONE") == b"OK"
            assert info(ac, "replication")["master_replid2"] == old_replid
            assert bc.execute_command("REPLICAOF", "127.0.0.1", a.port) == b"OK"
            wait_synced(ac, bc)
            assert sync_counters(ac) == (0, 1, 0)  # the re-pointed replica continued, no copy
            for c in (ac, bc):
                values = c.mget([f"w:{i}" for i in acked])
                assert values == [str(i).encode() for i in acked]
                assert c.execute_command("AMEM.EPIS.LEN", "writer") >= len(acked)
            # the new primary takes writes and replicates them
            ac.execute_command("AMEM.SUMMARY.SET", "agent", "after the failover")
            assert ac.execute_command("WAIT", 1, 5000) == 1
            assert_same_state(state_of(ac), state_of(bc))
            with_b = info(ac, "replication")
            assert with_b["connected_slaves"] == 1 and with_b["slave0"]["port"] == b.port


def test_the_old_primary_comes_back_as_a_replica() -> None:
    primary = HotkvProcess("--appendonly", "yes")
    with servers(primary):
        pc = primary.client()
        with servers(replica_of(primary)) as (a,):
            ac = a.client()
            populate(pc, seed=22, rounds=10)
            assert pc.execute_command("WAIT", 1, 5000) == 1
            primary.stop()
            assert ac.execute_command("REPLICAOF", "NO", "ONE") == b"OK"
            ac.set("written-on-the-new-primary", "1")
            primary.start()
            pc = primary.client()
            assert pc.execute_command("REPLICAOF", "127.0.0.1", a.port) == b"OK"
            wait_synced(ac, pc)
            # its saved id and offset are the promoted replica's replid2: a partial resync
            assert sync_counters(ac)[1] == 1
            assert pc.get("written-on-the-new-primary") == b"1"
            assert_same_state(state_of(ac), state_of(pc))
            assert info(pc, "replication")["role"] == "slave"
