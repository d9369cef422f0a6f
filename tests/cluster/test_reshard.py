"""Online resharding: hotkv-cluster reshard moves slots and every object in them (strings,
conversations, notes, namespaces of facts, logs, summaries) between primaries while a
RedisCluster client keeps writing; nothing acknowledged is lost or duplicated, and absolute
expiry is kept."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
import redis
from redis.cluster import ClusterNode, RedisCluster

from cluster.test_cluster import DottedNames, tool
from helpers import HotkvProcess


@pytest.fixture()
def trio() -> Iterator[list[HotkvProcess]]:
    procs = [HotkvProcess("--cluster-enabled", "yes").start() for _ in range(3)]
    try:
        done = tool("create", *(f"127.0.0.1:{p.port}" for p in procs))
        assert done.returncode == 0, done.stderr
        yield procs
    finally:
        for p in procs:
            p.cleanup()


def test_reshard_under_load_moves_every_object(trio: list[HotkvProcess]) -> None:
    rc = RedisCluster(startup_nodes=[ClusterNode("127.0.0.1", trio[0].port)], decode_responses=True,
                      policy_resolver=DottedNames())
    source, target = trio[0], trio[1]
    source_id = source.client().execute_command("CLUSTER", "MYID").decode()
    target_id = target.client().execute_command("CLUSTER", "MYID").decode()
    src_last = max(b for a, b, p, *_ in source.client().execute_command("CLUSTER", "SLOTS") if p[1] == source.port)
    moving = set(range(src_last - 399, src_last + 1))  # reshard takes the source's highest slots
    sessions = [f"s{i}" for i in range(3000)]
    on_moving = [s for s in sessions if rc.keyslot(s) in moving]
    assert len(on_moving) > 20
    for s in on_moving:
        rc.execute_command("AMEM.CONV.CREATE", s, "WINDOW", "5")
        rc.execute_command("AMEM.CONV.APPEND", s, "user", f"first turn of {s}")
        rc.execute_command("AMEM.WORK.SET", s, "n", "0", "TTL", "600")
        rc.set(s, "v", px=500_000)
    ns = on_moving[0]
    rc.execute_command("AMEM.SEM.CREATE", ns, "2")
    rc.execute_command("AMEM.SEM.STORE", ns, "f", "a fact", "1", "0")
    rc.execute_command("AMEM.EPIS.LOG", ns, "action", "before the move")
    rc.execute_command("AMEM.SUMMARY.SET", ns, "summary before the move")

    acked: dict[str, int] = {}
    appended: dict[str, int] = {s: 1 for s in on_moving}
    stop = threading.Event()
    failures: list[str] = []

    def load() -> None:
        writer = RedisCluster(startup_nodes=[ClusterNode("127.0.0.1", trio[2].port)], decode_responses=True,
                              policy_resolver=DottedNames())
        i = 0
        while not stop.is_set():
            s = on_moving[i % len(on_moving)]
            try:
                writer.execute_command("AMEM.WORK.SET", s, "n", str(i), "TTL", "600")
                acked[s] = i
                writer.execute_command("AMEM.CONV.APPEND", s, "assistant", f"turn {i}")
                appended[s] += 1
                writer.set(f"new-{i}", str(i))
            except redis.RedisError as exc:  # counted: the check below says none may happen
                failures.append(repr(exc))
            i += 1
        writer.close()

    thread = threading.Thread(target=load, daemon=True)
    thread.start()
    time.sleep(0.5)
    started = time.monotonic()
    done = tool("reshard", f"127.0.0.1:{source.port}", "--from", source_id, "--to", target_id,
                "--slots", "400", "--batch", "50")
    took = time.monotonic() - started
    time.sleep(0.5)
    stop.set()
    thread.join(20)
    assert done.returncode == 0, done.stdout + done.stderr
    assert not failures, failures[:3]
    assert "moved 400 slots" in done.stdout

    # the slots now belong to the target, and the source holds nothing of them
    for slot in list(moving)[:50]:
        assert source.client().execute_command("CLUSTER", "COUNTKEYSINSLOT", slot) == 0
    owners = {p[1] for a, b, p, *_ in trio[2].client().execute_command("CLUSTER", "SLOTS")
              if a <= src_last <= b}
    assert owners == {target.port}
    t = target.client(decode_responses=True)
    for s in on_moving:
        assert rc.execute_command("AMEM.WORK.GET", s, "n") == str(acked.get(s, 0))
        window = rc.execute_command("AMEM.CONV.WINDOW", s, "100")
        assert len(window) == min(5, appended[s])  # no turn lost or applied twice
        assert 0 < t.pttl(s) <= 500_000  # the absolute deadline travelled with the object
    assert "a fact" in str(rc.execute_command("AMEM.SEM.RECALL", ns, "1", "1", "0"))
    assert len(rc.execute_command("AMEM.EPIS.QUERY", ns)) == 1
    assert "summary before the move" in str(rc.execute_command("AMEM.SUMMARY.GET", ns))
    checked = tool("check", f"127.0.0.1:{trio[2].port}")
    assert checked.returncode == 0, checked.stdout
    rc.close()
    print(f"reshard of 400 slots took {took:.2f} s")
