"""Tenants confined by ACL key patterns cannot reach each other's lists and sorted sets by
any key position: the key itself, a destination, the second key of LMOVE, or any of the
numkeys keys of LMPOP, BLMPOP, ZUNION, ZINTERCARD, ZUNIONSTORE ... (Redis's key specs)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis

from helpers import HotkvProcess

# {o} is the other tenant's key, {m} one of the caller's own
CALLS: list[list[str]] = [
    ["LPUSH", "{o}:l", "x"], ["RPUSH", "{o}:l", "x"], ["LPUSHX", "{o}:l", "x"],
    ["RPUSHX", "{o}:l", "x"], ["LPOP", "{o}:l"], ["RPOP", "{o}:l", "2"], ["LLEN", "{o}:l"],
    ["LRANGE", "{o}:l", "0", "-1"], ["LINDEX", "{o}:l", "0"], ["LSET", "{o}:l", "0", "x"],
    ["LINSERT", "{o}:l", "BEFORE", "a", "b"], ["LREM", "{o}:l", "0", "a"],
    ["LTRIM", "{o}:l", "0", "1"], ["LPOS", "{o}:l", "a"],
    ["LMOVE", "{m}:l", "{o}:l", "LEFT", "LEFT"], ["LMOVE", "{o}:l", "{m}:l", "LEFT", "LEFT"],
    ["RPOPLPUSH", "{o}:l", "{m}:l"], ["LMPOP", "2", "{m}:l", "{o}:l", "LEFT"],
    ["BLPOP", "{m}:l", "{o}:l", "0.01"], ["BRPOP", "{o}:l", "0.01"],
    ["BLMOVE", "{m}:l", "{o}:l", "LEFT", "LEFT", "0.01"], ["BRPOPLPUSH", "{o}:l", "{m}:x", "0.01"],
    ["BLMPOP", "0.01", "2", "{m}:l", "{o}:l", "LEFT"],
    ["ZADD", "{o}:z", "1", "a"], ["ZINCRBY", "{o}:z", "1", "a"], ["ZREM", "{o}:z", "a"],
    ["ZCARD", "{o}:z"], ["ZSCORE", "{o}:z", "a"], ["ZMSCORE", "{o}:z", "a"],
    ["ZRANK", "{o}:z", "a"], ["ZREVRANK", "{o}:z", "a"], ["ZCOUNT", "{o}:z", "-inf", "+inf"],
    ["ZLEXCOUNT", "{o}:z", "-", "+"], ["ZRANGE", "{o}:z", "0", "-1"],
    ["ZRANGESTORE", "{m}:d", "{o}:z", "0", "-1"], ["ZRANGESTORE", "{o}:d", "{m}:z", "0", "-1"],
    ["ZRANGEBYSCORE", "{o}:z", "-inf", "+inf"], ["ZREVRANGEBYSCORE", "{o}:z", "+inf", "-inf"],
    ["ZRANGEBYLEX", "{o}:z", "-", "+"], ["ZREVRANGEBYLEX", "{o}:z", "+", "-"],
    ["ZREVRANGE", "{o}:z", "0", "-1"], ["ZPOPMIN", "{o}:z"], ["ZPOPMAX", "{o}:z"],
    ["ZMPOP", "2", "{m}:z", "{o}:z", "MIN"], ["BZPOPMIN", "{o}:z", "0.01"],
    ["BZPOPMAX", "{m}:z", "{o}:z", "0.01"], ["BZMPOP", "0.01", "2", "{m}:z", "{o}:z", "MAX"],
    ["ZREMRANGEBYRANK", "{o}:z", "0", "-1"], ["ZREMRANGEBYSCORE", "{o}:z", "-inf", "+inf"],
    ["ZREMRANGEBYLEX", "{o}:z", "-", "+"], ["ZUNION", "2", "{m}:z", "{o}:z"],
    ["ZUNIONSTORE", "{m}:d", "2", "{m}:z", "{o}:z"], ["ZUNIONSTORE", "{o}:d", "1", "{m}:z"],
    ["ZINTER", "2", "{m}:z", "{o}:z"], ["ZINTERSTORE", "{m}:d", "2", "{m}:z", "{o}:z"],
    ["ZINTERCARD", "2", "{m}:z", "{o}:z"], ["ZDIFF", "2", "{m}:z", "{o}:z"],
    ["ZDIFFSTORE", "{m}:d", "2", "{m}:z", "{o}:z"], ["ZRANDMEMBER", "{o}:z"],
    ["ZSCAN", "{o}:z", "0"],
]


@pytest.fixture(scope="module")
def tenants() -> Iterator[tuple[HotkvProcess, redis.Redis]]:
    proc = HotkvProcess("--requirepass", "root").start()
    root = proc.client(password="root")
    for tenant in ("tenant-a", "tenant-b"):
        root.execute_command("ACL", "SETUSER", tenant, "on", f">{tenant}-pw", f"~{tenant}:*",
                             "+@list", "+@sortedset", "+@blocking", "+@connection")
    try:
        yield proc, root
    finally:
        proc.cleanup()


@pytest.mark.parametrize("protocol", [2, 3])
def test_no_list_or_zset_command_reaches_the_other_tenant(
        tenants: tuple[HotkvProcess, redis.Redis], protocol: int) -> None:
    proc, root = tenants
    root.flushall()
    a = proc.client(protocol=protocol, username="tenant-a", password="tenant-a-pw")
    b = proc.client(protocol=protocol, username="tenant-b", password="tenant-b-pw")
    for client, tenant in ((a, "tenant-a"), (b, "tenant-b")):
        client.rpush(f"{tenant}:l", "secret", f"of {tenant}")
        client.zadd(f"{tenant}:z", {f"secret of {tenant}": 1})
    before = (root.lrange("tenant-b:l", 0, -1), root.zrange("tenant-b:z", 0, -1, withscores=True))
    refused = 0
    for call in CALLS:
        argv = [part.replace("{o}", "tenant-b").replace("{m}", "tenant-a") for part in call]
        with pytest.raises(redis.exceptions.NoPermissionError) as info:
            a.execute_command(*argv)
        assert "tenant-b" not in str(info.value) and "secret" not in str(info.value)
        refused += 1
    assert refused == len(CALLS)
    after = (root.lrange("tenant-b:l", 0, -1), root.zrange("tenant-b:z", 0, -1, withscores=True))
    assert after == before
    assert root.exists("tenant-a:d", "tenant-b:d") == 0
    # the same calls on the caller's own keys are allowed (the test can fail both ways)
    for call in CALLS:
        argv = [part.replace("{o}", "tenant-a").replace("{m}", "tenant-a") for part in call]
        try:
            a.execute_command(*argv)
        except redis.exceptions.NoPermissionError as exc:
            raise AssertionError(f"{argv} refused on own keys: {exc}") from None
        except redis.exceptions.ResponseError:
            pass  # WRONGTYPE and the like: allowed, just not meaningful on this data
