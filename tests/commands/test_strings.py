"""String commands of the cache through a real server, in RESP2 and RESP3."""

from __future__ import annotations

import time

import pytest
import redis

LLONG_MAX = 2**63 - 1
LLONG_MIN = -(2**63)


def error_of(r: redis.Redis, *argv: object) -> str:
    with pytest.raises(redis.ResponseError) as info:
        r.execute_command(*argv)
    return str(info.value)


def test_get_set_binary_and_empty_values(r: redis.Redis) -> None:
    assert r.get("missing") is None
    assert r.set("k", "v") is True
    assert r.get("k") == b"v"
    blob = bytes(range(256)) * 100
    r.set(b"\x00bin\xff", blob)
    assert r.get(b"\x00bin\xff") == blob
    r.set("empty", b"")
    assert r.get("empty") == b""
    assert r.exists("empty") == 1
    assert r.strlen("empty") == 0


def test_set_overwrites_and_drops_ttl(r: redis.Redis) -> None:
    r.set("k", "1", ex=100)
    r.set("k", "2")
    assert r.get("k") == b"2"
    assert r.ttl("k") == -1


def test_set_nx_xx(r: redis.Redis) -> None:
    assert r.set("k", "1", xx=True) is None
    assert r.get("k") is None
    assert r.set("k", "1", nx=True) is True
    assert r.set("k", "2", nx=True) is None
    assert r.get("k") == b"1"
    assert r.set("k", "3", xx=True) is True
    assert r.get("k") == b"3"


def test_set_get_returns_old_value(r: redis.Redis) -> None:
    assert r.set("k", "1", get=True) is None
    assert r.set("k", "2", get=True) == b"1"
    assert r.get("k") == b"2"
    # Redis 7.0 allows NX with GET: the old value comes back and nothing is written
    assert r.set("k", "3", nx=True, get=True) == b"2"
    assert r.get("k") == b"2"
    assert r.set("new", "3", nx=True, get=True) is None
    assert r.get("new") == b"3"
    assert r.set("absent", "x", xx=True, get=True) is None
    assert r.exists("absent") == 0


def test_set_expire_options_store_absolute_deadlines(r: redis.Redis) -> None:
    r.set("ex", "v", ex=100)
    assert 99 <= r.ttl("ex") <= 100
    r.set("px", "v", px=100_000)
    assert 99_000 < r.pttl("px") <= 100_000
    now_s = int(time.time())
    r.set("exat", "v", exat=now_s + 200)
    assert 198 <= r.ttl("exat") <= 200
    r.set("pxat", "v", pxat=(now_s + 300) * 1000)
    assert 298 <= r.ttl("pxat") <= 300
    # the last of a repeated option wins
    r.execute_command("SET", "twice", "v", "EX", "10", "EX", "20")
    assert 19 <= r.ttl("twice") <= 20


def test_set_in_the_past_is_gone_at_once(r: redis.Redis) -> None:
    assert r.execute_command("SET", "k", "v", "PXAT", "1") in (True, b"OK")
    assert r.get("k") is None
    assert r.exists("k") == 0


def test_set_keepttl(r: redis.Redis) -> None:
    r.set("k", "1", ex=100)
    r.set("k", "2", keepttl=True)
    assert r.get("k") == b"2"
    assert 99 <= r.ttl("k") <= 100
    r.set("fresh", "1", keepttl=True)
    assert r.ttl("fresh") == -1


