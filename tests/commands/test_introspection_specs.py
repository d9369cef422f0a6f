"""Key spec flags, command tips and argument trees of the command table.

Unit tests of the registry (what a spec declares, how a syntax line becomes COMMAND DOCS
arguments) and end-to-end checks through a real server in RESP2 and RESP3.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import redis

from helpers import RedisServer, raw_roundtrip, record, resp_request
from helpers import raw_reply as raw
from hotkv_server.commands import load_all
from hotkv_server.engine.registry import (
    COMMANDS,
    LOOKUP,
    CommandSpec,
    SpecFields,
    add_spec,
    all_specs,
    command,
    default_key_flags,
    family,
    find,
)
from hotkv_server.engine.syntax import parse_syntax


def docs_args(client: redis.Redis, name: str) -> list[dict[Any, Any]]:
    doc = record(record(raw(client, "COMMAND", "DOCS", name))[name.encode()])
    return [_plain(arg) for arg in doc[b"arguments"]]


def _plain(arg: Any) -> dict[Any, Any]:
    out = record(arg)
    if b"flags" in out:
        out[b"flags"] = sorted(out[b"flags"])
    if b"arguments" in out:
        out[b"arguments"] = [_plain(child) for child in out[b"arguments"]]
    return out


# --- argument trees -------------------------------------------------------------------


def test_a_token_before_a_choice_is_that_choice_s_token() -> None:
    """AMEM.SCAN's TYPE is one argument named ``type`` with token TYPE, as SCAN's is in Redis."""
    load_all()
    spec = find("amem.scan")
    assert spec is not None
    docs = [arg.to_docs() for arg in spec.arguments]
    assert [d["name"] for d in docs] == ["cursor", "type", "glob", "n"]
    type_arg = docs[1]
    assert type_arg["token"] == "TYPE" and type_arg["type"] == "oneof"
    assert "flags" not in type_arg  # required, unlike SCAN's optional TYPE
    assert [(c["name"], c["type"], c["token"]) for c in type_arg["arguments"]] == [
        ("conv", "pure-token", "CONV"), ("sem", "pure-token", "SEM"), ("work", "pure-token", "WORK"),
        ("epis", "pure-token", "EPIS"), ("summary", "pure-token", "SUMMARY"),
    ]


def test_a_token_led_alternation_reads_as_the_token_then_a_choice() -> None:
    # "MERGE REPLACE|APPEND|INCR" is MERGE followed by one of the words, not (MERGE REPLACE)|APPEND
    [merge] = parse_syntax("[MERGE REPLACE|APPEND|INCR]", 0)
    assert merge.type == "oneof" and merge.token == "MERGE" and merge.optional
    assert [c.token for c in merge.children] == ["REPLACE", "APPEND", "INCR"]
    # a choice of token + value pairs stays a choice of tokened values
    [ttl] = parse_syntax("[TTL s|PX ms|KEEPTTL]", 0)
    assert ttl.type == "oneof" and ttl.token is None
    assert [(c.name, c.type, c.token) for c in ttl.children] == [
        ("s", "integer", "TTL"), ("ms", "integer", "PX"), ("keepttl", "pure-token", "KEEPTTL"),
    ]
    # NX|XX alone is untouched
    [cond] = parse_syntax("[NX|XX]", 0)
    assert cond.token is None and [c.token for c in cond.children] == ["NX", "XX"]


def test_a_token_before_an_optional_choice_is_not_folded() -> None:
    token, choice = parse_syntax("WITH [A|B]", 0)
    assert token.type == "pure-token" and token.token == "WITH"
    assert choice.type == "oneof" and choice.optional and choice.token is None


def test_text_tokens_take_text_whatever_the_short_name() -> None:
    args = parse_syntax("ns [TTL s] [SOURCE s]", 1)
    assert [(a.name, a.type, a.token) for a in args] == [
        ("ns", "key", None), ("s", "integer", "TTL"), ("s", "string", "SOURCE"),
    ]


def test_amem_scan_docs_through_the_server(r: redis.Redis) -> None:
    args = docs_args(r, "amem.scan")
    assert args[1] == {
        b"name": b"type", b"type": b"oneof", b"token": b"TYPE",
        b"arguments": [
            {b"name": n.lower(), b"type": b"pure-token", b"token": n}
            for n in (b"CONV", b"SEM", b"WORK", b"EPIS", b"SUMMARY")
        ],
    }
    assert args[2] == {b"name": b"glob", b"type": b"pattern", b"token": b"MATCH", b"flags": [b"optional"]}


# --- declarations ---------------------------------------------------------------------


def _declare(name: str, **changes: Any) -> None:
    options: dict[str, Any] = {
        "handler": None, "arity": 2, "flags": "readonly", "keys": (1, 1, 1), "group": "amem",
        "summary": "x", "syntax": "", "since": "0.1.0", "complexity": "O(1)", "acl": "",
    }
    options.update(changes)
    add_spec(name, **options)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"tips": "nondeterministic"}, "unknown command tip"),
        ({"tips": "request_policy:everywhere"}, "unknown command tip"),
        ({"key_flags": "RO RW"}, "exactly one of RO, RW, OW, RM"),
        ({"key_flags": "access"}, "exactly one of RO, RW, OW, RM"),
        ({"key_flags": "RO reads"}, "unknown key spec flags"),
        ({"key_flags": "RO", "keys": (0, 0, 0)}, "without keys"),
    ],
)
def test_bad_declarations_are_refused(changes: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        _declare("test.never.registered", **changes)
    assert find("test.never.registered") is None


def test_key_flags_are_kept_in_redis_order() -> None:
    load_all()
    spec = find("set")
    assert spec is not None
    assert spec.key_flags == ("RW", "access", "update", "variable_flags")


@pytest.mark.parametrize(
    ("name", "flags", "arity", "keys", "expected"),
    [
        ("del", "write", -2, (1, -1, 1), ("RM", "delete")),
        ("amem.sem.drop", "write", 2, (1, 1, 1), ("RM", "delete")),
        ("amem.sem.del", "write", -3, (1, 1, 1), ("RW", "delete")),  # ids inside the namespace
        ("amem.sem.store", "write denyoom", -5, (1, 1, 1), ("RW", "update")),
        ("amem.sem.get", "readonly", -3, (1, 1, 1), ("RO", "access")),
        ("watch", "noscript", -2, (1, -1, 1), ("RO",)),
    ],
)
def test_default_key_flags(name: str, flags: str, arity: int, keys: tuple[int, int, int],
                           expected: tuple[str, ...]) -> None:
    assert default_key_flags(name, frozenset(flags.split()), arity, keys) == expected


def test_every_command_with_keys_has_key_flags() -> None:
    load_all()
    for spec in all_specs():
        for one in (spec, *spec.subcommands.values()):
            # a command whose keys are counted by an argument (SINTERCARD) has first_key 0
            assert bool(one.key_specs) == (one.first_key > 0 or "movablekeys" in one.flags), one.name
            assert bool(one.key_flags) == bool(one.key_specs), one.name
            assert all(ks.flags for ks in one.key_specs), one.name


# --- AMEM key flags and tips through the server -----------------------------------------

AMEM_KEY_FLAGS = {
    ("AMEM.CONV.CREATE", "s"): [b"RW", b"update"],
    ("AMEM.CONV.APPEND", "s", "user", "hi"): [b"RW", b"update"],
    ("AMEM.CONV.WINDOW", "s"): [b"RO", b"access"],
    ("AMEM.CONV.LEN", "s"): [b"RO"],
    ("AMEM.CONV.INFO", "s"): [b"RO", b"access"],
    ("AMEM.CONV.DEL", "s"): [b"RM", b"delete"],
    ("AMEM.WORK.SET", "s", "k", "v"): [b"RW", b"update"],
    ("AMEM.WORK.SET", "s", "k", "v", "MERGE", "REPLACE"): [b"RW", b"update"],
    ("AMEM.WORK.SET", "s", "k", "1", "TTL", "5", "merge", "incr"): [b"RW", b"access", b"update"],
    ("AMEM.WORK.GET", "s", "k"): [b"RO", b"access"],
    ("AMEM.WORK.MGET", "s", "k"): [b"RO", b"access"],
    ("AMEM.WORK.GETALL", "s"): [b"RO", b"access"],
    ("AMEM.WORK.LEN", "s"): [b"RO"],
    ("AMEM.WORK.TTL", "s", "k"): [b"RO", b"access"],
    ("AMEM.WORK.EXPIRE", "s", "5"): [b"RW", b"update"],
    ("AMEM.WORK.DEL", "s", "k"): [b"RW", b"delete"],
    ("AMEM.WORK.CLEAR", "s"): [b"RM", b"delete"],
    ("AMEM.EPIS.LOG", "a", "action", "x"): [b"RW", b"insert"],
    ("AMEM.EPIS.QUERY", "a"): [b"RO", b"access"],
    ("AMEM.EPIS.LEN", "a"): [b"RO"],
    ("AMEM.EPIS.TRIM", "a", "MAXLEN", "5"): [b"RW", b"delete"],
    ("AMEM.EPIS.DEL", "a"): [b"RM", b"delete"],
    ("AMEM.SUMMARY.SET", "a", "t"): [b"RW", b"update"],
    ("AMEM.SUMMARY.APPEND", "a", "t"): [b"RW", b"update"],
    ("AMEM.SUMMARY.GET", "a"): [b"RO", b"access"],
    ("AMEM.SUMMARY.DEL", "a"): [b"RM", b"delete"],
    ("AMEM.SEM.DEL", "ns", "id"): [b"RW", b"delete"],
    ("AMEM.SEM.DROP", "ns"): [b"RM", b"delete"],
}


@pytest.mark.parametrize("call", list(AMEM_KEY_FLAGS), ids=lambda c: " ".join(c[:1] + c[4:5]))
def test_amem_key_flags(r: redis.Redis, call: tuple[str, ...]) -> None:
    [[key, flags]] = raw(r, "COMMAND", "GETKEYSANDFLAGS", *call)
    assert key == call[1].encode()
    assert list(flags) == AMEM_KEY_FLAGS[call]


def test_getkeysandflags_of_a_multi_id_delete(r: redis.Redis) -> None:
    reply = raw(r, "COMMAND", "GETKEYSANDFLAGS", "AMEM.CONV.DEL", "s1", "s2")
    assert [(k, list(f)) for k, f in reply] == [(b"s1", [b"RM", b"delete"]), (b"s2", [b"RM", b"delete"])]


def test_key_spec_notes_come_first(r: redis.Redis) -> None:
    [entry] = raw(r, "COMMAND", "INFO", "amem.work.set")
    [keyspec] = entry[8]
    keyspec = record(keyspec)
    assert next(iter(keyspec)) == b"notes"
    assert b"MERGE" in keyspec[b"notes"]
    assert list(keyspec[b"flags"]) == [b"RW", b"access", b"update", b"variable_flags"]


@pytest.mark.parametrize(
    ("name", "tips"),
    [
        ("amem.conv.info", [b"nondeterministic_output"]),
        ("amem.work.ttl", [b"nondeterministic_output"]),
        ("amem.epis.log", [b"nondeterministic_output"]),
        ("amem.conv.del", [b"request_policy:multi_shard", b"response_policy:agg_sum"]),
        ("amem.conv.window", []),
        ("amem.summary.set", []),
        ("ttl", [b"nondeterministic_output"]),
        ("info", [b"nondeterministic_output", b"request_policy:all_shards", b"response_policy:special"]),
    ],
)
def test_tips(r: redis.Redis, name: str, tips: list[bytes]) -> None:
    [entry] = raw(r, "COMMAND", "INFO", name)
    assert list(entry[7]) == tips


# --- the same bytes as redis-server 7 ----------------------------------------------------


@pytest.mark.parametrize("hello", [b"", resp_request("HELLO", "3")], ids=["resp2", "resp3"])
def test_key_specs_notes_and_tips_bytes_equal_redis(server: Any, reference: RedisServer, hello: bytes) -> None:
    # SET's key spec has notes and variable flags, MSET is OW, DEL is RM delete with tips
    payload = hello + resp_request("COMMAND", "INFO", "set", "mset", "del", "incr", "exists", "keys", "info")

    def reply(port: int) -> bytes:
        data = raw_roundtrip(port, payload, wait=0.3)
        return data[data.index(b"*7\r\n*10\r\n"):]

    assert reply(server.port) == reply(reference.port)


def test_a_repetition_is_one_argument_flagged_multiple() -> None:
    """``key [key ...]`` and ``key value [key value ...]`` as Redis writes DEL and MSET."""
    [key] = parse_syntax("key [key ...]", 1)
    assert (key.name, key.type, key.multiple, key.optional, key.key_spec_index) == (
        "key", "key", True, False, 0)
    [pairs] = parse_syntax("key value [key value ...]", 1)
    assert (pairs.name, pairs.type, pairs.multiple, pairs.optional) == ("key_value", "block", True, False)
    assert [(c.name, c.type, c.key_spec_index) for c in pairs.children] == [
        ("key", "key", 0), ("value", "string", None)]
    ns, ids = parse_syntax("ns id [id ...]", 1)
    assert (ns.type, ids.name, ids.multiple, ids.optional) == ("key", "id", True, False)
    # an optional repetition on its own stays optional
    [opt] = parse_syntax("[section ...]", 0)
    assert opt.optional and opt.multiple


def test_unix_times_are_typed_unix_time() -> None:
    [expiry] = parse_syntax("[EXAT unix-time-seconds|PXAT unix-time-milliseconds]", 0)
    assert [(c.type, c.token) for c in expiry.children] == [("unix-time", "EXAT"), ("unix-time", "PXAT")]


# --- presets, families and key= ------------------------------------------------------


@contextmanager
def _registered(name: str) -> Iterator[CommandSpec]:
    try:
        spec = find(name)
        assert spec is not None
        yield spec
    finally:
        COMMANDS.pop(name, None)
        LOOKUP.pop(name.encode(), None)
        LOOKUP.pop(name.upper().encode(), None)


def _handler(doc: str | None) -> Any:
    def handler(ctx: Any, argv: list[bytes]) -> Any:
        return None

    handler.__doc__ = doc
    return handler


def test_presets_then_fields_make_the_spec_and_key_is_one_key_at_argument_1() -> None:
    shared = SpecFields(arity=-3, flags="write", key="RW insert", since="1.0.0")
    family_command = family(group="list", flags="readonly", since="0.9.0")
    family_command("test.preset.push", shared)(_handler("TEST.PRESET.PUSH key value\nOwn."))
    with _registered("test.preset.push") as spec:
        # later presets override the family's defaults, the command's fields override both;
        # the syntax and the summary are the handler's docstring
        assert (spec.group, spec.arity, spec.flags, spec.summary, spec.syntax, spec.since) == (
            "list", -3, frozenset({"write"}), "Own.", "key value", "1.0.0")
        assert (spec.first_key, spec.last_key, spec.step, spec.key_flags) == (1, 1, 1, ("RW", "insert"))
        assert spec.keys_of([b"test.preset.push", b"k", b"v"]) == [b"k"]


def test_a_commands_own_keys_override_a_presets_key() -> None:
    command("test.preset.keys", SpecFields(key="RO access", flags="readonly"), arity=-2,
            keys=(1, -1, 1), key_flags="RO", group="amem")(_handler("TEST.PRESET.KEYS key [key ...]\nx"))
    with _registered("test.preset.keys") as spec:
        assert (spec.first_key, spec.last_key, spec.key_flags) == (1, -1, ("RO",))


@pytest.mark.parametrize(
    "doc",
    [None, "", "test.no.doc key\nlower case", "TEST.NO.DOC key", "OTHER.COMMAND key\nIts summary.",
     "A note first.\n\nTEST.NO.DOC key\nIts summary."],
)
def test_a_handler_without_its_reference_paragraph_is_refused(doc: str | None) -> None:
    # no docstring, a lower-case or summary-less paragraph, another command's, or the
    # paragraph after a note: the error says what the docstring needs
    with pytest.raises(ValueError, match=re.escape("needs a paragraph 'TEST.NO.DOC <syntax>' followed by the summary")):
        command("test.no.doc", arity=2, group="amem")(_handler(doc))
    assert find("test.no.doc") is None


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"key": "RO", "keys": (1, 1, 1)}, "key= or keys=/key_flags="),
        ({"key": "RO", "key_flags": "RO"}, "key= or keys=/key_flags="),
        ({"arity": None}, "no arity"),
        ({"arity": None, "group": None}, "no arity, group"),
    ],
)
def test_incomplete_or_doubled_fields_are_refused(fields: dict[str, Any], message: str) -> None:
    spec: dict[str, Any] = {"arity": 2, "group": "amem", **fields}
    with pytest.raises(ValueError, match=message):
        command("test.never.registered", **{k: v for k, v in spec.items() if v is not None})
    assert find("test.never.registered") is None
