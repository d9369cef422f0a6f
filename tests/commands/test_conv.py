"""AMEM.CONV.* end to end through redis-py, in RESP2 and RESP3."""

from __future__ import annotations

import time

import pytest
import redis

from helpers import HotkvProcess, raw_roundtrip, record, records


def cmd(r: redis.Redis, *args: object) -> object:
    return r.execute_command(*args)


def error_of(r: redis.Redis, *args: object) -> str:
    with pytest.raises(redis.ResponseError) as info:
        r.execute_command(*args)
    return str(info.value)


def now_ms() -> int:
    return time.time_ns() // 1_000_000


# --- CREATE ----------------------------------------------------------------------


def test_create_defaults(r: redis.Redis) -> None:
    before = now_ms()
    assert cmd(r, "AMEM.CONV.CREATE", "s1") in (b"OK", "OK", True)
    info = record(cmd(r, "AMEM.CONV.INFO", "s1"))
    assert list(info) == [b"window", b"ttl", b"turns", b"appended", b"created", b"updated"]
    assert info[b"window"] == 50
    assert info[b"ttl"] == -1
    assert info[b"turns"] == 0
    assert info[b"appended"] == 0
    assert before <= info[b"created"] <= now_ms()
    assert info[b"updated"] == info[b"created"]


def test_create_with_window_and_ttl(r: redis.Redis) -> None:
    cmd(r, "amem.conv.create", "s1", "window", "3", "ttl", "100")
    info = record(cmd(r, "AMEM.CONV.INFO", "s1"))
    assert info[b"window"] == 3
    assert 99_000 <= info[b"ttl"] <= 100_000
    cmd(r, "AMEM.CONV.CREATE", "s2", "PX", "5000")
    assert 4_000 <= record(cmd(r, "AMEM.CONV.INFO", "s2"))[b"ttl"] <= 5_000


def test_create_existing_is_exists(r: redis.Redis) -> None:
    cmd(r, "AMEM.CONV.CREATE", "session-42")
    assert error_of(r, "AMEM.CONV.CREATE", "session-42").startswith(
        "EXISTS conversation 'session-42' already exists"
    )


def test_update_changes_only_named_settings(r: redis.Redis) -> None:
    cmd(r, "AMEM.CONV.CREATE", "s1", "WINDOW", "10", "TTL", "100")
    for i in range(6):
        cmd(r, "AMEM.CONV.APPEND", "s1", "user", f"m{i}")
    assert cmd(r, "AMEM.CONV.CREATE", "s1", "WINDOW", "2", "UPDATE") in (b"OK", "OK", True)
    # a smaller window drops the oldest turns at once
    assert cmd(r, "AMEM.CONV.LEN", "s1") == 2
    assert [t[b"seq"] for t in records(cmd(r, "AMEM.CONV.WINDOW", "s1"))] == [5, 6]
    info = record(cmd(r, "AMEM.CONV.INFO", "s1"))
    assert info[b"window"] == 2
    assert info[b"appended"] == 6
    assert 90_000 <= info[b"ttl"] <= 100_000  # TTL not named: kept
    cmd(r, "AMEM.CONV.CREATE", "s1", "UPDATE", "PX", "200000")
    info = record(cmd(r, "AMEM.CONV.INFO", "s1"))
    assert info[b"window"] == 2
    assert 190_000 <= info[b"ttl"] <= 200_000
    # the sequence goes on after an update
    assert cmd(r, "AMEM.CONV.APPEND", "s1", "user", "next", "WITHSEQ") == 7


def test_update_missing_is_notfound(r: redis.Redis) -> None:
    assert error_of(r, "AMEM.CONV.CREATE", "session-42", "UPDATE") == (
        "NOTFOUND session not found: 'session-42'; create it with AMEM.CONV.CREATE"
    )


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["WINDOW", "0"], "WINDOW '0'"),
        (["WINDOW", "100001"], "100000"),
        (["WINDOW", "abc"], "WINDOW 'abc'"),
        (["WINDOW"], "WINDOW needs a value"),
        (["TTL", "0"], "TTL '0'"),
        (["TTL", "-5"], "TTL '-5'"),
        (["PX", "0"], "PX '0'"),
        (["PX", "1.5"], "PX '1.5'"),
        (["TTL", "1", "PX", "1000"], "TTL and PX"),
        (["FOO"], "option 'FOO'"),
    ],
)
def test_create_bad_options(r: redis.Redis, args: list[str], fragment: str) -> None:
    message = error_of(r, "AMEM.CONV.CREATE", "s1", *args)
    assert fragment in message
    assert cmd(r, "AMEM.CONV.INFO", "s1") is None


