"""AMEM.SUMMARY.* end to end against a real hotkv-server, in RESP2 and RESP3."""

from __future__ import annotations

import time
from typing import Any

import pytest
import redis

from helpers import HotkvProcess, raw_roundtrip, record


def cmd(r: redis.Redis, *args: Any) -> Any:
    return r.execute_command(*args)


def error(r: redis.Redis, *args: Any) -> str:
    """The error text of a call (redis-py drops a leading ``ERR ``, keeps other codes)."""
    with pytest.raises(redis.ResponseError) as info:
        r.execute_command(*args)
    return str(info.value)


def get(r: redis.Redis, agent: str) -> dict[bytes, Any] | None:
    reply = cmd(r, "AMEM.SUMMARY.GET", agent, "RECORD")
    return None if reply is None else record(reply)


def test_set_and_get(r: redis.Redis) -> None:
    before = int(time.time() * 1000)
    assert cmd(r, "AMEM.SUMMARY.SET", "bot", "The user prefers short answers.") == 1
    got = get(r, "bot")
    assert got is not None
    assert list(got) == [b"text", b"version", b"updated"]  # no upto: left out
    assert got[b"text"] == b"The user prefers short answers."
    assert got[b"version"] == 1
    assert before - 1000 <= got[b"updated"] <= int(time.time() * 1000) + 1000
    assert cmd(r, "AMEM.SUMMARY.SET", "bot", "v2", "UPTO", "1700000000000-3") == 2
    got = get(r, "bot")
    assert got is not None
    assert list(got) == [b"text", b"version", b"updated", b"upto"]
    assert (got[b"text"], got[b"version"], got[b"upto"]) == (b"v2", 2, b"1700000000000-3")


def test_set_without_upto_clears_it(r: redis.Redis) -> None:
    cmd(r, "AMEM.SUMMARY.SET", "bot", "a", "UPTO", "5-0")
    cmd(r, "AMEM.SUMMARY.SET", "bot", "b")
    got = get(r, "bot")
    assert got is not None and b"upto" not in got


def test_get_missing_is_null(r: redis.Redis) -> None:
    assert cmd(r, "AMEM.SUMMARY.GET", "nobody") is None


def test_text_is_binary_safe(r: redis.Redis) -> None:
    text = b"\x00\xff line\r\nnext"
    cmd(r, "AMEM.SUMMARY.SET", "bot", text)
    got = get(r, "bot")
    assert got is not None and got[b"text"] == text


def test_append_adds_lines(r: redis.Redis) -> None:
    assert cmd(r, "AMEM.SUMMARY.APPEND", "bot", "first") == 1  # creates: no leading newline
    assert cmd(r, "AMEM.SUMMARY.APPEND", "bot", "second") == 2
    got = get(r, "bot")
    assert got is not None
    assert (got[b"text"], got[b"version"]) == (b"first\nsecond", 2)
    cmd(r, "AMEM.SUMMARY.SET", "bot", "", "UPTO", "9-1")
    assert cmd(r, "AMEM.SUMMARY.APPEND", "bot", "fresh") == 4
    got = get(r, "bot")
    assert got is not None
    assert (got[b"text"], got[b"upto"]) == (b"fresh", b"9-1")  # APPEND keeps upto


def test_ifversion(r: redis.Redis) -> None:
    assert cmd(r, "AMEM.SUMMARY.SET", "bot", "a", "IFVERSION", 0) == 1  # 0 = none yet
    assert error(r, "AMEM.SUMMARY.SET", "bot", "b", "IFVERSION", 0) == (
        "CONFLICT summary of 'bot' is at version 1")
    assert error(r, "AMEM.SUMMARY.APPEND", "bot", "b", "IFVERSION", 7) == (
        "CONFLICT summary of 'bot' is at version 1")
    assert cmd(r, "AMEM.SUMMARY.APPEND", "bot", "b", "ifversion", 1) == 2
    assert cmd(r, "AMEM.SUMMARY.SET", "bot", "c", "IFVERSION", 2, "UPTO", "1-1") == 3
    assert error(r, "AMEM.SUMMARY.APPEND", "other", "x", "IFVERSION", 1) == (
        "CONFLICT summary of 'other' is at version 0")
    assert cmd(r, "AMEM.SUMMARY.GET", "other") is None  # nothing changed
    got = get(r, "bot")
    assert got is not None and (got[b"text"], got[b"version"]) == (b"c", 3)


def test_del(r: redis.Redis) -> None:
    cmd(r, "AMEM.SUMMARY.SET", "bot", "x")
    assert cmd(r, "AMEM.SUMMARY.DEL", "bot") == 1
    assert cmd(r, "AMEM.SUMMARY.DEL", "bot") == 0
    assert cmd(r, "AMEM.SUMMARY.GET", "bot") is None
    assert cmd(r, "AMEM.SUMMARY.SET", "bot", "again") == 1  # versions restart


