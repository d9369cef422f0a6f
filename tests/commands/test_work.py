"""AMEM.WORK.* end to end through redis-py, in RESP2 and RESP3."""

from __future__ import annotations

import json
import time

import pytest
import redis

from helpers import HotkvProcess, raw_roundtrip, record

OK_REPLIES = (b"OK", "OK", True)


def cmd(r: redis.Redis, *args: object) -> object:
    return r.execute_command(*args)


def error_of(r: redis.Redis, *args: object) -> str:
    with pytest.raises(redis.ResponseError) as info:
        r.execute_command(*args)
    return str(info.value)


# --- SET / GET / MGET / GETALL / LEN --------------------------------------------------


def test_set_get_mget_getall_len(r: redis.Redis) -> None:
    assert cmd(r, "AMEM.WORK.SET", "s1", "plan", "step 1") in OK_REPLIES
    assert cmd(r, "amem.work.set", "s1", "goal", b"\x00\xffbin") in OK_REPLIES
    assert cmd(r, "AMEM.WORK.SET", "s1", "plan", "step 2") in OK_REPLIES
    assert cmd(r, "AMEM.WORK.GET", "s1", "plan") == b"step 2"
    assert cmd(r, "AMEM.WORK.GET", "s1", "goal") == b"\x00\xffbin"
    assert cmd(r, "AMEM.WORK.GET", "s1", "nope") is None
    assert cmd(r, "AMEM.WORK.MGET", "s1", "plan", "nope", "goal") == [
        b"step 2",
        None,
        b"\x00\xffbin",
    ]
    assert record(cmd(r, "AMEM.WORK.GETALL", "s1")) == {b"plan": b"step 2", b"goal": b"\x00\xffbin"}
    assert cmd(r, "AMEM.WORK.LEN", "s1") == 2


def test_missing_session_reads(r: redis.Redis) -> None:
    assert cmd(r, "AMEM.WORK.GET", "nope", "k") is None
    assert cmd(r, "AMEM.WORK.MGET", "nope", "a", "b") == [None, None]
    assert record(cmd(r, "AMEM.WORK.GETALL", "nope")) == {}
    assert cmd(r, "AMEM.WORK.LEN", "nope") == 0
    assert cmd(r, "AMEM.WORK.TTL", "nope", "k") == -2


def test_get_default(r: redis.Redis) -> None:
    assert cmd(r, "AMEM.WORK.GET", "s1", "k", "DEFAULT", "fallback") == b"fallback"
    cmd(r, "AMEM.WORK.SET", "s1", "k", "v")
    assert cmd(r, "AMEM.WORK.GET", "s1", "k", "default", "fallback") == b"v"
    assert "DEFAULT needs a value" in error_of(r, "AMEM.WORK.GET", "s1", "k", "DEFAULT")
    assert "option 'BOGUS'" in error_of(r, "AMEM.WORK.GET", "s1", "k", "BOGUS")


def test_separate_id_space_from_conversations_and_cache(r: redis.Redis) -> None:
    cmd(r, "AMEM.WORK.SET", "session-42", "k", "v")
    assert cmd(r, "AMEM.CONV.INFO", "session-42") is None
    cmd(r, "AMEM.CONV.CREATE", "session-42")
    assert cmd(r, "AMEM.WORK.GET", "session-42", "k") == b"v"


# --- NX / XX / TTL / KEEPTTL ------------------------------------------------------


def test_nx_xx(r: redis.Redis) -> None:
    assert cmd(r, "AMEM.WORK.SET", "s1", "k", "a", "XX") is None
    assert cmd(r, "AMEM.WORK.GET", "s1", "k") is None
    assert cmd(r, "AMEM.WORK.SET", "s1", "k", "a", "NX") in OK_REPLIES
    assert cmd(r, "AMEM.WORK.SET", "s1", "k", "b", "nx") is None
    assert cmd(r, "AMEM.WORK.GET", "s1", "k") == b"a"
    assert cmd(r, "AMEM.WORK.SET", "s1", "k", "c", "XX") in OK_REPLIES
    assert cmd(r, "AMEM.WORK.GET", "s1", "k") == b"c"
    assert "NX and XX" in error_of(r, "AMEM.WORK.SET", "s1", "k", "d", "NX", "XX")


