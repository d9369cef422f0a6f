"""A primary and two replicas: every store's writes reach both, by snapshot and by stream.

The state is compared through the commands (``persistence.pdata.dump``: SCAN/GET/PTTL for
the string cache, AMEM.SCAN plus each store's read commands), in RESP2 and RESP3.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import pytest
import redis

from helpers import HotkvProcess, free_port, raw_roundtrip, record, resp_request
from hotkv_server.persistence.framing import unpack
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

Trio = tuple[HotkvProcess, HotkvProcess, HotkvProcess]


@pytest.fixture(scope="module")
def trio() -> Iterator[Trio]:
    primary = HotkvProcess().start()
    try:
        with servers(replica_of(primary), replica_of(primary)) as (a, b):
            yield primary, a, b
    finally:
        primary.cleanup()


@pytest.fixture
def clean(trio: Trio) -> Trio:
    primary, a, b = trio
    pc = primary.client()
    pc.flushall()
    wait_synced(pc, a.client(), b.client())
    return trio


def test_stream_carries_every_store(clean: Trio) -> None:
    primary, a, b = clean
    pc = primary.client(protocol=3)
    populate(pc, seed=3, rounds=40)
    assert pc.execute_command("WAIT", 2, 10000) == 2
    expected = state_of(pc)
    assert expected["conv"] and expected["sem"] and expected["work"] and expected["epis"]
    # hashes and sets too, SPOP's random picks included
    assert {"string", "hash", "set"} <= {entry[0] for entry in expected["kv"].values()}
    assert_same_state(expected, state_of(a.client(protocol=2)))
    assert_same_state(expected, state_of(b.client(protocol=3)))


def test_a_new_replica_gets_a_snapshot_then_the_stream(clean: Trio) -> None:
    primary, _, _ = clean
    pc = primary.client()
    populate(pc, seed=5, rounds=30)
    full_before = sync_counters(pc)[0]
    with servers(replica_of(primary)) as (late,):
        lc = late.client(protocol=2)
        wait_synced(pc, lc)
        assert sync_counters(pc)[0] == full_before + 1
        assert_same_state(state_of(pc), state_of(lc))
        # the semantic index came over in hnswlib's own format and keeps working
        pc.execute_command("AMEM.SEM.STORE", "kb", "after", "stored after the sync", *["0.5"] * 8)
        wait_synced(pc, lc)
        fact = record(lc.execute_command("AMEM.SEM.GET", "kb", "after"))
        assert fact[b"text"] == b"stored after the sync"
        assert_same_state(state_of(pc), state_of(lc))


def test_exec_arrives_whole(clean: Trio) -> None:
    primary, a, b = clean
    pc = primary.client()
    with pc.pipeline(transaction=True) as tx:
        tx.set("tx:a", "1")
        tx.execute_command("AMEM.WORK.SET", "s", "k", "v")
        tx.execute_command("AMEM.EPIS.LOG", "agent", "decision", "both or neither")
        tx.execute()
    assert pc.execute_command("WAIT", 2, 5000) == 2
    for replica in (a, b):
        rc = replica.client()
        assert rc.get("tx:a") == b"1"
        assert rc.execute_command("AMEM.WORK.GET", "s", "k") == b"v"
        assert rc.execute_command("AMEM.EPIS.LEN", "agent") == 1


def test_chained_replica_shares_history_and_offsets(clean: Trio) -> None:
    primary, a, _ = clean
    pc = primary.client()
    with servers(replica_of(a)) as (chained,):
        cc = chained.client()
        pc.set("chain", "1")
        pc.execute_command("AMEM.SUMMARY.SET", "agent", "through two hops")
        wait_synced(pc, a.client(), cc)
        assert cc.get("chain") == b"1"
        assert record(cc.execute_command("AMEM.SUMMARY.GET", "agent", "RECORD"))[b"text"] == b"through two hops"
        fields = info(cc, "replication")
        assert fields["master_port"] == a.port
        assert fields["master_replid"] == info(pc, "replication")["master_replid"]
        # the GETACK that wait_synced's WAIT sent (and a PING every 10 s) reach the second
        # hop a moment after the first: the offsets meet once the stream has passed
        wait_until(lambda: offset(cc) == offset(pc), 10, what="the chained replica at the primary's offset")
        assert int(info(a.client(), "replication")["connected_slaves"]) == 1
        assert_same_state(state_of(pc), state_of(cc))


@pytest.mark.parametrize("protocol", [2, 3])
def test_writes_to_a_replica_are_refused(clean: Trio, protocol: int) -> None:
    _, a, _ = clean
    rc = a.client(protocol=protocol)
    for cmd in (["SET", "k", "v"], ["AMEM.CONV.CREATE", "s"], ["AMEM.SEM.CREATE", "ns", 4],
                ["AMEM.WORK.SET", "s", "k", "v"], ["AMEM.EPIS.LOG", "a", "t", "x"],
                ["AMEM.SUMMARY.SET", "a", "x"], ["FLUSHALL"]):
        with pytest.raises(redis.ReadOnlyError) as exc:
            rc.execute_command(*cmd)
        assert str(exc.value) == "You can't write against a read only replica."
    assert rc.get("k") is None  # reads are served


def test_readonly_error_bytes(clean: Trio) -> None:
    _, a, _ = clean
    with socket.create_connection(("127.0.0.1", a.port), timeout=5) as sock:
        sock.sendall(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\nGET k\r\n")
        data = b""
        while data.count(b"\r\n") < 2:
            data += sock.recv(4096)
    assert data == b"-READONLY You can't write against a read only replica.\r\n$-1\r\n"


@pytest.mark.parametrize("protocol", [2, 3])
def test_role(clean: Trio, protocol: int) -> None:
    primary, a, b = clean
    pc = primary.client(protocol=protocol)
    pc.set("role", "x")
    assert pc.execute_command("WAIT", 2, 5000) == 2
    # WAIT answers once both acknowledged the write; the REPLCONF GETACK it sent moves the
    # offset on, and the acknowledgements of it arrive a moment later
    box: dict[str, Any] = {}

    def acked() -> bool:
        box["role"] = pc.execute_command("ROLE")
        _kind, at, peers = box["role"]
        return all(p[2] == str(at).encode() for p in peers) and len(peers) == 2

    wait_until(acked, 10, what="both replicas acknowledged the whole stream")
    kind, master_offset, replicas = box["role"]
    assert kind == b"master" and master_offset == offset(pc)
    assert sorted(replicas) == sorted([[b"127.0.0.1", str(p.port).encode(), str(master_offset).encode()]
                                       for p in (a, b)])
    reply = a.client(protocol=protocol).execute_command("ROLE")
    assert reply[:4] == [b"slave", b"127.0.0.1", primary.port, b"connected"]
    # the replica has processed at least what it acknowledged; a PING of the primary (every
    # 10 s) may have moved both on since, never the replica past the primary
    assert master_offset <= reply[4] <= offset(pc)


def test_info_replication_fields(clean: Trio) -> None:
    primary, a, b = clean
    pc = primary.client()
    pc.set("info", "x")
    assert pc.execute_command("WAIT", 2, 5000) == 2
    fields = info(pc, "replication")
    assert fields["role"] == "master" and fields["connected_slaves"] == 2
    ports = sorted(fields[f"slave{i}"]["port"] for i in range(2))
    assert ports == sorted([a.port, b.port])
    assert fields["slave0"]["state"] == "online" and fields["slave0"]["offset"] == fields["master_repl_offset"]
    assert fields["repl_backlog_active"] == 1 and fields["repl_backlog_size"] == 1024 * 1024
    assert len(str(fields["master_replid"])) == 40
    replica = info(a.client(), "replication")
    assert replica["role"] == "slave"
    assert (replica["master_host"], replica["master_port"]) == ("127.0.0.1", primary.port)
    assert replica["master_link_status"] == "up" and replica["master_sync_in_progress"] == 0
    assert replica["master_last_io_seconds_ago"] in (0, 1, 2)
    assert replica["slave_repl_offset"] == replica["master_repl_offset"] == fields["master_repl_offset"]
    assert replica["master_replid"] == fields["master_replid"]
    assert replica["slave_read_only"] == 1
    stats = info(pc, "stats")
    assert {"sync_full", "sync_partial_ok", "sync_partial_err", "total_net_repl_output_bytes"} <= stats.keys()
    assert sync_counters(pc)[0] >= 2 and stats["total_net_repl_output_bytes"] > 0
    # CONFIG RESETSTAT zeroes the replication counters too, as in Redis
    assert pc.config_resetstat()
    stats = info(pc, "stats")
    assert sync_counters(pc) == (0, 0, 0) and stats["total_net_repl_output_bytes"] == 0
    assert "master_host" not in fields
    # HELLO 3 reports the role too
    assert a.client(protocol=3).execute_command("HELLO", 3)[b"role"] == b"replica"


def test_replicaof_answers(clean: Trio) -> None:
    primary, a, _ = clean
    rc = a.client()
    assert rc.execute_command("REPLICAOF", "127.0.0.1", primary.port) == b"OK Already connected to specified master"
    for port in ("abc", "70000", "-1"):
        with pytest.raises(redis.ResponseError, match=r"^Invalid master port$"):
            rc.execute_command("REPLICAOF", "127.0.0.1", port)
    with pytest.raises(redis.ResponseError, match="WAIT cannot be used with replica instances"):
        rc.execute_command("WAIT", 1, 0)
    assert record(rc.execute_command("CONFIG", "GET", "replicaof")) == {
        b"replicaof": f"127.0.0.1 {primary.port}".encode()
    }
    pc = primary.client()
    assert pc.execute_command("REPLICAOF", "NO", "ONE") == b"OK"  # already a primary: nothing changes
    assert pc.execute_command("ROLE")[0] == b"master"
    with pytest.raises(redis.ResponseError, match=r"^Unrecognized REPLCONF option: foo$"):
        pc.execute_command("REPLCONF", "foo", "bar")
    with pytest.raises(redis.ResponseError, match=r"^syntax error$"):
        pc.execute_command("REPLCONF", "foo")
    assert pc.execute_command("REPLCONF", "listening-port", "1234", "capa", "psync2") == b"OK"
    with pytest.raises(redis.ResponseError, match=r"^value is not an integer or out of range$"):
        pc.execute_command("REPLCONF", "listening-port", "x")


def test_slaveof_alias_and_promotion_round_trip() -> None:
    with servers(HotkvProcess()) as (primary,):
        pc = primary.client()
        pc.set("k", "v")
        with servers(HotkvProcess()) as (other,):
            oc = other.client()
            assert oc.execute_command("SLAVEOF", "127.0.0.1", primary.port) in (True, b"OK")  # redis-py: bool
            wait_until(lambda: oc.get("k") == b"v", what="copy through SLAVEOF")
            assert oc.execute_command("ROLE")[0] == b"slave"
            assert oc.execute_command("SLAVEOF", "NO", "ONE") in (True, b"OK")
            assert oc.execute_command("ROLE")[0] == b"master"
            oc.set("own", "write")  # a primary again: writes are accepted
            fields = info(oc, "replication")
            assert fields["master_replid2"] == info(pc, "replication")["master_replid"]
            assert fields["second_repl_offset"] == offset(pc) + 1


def test_old_sync_sends_the_snapshot_without_a_fullresync_line() -> None:
    """SYNC (before PSYNC existed): ``$<len>`` and the snapshot at once, then the stream."""
    with servers(HotkvProcess()) as (primary,):
        primary.client().set("before-sync", "v1")
        snapshot = raw_roundtrip(primary.port, b"SYNC\r\n", wait=1.0)
        head, _, body = snapshot.partition(b"\r\n")
        assert head.startswith(b"$") and len(body) == int(head[1:])
        assert isinstance(unpack(body), dict) and b"before-sync" in body


def test_psync_on_a_replica_without_its_primary_is_refused() -> None:
    with servers(HotkvProcess("--replicaof", "127.0.0.1", str(free_port()))) as (replica,):
        reply = raw_roundtrip(replica.port, resp_request("PSYNC", "?", "-1"))
        assert reply == b"-NOMASTERLINK Can't SYNC while not connected with my master\r\n"