@pytest.mark.parametrize(
    "options",
    [
        ["NX", "XX"],
        ["XX", "NX"],
        ["EX", "10", "PX", "100"],
        ["PX", "100", "EXAT", "10"],
        ["KEEPTTL", "EX", "10"],
        ["EX", "10", "KEEPTTL"],
        ["EX"],
        ["FOO"],
        ["EX", "10", "FOO"],
        ["FOO", "EX", "abc"],
        ["EX", "abc", "FOO"],
    ],
)
def test_set_syntax_errors(r: redis.Redis, options: list[str]) -> None:
    assert error_of(r, "SET", "k", "v", *options) == "syntax error"
    assert r.exists("k") == 0


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["EX", "0"], "invalid expire time in 'set' command"),
        (["EX", "-1"], "invalid expire time in 'set' command"),
        (["PX", "0"], "invalid expire time in 'set' command"),
        (["EXAT", "0"], "invalid expire time in 'set' command"),
        (["PX", str(LLONG_MAX)], "invalid expire time in 'set' command"),
        (["EX", str(LLONG_MAX // 1000)], "invalid expire time in 'set' command"),
        (["EX", str(LLONG_MAX // 1000 + 1)], "invalid expire time in 'set' command"),
        (["EX", "abc"], "value is not an integer or out of range"),
        (["EX", "1.5"], "value is not an integer or out of range"),
        (["EX", "010"], "value is not an integer or out of range"),
        (["PX", "9223372036854775808"], "value is not an integer or out of range"),
        (["EX", "NX"], "value is not an integer or out of range"),
    ],
)
def test_set_bad_expire_values(r: redis.Redis, options: list[str], message: str) -> None:
    assert error_of(r, "SET", "k", "v", *options) == message
    assert r.exists("k") == 0


def test_set_far_absolute_deadlines_are_fine(r: redis.Redis) -> None:
    r.execute_command("SET", "a", "v", "EXAT", str(LLONG_MAX // 1000))
    r.execute_command("SET", "b", "v", "PXAT", str(LLONG_MAX))
    assert r.pttl("b") > 9_000_000_000_000_000_000
    assert r.get("a") == r.get("b") == b"v"


def test_set_bad_expire_keeps_the_old_value(r: redis.Redis) -> None:
    r.set("k", "old")
    assert error_of(r, "SET", "k", "new", "GET", "EX", "0") == "invalid expire time in 'set' command"
    assert r.get("k") == b"old"


def test_arity_errors(r: redis.Redis) -> None:
    assert error_of(r, "GET") == "wrong number of arguments for 'get' command"
    assert error_of(r, "GET", "a", "b") == "wrong number of arguments for 'get' command"
    assert error_of(r, "SET", "k") == "wrong number of arguments for 'set' command"
    assert error_of(r, "MSET", "a", "1", "b") == "wrong number of arguments for 'mset' command"
    assert error_of(r, "MSET") == "wrong number of arguments for 'mset' command"
    assert error_of(r, "MGET") == "wrong number of arguments for 'mget' command"
    assert error_of(r, "INCRBY", "k") == "wrong number of arguments for 'incrby' command"
    assert error_of(r, "STRLEN") == "wrong number of arguments for 'strlen' command"


def test_mget_mset(r: redis.Redis) -> None:
    r.set("ttl", "x", ex=100)
    assert r.execute_command("MSET", "a", "1", "b", "2", "a", "3", "ttl", "y") in (True, b"OK")
    assert r.mget("a", "b", "nope", "ttl", "a") == [b"3", b"2", None, b"y", b"3"]
    assert r.ttl("ttl") == -1  # MSET drops TTLs as SET does


def test_incr_decr_family(r: redis.Redis) -> None:
    assert r.incr("n") == 1
    assert r.incrby("n", 10) == 11
    assert r.decr("n") == 10
    assert r.decrby("n", 15) == -5
    assert r.get("n") == b"-5"
    assert r.execute_command("INCRBY", "n", "-5") == -10
    assert r.decr("fresh") == -1
    r.set("big", str(LLONG_MAX - 1))
    assert r.incr("big") == LLONG_MAX
    assert r.get("big") == str(LLONG_MAX).encode()


def test_incr_keeps_the_ttl(r: redis.Redis) -> None:
    r.set("n", "5", ex=100)
    assert r.incr("n") == 6
    assert 99 <= r.ttl("n") <= 100


@pytest.mark.parametrize("stored", [" 1", "1 ", "+1", "-0", "007", "1.5", "abc", "",
                                    "9223372036854775808", "1e3"])
def test_incr_rejects_values_that_are_not_strict_integers(r: redis.Redis, stored: str) -> None:
    r.set("n", stored)
    assert error_of(r, "INCR", "n") == "value is not an integer or out of range"
    assert r.get("n") == stored.encode()


def test_incr_overflow_and_bad_increments(r: redis.Redis) -> None:
    r.set("max", str(LLONG_MAX))
    assert error_of(r, "INCR", "max") == "increment or decrement would overflow"
    r.set("min", str(LLONG_MIN))
    assert error_of(r, "DECR", "min") == "increment or decrement would overflow"
    assert error_of(r, "INCRBY", "min", str(LLONG_MIN)) == "increment or decrement would overflow"
    assert error_of(r, "DECRBY", "x", str(LLONG_MIN)) == "decrement would overflow"
    assert error_of(r, "INCRBY", "x", "abc") == "value is not an integer or out of range"
    assert error_of(r, "INCRBY", "x", "9223372036854775808") == "value is not an integer or out of range"
    assert error_of(r, "DECRBY", "x", "1.0") == "value is not an integer or out of range"
    assert r.exists("x") == 0
    assert r.get("max") == str(LLONG_MAX).encode()


def test_strlen(r: redis.Redis) -> None:
    assert r.strlen("nope") == 0
    r.set("k", "héllo")
    assert r.strlen("k") == len("héllo".encode())


def test_lazy_expiry_on_get(r: redis.Redis) -> None:
    r.set("k", "v", px=30)
    assert r.get("k") == b"v"
    time.sleep(0.06)
    assert r.get("k") is None
    assert r.strlen("k") == 0
    assert r.mget("k") == [None]
