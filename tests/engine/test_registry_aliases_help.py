"""Aliases and generated HELP in the command table (engine/registry.py), on the real table."""

from __future__ import annotations

import pytest

from hotkv_server.commands import load_all
from hotkv_server.engine.registry import COMMANDS, alias, help_lines, lookup

load_all()


@pytest.mark.parametrize(("name", "of"), [("slaveof", "replicaof"), ("flushdb", "flushall"),
                                          ("pexpire", "expire"), ("expireat", "expire"),
                                          ("pexpireat", "expire")])
def test_an_alias_shares_the_handler_and_the_rules(name: str, of: str) -> None:
    spec, original = COMMANDS[name], COMMANDS[of]
    assert spec is not original and spec.name == name
    assert spec.handler is original.handler
    assert (spec.arity, spec.flags, spec.categories, spec.key_specs) == (
        original.arity, original.flags, original.categories, original.key_specs)
    assert lookup(name.upper().encode()) is spec
    assert spec.summary  # its own line in COMMAND DOCS and docs/commands.md


def test_an_alias_keeps_its_own_syntax_and_stats() -> None:
    assert COMMANDS["pexpire"].syntax == "key milliseconds [NX|XX|GT|LT]"
    assert COMMANDS["expire"].syntax == "key seconds [NX|XX|GT|LT]"
    assert [a.name for a in COMMANDS["pexpire"].arguments][:2] == ["key", "milliseconds"]
    before = COMMANDS["expire"].calls
    COMMANDS["pexpire"].calls += 1  # INFO commandstats counts each name apart, as Redis
    try:
        assert COMMANDS["expire"].calls == before
    finally:
        COMMANDS["pexpire"].calls -= 1


def test_an_alias_needs_a_plain_registered_command() -> None:
    with pytest.raises(ValueError):
        alias("nosuch-alias", of="nosuch")
    with pytest.raises(ValueError):
        alias("config-alias", of="config")  # a container
    with pytest.raises(ValueError):
        alias("flushdb", of="flushall")  # registered already


def test_help_lists_every_subcommand_from_the_table() -> None:
    lines = help_lines("client")
    assert lines[0] == "CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"
    heads = [line.split()[0] for line in lines[1:] if not line.startswith(" ")]
    assert set(heads) == {name.upper() for name in COMMANDS["client"].subcommands}
    assert heads[-1] == "HELP" and lines[-1] == "    Print this help."
    # an entry without its own help text comes from the syntax and the summary
    unblock = COMMANDS["client"].subcommands["unblock"]
    assert f"UNBLOCK {unblock.syntax}" in lines and f"    {unblock.summary}" in lines


def test_help_order_puts_named_subcommands_first() -> None:
    lines = help_lines("config", ("rewrite",))
    heads = [line.split()[0] for line in lines[1:] if not line.startswith(" ")]
    assert heads[0] == "REWRITE" and heads[-1] == "HELP"
