"""Reconnections: a partial resync from the backlog whenever the history allows it.

INFO stats' ``sync_full`` / ``sync_partial_ok`` / ``sync_partial_err`` on the serving
side tell which kind of sync happened.
"""

from __future__ import annotations

import os

import redis

from helpers import HotkvProcess
from persistence.pdata import assert_same_state, populate
from replication.rhelpers import (
    info,
    replica_of,
    servers,
    state_of,
    sync_counters,
    wait_synced,
    wait_until,
)


def client_ids(r: redis.Redis, kind: str) -> list[int]:
    listing = r.execute_command("CLIENT", "LIST", "TYPE", kind)
    text = listing.decode() if isinstance(listing, bytes) else str(listing)
    return [int(line.split()[0].split("=")[1]) for line in text.splitlines() if line]


def test_a_replica_restarted_mid_stream_resyncs_partially() -> None:
    with servers(HotkvProcess()) as (primary,):
        pc = primary.client()
        replica = replica_of(primary, "--appendonly", "yes")
        with servers(replica):
            rc = replica.client()
            populate(pc, seed=11, rounds=25)
            wait_synced(pc, rc)
            before = sync_counters(pc)
            replica.stop()  # clean: the AOF is complete, the replication id and offset saved
            assert os.path.exists(os.path.join(replica.dir, "replication.state"))
            populate(pc, seed=12, rounds=25)  # the stream goes on without it
            replica.start()
            assert not os.path.exists(os.path.join(replica.dir, "replication.state"))  # read once
            rc = replica.client()
            wait_synced(pc, rc)
            full, partial, failed = sync_counters(pc)
            assert (full, partial, failed) == (before[0], before[1] + 1, before[2])
            assert_same_state(state_of(pc), state_of(rc))
            assert "Partial Resynchronization" in replica.log()


def test_a_crashed_replica_gets_a_full_sync() -> None:
    """After SIGKILL nothing says which offset the files are at: only a full sync is safe."""
    with servers(HotkvProcess()) as (primary,):
        pc = primary.client()
        replica = replica_of(primary, "--appendonly", "yes", "--appendfsync", "always")
        with servers(replica):
            populate(pc, seed=13, rounds=15)
            wait_synced(pc, replica.client())
            full_before = sync_counters(pc)[0]
            replica.kill()
            populate(pc, seed=14, rounds=15)
            replica.start()
            rc = replica.client()
            wait_synced(pc, rc)
            assert sync_counters(pc)[0] == full_before + 1
            assert_same_state(state_of(pc), state_of(rc))


def test_a_dropped_link_continues_from_the_backlog() -> None:
    with servers(HotkvProcess()) as (primary,):
        pc = primary.client()
        with servers(replica_of(primary)) as (replica,):
            rc = replica.client()
            populate(pc, seed=15, rounds=10)
            wait_synced(pc, rc)
            before = sync_counters(pc)
            # the primary closes the replica's connection ...
            (replica_id,) = client_ids(pc, "replica")
            assert pc.execute_command("CLIENT", "KILL", "ID", replica_id) == 1
            pc.set("after-kill", "1")
            wait_until(lambda: rc.get("after-kill") == b"1", what="write after the kill")
            # ... and the replica closes its link to the primary
            (link_id,) = client_ids(rc, "master")
            assert rc.execute_command("CLIENT", "KILL", "ID", link_id) == 1
            pc.set("after-link-kill", "1")
            wait_until(lambda: rc.get("after-link-kill") == b"1", what="write after the link kill")
            wait_synced(pc, rc)
            full, partial, failed = sync_counters(pc)
            assert (full, partial, failed) == (before[0], before[1] + 2, before[2])
            assert_same_state(state_of(pc), state_of(rc))


def test_a_gap_longer_than_the_backlog_needs_a_full_sync() -> None:
    with servers(HotkvProcess("--repl-backlog-size", "16kb")) as (primary,):
        pc = primary.client()
        replica = replica_of(primary, "--appendonly", "yes")
        with servers(replica):
            rc = replica.client()
            pc.set("first", "1")
            wait_synced(pc, rc)
            before = sync_counters(pc)
            replica.stop()
            for i in range(40):
                pc.set(f"big:{i}", "x" * 1000)  # 40 KB of stream: more than the backlog keeps
            assert int(info(pc, "replication")["repl_backlog_histlen"]) == 16 * 1024
            replica.start()
            rc = replica.client()
            wait_synced(pc, rc)
            assert sync_counters(pc) == (before[0] + 1, before[1], before[2] + 1)
            assert rc.get("big:0") == b"x" * 1000 and rc.get("first") == b"1"


def test_a_restarted_primary_lets_its_replica_continue() -> None:
    primary = HotkvProcess("--appendonly", "yes")
    with servers(primary):
        pc = primary.client()
        with servers(replica_of(primary)) as (replica,):
            rc = replica.client()
            populate(pc, seed=16, rounds=10)
            wait_synced(pc, rc)
            replid = info(pc, "replication")["master_replid"]
            primary.stop()
            wait_until(lambda: info(rc, "replication")["master_link_status"] == "down", what="link down")
            primary.start()
            pc = primary.client()
            assert info(pc, "replication")["master_replid"] == replid
            wait_synced(pc, rc)
            assert sync_counters(pc) == (0, 1, 0)
            pc.set("after-restart", "1")
            wait_until(lambda: rc.get("after-restart") == b"1", what="write after the restart")
            assert_same_state(state_of(pc), state_of(rc))
