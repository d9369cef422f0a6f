"""AMEM.WORK scratchpads in both inner forms (packed up to 1 KB, then a dict) survive the AOF,
a rewrite and a snapshot with their notes, order, binary bytes and TTLs, on a real server."""

from __future__ import annotations

from typing import Any

import redis

from helpers import HotkvProcess
from persistence.pdata import wait_rewrite_done

# the packed form's separators and escape byte inside keys and values
BINARY_KEY = b"k\x00\x01\x02end"
BINARY_VALUE = b"\x02\x03\x00\x01\x02\x05"


def write(r: redis.Redis) -> None:
    ex = r.execute_command
    # small: stays packed (with a binary note and a TTL'd one)
    ex("AMEM.WORK.SET", "small", "b", "2")
    ex("AMEM.WORK.SET", "small", BINARY_KEY, BINARY_VALUE)
    ex("AMEM.WORK.SET", "small", "a", "1", "TTL", 3600)
    ex("AMEM.WORK.SET", "small", "b", "3")  # in place: b stays first
    ex("AMEM.WORK.SET", "small", "n", "5", "MERGE", "INCR")
    # large: 30 notes of 40 B pass 1 KB, so it moves to a dict mid-way
    for i in range(30):
        ex("AMEM.WORK.SET", "large", f"note:{i:02d}", "x" * 40, *(["TTL", 7200] if i % 3 == 0 else []))
    ex("AMEM.WORK.SET", "large", "note:04", BINARY_VALUE)
    ex("AMEM.WORK.DEL", "large", "note:07", "note:29")
    ex("AMEM.WORK.SET", "large", "log", '"a"', "MERGE", "APPEND")
    ex("AMEM.WORK.EXPIRE", "large", 9000)


def state(r: redis.Redis) -> dict[str, Any]:
    ex = r.execute_command
    out: dict[str, Any] = {}
    for session in ("small", "large"):
        keys = ex("AMEM.WORK.LIST", session)
        flat = ex("AMEM.WORK.GETALL", session)  # RESP2: a flat list, in the pad's order
        # whole minutes left, counted from a millisecond before the deadline (so a TTL read
        # in the same millisecond as its EXPIRE reads as one a millisecond later); -1 stays
        ttls = [(ex("AMEM.WORK.TTL", session, k) - 1) // 60_000 for k in keys]
        out[session] = (keys, flat, ttls, ex("AMEM.WORK.LEN", session))
    return out


def test_both_forms_survive_aof_rewrite_and_save(data_dir: str, procs: list[HotkvProcess]) -> None:
    proc = HotkvProcess("--appendonly", "yes", dir=data_dir)
    procs.append(proc)
    proc.start()
    r = proc.client(protocol=2)
    write(r)
    before = state(r)
    small_keys, small_flat, small_ttls, _ = before["small"]
    assert small_keys == [b"b", BINARY_KEY, b"a", b"n"]
    assert small_flat == [b"b", b"3", BINARY_KEY, BINARY_VALUE, b"a", b"1", b"n", b"5"]
    assert small_ttls == [-1, -1, 59, -1]
    large_keys, _, large_ttls, large_len = before["large"]
    assert large_keys == [f"note:{i:02d}".encode() for i in range(29) if i != 7] + [b"log"]
    assert large_len == 29
    assert large_ttls[:4] == [119, 149, 149, 119]  # its own 2 h, else the session's 2.5 h
    assert r.execute_command("AMEM.WORK.GET", "large", "note:04") == BINARY_VALUE

    proc.kill()  # from the AOF's records
    proc.start()
    r = proc.client(protocol=2)
    assert state(r) == before

    assert r.bgrewriteaof()
    wait_rewrite_done(r)
    proc.kill()  # from the rewritten base
    proc.start()
    r = proc.client(protocol=2)
    assert state(r) == before

    assert r.save() is True
    proc.kill()  # from the snapshot
    proc.start()
    r = proc.client(protocol=2)
    assert state(r) == before
    # and both forms go on working after the load
    r.execute_command("AMEM.WORK.SET", "small", BINARY_KEY, "new")
    r.execute_command("AMEM.WORK.SET", "large", "note:00", "y")
    assert r.execute_command("AMEM.WORK.LIST", "small") == small_keys
    assert r.execute_command("AMEM.WORK.GET", "large", "note:00") == b"y"