def test_ttl_px_and_ttl_reply(r: redis.Redis) -> None:
    cmd(r, "AMEM.WORK.SET", "s1", "a", "1", "TTL", "100")
    cmd(r, "AMEM.WORK.SET", "s1", "b", "2", "PX", "5000")
    cmd(r, "AMEM.WORK.SET", "s1", "c", "3")
    assert 99_000 <= cmd(r, "AMEM.WORK.TTL", "s1", "a") <= 100_000
    assert 4_000 <= cmd(r, "AMEM.WORK.TTL", "s1", "b") <= 5_000
    assert cmd(r, "AMEM.WORK.TTL", "s1", "c") == -1
    assert cmd(r, "AMEM.WORK.TTL", "s1", "zz") == -2


def test_set_without_ttl_removes_ttl_and_keepttl_keeps_it(r: redis.Redis) -> None:
    cmd(r, "AMEM.WORK.SET", "s1", "a", "1", "PX", "100000")
    cmd(r, "AMEM.WORK.SET", "s1", "a", "2", "KEEPTTL")
    assert cmd(r, "AMEM.WORK.GET", "s1", "a") == b"2"
    assert 90_000 <= cmd(r, "AMEM.WORK.TTL", "s1", "a") <= 100_000
    cmd(r, "AMEM.WORK.SET", "s1", "a", "3")
    assert cmd(r, "AMEM.WORK.TTL", "s1", "a") == -1
    cmd(r, "AMEM.WORK.SET", "s1", "new", "x", "KEEPTTL")
    assert cmd(r, "AMEM.WORK.TTL", "s1", "new") == -1


def test_key_ttl_expiry(r: redis.Redis) -> None:
    cmd(r, "AMEM.WORK.SET", "s1", "short", "x", "PX", "300")
    cmd(r, "AMEM.WORK.SET", "s1", "long", "y")
    assert cmd(r, "AMEM.WORK.GET", "s1", "short") == b"x"
    time.sleep(0.4)
    assert cmd(r, "AMEM.WORK.GET", "s1", "short") is None
    assert cmd(r, "AMEM.WORK.GET", "s1", "short", "DEFAULT", "d") == b"d"
    assert cmd(r, "AMEM.WORK.TTL", "s1", "short") == -2
    assert cmd(r, "AMEM.WORK.LEN", "s1") == 1
    assert record(cmd(r, "AMEM.WORK.GETALL", "s1")) == {b"long": b"y"}
    assert cmd(r, "AMEM.WORK.MGET", "s1", "short", "long") == [None, b"y"]
    assert cmd(r, "AMEM.WORK.DEL", "s1", "short") == 0
    # an expired key counts as absent for NX, XX and MERGE
    assert cmd(r, "AMEM.WORK.SET", "s1", "short", "z", "XX") is None
    assert cmd(r, "AMEM.WORK.SET", "s1", "short", "5", "NX", "MERGE", "INCR") == b"5"


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["TTL", "0"], "TTL '0'"),
        (["TTL", "-1"], "TTL '-1'"),
        (["PX", "0"], "PX '0'"),
        (["PX", "abc"], "PX 'abc'"),
        (["TTL"], "TTL needs a value"),
        (["TTL", "10", "PX", "100"], "TTL and PX cannot be used together"),
        (["PX", "100", "KEEPTTL"], "PX and KEEPTTL cannot be used together"),
        (["MERGE", "SUM"], "MERGE 'SUM'"),
        (["MERGE"], "MERGE needs a value"),
        (["EX", "10"], "option 'EX'"),
    ],
)
def test_set_bad_options(r: redis.Redis, args: list[str], fragment: str) -> None:
    message = error_of(r, "AMEM.WORK.SET", "s1", "k", "1", *args)
    assert fragment in message
    assert cmd(r, "AMEM.WORK.GET", "s1", "k") is None


def test_empty_ids_are_err(r: redis.Redis) -> None:
    assert "session" in error_of(r, "AMEM.WORK.SET", "", "k", "v")
    assert "key" in error_of(r, "AMEM.WORK.SET", "s1", "", "v")


# --- MERGE ------------------------------------------------------------------------


def test_merge_replace_replies_ok(r: redis.Redis) -> None:
    assert cmd(r, "AMEM.WORK.SET", "s1", "k", "a", "MERGE", "REPLACE") in OK_REPLIES
    assert cmd(r, "AMEM.WORK.GET", "s1", "k") == b"a"


