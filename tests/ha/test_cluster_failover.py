"""A shard failover inside a cluster goes through Sentinel: three shards of a primary and a
replica, three sentinels watching the three primaries with scripts/sentinel-reconfig as their
client-reconfig-script. Kill one primary: Sentinel promotes its replica, the script rewrites
the topology on every node, redis-py's RedisCluster is redirected to the promoted node and
loses nothing acknowledged with WAIT 1; the old primary rejoins as a replica and learns the
new topology from its primary."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator

import pytest
import redis
from redis.cluster import ClusterNode, RedisCluster

from cluster.test_cluster import DottedNames, tool
from ha.test_sentinel import SentinelProcess, wait_for
from helpers import ROOT, HotkvProcess, free_port

RECONFIG = ROOT / "scripts" / "sentinel-reconfig"


def start_sentinel(workdir: str, shards: list[tuple[str, int]]) -> SentinelProcess:
    port = free_port()
    conf = os.path.join(workdir, f"sentinel-{port}.conf")
    lines = [f"port {port}", "bind 127.0.0.1", f"dir {workdir}", f"logfile {workdir}/sentinel-{port}.log"]
    for name, primary_port in shards:
        lines += [f"sentinel monitor {name} 127.0.0.1 {primary_port} 2",
                  f"sentinel down-after-milliseconds {name} 1000",
                  f"sentinel failover-timeout {name} 6000",
                  f"sentinel client-reconfig-script {name} {RECONFIG}"]
    with open(conf, "w") as fh:
        fh.write("\n".join(lines) + "\n")
    env = {**os.environ, "HOTKV_PYTHON": sys.executable,
           "PYTHONPATH": str(ROOT / "src") + os.pathsep + os.environ.get("PYTHONPATH", "")}
    binary = shutil.which("redis-sentinel")
    assert binary
    proc = subprocess.Popen([binary, conf], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    return SentinelProcess(port, conf, proc)


@pytest.fixture()
def sharded() -> Iterator[tuple[list[HotkvProcess], list[SentinelProcess]]]:
    workdir = tempfile.mkdtemp(prefix="hotkv-cluster-ha-")
    nodes = [HotkvProcess("--cluster-enabled", "yes", "--appendonly", "yes").start() for _ in range(6)]
    sentinels: list[SentinelProcess] = []
    try:
        done = tool("create", *(f"127.0.0.1:{n.port}" for n in nodes), "--replicas", "1")
        assert done.returncode == 0, done.stderr
        primaries = nodes[:3]
        for p in primaries:
            wait_for(lambda p=p: p.client().info("replication")["connected_slaves"] == 1, 20, "replicas")
        shards = [(f"shard{i}", p.port) for i, p in enumerate(primaries)]
        sentinels = [start_sentinel(workdir, shards) for _ in range(3)]
        for s in sentinels:
            for name, _ in shards:
                wait_for(lambda s=s, name=name: int(s.client().sentinel_master(name)["num-other-sentinels"]) == 2,
                         30, f"sentinel {s.port} to see the others for {name}")
        yield nodes, sentinels
    finally:
        for s in sentinels:
            s.stop()
        for n in nodes:
            n.cleanup()
        shutil.rmtree(workdir, ignore_errors=True)


def test_a_shard_fails_over_through_sentinel(sharded) -> None:  # type: ignore[no-untyped-def]
    nodes, sentinels = sharded
    rc = RedisCluster(startup_nodes=[ClusterNode("127.0.0.1", nodes[1].port)], decode_responses=True,
                      policy_resolver=DottedNames())
    victim = nodes[0]
    victim_slots = [(a, b) for a, b, p, *_ in victim.client().execute_command("CLUSTER", "SLOTS")
                    if p[1] == victim.port]
    acknowledged = []
    for i in range(300):
        rc.execute_command("AMEM.WORK.SET", f"{{s{i}}}", "note", str(i))
        node = rc.get_node_from_key(f"{{s{i}}}")
        assert rc.execute_command("WAIT", 1, 2000, target_nodes=node) >= 1
        acknowledged.append(i)
    moved = [i for i in acknowledged if any(a <= rc.keyslot(f"{{s{i}}}") <= b for a, b in victim_slots)]
    assert moved, "some sessions live on the shard whose primary dies"
    victim.kill()
    killed = time.monotonic()
    replica_port = nodes[3].port  # create() paired node 3 with primary 0
    wait_for(lambda: sentinels[0].client().sentinel_get_master_addr_by_name("shard0")[1] == replica_port,
             40, "Sentinel to promote shard0's replica")
    wait_for(lambda: any(p[1] == replica_port for _a, _b, p, *_ in
                         nodes[1].client().execute_command("CLUSTER", "SLOTS")), 30,
             "the reconfig script to give the slots to the promoted node")
    took = time.monotonic() - killed
    checked = tool("check", f"127.0.0.1:{nodes[1].port}")
    # the dead node still listed as a replica cannot answer: only it may be reported
    assert all(str(victim.port) in line for line in checked.stdout.splitlines() if line.startswith("[ERR]"))
    wait_for(lambda: rc.execute_command("AMEM.WORK.GET", f"{{s{moved[0]}}}", "note") == str(moved[0]), 30,
             "the cluster client to follow the new slot owner")
    for i in acknowledged:
        assert rc.execute_command("AMEM.WORK.GET", f"{{s{i}}}", "note") == str(i), i
    # the old primary returns; Sentinel makes it a replica and it learns the topology
    victim.start()
    wait_for(lambda: victim.client(decode_responses=True).execute_command("ROLE")[0] == "slave", 40,
             "the old primary to rejoin as a replica")
    wait_for(lambda: all(p[1] != victim.port for _a, _b, p, *_ in
                         victim.client().execute_command("CLUSTER", "SLOTS")), 20,
             "the old primary to learn the new topology")
    session = f"{{s{moved[0]}}}"
    slot = rc.keyslot(session)
    c = victim.client(protocol=2)
    try:
        c.execute_command("AMEM.WORK.SET", session, "note", "stale write")
        raise AssertionError("the old primary accepted a write")
    except redis.exceptions.MovedError as exc:
        assert str(exc) == f"{slot} 127.0.0.1:{replica_port}"
    rc.close()
    print(f"shard failover took {took:.2f} s")
