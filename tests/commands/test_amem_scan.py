"""AMEM.SCAN and INFO amem end to end against a real hotkv-server, in RESP2 and RESP3."""

from __future__ import annotations

import re
import time
from typing import Any

import pytest
import redis

from helpers import HotkvProcess, raw_roundtrip


def cmd(r: redis.Redis, *args: Any) -> Any:
    return r.execute_command(*args)


def error(r: redis.Redis, *args: Any) -> str:
    with pytest.raises(redis.ResponseError) as info:
        r.execute_command(*args)
    return str(info.value)


def scan(r: redis.Redis, cursor: Any, type_: str, *options: Any) -> tuple[bytes, list[bytes]]:
    reply = cmd(r, "AMEM.SCAN", cursor, "TYPE", type_, *options)
    assert isinstance(reply, list) and len(reply) == 2
    return reply[0], list(reply[1])


def walk(r: redis.Redis, type_: str, *options: Any) -> list[bytes]:
    """Every id of a full walk, in the order returned."""
    cursor: Any = 0
    out: list[bytes] = []
    for _ in range(10_000):
        cursor, ids = scan(r, cursor, type_, *options)
        out.extend(ids)
        if cursor == b"0":
            return out
    raise AssertionError("the walk did not end")


def summaries(r: redis.Redis, agents: list[bytes]) -> None:
    pipe = r.pipeline(transaction=False)
    for agent in agents:
        pipe.execute_command("AMEM.SUMMARY.SET", agent, b"s")
    pipe.execute()


def test_each_type_lists_its_own_id_space(r: redis.Redis) -> None:
    cmd(r, "AMEM.CONV.CREATE", "s1")
    cmd(r, "AMEM.CONV.CREATE", "conv-only")
    cmd(r, "AMEM.WORK.SET", "s1", "k", "v")
    cmd(r, "AMEM.WORK.SET", "work-only", "k", "v")
    cmd(r, "AMEM.EPIS.LOG", "a1", "obs", "x")
    cmd(r, "AMEM.SUMMARY.SET", "a1", "x")
    cmd(r, "AMEM.SUMMARY.SET", "a2", "x")
    cmd(r, "SET", "cache-key", "v")  # the string cache is a sixth, separate space
    assert scan(r, 0, "conv", "COUNT", 100) == (b"0", [b"conv-only", b"s1"])
    assert scan(r, 0, "work", "COUNT", 100) == (b"0", [b"s1", b"work-only"])
    assert scan(r, 0, "EPIS") == (b"0", [b"a1"])
    assert scan(r, 0, "Summary") == (b"0", [b"a1", b"a2"])
    assert scan(r, 0, "sem") == (b"0", [])


def test_scan_sem_namespaces(r: redis.Redis) -> None:
    cmd(r, "AMEM.SEM.CREATE", "ns-b", 2)
    cmd(r, "AMEM.SEM.CREATE", "ns-a", 2)
    assert scan(r, 0, "sem") == (b"0", [b"ns-a", b"ns-b"])


def test_empty_store(r: redis.Redis) -> None:
    for type_ in ("conv", "sem", "work", "epis", "summary"):
        assert scan(r, 0, type_) == (b"0", [])


def test_walk_in_byte_order_with_count(r: redis.Redis) -> None:
    agents = [b"agent-%02d" % i for i in range(25)]
    summaries(r, list(reversed(agents)))
    cursor, first = scan(r, 0, "summary")  # default COUNT 10
    assert first == agents[:10]
    assert cursor != b"0"
    cursor, second = scan(r, cursor, "summary", "COUNT", 10)
    assert second == agents[10:20]
    cursor, third = scan(r, cursor, "summary", "COUNT", 10)
    assert (cursor, third) == (b"0", agents[20:])  # the last batch ends the walk
    assert walk(r, "summary", "COUNT", 1) == agents
    assert walk(r, "summary", "COUNT", 25) == agents
    assert scan(r, 0, "summary", "COUNT", 1000) == (b"0", agents)