def test_create_window_bounds_accepted(r: redis.Redis) -> None:
    cmd(r, "AMEM.CONV.CREATE", "a", "WINDOW", "1")
    cmd(r, "AMEM.CONV.CREATE", "b", "WINDOW", "100000")
    assert record(cmd(r, "AMEM.CONV.INFO", "a"))[b"window"] == 1
    assert record(cmd(r, "AMEM.CONV.INFO", "b"))[b"window"] == 100000


def test_empty_session_id_is_err(r: redis.Redis) -> None:
    assert "session" in error_of(r, "AMEM.CONV.CREATE", "")


# --- APPEND / WINDOW / LEN --------------------------------------------------------


def test_append_returns_sequence_and_window_returns_records(r: redis.Redis) -> None:
    cmd(r, "AMEM.CONV.CREATE", "s1")
    before = now_ms()
    assert cmd(r, "AMEM.CONV.APPEND", "s1", "SYSTEM", "be brief", "WITHSEQ") == 1
    assert cmd(r, "AMEM.CONV.APPEND", "s1", "User", "hi", "WITHSEQ") == 2
    assert cmd(r, "AMEM.CONV.APPEND", "s1", "assistant", "hello", "META", '{"model":"x"}', "WITHSEQ") == 3
    assert cmd(r, "AMEM.CONV.APPEND", "s1", "tool", b"\x00bin\xff", "meta", "{}", "WITHSEQ") == 4
    turns = records(cmd(r, "AMEM.CONV.WINDOW", "s1"))
    assert [list(t) for t in turns] == [
        [b"seq", b"role", b"content", b"ts"],
        [b"seq", b"role", b"content", b"ts"],
        [b"seq", b"role", b"content", b"ts", b"meta"],
        [b"seq", b"role", b"content", b"ts", b"meta"],
    ]
    assert [(t[b"seq"], t[b"role"], t[b"content"]) for t in turns] == [
        (1, b"system", b"be brief"),
        (2, b"user", b"hi"),
        (3, b"assistant", b"hello"),
        (4, b"tool", b"\x00bin\xff"),
    ]
    assert turns[2][b"meta"] == b'{"model":"x"}'
    assert turns[3][b"meta"] == b"{}"
    assert all(before <= t[b"ts"] <= now_ms() for t in turns)
    assert [t[b"ts"] for t in turns] == sorted(t[b"ts"] for t in turns)
    assert cmd(r, "AMEM.CONV.LEN", "s1") == 4
    info = record(cmd(r, "AMEM.CONV.INFO", "s1"))
    assert info[b"updated"] == turns[-1][b"ts"]
    assert info[b"appended"] == 4


def test_window_slides_and_last_n(r: redis.Redis) -> None:
    cmd(r, "AMEM.CONV.CREATE", "s1", "WINDOW", "3")
    for i in range(1, 6):
        assert cmd(r, "AMEM.CONV.APPEND", "s1", "user", f"m{i}", "WITHSEQ") == i
    assert [t[b"content"] for t in records(cmd(r, "AMEM.CONV.WINDOW", "s1"))] == [
        b"m3",
        b"m4",
        b"m5",
    ]
    assert [t[b"seq"] for t in records(cmd(r, "AMEM.CONV.WINDOW", "s1", "2"))] == [4, 5]
    assert [t[b"seq"] for t in records(cmd(r, "AMEM.CONV.WINDOW", "s1", "10"))] == [3, 4, 5]
    assert cmd(r, "AMEM.CONV.WINDOW", "s1", "0") == []
    assert cmd(r, "AMEM.CONV.LEN", "s1") == 3
    info = record(cmd(r, "AMEM.CONV.INFO", "s1"))
    assert (info[b"turns"], info[b"appended"]) == (3, 5)


def test_window_bad_count_and_extra_args(r: redis.Redis) -> None:
    cmd(r, "AMEM.CONV.CREATE", "s1")
    assert "n '-1'" in error_of(r, "AMEM.CONV.WINDOW", "s1", "-1")
    assert "n 'x'" in error_of(r, "AMEM.CONV.WINDOW", "s1", "x")
    assert "unexpected argument 'extra'" in error_of(r, "AMEM.CONV.WINDOW", "s1", "1", "extra")


def test_missing_session_reads(r: redis.Redis) -> None:
    assert cmd(r, "AMEM.CONV.WINDOW", "nope") == []
    assert cmd(r, "AMEM.CONV.WINDOW", "nope", "5") == []
    assert cmd(r, "AMEM.CONV.LEN", "nope") == 0
    assert cmd(r, "AMEM.CONV.INFO", "nope") is None


