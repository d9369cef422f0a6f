"""Redis Sentinel (the real redis-sentinel 7.0) manages hotkv: three sentinels, quorum two,
a primary and two replicas; kill -9 the primary under a write load, a replica is promoted,
redis-py's Sentinel client follows it, nothing acknowledged with WAIT 1 is lost, and the old
primary rejoins as a replica."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
import redis
from redis.sentinel import Sentinel

from helpers import HotkvProcess, free_port

MASTER = "hotkv"
DOWN_AFTER_MS = 1000


@dataclass
class SentinelProcess:
    port: int
    conf: str
    proc: subprocess.Popen[bytes]

    def client(self) -> redis.Redis:
        return redis.Redis(port=self.port, decode_responses=True, socket_timeout=5)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def start_sentinel(workdir: str, primary_port: int) -> SentinelProcess:
    binary = shutil.which("redis-sentinel")
    assert binary, "redis-sentinel is installed by scripts/test"
    port = free_port()
    conf = os.path.join(workdir, f"sentinel-{port}.conf")
    with open(conf, "w") as fh:
        fh.write(f"port {port}\nbind 127.0.0.1\ndir {workdir}\n"
                 f"logfile {workdir}/sentinel-{port}.log\n"
                 f"sentinel monitor {MASTER} 127.0.0.1 {primary_port} 2\n"
                 f"sentinel down-after-milliseconds {MASTER} {DOWN_AFTER_MS}\n"
                 f"sentinel failover-timeout {MASTER} 6000\n"
                 f"sentinel parallel-syncs {MASTER} 1\n")
    proc = subprocess.Popen([binary, conf], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return SentinelProcess(port, conf, proc)


def wait_for(predicate, timeout: float, what: str):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    last: object = None
    while time.monotonic() < deadline:
        try:
            last = predicate()
            if last:
                return last
        except (redis.RedisError, OSError) as exc:
            last = exc
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what} (last: {last!r})")


@pytest.fixture()
def group() -> Iterator[tuple[list[HotkvProcess], list[SentinelProcess], str]]:
    workdir = tempfile.mkdtemp(prefix="hotkv-sentinel-")
    primary = HotkvProcess("--appendonly", "yes", "--appendfsync", "always").start()
    # the second replica may never be promoted (replica-priority 0): Sentinel reads it from INFO
    replicas = [HotkvProcess("--replicaof", "127.0.0.1", str(primary.port), "--appendonly", "yes",
                             "--replica-priority", priority).start() for priority in ("100", "0")]
    nodes = [primary, *replicas]
    sentinels: list[SentinelProcess] = []
    try:
        wait_for(lambda: primary.client().info("replication")["connected_slaves"] == 2, 20,
                 "both replicas to connect")
        sentinels = [start_sentinel(workdir, primary.port) for _ in range(3)]
        for s in sentinels:
            wait_for(lambda s=s: (lambda m: int(m["num-slaves"]) == 2 and int(m["num-other-sentinels"]) == 2)(
                s.client().sentinel_master(MASTER)), 30, f"sentinel {s.port} to see the group")
        yield nodes, sentinels, workdir
    finally:
        for s in sentinels:
            s.stop()
        for n in nodes:
            n.cleanup()
        shutil.rmtree(workdir, ignore_errors=True)


def test_sentinel_fails_over_a_killed_primary(group) -> None:  # type: ignore[no-untyped-def]
    nodes, sentinels, _ = group
    primary = nodes[0]
    sentinel = Sentinel([("127.0.0.1", s.port) for s in sentinels], socket_timeout=2)
    master = sentinel.master_for(MASTER, socket_timeout=2, decode_responses=True)
    assert sentinel.discover_master(MASTER) == ("127.0.0.1", primary.port)
    assert len(sentinel.discover_slaves(MASTER)) == 2

    acknowledged: list[str] = []
    errors: list[str] = []
    stop = threading.Event()

    def writer() -> None:  # a write load that keeps going through the failover
        i = 0
        while not stop.is_set():
            key = f"k{i}"
            try:
                master.set(key, f"v{i}")
                if master.execute_command("WAIT", 1, 1000) >= 1:
                    acknowledged.append(key)  # only now is the write acknowledged
            except (redis.ConnectionError, redis.TimeoutError, redis.ResponseError) as exc:
                errors.append(type(exc).__name__)
                time.sleep(0.05)
            i += 1

    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    wait_for(lambda: len(acknowledged) >= 100, 30, "100 acknowledged writes")
    primary.kill()
    killed_at = time.monotonic()
    before_kill = len(acknowledged)

    new_addr = wait_for(lambda: (lambda a: a if a[1] != primary.port else None)(
        sentinel.discover_master(MASTER)), 40, "a new primary")
    failover_s = time.monotonic() - killed_at
    assert new_addr[1] == nodes[1].port  # never the replica with priority 0
    # the client follows: the load's writes go on against the promoted replica
    wait_for(lambda: len(acknowledged) >= before_kill + 50, 30, "acknowledged writes after the failover")
    stop.set()
    thread.join(10)
    assert master.set("after-failover", "yes")
    promoted = next(n for n in nodes[1:] if n.port == new_addr[1])
    c = promoted.client(decode_responses=True)
    assert c.execute_command("ROLE")[0] == "master"
    missing = [k for k in acknowledged if c.get(k) is None]
    assert not missing, f"{len(missing)} acknowledged writes lost, e.g. {missing[:3]}"
    # reads through slave_for reach a replica of the new primary
    replica_conn = sentinel.slave_for(MASTER, socket_timeout=2, decode_responses=True)
    wait_for(lambda: replica_conn.get("after-failover") == "yes", 20, "a replica read")
    # the HotKV product's client has no Sentinel support of its own: it asks a sentinel where
    # the primary is (an ordinary SENTINEL command) and connects there
    import hotkv

    asker = hotkv.from_url(f"hotkv://127.0.0.1:{sentinels[0].port}", decode_responses=True)
    host, port = asker.execute_command("SENTINEL", "get-master-addr-by-name", MASTER)
    official = hotkv.from_url(f"hotkv://{host}:{port}", decode_responses=True)
    assert official.get("k0") == "v0" and official.set("via-official", "1")
    asker.close()
    official.close()
    other = next(n for n in nodes[1:] if n is not promoted)
    wait_for(lambda: other.client().info("replication").get("master_port") == promoted.port, 30,
             "the other replica to follow the new primary")
    # the old primary comes back and is turned into a replica of the new one
    primary.start()
    wait_for(lambda: primary.client(decode_responses=True).execute_command("ROLE")[0] == "slave", 40,
             "the old primary to rejoin as a replica")
    wait_for(lambda: primary.client(decode_responses=True).get("after-failover") == "yes", 20,
             "the old primary to resync from the new one")
    print(f"failover took {failover_s:.2f} s; {len(acknowledged)} writes acknowledged, "
          f"{len(errors)} failed while the primary was down")
