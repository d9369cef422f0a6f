"""docs/commands.md is generated from the command table and must not drift from it."""

from __future__ import annotations

import difflib
import subprocess
import sys
from pathlib import Path

import pytest

from hotkv_server.commands import load_all
from hotkv_server.commands.docs import REGENERATE, render_reference
from hotkv_server.engine.registry import all_specs

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "docs" / "commands.md"


def test_docs_commands_md_matches_the_command_table() -> None:
    expected = render_reference()
    actual = REFERENCE.read_text(encoding="utf-8") if REFERENCE.exists() else ""
    if actual != expected:
        diff = "".join(list(difflib.unified_diff(
            actual.splitlines(keepends=True), expected.splitlines(keepends=True),
            "docs/commands.md", "render_reference()", n=1,
        ))[:40])
        pytest.fail(f"docs/commands.md is out of date; regenerate it with `{REGENERATE}`\n{diff}")


def test_reference_lists_every_command_and_subcommand() -> None:
    load_all()
    text = render_reference()
    headings = {line[4:] for line in text.splitlines() if line.startswith("### ")}
    for spec in all_specs():
        assert spec.name.upper() in headings
        for sub in spec.subcommands.values():
            assert sub.name.replace("|", " ").upper() in headings


def test_reference_entry_for_one_command() -> None:
    text = render_reference()
    start = text.index("### MSET\n")
    lines = text[start : text.index("\n### ", start + 1)].splitlines()
    assert lines[:5] == ["### MSET", "", "```", "MSET key value [key value ...]", "```"]
    assert "- arity: -3 (at least 2 arguments)" in lines
    assert "- flags: write, denyoom" in lines
    assert "- ACL categories: @write @string @slow" in lines
    assert "- keys: arguments 1 to the last argument, every 2 (first 1, last -1, step 2)" in lines


def test_module_entry_point_prints_the_reference() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "hotkv_server.commands.docs"], capture_output=True, text=True, check=True,
        timeout=60,
    )
    assert done.stdout == render_reference()