def test_append_to_missing_is_notfound(r: redis.Redis) -> None:
    assert error_of(r, "AMEM.CONV.APPEND", "session-42", "user", "hi") == (
        "NOTFOUND session not found: 'session-42'; create it with AMEM.CONV.CREATE"
    )
    assert cmd(r, "AMEM.CONV.LEN", "session-42") == 0


def test_append_bad_role_and_meta(r: redis.Redis) -> None:
    cmd(r, "AMEM.CONV.CREATE", "s1")
    assert error_of(r, "AMEM.CONV.APPEND", "s1", "bot", "x") == (
        "invalid role 'bot': expected one of system|user|assistant|tool"
    )
    for meta in ("[1,2]", "not json", '"str"', "{bad", "1"):
        assert "META" in error_of(r, "AMEM.CONV.APPEND", "s1", "user", "x", "META", meta)
    assert "META needs a value" in error_of(r, "AMEM.CONV.APPEND", "s1", "user", "x", "META")
    assert "option 'FOO'" in error_of(r, "AMEM.CONV.APPEND", "s1", "user", "x", "FOO", "y")
    # nothing was appended by the failed calls
    assert cmd(r, "AMEM.CONV.LEN", "s1") == 0
    assert cmd(r, "AMEM.CONV.APPEND", "s1", "user", "ok", "WITHSEQ") == 1


def test_error_codes_on_the_wire(server: HotkvProcess, r: redis.Redis) -> None:
    cmd(r, "AMEM.CONV.CREATE", "s1")
    payload = (
        b"AMEM.CONV.APPEND s1 bot x\r\n"
        b"AMEM.CONV.APPEND nope user x\r\n"
        b"AMEM.CONV.CREATE s1\r\n"
        b"AMEM.CONV.CREATE s2 WINDOW 0\r\n"
        b"AMEM.CONV.LEN\r\n"
    )
    lines = raw_roundtrip(server.port, payload).split(b"\r\n")
    assert lines[0] == b"-ERR invalid role 'bot': expected one of system|user|assistant|tool"
    assert lines[1] == b"-NOTFOUND session not found: 'nope'; create it with AMEM.CONV.CREATE"
    assert lines[2].startswith(b"-EXISTS ")
    assert lines[3].startswith(b"-ERR invalid WINDOW '0': expected an integer 1..100000")
    assert lines[4] == b"-ERR wrong number of arguments for 'amem.conv.len' command"


def test_arity_errors(r: redis.Redis) -> None:
    for args in (
        ["AMEM.CONV.CREATE"],
        ["AMEM.CONV.APPEND", "s", "user"],
        ["AMEM.CONV.WINDOW"],
        ["AMEM.CONV.INFO", "a", "b"],
        ["AMEM.CONV.DEL"],
    ):
        assert "wrong number of arguments" in error_of(r, *args)


# --- DEL -------------------------------------------------------------------------


def test_del_counts_existing(r: redis.Redis) -> None:
    cmd(r, "AMEM.CONV.CREATE", "a")
    cmd(r, "AMEM.CONV.CREATE", "b")
    cmd(r, "AMEM.CONV.APPEND", "a", "user", "x")
    assert cmd(r, "AMEM.CONV.DEL", "a", "b", "c", "a") == 2
    assert cmd(r, "AMEM.CONV.DEL", "a") == 0
    assert cmd(r, "AMEM.CONV.INFO", "a") is None
    # recreated: a new life, numbering starts again
    cmd(r, "AMEM.CONV.CREATE", "a")
    assert cmd(r, "AMEM.CONV.APPEND", "a", "user", "x", "WITHSEQ") == 1


# --- TTL -------------------------------------------------------------------------


def test_idle_ttl_expires_and_append_restarts_it(r: redis.Redis) -> None:
    cmd(r, "AMEM.CONV.CREATE", "s1", "PX", "600")
    time.sleep(0.4)
    cmd(r, "AMEM.CONV.APPEND", "s1", "user", "still here")  # restarts the 600 ms
    time.sleep(0.4)  # past the first deadline, before the restarted one
    assert cmd(r, "AMEM.CONV.LEN", "s1") == 1
    assert record(cmd(r, "AMEM.CONV.INFO", "s1"))[b"ttl"] > 0
    time.sleep(0.5)
    assert cmd(r, "AMEM.CONV.INFO", "s1") is None
    assert cmd(r, "AMEM.CONV.WINDOW", "s1") == []
    assert cmd(r, "AMEM.CONV.LEN", "s1") == 0
    assert error_of(r, "AMEM.CONV.APPEND", "s1", "user", "x").startswith("NOTFOUND")
    assert cmd(r, "AMEM.CONV.DEL", "s1") == 0
    # an expired conversation can be created again
    cmd(r, "AMEM.CONV.CREATE", "s1")
    assert cmd(r, "AMEM.CONV.APPEND", "s1", "user", "x", "WITHSEQ") == 1