def test_binary_ids_and_opaque_cursor(r: redis.Redis) -> None:
    agents = [b"\x00", b"\x00\x01", b"a b", b"\xff\xfe", b"0"]
    summaries(r, agents)
    assert walk(r, "summary", "COUNT", 1) == sorted(agents)
    cursor, ids = scan(r, 0, "summary", "COUNT", 2)
    assert ids == [b"\x00", b"\x00\x01"]
    assert cursor not in (b"0", b"0001") and b"\x00" not in cursor  # not the id, nor its hex
    assert re.fullmatch(rb"[A-Za-z0-9_-]+", cursor)  # base64url: safe to print and paste
    assert scan(r, cursor, "summary", "COUNT", 2) == scan(r, cursor, "summary", "COUNT", 2)
    assert scan(r, cursor, "summary", "COUNT", 10)[1] == [b"0", b"a b", b"\xff\xfe"]
    # the old hex spelling of a position is no cursor: it cannot start a walk anywhere
    assert error(r, "AMEM.SCAN", "30", "TYPE", "summary").startswith(
        "invalid cursor '30'")


def test_walk_while_the_store_changes(r: redis.Redis) -> None:
    agents = [b"a%03d" % i for i in range(0, 60, 2)]  # even numbers: a000 a002 ...
    summaries(r, agents)
    stable = set(agents[::3])  # present for the whole walk
    cursor: Any = 0
    seen: list[bytes] = []
    step = 0
    while True:
        cursor, ids = scan(r, cursor, "summary", "COUNT", 4)
        seen.extend(ids)
        if cursor == b"0":
            break
        step += 1
        # meanwhile: drop some ids not yet seen, add new ones before and after the cursor
        for agent in agents[step * 3 : step * 3 + 6]:
            if agent not in stable:
                cmd(r, "AMEM.SUMMARY.DEL", agent)
        summaries(r, [b"a%03d" % (2 * step - 1), b"a%03d" % (60 + step)])
    assert len(seen) == len(set(seen))  # nothing twice
    assert stable <= set(seen)  # everything present throughout came back
    assert seen == sorted(seen)


def test_match_filters_what_count_looked_at(r: redis.Redis) -> None:
    agents = [b"t1:bot%d" % i for i in range(5)] + [b"t2:bot%d" % i for i in range(5)]
    summaries(r, agents)
    cursor, ids = scan(r, 0, "summary", "MATCH", "t2:*", "COUNT", 5)
    assert ids == []  # the first five looked at were t1:...; the walk goes on
    assert cursor != b"0"
    cursor, ids = scan(r, cursor, "summary", "MATCH", "t2:*", "COUNT", 5)
    assert (cursor, ids) == (b"0", agents[5:])
    assert walk(r, "summary", "MATCH", "*bot[13]", "COUNT", 3) == [
        b"t1:bot1", b"t1:bot3", b"t2:bot1", b"t2:bot3"]
    assert walk(r, "summary", "match", "*", "count", 3) == agents


def test_expired_ids_are_not_listed(r: redis.Redis) -> None:
    cmd(r, "AMEM.WORK.SET", "short", "k", "v", "PX", 50)
    cmd(r, "AMEM.WORK.SET", "long", "k", "v")
    cmd(r, "AMEM.CONV.CREATE", "idle", "PX", 50)
    time.sleep(0.12)
    assert scan(r, 0, "work") == (b"0", [b"long"])
    assert scan(r, 0, "conv") == (b"0", [])


def test_errors(r: redis.Redis) -> None:
    summaries(r, [b"a"])
    cursor_expected = "expected 0 or a cursor returned by AMEM.SCAN"
    for bad in ("abc", "1", "4A", "0x61", "-1", "", "61", "0001"):
        assert error(r, "AMEM.SCAN", bad, "TYPE", "summary") == (
            f"invalid cursor '{bad}': {cursor_expected}")
    assert error(r, "AMEM.SCAN", 0, "TYPE", "keys") == (
        "invalid TYPE 'keys': expected one of CONV|SEM|WORK|EPIS|SUMMARY")
    assert error(r, "AMEM.SCAN", 0, "MATCH", "*", "COUNT", 5) == (
        "syntax error: TYPE conv|sem|work|epis|summary is required")
    assert error(r, "AMEM.SCAN", 0, "TYPE", "epis", "COUNT", 0) == (
        "invalid COUNT '0': expected an integer >= 1")
    assert error(r, "AMEM.SCAN", 0, "TYPE", "epis", "COUNT", "ten") == (
        "invalid COUNT 'ten': expected an integer >= 1")
    assert error(r, "AMEM.SCAN", 0, "TYPE", "epis", "MATCH") == "syntax error: MATCH needs a value"
    assert error(r, "AMEM.SCAN", 0, "TYPE", "epis", "LIMIT", 5) == (
        "invalid option 'LIMIT': expected TYPE, MATCH or COUNT")
    assert error(r, "AMEM.SCAN", 0, "TYPE") == "wrong number of arguments for 'amem.scan' command"


