"""Lists and sorted sets survive a restart (AOF replay, kill, rewrite) and reach a replica
exactly: the same elements in the same order, the same scores, the same deadlines, also for
what a blocked client popped (the AOF and the replica see the pop, never the BLPOP)."""

from __future__ import annotations

import math
import socket
import time
from typing import Any

import pytest
import redis

from helpers import HotkvProcess
from persistence.pdata import wait_rewrite_done
from replication.rhelpers import replica_of, servers, wait_synced


def workload(r: redis.Redis, port: int) -> None:
    """Writes of every kind: pushes, pops, edits, moves, scores, set algebra, a TTL, a
    transaction and pops served to blocked clients."""
    r.rpush("l", *[f"v{i}" for i in range(50)])
    r.lpush("l", "head1", "head2")
    r.lpop("l")
    r.rpop("l", 3)
    r.lset("l", 5, "changed")
    r.linsert("l", "BEFORE", "v10", "inserted")
    r.lrem("l", 1, "v11")
    r.ltrim("l", 1, -2)
    r.rpush("l2", "a", "b", "c")
    r.lmove("l2", "l3", "LEFT", "RIGHT")
    r.lmove("l2", "l2", "LEFT", "RIGHT")
    r.rpoplpush("l2", "l4")
    r.lmpop(1, "l4", direction="RIGHT")
    r.rpush("ttl-list", "x")
    r.pexpire("ttl-list", 600_000)
    r.zadd("z", {f"m{i}": i * 1.1 for i in range(200)})
    r.zadd("z", {"m1": 100}, xx=True)
    r.zadd("z", {"inf": math.inf, "ninf": -math.inf})
    r.zincrby("z", 0.25, "m2")
    r.zadd("z", {"m3": 1}, incr=True)
    r.zrem("z", "m4", "m5")
    r.zremrangebyscore("z", 50, "(60")
    r.zremrangebyrank("z", 0, 2)
    r.zadd("lex", {x: 0 for x in ["a", "b", "c", "d", "e"]})
    r.zremrangebylex("lex", "[b", "(d")
    r.zpopmin("z", 2)
    r.zpopmax("z")
    r.zadd("z2", {"m10": 5, "x": 1})
    r.zunionstore("zu", ["z", "z2"], aggregate="MAX")
    r.zinterstore("zi", {"z": 2, "z2": 3})
    r.zdiffstore("zd", ["z", "z2"])
    r.zrangestore("zr", "z", 10, 20)
    pipe = r.pipeline(transaction=True)
    pipe.rpush("tx", "1", "2")
    pipe.zadd("tx-z", {"a": 1})
    pipe.lpop("tx")
    pipe.execute()
    # pops served to blocked clients
    waiter = socket.create_connection(("127.0.0.1", port), timeout=5)
    waiter.sendall(b"*3\r\n$5\r\nBLPOP\r\n$7\r\nblocked\r\n$1\r\n0\r\n")
    waiter2 = socket.create_connection(("127.0.0.1", port), timeout=5)
    waiter2.sendall(b"*3\r\n$8\r\nBZPOPMIN\r\n$8\r\nblocked2\r\n$1\r\n0\r\n")
    time.sleep(0.2)
    r.rpush("blocked", "p1", "p2", "p3")
    r.zadd("blocked2", {"a": 1, "b": 2})
    assert waiter.recv(100).startswith(b"*2")
    assert waiter2.recv(100).startswith(b"*3")
    waiter.close()
    waiter2.close()


def dump(r: redis.Redis) -> dict[str, Any]:
    state: dict[str, Any] = {}
    for key in sorted(r.keys("*")):
        kind = r.type(key)
        ttl = r.pttl(key)
        if kind == b"list":
            state[key] = ("list", r.lrange(key, 0, -1), ttl > 0)
        elif kind == b"zset":
            state[key] = ("zset", r.zrange(key, 0, -1, withscores=True), ttl > 0,
                          r.object("ENCODING", key))
        else:
            state[key] = (kind, ttl > 0)
    return state


def test_restart_replays_lists_and_sorted_sets(tmp_path: Any) -> None:
    proc = HotkvProcess("--appendonly", "yes", "--appendfsync", "always", dir=str(tmp_path))
    with servers(proc):
        r = proc.client()
        workload(r, proc.port)
        before = dump(r)
        assert before[b"blocked"][1] == [b"p2", b"p3"]
        assert [tuple(p) for p in before[b"blocked2"][1]] == [(b"b", 2.0)]
        assert before[b"ttl-list"][2] is True
        proc.restart()
        assert dump(proc.client()) == before
        proc.kill()
        proc.start()
        assert dump(proc.client()) == before
        r = proc.client()
        r.bgrewriteaof()
        wait_rewrite_done(r)
        r.rpush("after-rewrite", "x")
        before = dump(r)
        proc.restart()
        assert dump(proc.client()) == before


def test_replica_gets_the_same_lists_and_sorted_sets() -> None:
    primary = HotkvProcess()
    with servers(primary):
        replica = replica_of(primary)
        with servers(replica):
            p, rep = primary.client(), replica.client()
            workload(p, primary.port)
            wait_synced(p, rep)
            assert dump(rep) == dump(p)
            # a replica refuses the blocking pops as any write
            with pytest.raises(redis.ReadOnlyError):
                rep.blpop(["blocked"], timeout=1)