def test_reads_do_not_restart_the_idle_ttl(r: redis.Redis) -> None:
    cmd(r, "AMEM.CONV.CREATE", "s1", "PX", "150")
    cmd(r, "AMEM.CONV.APPEND", "s1", "user", "x")
    for _ in range(4):
        cmd(r, "AMEM.CONV.WINDOW", "s1")
        cmd(r, "AMEM.CONV.INFO", "s1")
        time.sleep(0.05)
    time.sleep(0.1)
    assert cmd(r, "AMEM.CONV.LEN", "s1") == 0


def test_active_expiry_removes_idle_sessions(r: redis.Redis) -> None:
    for i in range(20):
        cmd(r, "AMEM.CONV.CREATE", f"s{i}", "PX", "50")
    cmd(r, "AMEM.CONV.CREATE", "keep")
    time.sleep(0.4)  # several active-expiry cycles of 100 ms
    reply = cmd(r, "AMEM.SCAN", "0", "TYPE", "conv", "COUNT", "1000")
    assert isinstance(reply, list)
    ids: list[bytes] = []
    cursor = reply
    while True:
        ids.extend(cursor[1])
        if cursor[0] in (b"0", 0):
            break
        cursor = cmd(r, "AMEM.SCAN", cursor[0], "TYPE", "conv", "COUNT", "1000")
    assert ids == [b"keep"]


# --- MULTI / EXEC ----------------------------------------------------------------


def test_multi_exec(r: redis.Redis) -> None:
    pipe = r.pipeline(transaction=True)
    pipe.execute_command("AMEM.CONV.CREATE", "s1", "WINDOW", "2")
    pipe.execute_command("AMEM.CONV.APPEND", "s1", "user", "a", "WITHSEQ")
    pipe.execute_command("AMEM.CONV.APPEND", "s1", "assistant", "b", "WITHSEQ")
    pipe.execute_command("AMEM.CONV.APPEND", "s1", "user", "c", "WITHSEQ")
    pipe.execute_command("AMEM.CONV.LEN", "s1")
    pipe.execute_command("AMEM.CONV.WINDOW", "s1", "1")
    results = pipe.execute()
    assert results[1:5] == [1, 2, 3, 2]
    assert [t[b"content"] for t in records(results[5])] == [b"c"]
    # every turn of the block carries the same clock snapshot
    assert len({t[b"ts"] for t in records(cmd(r, "AMEM.CONV.WINDOW", "s1"))}) == 1


def test_multi_exec_error_inside_does_not_stop_others(r: redis.Redis) -> None:
    pipe = r.pipeline(transaction=True)
    pipe.execute_command("AMEM.CONV.APPEND", "nope", "user", "a")
    pipe.execute_command("AMEM.CONV.CREATE", "s1")
    pipe.execute_command("AMEM.CONV.APPEND", "s1", "user", "a", "WITHSEQ")
    results = pipe.execute(raise_on_error=False)
    assert isinstance(results[0], redis.ResponseError)
    assert str(results[0]).startswith("NOTFOUND")
    assert results[2] == 1


def test_multi_with_arity_error_aborts(r: redis.Redis) -> None:
    pipe = r.pipeline(transaction=True)
    pipe.execute_command("AMEM.CONV.CREATE", "s1")
    pipe.execute_command("AMEM.CONV.LEN")
    with pytest.raises(redis.ResponseError):
        pipe.execute()
    assert cmd(r, "AMEM.CONV.INFO", "s1") is None


def test_command_info_describes_conv(r: redis.Redis) -> None:
    # redis-py parses COMMAND INFO into a dict per command name
    info = r.execute_command("COMMAND", "INFO", "amem.conv.append", "amem.conv.del")
    append, delete = info["amem.conv.append"], info["amem.conv.del"]
    assert append["arity"] == -4
    assert {str(f) for f in append["flags"]} >= {"write", "denyoom"}
    assert (append["first_key_pos"], append["last_key_pos"], append["step_count"]) == (1, 1, 1)
    assert (delete["first_key_pos"], delete["last_key_pos"], delete["step_count"]) == (1, -1, 1)
