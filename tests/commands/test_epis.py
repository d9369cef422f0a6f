"""AMEM.EPIS.* end to end against a real hotkv-server, in RESP2 and RESP3."""

from __future__ import annotations

import time
from typing import Any

import pytest
import redis

from helpers import HotkvProcess, raw_roundtrip, records


def cmd(r: redis.Redis, *args: Any) -> Any:
    return r.execute_command(*args)


def error(r: redis.Redis, *args: Any) -> str:
    """The error text of a call (redis-py drops a leading ``ERR ``, keeps other codes)."""
    with pytest.raises(redis.ResponseError) as info:
        r.execute_command(*args)
    return str(info.value)


def parse_id(raw: bytes) -> tuple[int, int]:
    ms, seq = raw.split(b"-")
    return int(ms), int(seq)


def log_many(r: redis.Redis, agent: bytes, events: list[tuple[bytes, bytes]]) -> list[bytes]:
    return [cmd(r, "AMEM.EPIS.LOG", agent, type_, text, "WITHID") for type_, text in events]


# --- LOG ---------------------------------------------------------------------------------

def test_log_returns_strictly_increasing_stream_ids(r: redis.Redis) -> None:
    before = int(time.time() * 1000)
    pipe = r.pipeline(transaction=False)
    for i in range(200):  # many land in the same ms: the seq part counts up
        pipe.execute_command("AMEM.EPIS.LOG", "agent-1", "action", b"step %d" % i, "WITHID")
    ids = [parse_id(x) for x in pipe.execute()]
    after = int(time.time() * 1000)
    assert ids == sorted(set(ids))
    assert before - 1000 <= ids[0][0] <= ids[-1][0] <= after + 1000
    assert any(seq > 0 for _, seq in ids)
    assert all(seq == 0 or ids[i - 1][0] == ms for i, (ms, seq) in enumerate(ids) if i)
    assert cmd(r, "AMEM.EPIS.LEN", "agent-1") == 200


def test_log_keeps_text_meta_and_source_binary_safe(r: redis.Redis) -> None:
    text = b"\x00\xffbinary\r\ntext"
    event_id = cmd(r, "AMEM.EPIS.LOG", "ag", "tool.call", text, "WITHID", "SOURCE", "planner",
                   "META", '{"tool": "grep", "n": 2}')
    event_id2 = cmd(r, "AMEM.EPIS.LOG", "ag", "obs", "plain", "source", "s2", "meta", "{}", "withid")
    got = records(cmd(r, "AMEM.EPIS.QUERY", "ag"))
    assert got == [
        {b"id": event_id, b"timestamp": parse_id(event_id)[0], b"type": b"tool.call", b"text": text,
         b"source": b"planner", b"meta": b'{"tool": "grep", "n": 2}'},
        {b"id": event_id2, b"timestamp": parse_id(event_id2)[0], b"type": b"obs", b"text": b"plain",
         b"source": b"s2", b"meta": b"{}"},
    ]
    assert list(got[0]) == [b"id", b"timestamp", b"type", b"text", b"source", b"meta"]


def test_log_leaves_absent_fields_out(r: redis.Redis) -> None:
    event_id = cmd(r, "AMEM.EPIS.LOG", "ag", "decision", "chose A", "WITHID")
    (event,) = records(cmd(r, "AMEM.EPIS.QUERY", "ag"))
    assert list(event) == [b"id", b"timestamp", b"type", b"text"]
    assert event[b"id"] == event_id


def test_log_type_token(r: redis.Redis) -> None:
    for good in (b"a", b"x" * 64, b"tool_call.v2-beta", b"0"):
        cmd(r, "AMEM.EPIS.LOG", "ag", good, "t")
    expected = "1..64 bytes of [a-z0-9_.-]"
    assert error(r, "AMEM.EPIS.LOG", "ag", "Action", "t") == (
        f"invalid type 'Action': expected {expected}")
    assert error(r, "AMEM.EPIS.LOG", "ag", "x" * 65, "t") == (
        f"invalid type '{'x' * 65}': expected {expected}")
    assert error(r, "AMEM.EPIS.LOG", "ag", "", "t") == f"invalid type '': expected {expected}"
    assert error(r, "AMEM.EPIS.LOG", "ag", "a b", "t").startswith("invalid type 'a b'")
    assert cmd(r, "AMEM.EPIS.LEN", "ag") == 4


