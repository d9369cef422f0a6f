"""Expiry across restarts: what expired while the server was down never comes back.

Deadlines are absolute in every record and in the base, so a restart (replay or base),
and a rewrite after it, agree with the clock: 1-second entries written before a stop and
loaded after their deadline are gone from every command, and an entry that has not expired yet
keeps its original deadline.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
import redis

from helpers import HotkvProcess, record, records
from persistence.pdata import DIM, fp32, wait_rewrite_done

SHORT = ["kv:ex", "kv:px", "kv:expire", "kv:tx"]


def ex(r: redis.Redis, *args: Any) -> Any:
    return r.execute_command(*args)


def write(r: redis.Redis) -> dict[str, Any]:
    """1-second entries in every store that has TTLs, beside lasting ones; their deadlines
    (and ``"short-gone"``: a monotonic time by which every 1-second entry has expired)."""
    r.set("kv:ex", "x", ex=1)
    r.set("kv:px", "x", px=1000)
    r.set("kv:expire", "x")
    r.expire("kv:expire", 1)
    t = r.pipeline(transaction=True)
    t.set("kv:tx", "x", ex=1)
    t.set("kv:keep", "forever")
    t.execute()
    r.set("kv:long", "x", ex=3600)
    ex(r, "AMEM.CONV.CREATE", "conv:short", "TTL", 1)
    ex(r, "AMEM.CONV.APPEND", "conv:short", "user", "soon gone")
    ex(r, "AMEM.CONV.CREATE", "conv:keep")
    ex(r, "AMEM.CONV.APPEND", "conv:keep", "user", "stays")
    ex(r, "AMEM.WORK.SET", "work:mixed", "short", "v", "TTL", 1)
    ex(r, "AMEM.WORK.SET", "work:mixed", "keep", "v")
    ex(r, "AMEM.WORK.SET", "work:mixed", "long", "v", "TTL", 3600)
    ex(r, "AMEM.WORK.SET", "work:pad", "a", "1")
    ex(r, "AMEM.WORK.SET", "work:pad", "b", "2")
    ex(r, "AMEM.WORK.EXPIRE", "work:pad", 1)
    ex(r, "AMEM.SEM.CREATE", "kb", DIM)
    ex(r, "AMEM.SEM.STORE", "kb", "short", "gone soon", "FP32", fp32([1] * DIM), "TTL", 1)
    ex(r, "AMEM.SEM.STORE", "kb", "keep", "stays", "FP32", fp32([1] * (DIM - 1) + [0.9]))
    ex(r, "AMEM.SEM.STORE", "kb", "long", "an hour", "FP32", fp32([0.9] + [1] * (DIM - 1)),
       "TTL", 3600)
    return {
        "sem-long": record(ex(r, "AMEM.SEM.GET", "kb", "long"))[b"expires"],
        "kv-long": int(time.time() * 1000) + r.pttl("kv:long"),
        "work-long": int(time.time() * 1000) + ex(r, "AMEM.WORK.TTL", "work:mixed", "long"),
        "short-gone": time.monotonic() + 1.0 + DOWN_MARGIN_S,
    }


#: how long past the last 1-second deadline the server stays down
DOWN_MARGIN_S = 0.3


def stay_down_until_expired(deadlines: dict[str, Any]) -> None:
    """The server is stopped: wait until every 1-second entry's deadline has passed (what
    expired while down), however long the stop took."""
    time.sleep(max(0.0, deadlines["short-gone"] - time.monotonic()))


def assert_expired_gone(r: redis.Redis) -> None:
    for key in SHORT:
        assert r.get(key) is None
        assert r.exists(key) == 0
        assert r.pttl(key) == -2
    assert sorted(r.keys("*")) == [b"kv:keep", b"kv:long"]
    assert r.dbsize() == 2
    assert sorted(r.scan(0, count=1000)[1]) == [b"kv:keep", b"kv:long"]

    assert ex(r, "AMEM.CONV.WINDOW", "conv:short") == []
    assert ex(r, "AMEM.CONV.LEN", "conv:short") == 0
    assert ex(r, "AMEM.CONV.INFO", "conv:short") is None
    assert ex(r, "AMEM.SCAN", 0, "TYPE", "conv")[1] == [b"conv:keep"]
    assert [t[b"content"] for t in records(ex(r, "AMEM.CONV.WINDOW", "conv:keep"))] == [b"stays"]

    assert ex(r, "AMEM.WORK.GET", "work:mixed", "short") is None
    assert ex(r, "AMEM.WORK.TTL", "work:mixed", "short") == -2
    assert sorted(record(ex(r, "AMEM.WORK.GETALL", "work:mixed"))) == [b"keep", b"long"]
    assert ex(r, "AMEM.WORK.MGET", "work:mixed", "short", "keep") == [None, b"v"]
    assert ex(r, "AMEM.WORK.LEN", "work:mixed") == 2
    assert ex(r, "AMEM.WORK.GET", "work:pad", "a") is None
    assert record(ex(r, "AMEM.WORK.GETALL", "work:pad")) == {}
    assert ex(r, "AMEM.WORK.LEN", "work:pad") == 0
    assert ex(r, "AMEM.SCAN", 0, "TYPE", "work")[1] == [b"work:mixed"]

    assert ex(r, "AMEM.SEM.GET", "kb", "short") is None
    listed = [f[b"id"] for f in records(ex(r, "AMEM.SEM.LIST", "kb", "CURSOR", 0)[1])]
    assert listed == [b"keep", b"long"]
    hits = [h[b"id"] for h in records(ex(r, "AMEM.SEM.RECALL", "kb", 10, "FP32", fp32([1] * DIM)))]
    assert sorted(hits) == [b"keep", b"long"]
    assert record(ex(r, "AMEM.SEM.INFO", "kb"))[b"count"] == 2


def assert_deadlines_kept(r: redis.Redis, deadlines: dict[str, Any]) -> None:
    assert record(ex(r, "AMEM.SEM.GET", "kb", "long"))[b"expires"] == deadlines["sem-long"]
    kv_deadline = int(time.time() * 1000) + r.pttl("kv:long")
    assert abs(kv_deadline - deadlines["kv-long"]) < 500
    # the same absolute deadline, however long the restart took (a loaded machine is slow)
    work_deadline = int(time.time() * 1000) + ex(r, "AMEM.WORK.TTL", "work:mixed", "long")
    assert abs(work_deadline - deadlines["work-long"]) < 500


@pytest.fixture
def proc(tmp_path: Any) -> Iterator[HotkvProcess]:
    p = HotkvProcess("--appendonly", "yes", "--appendfsync", "always", dir=str(tmp_path))
    yield p
    p.kill()


@pytest.mark.parametrize("protocol", [2, 3])
def test_expired_while_down_stays_gone(proc: HotkvProcess, protocol: int) -> None:
    proc.start()
    r = proc.client(protocol=protocol)
    deadlines = write(r)
    proc.stop()
    stay_down_until_expired(deadlines)
    proc.start()
    r = proc.client(protocol=protocol)
    assert_expired_gone(r)
    assert_deadlines_kept(r, deadlines)
    # a rewrite of the reloaded state brings nothing back either
    r.bgrewriteaof()
    wait_rewrite_done(r)
    proc.kill()
    proc.start()
    r = proc.client(protocol=protocol)
    assert_expired_gone(r)
    assert_deadlines_kept(r, deadlines)


def test_expired_after_a_rewrite_stays_gone(proc: HotkvProcess) -> None:
    """The base written while the entries lived holds their deadlines, not their lifetimes."""
    proc.start()
    r = proc.client()
    deadlines = write(r)
    r.bgrewriteaof()
    info = wait_rewrite_done(r)
    assert info["aof_last_bgrewrite_status"] == "ok"
    proc.stop()
    stay_down_until_expired(deadlines)
    proc.start()
    r = proc.client()
    assert_expired_gone(r)
    assert_deadlines_kept(r, deadlines)
    assert "expired entries dropped" in proc.log()
