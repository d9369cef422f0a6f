"""COMMAND, COMMAND INFO|DOCS|COUNT|LIST|GETKEYS|GETKEYSANDFLAGS|HELP against a real server.

The shapes are what redis-py's parsers and cluster key routing (``CommandsParser``) and
redis-cli index into; one test compares the raw bytes with a real redis-server 7.
"""

from __future__ import annotations

from typing import Any

import pytest
import redis
from redis._parsers.commands import CommandsParser

from helpers import RedisServer, raw_roundtrip, record, resp_request
from helpers import raw_reply as raw
from hotkv_server.commands import load_all
from hotkv_server.engine.registry import all_specs


def error(client: redis.Redis, *args: Any) -> str:
    """The error message a command answers (failing the test if it answers anything else)."""
    with pytest.raises(redis.ResponseError) as info:
        raw(client, *args)
    return str(info.value)


def as_dict(reply: Any) -> dict[Any, Any]:
    return record(reply)


def get_keyspec(proto: int) -> Any:
    spec = {
        b"flags": [b"RO", b"access"],
        b"begin_search": {b"type": b"index", b"spec": {b"index": 1}},
        b"find_keys": {b"type": b"range", b"spec": {b"lastkey": 0, b"keystep": 1, b"limit": 0}},
    }
    if proto == 3:
        return spec

    def flat(value: Any) -> Any:
        if isinstance(value, dict):
            out: list[Any] = []
            for k, v in value.items():
                out += [k, flat(v)]
            return out
        return value

    return flat(spec)


def proto_of(r: redis.Redis) -> int:
    return int(r.connection_pool.connection_kwargs.get("protocol") or 2)


# --- COMMAND INFO ---------------------------------------------------------------------


def test_command_info_get_has_the_redis7_shape(r: redis.Redis) -> None:
    [entry] = raw(r, "COMMAND", "INFO", "get")
    assert entry == [
        b"get", 2, [b"readonly", b"fast"], 1, 1, 1, [b"@read", b"@string", b"@fast"],
        [], [get_keyspec(proto_of(r))], [],
    ]


def test_command_info_unknown_is_null_and_subcommands_by_full_name(r: redis.Redis) -> None:
    reply = raw(r, "COMMAND", "INFO", "nosuch", "CONFIG|GET", "mset")
    assert reply[0] is None
    assert reply[1][:6] == [b"config|get", -3, [b"admin", b"noscript", b"loading", b"stale"], 0, 0, 0]
    assert reply[1][6] == [b"@admin", b"@slow", b"@dangerous"]
    assert reply[2][:6] == [b"mset", -3, [b"write", b"denyoom"], 1, -1, 2]
    [keyspec] = reply[2][8]
    keyspec = as_dict(keyspec)
    assert as_dict(as_dict(keyspec[b"find_keys"])[b"spec"]) == {b"lastkey": -1, b"keystep": 2, b"limit": 0}


def test_container_lists_its_subcommands(r: redis.Redis) -> None:
    [entry] = raw(r, "COMMAND", "INFO", "config")
    assert entry[:2] == [b"config", -2]
    names = [sub[0] for sub in entry[9]]
    assert names == sorted(names)
    assert {b"config|get", b"config|set", b"config|resetstat", b"config|rewrite", b"config|help"} <= set(names)
    assert all(len(sub) == 10 for sub in entry[9])


def test_amem_commands_name_their_id_as_key_one(r: redis.Redis) -> None:
    reply = raw(r, "COMMAND", "INFO", "amem.conv.append", "AMEM.SUMMARY.GET")
    append, get = reply
    assert append[:6] == [b"amem.conv.append", -4, [b"write", b"denyoom"], 1, 1, 1]
    assert set(append[6]) == {b"@write", b"@slow", b"@amem", b"@amem-write"}
    assert get[:6] == [b"amem.summary.get", -2, [b"readonly", b"fast"], 1, 1, 1]
    assert set(get[6]) == {b"@read", b"@fast", b"@amem", b"@amem-read"}


def test_bare_command_lists_every_command_once(r: redis.Redis) -> None:
    entries = raw(r, "COMMAND")
    names = [e[0] for e in entries]
    assert len(names) == len(set(names)) == raw(r, "COMMAND", "COUNT")
    assert names == sorted(names)
    assert all(len(e) == 10 for e in entries)
    top_level = [n for n in raw(r, "COMMAND", "LIST") if b"|" not in n]
    assert sorted(top_level) == names


