"""Generic key commands over the string cache through a real server, in RESP2 and RESP3."""

from __future__ import annotations

import time

import pytest
import redis

LLONG_MAX = 2**63 - 1


def error_of(r: redis.Redis, *argv: object) -> str:
    with pytest.raises(redis.ResponseError) as info:
        r.execute_command(*argv)
    return str(info.value)


def scan_all(r: redis.Redis, **options: object) -> list[bytes]:
    seen: list[bytes] = []
    cursor = 0
    while True:
        cursor, found = r.scan(cursor, **options)  # type: ignore[arg-type]
        seen.extend(found)
        if cursor == 0:
            return seen


def test_del_unlink_count_existing_keys_once(r: redis.Redis) -> None:
    r.mset({"a": 1, "b": 2, "c": 3})
    assert r.execute_command("DEL", "a", "a", "nope") == 1
    assert r.execute_command("UNLINK", "b", "c", "b") == 2
    assert r.execute_command("DEL", "a") == 0
    assert r.dbsize() == 0


def test_exists_counts_every_argument(r: redis.Redis) -> None:
    r.mset({"a": 1, "b": 2})
    assert r.exists("a", "a", "b", "nope") == 3
    assert r.exists("nope") == 0


def test_type(r: redis.Redis) -> None:
    r.set("k", "v")
    assert r.type("k") == b"string"
    assert r.type("nope") == b"none"


def test_keys_patterns(r: redis.Redis) -> None:
    r.mset({"user:1": 1, "user:2": 2, "user:10": 3, "job:1": 4, "a*b": 5})
    assert sorted(r.keys("*")) == [b"a*b", b"job:1", b"user:1", b"user:10", b"user:2"]
    assert sorted(r.keys("user:?")) == [b"user:1", b"user:2"]
    assert sorted(r.keys("user:[12]*")) == [b"user:1", b"user:10", b"user:2"]
    assert r.keys("a\\*b") == [b"a*b"]
    assert r.keys("nothing*") == []


def test_scan_walks_everything(r: redis.Redis) -> None:
    names = {f"key:{i}".encode() for i in range(250)}
    r.mset({name: b"v" for name in names})
    seen = scan_all(r, count=17)
    assert sorted(seen) == sorted(names)
    assert sorted(scan_all(r, match="key:1?", count=5)) == sorted(
        f"key:{i}".encode() for i in range(10, 20))
    assert sorted(scan_all(r, _type="STRING")) == sorted(names)
    assert scan_all(r, _type="hash") == []


def test_scan_reply_shape_and_errors(r: redis.Redis) -> None:
    r.set("k", "v")
    raw = r.execute_command("SCAN", "0", "COUNT", "100")
    assert raw[0] == 0 and raw[1] == [b"k"]
    assert error_of(r, "SCAN", "abc") == "invalid cursor"
    assert error_of(r, "SCAN", " 1") == "invalid cursor"
    assert error_of(r, "SCAN", "18446744073709551616") == "invalid cursor"
    assert error_of(r, "SCAN", "0", "COUNT", "0") == "syntax error"
    assert error_of(r, "SCAN", "0", "COUNT", "abc") == "value is not an integer or out of range"
    assert error_of(r, "SCAN", "0", "MATCH") == "syntax error"
    assert error_of(r, "SCAN", "0", "FOO", "bar") == "syntax error"
    # strtoul accepts a sign (and "-1" wraps), as Redis does
    assert r.execute_command("SCAN", "+0")[1] == [b"k"]
    assert r.execute_command("SCAN", "-1")[0] == 0


def test_expire_ttl_pttl_persist(r: redis.Redis) -> None:
    assert r.expire("nope", 10) is False
    assert r.ttl("nope") == -2 and r.pttl("nope") == -2
    r.set("k", "v")
    assert r.ttl("k") == -1 and r.pttl("k") == -1
    assert r.expire("k", 100) is True
    assert 99 <= r.ttl("k") <= 100
    assert r.pexpire("k", 50_000) is True
    assert 49_000 < r.pttl("k") <= 50_000
    assert r.expireat("k", int(time.time()) + 300) is True
    assert 298 <= r.ttl("k") <= 300
    assert r.pexpireat("k", int(time.time() * 1000) + 400_000) is True
    assert 398 <= r.ttl("k") <= 400
    assert r.persist("k") is True
    assert r.persist("k") is False
    assert r.persist("nope") is False
    assert r.ttl("k") == -1


def test_ttl_rounds_to_the_nearest_second(r: redis.Redis) -> None:
    r.set("k", "v")
    r.pexpire("k", 1_600)
    assert r.ttl("k") == 2
    r.pexpire("k", 1_400)
    assert r.ttl("k") == 1


@pytest.mark.parametrize("ttl", ["0", "-5"])
def test_expire_in_the_past_deletes(r: redis.Redis, ttl: str) -> None:
    r.set("k", "v")
    assert r.execute_command("EXPIRE", "k", ttl) == 1
    assert r.exists("k") == 0
    assert r.dbsize() == 0