def test_log_errors(r: redis.Redis) -> None:
    assert error(r, "AMEM.EPIS.LOG", "", "action", "t") == "invalid agent: expected 1..512 bytes, got 0"
    assert error(r, "AMEM.EPIS.LOG", "a" * 513, "action", "t") == (
        "invalid agent: expected 1..512 bytes, got 513")
    assert error(r, "AMEM.EPIS.LOG", "ag", "action", "t", "META", "[1]") == (
        "invalid META: expected a JSON object")
    assert error(r, "AMEM.EPIS.LOG", "ag", "action", "t", "META", "{bad") == (
        "invalid META: expected a JSON object")
    assert error(r, "AMEM.EPIS.LOG", "ag", "action", "t", "META") == "syntax error: META needs a value"
    assert error(r, "AMEM.EPIS.LOG", "ag", "action", "t", "SOURCE") == (
        "syntax error: SOURCE needs a value")
    assert error(r, "AMEM.EPIS.LOG", "ag", "action", "t", "TTL", "5") == (
        "invalid option 'TTL': expected METADATA, META, SOURCE or WITHID")
    assert error(r, "AMEM.EPIS.LOG", "ag", "action") == (
        "wrong number of arguments for 'amem.epis.log' command")
    assert cmd(r, "AMEM.EPIS.LEN", "ag") == 0  # nothing half-written


# --- QUERY -------------------------------------------------------------------------------

@pytest.fixture
def ten(r: redis.Redis) -> list[bytes]:
    """Ten events of agent ``ag``: types alternate obs/act, texts e0..e9."""
    return log_many(r, b"ag", [(b"obs" if i % 2 == 0 else b"act", b"e%d" % i) for i in range(10)])


def texts(reply: Any) -> list[bytes]:
    return [event[b"text"] for event in records(reply)]


def test_query_order_limit_rev(r: redis.Redis, ten: list[bytes]) -> None:
    assert texts(cmd(r, "AMEM.EPIS.QUERY", "ag")) == [b"e%d" % i for i in range(10)]
    assert texts(cmd(r, "AMEM.EPIS.QUERY", "ag", "REV")) == [b"e%d" % i for i in range(9, -1, -1)]
    assert texts(cmd(r, "AMEM.EPIS.QUERY", "ag", "LIMIT", 3)) == [b"e0", b"e1", b"e2"]
    assert texts(cmd(r, "AMEM.EPIS.QUERY", "ag", "rev", "limit", 2)) == [b"e9", b"e8"]
    assert [e[b"id"] for e in records(cmd(r, "AMEM.EPIS.QUERY", "ag"))] == ten


def test_query_default_limit_is_100(r: redis.Redis) -> None:
    pipe = r.pipeline(transaction=False)
    for i in range(150):
        pipe.execute_command("AMEM.EPIS.LOG", "big", "t", b"%d" % i)
    pipe.execute()
    assert len(cmd(r, "AMEM.EPIS.QUERY", "big")) == 100
    assert len(cmd(r, "AMEM.EPIS.QUERY", "big", "LIMIT", 10000)) == 150
    assert texts(cmd(r, "AMEM.EPIS.QUERY", "big", "REV"))[0] == b"149"


def test_query_type_filter(r: redis.Redis, ten: list[bytes]) -> None:
    assert texts(cmd(r, "AMEM.EPIS.QUERY", "ag", "TYPE", "act")) == [b"e1", b"e3", b"e5", b"e7", b"e9"]
    assert texts(cmd(r, "AMEM.EPIS.QUERY", "ag", "TYPE", "obs", "REV", "LIMIT", 2)) == [b"e8", b"e6"]
    assert cmd(r, "AMEM.EPIS.QUERY", "ag", "TYPE", "none") == []