def test_every_key_spec_agrees_with_first_last_step(r: redis.Redis) -> None:
    for entry in raw(r, "COMMAND"):
        name, _arity, flags, first, last, step, _cats, _tips, specs, _subs = entry
        specs = [as_dict(spec) for spec in specs]
        finds = [as_dict(spec[b"find_keys"]) for spec in specs]
        searches = [as_dict(spec[b"begin_search"]) for spec in specs]
        # keys found by a count, a keyword or only by the command itself (SORT's STORE)
        movable = any(f[b"type"] != b"range" for f in finds) or any(
            s[b"type"] != b"index" for s in searches)
        assert (b"movablekeys" in flags) == movable, name
        if any(s[b"type"] != b"index" for s in searches):
            # the legacy triple covers the index specs only (SORT: 1 1 1, its sorted key)
            assert searches[0][b"type"] == b"index", name
            assert as_dict(searches[0][b"spec"])[b"index"] == first, name
            continue
        begins = [as_dict(s[b"spec"])[b"index"] for s in searches]
        if first == 0:
            # no keys, or only keys whose count is an argument (SINTERCARD numkeys ...)
            assert all(f[b"type"] == b"keynum" for f in finds), name
            continue
        assert begins[0] == first, name
        if len(specs) > 1:
            # several groups: the legacy triple spans the range groups (RENAME: 1 2 1)
            ranges = [(b, as_dict(f[b"spec"])) for b, f in zip(begins, finds, strict=True)
                      if f[b"type"] == b"range"]
            ends = [b + s[b"lastkey"] if s[b"lastkey"] >= 0 else s[b"lastkey"] for b, s in ranges]
            assert last in ends or last == first, name
            continue
        find = finds[0]
        assert find[b"type"] == b"range", name
        assert as_dict(find[b"spec"]) == {
            b"lastkey": last - first if last >= 0 else last,
            b"keystep": step,
            b"limit": 0,
        }, name


def test_server_answers_from_the_imported_table(r: redis.Redis) -> None:
    load_all()
    assert raw(r, "COMMAND", "COUNT") == len(all_specs())
    assert [e[0].decode() for e in raw(r, "COMMAND")] == [s.name for s in all_specs()]


# --- redis-py ---------------------------------------------------------------------------


def test_redis_py_parses_command(r: redis.Redis) -> None:
    commands = r.command()
    assert commands["get"]["arity"] == 2
    assert set(commands["get"]["flags"]) == {"readonly", "fast"}
    assert commands["mset"]["first_key_pos"] == 1
    assert commands["mset"]["last_key_pos"] == -1
    assert commands["mset"]["step_count"] == 2
    assert commands["amem.conv.append"]["first_key_pos"] == 1
    assert "command" in commands and "config" in commands


def _argv_for(name: str, arity: int) -> list[str]:
    """A call of the right length whose key (if any) is ``id-1``."""
    n = arity if arity > 0 else max(-arity, 2)
    return [name.upper(), *[f"id-{i}" for i in range(1, n)]]


def test_commands_parser_routes_amem_and_redis_commands(r: redis.Redis) -> None:
    """redis-py's cluster client finds keys from COMMAND output: at position 1 for AMEM.*."""
    parser = CommandsParser(r)
    assert parser.get_keys(r, "MSET", "a", "1", "b", "2") == ["a", "b"]
    assert parser.get_keys(r, "DEL", "a", "b", "c") == ["a", "b", "c"]
    assert parser.get_keys(r, "GET", "k") == ["k"]
    assert parser.get_keys(r, "AMEM.CONV.APPEND", "s1", "user", "hi") == ["s1"]
    assert parser.get_keys(r, "AMEM.WORK.SET", "s1", "field", "v") == ["s1"]
    assert parser.get_keys(r, "AMEM.SCAN", "0", "TYPE", "conv") is None
    assert parser.get_keys(r, "PING") is None
    checked = 0
    for name, info in r.command().items():
        if not name.startswith("amem.") or info["first_key_pos"] == 0:
            continue
        argv = _argv_for(name, info["arity"])
        keys = parser.get_keys(r, *argv)
        assert keys is not None and keys[0] == "id-1", name
        server_keys = [k.decode() for k in raw(r, "COMMAND", "GETKEYS", *argv)]
        assert keys == server_keys, name
        checked += 1
    assert checked >= 10


# --- COMMAND GETKEYS ------------------------------------------------------------------


def test_getkeys(r: redis.Redis) -> None:
    assert raw(r, "COMMAND", "GETKEYS", "MSET", "a", "1", "b", "2") == [b"a", b"b"]
    assert raw(r, "COMMAND", "GETKEYS", "amem.conv.del", "s1", "s2") == [b"s1", b"s2"]
    assert r.command_getkeys("SET", "k", "v") in (["k"], [b"k"])


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["nosuch", "a"], "Invalid command specified"),
        (["config|get", "x"], "Invalid command specified"),
        (["get", "a", "b"], "Invalid number of arguments specified for command"),
        (["ping", "x"], "The command has no key arguments"),
        (["config", "get", "x"], "The command has no key arguments"),
    ],
)
def test_getkeys_errors(r: redis.Redis, argv: list[str], message: str) -> None:
    assert error(r, "COMMAND", "GETKEYS", *argv) == message


