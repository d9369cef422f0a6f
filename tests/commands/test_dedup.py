"""EMBED.DEDUP.*: the wire form hotkv-client 1.0.0's embed_dedup_* methods use, end to end,
references freed at zero, persistence through effects, ACL-confined LIST."""

from __future__ import annotations

import numpy as np
import pytest
import redis

from helpers import HotkvProcess, record

EMB = np.arange(8, dtype="<f4").tobytes()


def test_put_get_release_references(r: redis.Redis) -> None:
    assert r.execute_command("EMBED.DEDUP.PUT", "docs", "h1", "text-embed-3", EMB) == 1
    assert r.execute_command("EMBED.DEDUP.PUT", "docs", "h1", "text-embed-3", b"other") == 0
    assert r.execute_command("EMBED.DEDUP.GET", "docs", "h1") == EMB  # the first one stays
    assert r.execute_command("EMBED.DEDUP.GET", "docs", "nope") is None
    stats = record(r.execute_command("EMBED.DEDUP.STATS", "docs"))
    assert stats[b"hits"] == 1 and stats[b"misses"] == 1 and stats[b"entries"] == 1
    assert stats[b"references"] == 2
    assert r.execute_command("EMBED.DEDUP.RELEASE", "docs", "h1") == 1
    assert r.execute_command("EMBED.DEDUP.GET", "docs", "h1") == EMB  # one reference left
    assert r.execute_command("EMBED.DEDUP.RELEASE", "docs", "h1") == 1
    assert r.execute_command("EMBED.DEDUP.GET", "docs", "h1") is None  # freed at zero
    assert r.execute_command("EMBED.DEDUP.RELEASE", "docs", "h1") == 0
    assert record(r.execute_command("EMBED.DEDUP.STATS", "docs"))[b"entries"] == 0


def test_list_purge_drop(r: redis.Redis) -> None:
    for ns in ("b", "a", "c"):
        r.execute_command("EMBED.DEDUP.PUT", ns, "h", "m", EMB)
    assert r.execute_command("EMBED.DEDUP.LIST") == [b"a", b"b", b"c"]
    r.execute_command("EMBED.DEDUP.GET", "a", "h")
    assert r.execute_command("EMBED.DEDUP.PURGE", "a") == 1
    # nothing expires and the last RELEASE frees an entry: purge leaves live ones alone
    assert r.execute_command("EMBED.DEDUP.GET", "a", "h") == EMB
    stats = record(r.execute_command("EMBED.DEDUP.STATS", "a"))
    assert stats[b"entries"] == 1 and stats[b"hits"] == 2
    assert r.execute_command("EMBED.DEDUP.DROP", "a") == 1
    assert r.execute_command("EMBED.DEDUP.DROP", "a") == 0
    assert r.execute_command("EMBED.DEDUP.PURGE", "zz") == 0
    assert r.execute_command("EMBED.DEDUP.LIST") == [b"b", b"c"]
    assert record(r.execute_command("EMBED.DEDUP.STATS", "zz")) == {
        b"hits": 0, b"misses": 0, b"entries": 0, b"references": 0, b"bytes": 0}


def test_bad_input(r: redis.Redis) -> None:
    with pytest.raises(redis.ResponseError, match="wrong number of arguments"):
        r.execute_command("EMBED.DEDUP.PUT", "ns", "h", "m")
    with pytest.raises(redis.ResponseError, match="embedding"):
        r.execute_command("EMBED.DEDUP.PUT", "ns", "h", "m", "")
    with pytest.raises(redis.ResponseError, match="hash"):
        r.execute_command("EMBED.DEDUP.GET", "ns", "")
    assert r.execute_command("EMBED.DEDUP.LIST") == []
    assert r.ping()


def test_info_amem_has_dedup_fields(r: redis.Redis) -> None:
    r.execute_command("EMBED.DEDUP.PUT", "ns", "h", "m", EMB)
    r.execute_command("EMBED.DEDUP.GET", "ns", "h")
    info = r.info("amem")
    assert info["dedup_objects"] == 1 and info["dedup_entries"] == 1 and info["dedup_hits"] >= 1


def test_persisted_through_effects() -> None:
    proc = HotkvProcess("--appendonly", "yes").start()
    try:
        c = proc.client()
        c.execute_command("EMBED.DEDUP.PUT", "ns", "h1", "m", EMB)
        c.execute_command("EMBED.DEDUP.PUT", "ns", "h1", "m", EMB)
        c.execute_command("EMBED.DEDUP.PUT", "ns", "h2", "m", b"\x00\x01")
        c.execute_command("EMBED.DEDUP.RELEASE", "ns", "h2")
        proc.restart()  # AOF replay
        c = proc.client()
        assert c.execute_command("EMBED.DEDUP.GET", "ns", "h1") == EMB
        assert c.execute_command("EMBED.DEDUP.GET", "ns", "h2") is None
        assert record(c.execute_command("EMBED.DEDUP.STATS", "ns"))[b"references"] == 2
        c.execute_command("BGREWRITEAOF")  # a snapshot of the store, then replay it
        for _ in range(100):
            if c.info("persistence")["aof_rewrite_in_progress"] == 0:
                break
            import time
            time.sleep(0.05)
        proc.restart()
        c = proc.client()
        assert c.execute_command("EMBED.DEDUP.GET", "ns", "h1") == EMB
        assert record(c.execute_command("EMBED.DEDUP.STATS", "ns"))[b"references"] == 2
    finally:
        proc.cleanup()


def test_acl_confined_user_lists_only_its_namespaces(r: redis.Redis) -> None:
    r.execute_command("EMBED.DEDUP.PUT", "tenant1:docs", "h", "m", EMB)
    r.execute_command("EMBED.DEDUP.PUT", "tenant2:docs", "h", "m", EMB)
    r.execute_command("ACL", "SETUSER", "t1", "on", ">pw", "~tenant1:*", "+@all")
    try:
        t1 = redis.Redis(port=r.connection_pool.connection_kwargs["port"], username="t1",
                         password="pw")
        assert t1.execute_command("EMBED.DEDUP.LIST") == [b"tenant1:docs"]
        assert t1.execute_command("EMBED.DEDUP.GET", "tenant1:docs", "h") == EMB
        with pytest.raises(redis.exceptions.NoPermissionError):
            t1.execute_command("EMBED.DEDUP.GET", "tenant2:docs", "h")
        t1.close()
    finally:
        r.execute_command("ACL", "DELUSER", "t1")