def test_query_ranges_by_id(r: redis.Redis, ten: list[bytes]) -> None:
    assert texts(cmd(r, "AMEM.EPIS.QUERY", "ag", "FROM", ten[2], "TO", ten[5])) == [
        b"e2", b"e3", b"e4", b"e5"]  # inclusive at both ends
    assert texts(cmd(r, "AMEM.EPIS.QUERY", "ag", "FROM", ten[8])) == [b"e8", b"e9"]
    assert texts(cmd(r, "AMEM.EPIS.QUERY", "ag", "TO", ten[1])) == [b"e0", b"e1"]
    assert texts(cmd(r, "AMEM.EPIS.QUERY", "ag", "FROM", "-", "TO", "+", "LIMIT", 1)) == [b"e0"]
    assert texts(cmd(r, "AMEM.EPIS.QUERY", "ag", "FROM", ten[2], "TO", ten[7], "TYPE", "act",
                     "REV")) == [b"e7", b"e5", b"e3"]
    assert cmd(r, "AMEM.EPIS.QUERY", "ag", "FROM", ten[5], "TO", ten[2]) == []
    assert cmd(r, "AMEM.EPIS.QUERY", "ag", "FROM", "+") == []


def test_query_ranges_by_ms_timestamp(r: redis.Redis, ten: list[bytes]) -> None:
    first_ms, last_ms = parse_id(ten[0])[0], parse_id(ten[-1])[0]
    # a bare ms covers every seq of that ms: FROM ms = ms-0, TO ms = ms-<max>
    assert len(cmd(r, "AMEM.EPIS.QUERY", "ag", "FROM", first_ms, "TO", last_ms)) == 10
    assert cmd(r, "AMEM.EPIS.QUERY", "ag", "FROM", last_ms + 1) == []
    assert cmd(r, "AMEM.EPIS.QUERY", "ag", "TO", first_ms - 1) == []
    same_ms = [i for i in ten if parse_id(i)[0] == last_ms]
    assert [e[b"id"] for e in records(cmd(r, "AMEM.EPIS.QUERY", "ag", "FROM", last_ms,
                                         "TO", last_ms))] == same_ms
    assert all(e[b"timestamp"] == parse_id(e[b"id"])[0] for e in records(cmd(r, "AMEM.EPIS.QUERY", "ag")))


def test_query_missing_agent_is_empty(r: redis.Redis) -> None:
    assert cmd(r, "AMEM.EPIS.QUERY", "nobody") == []
    assert cmd(r, "AMEM.EPIS.QUERY", "nobody", "TYPE", "x", "REV") == []


def test_query_errors(r: redis.Redis) -> None:
    bound = "a ms timestamp, an event id <ms>-<seq>, - or +"
    assert error(r, "AMEM.EPIS.QUERY", "ag", "FROM", "yesterday") == (
        f"invalid FROM 'yesterday': expected {bound}")
    assert error(r, "AMEM.EPIS.QUERY", "ag", "TO", "5-x") == f"invalid TO '5-x': expected {bound}"
    assert error(r, "AMEM.EPIS.QUERY", "ag", "TO", "-5") == f"invalid TO '-5': expected {bound}"
    assert error(r, "AMEM.EPIS.QUERY", "ag", "FROM", "1-2-3") == (
        f"invalid FROM '1-2-3': expected {bound}")
    assert error(r, "AMEM.EPIS.QUERY", "ag", "LIMIT", 0) == (
        "invalid LIMIT '0': expected an integer 1..10000")
    assert error(r, "AMEM.EPIS.QUERY", "ag", "LIMIT", 10001) == (
        "invalid LIMIT '10001': expected an integer 1..10000")
    assert error(r, "AMEM.EPIS.QUERY", "ag", "LIMIT", "x") == (
        "invalid LIMIT 'x': expected an integer 1..10000")
    assert error(r, "AMEM.EPIS.QUERY", "ag", "TYPE", "Bad!") == (
        "invalid TYPE 'Bad!': expected 1..64 bytes of [a-z0-9_.-]")
    assert error(r, "AMEM.EPIS.QUERY", "ag", "TYPE") == "syntax error: TYPE needs a value"
    assert error(r, "AMEM.EPIS.QUERY", "ag", "SINCE", "1") == (
        "invalid option 'SINCE': expected TYPE, FROM, TO, LIMIT or REV")
    assert error(r, "AMEM.EPIS.QUERY", "") == "invalid agent: expected 1..512 bytes, got 0"
    assert error(r, "AMEM.EPIS.QUERY") == "wrong number of arguments for 'amem.epis.query' command"