def test_merge_append(r: redis.Redis) -> None:
    assert cmd(r, "AMEM.WORK.SET", "s1", "log", "first", "MERGE", "APPEND") == b'["first"]'
    assert cmd(r, "AMEM.WORK.SET", "s1", "log", "42", "MERGE", "append") == b'["first",42]'
    reply = cmd(r, "AMEM.WORK.SET", "s1", "log", '{"tool":"grep","ok":true}', "MERGE", "APPEND")
    assert isinstance(reply, bytes)
    assert json.loads(reply) == ["first", 42, {"tool": "grep", "ok": True}]
    assert cmd(r, "AMEM.WORK.GET", "s1", "log") == reply
    cmd(r, "AMEM.WORK.SET", "s1", "text", "plain")
    assert error_of(r, "AMEM.WORK.SET", "s1", "text", "x", "MERGE", "APPEND") == (
        "MERGE APPEND: the stored value of 'text' is not a JSON array"
    )
    assert cmd(r, "AMEM.WORK.GET", "s1", "text") == b"plain"


def test_merge_incr_int_and_float(r: redis.Redis) -> None:
    assert cmd(r, "AMEM.WORK.SET", "s1", "n", "5", "MERGE", "INCR") == b"5"
    assert cmd(r, "AMEM.WORK.SET", "s1", "n", "3", "MERGE", "INCR") == b"8"
    assert cmd(r, "AMEM.WORK.SET", "s1", "n", "-10", "MERGE", "INCR") == b"-2"
    assert cmd(r, "AMEM.WORK.GET", "s1", "n") == b"-2"
    assert cmd(r, "AMEM.WORK.SET", "s1", "f", "10.5", "MERGE", "INCR") == b"10.5"
    assert cmd(r, "AMEM.WORK.SET", "s1", "f", "0.1", "MERGE", "INCR") == b"10.6"
    assert cmd(r, "AMEM.WORK.SET", "s1", "f", "0.4", "MERGE", "INCR") == b"11"
    assert cmd(r, "AMEM.WORK.SET", "s1", "f", "1", "MERGE", "INCR") == b"12"
    assert cmd(r, "AMEM.WORK.SET", "s1", "g", "0.1", "MERGE", "INCR") == b"0.1"
    assert cmd(r, "AMEM.WORK.SET", "s1", "g", "0.2", "MERGE", "INCR") == b"0.3"


def test_merge_incr_errors(r: redis.Redis) -> None:
    cmd(r, "AMEM.WORK.SET", "s1", "word", "hello")
    assert error_of(r, "AMEM.WORK.SET", "s1", "word", "1", "MERGE", "INCR") == (
        "MERGE INCR: the stored value of 'word' is not a number"
    )
    assert "value 'abc'" in error_of(r, "AMEM.WORK.SET", "s1", "n", "abc", "MERGE", "INCR")
    cmd(r, "AMEM.WORK.SET", "s1", "big", "9223372036854775807")
    assert "overflow" in error_of(r, "AMEM.WORK.SET", "s1", "big", "1", "MERGE", "INCR")
    assert cmd(r, "AMEM.WORK.GET", "s1", "big") == b"9223372036854775807"
    assert cmd(r, "AMEM.WORK.GET", "s1", "n") is None


def test_merge_max_min(r: redis.Redis) -> None:
    assert cmd(r, "AMEM.WORK.SET", "s1", "hi", "3", "MERGE", "MAX") == b"3"
    assert cmd(r, "AMEM.WORK.SET", "s1", "hi", "7", "MERGE", "MAX") == b"7"
    assert cmd(r, "AMEM.WORK.SET", "s1", "hi", "5", "MERGE", "MAX") == b"7"
    assert cmd(r, "AMEM.WORK.SET", "s1", "hi", "7.5", "MERGE", "MAX") == b"7.5"
    assert cmd(r, "AMEM.WORK.SET", "s1", "lo", "3", "MERGE", "MIN") == b"3"
    assert cmd(r, "AMEM.WORK.SET", "s1", "lo", "-1.25", "MERGE", "MIN") == b"-1.25"
    assert cmd(r, "AMEM.WORK.SET", "s1", "lo", "0", "MERGE", "MIN") == b"-1.25"
    cmd(r, "AMEM.WORK.SET", "s1", "list", "[1]")
    assert "MERGE MAX: the stored value of 'list' is not a number" in error_of(
        r, "AMEM.WORK.SET", "s1", "list", "1", "MERGE", "MAX"
    )