def test_command_info(r: redis.Redis) -> None:
    spec = cmd(r, "COMMAND", "INFO", "amem.scan")["amem.scan"]
    assert spec["arity"] == -4
    assert {f.decode() if isinstance(f, bytes) else f for f in spec["flags"]} == {"readonly"}
    assert (spec["first_key_pos"], spec["last_key_pos"], spec["step_count"]) == (0, 0, 0)


def test_info_amem_counts_every_store(r: redis.Redis) -> None:
    cmd(r, "AMEM.CONV.CREATE", "s1")
    cmd(r, "AMEM.CONV.APPEND", "s1", "user", "hi")
    cmd(r, "AMEM.CONV.APPEND", "s1", "assistant", "hello")
    cmd(r, "AMEM.WORK.SET", "s1", "k1", "v")
    cmd(r, "AMEM.WORK.SET", "s1", "k2", "v")
    cmd(r, "AMEM.WORK.SET", "s2", "k1", "v")
    for agent in (b"a1", b"a2"):
        for _ in range(3):
            cmd(r, "AMEM.EPIS.LOG", agent, "obs", "x")
    cmd(r, "AMEM.EPIS.TRIM", "a2", "MAXLEN", 1)
    cmd(r, "AMEM.SUMMARY.SET", "a1", "x")
    info = r.info("amem")
    assert {k: info[k] for k in (
        "conv_objects", "conv_entries", "work_objects", "work_entries",
        "epis_objects", "epis_entries", "summary_objects", "summary_entries",
        "sem_objects", "sem_entries",
    )} == {
        "conv_objects": 1, "conv_entries": 2, "work_objects": 2, "work_entries": 3,
        "epis_objects": 2, "epis_entries": 4, "summary_objects": 1, "summary_entries": 1,
        "sem_objects": 0, "sem_entries": 0,
    }
    assert "sem_vectors" in info
    assert all(not k.startswith("kv_") for k in info)  # the string cache is not amem


def test_info_amem_section_text(server: HotkvProcess) -> None:
    reply = raw_roundtrip(server.port, b"*2\r\n$4\r\nINFO\r\n$4\r\namem\r\n")
    lines = reply.split(b"\r\n")
    assert lines[0].startswith(b"$")
    assert lines[1] == b"# Amem"
    fields = [line.split(b":")[0] for line in lines[2:] if b":" in line]
    for store in (b"conv", b"sem", b"work", b"epis", b"summary"):
        assert store + b"_objects" in fields and store + b"_entries" in fields


def test_command_docs_argument_tree(server: HotkvProcess) -> None:
    client = server.client(protocol=3)
    client.response_callbacks.pop("COMMAND", None)  # redis-py parses DOCS as COMMAND INFO
    docs = client.execute_command("COMMAND", "DOCS", "amem.scan")
    client.close()
    cursor, stores, match, count = docs[b"amem.scan"][b"arguments"]
    assert cursor[b"name"] == b"cursor"
    # one argument "type" with token TYPE, as Redis's SCAN TYPE is (here a choice of stores)
    assert (stores[b"name"], stores[b"type"], stores[b"token"]) == (b"type", b"oneof", b"TYPE")
    assert [s[b"token"] for s in stores[b"arguments"]] == [
        b"CONV", b"SEM", b"WORK", b"EPIS", b"SUMMARY"]
    assert (match[b"token"], match[b"type"], match[b"flags"]) == (b"MATCH", b"pattern", [b"optional"])
    assert (count[b"token"], count[b"flags"]) == (b"COUNT", [b"optional"])
