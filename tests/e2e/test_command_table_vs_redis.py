"""The command table against a real redis-server 7, for every command both servers know.

COMMAND INFO (arity, flags, keys, ACL categories, tips, key specs), COMMAND LIST with each
filter, COMMAND COUNT and COMMAND GETKEYS / GETKEYSANDFLAGS are sent to both servers in
RESP2 and RESP3 and compared as tagged reply trees (so a RESP3 set must stay a set and a
simple string a simple string), for every command and subcommand name that both list.

Where hotkv knowingly differs, ``EXPECTED_INFO_DIFFERENCES`` says so and why; the test
fails when a listed difference goes away too, so the list never goes stale.

redis-server must be on PATH: the test fails (not skips) without it, CI installs it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from e2e.test_differential import RespConnection
from helpers import HotkvProcess, RedisServer

#: (command, COMMAND INFO field) -> why hotkv answers differently from redis-server 7.0
EXPECTED_INFO_DIFFERENCES: dict[tuple[str, str], str] = {
    # CLIENT SETINFO is Redis 7.2's; the 7.0 reference does not list it in CLIENT
    ("client", "subcommands"): "hotkv also has client|setinfo (Redis 7.2)",
    ("zrank", "arity"): "ZRANK takes Redis 7.2's WITHSCORE (-3), 7.0 has exactly 3",
    ("zrevrank", "arity"): "ZREVRANK takes Redis 7.2's WITHSCORE (-3), 7.0 has exactly 3",
    ("cluster", "subcommands"): "hotkv adds cluster|settopology and cluster|topology (no cluster bus)",
    # one key spec per command until the registry learns keyword key specs (KEYS ...)
    ("migrate", "flags"): "no movablekeys yet: MIGRATE's KEYS list is found by the cluster router",
    ("migrate", "key_specs"): "the second (KEYS keyword) key spec is missing",
}

INFO_FIELDS = ("name", "arity", "flags", "first_key", "last_key", "step", "acl_categories",
               "tips", "key_specs", "subcommands")


@pytest.fixture(params=[2, 3], ids=["resp2", "resp3"])
def both(request: pytest.FixtureRequest, server: HotkvProcess,
         reference: RedisServer) -> Iterator[tuple[RespConnection, RespConnection]]:
    hot = RespConnection(server.port, request.param)
    ref = RespConnection(reference.port, request.param)
    try:
        yield hot, ref
    finally:
        hot.close()
        ref.close()


def names(conn: RespConnection, *filters: str) -> set[str]:
    kind, items = conn.call(["COMMAND", "LIST", *filters])
    assert kind == "*", (kind, items)
    return {payload.decode() for _kind, payload in items}


def common_names(hot: RespConnection, ref: RespConnection) -> list[str]:
    return sorted(names(hot) & names(ref))


def info_entry(conn: RespConnection, name: str) -> list[Any]:
    kind, [entry] = conn.call(["COMMAND", "INFO", name])
    assert kind == "*"
    entry_kind, fields = entry
    assert entry_kind == "*" and len(fields) == 10, (name, entry)
    return list(fields)


def _sub_name(entry: Any) -> str:
    return entry[1][0][1].decode()


def test_every_common_command_has_the_same_command_info(
    both: tuple[RespConnection, RespConnection],
) -> None:
    hot, ref = both
    common = common_names(hot, ref)
    assert len(common) >= 90  # the cache, keyspace, connection and server commands
    shared = set(common)
    differences: dict[tuple[str, str], tuple[Any, Any]] = {}
    for name in common:
        mine, theirs = info_entry(hot, name), info_entry(ref, name)
        for field, a, b in zip(INFO_FIELDS, mine, theirs, strict=True):
            if field == "subcommands":
                # subcommands are compared one by one under their own names; here only
                # which ones there are (a set, since Redis lists them in hash order)
                a = sorted(_sub_name(e) for e in a[1])
                b = sorted(_sub_name(e) for e in b[1])
            if a != b:
                differences[(name, field)] = (a, b)
    unexplained = {k: v for k, v in differences.items() if k not in EXPECTED_INFO_DIFFERENCES}
    assert unexplained == {}
    gone = set(EXPECTED_INFO_DIFFERENCES) - set(differences)
    assert not gone, f"hotkv now agrees with Redis on {sorted(gone)}: drop them from the list"
    assert "client|setinfo" not in shared  # the one subcommand difference above


def test_command_list_filters_agree_on_common_commands(
    both: tuple[RespConnection, RespConnection],
) -> None:
    hot, ref = both
    shared = set(common_names(hot, ref))
    _kind, cats = ref.call(["ACL", "CAT"])
    categories = sorted(payload.decode() for _k, payload in cats)
    assert "string" in categories and "connection" in categories
    for category in categories:
        mine = names(hot, "FILTERBY", "ACLCAT", category) & shared
        theirs = names(ref, "FILTERBY", "ACLCAT", category) & shared
        assert mine == theirs, category
    for pattern in ("*", "c*", "config|*", "*get*", "?et", "client|[gs]*"):
        mine = names(hot, "FILTERBY", "PATTERN", pattern) & shared
        theirs = names(ref, "FILTERBY", "PATTERN", pattern) & shared
        assert mine == theirs, pattern
    assert names(hot, "FILTERBY", "MODULE", "nosuch") == names(ref, "FILTERBY", "MODULE", "nosuch")


def test_command_count_is_the_number_of_top_level_commands(
    both: tuple[RespConnection, RespConnection],
) -> None:
    for conn in both:
        kind, count = conn.call(["COMMAND", "COUNT"])
        assert kind == ":"
        assert count == len({n for n in names(conn) if "|" not in n})


def _calls(name: str, arity: int) -> list[list[str]]:
    """Calls of a command for GETKEYS: the shortest, longer ones, and a wrong count."""
    words = name.split("|")
    base = len(words)
    minimum = arity if arity > 0 else -arity

    def call(total: int) -> list[str]:
        return [*words, *(f"k{i}" for i in range(1, total - base + 1))]

    calls = [call(max(minimum, base))]
    if arity < 0:
        calls += [call(minimum + 1), call(minimum + 3)]
    else:
        calls.append(call(arity + 1))
    if minimum > base:
        calls.append(call(minimum - 1))
    return calls


#: calls whose key flags depend on the arguments (SET with and without GET)
EXTRA_CALLS = [
    ["set", "k", "v", "GET"],
    ["set", "k", "v", "get", "EX", "10"],
    ["SET", "k", "v", "NX", "PX", "5"],
    ["set", "k", "v", "EX", "get"],
    ["config"],
    ["config", "nosuch"],
    ["nosuch", "a"],
    ["CLIENT", "LIST", "ID", "1"],
    # a numkeys count read loosely: Redis's getkeys function finds the keys, with no flags
    ["ZUNIONSTORE", "dst", " 1", "k"],
    ["ZDIFFSTORE", "dst", "1.5", "a", "b"],
    ["LMPOP", "+1", "k", "LEFT"],
    ["EVAL", "return 1", "01", "k"],
    ["SINTERCARD", "1x", "k"],
]


def test_getkeys_and_getkeysandflags_agree_on_every_common_command(
    both: tuple[RespConnection, RespConnection],
) -> None:
    hot, ref = both
    compared = 0
    keyed = 0
    calls = list(EXTRA_CALLS)
    for name in common_names(hot, ref):
        arity = info_entry(ref, name)[1][1]
        found = _calls(name, arity)
        if (name, "arity") in EXPECTED_INFO_DIFFERENCES:
            # a call Redis 7.0 refuses by arity that hotkv takes (ZRANK ... WITHSCORE)
            found = [c for c in found if len(c) == arity or arity < 0]
        calls += found
    for argv in calls:
        for sub in ("GETKEYS", "GETKEYSANDFLAGS"):
            mine = hot.call(["COMMAND", sub, *argv])
            theirs = ref.call(["COMMAND", sub, *argv])
            assert mine == theirs, (sub, argv)
            compared += 1
            keyed += mine[0] == "*"
    assert compared >= 400 and keyed >= 40


def _key_arguments(args: list[Any], path: str = "") -> list[tuple[str, Any]]:
    """(path of the argument, its key_spec_index) of every key argument of a DOCS tree."""
    found: list[tuple[str, Any]] = []
    for arg in args:
        _kind, fields = arg
        pairs = dict(zip(fields[::2], fields[1::2], strict=True))
        name = pairs[("$", b"name")][1].decode()
        if pairs[("$", b"type")][1] == b"key":
            found.append((path + name, pairs[("$", b"key_spec_index")]))
        if ("$", b"arguments") in pairs:
            found += _key_arguments(pairs[("$", b"arguments")][1], f"{path}{name}/")
    return found


def _docs(conn: RespConnection, name: str) -> dict[Any, Any]:
    _kind, fields = conn.call(["COMMAND", "DOCS", name])
    _name, (_k, doc) = fields
    return dict(zip(doc[::2], doc[1::2], strict=True))


#: commands whose COMMAND DOCS key arguments differ from Redis's, and why
DOCS_KEY_DIFFERENCES = {
    "migrate": 'the syntax string cannot say key_or_empty_string (key|"") nor a second key spec',
}


def test_command_docs_key_arguments_agree(both: tuple[RespConnection, RespConnection]) -> None:
    """Every key argument sits where Redis has it, pointing at the same key spec (MSET's
    key_value/key, DEL's one key flagged multiple ...)."""
    hot, ref = both
    checked = 0
    for name in common_names(hot, ref):
        if name in DOCS_KEY_DIFFERENCES:
            continue
        mine, theirs = _docs(hot, name), _docs(ref, name)
        args_key = ("$", b"arguments")
        mine_keys = _key_arguments(mine[args_key][1]) if args_key in mine else []
        theirs_keys = _key_arguments(theirs[args_key][1]) if args_key in theirs else []
        assert mine_keys == theirs_keys, name
        checked += bool(mine_keys)
    assert checked >= 20