# --- LEN, TRIM, DEL ----------------------------------------------------------------------

def test_len(r: redis.Redis, ten: list[bytes]) -> None:
    assert cmd(r, "AMEM.EPIS.LEN", "ag") == 10
    assert cmd(r, "AMEM.EPIS.LEN", "nobody") == 0
    assert error(r, "AMEM.EPIS.LEN", "ag", "x") == "wrong number of arguments for 'amem.epis.len' command"


def test_trim_maxlen(r: redis.Redis, ten: list[bytes]) -> None:
    assert cmd(r, "AMEM.EPIS.TRIM", "ag", "MAXLEN", 10) == 0
    assert cmd(r, "AMEM.EPIS.TRIM", "ag", "maxlen", 4) == 6
    assert texts(cmd(r, "AMEM.EPIS.QUERY", "ag")) == [b"e6", b"e7", b"e8", b"e9"]
    assert cmd(r, "AMEM.EPIS.TRIM", "ag", "MAXLEN", 0) == 4
    assert cmd(r, "AMEM.EPIS.LEN", "ag") == 0
    # the emptied log keeps its last id: new ids still go up
    new_id = cmd(r, "AMEM.EPIS.LOG", "ag", "obs", "after", "WITHID")
    assert parse_id(new_id) > parse_id(ten[-1])
    assert cmd(r, "AMEM.EPIS.TRIM", "nobody", "MAXLEN", 0) == 0


def test_trim_before(r: redis.Redis, ten: list[bytes]) -> None:
    assert cmd(r, "AMEM.EPIS.TRIM", "ag", "BEFORE", ten[0]) == 0
    assert cmd(r, "AMEM.EPIS.TRIM", "ag", "BEFORE", ten[3]) == 3  # strictly before
    assert texts(cmd(r, "AMEM.EPIS.QUERY", "ag", "LIMIT", 1)) == [b"e3"]
    assert cmd(r, "AMEM.EPIS.TRIM", "ag", "BEFORE", "-") == 0
    last_ms = parse_id(ten[-1])[0]
    assert cmd(r, "AMEM.EPIS.TRIM", "ag", "BEFORE", last_ms) == sum(
        1 for i in ten[3:] if parse_id(i)[0] < last_ms)
    left = cmd(r, "AMEM.EPIS.LEN", "ag")
    assert left >= 1
    assert cmd(r, "AMEM.EPIS.TRIM", "ag", "BEFORE", "+") == left
    assert cmd(r, "AMEM.EPIS.LEN", "ag") == 0


def test_trim_errors(r: redis.Redis, ten: list[bytes]) -> None:
    assert error(r, "AMEM.EPIS.TRIM", "ag", "MAXLEN", -1) == (
        "invalid MAXLEN '-1': expected an integer >= 0")
    assert error(r, "AMEM.EPIS.TRIM", "ag", "MAXLEN", "many") == (
        "invalid MAXLEN 'many': expected an integer >= 0")
    assert error(r, "AMEM.EPIS.TRIM", "ag", "BEFORE", "soon") == (
        "invalid BEFORE 'soon': expected a ms timestamp, an event id <ms>-<seq>, - or +")
    assert error(r, "AMEM.EPIS.TRIM", "ag", "MINID", "5") == (
        "invalid trim mode 'MINID': expected one of MAXLEN|BEFORE")
    assert error(r, "AMEM.EPIS.TRIM", "ag", "MAXLEN") == (
        "wrong number of arguments for 'amem.epis.trim' command")
    assert cmd(r, "AMEM.EPIS.LEN", "ag") == 10