def test_merge_with_nx_xx_and_ttl(r: redis.Redis) -> None:
    assert cmd(r, "AMEM.WORK.SET", "s1", "n", "1", "XX", "MERGE", "INCR") is None
    assert cmd(r, "AMEM.WORK.SET", "s1", "n", "1", "NX", "MERGE", "INCR") == b"1"
    assert cmd(r, "AMEM.WORK.SET", "s1", "n", "1", "NX", "MERGE", "INCR") is None
    assert cmd(r, "AMEM.WORK.SET", "s1", "n", "2", "XX", "MERGE", "INCR", "PX", "60000") == b"3"
    assert 50_000 <= cmd(r, "AMEM.WORK.TTL", "s1", "n") <= 60_000
    assert cmd(r, "AMEM.WORK.SET", "s1", "n", "2", "MERGE", "INCR", "KEEPTTL") == b"5"
    assert 50_000 <= cmd(r, "AMEM.WORK.TTL", "s1", "n") <= 60_000
    assert cmd(r, "AMEM.WORK.SET", "s1", "n", "2", "MERGE", "INCR") == b"7"
    assert cmd(r, "AMEM.WORK.TTL", "s1", "n") == -1


# --- DEL / CLEAR / EXPIRE -----------------------------------------------------------


def test_del(r: redis.Redis) -> None:
    for k in ("a", "b", "c"):
        cmd(r, "AMEM.WORK.SET", "s1", k, "v")
    assert cmd(r, "AMEM.WORK.DEL", "s1", "a", "zz", "b", "a") == 2
    assert cmd(r, "AMEM.WORK.DEL", "s1", "a") == 0
    assert cmd(r, "AMEM.WORK.DEL", "nope", "a") == 0
    assert record(cmd(r, "AMEM.WORK.GETALL", "s1")) == {b"c": b"v"}


def test_clear(r: redis.Redis) -> None:
    for k in ("a", "b", "c"):
        cmd(r, "AMEM.WORK.SET", "s1", k, "v")
    cmd(r, "AMEM.WORK.SET", "s2", "a", "v")
    assert cmd(r, "AMEM.WORK.CLEAR", "s1") == 3
    assert cmd(r, "AMEM.WORK.CLEAR", "s1") == 0
    assert cmd(r, "AMEM.WORK.LEN", "s1") == 0
    assert cmd(r, "AMEM.WORK.LEN", "s2") == 1


def test_expire_whole_session(r: redis.Redis) -> None:
    assert cmd(r, "AMEM.WORK.EXPIRE", "nope", "10") == 0
    cmd(r, "AMEM.WORK.SET", "s1", "a", "1")
    cmd(r, "AMEM.WORK.SET", "s1", "b", "2", "PX", "2000")
    assert cmd(r, "AMEM.WORK.EXPIRE", "s1", "10") == 1
    # the effective TTL is the earlier of the key's and the session's
    assert 9_000 <= cmd(r, "AMEM.WORK.TTL", "s1", "a") <= 10_000
    assert 1_000 <= cmd(r, "AMEM.WORK.TTL", "s1", "b") <= 2_000
    cmd(r, "AMEM.WORK.SET", "s1", "c", "3", "TTL", "100")
    assert 9_000 <= cmd(r, "AMEM.WORK.TTL", "s1", "c") <= 10_000
    assert "s 'abc'" in error_of(r, "AMEM.WORK.EXPIRE", "s1", "abc")
    assert "invalid expire time" in error_of(r, "AMEM.WORK.EXPIRE", "s1", "9223372036854775807")


def test_expire_session_takes_every_key(r: redis.Redis) -> None:
    cmd(r, "AMEM.WORK.SET", "s1", "a", "1")
    cmd(r, "AMEM.WORK.SET", "s1", "b", "2")
    assert cmd(r, "AMEM.WORK.EXPIRE", "s1", "1") == 1
    time.sleep(1.1)
    assert cmd(r, "AMEM.WORK.LEN", "s1") == 0
    assert record(cmd(r, "AMEM.WORK.GETALL", "s1")) == {}
    assert cmd(r, "AMEM.WORK.TTL", "s1", "a") == -2
    assert cmd(r, "AMEM.WORK.EXPIRE", "s1", "10") == 0
    # a new scratchpad under the same session starts clean, without the old keys or deadline
    cmd(r, "AMEM.WORK.SET", "s1", "c", "3")
    assert record(cmd(r, "AMEM.WORK.GETALL", "s1")) == {b"c": b"3"}
    assert cmd(r, "AMEM.WORK.TTL", "s1", "c") == -1


def test_expire_zero_or_negative_deletes_at_once(r: redis.Redis) -> None:
    cmd(r, "AMEM.WORK.SET", "s1", "a", "1")
    assert cmd(r, "AMEM.WORK.EXPIRE", "s1", "0") == 1
    assert cmd(r, "AMEM.WORK.LEN", "s1") == 0
    cmd(r, "AMEM.WORK.SET", "s1", "a", "1")
    assert cmd(r, "AMEM.WORK.EXPIRE", "s1", "-5") == 1
    assert cmd(r, "AMEM.WORK.GET", "s1", "a") is None


