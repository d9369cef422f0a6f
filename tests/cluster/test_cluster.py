"""Cluster mode end to end: three hotkv nodes formed by hotkv-cluster, driven by redis-py's
RedisCluster, redis-cli -c and raw commands (MOVED, ASK, CROSSSLOT, CLUSTERDOWN, READONLY)."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest
import redis
from redis.cluster import ClusterNode, RedisCluster
from redis.commands.policies import PolicyResolver, StaticPolicyResolver

from helpers import ROOT, HotkvProcess, RedisServer, free_port, resp_request

SLOTS = 16384


def tool(*args: str) -> subprocess.CompletedProcess[str]:
    env = {"PYTHONPATH": str(ROOT / "src")}
    import os

    env = {**os.environ, **env}
    return subprocess.run([sys.executable, "-m", "hotkv_server.cluster.tool", *args],
                          capture_output=True, text=True, env=env, timeout=60)


@pytest.fixture(scope="module")
def nodes() -> Iterator[list[HotkvProcess]]:
    procs = [HotkvProcess("--cluster-enabled", "yes").start() for _ in range(3)]
    try:
        done = tool("create", *(f"127.0.0.1:{p.port}" for p in procs))
        assert done.returncode == 0, done.stderr
        yield procs
    finally:
        for p in procs:
            p.cleanup()


class DottedNames(PolicyResolver):
    """redis-py 8's RedisCluster refuses command names with two dots (AMEM.CONV.APPEND) in
    its static policy table; answering "no policy" for them makes it route by the key
    positions COMMAND reports, as docs/scale-out.md shows."""

    def __init__(self) -> None:
        self.inner = StaticPolicyResolver()

    def resolve(self, command_name: str):  # type: ignore[no-untyped-def]
        return None if command_name.count(".") > 1 else self.inner.resolve(command_name)

    def with_fallback(self, fallback: PolicyResolver) -> PolicyResolver:
        return self


def cluster_client(nodes: list[HotkvProcess], protocol: int = 3) -> RedisCluster:
    return RedisCluster(startup_nodes=[ClusterNode("127.0.0.1", nodes[0].port)], protocol=protocol,
                        decode_responses=True, policy_resolver=DottedNames())


def err(node: HotkvProcess, *args: object) -> str:
    """The error line a node answers to one command (redis-py turns MOVED and ASK into
    exceptions that drop the error code, so the raw line is read here)."""
    with socket.create_connection(("127.0.0.1", node.port), timeout=5) as sock:
        sock.sendall(resp_request(*(str(a) for a in args)))
        data = b""
        while not data.endswith(b"\r\n"):
            chunk = sock.recv(4096)
            assert chunk, "connection closed"
            data += chunk
    assert data.startswith(b"-"), data
    return data[1:-2].decode()


def owner_of(nodes: list[HotkvProcess], slot: int) -> HotkvProcess:
    for p in nodes:
        c = p.client(decode_responses=True)
        for first, last, primary, *_ in c.execute_command("CLUSTER", "SLOTS"):
            if first <= slot <= last and primary[1] == p.port:
                return p
    raise AssertionError(f"no owner of slot {slot}")


def test_topology_is_complete_and_shared(nodes: list[HotkvProcess]) -> None:
    info = nodes[0].client(decode_responses=True).execute_command("CLUSTER", "INFO")
    text = info if isinstance(info, str) else info.decode()
    fields = dict(line.split(":", 1) for line in text.strip().splitlines())
    assert fields["cluster_state"] == "ok"
    assert fields["cluster_slots_assigned"] == str(SLOTS)
    assert fields["cluster_size"] == "3" and fields["cluster_known_nodes"] == "3"
    ranges = sorted((a, b) for a, b, *_ in nodes[1].client().execute_command("CLUSTER", "SLOTS"))
    assert ranges[0][0] == 0 and ranges[-1][1] == SLOTS - 1
    assert all(ranges[i][1] + 1 == ranges[i + 1][0] for i in range(len(ranges) - 1))
    checked = tool("check", f"127.0.0.1:{nodes[2].port}")
    assert checked.returncode == 0 and "[OK]" in checked.stdout, checked.stdout + checked.stderr
    lines = nodes[0].client(decode_responses=True).execute_command("CLUSTER", "NODES")
    lines = lines if isinstance(lines, str) else lines.decode()
    assert sum("myself,master" in line for line in lines.splitlines()) == 1
    assert len(lines.strip().splitlines()) == 3


@pytest.mark.parametrize("key,slot", [(b"somekey", 11058), (b"foo{hash_tag}", 2515),
                                      (b"{user1000}.following", 3443)])
def test_keyslot_matches_redis(nodes: list[HotkvProcess], key: bytes, slot: int) -> None:
    assert nodes[0].client().execute_command("CLUSTER", "KEYSLOT", key) == slot


def test_keyslot_matches_real_redis_cluster_node(nodes: list[HotkvProcess]) -> None:
    # the bus port (port + 10000 by default) could pass 65535: give it a free one
    reference = RedisServer("--cluster-enabled", "yes", "--cluster-port", str(free_port()))
    try:
        ref = redis.Redis(port=reference.port)
        ours = nodes[0].client()
        for key in [b"", b"a", b"{a}b", b"{tenant-a}:session-42", b"x{}{y}", b"\xff\x00{\x01}", b"}{ab}"]:
            assert ours.execute_command("CLUSTER", "KEYSLOT", key) == ref.execute_command("CLUSTER", "KEYSLOT", key), key
        for args in (["CLUSTER", "COUNTKEYSINSLOT", "16384"], ["CLUSTER", "GETKEYSINSLOT", "1", "-1"],
                     ["CLUSTER", "ADDSLOTS", "99999"], ["CLUSTER", "SETSLOT", "1", "FOO"]):
            with pytest.raises(redis.ResponseError) as theirs:
                ref.execute_command(*args)
            with pytest.raises(redis.ResponseError) as mine:
                ours.execute_command(*args)
            assert str(mine.value) == str(theirs.value), args
    finally:
        reference.stop()


def test_wrong_node_answers_moved_and_crossslot(nodes: list[HotkvProcess]) -> None:
    slot = 11058  # somekey
    owner = owner_of(nodes, slot)
    other = next(p for p in nodes if p is not owner)
    c = other.client(protocol=2)
    assert err(other, "GET", "somekey") == f"MOVED {slot} 127.0.0.1:{owner.port}"
    assert err(other, "AMEM.CONV.WINDOW", "somekey", "10") == f"MOVED {slot} 127.0.0.1:{owner.port}"
    o = owner.client(protocol=2)
    assert err(owner, "MSET", "somekey", "1", "otherkey", "2") == \
        "CROSSSLOT Keys in request don't hash to the same slot"
    assert o.execute_command("MSET", "{somekey}a", "1", "{somekey}b", "2") in (True, b"OK")
    assert o.delete("{somekey}a", "{somekey}b") == 2
    # keyless commands run wherever they are sent
    assert c.execute_command("PING") in (True, b"PONG")


def test_redis_py_cluster_client_routes_every_memory_type(nodes: list[HotkvProcess]) -> None:
    for protocol in (2, 3):
        rc = cluster_client(nodes, protocol)
        sessions = [f"{{tenant-{i}}}:session" for i in range(12)]
        for s in sessions:
            rc.execute_command("AMEM.CONV.CREATE", s, "WINDOW", "5")
            rc.execute_command("AMEM.CONV.APPEND", s, "user", f"hello from {s}")
            rc.execute_command("AMEM.WORK.SET", s, "ticket", s)
            rc.set(f"cache:{s}", s)
        served = {owner_of(nodes, rc.keyslot(s)).port for s in sessions}
        assert len(served) == 3  # the sessions really are spread over the three shards
        for s in sessions:
            window = rc.execute_command("AMEM.CONV.WINDOW", s, "10")
            assert f"hello from {s}" in json.dumps(window, default=str)
            assert rc.execute_command("AMEM.WORK.GET", s, "ticket") == s
            assert rc.get(f"cache:{s}") == s
        rc.execute_command("AMEM.SEM.CREATE", "kb-{x}", "3")
        rc.execute_command("AMEM.SEM.STORE", "kb-{x}", "f1", "a fact", "0.1", "0.2", "0.3")
        hits = rc.execute_command("AMEM.SEM.RECALL", "kb-{x}", "1", "0.1", "0.2", "0.3")
        assert "f1" in json.dumps(hits, default=str)
        rc.execute_command("AMEM.EPIS.LOG", "agent-{x}", "action", "did a thing")
        rc.execute_command("AMEM.SUMMARY.SET", "agent-{x}", "the story so far")
        # a pipeline spread over shards
        pipe = rc.pipeline()
        pipe._policy_resolver = DottedNames()  # redis-py 8.1's pipeline() does not pass it on
        for s in sessions:
            pipe.execute_command("AMEM.WORK.GET", s, "ticket")
        assert pipe.execute() == sessions
        rc.close()
        for p in nodes:
            p.client().flushall()


def test_redis_cli_follows_redirects(nodes: list[HotkvProcess]) -> None:
    for i, node in enumerate(nodes):
        key = f"cli-key-{i}"
        out = subprocess.run(["redis-cli", "-c", "-p", str(node.port), "SET", key, f"v{i}"],
                             capture_output=True, text=True, timeout=20)
        assert out.stdout.strip() == "OK", out
        got = subprocess.run(["redis-cli", "-c", "-p", str(nodes[(i + 1) % 3].port), "GET", key],
                             capture_output=True, text=True, timeout=20)
        assert got.stdout.strip() == f"v{i}"
        conv = subprocess.run(["redis-cli", "-c", "-p", str(nodes[(i + 2) % 3].port),
                               "AMEM.CONV.APPEND", f"cli-session-{i}", "user", "hi"],
                              capture_output=True, text=True, timeout=20)
        assert "MOVED" not in conv.stdout and "ERR" not in conv.stdout, conv.stdout


def test_ask_while_a_slot_migrates(nodes: list[HotkvProcess]) -> None:
    slot = 2515  # foo{hash_tag}
    source = owner_of(nodes, slot)
    target = next(p for p in nodes if p is not source)
    src, dst = source.client(protocol=2), target.client(protocol=2)
    src_id = src.execute_command("CLUSTER", "MYID").decode()
    dst_id = dst.execute_command("CLUSTER", "MYID").decode()
    src.set("foo{hash_tag}", "here")
    assert dst.execute_command("CLUSTER", "SETSLOT", slot, "IMPORTING", src_id) in (True, b"OK")
    assert src.execute_command("CLUSTER", "SETSLOT", slot, "MIGRATING", dst_id) in (True, b"OK")
    try:
        assert src.get("foo{hash_tag}") == b"here"  # still here: served by the source
        # not here: ask the target
        assert err(source, "GET", "bar{hash_tag}") == f"ASK {slot} 127.0.0.1:{target.port}"
        assert err(source, "MGET", "foo{hash_tag}", "bar{hash_tag}") == \
            "TRYAGAIN Multiple keys request during rehashing of slot"
        # without ASKING the target redirects back to the owner
        assert err(target, "GET", "bar{hash_tag}") == f"MOVED {slot} 127.0.0.1:{source.port}"
        pipe = dst.pipeline(transaction=False)
        pipe.execute_command("ASKING")
        pipe.set("bar{hash_tag}", "there")
        pipe.get("bar{hash_tag}")  # ASKING covered one command only
        replies = pipe.execute(raise_on_error=False)
        assert replies[1] in (True, b"OK")
        assert isinstance(replies[2], redis.exceptions.MovedError)
        assert str(replies[2]) == f"{slot} 127.0.0.1:{source.port}"
        nodes_text = src.execute_command("CLUSTER", "NODES").decode()
        assert f"[{slot}->-{dst_id}]" in nodes_text
    finally:
        src.execute_command("CLUSTER", "SETSLOT", slot, "STABLE")
        dst.execute_command("CLUSTER", "SETSLOT", slot, "STABLE")
        src.delete("foo{hash_tag}")
        pipe = dst.pipeline(transaction=False)
        pipe.execute_command("ASKING")
        pipe.delete("bar{hash_tag}")


def test_topology_survives_a_restart(nodes: list[HotkvProcess]) -> None:
    node = nodes[1]
    before = node.client().execute_command("CLUSTER", "MYID")
    slots_before = node.client().execute_command("CLUSTER", "SLOTS")
    node.restart()
    c = node.client()
    assert c.execute_command("CLUSTER", "MYID") == before
    assert c.execute_command("CLUSTER", "SLOTS") == slots_before


def test_unassigned_slots_answer_clusterdown() -> None:
    from binascii import crc_hqx

    lone = HotkvProcess("--cluster-enabled", "yes").start()
    try:
        c = lone.client(protocol=2)
        assert err(lone, "GET", "k") == "CLUSTERDOWN Hash slot not served"
        assert c.execute_command("CLUSTER", "ADDSLOTSRANGE", "0", "100") in (True, b"OK")
        inside = next(f"k{i}" for i in range(100000) if crc_hqx(f"k{i}".encode(), 0) % SLOTS <= 100)
        # the slot is ours, but the cluster does not cover every slot
        assert err(lone, "GET", inside) == "CLUSTERDOWN The cluster is down"
        assert c.config_set("cluster-require-full-coverage", "no")
        assert c.get(inside) is None
        assert err(lone, "GET", "k") == "CLUSTERDOWN Hash slot not served"
        assert err(lone, "CLUSTER", "ADDSLOTS", "5") == "ERR Slot 5 is already busy"
    finally:
        lone.cleanup()


def test_cluster_commands_without_cluster_mode(server: HotkvProcess) -> None:
    c = server.client(protocol=2)
    for args in (["CLUSTER", "INFO"], ["CLUSTER", "SLOTS"], ["ASKING"], ["READONLY"]):
        assert err(server, *args) == "ERR This instance has cluster support disabled"
    assert c.info("cluster")["cluster_enabled"] == 0


def test_replica_serves_reads_after_readonly(nodes: list[HotkvProcess]) -> None:
    replica = HotkvProcess("--cluster-enabled", "yes").start()
    try:
        primary = nodes[0]
        primary_id = primary.client().execute_command("CLUSTER", "MYID").decode()
        added = tool("add-node", f"127.0.0.1:{replica.port}", f"127.0.0.1:{primary.port}",
                     "--replica-of", primary_id)
        assert added.returncode == 0, added.stderr
        first, last = next((a, b) for a, b, p, *_ in primary.client().execute_command("CLUSTER", "SLOTS")
                           if p[1] == primary.port)
        key = next(f"r{i}" for i in range(100000)
                   if first <= primary.client().execute_command("CLUSTER", "KEYSLOT", f"r{i}") <= last)
        primary.client().set(key, "replicated")
        c = replica.client(protocol=2)
        deadline = time.monotonic() + 10
        slot = primary.client().execute_command("CLUSTER", "KEYSLOT", key)
        assert err(replica, "GET", key) == f"MOVED {slot} 127.0.0.1:{primary.port}"
        assert c.execute_command("READONLY") in (True, b"OK")
        while c.get(key) != b"replicated":
            assert time.monotonic() < deadline, "the replica never caught up"
            time.sleep(0.05)
        with pytest.raises(redis.exceptions.MovedError):
            c.set(key, "no writes on a replica")
        slots = primary.client().execute_command("CLUSTER", "SLOTS")
        mine = next(entry for entry in slots if entry[2][1] == primary.port)
        assert [e[1] for e in mine[3:]] == [replica.port]
    finally:
        replica.cleanup()


def test_official_cluster_client_routes_agent_memory(nodes: list[HotkvProcess]) -> None:
    """The HotKV product's own ClusterHotKV (hotkv-client 1.0.0) across the three shards."""
    import hotkv

    for resp3 in (True, False):
        client = hotkv.ClusterHotKV([("127.0.0.1", nodes[0].port)], resp3=resp3, decode_responses=True)
        try:
            sessions = [f"agent-session-{i}" for i in range(12)]
            for s in sessions:
                client.set(f"k:{s}", s)
                client.execute_command("AMEM.CONV.CREATE", s, "WINDOW", "10")
                client.execute_command("AMEM.CONV.APPEND", s, "user", f"hi {s}")
                client.execute_command("AMEM.WORK.SET", s, "step", "one")
            assert len({owner_of(nodes, key_slot(s.encode())).port for s in sessions}) == 3
            for s in sessions:
                assert client.get(f"k:{s}") == s
                assert client.execute_command("AMEM.WORK.GET", s, "step") == "one"
                assert f"hi {s}" in json.dumps(client.execute_command("AMEM.CONV.WINDOW", s, 5), default=str)
        finally:
            client.close()
            for p in nodes:
                p.client().flushall()


def key_slot(key: bytes) -> int:
    from binascii import crc_hqx

    return crc_hqx(key, 0) % SLOTS