def test_del(r: redis.Redis, ten: list[bytes]) -> None:
    assert cmd(r, "AMEM.EPIS.DEL", "ag") == 1
    assert cmd(r, "AMEM.EPIS.DEL", "ag") == 0
    assert cmd(r, "AMEM.EPIS.QUERY", "ag") == []
    assert cmd(r, "AMEM.EPIS.LEN", "ag") == 0
    assert error(r, "AMEM.EPIS.DEL", "ag", "other") == (
        "wrong number of arguments for 'amem.epis.del' command")


def test_separate_id_space_from_summary(r: redis.Redis) -> None:
    cmd(r, "AMEM.EPIS.LOG", "bot", "obs", "x")
    cmd(r, "AMEM.SUMMARY.SET", "bot", "s")
    assert cmd(r, "AMEM.EPIS.DEL", "bot") == 1
    assert cmd(r, "AMEM.SUMMARY.GET", "bot") is not None


# --- transactions, command table, raw protocol ---------------------------------------------

def test_multi_exec_logs_and_bumps_the_summary_atomically(r: redis.Redis) -> None:
    cmd(r, "AMEM.SUMMARY.SET", "bot", "start")
    pipe = r.pipeline(transaction=True)
    pipe.execute_command("AMEM.EPIS.LOG", "bot", "decision", "use tool X", "WITHID")
    pipe.execute_command("AMEM.EPIS.LOG", "bot", "action", "ran tool X", "WITHID")
    pipe.execute_command("AMEM.SUMMARY.APPEND", "bot", "decided on X", "IFVERSION", 1)
    pipe.execute_command("AMEM.EPIS.LEN", "bot")
    first, second, version, length = pipe.execute()
    assert parse_id(first) < parse_id(second)
    assert version == 2 and length == 2
    assert texts(cmd(r, "AMEM.EPIS.QUERY", "bot")) == [b"use tool X", b"ran tool X"]


def test_multi_exec_with_a_queued_error_changes_nothing(r: redis.Redis) -> None:
    pipe = r.pipeline(transaction=True)
    pipe.execute_command("AMEM.EPIS.LOG", "bot", "decision", "x")
    pipe.execute_command("AMEM.EPIS.LOG", "bot")  # wrong arity: queued as an error
    with pytest.raises(redis.ResponseError):
        pipe.execute()
    assert cmd(r, "AMEM.EPIS.LEN", "bot") == 0


def test_command_info(r: redis.Redis) -> None:
    info = cmd(r, "COMMAND", "INFO", "amem.epis.log", "amem.epis.query", "amem.epis.len",
               "amem.epis.trim", "amem.epis.del")
    expected = {
        "amem.epis.log": (-4, {"write", "denyoom"}),
        "amem.epis.query": (-2, {"readonly"}),
        "amem.epis.len": (2, {"readonly", "fast"}),
        "amem.epis.trim": (4, {"write"}),
        "amem.epis.del": (2, {"write"}),
    }
    for name, (arity, flags) in expected.items():
        spec = info[name]
        assert spec["arity"] == arity
        assert {f.decode() if isinstance(f, bytes) else f for f in spec["flags"]} == flags
        assert (spec["first_key_pos"], spec["last_key_pos"], spec["step_count"]) == (1, 1, 1)


def test_raw_error_replies_keep_the_connection(server: HotkvProcess) -> None:
    payload = (b"*4\r\n$13\r\nAMEM.EPIS.LOG\r\n$2\r\nag\r\n$3\r\nBAD\r\n$1\r\nt\r\n"
               b"*2\r\n$13\r\nAMEM.EPIS.LEN\r\n$2\r\nzz\r\n")
    reply = raw_roundtrip(server.port, payload)
    assert reply == (b"-ERR invalid type 'BAD': expected 1..64 bytes of [a-z0-9_.-]\r\n"
                     b":0\r\n")