def test_active_expiry_removes_sessions(r: redis.Redis) -> None:
    for i in range(10):
        cmd(r, "AMEM.WORK.SET", f"s{i}", "k", "v", "PX", "50")
    cmd(r, "AMEM.WORK.SET", "keep", "k", "v")
    time.sleep(0.4)
    reply = cmd(r, "AMEM.SCAN", "0", "TYPE", "work", "COUNT", "1000")
    assert isinstance(reply, list)
    assert reply[1] == [b"keep"]


# --- errors and arity -------------------------------------------------------------


def test_error_codes_on_the_wire(server: HotkvProcess, r: redis.Redis) -> None:
    cmd(r, "AMEM.WORK.SET", "s1", "w", "word")
    payload = (
        b"AMEM.WORK.SET s1 w 1 MERGE INCR\r\nAMEM.WORK.SET s1 k v NX XX\r\nAMEM.WORK.TTL s1\r\n"
    )
    lines = raw_roundtrip(server.port, payload).split(b"\r\n")
    assert lines[0] == b"-ERR MERGE INCR: the stored value of 'w' is not a number"
    assert lines[1] == b"-ERR syntax error: NX and XX cannot be used together"
    assert lines[2] == b"-ERR wrong number of arguments for 'amem.work.ttl' command"


def test_arity_errors(r: redis.Redis) -> None:
    for args in (
        ["AMEM.WORK.SET", "s", "k"],
        ["AMEM.WORK.GET", "s"],
        ["AMEM.WORK.MGET", "s"],
        ["AMEM.WORK.DEL", "s"],
        ["AMEM.WORK.GETALL"],
        ["AMEM.WORK.LEN", "s", "x"],
        ["AMEM.WORK.TTL", "s"],
        ["AMEM.WORK.EXPIRE", "s"],
        ["AMEM.WORK.CLEAR", "s", "x"],
    ):
        assert "wrong number of arguments" in error_of(r, *args)


# --- MULTI / EXEC ----------------------------------------------------------------


def test_multi_exec(r: redis.Redis) -> None:
    pipe = r.pipeline(transaction=True)
    pipe.execute_command("AMEM.WORK.SET", "s1", "n", "1", "MERGE", "INCR")
    pipe.execute_command("AMEM.WORK.SET", "s1", "n", "2", "MERGE", "INCR")
    pipe.execute_command("AMEM.WORK.SET", "s1", "log", "x", "MERGE", "APPEND")
    pipe.execute_command("AMEM.WORK.GET", "s1", "n")
    pipe.execute_command("AMEM.WORK.LEN", "s1")
    pipe.execute_command("AMEM.WORK.DEL", "s1", "log")
    pipe.execute_command("AMEM.WORK.GETALL", "s1")
    results = pipe.execute()
    assert results[:6] == [b"1", b"3", b'["x"]', b"3", 2, 1]
    assert record(results[6]) == {b"n": b"3"}


def test_multi_exec_across_stores(r: redis.Redis) -> None:
    cmd(r, "AMEM.CONV.CREATE", "s1")
    pipe = r.pipeline(transaction=True)
    pipe.execute_command("AMEM.CONV.APPEND", "s1", "user", "hi", "WITHSEQ")
    pipe.execute_command("AMEM.WORK.SET", "s1", "last_turn", "1")
    pipe.execute_command("AMEM.WORK.SET", "s1", "bad", "x", "MERGE", "INCR")
    results = pipe.execute(raise_on_error=False)
    assert results[0] == 1
    assert results[1] in OK_REPLIES
    assert isinstance(results[2], redis.ResponseError)
    assert cmd(r, "AMEM.WORK.GET", "s1", "last_turn") == b"1"
    assert cmd(r, "AMEM.WORK.GET", "s1", "bad") is None


def test_command_info_describes_work(r: redis.Redis) -> None:
    info = r.execute_command("COMMAND", "INFO", "amem.work.set", "amem.work.get")
    set_, get = info["amem.work.set"], info["amem.work.get"]
    assert set_["arity"] == -4
    assert {str(f) for f in set_["flags"]} >= {"write", "denyoom"}
    assert {str(f) for f in get["flags"]} >= {"readonly", "fast"}
    assert (set_["first_key_pos"], set_["last_key_pos"], set_["step_count"]) == (1, 1, 1)