def test_getkeys_needs_a_command_and_an_argument(r: redis.Redis) -> None:
    assert error(r, "COMMAND", "GETKEYS", "get") == (
        "wrong number of arguments for 'command|getkeys' command"
    )


def test_getkeysandflags(r: redis.Redis) -> None:
    assert raw(r, "COMMAND", "GETKEYSANDFLAGS", "get", "k") == [[b"k", [b"RO", b"access"]]]
    assert raw(r, "COMMAND", "GETKEYSANDFLAGS", "del", "a", "b") == [
        [b"a", [b"RM", b"delete"]], [b"b", [b"RM", b"delete"]],
    ]


# --- COMMAND COUNT / LIST / DOCS / HELP -------------------------------------------------


def test_command_list_filters(r: redis.Redis) -> None:
    everything = raw(r, "COMMAND", "LIST")
    assert b"config|get" in everything and b"get" in everything
    assert raw(r, "COMMAND", "LIST", "FILTERBY", "PATTERN", "CONFIG*") == [
        b"config", b"config|get", b"config|help", b"config|resetstat", b"config|rewrite", b"config|set",
    ]
    amem = raw(r, "COMMAND", "LIST", "filterby", "aclcat", "amem")
    assert b"amem.conv.append" in amem and b"get" not in amem
    assert all(n.startswith(b"amem.") for n in amem)
    assert raw(r, "COMMAND", "LIST", "FILTERBY", "ACLCAT", "@admin") == raw(
        r, "COMMAND", "LIST", "FILTERBY", "ACLCAT", "admin"
    )
    assert raw(r, "COMMAND", "LIST", "FILTERBY", "MODULE", "x") == []
    for bad in (["FILTERBY", "FOO", "x"], ["extra"], ["FILTERBY", "PATTERN"]):
        assert error(r, "COMMAND", "LIST", *bad) == "syntax error"


def test_command_docs(r: redis.Redis) -> None:
    docs = as_dict(raw(r, "COMMAND", "DOCS", "amem.conv.append", "nosuch"))
    assert list(docs) == [b"amem.conv.append"]
    doc = as_dict(docs[b"amem.conv.append"])
    assert list(doc) == [b"summary", b"since", b"group", b"complexity", b"arguments"]
    assert doc[b"group"] == b"conv"
    args = [as_dict(a) for a in doc[b"arguments"]]
    assert args[0] == {b"name": b"session", b"type": b"key", b"key_spec_index": 0}
    assert [a[b"name"] for a in args[1:3]] == [b"role", b"content"]
    meta = args[3]
    assert meta[b"token"] == b"META" and meta[b"flags"] == [b"optional"]


def test_command_docs_of_a_container_has_subcommands(r: redis.Redis) -> None:
    doc = as_dict(as_dict(raw(r, "COMMAND", "DOCS", "config"))[b"config"])
    subs = as_dict(doc[b"subcommands"])
    assert b"config|get" in subs
    assert as_dict(subs[b"config|get"])[b"summary"]
    assert b"arguments" not in doc


def test_command_docs_without_names_covers_every_command(r: redis.Redis) -> None:
    docs = as_dict(raw(r, "COMMAND", "DOCS"))
    assert len(docs) == raw(r, "COMMAND", "COUNT")
    for name, doc in docs.items():
        assert as_dict(doc)[b"summary"], name


def test_command_help_and_unknown_subcommand(r: redis.Redis) -> None:
    lines = raw(r, "COMMAND", "HELP")
    assert lines[0].startswith(b"COMMAND <subcommand>")
    assert b"GETKEYS <full-command>" in lines
    assert error(r, "COMMAND", "FOO") == "unknown subcommand 'FOO'. Try COMMAND HELP."
    assert error(r, "COMMAND", "COUNT", "x") == "wrong number of arguments for 'command|count' command"


# --- the same bytes as redis-server 7 ----------------------------------------------------


@pytest.mark.parametrize("hello", [b"", resp_request("HELLO", "3")], ids=["resp2", "resp3"])
def test_command_info_bytes_equal_redis(server: Any, reference: RedisServer, hello: bytes) -> None:
    # commands whose flags, categories and key specs are Redis's own; a null for an unknown one
    payload = hello + resp_request("COMMAND", "INFO", "get", "config|get", "nosuch")

    def reply(port: int) -> bytes:
        data = raw_roundtrip(port, payload, wait=0.3)
        return data[data.index(b"*3\r\n*10\r\n"):]  # after the HELLO map, whose fields differ

    assert reply(server.port) == reply(reference.port)
