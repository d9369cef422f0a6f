"""A replica that stops reading never slows the primary: past its output limit it is dropped."""

from __future__ import annotations

import re
import time

from helpers import HotkvProcess
from replication.rhelpers import (
    info,
    pause,
    replica_of,
    resume,
    servers,
    sync_counters,
    wait_synced,
    wait_until,
)

LIMIT = 1024 * 1024
VALUE = b"v" * (64 * 1024)
WRITES = 200  # 12.5 MB of stream: far more than the limit and the sockets' buffers


def test_a_stopped_replica_is_dropped_at_the_buffer_limit() -> None:
    primary = HotkvProcess("--client-output-buffer-limit", "replica 1mb 0 0")
    with servers(primary):
        pc = primary.client()
        with servers(replica_of(primary), replica_of(primary)) as (slow, healthy):
            sc, hc = slow.client(), healthy.client()
            pc.set("before", "1")
            wait_synced(pc, sc, hc)
            pause(slow)
            try:
                probe = primary.client()
                worst = 0.0
                started = time.monotonic()
                for i in range(WRITES):
                    pc.set(f"big:{i}", VALUE)
                    t0 = time.monotonic()
                    probe.ping()  # another client of the primary is answered at once
                    worst = max(worst, time.monotonic() - t0)
                    if i % 8 == 7:
                        # the healthy replica keeps up (on a loaded machine it could fall
                        # 1 MB behind too, and be dropped as rightly): at most 512 KB ahead
                        assert pc.execute_command("WAIT", 1, 10_000) >= 1
                elapsed = time.monotonic() - started
                fields = wait_until(lambda: (f := info(pc, "replication"))["connected_slaves"] == 1 and f,
                                    what="the slow replica dropped")
                assert fields["slave0"]["port"] == healthy.port
            finally:
                resume(slow)
            # liveness, not speed: the primary answered all along (a primary held up by its
            # stopped replica would not answer at all until the replica resumed)
            assert worst < 5.0, worst
            assert elapsed < 90, elapsed
            # it was dropped as soon as its waiting stream passed the limit, not later
            pattern = rf"Dropping replica 127\.0\.0\.1:{slow.port}: output buffer of (\d+) bytes"
            dropped = re.search(pattern, primary.log())
            assert dropped is not None, primary.log()[-2000:]
            assert LIMIT < int(dropped.group(1)) <= LIMIT + len(VALUE) + 1024
            # the healthy replica kept up all along
            assert pc.execute_command("WAIT", 1, 5000) == 1
            assert hc.get(f"big:{WRITES - 1}") == VALUE
            # the slow one comes back: the backlog (1 MB) no longer covers its gap, so a full sync
            full_before = sync_counters(pc)[0]
            wait_synced(pc, sc, timeout=30)
            assert sync_counters(pc)[0] == full_before + 1
            assert sc.get(f"big:{WRITES - 1}") == VALUE and sc.dbsize() == pc.dbsize()


def test_soft_limit_drops_a_replica_that_stays_over_it() -> None:
    primary = HotkvProcess("--client-output-buffer-limit", "replica 0 256kb 1")
    with servers(primary):
        pc = primary.client()
        with servers(replica_of(primary)) as (slow,):
            wait_synced(pc, slow.client())
            pause(slow)
            try:
                for i in range(120):  # ~7.5 MB: over the soft limit, under no hard one
                    pc.set(f"big:{i}", VALUE)
                wait_until(lambda: info(pc, "replication")["connected_slaves"] == 0, timeout=10,
                           what="the replica dropped after a second over the soft limit")
            finally:
                resume(slow)
            assert "over the replica limit" in primary.log()