def test_command_docs_argument_tree(server: HotkvProcess) -> None:
    client = server.client(protocol=3)
    client.response_callbacks.pop("COMMAND", None)  # redis-py parses DOCS as COMMAND INFO
    docs = client.execute_command("COMMAND", "DOCS", "amem.epis.trim", "amem.epis.query")
    client.close()
    agent, mode = docs[b"amem.epis.trim"][b"arguments"]
    assert agent == {b"name": b"agent", b"type": b"key", b"key_spec_index": 0}
    assert mode[b"type"] == b"oneof"
    # each alternative is the tokened value itself, as Redis writes SET's EX seconds|PX ...
    assert [(alt[b"name"], alt[b"token"]) for alt in mode[b"arguments"]] == [
        (b"n", b"MAXLEN"), (b"start", b"BEFORE")]
    query_args = docs[b"amem.epis.query"][b"arguments"]
    assert [a.get(b"token") for a in query_args] == [None, b"TYPE", b"FROM", b"TO", b"LIMIT", b"REV"]
    assert all(a.get(b"flags") == [b"optional"] for a in query_args[1:])


@pytest.mark.parametrize("restart", ["aof-replay", "after-bgrewriteaof"])
def test_log_trim_and_summary_survive_a_restart(restart: str) -> None:
    proc = HotkvProcess("--appendonly", "yes", "--appendfsync", "always").start()
    try:
        r = proc.client(protocol=3)
        ids = log_many(r, b"kept", [(b"obs", b"e%d" % i) for i in range(6)])
        cmd(r, "AMEM.EPIS.LOG", "kept", "act", "with fields", "SOURCE", "s", "META", '{"a":1}')
        assert cmd(r, "AMEM.EPIS.TRIM", "kept", "BEFORE", ids[2]) == 2
        emptied = log_many(r, b"emptied", [(b"obs", b"x"), (b"obs", b"y")])
        assert cmd(r, "AMEM.EPIS.TRIM", "emptied", "MAXLEN", 0) == 2
        log_many(r, b"gone", [(b"obs", b"x")])
        assert cmd(r, "AMEM.EPIS.DEL", "gone") == 1
        cmd(r, "AMEM.SUMMARY.SET", "kept", "base", "UPTO", ids[-1])
        cmd(r, "AMEM.SUMMARY.APPEND", "kept", "more")
        before = cmd(r, "AMEM.EPIS.QUERY", "kept")
        if restart == "after-bgrewriteaof":
            cmd(r, "BGREWRITEAOF")
            for _ in range(500):  # the rewrite swaps files in the background
                if r.info("persistence")["aof_rewrite_in_progress"] == 0:
                    break
                time.sleep(0.02)
        r.close()
        proc.restart()
        r = proc.client(protocol=3)
        assert cmd(r, "AMEM.EPIS.QUERY", "kept") == before
        assert cmd(r, "AMEM.EPIS.LEN", "emptied") == 0
        assert cmd(r, "AMEM.EPIS.LEN", "gone") == 0
        assert sorted(cmd(r, "AMEM.SCAN", 0, "TYPE", "epis")[1]) == [b"emptied", b"kept"]
        # ids keep increasing after the restart, also for the log trimmed to nothing
        assert parse_id(cmd(r, "AMEM.EPIS.LOG", "emptied", "obs", "z", "WITHID")) > parse_id(emptied[-1])
        assert cmd(r, "AMEM.SUMMARY.GET", "kept", "RECORD") == {
            b"text": b"base\nmore", b"version": 2,
            b"updated": cmd(r, "AMEM.SUMMARY.GET", "kept", "RECORD")[b"updated"], b"upto": ids[-1]}
        assert cmd(r, "AMEM.SUMMARY.APPEND", "kept", "after", "IFVERSION", 2) == 3
        r.close()
    finally:
        proc.cleanup()