def test_errors(r: redis.Redis) -> None:
    assert error(r, "AMEM.SUMMARY.SET", "", "x") == "invalid agent: expected 1..512 bytes, got 0"
    assert error(r, "AMEM.SUMMARY.GET", "") == "invalid agent: expected 1..512 bytes, got 0"
    assert error(r, "AMEM.SUMMARY.SET", "bot", "x", "IFVERSION", -1) == (
        "invalid IFVERSION '-1': expected an integer >= 0")
    assert error(r, "AMEM.SUMMARY.APPEND", "bot", "x", "IFVERSION", "one") == (
        "invalid IFVERSION 'one': expected an integer >= 0")
    assert error(r, "AMEM.SUMMARY.SET", "bot", "x", "IFVERSION") == (
        "syntax error: IFVERSION needs a value")
    assert error(r, "AMEM.SUMMARY.SET", "bot", "x", "UPTO", "yesterday") == (
        "invalid UPTO 'yesterday': expected an event id <ms>-<seq>")
    assert error(r, "AMEM.SUMMARY.SET", "bot", "x", "UPTO", "17") == (
        "invalid UPTO '17': expected an event id <ms>-<seq>")
    assert error(r, "AMEM.SUMMARY.SET", "bot", "x", "TTL", "5") == (
        "invalid option 'TTL': expected IFVERSION or UPTO")
    assert error(r, "AMEM.SUMMARY.APPEND", "bot", "x", "UPTO", "1-1") == (
        "invalid option 'UPTO': expected IFVERSION")
    assert error(r, "AMEM.SUMMARY.SET", "bot") == (
        "wrong number of arguments for 'amem.summary.set' command")
    assert error(r, "AMEM.SUMMARY.APPEND", "bot") == (
        "wrong number of arguments for 'amem.summary.append' command")
    assert error(r, "AMEM.SUMMARY.GET", "bot", "x") == "invalid option 'x': expected RECORD"
    assert error(r, "AMEM.SUMMARY.DEL") == "wrong number of arguments for 'amem.summary.del' command"
    assert cmd(r, "AMEM.SUMMARY.GET", "bot") is None  # nothing written by a failed call


def test_multi_exec_bump_with_a_conflict_inside(r: redis.Redis) -> None:
    cmd(r, "AMEM.SUMMARY.SET", "bot", "s")
    pipe = r.pipeline(transaction=True)
    pipe.execute_command("AMEM.EPIS.LOG", "bot", "obs", "saw it")
    pipe.execute_command("AMEM.SUMMARY.APPEND", "bot", "late", "IFVERSION", 5)
    pipe.execute_command("AMEM.SUMMARY.APPEND", "bot", "ok", "IFVERSION", 1)
    results = pipe.execute(raise_on_error=False)
    assert isinstance(results[1], redis.ResponseError)
    assert str(results[1]) == "CONFLICT summary of 'bot' is at version 1"
    assert results[2] == 2
    # as in Redis, the other commands of the EXEC ran: the event and the second bump
    assert cmd(r, "AMEM.EPIS.LEN", "bot") == 1
    got = get(r, "bot")
    assert got is not None and got[b"text"] == b"s\nok"


def test_watch_on_the_agent_aborts_a_concurrent_bump(r: redis.Redis, server: HotkvProcess) -> None:
    cmd(r, "AMEM.SUMMARY.SET", "bot", "s")
    other = server.client()
    with r.pipeline(transaction=True) as pipe:
        pipe.watch("bot")
        other.execute_command("AMEM.SUMMARY.APPEND", "bot", "from elsewhere")
        pipe.multi()
        pipe.execute_command("AMEM.SUMMARY.SET", "bot", "mine")
        with pytest.raises(redis.WatchError):
            pipe.execute()
    other.close()
    got = get(r, "bot")
    assert got is not None and got[b"text"] == b"s\nfrom elsewhere"


def test_command_info(r: redis.Redis) -> None:
    info = cmd(r, "COMMAND", "INFO", "amem.summary.set", "amem.summary.append",
               "amem.summary.get", "amem.summary.del")
    expected = {
        "amem.summary.set": (-3, {"write", "denyoom"}),
        "amem.summary.append": (-3, {"write", "denyoom"}),
        "amem.summary.get": (-2, {"readonly", "fast"}),
        "amem.summary.del": (2, {"write"}),
    }
    for name, (arity, flags) in expected.items():
        spec = info[name]
        assert spec["arity"] == arity
        assert {f.decode() if isinstance(f, bytes) else f for f in spec["flags"]} == flags
        assert (spec["first_key_pos"], spec["last_key_pos"], spec["step_count"]) == (1, 1, 1)


def test_raw_conflict_reply(server: HotkvProcess) -> None:
    payload = (b"*3\r\n$16\r\nAMEM.SUMMARY.SET\r\n$3\r\nraw\r\n$1\r\nx\r\n"
               b"*5\r\n$16\r\nAMEM.SUMMARY.SET\r\n$3\r\nraw\r\n$1\r\ny\r\n$9\r\nIFVERSION\r\n$1\r\n9\r\n"
               b"*2\r\n$16\r\nAMEM.SUMMARY.DEL\r\n$3\r\nraw\r\n")
    assert raw_roundtrip(server.port, payload) == (
        b":1\r\n-CONFLICT summary of 'raw' is at version 1\r\n:1\r\n")
