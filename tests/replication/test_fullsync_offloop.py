"""A replica's full sync does not stall its primary: the snapshot is made by a forked child.

A latency probe PINGs the primary without pause while a replica of 300k entries attaches
and loads; no PING may wait more than a few tens of milliseconds (packing the snapshot on
the loop held every client for a few hundred). Writes made while the child works reach the
replica after its snapshot, and a second replica asking meanwhile gets a full copy too.
"""

from __future__ import annotations

import threading
import time

import pytest
import redis

from helpers import HotkvProcess
from replication.rhelpers import replica_of, servers, state_of, wait_synced

ENTRIES = 300_000


def _fill(r: redis.Redis) -> None:
    for start in range(0, ENTRIES, 20_000):
        r.mset({b"key:%d" % i: b"value-%d" % i for i in range(start, start + 20_000)})
    pipe = r.pipeline(transaction=False)
    for i in range(2_000):
        pipe.execute_command("AMEM.EPIS.LOG", f"agent{i % 20}", "obs", f"event {i}")
        pipe.execute_command("AMEM.WORK.SET", f"s{i % 50}", f"k{i}", "v")
    pipe.execute()


class Probe(threading.Thread):
    """PINGs in a loop on its own connection, keeping the slowest round trip."""

    def __init__(self, proc: HotkvProcess) -> None:
        super().__init__(daemon=True)
        self.client = proc.client(protocol=2)
        self.stop = threading.Event()
        self.worst = 0.0
        self.pings = 0

    def run(self) -> None:
        while not self.stop.is_set():
            started = time.perf_counter()
            self.client.ping()
            self.worst = max(self.worst, time.perf_counter() - started)
            self.pings += 1
            time.sleep(0.001)


@pytest.mark.slow
def test_full_sync_keeps_the_primary_responsive() -> None:
    primary = HotkvProcess()
    with servers(primary) as (primary,):
        p = primary.client()
        _fill(p)
        quiet = Probe(primary)  # the machine's own noise, to compare with
        quiet.start()
        time.sleep(1.0)
        quiet.stop.set()
        quiet.join()
        probe = Probe(primary)
        probe.start()
        replica = replica_of(primary).start()
        try:
            r = replica.client()
            p.set("written-during-sync", "yes")
            wait_synced(p, r, timeout=60)
            probe.stop.set()
            probe.join()
            assert r.dbsize() == ENTRIES + 1
            assert r.get("written-during-sync") == b"yes"
            assert r.get("key:123456") == b"value-123456"
            assert r.execute_command("AMEM.EPIS.LEN", "agent7") == 100
            budget = 0.05 + quiet.worst
            assert probe.pings > 50
            assert probe.worst < budget, (
                f"a PING waited {probe.worst * 1000:.0f} ms during the full sync "
                f"(quiet: {quiet.worst * 1000:.0f} ms)")
            assert "produced off the event loop" in primary.log()
        finally:
            replica.cleanup()


def test_replicas_asking_during_a_sync_and_writes_meanwhile_all_arrive() -> None:
    primary = HotkvProcess()
    with servers(primary) as (primary,):
        p = primary.client()
        p.mset({b"k%d" % i: b"v" for i in range(5_000)})
        first = replica_of(primary)
        second = replica_of(primary)
        try:
            first.start()
            for i in range(200):  # while the first child may still be packing
                p.set(f"during:{i}", i)
            second.start()
            p.execute_command("AMEM.SUMMARY.SET", "agent", "after both")
            a, b = first.client(), second.client()
            wait_synced(p, a, b, timeout=60)
            for replica in (a, b):
                assert replica.dbsize() == 5_200
                assert replica.get("during:199") == b"199"
                assert state_of(replica) == state_of(p)
        finally:
            first.cleanup()
            second.cleanup()