def test_expireat_in_the_past_deletes(r: redis.Redis) -> None:
    r.set("k", "v")
    assert r.execute_command("PEXPIREAT", "k", "1") == 1
    assert r.dbsize() == 0


def test_expire_options(r: redis.Redis) -> None:
    r.set("k", "v")
    assert r.execute_command("EXPIRE", "k", "10", "XX") == 0
    assert r.execute_command("EXPIRE", "k", "10", "GT") == 0  # no TTL counts as infinite
    assert r.execute_command("EXPIRE", "k", "10", "LT") == 1
    assert r.execute_command("EXPIRE", "k", "20", "NX") == 0
    assert r.execute_command("EXPIRE", "k", "20", "gt") == 1
    assert 19 <= r.ttl("k") <= 20
    assert r.execute_command("EXPIRE", "k", "30", "LT") == 0
    assert r.execute_command("EXPIRE", "k", "5", "LT", "XX") == 1
    assert 4 <= r.ttl("k") <= 5
    assert r.execute_command("EXPIRE", "k", "10", "NX", "NX") == 0
    assert r.execute_command("EXPIRE", "nope", "10", "NX") == 0


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["EXPIRE", "k", "10", "FOO"], "Unsupported option FOO"),
        (["EXPIRE", "k", "abc", "foo"], "Unsupported option foo"),
        (["EXPIRE", "k", "1", "2"], "Unsupported option 2"),
        (["EXPIRE", "k", "10", "NX", "XX"], "NX and XX, GT or LT options at the same time are not compatible"),
        (["EXPIRE", "k", "10", "GT", "NX"], "NX and XX, GT or LT options at the same time are not compatible"),
        (["PEXPIRE", "k", "10", "GT", "LT"], "GT and LT options at the same time are not compatible"),
        (["EXPIRE", "k", "abc"], "value is not an integer or out of range"),
        (["EXPIRE", "k", str(LLONG_MAX)], "invalid expire time in 'expire' command"),
        (["EXPIRE", "k", str(-LLONG_MAX - 1)], "invalid expire time in 'expire' command"),
        (["PEXPIRE", "k", str(LLONG_MAX)], "invalid expire time in 'pexpire' command"),
        (["EXPIREAT", "k", str(LLONG_MAX // 1000 + 1)], "invalid expire time in 'expireat' command"),
        (["EXPIREAT", "k", "9223372036854775808"], "value is not an integer or out of range"),
        (["EXPIRE", "k"], "wrong number of arguments for 'expire' command"),
        (["TTL"], "wrong number of arguments for 'ttl' command"),
    ],
)
def test_expire_errors(r: redis.Redis, argv: list[str], message: str) -> None:
    r.set("k", "v")
    assert error_of(r, *argv) == message
    assert r.ttl("k") == -1


def test_pexpireat_far_future_is_fine(r: redis.Redis) -> None:
    r.set("k", "v")
    assert r.execute_command("PEXPIREAT", "k", str(LLONG_MAX)) == 1
    assert r.pttl("k") > 9_000_000_000_000_000_000


def test_dbsize_and_randomkey(r: redis.Redis) -> None:
    assert r.dbsize() == 0
    assert r.randomkey() is None
    r.mset({"a": 1, "b": 2, "c": 3})
    assert r.dbsize() == 3
    picked = {r.randomkey() for _ in range(40)}
    assert picked <= {b"a", b"b", b"c"}
    assert len(picked) >= 2


def test_randomkey_never_returns_an_expired_key(r: redis.Redis) -> None:
    r.set("live", "v")
    for i in range(20):
        r.set(f"short:{i}", "v", px=20)
    time.sleep(0.05)
    assert {r.randomkey() for _ in range(10)} == {b"live"}


def test_expired_keys_leave_dbsize_without_being_read(r: redis.Redis) -> None:
    r.set("k", "v", px=50)
    r.set("stay", "v")
    assert r.dbsize() == 2
    deadline = time.monotonic() + 1.0
    while r.dbsize() != 1 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert r.dbsize() == 1  # active expiry removed it: nothing read "k"
    assert r.keys("*") == [b"stay"]


def test_lazy_expiry_is_seen_by_every_read(r: redis.Redis) -> None:
    r.set("k", "v", px=20)
    time.sleep(0.05)
    assert r.exists("k") == 0
    assert r.type("k") == b"none"
    assert r.ttl("k") == -2
    assert r.expire("k", 10) is False
    assert r.persist("k") is False
    assert r.keys("*") == []
    assert scan_all(r) == []
    assert r.delete("k") == 0


def test_writes_to_a_watched_key_abort_exec(r: redis.Redis) -> None:
    r.set("k", "1")
    with r.pipeline() as pipe:
        pipe.watch("k")
        other = redis.Redis(port=r.connection_pool.connection_kwargs["port"])
        other.expire("k", 100)
        other.close()
        pipe.multi()
        pipe.set("k", "2")
        with pytest.raises(redis.WatchError):
            pipe.execute()
    assert r.get("k") == b"1"
