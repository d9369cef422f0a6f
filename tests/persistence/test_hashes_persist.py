"""Hashes across a restart: from the AOF alone, from a rewritten base snapshot plus the AOF
after it, and on a replica, each hash keeps its fields in order (a packed hash's
insertion order), its binary fields and values (the packed form's 0x00-0x02 markers
escaped), and its OBJECT ENCODING: replayed from the AOF as it was, decided again from the
contents when loaded from a base snapshot, as Redis's RDB load does (a hashtable whose
fields fit comes back a listpack).
"""

from __future__ import annotations

import os
from typing import Any

import redis

from helpers import HotkvProcess
from persistence.pdata import wait_rewrite_done

MARKED = [b"\x00", b"\x01", b"\x02", b"\x02\x03", b"a\x01b\x00c", b""]


def write_hashes(r: redis.Redis) -> None:
    r.hset("small", mapping={b"c": b"3", b"a": b"1", b"b": b"2"})
    r.hset("small", b"a", b"one")  # keeps its place
    r.hset("binary", mapping={m: b"v" + m for m in MARKED})
    r.hdel("binary", b"\x02")
    r.hset("wide", mapping={f"w{i:02d}": f"{i:02d}" * 30 for i in range(20)})  # past 1 KB
    r.hset("was-big", mapping={"f": "x" * 100, "g": "1"})
    r.hdel("was-big", "f")  # a hashtable of one small field: a listpack after a load
    r.hincrby("small", "n", 5)
    r.hincrbyfloat("small", "avg", 0.5)


def state(r: redis.Redis) -> dict[str, Any]:
    return {key: (r.execute_command("HGETALL", key), r.object("encoding", key))
            for key in ("small", "binary", "wide", "was-big")}


def items(reply: Any) -> list[tuple[bytes, bytes]]:
    """HGETALL's pairs in order, whichever protocol (a dict in RESP3, a flat list in RESP2)."""
    if isinstance(reply, dict):
        return list(reply.items())
    return list(zip(reply[::2], reply[1::2], strict=True))


def test_hashes_come_back_in_order_with_their_bytes(data_dir: str, procs: list[HotkvProcess]) -> None:
    proc = HotkvProcess("--appendonly", "yes", dir=data_dir)
    procs.append(proc)
    proc.start()
    r = proc.client()
    write_hashes(r)
    before = state(r)
    assert items(before["small"][0]) == [(b"c", b"3"), (b"a", b"one"), (b"b", b"2"), (b"n", b"5"),
                                         (b"avg", b"0.5")]
    assert items(before["binary"][0]) == [(m, b"v" + m) for m in MARKED if m != b"\x02"]
    assert before["was-big"][1] in (b"hashtable", "hashtable")

    proc.restart()  # the AOF alone
    r = proc.client()
    after = state(r)
    assert {k: items(v[0]) for k, v in after.items()} == {k: items(v[0]) for k, v in before.items()}
    # the AOF replays the writes: a hashtable again, as Redis replaying its AOF
    assert {k: v[1] for k, v in after.items()} == {k: v[1] for k, v in before.items()}
    assert after["wide"][1] in (b"listpack", "listpack")

    r.bgrewriteaof()
    wait_rewrite_done(r)
    r.hset("binary", b"\x01", b"\x00\x00")  # after the base: in the new AOF
    expected = state(r)
    proc.restart()  # the base snapshot, then the AOF after it
    again = state(proc.client())
    assert {k: items(v[0]) for k, v in again.items()} == {k: items(v[0]) for k, v in expected.items()}
    # loaded from the base: decided again from the contents, as Redis's RDB load does
    assert again["was-big"][1] in (b"listpack", "listpack")
    assert {k: v[1] for k, v in again.items() if k != "was-big"} == {
        k: v[1] for k, v in expected.items() if k != "was-big"}


def test_a_replica_holds_the_same_hashes_in_the_same_order(data_dir: str, procs: list[HotkvProcess]) -> None:
    os.makedirs(data_dir + "/p")
    os.makedirs(data_dir + "/r")
    primary = HotkvProcess(dir=data_dir + "/p")
    procs.append(primary)
    primary.start()
    write_hashes(primary.client())
    replica = HotkvProcess("--replicaof", "127.0.0.1", str(primary.port), dir=data_dir + "/r")
    procs.append(replica)
    replica.start()
    p = primary.client()
    p.hset("binary", b"late\x00", b"\x02")  # streamed after the full sync
    assert p.execute_command("WAIT", 1, 10_000) == 1
    want = state(p)
    got = state(replica.client())
    assert {k: items(v[0]) for k, v in got.items()} == {k: items(v[0]) for k, v in want.items()}
